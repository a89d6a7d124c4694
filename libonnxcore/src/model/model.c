/*
 * model.c - the oc_model handle and loading/saving messages from memory and files.
 */
#include <stdlib.h>
#include <string.h>

#include "onnxcore/external.h"
#include "onnxcore/http.h"
#include "onnxcore/model.h"
#include "onnxcore/tensor.h"
#include "internal/encode.h"
#include "internal/error.h"
#include "internal/external.h"
#include "internal/decode.h"
#include "onnxcore_private.h"
#include "internal/schema.h"
#include "internal/source.h"
#include "internal/source_file.h"
#include "internal/source_http.h"
#include "internal/url.h"
#include "internal/onnxcore_progress.h"
#include "internal/onnxcore_shared.h"
#include "internal/onnxcore_atomic.h"
#include "internal/atomic_url.h"
#include "internal/save_url.h"

struct oc_model {
    oc_arena *arena;
    onnx_ModelProto *proto;
};

oc_model *oc_model_new(void) {
    oc_model *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->arena = oc_arena_new();
    m->proto = m->arena ? OC_NEW(m->arena, ModelProto) : NULL;
    if (!m->proto) {
        oc_model_free(m);
        return NULL;
    }
    return m;
}

void oc_model_free(oc_model *m) {
    if (!m) return;
    oc_arena_free(m->arena);
    free(m);
}

onnx_ModelProto *oc_model_proto(oc_model *m) { return m ? m->proto : NULL; }
const onnx_ModelProto *oc_model_proto_const(const oc_model *m) { return m ? m->proto : NULL; }
oc_arena *oc_model_arena(oc_model *m) { return m ? m->arena : NULL; }

static oc_status new_model(oc_model **out, oc_error *err) {
    *out = oc_model_new();
    return *out ? OC_OK : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

static oc_status load_bytes(const void *data, uint64_t size, const oc_parse_options *opts,
                            oc_owner *owner, oc_model **out, oc_error *err) {
    oc_model *m;
    OC_FORWARD(new_model(&m, err));
    oc_status st =
        oc_decode(&onnx_ModelProto_desc, m->proto, data, size, m->arena, opts, owner, err);
    if (st != OC_OK) {
        oc_model_free(m);
        return st;
    }
    *out = m;
    return OC_OK;
}

/* Resolves external data after a load, unless asked not to; frees the model on failure. */
static oc_status with_external(oc_model **out, const char *base_dir, const oc_parse_options *opts,
                               oc_error *err) {
    if (!base_dir || (opts && opts->skip_external_data)) return OC_OK;
    oc_status st = oc_external_data_load(&onnx_ModelProto_desc, (*out)->proto, base_dir, opts, err);
    if (st != OC_OK) {
        oc_model_free(*out);
        *out = NULL;
    }
    return st;
}

oc_status oc_model_load_memory(const void *data, uint64_t size, const oc_parse_options *opts,
                               oc_model **out, oc_error *err) {
    if (out) *out = NULL; /* on any failure (model.h) */
    if (!out || (!data && size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_model_load_memory: missing argument");
    OC_PARSE_OPTS(opts, err);
    OC_FORWARD(load_bytes(data, size, opts, NULL, out, err));
    return with_external(out, opts ? opts->data_dir : NULL, opts, err);
}

/* Decodes the file at path (or the open descriptor fd of it, when not -1) into a new msg
 * of desc: mapped (with no_copy the spans share the mapping, each with its own reference,
 * so dropping ours here frees it only when no tensor uses it), or read with pread
 * (use_pread). */
static oc_status decode_file(const char *path, int fd, const oc_parse_options *opts,
                             const oc_msgdesc *desc, void *msg, oc_arena *arena, oc_error *err) {
    oc_source *src;
    oc_file_source_kind kind = oc__file_kind(opts);
    if (oc_is_url(path))
        OC_FORWARD(oc__source_http(path, opts ? opts->http : NULL, &src, err));
    else
        OC_FORWARD(oc_source_file(fd >= 0 ? NULL : path, fd, path, kind, 0, &src, err));
    oc_status st = oc__decode_source(desc, msg, src, arena, opts, err);
    oc_source_unref(src);
    return st;
}

static oc_status load_file_locked(const char *path, int fd, const oc_parse_options *opts,
                                  oc_model **out, oc_model **references, oc_error *err);

oc_status oc_model_load_file(const char *path, const oc_parse_options *opts, oc_model **out,
                             oc_error *err) {
    if (out) *out = NULL; /* on any failure (model.h) */
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_model_load_file: missing argument");
    OC_PARSE_OPTS(opts, err);
    /* E-25: the model and its data files from one save, never a mix of two. */
    /* A URL has no lock: each data file's identity is fixed when it is opened; an hf://
     * URL's revision is pinned first, so that its data files are of the model's commit. */
    char *pinned = NULL;
    if (oc_is_url(path)) OC_FORWARD(oc__hf_pin(path, opts ? opts->http : NULL, &pinned, err));
    if (pinned) path = pinned;
    int lock =
        (opts && opts->skip_external_data) || oc_is_url(path) ? -1 : oc__pair_read_lock(path);
    if (lock == OC__PAIR_BUSY) return oc__pair_busy(path, err); /* never a mixed pair */
    oc_status st = load_file_locked(path, lock, opts, out, NULL, err);
    oc__pair_unlock(lock);
    free(pinned);
    return st;
}

oc_status oc_model_load_file_with_references(const char *path, const oc_parse_options *opts,
                                             oc_model **out, oc_model **references, oc_error *err) {
    if (references) *references = NULL;
    if (!references)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_model_load_file_with_references: missing argument");
    if (out) *out = NULL;
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_model_load_file_with_references: missing argument");
    OC_PARSE_OPTS(opts, err);
    char *pinned = NULL; /* as oc_model_load_file */
    if (oc_is_url(path)) OC_FORWARD(oc__hf_pin(path, opts->http, &pinned, err));
    if (pinned) path = pinned;
    int lock = opts->skip_external_data || oc_is_url(path) ? -1 : oc__pair_read_lock(path);
    oc_status st = lock == OC__PAIR_BUSY ? oc__pair_busy(path, err)
                                         : load_file_locked(path, lock, opts, out, references, err);
    oc__pair_unlock(lock);
    free(pinned);
    return st;
}

oc_status oc_model_load_file_deferred(const char *path, const oc_parse_options *opts,
                                      oc_model **out, oc_external_data **files, oc_error *err) {
    if (out) *out = NULL;
    if (files) *files = NULL;
    if (!path || !out || !files)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_model_load_file_deferred: missing argument");
    OC_PARSE_OPTS(opts, err);
    oc_parse_options keep = *opts;
    keep.skip_external_data = 1;
    char *pinned = NULL; /* as oc_model_load_file */
    if (oc_is_url(path)) OC_FORWARD(oc__hf_pin(path, opts->http, &pinned, err));
    if (pinned) path = pinned;
    char *dir = opts->data_dir ? NULL : oc__path_dir(path); /* a URL's too */
    if (!opts->data_dir && !dir) {
        free(pinned);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    /* E-25: the model and the data files it names from one save, never a mix of two */
    int lock = oc_is_url(path) ? -1 : oc__pair_read_lock(path);
    oc_status st = lock == OC__PAIR_BUSY ? oc__pair_busy(path, err)
                                         : load_file_locked(path, lock, &keep, out, NULL, err);
    if (st == OC_OK)
        st = oc_external_data_open(&onnx_ModelProto_desc, (*out)->proto,
                                   opts->data_dir ? opts->data_dir : dir, opts, files, err);
    oc__pair_unlock(lock);
    free(dir);
    free(pinned);
    if (st != OC_OK) {
        oc_model_free(*out);
        *out = NULL;
    }
    return st;
}

static oc_status stop_at_external(void *ctx, onnx_TensorProto *t) {
    (void)ctx;
    return oc_tensor_is_external(t) ? OC_ERR_NOT_FOUND : OC_OK;
}

/* Decodes path (from fd, the model file the pair lock holds, when not -1) and reads its
 * external data in; with references, first a copy of the model as decoded (its
 * references kept) when it has an EXTERNAL tensor. */
static oc_status load_file_locked(const char *path, int fd, const oc_parse_options *opts,
                                  oc_model **out, oc_model **references, oc_error *err) {
    oc_model *m;
    OC_FORWARD(new_model(&m, err));
    oc_status st = decode_file(path, fd, opts, &onnx_ModelProto_desc, m->proto, m->arena, err);
    if (st == OC_OK && references && !(opts && opts->skip_external_data) &&
        oc_msg_visit_tensors(&onnx_ModelProto_desc, m->proto, stop_at_external, NULL) != OC_OK)
        st = oc_model_clone(m, references, err);
    if (st != OC_OK) {
        oc_model_free(m);
        return st;
    }
    *out = m;
    char *dir = opts && opts->data_dir ? NULL : oc__path_dir(path); /* a URL's too */
    if (!dir && !(opts && opts->data_dir)) {
        oc_model_free(*out);
        *out = NULL;
        if (references) oc_model_free(*references);
        if (references) *references = NULL;
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    st = with_external(out, dir ? dir : opts->data_dir, opts, err);
    free(dir);
    if (st != OC_OK && references) {
        oc_model_free(*references);
        *references = NULL;
    }
    return st;
}

oc_status oc_msg_load_file(const oc_msgdesc *desc, const char *path, oc_arena *arena,
                           const oc_parse_options *opts, void **out, oc_error *err) {
    if (out) *out = NULL; /* on any failure (model.h) */
    if (!desc || !path || !arena || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_msg_load_file: missing argument");
    OC_PARSE_OPTS(opts, err);
    void *msg = oc_msg_new(arena, desc);
    if (!msg) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    OC_FORWARD(decode_file(path, -1, opts, desc, msg, arena, err));
    *out = msg;
    return OC_OK;
}

oc_status oc_msg_save_file(const oc_msgdesc *desc, const void *msg, const char *path,
                           const oc_serialize_options *opts, oc_error *err) {
    return oc_msg_save_url(desc, msg, path, opts, NULL, err);
}

oc_status oc_msg_save_url(const oc_msgdesc *desc, const void *msg, const char *path,
                          const oc_serialize_options *opts, const oc_http_options *http,
                          oc_error *err) {
    if (!desc || !msg || !path)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_msg_save_file: missing argument");
    OC_SERIALIZE_OPTS(opts, err);
    if (http && opts->external_data) /* (oc_msg_save_file: the model's bytes only) */
        return oc__save_external_url(desc, msg, path, opts, http, err);
    oc_atomic_file af;
    oc_progress progress;
    OC_FORWARD(oc_progress_start_save(&progress, desc, msg, opts, err));
    OC_FORWARD(oc_atomic_open_url(&af, path, opts->no_overwrite, OC_ATOMIC_STREAM, http, err));
    af.progress = &progress;
    af.no_sync = opts->no_sync;
    /* spans: file to file; fetched tensors: streamed in, nothing moves out */
    oc_status st = oc_encode_external_fetched(desc, msg, UINT64_MAX, opts->fetch, NULL, NULL,
                                              oc_atomic_write, &af, err);
    if (st != OC_OK) {
        oc_atomic_abort(&af);
        return st;
    }
    OC_FORWARD(oc_atomic_commit(&af, err));
    oc_progress_finish(&progress);
    return OC_OK;
}

oc_status oc_model_save_file(const oc_model *m, const char *path, const oc_serialize_options *opts,
                             oc_error *err) {
    if (!m) return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_model_save_file: no model");
    OC_SERIALIZE_OPTS(opts, err);
    if (opts && opts->external_data && path)
        return oc__save_external(&onnx_ModelProto_desc, m->proto, path, opts, err);
    return oc_msg_save_file(&onnx_ModelProto_desc, m->proto, path, opts, err);
}

/* A sink into a growing malloc'd buffer (a save to memory with fetched tensors, whose
 * bytes only a sink can take). */
typedef struct grow_sink {
    uint8_t *data;
    uint64_t size, cap;
} grow_sink;

static oc_status grow_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    grow_sink *g = ctx;
    if (size > g->cap - g->size) {
        uint64_t cap = g->cap ? g->cap : 1u << 16;
        while (cap - g->size < size && cap <= UINT64_MAX / 2) cap *= 2;
        uint8_t *p =
            cap - g->size >= size && cap <= SIZE_MAX ? realloc(g->data, (size_t)cap) : NULL;
        if (!p) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory for the model");
        g->data = p;
        g->cap = cap;
    }
    memcpy(g->data + g->size, data, (size_t)size);
    g->size += size;
    return OC_OK;
}

oc_status oc_model_save_memory(const oc_model *m, const oc_serialize_options *opts, void **out,
                               uint64_t *size, oc_error *err) {
    if (!m)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_model_save_memory: no model");
    OC_SERIALIZE_OPTS(opts, err);
    if (!opts || !opts->fetch) /* nothing else in the options changes a plain serialization */
        return oc_encode_to_memory(&onnx_ModelProto_desc, m->proto, out, size, err);
    if (!out || !size)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_model_save_memory: missing argument");
    grow_sink g = {NULL, 0, 0};
    oc_status st = oc_encode_external_fetched(&onnx_ModelProto_desc, m->proto, UINT64_MAX,
                                              opts->fetch, NULL, NULL, grow_write, &g, err);
    if (st != OC_OK) {
        free(g.data);
        return st;
    }
    *out = g.data ? g.data : malloc(1);
    *size = g.size;
    return *out ? OC_OK : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

oc_status oc_model_clone(const oc_model *m, oc_model **out, oc_error *err) {
    if (out) *out = NULL; /* on any failure (model.h) */
    if (!m || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_model_clone: missing argument");
    oc_model *c = calloc(1, sizeof *c);
    if (!c || !(c->arena = oc_arena_new())) {
        free(c);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    void *proto;
    oc_status st = oc_msg_copy(&onnx_ModelProto_desc, m->proto, c->arena, &proto, err);
    if (st != OC_OK) {
        oc_model_free(c);
        return st;
    }
    c->proto = proto;
    *out = c;
    return OC_OK;
}

oc_status oc_model_check_tensor_sizes(const oc_model *model, oc_error *err) {
    return oc_model_check_tensor_sizes_fetched(model, NULL, err);
}

typedef struct size_check {
    const oc_tensor_fetch *fetch;
    oc_error *err;
} size_check;

static oc_status check_fetched_size(void *ctx, onnx_TensorProto *t) {
    const size_check *c = ctx;
    return oc_tensor_check_size_fetched(t, c->fetch, c->err);
}

oc_status oc_model_check_tensor_sizes_fetched(const oc_model *model, const oc_tensor_fetch *fetch,
                                              oc_error *err) {
    if (!model) return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no model");
    size_check c = {fetch, err};
    return oc_msg_visit_tensors(&onnx_ModelProto_desc, model->proto, check_fetched_size, &c);
}

oc_status oc_model_check(const oc_model *model, oc_error *err) {
    if (!model) return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no model");
    const onnx_ModelProto *m = model->proto;
    if (!OC_HAS(ModelProto, m, ir_version))
        return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "W-41",
                             "the model has no ir_version: every ONNX model states one");
    if (!m->graph)
        return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "W-41", "the model has no graph");
    return oc_model_check_tensor_sizes(model, err);
}
