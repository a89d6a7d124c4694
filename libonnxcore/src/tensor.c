/*
 * tensor.c - operations on all the tensors of a message tree.
 */
#include <stdlib.h>
#include <string.h>

#include "onnxcore/tensor.h"
#include "internal/error.h"

typedef struct plan {
    uint64_t threshold, align, size, count;
    uint8_t *base; /* NULL during the sizing walk */
    oc_owner *owner;
} plan;

static uint64_t round_up(uint64_t v, uint64_t a) { return a > 1 ? (v + a - 1) & ~(a - 1) : v; }

static int selected(const plan *p, const onnx_TensorProto *t) {
    return OC_HAS(TensorProto, t, raw_data) && t->raw_data.size >= p->threshold &&
           t->raw_data.size > 0;
}

/* The same walk sizes the buffer (base == NULL) and then fills it, so the offsets of the
 * two passes agree by construction. */
static oc_status place(void *ctx, onnx_TensorProto *t) {
    plan *p = ctx;
    if (!selected(p, t)) return OC_OK;
    uint64_t at = round_up(p->size, p->align);
    if (at < p->size || at + t->raw_data.size < at) return OC_ERR_NOMEM; /* overflow */
    p->size = at + t->raw_data.size;
    p->count++;
    if (p->base) {
        memcpy(p->base + at, t->raw_data.data, (size_t)t->raw_data.size);
        oc_bytes_set_shared(&t->raw_data, p->base + at, t->raw_data.size, p->owner);
    }
    return OC_OK;
}

static void free_buffer(void *ctx) { free(ctx); }

oc_status oc_consolidate_tensors(const oc_msgdesc *desc, void *msg,
                                 const oc_tensor_buffer_options *opts, oc_owner **buffer_out,
                                 const uint8_t **base_out, uint64_t *size_out, oc_error *err) {
    if (buffer_out) *buffer_out = NULL;
    if (base_out) *base_out = NULL;
    if (size_out) *size_out = 0;
    if (!desc || !msg)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "consolidate: missing argument");
    plan p = {opts ? opts->raw_data_threshold : 0, opts ? opts->alignment : 0, 0, 0, NULL, NULL};
    if (p.align & (p.align - 1))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "alignment %llu is not a power of two", (unsigned long long)p.align);
    if (oc_visit_tensors(desc, msg, place, &p) != OC_OK)
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "tensor bytes too large to consolidate");
    if (p.count == 0) return OC_OK;
    uint64_t total = p.size, align = p.align > 64 ? p.align : 64;
    void *base = NULL;
    if (total > SIZE_MAX - align || posix_memalign(&base, (size_t)align, (size_t)round_up(total, align)) != 0)
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET,
                        "out of memory for a %llu-byte tensor buffer", (unsigned long long)total);
    p.owner = oc_owner_new(free_buffer, base);
    if (!p.owner) {
        free(base);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    p.base = base;
    p.size = 0;
    p.count = 0;
    oc_visit_tensors(desc, msg, place, &p); /* cannot fail: the sizes were checked */
    if (base_out) *base_out = base;
    if (size_out) *size_out = total;
    if (buffer_out)
        *buffer_out = p.owner; /* our creation reference becomes the caller's */
    else
        oc_owner_unref(p.owner);
    return OC_OK;
}
