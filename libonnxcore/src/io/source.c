/*
 * source.c - the byte source (internal/source.h): references, the calls every reader
 * makes, the memory source, and writing a span out through the source it came from.
 * libonnxz's ZIP reader reads through these calls, exported to it under the private
 * symbol version (ARCHITECTURE.md).
 */
#include <stdlib.h>
#include <string.h>

#include "onnxcore/bytes.h"
#include "internal/bytes.h"
#include "internal/error.h"
#include "internal/source.h"

static void source_release(void *ctx) {
    oc_source *s = ctx;
    s->vt->destroy(s);
    free(s->name);
    free(s);
}

oc_status oc__source_new(oc_source *s, const oc_source_vtable *vt, uint64_t size, unsigned caps,
                         const uint8_t *data, const char *name, oc_error *err) {
    s->vt = vt;
    s->size = size;
    s->caps = caps;
    s->data = data;
    s->name = strdup(name ? name : vt->kind);
    s->owner = s->name ? oc_owner_new(source_release, s) : NULL;
    if (!s->owner) {
        source_release(s);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    return OC_OK;
}

oc_source *oc_source_ref(oc_source *s) {
    if (s) oc_owner_ref(s->owner);
    return s;
}

void oc_source_unref(oc_source *s) {
    if (s) oc_owner_unref(s->owner);
}

oc_source *oc__source_of_owner(const oc_owner *owner) {
    return oc__owner_ctx(owner, source_release);
}

oc_status oc_source_read_some(oc_source *s, uint64_t at, void *dst, uint64_t n, uint64_t *got,
                              oc_error *err) {
    *got = 0;
    if (at >= s->size || n == 0) return OC_OK;
    if (n > s->size - at) n = s->size - at;
    return s->vt->read(s, at, dst, n, got, err);
}

oc_status oc_source_read(oc_source *s, uint64_t at, void *dst, uint64_t n, oc_error *err) {
    uint64_t got;
    OC_FORWARD(oc_source_read_some(s, at, dst, n, &got, err));
    if (got < n)
        return oc_error_file(
            err, s->name,
            oc__fail(err, OC_ERR_TRUNCATED, at + got, "%s ended while being read", s->name));
    return OC_OK;
}

/* n bytes at `at` lie within the source. */
static oc_status check_range(const oc_source *s, uint64_t at, uint64_t n, oc_error *err) {
    if (at <= s->size && n <= s->size - at) return OC_OK;
    return oc_error_file(err, s->name,
                         oc__fail(err, OC_ERR_TRUNCATED, at,
                                  "%s: %llu bytes at offset %llu run past its end (%llu bytes)",
                                  s->name, (unsigned long long)n, (unsigned long long)at,
                                  (unsigned long long)s->size));
}

oc_status oc_source_read_to(oc_source *s, uint64_t at, uint64_t n, oc_write_fn write, void *ctx,
                            oc_error *err) {
    OC_FORWARD(check_range(s, at, n, err));
    if (s->vt->read_to) return s->vt->read_to(s, at, n, write, ctx, err);
    uint64_t piece = n < ((uint64_t)4 << 20) ? n : ((uint64_t)4 << 20);
    uint8_t *buf = malloc(piece ? (size_t)piece : 1);
    if (!buf) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_status st = OC_OK;
    for (uint64_t done = 0; st == OC_OK && done < n; done += piece) {
        if (piece > n - done) piece = n - done;
        st = oc_source_read(s, at + done, buf, piece, err);
        if (st == OC_OK) st = write(ctx, buf, piece, err);
    }
    free(buf);
    return st;
}

oc_status oc_source_map(oc_source *s, uint64_t at, uint64_t n, oc_bytes *out, oc_error *err) {
    OC_FORWARD(check_range(s, at, n, err));
    if (s->vt->map) return s->vt->map(s, at, n, out, err);
    uint8_t *dst = NULL;
    if (n && !(dst = oc_bytes_alloc_buffer(n)))
        return oc__fail(err, OC_ERR_NOMEM, at, "out of memory for %llu bytes of %s",
                        (unsigned long long)n, s->name);
    oc_status st = n ? oc_source_read(s, at, dst, n, err) : OC_OK;
    if (st != OC_OK) {
        oc_bytes_free_buffer(dst);
        return st;
    }
    oc_bytes_release(out);
    out->data = dst;
    out->size = n;
    out->owner = NULL;
    out->mode = OC_BYTES_OWNED;
    return OC_OK;
}

void oc_source_drop(oc_source *s, uint64_t at, uint64_t n) {
    if (s && s->vt->drop && at < s->size) s->vt->drop(s, at, n < s->size - at ? n : s->size - at);
}

oc_status oc_source_read_pieces(oc_source *s, const oc_source_piece *pieces, size_t n,
                                size_t *failed, oc_error *err) {
    size_t where = 0;
    if (!failed) failed = &where;
    for (size_t i = 0; i < n; i++) {
        *failed = i;
        OC_FORWARD(check_range(s, pieces[i].at, pieces[i].size, err));
    }
    if (s->vt->read_pieces) return s->vt->read_pieces(s, pieces, n, failed, err);
    for (size_t i = 0; i < n; i++) {
        *failed = i;
        OC_FORWARD(oc_source_read(s, pieces[i].at, pieces[i].dst, pieces[i].size, err));
    }
    return OC_OK;
}

void oc_source_will_read(oc_source *s, const oc_source_range *ranges, size_t count) {
    if (s && s->vt->will_read && count) s->vt->will_read(s, ranges, count);
}

void oc_source_random(oc_source *s, int on) {
    if (s && s->vt->random) s->vt->random(s, on);
}

oc_status oc_source_copy_to_fd(oc_source *s, uint64_t at, uint64_t n, int fd, uint64_t *done,
                               oc_error *err) {
    *done = 0;
    if (!s->vt->copy_to_fd || at > s->size || n > s->size - at) return OC_OK;
    return s->vt->copy_to_fd(s, at, n, fd, done, err);
}

oc_source *oc__bytes_source(const oc_bytes *span, uint64_t *at) {
    if (!span || span->mode != OC_BYTES_SHARED || !span->data) return NULL;
    oc_source *s = oc__source_of_owner(span->owner);
    if (!s || !s->data) return NULL;
    uintptr_t p = (uintptr_t)span->data, base = (uintptr_t)s->data;
    if (p < base || p - base > s->size || span->size > s->size - (p - base)) return NULL;
    *at = (uint64_t)(p - base);
    return s;
}

/* ---- writing a span out ---- */

/* oc_bytes_write for a span of a source that reads around its mapping: through one
 * buffer of OC_BYTES_READ_PIECE bytes. Sets *done to the bytes passed on. */
static oc_status write_by_reading(const oc_bytes *span, oc_source *src, uint64_t at, uint8_t *buf,
                                  oc_write_fn write, void *ctx, uint64_t *done, oc_error *err) {
    *done = 0;
    while (*done < span->size) {
        uint64_t left = span->size - *done, got;
        uint64_t want = left < OC_BYTES_READ_PIECE ? left : OC_BYTES_READ_PIECE;
        OC_FORWARD(oc_source_read_some(src, at, buf, want, &got, err));
        if (got < want)
            return oc__fail(err, OC_ERR_TRUNCATED, OC_NO_OFFSET,
                            "a mapped input file was cut short at offset %llu while being "
                            "read",
                            (unsigned long long)(at + got));
        OC_FORWARD(write(ctx, buf, want, err));
        at += want;
        *done += want;
    }
    return OC_OK;
}

oc_status oc_bytes_write(const oc_bytes *s, oc_write_fn write, void *ctx, oc_error *err) {
    uint64_t at = 0, done = 0;
    oc_source *src = oc__bytes_source(s, &at);
    if (src && (src->caps & OC_SOURCE_BYPASS) && s->size >= OC_BYTES_READ_PIECE) {
        uint8_t *buf = malloc(OC_BYTES_READ_PIECE);
        if (buf) {
            oc_status st = write_by_reading(s, src, at, buf, write, ctx, &done, err);
            free(buf);
            if (st != OC_OK || done == s->size) return st;
        }
    }
    const uint8_t *p = done ? s->data + done : s->data; /* no arithmetic on NULL */
    uint64_t left = s->size - done;
    int drop = src && (src->caps & OC_SOURCE_DROP);
    while (left) {
        /* Pieces end on a chunk-aligned address, so every page but the span's first and
         * last partial ones is dropped whole. */
        uint64_t n = OC_BYTES_WRITE_CHUNK - ((uintptr_t)p & (OC_BYTES_WRITE_CHUNK - 1u));
        if (n > left) n = left;
        oc_status st = write(ctx, p, n, err);
        if (st != OC_OK) return st;
        if (drop) oc_source_drop(src, (uint64_t)(p - src->data), n);
        p += n;
        left -= n;
    }
    return OC_OK;
}

/* ---- memory ---- */

typedef struct mem_source {
    oc_source head;
    void (*release)(void *ctx);
    void *ctx;
    oc_owner *keep;
} mem_source;

static oc_status mem_read(oc_source *s, uint64_t at, void *dst, uint64_t n, uint64_t *got,
                          oc_error *err) {
    (void)err;
    memcpy(dst, s->data + at, (size_t)n);
    *got = n;
    return OC_OK;
}

static oc_status mem_map(oc_source *s, uint64_t at, uint64_t n, oc_bytes *out, oc_error *err) {
    mem_source *m = (mem_source *)s;
    (void)err;
    const uint8_t *p = s->data ? s->data + at : NULL; /* in place even when n is 0 */
    if (m->keep)
        oc_bytes_set_shared(out, p, n, m->keep);
    else if (m->release)
        oc_bytes_set_shared(out, p, n, s->owner);
    else
        oc_bytes_set_borrowed(out, p, n);
    return OC_OK;
}

/* Advice passed on to the source the memory is a mapping of (a file mapped whole: an
 * archive's source over libonnxcore's mapping), where it is one, at the same offsets. */
static void mem_will_read(oc_source *s, const oc_source_range *ranges, size_t count) {
    oc_source *under = oc__source_of_owner(((mem_source *)s)->keep);
    if (under && under->data == s->data && under->size >= s->size)
        oc_source_will_read(under, ranges, count);
}

static void mem_random(oc_source *s, int on) {
    oc_source *under = oc__source_of_owner(((mem_source *)s)->keep);
    if (under && under->data == s->data && under->size >= s->size) oc_source_random(under, on);
}

static void mem_destroy(oc_source *s) {
    mem_source *m = (mem_source *)s;
    if (m->release) m->release(m->ctx);
    oc_owner_unref(m->keep);
}

static const oc_source_vtable mem_vtable = {
    .kind = "memory",
    .read = mem_read,
    .map = mem_map,
    .will_read = mem_will_read,
    .destroy = mem_destroy,
    .random = mem_random,
};

oc_status oc_source_memory(const void *data, uint64_t size, void (*release)(void *ctx), void *ctx,
                           oc_owner *keep, const char *name, oc_source **out, oc_error *err) {
    if (!data && size)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_source_memory: no data");
    mem_source *m = calloc(1, sizeof *m);
    if (!m) {
        if (release) release(ctx);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    m->release = release;
    m->ctx = ctx;
    m->keep = oc_owner_ref(keep);
    OC_FORWARD(
        oc__source_new(&m->head, &mem_vtable, size, OC_SOURCE_MAP, size ? data : NULL, name, err));
    *out = &m->head;
    return OC_OK;
}
