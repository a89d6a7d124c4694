/*
 * test_arena.c - arenas (arena.h): zeroed aligned memory, cleanups, strings, repeated-field
 * arrays, and the release of tensor spans when the arena goes (messages.h).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onnxcore/onnxcore.h>

#include "check.h"

/* Under AddressSanitizer, let an absurd allocation fail with NULL (as malloc does) instead
 * of aborting: the test checks that the arena reports such failures. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }

static int is_aligned(const void *p, uintptr_t a) { return ((uintptr_t)p % a) == 0; }

static int all_zero(const void *p, uint64_t n) {
    const uint8_t *b = p;
    for (uint64_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

static void test_small_allocations(void) {
    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);
    enum { N = 100000 };
    uint8_t **ptrs = calloc(N, sizeof *ptrs);
    REQUIRE(ptrs != NULL);
    int bad_zero = 0, bad_align = 0, nulls = 0;
    for (int i = 0; i < N; i++) {
        uint64_t size = 1 + (uint64_t)(i % 61);
        ptrs[i] = oc_arena_alloc(a, size);
        if (!ptrs[i]) {
            nulls++;
            continue;
        }
        if (!all_zero(ptrs[i], size)) bad_zero++;
        if (!is_aligned(ptrs[i], 16)) bad_align++;
        memset(ptrs[i], (int)(i & 0xff), (size_t)size); /* fill it all: ASan checks bounds */
    }
    CHECK_EQ(nulls, 0);
    CHECK_EQ(bad_zero, 0);
    CHECK_EQ(bad_align, 0);
    /* No allocation overlapped another: every block still holds its own pattern. */
    int clobbered = 0;
    for (int i = 0; i < N; i++) {
        if (!ptrs[i]) continue;
        uint64_t size = 1 + (uint64_t)(i % 61);
        for (uint64_t k = 0; k < size; k++)
            if (ptrs[i][k] != (uint8_t)(i & 0xff)) {
                clobbered++;
                break;
            }
    }
    CHECK_EQ(clobbered, 0);
    CHECK(oc_arena_bytes_used(a) >= 100000);
    free(ptrs);
    oc_arena_free(a);
    oc_arena_free(NULL);
}

static void test_big_allocations(void) {
    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);
    uint64_t before = oc_arena_bytes_used(a);
    uint64_t sizes[] = {4096, 1u << 20, 3u << 20, 64u << 20, 17};
    uint8_t *p[5];
    for (int i = 0; i < 5; i++) {
        p[i] = oc_arena_alloc(a, sizes[i]);
        CHECK(p[i] != NULL);
        if (!p[i]) return;
        CHECK(is_aligned(p[i], 16));
        CHECK(all_zero(p[i], sizes[i]));
        memset(p[i], 0x40 + i, (size_t)sizes[i]);
    }
    /* Interleave small allocations after a big one. */
    for (int i = 0; i < 1000; i++) {
        uint8_t *s = oc_arena_alloc(a, 40);
        CHECK(s && all_zero(s, 40));
        if (s) memset(s, 0xee, 40);
    }
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(p[i][0], 0x40 + i);
        CHECK_EQ(p[i][sizes[i] - 1], 0x40 + i);
    }
    CHECK(oc_arena_bytes_used(a) >= before + (68u << 20));

    /* Absurd sizes fail cleanly. */
    CHECK_PTR_EQ(oc_arena_alloc(a, UINT64_MAX), NULL);
    CHECK_PTR_EQ(oc_arena_alloc(a, UINT64_MAX - 15), NULL);
    CHECK_PTR_EQ(oc_arena_alloc(a, (uint64_t)1 << 62), NULL);
    /* ... and the arena still works afterwards. */
    uint8_t *after = oc_arena_alloc(a, 100);
    CHECK(after && all_zero(after, 100));
    oc_arena_free(a);
}

/* Cleanups run newest first. */
typedef struct cleanup_log {
    int order[16];
    int n;
} cleanup_log;

typedef struct cleanup_item {
    cleanup_log *log;
    int id;
} cleanup_item;

static void log_cleanup(void *ptr) {
    cleanup_item *it = ptr;
    if (it->log->n < 16) it->log->order[it->log->n] = it->id;
    it->log->n++;
}

static void test_cleanups(void) {
    cleanup_log log = {{0}, 0};
    cleanup_item items[10];
    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);
    for (int i = 0; i < 10; i++) {
        items[i].log = &log;
        items[i].id = i;
        CHECK_OK(oc_arena_add_cleanup(a, log_cleanup, &items[i]), NULL);
        /* allocations in between do not disturb the cleanup list */
        CHECK(oc_arena_alloc(a, 1000) != NULL);
    }
    CHECK_EQ(log.n, 0);
    oc_arena_free(a);
    CHECK_EQ(log.n, 10);
    for (int i = 0; i < 10; i++) CHECK_EQ(log.order[i], 9 - i);
}

static void test_strings(void) {
    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);
    oc_str s = {0};
    char src[] = "hello";
    CHECK_OK(oc_str_set(a, &s, src, 5), NULL);
    CHECK(s.data != src);
    CHECK_EQ(s.size, 5);
    CHECK_MEM_EQ(s.data, "hello", 5);
    src[0] = 'j'; /* a copy: independent of the source */
    CHECK(oc_str_eq(s, "hello"));
    CHECK(!oc_str_eq(s, "hell"));
    CHECK(!oc_str_eq(s, "hello!"));
    CHECK(!oc_str_eq(s, "Hello"));
    CHECK(!oc_str_eq(s, ""));

    /* Embedded NULs are kept; oc_str_eq compares the whole size. */
    oc_str z = {0};
    CHECK_OK(oc_str_set(a, &z, "ab\0cd", 5), NULL);
    CHECK_EQ(z.size, 5);
    CHECK_MEM_EQ(z.data, "ab\0cd", 5);
    CHECK(!oc_str_eq(z, "ab"));

    oc_str e = {0};
    CHECK_OK(oc_str_set(a, &e, "", 0), NULL);
    CHECK_EQ(e.size, 0);
    CHECK(oc_str_eq(e, ""));
    CHECK(!oc_str_eq(e, "x"));
    oc_str unset = {0};
    CHECK(oc_str_eq(unset, ""));

    oc_str c = {0};
    CHECK_OK(oc_str_set_cstr(a, &c, "producer"), NULL);
    CHECK_EQ(c.size, 8);
    CHECK(oc_str_eq(c, "producer"));

    /* Non-UTF-8 bytes are fine. */
    oc_str bin = {0};
    const char raw[] = {(char)0xff, (char)0xfe, (char)0x80, 0};
    CHECK_OK(oc_str_set(a, &bin, raw, 3), NULL);
    CHECK_MEM_EQ(bin.data, raw, 3);

    /* A long string. */
    char *big = malloc(1 << 20);
    REQUIRE(big != NULL);
    for (int i = 0; i < (1 << 20); i++) big[i] = (char)('a' + i % 26);
    oc_str l = {0};
    CHECK_OK(oc_str_set(a, &l, big, 1 << 20), NULL);
    CHECK_MEM_EQ(l.data, big, 1 << 20);
    free(big);
    /* Earlier strings are intact. */
    CHECK(oc_str_eq(c, "producer"));
    CHECK(oc_str_eq(s, "hello"));
    oc_arena_free(a);
}

static void test_arrays(void) {
    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);
    onnx_TensorProto *t = OC_NEW(a, TensorProto);
    REQUIRE(t != NULL);
    CHECK_EQ(t->hdr.has, 0);
    CHECK_EQ(t->dims.count, 0);
    CHECK_PTR_EQ(t->dims.items, NULL);

    enum { N = 10000 };
    int zero_bad = 0;
    for (int64_t i = 0; i < N; i++) {
        int64_t *slot = oc_array_push(a, &t->dims, sizeof(int64_t));
        if (!slot) {
            CHECK(!"oc_array_push returned NULL");
            break;
        }
        if (*slot != 0) zero_bad++;
        *slot = i * 1000003;
        CHECK_EQ(t->dims.count, (uint64_t)i + 1);
    }
    CHECK_EQ(zero_bad, 0);
    CHECK(t->dims.cap >= t->dims.count);
    int wrong = 0;
    for (uint64_t i = 0; i < t->dims.count; i++)
        if (t->dims.items[i] != (int64_t)i * 1000003) wrong++;
    CHECK_EQ(wrong, 0);

    /* Strings and floats. */
    for (int i = 0; i < 500; i++) {
        oc_str *s = oc_array_push(a, &t->string_data, sizeof(oc_str));
        REQUIRE(s != NULL);
        char buf[32];
        snprintf(buf, sizeof buf, "s%d", i);
        CHECK_OK(oc_str_set_cstr(a, s, buf), NULL);
        float *f = oc_array_push(a, &t->float_data, sizeof(float));
        REQUIRE(f != NULL);
        *f = (float)i * 0.5f;
    }
    CHECK_EQ(t->string_data.count, 500);
    CHECK(oc_str_eq(t->string_data.items[0], "s0"));
    CHECK(oc_str_eq(t->string_data.items[499], "s499"));
    CHECK(t->float_data.items[321] == 160.5f);

    /* Repeated messages through OC_ADD. */
    onnx_GraphProto *g = OC_NEW(a, GraphProto);
    REQUIRE(g != NULL);
    for (int i = 0; i < 1000; i++) {
        onnx_NodeProto *n = OC_ADD(a, NodeProto, g->node);
        REQUIRE(n != NULL);
        CHECK_EQ(n->hdr.has, 0);
        char buf[32];
        snprintf(buf, sizeof buf, "node%d", i);
        CHECK_OK(oc_str_set_cstr(a, &n->name, buf), NULL);
        OC_SET_HAS(NodeProto, n, name);
    }
    CHECK_EQ(g->node.count, 1000);
    int names_bad = 0;
    for (uint64_t i = 0; i < g->node.count; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "node%d", (int)i);
        if (!g->node.items[i] || !oc_str_eq(g->node.items[i]->name, buf) ||
            !OC_HAS(NodeProto, g->node.items[i], name))
            names_bad++;
    }
    CHECK_EQ(names_bad, 0);
    /* Distinct messages. */
    CHECK(g->node.items[0] != g->node.items[1]);
    oc_arena_free(a);
}

/* An arena releases the raw_data spans of its TensorProtos. */
typedef struct probe {
    atomic_int released;
} probe;

static void probe_release(void *ctx) { atomic_fetch_add(&((probe *)ctx)->released, 1); }

static void test_tensor_spans(void) {
    static uint8_t storage[4096];
    probe p = {0};
    oc_owner *o = oc_owner_new(probe_release, &p);
    REQUIRE(o != NULL);

    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);
    /* A tensor from oc_msg_new with a descriptor found by name. */
    const oc_msgdesc *d = oc_msgdesc_find("TensorProto");
    REQUIRE(d == &onnx_TensorProto_desc);
    onnx_TensorProto *t1 = oc_msg_new(a, d);
    REQUIRE(t1 != NULL);
    oc_bytes_set_shared(&t1->raw_data, storage, 100, o);
    OC_SET_HAS(TensorProto, t1, raw_data);

    /* Tensors nested in a graph and in an attribute. */
    onnx_GraphProto *g = OC_NEW(a, GraphProto);
    REQUIRE(g != NULL);
    for (int i = 0; i < 3; i++) {
        onnx_TensorProto *t = OC_ADD(a, TensorProto, g->initializer);
        REQUIRE(t != NULL);
        oc_bytes_set_shared(&t->raw_data, storage + 100 * i, 100, o);
        OC_SET_HAS(TensorProto, t, raw_data);
    }
    onnx_NodeProto *n = OC_ADD(a, NodeProto, g->node);
    REQUIRE(n != NULL);
    onnx_AttributeProto *at = OC_ADD(a, AttributeProto, n->attribute);
    REQUIRE(at != NULL);
    at->t = OC_NEW(a, TensorProto);
    REQUIRE(at->t != NULL);
    oc_bytes_set_shared(&at->t->raw_data, storage, 1, o);
    OC_SET_HAS(TensorProto, at->t, raw_data);

    /* One tensor with an owned buffer (LeakSanitizer sees it if not released). */
    onnx_TensorProto *t_owned = OC_ADD(a, TensorProto, g->initializer);
    REQUIRE(t_owned != NULL);
    CHECK_OK(oc_bytes_set_copy(&t_owned->raw_data, storage, 1000, NULL), NULL);
    OC_SET_HAS(TensorProto, t_owned, raw_data);

    /* A tensor whose span the caller released early: no double release. */
    onnx_TensorProto *t_early = OC_ADD(a, TensorProto, g->initializer);
    REQUIRE(t_early != NULL);
    oc_bytes_set_shared(&t_early->raw_data, storage, 5, o);
    oc_bytes_release(&t_early->raw_data);

    oc_owner_unref(o); /* only the tensors hold it now */
    CHECK_EQ(oc_owner_refcount(o), 5);
    CHECK_EQ(atomic_load(&p.released), 0);
    oc_arena_free(a);
    CHECK_EQ(atomic_load(&p.released), 1);
}

static void test_descriptors(void) {
    CHECK_PTR_EQ(oc_msgdesc_find("ModelProto"), &onnx_ModelProto_desc);
    CHECK_PTR_EQ(oc_msgdesc_find("TypeProto.Tensor"), &onnx_TypeProto_Tensor_desc);
    CHECK_PTR_EQ(oc_msgdesc_find("TensorShapeProto.Dimension"),
                 &onnx_TensorShapeProto_Dimension_desc);
    CHECK_PTR_EQ(oc_msgdesc_find("SequenceProto"), &onnx_SequenceProto_desc);
    CHECK_PTR_EQ(oc_msgdesc_find("NoSuchProto"), NULL);
    CHECK_PTR_EQ(oc_msgdesc_find(""), NULL);
    CHECK(strcmp(oc_msgdesc_name(&onnx_ModelProto_desc), "ModelProto") == 0);
    CHECK(strcmp(oc_msgdesc_name(&onnx_TypeProto_Tensor_desc), "TypeProto.Tensor") == 0);
    CHECK(strcmp(oc_msgdesc_name(&onnx_TensorProto_Segment_desc), "TensorProto.Segment") == 0);
    /* Every message of the schema is found by its own name. */
#define X_(M, N)                                                                        \
    CHECK_PTR_EQ(oc_msgdesc_find(oc_msgdesc_name(&onnx_##M##_desc)), &onnx_##M##_desc); \
    CHECK(strcmp(oc_msgdesc_name(&onnx_##M##_desc), N) == 0);                           \
    CHECK_PTR_EQ(oc_msgdesc_find("onnx." N), &onnx_##M##_desc);                         \
    CHECK_PTR_EQ(oc_msgdesc_find(#M), &onnx_##M##_desc);
    ONNX_MESSAGES(X_)
#undef X_
    CHECK_PTR_EQ(oc_msgdesc_find("TypeProto.Tensor.Extra"), NULL);
    CHECK_PTR_EQ(oc_msgdesc_find("TypeProto."), NULL);
    CHECK_PTR_EQ(oc_msgdesc_find("onnx."), NULL);
    CHECK_PTR_EQ(oc_msgdesc_find("modelproto"), NULL);
}

/* Large blocks of a freed arena are reused by the next arena (oc_arena_trim): what was
 * written in them must come back zeroed, and trimming leaves arenas working. */
static void test_block_reuse(void) {
    const uint64_t n = 3u << 20; /* a block of its own, mapped */
    for (int round = 0; round < 3; round++) {
        oc_arena *a = oc_arena_new();
        CHECK(a != NULL);
        if (!a) return;
        unsigned char *p = oc_arena_alloc(a, n);
        unsigned char *q = oc_arena_alloc(a, 100);
        CHECK(p && all_zero(p, n));
        CHECK(q && all_zero(q, 100));
        if (p) memset(p, 0xa5, (size_t)n);
        if (q) memset(q, 0x5a, 100);
        /* 16 MiB of small allocations: blocks of 2, 4 and 8 MiB, mapped and reused */
        for (int i = 0; i < 16 * 1024; i++) {
            unsigned char *r = oc_arena_alloc(a, 1000 + (unsigned)i % 48);
            CHECK(r && all_zero(r, 1000 + (unsigned)i % 48));
            if (!r) break;
            memset(r, 0x3c, 1000 + (size_t)(i % 48));
        }
        oc_arena_free(a);
        if (round == 1) oc_arena_trim();
    }
    oc_arena_trim();
    oc_arena_trim(); /* an empty cache is fine */
}

/* A graph of n nodes whose names, inputs and attribute values depend on seed, encoded. */
static void *graph_bytes(unsigned n, unsigned seed, uint64_t *size) {
    oc_arena *a = oc_arena_new();
    onnx_ModelProto *m = a ? OC_NEW(a, ModelProto) : NULL;
    void *out = NULL;
    if (!m || !(m->graph = OC_NEW(a, GraphProto))) goto done;
    for (unsigned i = 0; i < n; i++) {
        char text[96];
        onnx_NodeProto *node = OC_ADD(a, NodeProto, m->graph->node);
        if (!node) goto done;
        snprintf(text, sizeof text, "/model/layers.%u/mlp/act/LeakyRelu_%u", i, seed);
        oc_str_set_cstr(a, &node->name, text);
        OC_SET_HAS(NodeProto, node, name);
        oc_str_set_cstr(a, &node->op_type, seed & 1 ? "LeakyRelu" : "Add");
        OC_SET_HAS(NodeProto, node, op_type);
        for (unsigned k = 0; k < 1 + (i + seed) % 3; k++) { /* 1 to 3 inputs */
            oc_str *in = oc_array_push(a, &node->input, sizeof *in);
            snprintf(text, sizeof text, "in.%u.%u.%u", i, k, seed);
            if (!in || oc_str_set_cstr(a, in, text) != OC_OK) goto done;
        }
        if ((i + seed) % 4 == 0) { /* an attribute with ints now and then */
            onnx_AttributeProto *at = OC_ADD(a, AttributeProto, node->attribute);
            if (!at) goto done;
            oc_str_set_cstr(a, &at->name, "perm");
            OC_SET_HAS(AttributeProto, at, name);
            for (unsigned k = 0; k < 1 + seed % 5; k++) {
                int64_t *v = oc_array_push(a, &at->ints, sizeof *v);
                if (!v) goto done;
                *v = (int64_t)(i * 7 + k + seed);
            }
        }
    }
    if (oc_encode_to_memory(&onnx_ModelProto_desc, m, &out, size, NULL) != OC_OK) out = NULL;
done:
    oc_arena_free(a);
    return out;
}

/* Decodes of large graphs one after another in a process reuse the freed arenas' blocks,
 * which are not zeroed in one pass (arena.c: each allocation zeroes what it hands out,
 * strings and arrays are written whole): every decode must still give back exactly its
 * input, whatever the graph decoded before it left in the blocks. */
static void test_decode_reuse(void) {
    uint64_t size[2] = {0, 0};
    void *bytes[2] = {graph_bytes(60000, 1, &size[0]), graph_bytes(45000, 2, &size[1])};
    CHECK(bytes[0] && bytes[1]);
    for (int round = 0; bytes[0] && bytes[1] && round < 4; round++) {
        int k = round % 2;
        oc_arena *a = oc_arena_new();
        void *m = a ? oc_msg_new(a, &onnx_ModelProto_desc) : NULL;
        void *again = NULL;
        uint64_t n = 0;
        CHECK(m &&
              oc_decode(&onnx_ModelProto_desc, m, bytes[k], size[k], a, NULL, NULL, NULL) == OC_OK);
        CHECK(oc_arena_bytes_used(a) > (8u << 20)); /* mapped blocks, cached when freed */
        CHECK(m && oc_encode_to_memory(&onnx_ModelProto_desc, m, &again, &n, NULL) == OC_OK);
        CHECK(again && n == size[k] && memcmp(again, bytes[k], (size_t)n) == 0);
        free(again);
        oc_arena_free(a);
    }
    free(bytes[0]);
    free(bytes[1]);
    oc_arena_trim();
}

int main(void) {
    RUN(test_small_allocations);
    RUN(test_big_allocations);
    RUN(test_block_reuse);
    RUN(test_decode_reuse);
    RUN(test_cleanups);
    RUN(test_strings);
    RUN(test_arrays);
    RUN(test_tensor_spans);
    RUN(test_descriptors);
    return check_report("test_arena");
}
