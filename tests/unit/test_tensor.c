/*
 * test_tensor.c - oc_consolidate_tensors (onnxcore/tensor.h; seed 000's
 * ConsolidateTensorsToBuffer): which tensors move, alignment, ownership, bytes unchanged.
 */
#include <stdlib.h>

#include "check.h"

/* A model with tensors of several sizes: initializers, a node attribute, a subgraph. */
static oc_model *make_model(void) {
    oc_model *m = oc_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    mp->graph = OC_NEW(a, GraphProto);
    static const uint64_t sizes[] = {10, 100, 1000, 333, 4096, 99, 0};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        onnx_TensorProto *t = OC_ADD(a, TensorProto, mp->graph->initializer);
        uint8_t *p;
        oc_bytes_set_alloc(&t->raw_data, sizes[i], &p, NULL);
        for (uint64_t j = 0; j < sizes[i]; j++) p[j] = (uint8_t)(i * 31 + j);
        OC_SET_HAS(TensorProto, t, raw_data);
    }
    onnx_NodeProto *n = OC_ADD(a, NodeProto, mp->graph->node);
    onnx_AttributeProto *at = OC_ADD(a, AttributeProto, n->attribute);
    at->g = OC_NEW(a, GraphProto);
    onnx_TensorProto *deep = OC_ADD(a, TensorProto, at->g->initializer);
    oc_bytes_set_copy(&deep->raw_data, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                                       "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                                       "01234567", 136, NULL);
    OC_SET_HAS(TensorProto, deep, raw_data);
    return m;
}

typedef struct seen {
    const oc_owner *owner;
    const uint8_t *base;
    uint64_t size, align, threshold, shared, owned;
    int bad;
} seen;

static oc_status inspect(void *ctx, onnx_TensorProto *t) {
    seen *s = ctx;
    const oc_bytes *b = &t->raw_data;
    if (b->size >= s->threshold && b->size > 0) {
        s->shared++;
        s->bad += b->mode != OC_BYTES_SHARED || b->owner != s->owner;
        s->bad += b->data < s->base || b->data + b->size > s->base + s->size;
        s->bad += s->align > 1 && ((uintptr_t)b->data % s->align) != 0;
    } else {
        s->owned++;
        s->bad += b->mode != OC_BYTES_OWNED;
    }
    return OC_OK;
}

static void consolidate_case(uint64_t threshold, uint64_t align) {
    oc_model *m = make_model();
    oc_error err;
    void *before, *after;
    uint64_t nb, na;
    REQUIRE(oc_model_save_memory(m, NULL, &before, &nb, &err) == OC_OK);
    oc_tensor_buffer_options o = {threshold, align};
    oc_owner *owner = NULL;
    const uint8_t *base = NULL;
    uint64_t size = 0;
    CHECK_OK(oc_consolidate_tensors(&onnx_ModelProto_desc, oc_model_proto(m), &o, &owner, &base,
                                    &size, &err), &err);
    REQUIRE(owner != NULL);
    /* the buffer start is aligned too, to the alignment and to 64 at least */
    CHECK(((uintptr_t)base % (align > 64 ? align : 64)) == 0);
    seen s = {owner, base, size, align, threshold, 0, 0, 0};
    oc_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(m), inspect, &s);
    CHECK_EQ(s.bad, 0);
    CHECK(s.shared > 0 && s.owned > 0);
    /* one reference per moved tensor plus the caller's */
    CHECK_EQ(oc_owner_refcount(owner), s.shared + 1);
    /* the bytes did not change: the model encodes exactly as before */
    REQUIRE(oc_model_save_memory(m, NULL, &after, &na, &err) == OC_OK);
    CHECK_EQ(na, nb);
    CHECK(na == nb && memcmp(before, after, (size_t)nb) == 0);
    /* the buffer outlives the model while the caller holds its reference */
    oc_model_free(m);
    CHECK_EQ(oc_owner_refcount(owner), 1);
    CHECK_EQ(base[0] | 0, base[0]); /* still readable (ASan would flag a freed buffer) */
    oc_owner_unref(owner);
    free(before);
    free(after);
}

static void test_consolidate(void) {
    consolidate_case(0, 0);
    consolidate_case(100, 64);
    consolidate_case(100, 256);
    consolidate_case(333, 4096);
}

static void test_consolidate_errors(void) {
    oc_model *m = make_model();
    oc_error err;
    void *before, *after;
    uint64_t nb, na;
    REQUIRE(oc_model_save_memory(m, NULL, &before, &nb, &err) == OC_OK);
    oc_tensor_buffer_options o = {0, 48}; /* not a power of two */
    oc_owner *owner = (oc_owner *)1;
    CHECK_STATUS(oc_consolidate_tensors(&onnx_ModelProto_desc, oc_model_proto(m), &o, &owner,
                                        NULL, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(owner == NULL);
    /* nothing qualifies: OK, no buffer */
    oc_tensor_buffer_options big = {1u << 20, 64};
    CHECK_OK(oc_consolidate_tensors(&onnx_ModelProto_desc, oc_model_proto(m), &big, &owner, NULL,
                                    NULL, &err), &err);
    CHECK(owner == NULL);
    REQUIRE(oc_model_save_memory(m, NULL, &after, &na, &err) == OC_OK);
    CHECK(na == nb && memcmp(before, after, (size_t)nb) == 0);
    /* without asking for the token, the tensors alone keep the buffer alive */
    oc_tensor_buffer_options all = {1, 64};
    CHECK_OK(oc_consolidate_tensors(&onnx_ModelProto_desc, oc_model_proto(m), &all, NULL, NULL,
                                    NULL, &err), &err);
    onnx_TensorProto *t = oc_model_proto(m)->graph->initializer.items[2];
    CHECK_EQ(t->raw_data.mode, OC_BYTES_SHARED);
    CHECK_EQ(oc_owner_refcount(t->raw_data.owner), 7); /* 7 non-empty tensors, no caller ref */
    oc_model_free(m);
    free(before);
    free(after);
}

int main(void) {
    RUN(test_consolidate);
    RUN(test_consolidate_errors);
    return check_report("test_tensor");
}
