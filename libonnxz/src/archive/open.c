/*
 * open.c - what a file is, and its model whatever its form (onnxz/open.h): the one place
 * the libraries and the tool tell a model from an archive from an encrypted file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/crypto_model.h>
#include <onnxcore/external.h>
#include <onnxcore/http.h>
#include <onnxcore/tensor.h>

#include "onnxz/archive.h"
#include "onnxz/encrypted.h"
#include "onnxz/open.h"
#include "internal/archive.h"
#include "internal/error.h"
#include "internal/open.h"
#include "internal/open_unsigned.h"
#include "internal/options.h"
#include "onnxcore_private.h"
#include "internal/source.h"
#include "internal/source_file.h"
#include "internal/source_http.h"
#include "internal/zipfmt.h"
#include "internal/zipread.h"

/* Whole signatures are told by libonnxcore's rules (oc_crypt_is_zip, oc_crypt_detect);
 * only a file that ends inside one is compared here, against the same bytes. */
static const unsigned char zip_local[4] = {'P', 'K', 3, 4}, zip_end[4] = {'P', 'K', 5, 6};
_Static_assert(OZ_DETECT_HEAD == OC_CRYPT_MAGIC_LEN, "the head holds an encryption magic");

/* 1 when the first min(n, len) bytes at p are those of the len-byte signature sig. */
static int begins(const void *p, size_t n, const void *sig, size_t len) {
    return memcmp(p, sig, n < len ? n : len) == 0;
}

oz_kind oz_detect(const void *head, size_t n, uint64_t file_size) {
    if (file_size < n) n = (size_t)file_size; /* bytes past the end are none of the data's */
    if (file_size == 0) return OZ_KIND_EMPTY;
    if (!head || n == 0) return OZ_KIND_MODEL;
    /* A prefix shorter than a signature says "cut short" only when the data ends there. */
    int whole = (uint64_t)n == file_size;
    if (oc_crypt_is_zip(head, n)) return OZ_KIND_ZIP;
    if (n < 4 && whole && (begins(head, n, zip_local, 4) || begins(head, n, zip_end, 4)))
        return OZ_KIND_ZIP_SHORT;
    switch (oc_crypt_detect(head, n)) {
    case OC_CRYPT_ONNXZEC1:
        return OZ_KIND_ONNXZEC1;
    case OC_CRYPT_ONNXCRY1:
        return OZ_KIND_ONNXCRY1;
    default:
        break;
    }
    if (n < OZ_DETECT_HEAD && whole &&
        (begins(head, n, OC_CRYPT_ZEC1_MAGIC, OZ_DETECT_HEAD) ||
         begins(head, n, OC_CRYPT_CRY1_MAGIC, OZ_DETECT_HEAD)))
        return OZ_KIND_CRYPT_SHORT;
    return OZ_KIND_MODEL;
}

/* The kind of an object read through src (a URL's). A remote object's last bytes are
 * already in hand (the source keeps its tail): an end record with no comment there says
 * ZIP without a request for the head; anything else is told by the head, as a file is. */
static oc_status detect_source(oc_source *src, oz_kind *kind, oc_error *err) {
    uint8_t b[OZ_EOCD_SIZE];
    if (src->size >= OZ_EOCD_SIZE) {
        OC_FORWARD(oc_source_read(src, src->size - OZ_EOCD_SIZE, b, OZ_EOCD_SIZE, err));
        if (b[0] == 'P' && b[1] == 'K' && b[2] == 5 && b[3] == 6 && b[20] == 0 && b[21] == 0) {
            *kind = OZ_KIND_ZIP;
            return OC_OK;
        }
    }
    uint64_t n = src->size < OZ_DETECT_HEAD ? src->size : OZ_DETECT_HEAD;
    if (n) OC_FORWARD(oc_source_read(src, 0, b, n, err));
    *kind = oz_detect(b, (size_t)n, src->size);
    return OC_OK;
}

static oc_status detect_url(const char *url, const oc_http_options *http, oz_kind *kind,
                            oc_error *err) {
    oc_source *src;
    OC_FORWARD(oc__source_http(url, http, &src, err));
    oc_status st = detect_source(src, kind, err);
    oc_source_unref(src);
    return st;
}

oc_status oz_detect_file(const char *path, oz_kind *kind, oc_error *err) {
    return oz_detect_path(path, NULL, kind, err);
}

oc_status oz_detect_path(const char *path, const oc_http_options *http, oz_kind *kind,
                         oc_error *err) {
    if (!path || !kind)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_detect_path: missing argument");
    *kind = OZ_KIND_MODEL;
    if (oc_is_url(path)) return detect_url(path, http, kind, err);
    /* A device, FIFO or directory is refused before it is opened: opening a device runs
     * its driver. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
        return oc_error_file(
            err, path, oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s is not a regular file", path));
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return oc_error_file(err, path, oc__fail_errno(err, errno, "cannot open %s", path));
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return oc_error_file(err, path, oc__fail_errno(err, e, "cannot stat %s", path));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return oc_error_file(
            err, path, oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s is not a regular file", path));
    }
    /* S-44: a file of size 0 is empty whatever reading it gives (a /proc file reads
     * bytes, or fails): the loaders map st_size bytes, so none of them would be read. */
    if (st.st_size == 0) {
        close(fd);
        *kind = OZ_KIND_EMPTY;
        return OC_OK;
    }
    unsigned char head[OZ_DETECT_HEAD];
    size_t got = 0;
    oc_status rs = oc__read_head(fd, path, head, sizeof head, &got, err);
    close(fd);
    OC_FORWARD(rs);
    /* The size is what was read when the file ended early (it may have shrunk). */
    *kind = oz_detect(head, got, got < sizeof head ? (uint64_t)got : (uint64_t)st.st_size);
    return OC_OK;
}

bool oz_kind_is_archive(oz_kind kind) { return kind == OZ_KIND_ZIP || kind == OZ_KIND_ZIP_SHORT; }

/* onnxz/archive.h's quick test, by the same rule. */
bool oz_is_archive_file(const char *path) {
    oz_kind kind;
    return path && oz_detect_path(path, NULL, &kind, NULL) == OC_OK && oz_kind_is_archive(kind);
}

const char *oz_kind_name(oz_kind kind) {
    switch (kind) {
    case OZ_KIND_EMPTY:
        return "empty";
    case OZ_KIND_MODEL:
        return "model";
    case OZ_KIND_ZIP:
        return "zip";
    case OZ_KIND_ZIP_SHORT:
        return "zip cut short";
    case OZ_KIND_ONNXZEC1:
        return "ONNXZEC1";
    case OZ_KIND_ONNXCRY1:
        return "ONNXCRY1";
    case OZ_KIND_CRYPT_SHORT:
        return "encrypted cut short";
    }
    return "unknown";
}

bool oz_kind_is_encrypted(oz_kind kind, oc_crypt_format *format) {
    oc_crypt_format f = kind == OZ_KIND_ONNXZEC1   ? OC_CRYPT_ONNXZEC1
                        : kind == OZ_KIND_ONNXCRY1 ? OC_CRYPT_ONNXCRY1
                                                   : OC_CRYPT_NONE;
    if (format) *format = f;
    return f != OC_CRYPT_NONE;
}

/* C-1's report of a file that ends inside an encryption magic, with the bytes it has. */
static oc_status cut_in_magic(const char *path, oc_error *err) {
    struct stat st;
    uint64_t got = stat(path, &st) == 0 ? (uint64_t)st.st_size : OC_NO_OFFSET;
    return oc__fail_rule(err, OC_ERR_TRUNCATED, got, "C-1",
                         "truncated: the file ends inside the magic of an encrypted file (%llu of "
                         "%u bytes)",
                         (unsigned long long)(got == OC_NO_OFFSET ? 0 : got),
                         (unsigned)OZ_DETECT_HEAD);
}

/* Where a deferred model's weights stay (oz_open_deferred): one of the two, or neither
 * (a model without external data, an encrypted file: all in memory). */
struct oz_weights {
    oz_archive *archive;
    oc_external_data *files;
};

/* An open archive's model; with keep, without its weights, and the archive kept open in
 * keep->archive for oz_archive_fetch. Closes ar otherwise, or on failure. */
static oc_status load_archive(oz_archive *ar, const oz_open_options *opts, oc_model **out,
                              oz_weights *keep, oc_error *err) {
    oc_parse_options po = opts->parse;
    if (keep) po.skip_external_data = 1;
    oc_status st = oz_archive_load_model(ar, &po, out, err);
    if (st == OC_OK && keep) {
        /* every tensor will be fetched, in about the file's order */
        oz__zip_reader_will_read_all(oz_archive_zip(ar), oz__archive_model_index(ar));
        keep->archive = ar;
        return OC_OK;
    }
    oz_archive_close(ar);
    return st;
}

/* A model's load options when deferred: its external data is left for defer_files. */
static oc_parse_options model_parse(const oc_parse_options *po, const oz_weights *keep) {
    oc_parse_options o = *po;
    if (keep) o.skip_external_data = 1;
    return o;
}

/* The deferred model *out's data files, checked beside path (or in data_dir) and kept in
 * keep->files for the fetch, unless the caller skips external data; frees *out on failure. */
static oc_status defer_files(const char *path, const oc_parse_options *po, oc_model **out,
                             oz_weights *keep, oc_error *err) {
    if (!keep || po->skip_external_data) return OC_OK;
    char *dir = po->data_dir ? NULL : oc__path_dir(path); /* a URL's too */
    oc_status st =
        po->data_dir || dir
            ? oc_external_data_open(&onnx_ModelProto_desc, oc_model_proto(*out),
                                    po->data_dir ? po->data_dir : dir, po, &keep->files, err)
            : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    free(dir);
    if (st != OC_OK) {
        oc_model_free(*out);
        *out = NULL;
    }
    return st;
}

/* A .onnx file; deferred, through libonnxcore's load that opens the data files under the
 * pair lock it reads them with (E-25): those of the save the model came from. */
static oc_status open_model_file(const char *path, const oz_open_options *opts, oc_model **out,
                                 oz_weights *keep, oc_error *err) {
    if (keep && !opts->parse.skip_external_data)
        return oc_model_load_file_deferred(path, &opts->parse, out, &keep->files, err);
    return oc_model_load_file(path, &opts->parse, out, err);
}

/* A model at a URL, from the source that detected it (its tail already read): the rest
 * in one request, decoded by libonnxcore, with external data resolved relative to the
 * URL's directory. Drops the reference to src. */
static oc_status load_remote_model(const char *url, oc_source *src, const oc_parse_options *po,
                                   oc_model **out, oz_weights *keep, oc_error *err) {
    uint64_t size = src->size,
             cap = po->max_model_bytes ? po->max_model_bytes : OC_DEFAULT_MAX_MODEL_BYTES;
    if (size > cap) { /* refused before anything is downloaded (as the decode would) */
        oc_status st =
            oc_error_file(err, src->name,
                          oc__fail(err, OC_ERR_LIMIT, OC_NO_OFFSET,
                                   "%s: the model of %llu bytes is over the max_model_bytes "
                                   "limit of %llu bytes",
                                   src->name, (unsigned long long)size, (unsigned long long)cap));
        oc_source_unref(src);
        return st;
    }
    uint8_t *buf = size <= SIZE_MAX ? malloc(size ? (size_t)size : 1) : NULL;
    oc_status st = buf ? oc_source_read(src, 0, buf, size, err)
                       : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_source_unref(src);
    oc_parse_options o = model_parse(po, keep);
    char *dir = NULL;
    if (st == OC_OK && !o.data_dir && !o.skip_external_data) {
        if (!(dir = oc__path_dir(url)))
            st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        o.data_dir = dir;
    }
    o.no_copy = 0; /* the bytes are freed below */
    if (st == OC_OK) st = oc_model_load_memory(buf, size, &o, out, err);
    free(dir);
    free(buf);
    return st == OC_OK ? defer_files(url, po, out, keep, err) : st;
}

/* oz_open of an http(s) URL: one source for the detection and the load (its first
 * request, the tail, serves both); an archive then costs its model and tensors, a model
 * the rest of its bytes (load_remote_model) and its external data beside it. */
static oc_status open_url(const char *url, const oz_open_options *opts, oc_model **out,
                          oz_open_info *info, oz_weights *keep, oc_error *err) {
    oc_source *src;
    OC_FORWARD(oc__source_http(url, opts->parse.http, &src, err));
    info->file_size = src->size;
    oc_status st = detect_source(src, &info->kind, err);
    if (st != OC_OK || !oz_kind_is_archive(info->kind)) {
        if (st == OC_OK && info->kind == OZ_KIND_EMPTY) /* src->name: no password shown */
            st = oc_error_file(err, src->name,
                               oc__fail(err, OC_ERR_MALFORMED, OC_NO_OFFSET,
                                        "%s: empty, not an ONNX model", src->name));
        else if (st == OC_OK && info->kind != OZ_KIND_MODEL)
            st = oc_error_file(err, src->name,
                               oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                                        "%s: an encrypted file (%s) cannot be read from a URL yet; "
                                        "download it first",
                                        src->name, oz_kind_name(info->kind)));
        if (st != OC_OK) {
            oc_source_unref(src);
            return st;
        }
        /* An hf:// URL's data files are read at the commit the model was (spec/remote.md
         * H-4): beside its pinned form. */
        const char *pinned = oc__source_http_pinned(src);
        char *at = pinned ? strdup(pinned) : NULL;
        if (pinned && !at) {
            oc_source_unref(src);
            return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        }
        st = load_remote_model(at ? at : url, src, &opts->parse, out, keep, err);
        free(at);
        return st;
    }
    info->is_archive = true;
    oz_zip_reader_options zo = oz__zip_options_for(&opts->parse);
    oz_zip_reader *zip;
    st = oz__zip_reader_open_source(src, UINT64_MAX, &zo, &zip, err);
    oc_source_unref(src); /* the reader holds its own reference */
    OC_FORWARD(st);
    oz_archive *ar;
    OC_FORWARD(oz__archive_wrap(zip, url, &ar, err)); /* closes zip on failure */
    return load_archive(ar, opts, out, keep, err);
}

/* oz_open into a complete info of this library's layout. */
static oc_status open_any(const char *path, const oz_open_options *opts, oc_model **out,
                          oz_open_info *info, oz_weights *keep, oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_open: missing argument");
    *out = NULL;
    OZ_OPEN_OPTS(opts, err);
    if (oc_is_url(path)) {
        oc_status st = open_url(path, opts, out, info, keep, err);
        if (st != OC_OK) *out = NULL;
        return st;
    }
    struct stat fst;
    info->file_size = stat(path, &fst) == 0 && fst.st_size > 0 ? (uint64_t)fst.st_size : 0;
    /* A file that cannot be looked at is handed to the model loader, which says why. */
    if (oz_detect_path(path, NULL, &info->kind, NULL) != OC_OK) info->kind = OZ_KIND_MODEL;
    oc_crypt_format format;
    oc_status st;
    switch (info->kind) {
    case OZ_KIND_EMPTY:
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_MALFORMED, OC_NO_OFFSET,
                                      "%s: empty file, not an ONNX model", path));
    case OZ_KIND_CRYPT_SHORT:
        return cut_in_magic(path, err);
    case OZ_KIND_ZIP:
    case OZ_KIND_ZIP_SHORT:
        info->is_archive = true;
        if (keep) {
            oz_zip_reader_options zo = oz__zip_options_for(&opts->parse);
            oz_archive *ar;
            st = oz_archive_open(path, &zo, &ar, err);
            if (st == OC_OK) st = load_archive(ar, opts, out, keep, err);
        } else {
            st = oz_archive_load(path, &opts->parse, out, err);
        }
        break;
    case OZ_KIND_ONNXZEC1:
    case OZ_KIND_ONNXCRY1:
        oz_kind_is_encrypted(info->kind, &format);
        if (!opts->key)
            return oc_error_file(err, path,
                                 oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                          "%s is encrypted (%s): a key is needed", path,
                                          oc_crypt_format_name(format)));
        st = oz_encrypted_load(path, opts->key, opts->key_len, opts->crypt, &opts->parse, out,
                               &info->is_archive, err);
        break;
    case OZ_KIND_MODEL:
    default:
        st = open_model_file(path, opts, out, keep, err);
        break;
    }
    if (st != OC_OK) *out = NULL; /* model.h promises nothing about *out after a failure */
    return st;
}

oc_status oz__open_unsigned(const char *path, const oz_open_options *opts, oc_model **out,
                            oz_open_info *info, oc_error *err) {
    if (out) *out = NULL;
    if (info && oc__output_check(info, info->size, "oz_open_info", err) != OC_OK)
        return OC_ERR_INVALID_ARG;
    oz_open_info found = OZ_OPEN_INFO_INIT;
    oc_status st = open_any(path, opts, out, &found, NULL, err);
    if (info) oc__output_put(info, &found, sizeof found);
    return st;
}

oc_status oz__open_deferred_unsigned(const char *path, const oz_open_options *opts, oc_model **out,
                                     oz_weights **weights, oz_open_info *info, oc_error *err) {
    if (out) *out = NULL;
    if (!weights)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_open_deferred: missing argument");
    *weights = NULL;
    if (info && oc__output_check(info, info->size, "oz_open_info", err) != OC_OK)
        return OC_ERR_INVALID_ARG;
    oz_weights *w = calloc(1, sizeof *w);
    if (!w) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oz_open_info found = OZ_OPEN_INFO_INIT;
    oc_status st = open_any(path, opts, out, &found, w, err);
    if (info) oc__output_put(info, &found, sizeof found);
    if (st == OC_OK)
        *weights = w;
    else
        oz_weights_close(w);
    return st;
}

void oz_weights_fetch(oz_weights *w, oc_tensor_fetch *fetch) {
    if (!fetch) return;
    if (w && w->archive)
        oz_archive_fetch(w->archive, fetch);
    else
        oc_external_data_fetch(w ? w->files : NULL, fetch);
}

void oz_weights_close(oz_weights *w) {
    if (!w) return;
    oz_archive_close(w->archive);
    oc_external_data_close(w->files);
    free(w);
}

/* ---- one tensor of a model in any form ---- */

onnx_TensorProto *oz_model_find_tensor(oc_model *model, const char *name, size_t len) {
    oc_tensor_index *x = NULL;
    if (!model || (!name && len) ||
        oc_tensor_index_new(&onnx_ModelProto_desc, oc_model_proto(model), &x, NULL) != OC_OK)
        return NULL;
    onnx_TensorProto *t = oc_tensor_index_find(x, name, len);
    oc_tensor_index_free(x);
    return t;
}

/* The fetch of src's archive or weights: where its references' bytes are (all NULL: no
 * fetch; a data_dir is read otherwise). */
static void source_fetch(const oz_tensor_source *src, oc_tensor_fetch *fetch) {
    *fetch = (oc_tensor_fetch){NULL, NULL, NULL};
    if (src->archive)
        oz_archive_fetch(src->archive, fetch);
    else if (src->weights)
        oz_weights_fetch(src->weights, fetch);
}

/* A stream held to the size its fetch announced. */
typedef struct exact_sink {
    oc_write_fn write;
    void *ctx;
    uint64_t size, used;
} exact_sink;

static oc_status exact_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    exact_sink *s = ctx;
    if (size > s->size - s->used)
        return oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                        "the tensor's source gave more bytes than it announced");
    s->used += size;
    return s->write(s->ctx, data, size, err);
}

oc_status oz__stream_exact(const oc_tensor_fetch *fetch, const onnx_TensorProto *t, uint64_t n,
                           oc_write_fn write, void *ctx, oc_error *err) {
    exact_sink sink = {write, ctx, n, 0};
    OC_FORWARD(fetch->stream(fetch->ctx, t, exact_write, &sink, err));
    if (sink.used != n)
        return oc__fail(err, OC_ERR_TRUNCATED, OC_NO_OFFSET,
                        "the tensor's source gave %llu of %llu bytes",
                        (unsigned long long)sink.used, (unsigned long long)n);
    return OC_OK;
}

static oc_status copy_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    uint8_t **p = ctx;
    (void)err;
    if (size) memcpy(*p, data, (size_t)size);
    *p += size;
    return OC_OK;
}

oc_status oz__read_fetched(const oc_tensor_fetch *fetch, const onnx_TensorProto *t, oc_bytes *out,
                           oc_error *err) {
    uint64_t n = 0;
    OC_FORWARD(fetch->size(fetch->ctx, t, &n, err));
    oc_bytes b = {0};
    uint8_t *p;
    OC_FORWARD(oc_bytes_set_alloc(&b, n, &p, err));
    oc_status st = oz__stream_exact(fetch, t, n, copy_write, &p, err);
    if (st == OC_OK)
        oc_bytes_move(out, &b);
    else
        oc_bytes_release(&b);
    return st;
}

/* t's bytes in t itself, once no fetch holds them: a reference resolved from src's
 * data_dir (as a load resolves it, W-40 checked against what its file held); refused when
 * nothing resolves it. */
static oc_status resolve_in_place(onnx_TensorProto *t, const oz_tensor_source *src, oc_error *err) {
    char q[OC_QUOTE_SIZE];
    if (!oc_tensor_is_external(t)) return OC_OK;
    if (!src->data_dir)
        return oc__fail(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET, "tensor '%s' was not loaded",
                        oc_quote(t->name.data, t->name.size, q, sizeof q));
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    OC_FORWARD(oc_external_data_load(&onnx_TensorProto_desc, t, src->data_dir,
                                     src->parse ? src->parse : &po, err));
    return oc_tensor_check_size(t, err);
}

static const oz_tensor_source no_source;

oc_status oz_tensor_read(onnx_TensorProto *t, const oz_tensor_source *src, oc_bytes *out,
                         oc_error *err) {
    oc_tensor_fetch fetch;
    if (!t || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_tensor_read: missing argument");
    if (!src) src = &no_source;
    source_fetch(src, &fetch);
    /* W-40 before any byte is read: dims, and the bytes they make against the payload */
    OC_FORWARD(oc_tensor_check_size_fetched(t, fetch.size ? &fetch : NULL, err));
    if (oc_tensor_is_external(t) && fetch.size) {
        /* an archive's entry: a span of its mapping (read whole from a URL) */
        const oz_archive *ar = src->archive ? src->archive : src->weights->archive;
        return ar ? oz__archive_tensor_bytes(ar, t, out, err)
                  : oz__read_fetched(&fetch, t, out, err);
    }
    OC_FORWARD(resolve_in_place(t, src, err));
    if (oc_tensor_is_typed(t)) return oc_tensor_typed_bytes(t, out, err); /* float_data ... */
    return oc_bytes_copy(out, &t->raw_data, err);
}
