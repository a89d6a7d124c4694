/*
 * external_write.c - saving with large tensors in other files (spec/external-data.md
 * E-20..E-27).
 *
 * Saving places each large tensor through a sink (oc_encode_external): here the sink
 * writes LOCATION, LOCATION.1, ... through atomic files; libonnxz's sink writes archive
 * entries. A multi-file save commits under the pair locks (E-25, pair_lock.c) and removes
 * the stale parts of the model it replaces (E-26).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxcore/external.h"
#include "onnxcore/http.h"
#include "onnxcore/model.h"
#include "internal/bytes.h"
#include "internal/decode.h"
#include "internal/digest.h"
#include "internal/encode.h"
#include "internal/error.h"
#include "internal/external.h"
#include "internal/atomic_url.h"
#include "internal/external_keys.h"
#include "internal/fetch.h"
#include "onnxcore_private.h"
#include "internal/path_safety.h"
#include "internal/onnxcore_progress.h"
#include "onnxcore/file.h"
#include "internal/onnxcore_atomic.h"

/* ---- writing: the generic part ---- */

/* What the save does with each tensor it substitutes, in encoding order: a reference to
 * where put stored the bytes (ref.location set), or, for a fetched tensor that stays
 * inline, only its byte count (ref.length). The replacement TensorProto is built from
 * this when the encoder reaches the tensor (build), so that a save of N tensors holds N
 * of these records and one replacement, not N copies of a TensorProto. */
typedef struct externalizer {
    uint64_t threshold;
    const oc_tensor_fetch *fetch;
    oc_external_put_fn put;
    void *put_ctx;
    oc_arena *strings; /* the refs' location and checksum strings */
    oc__subst *subs;
    oc_external_ref *refs; /* one per subs entry */
    uint64_t nsubs, capsubs;
    oc_error *err;
    /* the replacement being encoded */
    onnx_TensorProto out;
    onnx_StringStringEntryProto ours[4]; /* location, offset, length, checksum */
    onnx_StringStringEntryProto **entries;
    uint64_t entries_cap;
    char offset[24], length[24];
} externalizer;

static oc_status add_subst(externalizer *x, const onnx_TensorProto *t, const oc_external_ref *ref,
                           int fetched) {
    if (x->nsubs == x->capsubs) {
        uint64_t cap = x->capsubs ? x->capsubs * 2 : 64;
        oc__subst *s = realloc(x->subs, (size_t)cap * sizeof *s);
        if (s) x->subs = s;
        oc_external_ref *r = realloc(x->refs, (size_t)cap * sizeof *r);
        if (r) x->refs = r;
        if (!s || !r) return OC_ERR_NOMEM;
        x->capsubs = cap;
    }
    x->subs[x->nsubs] = (oc__subst){t, fetched};
    x->refs[x->nsubs++] = *ref;
    return OC_OK;
}

/* A copy of s in x->strings, or NULL when s is (and *ok stays 1) or out of memory. */
static const char *keep(externalizer *x, const char *s, int *ok) {
    if (!s) return NULL;
    size_t n = strlen(s);
    char *c = oc_arena_alloc(x->strings, n + 1);
    if (!c) {
        *ok = 0;
        return NULL;
    }
    memcpy(c, s, n + 1);
    return c;
}

/* A reference tensor: recorded now, built when encoded (build_reference). The location
 * is kept once for the run of tensors that name it (a data file holds many). */
static oc_status make_reference(externalizer *x, const onnx_TensorProto *t,
                                const oc_external_ref *ref) {
    int ok = 1;
    oc_external_ref kept = *ref;
    const char *last = x->nsubs ? x->refs[x->nsubs - 1].location : NULL;
    kept.location = last && ref->location && strcmp(last, ref->location) == 0
                        ? last
                        : keep(x, ref->location, &ok);
    kept.checksum = keep(x, ref->checksum, &ok);
    if (!ok || !kept.location) return OC_ERR_NOMEM;
    return add_subst(x, t, &kept, 0);
}

/* Room for n external_data entries in the replacement. */
static int entries_room(externalizer *x, uint64_t n) {
    if (n <= x->entries_cap) return 1;
    onnx_StringStringEntryProto **p = realloc(x->entries, (size_t)n * sizeof *p);
    if (!p) return 0;
    x->entries = p;
    x->entries_cap = n;
    return 1;
}

static void set_entry(onnx_StringStringEntryProto *e, const char *key, const char *value) {
    memset(e, 0, sizeof *e);
    e->key = (oc_str){key, strlen(key)};
    e->value = (oc_str){value, strlen(value)};
    OC_SET_HAS(StringStringEntryProto, e, key);
    OC_SET_HAS(StringStringEntryProto, e, value);
}

/* x->out: t's fields with no raw_data and, of its external_data, only the keys we do not
 * manage (E-3), followed by room for `ours` more. NULL when out of memory. */
static onnx_TensorProto *bare_copy(externalizer *x, const onnx_TensorProto *t, uint64_t ours) {
    if (!entries_room(x, t->external_data.count + ours)) return NULL;
    onnx_TensorProto *r = &x->out;
    memcpy(r, t, sizeof *r);
    memset(&r->raw_data, 0, sizeof r->raw_data);
    OC_CLEAR_HAS(TensorProto, r, raw_data);
    r->external_data.items = x->entries;
    r->external_data.count = 0;
    r->external_data.cap = x->entries_cap;
    for (uint64_t i = 0; i < t->external_data.count; i++) {
        onnx_StringStringEntryProto *e = t->external_data.items[i];
        if (!oc_external_key_is_known(&e->key)) x->entries[r->external_data.count++] = e;
    }
    return r;
}

/* A fetched tensor that stays in the model: as the loader leaves a resolved tensor (E-16:
 * its bytes in raw_data, no data_location), the bytes streamed by the encoder. */
static const onnx_TensorProto *build_inline(externalizer *x, const onnx_TensorProto *t,
                                            uint64_t n) {
    onnx_TensorProto *r = bare_copy(x, t, 0);
    if (!r) return NULL;
    r->raw_data.size = n; /* no bytes: oc__subst.fetched */
    OC_SET_HAS(TensorProto, r, raw_data);
    r->data_location = 0;
    OC_CLEAR_HAS(TensorProto, r, data_location);
    return r;
}

/* A reference tensor: the original's fields, no raw_data, EXTERNAL, with the entries onnx
 * writes (location, offset, length, checksum) after any keys we do not manage. */
static const onnx_TensorProto *build_reference(externalizer *x, const onnx_TensorProto *t,
                                               const oc_external_ref *ref) {
    onnx_TensorProto *r = bare_copy(x, t, 4);
    if (!r) return NULL;
    r->data_location = 1;
    OC_SET_HAS(TensorProto, r, data_location);
    onnx_StringStringEntryProto *e = x->ours;
    snprintf(x->offset, sizeof x->offset, "%llu", (unsigned long long)ref->offset);
    snprintf(x->length, sizeof x->length, "%llu", (unsigned long long)ref->length);
    set_entry(e, "location", ref->location);
    x->entries[r->external_data.count++] = e++;
    if (ref->has_offset) {
        set_entry(e, "offset", x->offset);
        x->entries[r->external_data.count++] = e++;
    }
    set_entry(e, "length", x->length);
    x->entries[r->external_data.count++] = e++;
    if (ref->checksum) {
        set_entry(e, "checksum", ref->checksum);
        x->entries[r->external_data.count++] = e;
    }
    return r;
}

static const void *build(void *ctx, uint64_t i) {
    externalizer *x = ctx;
    const onnx_TensorProto *t = x->subs[i].original;
    const oc_external_ref *ref = &x->refs[i];
    return ref->location ? build_reference(x, t, ref) : build_inline(x, t, ref->length);
}

/* What a save does with a tensor: leaves it as it is, moves it out to put, or writes a
 * fetched tensor's bytes inside the model. */
enum fate { KEEP, MOVE, INLINE };

/* t's fate in a save with x's threshold and fetch (moving = a put is given), and *n its
 * byte count. */
static oc_status fate_of(const externalizer *x, int moving, const onnx_TensorProto *t, uint64_t *n,
                         enum fate *fate) {
    int fetched = oc__fetched(x->fetch, t);
    *fate = KEEP;
    if (fetched)
        OC_FORWARD(x->fetch->size(x->fetch->ctx, t, n, x->err));
    else if (!OC_HAS(TensorProto, t, raw_data) || oc_tensor_is_external(t))
        return OC_OK;
    else
        *n = t->raw_data.size;
    /* E-27: an empty tensor never leaves the model, at any threshold (a reference of
     * length 0 reads as "to the end of the file" in ONNX Runtime and onnx.load). */
    if (moving && *n != 0 && *n >= x->threshold)
        *fate = MOVE;
    else if (fetched)
        *fate = INLINE;
    return OC_OK;
}

static oc_status externalize_one(void *ctx, onnx_TensorProto *t) {
    externalizer *x = ctx;
    uint64_t n = 0;
    enum fate fate;
    OC_FORWARD(fate_of(x, x->put != NULL, t, &n, &fate));
    oc_external_ref ref = {NULL, 0, 0, n, NULL};
    oc_status st = OC_OK;
    if (fate == MOVE) {
        OC_FORWARD(x->put(x->put_ctx, t, &ref, x->err));
        st = make_reference(x, t, &ref);
    } else if (fate == INLINE) {
        st = add_subst(x, t, &ref, 1);
    }
    return st == OC_OK ? OC_OK : oc__fail(x->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

typedef struct mover_walk {
    externalizer x;
    oc__moved_fn fn;
    void *ctx;
} mover_walk;

static oc_status moved_one(void *ctx, onnx_TensorProto *t) {
    mover_walk *w = ctx;
    uint64_t n = 0;
    enum fate fate;
    OC_FORWARD(fate_of(&w->x, 1, t, &n, &fate));
    return fate == MOVE ? w->fn(w->ctx, t, n, w->x.err) : OC_OK;
}

oc_status oc__external_moved(const oc_msgdesc *desc, const void *msg, uint64_t threshold,
                             const oc_tensor_fetch *fetch, oc__moved_fn fn, void *ctx,
                             oc_error *err) {
    if (!desc || !msg || !fn || (fetch && (!fetch->size || !fetch->stream)))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc__external_moved: missing argument");
    mover_walk w;
    memset(&w, 0, sizeof w);
    w.x.threshold = threshold;
    w.x.fetch = fetch;
    w.x.err = err;
    w.fn = fn;
    w.ctx = ctx;
    return oc_msg_visit_tensors(desc, (void *)(uintptr_t)msg, moved_one, &w);
}

oc_status oc__encode_external_sized(const oc_msgdesc *desc, const void *msg, uint64_t threshold,
                                    const oc_tensor_fetch *fetch, oc_external_put_fn put,
                                    void *put_ctx, oc__sized_fn sized, oc_write_fn write,
                                    void *write_ctx, oc_error *err) {
    if (!desc || !msg || !write || (fetch && (!fetch->size || !fetch->stream)))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_encode_external: missing argument");
    if (!fetch && !put) /* nothing to substitute: skip the walk */
        return oc__encode_subst(desc, msg, NULL, NULL, sized, write, write_ctx, err);
    externalizer x;
    memset(&x, 0, sizeof x);
    x.threshold = threshold;
    x.fetch = fetch;
    x.put = put;
    x.put_ctx = put_ctx;
    x.err = err;
    if (!(x.strings = oc_arena_new()))
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    /* The walk only reads: the cast lets it share oc_msg_visit_tensors with mutating users. */
    oc_status st = oc_msg_visit_tensors(desc, (void *)(uintptr_t)msg, externalize_one, &x);
    oc__subst_list list = {x.subs, x.nsubs, build, &x};
    if (st == OC_OK) st = oc__encode_subst(desc, msg, &list, fetch, sized, write, write_ctx, err);
    free(x.subs);
    free(x.refs);
    free(x.entries);
    oc_arena_free(x.strings);
    return st;
}

oc_status oc_encode_external_fetched(const oc_msgdesc *desc, const void *msg, uint64_t threshold,
                                     const oc_tensor_fetch *fetch, oc_external_put_fn put,
                                     void *put_ctx, oc_write_fn write, void *write_ctx,
                                     oc_error *err) {
    return oc__encode_external_sized(desc, msg, threshold, fetch, put, put_ctx, NULL, write,
                                     write_ctx, err);
}

oc_status oc_encode_external(const oc_msgdesc *desc, const void *msg, uint64_t threshold,
                             oc_external_put_fn put, void *put_ctx, oc_write_fn write,
                             void *write_ctx, oc_error *err) {
    if (!desc || !msg || !put || !write)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_encode_external: missing argument");
    return oc_encode_external_fetched(desc, msg, threshold, NULL, put, put_ctx, write, write_ctx,
                                      err);
}

/* ---- writing: data files beside the model ---- */

typedef struct part {
    oc_atomic_file af;
    char *location;
    uint64_t size;
    int existed; /* a file had the part's name before the commit renamed it into place */
} part;

typedef struct data_writer {
    const oc_serialize_options *opts;
    const oc_tensor_fetch *fetch; /* or NULL */
    char *dir;                    /* the model's directory, with a trailing slash or empty */
    const char *model_path;
    char *location; /* the first part's location */
    part *parts;
    uint32_t nparts;
    char checksum[41];
    oc_progress progress; /* across the data files and the model */
    /* An s3:// model: every file an object of the store, written by multipart upload
     * (oc_atomic_open_url; spec/remote.md R-21); NULL: files. */
    const oc_http_options *http;
} data_writer;

static char *dir_prefix(const char *path) {
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) + 1 : 0;
    return strndup(path, n);
}

/* Whether paths a and b name the same directory entry: the same last component in the
 * same directory (by device and inode, so "k/./x" and "k/sub/../x" are "k/x"). That is
 * what a rename replaces; a link elsewhere to the same file is another name. */
static int same_name(const char *a, const char *b) {
    if (strcmp(oc__path_base(a), oc__path_base(b)) != 0) return 0;
    char *da = dir_prefix(a), *db = dir_prefix(b);
    struct stat sa, sb;
    int same = da && db && stat(da[0] ? da : ".", &sa) == 0 && stat(db[0] ? db : ".", &sb) == 0 &&
               sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    free(da);
    free(db);
    return same;
}

/* The path of a part: the model's directory and the part's location. NULL: no memory. */
static char *part_path(const data_writer *w, const char *location) {
    size_t n = strlen(w->dir) + strlen(location) + 1;
    char *path = malloc(n);
    if (path) snprintf(path, n, "%s%s", w->dir, location);
    return path;
}

static oc_status open_part(data_writer *w, oc_error *err) {
    part *p = realloc(w->parts, (w->nparts + 1) * sizeof *p);
    if (!p) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    w->parts = p;
    part *np = &p[w->nparts];
    memset(np, 0, sizeof *np);
    np->af.fd = -1;
    size_t n = strlen(w->location) + 16;
    np->location = malloc(n);
    if (!np->location) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (w->nparts)
        snprintf(np->location, n, "%s.%u", w->location, w->nparts);
    else
        snprintf(np->location, n, "%s", w->location);
    char *path = part_path(w, np->location);
    if (!path) {
        free(np->location);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    /* A part renamed over the model's own name ("./x.onnx", or x.1 for a model named
     * x.1) would be replaced by the model, or the model by it. Refused here,
     * before any file is renamed into place (E-25). */
    int same = w->http ? strcmp(path, w->model_path) == 0 : same_name(path, w->model_path);
    oc_status st = same ? oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                   "external data file %s would be the model file %s itself", path,
                                   w->model_path)
                        : oc_atomic_open_url(&np->af, path, w->opts->no_overwrite, OC_ATOMIC_NAMED,
                                             w->http, err);
    free(path);
    if (st != OC_OK) {
        free(np->location);
        return st;
    }
    np->af.progress = &w->progress;
    np->af.no_sync = w->opts->no_sync;
    w->nparts++;
    return OC_OK;
}

/* Writes to a data file and, with checksums, hashes the same bytes on the way. */
typedef struct tee_sink {
    oc_atomic_file *af;
    oc__sha1 *sha1; /* NULL: no checksum */
} tee_sink;

static oc_status tee_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    tee_sink *t = ctx;
    if (t->sha1) OC_FORWARD(oc__sha1_update(t->sha1, data, size, err));
    return oc_atomic_write(t->af, data, size, err);
}

static oc_status put_in_file(void *ctx, const onnx_TensorProto *t, oc_external_ref *ref,
                             oc_error *err) {
    data_writer *w = ctx;
    uint64_t n = ref->length, align = w->opts->buffer.alignment;
    if (!w->nparts) OC_FORWARD(open_part(w, err));
    part *p = &w->parts[w->nparts - 1];
    uint64_t at = align > 1 ? (p->size + align - 1) & ~(align - 1) : p->size;
    uint64_t max = w->opts->max_external_file_size;
    if (max && p->size > 0 && (at > max || n > max - at)) { /* a new part; big ones alone */
        OC_FORWARD(open_part(w, err));
        p = &w->parts[w->nparts - 1];
        at = 0;
    }
    static const uint8_t zeros[4096];
    while (p->size < at) {
        uint64_t k = at - p->size < sizeof zeros ? at - p->size : sizeof zeros;
        OC_FORWARD(oc_atomic_write(&p->af, zeros, k, err));
        p->size += k;
    }
    tee_sink sink = {&p->af, NULL};
    oc__sha1 sha;
    if (w->opts->checksum) {
        OC_FORWARD(oc__sha1_begin(&sha, err));
        sink.sha1 = &sha;
    }
    oc_status st = sink.sha1 ? oc_tensor_write(w->fetch, t, n, tee_write, &sink, err)
                   : oc__fetched(w->fetch, t)
                       ? oc_tensor_write(w->fetch, t, n, oc_atomic_write, &p->af, err)
                       : oc_atomic_write_bytes(&p->af, &t->raw_data, err);
    if (st == OC_OK && sink.sha1) {
        st = oc__sha1_end_hex(&sha, w->checksum, err);
        ref->checksum = w->checksum; /* copied into the reference before the next put */
    } else if (sink.sha1) {
        oc__sha1_discard(&sha);
    }
    OC_FORWARD(st);
    p->size += n;
    ref->location = p->location;
    ref->offset = at;
    ref->has_offset = true;
    ref->length = n;
    return OC_OK;
}

/* ---- the memory budget of a save (spec/security.md M-5) ---- */

oc_status oc__write_budget(uint64_t n, const char *how, uint64_t need, uint64_t held,
                           uint64_t max_memory, oc_error *err) {
    if (need <= max_memory && held <= max_memory - need) return OC_OK;
    return oc__error_rule(err, "M-5",
                          oc__fail(err, OC_ERR_LIMIT, OC_NO_OFFSET,
                                   "writing %llu tensors %s needs about %llu bytes of memory "
                                   "beside the model's %llu, more than the budget of %llu bytes "
                                   "(max_memory, M-5)",
                                   (unsigned long long)n, how, (unsigned long long)need,
                                   (unsigned long long)held, (unsigned long long)max_memory));
}

/* What a save with external data holds per tensor it moves out until the model is
 * written: its substitution record and reference (56 bytes, in arrays that grow by
 * doubling: up to twice that), the encoder's sizes of its message (some 40 bytes with
 * their growth) and the allocator's overhead of both; with checksums, the 41 characters
 * of each in the strings' arena (48 with their alignment). Measured: 1,000,000 4-byte
 * tensors peak at some 210 MB beyond the model's arena, 21 MB of them the input's
 * mapping. */
#define EXTERNAL_REF_BYTES      192u
#define EXTERNAL_CHECKSUM_BYTES 48u

static oc_status count_moved(void *ctx, const onnx_TensorProto *t, uint64_t n, oc_error *err) {
    (void)t;
    (void)n;
    (void)err;
    ++*(uint64_t *)ctx;
    return OC_OK;
}

oc_status oc__external_save_budget(const oc_msgdesc *desc, const void *msg,
                                   const oc_serialize_options *opts, uint64_t held,
                                   uint64_t max_memory, oc_error *err) {
    uint64_t moved = 0;
    OC_FORWARD(oc__external_moved(desc, msg, opts->buffer.raw_data_threshold, opts->fetch,
                                  count_moved, &moved, err));
    uint64_t each = EXTERNAL_REF_BYTES + (opts->checksum ? EXTERNAL_CHECKSUM_BYTES : 0);
    return oc__write_budget(moved, "to data files", moved * each, held, max_memory, err);
}

/* ---- one pair: the commit of a multi-file save (E-25, E-26) ---- */

/* The error of a save that found a pair lock taken (OC__PAIR_BUSY): what held it and who,
 * where /proc told; at once for a lock onnxz never takes (L-5), else after the wait
 * (E-25). */
static oc_status pair_busy(const char *what, const char *name, const oc__lock_holder *h,
                           oc_error *err) {
    return oc__lock_busy("save", what, name, h, OC__PAIR_LOCK_WAIT_MS, "E-25", err);
}

static oc_status dir_busy(const char *model_path, const oc__lock_holder *h, oc_error *err) {
    char *dir = oc__path_dir(model_path);
    oc_status st = pair_busy("directory", dir ? dir : ".", h, err);
    free(dir);
    return st;
}

static oc_status model_denied(const char *model_path, oc_error *err) {
    oc_status st = oc__fail_errno_rule(err, EACCES, "L-5",
                                       "'%s' cannot be opened for writing, so a save cannot "
                                       "lock it against readers while the pair is replaced; "
                                       "make it writable or remove it first",
                                       model_path);
    return oc_error_file(err, model_path, st);
}

/* E-26: the numbered parts (`LOCATION.N`, N >= 1, as E-22 names them) that the model
 * being replaced references and this save does not write: only those, whatever else the
 * old model names (another location may be shared with other models). */
typedef struct stale_parts {
    const char *location; /* this save's first location */
    uint32_t nparts;      /* parts this save writes: LOCATION, .1 .. .(nparts-1) */
    oc_arena *arena;
    char **names;
    uint32_t n, cap;
} stale_parts;

static oc_status note_stale(void *ctx, onnx_TensorProto *t) {
    stale_parts *sp = ctx;
    const oc_str *loc = oc_tensor_is_external(t) ? oc_tensor_external_value(t, "location") : NULL;
    size_t ll = strlen(sp->location);
    if (!loc || oc__location_problem(loc) || loc->size < ll + 2 ||
        memcmp(loc->data, sp->location, ll) || loc->data[ll] != '.' || loc->data[ll + 1] < '1' ||
        loc->data[ll + 1] > '9' || loc->size - ll > 11)
        return OC_OK;
    uint64_t num = 0;
    for (uint64_t i = ll + 1; i < loc->size; i++) {
        if (loc->data[i] < '0' || loc->data[i] > '9') return OC_OK;
        num = num * 10 + (uint64_t)(loc->data[i] - '0');
    }
    if (num < sp->nparts) return OC_OK; /* written again by this save */
    for (uint32_t i = 0; i < sp->n; i++)
        if (oc_str_eq(*loc, sp->names[i])) return OC_OK;
    if (sp->n == sp->cap) {
        uint32_t cap = sp->cap ? sp->cap * 2 : 8;
        char **p = realloc(sp->names, cap * sizeof *p);
        if (!p) return OC_ERR_NOMEM;
        sp->names = p;
        sp->cap = cap;
    }
    char *name = oc_arena_alloc(sp->arena, (size_t)loc->size + 1);
    if (!name) return OC_ERR_NOMEM;
    memcpy(name, loc->data, (size_t)loc->size);
    name[loc->size] = '\0';
    sp->names[sp->n++] = name;
    return OC_OK;
}

/* What decoding the replaced model may cost: it runs under the exclusive pair lock, and
 * the old file is whatever is there (possibly hostile), so its cost is capped. */
#define STALE_SCAN_MAX_MEMORY (64u << 20)

/* Reads the model at path (the one being replaced, if any) for its stale parts, without
 * its tensor bytes and within STALE_SCAN_MAX_MEMORY. Conservative: a file that does not
 * decode as a model within that budget, or whose scan fails, has none we may remove. */
static void find_stale_parts(const char *path, stale_parts *sp) {
    void *old = NULL;
    oc_parse_options po;
    oc_parse_options_init(&po);
    po.no_copy = 1;
    po.skip_raw_data = 1;
    po.max_memory = STALE_SCAN_MAX_MEMORY;
    if (!sp->arena) return;
    /* Mapped and decoded here, not through oc_msg_load_file (model.c calls this file:
     * no cycle between the two); the same steps, without use_pread. */
    oc_mapped map;
    struct stat st; /* not even opened unless a regular file: opening a FIFO wakes a writer */
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || oc_map_file(path, &map, NULL) != OC_OK)
        return;
    old = oc_msg_new(sp->arena, &onnx_ModelProto_desc);
    if (old &&
        oc_decode(&onnx_ModelProto_desc, old, map.data, map.size, sp->arena, &po, map.owner,
                  NULL) == OC_OK &&
        oc_msg_visit_tensors(&onnx_ModelProto_desc, old, note_stale, sp) != OC_OK)
        sp->n = 0; /* a partial list is still correct, but keep the rule simple: none */
    oc_owner_unref(map.owner);
}

/* Whether path is one this save has just put in place: the model or one of its parts. */
static int written_by_save(const data_writer *w, const char *path) {
    if (same_name(path, w->model_path)) return 1;
    for (uint32_t i = 0; i < w->nparts; i++) {
        char *p = part_path(w, w->parts[i].location);
        int same = !p || same_name(path, p); /* no memory: keep the file */
        free(p);
        if (same) return 1;
    }
    return 0;
}

/* Removes them (regular files only, beneath the model's directory) once the new model is
 * in place, never a file this save wrote (the new model itself may be named LOCATION.N,
 * honestly or by a hostile old model naming itself). */
static void remove_stale_parts(const data_writer *w, const stale_parts *sp) {
    for (uint32_t i = 0; i < sp->n; i++) {
        char *p = part_path(w, sp->names[i]);
        struct stat st;
        if (!p) return;
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && !written_by_save(w, p)) unlink(p);
        free(p);
    }
}

/* 1 when name is base + "." + decimal digits: a part of a save split over files. */
static int is_part_name(const char *name, const char *base) {
    size_t n = strlen(base);
    const char *p = name + n + 1;
    if (strncmp(name, base, n) != 0 || name[n] != '.' || *p == '\0') return 0;
    for (; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

/* With no_overwrite, a save split over files (max_external_file_size) refuses while a
 * part of its location's name is there, "LOCATION.N" for any N: how many parts it writes
 * depends on its tensors, and a part left by another save would sit beside the new ones
 * as if it were theirs. (LOCATION and the parts it does write are refused as each is
 * opened, and at commit.) */
static oc_status check_no_parts(const data_writer *w, oc_error *err) {
    if (!w->opts->no_overwrite || !w->opts->max_external_file_size) return OC_OK;
    char *first = part_path(w, w->location), *dir = first ? dir_prefix(first) : NULL;
    DIR *d = dir ? opendir(dir[0] ? dir : ".") : NULL;
    oc_status st = dir ? OC_OK : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    struct dirent *e;
    while (d && st == OC_OK && (e = readdir(d)) != NULL) {
        if (!is_part_name(e->d_name, oc__path_base(first))) continue;
        size_t n = strlen(dir) + strlen(e->d_name) + 1;
        char *path = malloc(n);
        if (path) snprintf(path, n, "%s%s", dir, e->d_name);
        st = path ? oc_error_file(
                        err, path,
                        oc__fail(err, OC_ERR_EXISTS, OC_NO_OFFSET, "%s already exists", path))
                  : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        free(path);
    }
    if (d) closedir(d);
    free(dir);
    free(first);
    return st;
}

/* With no_overwrite, fails if any file of the pair (a part or the model) already has its
 * name, before anything is renamed: a refused save leaves nothing. */
static oc_status check_none_exists(const data_writer *w, const oc_atomic_file *model,
                                   oc_error *err) {
    struct stat st;
    OC_FORWARD(check_no_parts(w, err));
    for (uint32_t i = 0; i < w->nparts; i++)
        if (lstat(w->parts[i].af.path, &st) == 0)
            return oc_error_file(err, w->parts[i].af.path,
                                 oc__fail(err, OC_ERR_EXISTS, OC_NO_OFFSET, "%s already exists",
                                          w->parts[i].af.path));
    if (lstat(model->path, &st) == 0)
        return oc_error_file(
            err, model->path,
            oc__fail(err, OC_ERR_EXISTS, OC_NO_OFFSET, "%s already exists", model->path));
    return OC_OK;
}

/* The model's rename failed after the parts were renamed: removes the parts whose names
 * were new, so nothing of this save remains. A part that replaced a file cannot give it
 * back (E-25). */
static void take_back_parts(const data_writer *w, uint32_t renamed) {
    for (uint32_t i = 0; i < renamed; i++) {
        if (w->parts[i].existed) continue;
        char *p = part_path(w, w->parts[i].location);
        if (p) unlink(p);
        free(p);
    }
}

/* Under the directory's lock (saves one at a time) the replaced model is read for its stale
 * parts; then, holding its write lock (no reader between the renames) and with the
 * signals that end the process held back (a handler must not run between two renames),
 * the data files and the model are renamed into place, then the stale parts removed. */
static oc_status commit_pair(data_writer *w, oc_atomic_file *model, const char *path,
                             oc_error *err) {
    stale_parts sp = {w->location, w->nparts, NULL, NULL, 0, 0};
    sigset_t fatal, saved;
    sigemptyset(&fatal);
    sigaddset(&fatal, SIGINT);
    sigaddset(&fatal, SIGTERM);
    sigaddset(&fatal, SIGHUP);
    oc__lock_holder holder = OC__LOCK_HOLDER_INIT;
    int dir_lock = oc__pair_dir_lock(path, &holder), model_lock = -1;
    oc_status st = dir_lock == OC__PAIR_BUSY ? dir_busy(path, &holder, err) : OC_OK;
    if (st == OC_OK && !w->opts->no_overwrite) {
        sp.arena = oc_arena_new();
        find_stale_parts(path, &sp);
    }
    if (st == OC_OK) model_lock = oc__pair_write_lock(path, &holder);
    if (model_lock == OC__PAIR_BUSY) st = pair_busy("model", path, &holder, err);
    if (model_lock == OC__PAIR_DENIED) st = model_denied(path, err);
    oc__test_point("pair-locked");
    if (st == OC_OK && w->opts->no_overwrite) st = check_none_exists(w, model, err);
    int masked = pthread_sigmask(SIG_BLOCK, &fatal, &saved) == 0;
    uint32_t renamed = 0;
    for (uint32_t i = 0; i < w->nparts; i++) {
        struct stat old;
        if (st == OC_OK) {
            w->parts[i].existed = lstat(w->parts[i].af.path, &old) == 0;
            st = oc_atomic_commit(&w->parts[i].af, err);
            renamed += st == OC_OK;
        } else {
            oc_atomic_abort(&w->parts[i].af);
        }
    }
    if (st == OC_OK)
        st = oc_atomic_commit(model, err);
    else
        oc_atomic_abort(model);
    if (st == OC_OK)
        remove_stale_parts(w, &sp);
    else
        take_back_parts(w, renamed);
    if (masked) pthread_sigmask(SIG_SETMASK, &saved, NULL);
    oc__pair_unlock(model_lock);
    oc__pair_unlock(dir_lock);
    free(sp.names);
    oc_arena_free(sp.arena);
    return st;
}

/* An s3:// pair: each data object completed, in order, then the model's (a model object
 * never names data that is not in place); at the first failure every upload not yet
 * completed is aborted. The objects already completed stay (S3 has no rename to make the
 * pair appear at once: spec/remote.md R-21). Without overwrite each upload looked at its
 * key at open and looks again before it completes. */
static oc_status commit_remote(data_writer *w, oc_atomic_file *model, oc_error *err) {
    oc_status st = OC_OK;
    for (uint32_t i = 0; i < w->nparts; i++) {
        if (st == OC_OK)
            st = oc_atomic_commit(&w->parts[i].af, err);
        else
            oc_atomic_abort(&w->parts[i].af);
    }
    if (st == OC_OK) return oc_atomic_commit(model, err);
    oc_atomic_abort(model);
    return st;
}

oc_status oc__save_external(const oc_msgdesc *desc, const void *msg, const char *path,
                            const oc_serialize_options *opts, oc_error *err) {
    return oc__save_external_url(desc, msg, path, opts, NULL, err);
}

oc_status oc__save_external_url(const oc_msgdesc *desc, const void *msg, const char *path,
                                const oc_serialize_options *opts, const oc_http_options *http,
                                oc_error *err) {
    if (http && strncasecmp(path, "s3://", 5) != 0) http = NULL;
    uint64_t align = opts->buffer.alignment;
    if (align & (align - 1))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "alignment %llu is not a power of two", (unsigned long long)align);
    /* where the same string names a URL, no local file is made */
    if (oc_is_url(opts->external_data))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "external data location %s is a URL: onnxz writes local files only",
                        opts->external_data);
    /* "-" is standard output wherever an output is named (S-41), and a data file has a
     * name: the model's reference to it */
    if (strcmp(opts->external_data, "-") == 0)
        return oc__fail_rule(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "S-41",
                             "external data location '-': standard output cannot be a data "
                             "file, which a model refers to by name");
    /* An absolute location is reduced to its file name, so the files can move together. */
    const char *loc = opts->external_data;
    if (loc[0] == '/') loc = strrchr(loc, '/') + 1;
    oc_str ls = {loc, strlen(loc)};
    const char *why = oc__location_problem(&ls);
    if (why)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "external data location '%s' %s",
                        opts->external_data, why);
    data_writer w;
    memset(&w, 0, sizeof w);
    w.opts = opts;
    w.fetch = opts->fetch;
    w.http = http;
    w.dir = dir_prefix(path);
    w.model_path = path;
    w.location = strdup(loc);
    if (!w.dir || !w.location) {
        free(w.dir);
        free(w.location);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    oc_status st = OC_OK; /* a location naming the model itself: open_part refuses it */
    oc_atomic_file model;
    memset(&model, 0, sizeof model); /* oc_atomic_abort may see it before oc_atomic_open */
    model.fd = -1;
    if (st == OC_OK && !http) st = check_no_parts(&w, err); /* before anything is written */
    if (st == OC_OK) st = oc_progress_start_save(&w.progress, desc, msg, opts, err);
    if (st == OC_OK)
        st = oc_atomic_open_url(&model, path, opts->no_overwrite, OC_ATOMIC_STREAM, http, err);
    model.progress = &w.progress;
    model.no_sync = opts->no_sync;
    if (st == OC_OK)
        st = oc_encode_external_fetched(desc, msg, opts->buffer.raw_data_threshold, opts->fetch,
                                        put_in_file, &w, oc_atomic_write, &model, err);
    /* Data first, then the model: a model file never names data that is not in place. */
    if (st == OC_OK) {
        st = http ? commit_remote(&w, &model, err) : commit_pair(&w, &model, path, err);
    } else {
        for (uint32_t i = 0; i < w.nparts; i++) oc_atomic_abort(&w.parts[i].af);
        oc_atomic_abort(&model);
    }
    for (uint32_t i = 0; i < w.nparts; i++) free(w.parts[i].location);
    if (st == OC_OK) oc_progress_finish(&w.progress);
    free(w.parts);
    free(w.dir);
    free(w.location);
    return st;
}
