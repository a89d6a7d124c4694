/*
 * bytes.c - byte spans (owned / borrowed / shared) and reference-counted owner tokens.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxcore/bytes.h"
#include "internal/bytes.h"
#include "internal/error.h"

/* Owned tensor storage is aligned for SIMD loads and cache lines. */
#define OC_BYTES_ALIGN 64u

struct oc_owner {
    atomic_uint_fast64_t refs;
    void (*release)(void *ctx);
    void *ctx;
    /* Set once, before sharing, for a read-only mapping of a file: */
    bool file_backed;
    int file_fd;                 /* a descriptor of the file the storage keeps open, or -1 */
    const uint8_t *file_base;    /* where the file's offset 0 is mapped */
    uint64_t file_size;          /* bytes mapped */
    dev_t file_dev;              /* the file file_fd named when the mapping was made */
    ino_t file_ino;
};

oc_owner *oc_owner_new(void (*release)(void *ctx), void *ctx) {
    oc_owner *o = malloc(sizeof *o);
    if (!o) return NULL;
    atomic_init(&o->refs, 1);
    o->release = release;
    o->ctx = ctx;
    o->file_backed = false;
    o->file_fd = -1;
    o->file_base = NULL;
    o->file_size = 0;
    return o;
}

void oc__owner_set_file_backed(oc_owner *o, const void *base, uint64_t size, int fd) {
    if (!o) return;
    struct stat st;
    o->file_backed = true;
    o->file_base = base;
    o->file_size = size;
    o->file_fd = fd >= 0 && fstat(fd, &st) == 0 ? fd : -1;
    if (o->file_fd >= 0) {
        o->file_dev = st.st_dev;
        o->file_ino = st.st_ino;
    }
}

bool oc__owner_file_offset(const oc_owner *o, const void *p, uint64_t n, int *fd,
                           uint64_t *offset) {
    uintptr_t at = (uintptr_t)p, base = o ? (uintptr_t)o->file_base : 0;
    if (!o || !o->file_backed || o->file_fd < 0 || !p || at < base ||
        at - base > o->file_size || n > o->file_size - (at - base))
        return false;
    /* The descriptor is ours, but a process may close descriptors it does not own (a
     * daemon's closefrom) and the number be reused: use it only while it is the file. */
    struct stat st;
    if (fstat(o->file_fd, &st) != 0 || st.st_dev != o->file_dev || st.st_ino != o->file_ino)
        return false;
    *fd = o->file_fd;
    *offset = (uint64_t)(at - base);
    return true;
}

bool oc__bytes_file_source(const oc_bytes *s, int *fd, uint64_t *offset) {
    return s->mode == OC_BYTES_SHARED &&
           oc__owner_file_offset(s->owner, s->data, s->size, fd, offset);
}

oc_owner *oc_owner_ref(oc_owner *o) {
    if (o) atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
    return o;
}

void oc_owner_unref(oc_owner *o) {
    if (!o) return;
    /* acq_rel: every use of the storage by other holders happens before the release. */
    if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1) {
        if (o->release) o->release(o->ctx);
        free(o);
    }
}

uint64_t oc_owner_refcount(const oc_owner *o) {
    return o ? (uint64_t)atomic_load_explicit(&((oc_owner *)o)->refs, memory_order_relaxed) : 0;
}

/* oc_bytes_write for a span whose file descriptor is known: pread through a buffer. Sets
 * *done to the bytes passed on; a read the descriptor refuses (EINVAL for O_DIRECT, ...)
 * returns OC_OK early and leaves the rest to the mapping's pages. */
static oc_status write_from_file(const oc_bytes *s, int fd, uint64_t at, uint8_t *buf,
                                 oc_write_fn write, void *ctx, uint64_t *done, oc_error *err) {
    *done = 0;
    while (*done < s->size) {
        uint64_t left = s->size - *done;
        size_t want = left < OC_BYTES_READ_PIECE ? (size_t)left : OC_BYTES_READ_PIECE, got = 0;
        while (got < want) {
            ssize_t r = pread(fd, buf + got, want - got, (off_t)(at + got));
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) return OC_OK;
            if (r == 0)
                return oc__fail(err, OC_ERR_TRUNCATED, OC_NO_OFFSET,
                                "a mapped input file was cut short at offset %llu while being "
                                "read", (unsigned long long)(at + got));
            got += (size_t)r;
        }
        OC_FORWARD(write(ctx, buf, want, err));
        at += want;
        *done += want;
    }
    return OC_OK;
}

oc_status oc_bytes_write(const oc_bytes *s, oc_write_fn write, void *ctx, oc_error *err) {
    int fd;
    uint64_t at, done = 0;
    if (s->size >= OC_BYTES_READ_PIECE && oc__bytes_file_source(s, &fd, &at)) {
        uint8_t *buf = malloc(OC_BYTES_READ_PIECE);
        if (buf) {
            oc_status st = write_from_file(s, fd, at, buf, write, ctx, &done, err);
            free(buf);
            if (st != OC_OK || done == s->size) return st;
        }
    }
    const uint8_t *p = done ? s->data + done : s->data; /* no arithmetic on NULL */
    uint64_t left = s->size - done;
    bool drop = s->mode == OC_BYTES_SHARED && s->owner && s->owner->file_backed;
    while (left) {
        /* Pieces end on a chunk-aligned address, so every page but the span's first and
         * last partial ones is dropped whole. */
        uint64_t n = OC_BYTES_WRITE_CHUNK - ((uintptr_t)p & (OC_BYTES_WRITE_CHUNK - 1u));
        if (n > left) n = left;
        oc_status st = write(ctx, p, n, err);
        if (st != OC_OK) return st;
        if (drop) oc__file_pages_done(p, n);
        p += n;
        left -= n;
    }
    return OC_OK;
}

void *oc_bytes_alloc_buffer(uint64_t size) {
    if (size > (uint64_t)SIZE_MAX - OC_BYTES_ALIGN) return NULL;
    size_t n = (size_t)((size + OC_BYTES_ALIGN - 1) & ~(uint64_t)(OC_BYTES_ALIGN - 1));
    void *p = NULL;
    if (posix_memalign(&p, OC_BYTES_ALIGN, n ? n : OC_BYTES_ALIGN) != 0) return NULL;
    return p;
}

void oc_bytes_free_buffer(void *buffer) { free(buffer); }

bool oc_bytes_is_borrowed(const oc_bytes *s) { return s && s->mode != OC_BYTES_OWNED; }

void oc_bytes_release(oc_bytes *s) {
    if (!s) return;
    if (s->mode == OC_BYTES_OWNED)
        oc_bytes_free_buffer((void *)(uintptr_t)s->data);
    else if (s->mode == OC_BYTES_SHARED)
        oc_owner_unref(s->owner);
    memset(s, 0, sizeof *s);
}

oc_status oc__bytes_set_uninit(oc_bytes *s, uint64_t size, uint8_t **out) {
    uint8_t *p = NULL;
    if (size && !(p = oc_bytes_alloc_buffer(size))) return OC_ERR_NOMEM;
    oc_bytes_release(s);
    s->data = p;
    s->size = size;
    s->mode = OC_BYTES_OWNED;
    *out = p;
    return OC_OK;
}

void oc__bytes_adopt(oc_bytes *s, uint8_t *buffer, uint64_t size) {
    oc_bytes_release(s);
    s->data = buffer;
    s->size = size;
    s->mode = OC_BYTES_OWNED;
}

oc_status oc_bytes_set_alloc(oc_bytes *s, uint64_t size, uint8_t **out, oc_error *err) {
    uint8_t *p;
    if (oc__bytes_set_uninit(s, size, &p) != OC_OK)
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET,
                        "out of memory allocating %llu bytes of tensor data",
                        (unsigned long long)size);
    if (size) memset(p, 0, (size_t)size);
    if (out) *out = p;
    return OC_OK;
}

oc_status oc_bytes_set_copy(oc_bytes *s, const void *data, uint64_t size, oc_error *err) {
    /* Copy before releasing: data may point into the span's own buffer. */
    uint8_t *p = size ? oc_bytes_alloc_buffer(size) : NULL;
    if (size && !p)
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET,
                        "out of memory copying %llu bytes of tensor data",
                        (unsigned long long)size);
    if (size) memcpy(p, data, (size_t)size);
    oc_bytes_release(s);
    s->data = p;
    s->size = size;
    s->mode = OC_BYTES_OWNED;
    return OC_OK;
}

void oc_bytes_set_borrowed(oc_bytes *s, const void *data, uint64_t size) {
    oc_bytes_release(s);
    s->data = data;
    s->size = size;
    s->mode = OC_BYTES_BORROWED;
}

void oc_bytes_set_shared(oc_bytes *s, const void *data, uint64_t size, oc_owner *owner) {
    oc_owner_ref(owner); /* before the release: data may be kept alive only by s itself */
    oc_bytes_release(s);
    s->data = data;
    s->size = size;
    s->owner = owner;
    s->mode = owner ? OC_BYTES_SHARED : OC_BYTES_BORROWED;
}

oc_status oc_bytes_copy(oc_bytes *dst, const oc_bytes *src, oc_error *err) {
    switch (src->mode) {
    case OC_BYTES_BORROWED:
        oc_bytes_set_borrowed(dst, src->data, src->size);
        return OC_OK;
    case OC_BYTES_SHARED:
        oc_bytes_set_shared(dst, src->data, src->size, src->owner);
        return OC_OK;
    case OC_BYTES_OWNED:
        break;
    }
    oc_status st = oc_bytes_set_copy(dst, src->data, src->size, err);
    if (st != OC_OK) oc_bytes_release(dst);
    return st;
}

void oc_bytes_move(oc_bytes *dst, oc_bytes *src) {
    if (dst == src) return;
    oc_bytes_release(dst);
    *dst = *src;
    memset(src, 0, sizeof *src);
}
