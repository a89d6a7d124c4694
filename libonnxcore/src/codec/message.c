/*
 * message.c - generic operations on messages through their descriptors: allocation,
 * repeated-field growth, deep copy and the tensor walk.
 */
#include <pthread.h>
#include <string.h>

#include "onnxcore/codec.h"
#include "internal/arena.h"
#include "internal/error.h"
#include "internal/message.h"
#include "internal/schema.h"

static void release_spans(void *msg);

void *oc_msg_new(oc_arena *arena, const oc_msgdesc *desc) {
    void *m = oc__arena_alloc(arena, desc->size);
    if (m && desc->has_span && oc_arena_add_cleanup(arena, release_spans, m) != OC_OK) return NULL;
    return m;
}

/* Cleanup registered for messages with span fields (TensorProto): release the spans. */
static void release_spans(void *msg) {
    const oc_msgdesc *d = &onnx_TensorProto_desc;
    for (uint32_t i = 0; i < d->nfields; i++)
        if (d->fields[i].type == OC_FT_SPAN)
            oc_bytes_release((oc_bytes *)(void *)((char *)msg + d->fields[i].offset));
}

static oc_status array_grow(oc_arena *arena, oc_array_hdr *a, uint64_t elem, uint64_t need) {
    if (need <= a->cap) return OC_OK;
    /* Start at one element: most repeated fields of a graph hold one or two (a node's
     * outputs, a LeakyRelu's input and attribute), and every byte left unused here is
     * decoded memory per node. */
    uint64_t cap = a->cap ? a->cap : 1;
    while (cap < need) {
        if (cap > UINT64_MAX / 2) return OC_ERR_NOMEM;
        cap *= 2;
    }
    if (cap > UINT64_MAX / elem) return OC_ERR_NOMEM;
    void *items = oc__arena_alloc(arena, cap * elem);
    if (!items) return OC_ERR_NOMEM;
    if (a->count) memcpy(items, a->items, (size_t)(a->count * elem));
    a->items = items;
    a->cap = cap;
    return OC_OK;
}

void *oc_array_push(oc_arena *arena, void *array, uint64_t elem) {
    oc_array_hdr a;
    memcpy(&a, array, sizeof a);
    if (array_grow(arena, &a, elem, a.count + 1) != OC_OK) return NULL;
    void *slot = (char *)a.items + a.count * elem;
    a.count++;
    memcpy(array, &a, sizeof a);
    return slot;
}

oc_status oc__array_reserve(oc_arena *arena, void *msg, const oc_field *f, uint64_t extra) {
    oc_array_hdr a = oc__array_get(msg, f);
    if (extra > UINT64_MAX - a.count) return OC_ERR_NOMEM;
    OC_FORWARD(array_grow(arena, &a, oc__elem_size(f), a.count + extra));
    oc__array_put(msg, f, &a);
    return OC_OK;
}

void *oc_array_add_msg(oc_arena *arena, void *array, const oc_msgdesc *desc) {
    void *m = oc_msg_new(arena, desc);
    if (!m) return NULL;
    void **slot = oc__array_push(arena, array, sizeof(void *));
    if (!slot) return NULL;
    memcpy(slot, &m, sizeof m);
    return m;
}

/* ---- deep copy ---- */

static oc_status copy_msg(const oc_msgdesc *d, const void *src, oc_arena *a, void **out,
                          oc_error *err, uint32_t depth);

static oc_status copy_nomem(oc_error *err) {
    return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory copying a message");
}

static oc_status copy_field(const oc_field *f, const void *src, void *dst, oc_arena *a,
                            oc_error *err, uint32_t depth) {
    const char *s = (const char *)src + f->offset;
    char *t = (char *)dst + f->offset;
    if (oc__is_repeated(f)) {
        oc_array_hdr from = oc__array_get(src, f), to = {NULL, 0, 0};
        if (from.count == 0) {
            oc__array_put(dst, f, &to);
            return OC_OK;
        }
        uint64_t es = oc__elem_size(f);
        if (array_grow(a, &to, es, from.count) != OC_OK) return copy_nomem(err);
        to.count = from.count;
        oc__array_put(dst, f, &to);
        if (f->type == OC_FT_MSG) {
            void **fi = from.items, **ti = to.items;
            for (uint64_t i = 0; i < from.count; i++)
                OC_FORWARD(copy_msg(f->sub, fi[i], a, &ti[i], err, depth + 1));
        } else if (f->type == OC_FT_STRING || f->type == OC_FT_BYTES) {
            const oc_str *fs = from.items;
            oc_str *ts = to.items;
            for (uint64_t i = 0; i < from.count; i++)
                if (oc_str_set(a, &ts[i], fs[i].data, fs[i].size) != OC_OK) return copy_nomem(err);
        } else {
            memcpy(to.items, from.items, (size_t)(from.count * es));
        }
        return OC_OK;
    }
    switch ((oc_ftype)f->type) {
    case OC_FT_MSG: {
        void *sub = oc__msg_get(src, f), *copy = NULL;
        if (sub) OC_FORWARD(copy_msg(f->sub, sub, a, &copy, err, depth + 1));
        oc__msg_put(dst, f, copy);
        return OC_OK;
    }
    case OC_FT_STRING:
    case OC_FT_BYTES: {
        const oc_str *ss = (const oc_str *)(const void *)s;
        if (ss->size == 0) {
            memcpy(t, ss, sizeof *ss);
            return OC_OK;
        }
        return oc_str_set(a, (oc_str *)(void *)t, ss->data, ss->size) == OC_OK ? OC_OK
                                                                               : copy_nomem(err);
    }
    case OC_FT_SPAN:
        return oc_bytes_copy((oc_bytes *)(void *)t, (const oc_bytes *)(const void *)s, err);
    default:
        memcpy(t, s, oc__elem_size(f));
        return OC_OK;
    }
}

static oc_status copy_msg(const oc_msgdesc *d, const void *src, oc_arena *a, void **out,
                          oc_error *err, uint32_t depth) {
    if (depth > OC_MAX_DEPTH_HARD)
        return oc__fail(err, OC_ERR_DEPTH, OC_NO_OFFSET, "message tree nested too deeply to copy");
    void *dst = oc_msg_new(a, d); /* zeroed: spans start empty, registered for cleanup */
    if (!dst) return copy_nomem(err);
    *out = dst;
    const oc_msghdr *sh = oc__hdr_c(src);
    oc_msghdr *th = oc__hdr(dst);
    th->has = sh->has;
    if (sh->unknown.size && oc_str_set(a, &th->unknown, sh->unknown.data, sh->unknown.size))
        return copy_nomem(err);
    for (uint32_t i = 0; i < d->nfields; i++)
        OC_FORWARD(copy_field(&d->fields[i], src, dst, a, err, depth));
    return OC_OK;
}

oc_status oc_msg_copy(const oc_msgdesc *desc, const void *src, oc_arena *arena, void **out,
                      oc_error *err) {
    if (!desc || !src || !arena || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_msg_copy: missing argument");
    return copy_msg(desc, src, arena, out, err, 1);
}

/* ---- tensor walk ---- */

/* Whether a message of each type can hold a TensorProto at any depth, computed once from
 * the tables (a fixpoint over the field graph), so the walk skips types, shapes and
 * string pairs: for a graph of 100,000 nodes that is most of the tree. */
static const oc_msgdesc *const oc_all_types[] = {
#define OC_X_ALL_(M, N) &onnx_##M##_desc,
    ONNX_MESSAGES(OC_X_ALL_)
#undef OC_X_ALL_
};
static uint8_t holds_tensor[OC_MSG__COUNT];
/* Per type, the indices of its fields that can lead to a tensor (at most 32 fields). */
static uint8_t tensor_fields[OC_MSG__COUNT][32];
static uint8_t n_tensor_fields[OC_MSG__COUNT];
static pthread_once_t holds_tensor_once = PTHREAD_ONCE_INIT;

static void compute_holds_tensor(void) {
    holds_tensor[onnx_TensorProto_desc.index] = 1;
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < OC_MSG__COUNT; i++) {
            const oc_msgdesc *d = oc_all_types[i];
            for (uint32_t j = 0; j < d->nfields && !holds_tensor[i]; j++) {
                const oc_field *f = &d->fields[j];
                if (f->type == OC_FT_MSG && holds_tensor[f->sub->index])
                    holds_tensor[i] = 1, changed = 1;
            }
        }
    }
    for (size_t i = 0; i < OC_MSG__COUNT; i++) {
        const oc_msgdesc *d = oc_all_types[i];
        for (uint32_t j = 0; j < d->nfields; j++)
            if (d->fields[j].type == OC_FT_MSG && holds_tensor[d->fields[j].sub->index])
                tensor_fields[i][n_tensor_fields[i]++] = (uint8_t)j;
    }
}

/* Walks only fields that can lead to a tensor; tables were computed by the caller. */
static oc_status visit(const oc_msgdesc *d, void *msg, oc_tensor_fn fn, void *ctx, uint32_t depth) {
    if (d == &onnx_TensorProto_desc) return fn(ctx, msg);
    if (depth > OC_MAX_DEPTH_HARD) return OC_ERR_DEPTH;
    for (uint32_t k = 0; k < n_tensor_fields[d->index]; k++) {
        const oc_field *f = &d->fields[tensor_fields[d->index][k]];
        if (oc__is_repeated(f)) {
            oc_array_hdr a = oc__array_get(msg, f);
            void **items = a.items;
            for (uint64_t j = 0; j < a.count; j++)
                OC_FORWARD(visit(f->sub, items[j], fn, ctx, depth + 1));
        } else {
            void *sub = oc__msg_get(msg, f);
            if (sub) OC_FORWARD(visit(f->sub, sub, fn, ctx, depth + 1));
        }
    }
    return OC_OK;
}

oc_status oc_msg_visit_tensors(const oc_msgdesc *desc, void *msg, oc_tensor_fn fn, void *ctx) {
    if (!desc || !msg || !fn) return OC_ERR_INVALID_ARG;
    pthread_once(&holds_tensor_once, compute_holds_tensor);
    if (!holds_tensor[desc->index]) return OC_OK;
    return visit(desc, msg, fn, ctx, 1);
}
