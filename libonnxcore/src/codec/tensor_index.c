/*
 * tensor_index.c - a model's tensors found by name in expected constant time (K-1, K-2):
 * one keyed name table (nametab.h) built by one walk, for readers that look names up
 * again and again (the Python package's File[name]).
 */
#include <stdlib.h>

#include "internal/nametab.h"
#include "onnxcore/tensor.h"
#include "internal/error.h"

struct oc_tensor_index {
    onnx_TensorProto **items; /* the first tensor of each name, in walk order */
    uint64_t count, cap;
    oc_nametab *tab;
};

static void name_of(const void *ctx, uint64_t i, const void **name, size_t *len) {
    const oc_tensor_index *x = ctx;
    *name = x->items[i]->name.data;
    *len = (size_t)x->items[i]->name.size;
}

/* One tensor of the walk: kept when it has a name not seen before. */
static oc_status add_tensor(void *ctx, onnx_TensorProto *t) {
    oc_tensor_index *x = ctx;
    if (!OC_HAS(TensorProto, t, name)) return OC_OK;
    uint64_t h = oc_nametab_hash(t->name.data, (size_t)t->name.size);
    if (oc_nametab_find(x->tab, t->name.data, (size_t)t->name.size, h) >= 0) return OC_OK;
    if (x->count == x->cap) {
        uint64_t cap = x->cap ? x->cap * 2 : 64;
        onnx_TensorProto **p =
            cap <= SIZE_MAX / sizeof *p ? realloc(x->items, cap * sizeof *p) : NULL;
        if (!p) return OC_ERR_NOMEM;
        x->items = p;
        x->cap = cap;
    }
    OC_FORWARD(oc_nametab_reserve(x->tab));
    x->items[x->count] = t;
    oc_nametab_insert(x->tab, x->count++, h);
    return OC_OK;
}

oc_status oc_tensor_index_new(const oc_msgdesc *desc, void *msg, oc_tensor_index **out,
                              oc_error *err) {
    if (out) *out = NULL;
    if (!desc || !msg || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_tensor_index_new: missing argument");
    oc_tensor_index *x = calloc(1, sizeof *x);
    if (x) x->tab = oc_nametab_new(64, name_of, x);
    oc_status st = x && x->tab ? oc_msg_visit_tensors(desc, msg, add_tensor, x) : OC_ERR_NOMEM;
    if (st != OC_OK) {
        oc_tensor_index_free(x);
        return st == OC_ERR_LIMIT ? oc__fail(err, st, OC_NO_OFFSET,
                                             "more tensor names than a "
                                             "name table holds")
                                  : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    *out = x;
    return OC_OK;
}

void oc_tensor_index_free(oc_tensor_index *x) {
    if (!x) return;
    oc_nametab_free(x->tab);
    free(x->items);
    free(x);
}

uint64_t oc_tensor_index_count(const oc_tensor_index *x) { return x ? x->count : 0; }

onnx_TensorProto *oc_tensor_index_at(const oc_tensor_index *x, uint64_t i) {
    return x && i < x->count ? x->items[i] : NULL;
}

onnx_TensorProto *oc_tensor_index_find(const oc_tensor_index *x, const void *name, size_t len) {
    if (!x) return NULL;
    int64_t i = oc_nametab_find(x->tab, name, len, oc_nametab_hash(name, len));
    return i < 0 ? NULL : x->items[i];
}
