/*
 * tests/fuzz/fuzz_consolidate.c - oc_msg_consolidate_tensors on a decoded ModelProto.
 *
 * Byte 0 picks the options, the rest is the model:
 *   bits 0-3  alignment: 0 1 2 4 8 16 32 64 128 256 4096 65536, or one that is not a
 *             power of two (3 6 24 100), which must be refused with nothing changed
 *   bits 4-5  raw_data_threshold: 0 1 16 1024
 *   bit 6     decode with no_copy (threshold 0: every payload borrowed from the input)
 *   bit 7     consolidate a second time (the first buffer must be released cleanly)
 * Invariants: the model encodes to the same bytes before and after; exactly the tensors
 * holding at least threshold (and > 0) bytes now share one buffer, each at an aligned
 * offset inside it, the buffer aligned to max(alignment, 64); the owner's reference count
 * is ours plus one per tensor; a deep copy keeps the buffer alive after the original
 * arena is gone.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint64_t alignments[16] = {0,   1,   2,    4,     8, 16, 32, 64,
                                        128, 256, 4096, 65536, 3, 6,  24, 100};
static const uint64_t thresholds[4] = {0, 1, 16, 1024};

typedef struct expect {
    uint64_t threshold, align;
    const uint8_t *base;
    uint64_t size;
    oc_owner *owner;
    uint64_t qualifying, bytes;
    int after; /* 0: count before consolidating; 1: check the result */
} expect;

static int qualifies(const expect *x, const onnx_TensorProto *t) {
    return OC_HAS(TensorProto, t, raw_data) && t->raw_data.size >= x->threshold &&
           t->raw_data.size > 0;
}

static oc_status inspect(void *ctx, onnx_TensorProto *t) {
    expect *x = ctx;
    if (!qualifies(x, t)) return OC_OK;
    if (!x->after) {
        x->qualifying++;
        x->bytes += t->raw_data.size;
        return OC_OK;
    }
    const oc_bytes *b = &t->raw_data;
    FUZZ_CHECK(b->mode == OC_BYTES_SHARED && b->owner == x->owner,
               "a consolidated tensor does not share the buffer (mode %d)", (int)b->mode);
    FUZZ_CHECK(b->data >= x->base && b->size <= x->size &&
                   (uint64_t)(b->data - x->base) <= x->size - b->size,
               "tensor bytes outside the consolidated buffer");
    if (x->align > 1)
        FUZZ_CHECK((uint64_t)(b->data - x->base) % x->align == 0,
                   "tensor at offset %llu not aligned to %llu",
                   (unsigned long long)(b->data - x->base), (unsigned long long)x->align);
    return OC_OK;
}

static void consolidate(void *model, uint64_t align, uint64_t threshold, const fuzz_buf *pre,
                        oc_owner **keep) {
    const oc_msgdesc *desc = &onnx_ModelProto_desc;
    expect x;
    memset(&x, 0, sizeof x);
    x.threshold = threshold;
    x.align = align;
    FUZZ_CHECK(oc_msg_visit_tensors(desc, model, inspect, &x) == OC_OK, "walk failed");

    oc_tensor_buffer_options o = {threshold, align};
    oc_owner *owner = (oc_owner *)(uintptr_t)1; /* must be overwritten, even on failure */
    const uint8_t *base = (const uint8_t *)(uintptr_t)1;
    uint64_t bsize = 1;
    oc_error err;
    oc_error_clear(&err);
    oc_status st = oc_msg_consolidate_tensors(desc, model, &o, &owner, &base, &bsize, &err);
    fuzz_buf post = fuzz_encode(desc, model);
    fuzz_check_same("encoding after oc_msg_consolidate_tensors == before", pre, &post);
    free(post.data);

    if (align & (align - 1)) {
        FUZZ_CHECK(st == OC_ERR_INVALID_ARG, "alignment %llu accepted (%s)",
                   (unsigned long long)align, oc_status_name(st));
        fuzz_check_error(st, &err, UINT64_MAX);
        FUZZ_CHECK(owner == NULL && base == NULL && bsize == 0, "outputs not cleared on error");
        return;
    }
    FUZZ_CHECK(st == OC_OK, "oc_msg_consolidate_tensors: %s: %s", oc_status_name(st), err.message);
    if (x.qualifying == 0) {
        FUZZ_CHECK(owner == NULL && base == NULL && bsize == 0,
                   "no tensor qualified, yet a buffer came back");
        return;
    }
    uint64_t balign = align > 64 ? align : 64;
    FUZZ_CHECK(owner != NULL && base != NULL, "no buffer for %llu tensors",
               (unsigned long long)x.qualifying);
    FUZZ_CHECK((uintptr_t)base % balign == 0, "buffer not aligned to %llu",
               (unsigned long long)balign);
    FUZZ_CHECK(bsize >= x.bytes, "buffer of %llu bytes for %llu bytes of tensors",
               (unsigned long long)bsize, (unsigned long long)x.bytes);
    FUZZ_CHECK(oc_owner_refcount(owner) == 1 + x.qualifying,
               "buffer has %llu references, expected 1 + %llu",
               (unsigned long long)oc_owner_refcount(owner), (unsigned long long)x.qualifying);
    x.after = 1;
    x.base = base;
    x.size = bsize;
    x.owner = owner;
    FUZZ_CHECK(oc_msg_visit_tensors(desc, model, inspect, &x) == OC_OK, "walk failed");
    oc_owner_unref(*keep); /* the previous round's buffer: still held by nobody else? */
    *keep = owner;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t sel = data[0];
    uint64_t align = alignments[sel & 15];
    uint64_t threshold = thresholds[(sel >> 4) & 3];
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    if (sel & 64) {
        po.no_copy = 1;
        po.buffer.raw_data_threshold = 0;
    }
    const oc_msgdesc *desc = &onnx_ModelProto_desc;
    oc_arena *arena = oc_arena_new();
    FUZZ_CHECK(arena != NULL, "out of memory");
    void *model = oc_msg_new(arena, desc);
    FUZZ_CHECK(model != NULL, "out of memory");
    oc_error err;
    oc_error_clear(&err);
    oc_status st = oc_decode(desc, model, data + 1, size - 1, arena, &po, NULL, &err);
    if (st != OC_OK) {
        fuzz_check_error(st, &err, size - 1);
        oc_arena_free(arena);
        return 0;
    }
    fuzz_buf pre = fuzz_encode(desc, model);
    oc_owner *keep = NULL;
    consolidate(model, align, threshold, &pre, &keep);
    if (sel & 128) consolidate(model, align == 0 ? 64 : 0, 0, &pre, &keep);

    /* A copy shares the buffer and keeps it alive once the original arena is gone. */
    oc_arena *a2 = oc_arena_new();
    FUZZ_CHECK(a2 != NULL, "out of memory");
    void *copy = NULL;
    st = oc_msg_copy(desc, model, a2, &copy, &err);
    FUZZ_CHECK(st == OC_OK, "oc_msg_copy: %s", err.message);
    oc_arena_free(arena);
    oc_owner_unref(keep);
    fuzz_span_rules rules = {po.no_copy, data + 1, data + size, 1, 0, 0};
    fuzz_buf post = fuzz_check_roundtrip(desc, copy, &po, &rules);
    fuzz_check_same("copy of the consolidated model, original freed", &pre, &post);
    free(post.data);
    oc_arena_free(a2);
    free(pre.data);
    return 0;
}
