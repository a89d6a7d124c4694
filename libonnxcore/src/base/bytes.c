/*
 * bytes.c - byte spans (owned / borrowed / shared) and reference-counted owner tokens.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "onnxcore/bytes.h"
#include "internal/bytes.h"
#include "internal/error.h"

/* Owned tensor storage is aligned for SIMD loads and cache lines. */
#define OC_BYTES_ALIGN 64u

struct oc_owner {
    atomic_uint_fast64_t refs;
    void (*release)(void *ctx);
    void *ctx;
};

oc_owner *oc_owner_new(void (*release)(void *ctx), void *ctx) {
    oc_owner *o = malloc(sizeof *o);
    if (!o) return NULL;
    atomic_init(&o->refs, 1);
    o->release = release;
    o->ctx = ctx;
    return o;
}

void *oc__owner_ctx(const oc_owner *o, void (*release)(void *ctx)) {
    return o && o->release == release ? o->ctx : NULL;
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
