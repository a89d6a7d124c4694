/*
 * test_tensor.c - oc_msg_consolidate_tensors (onnxcore/tensor.h; seed 000's
 * ConsolidateTensorsToBuffer): which tensors move, alignment, ownership, bytes unchanged.
 * oc_tensor_check_size (W-40), oc_tensor_typed_bytes, and oc_quote, with which its messages name tensors.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "internal/error.h" /* internal: the static library's */

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
    oc_bytes_set_copy(&deep->raw_data,
                      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
                      "01234567",
                      136, NULL);
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
    CHECK_OK(oc_msg_consolidate_tensors(&onnx_ModelProto_desc, oc_model_proto(m), &o, &owner, &base,
                                        &size, &err),
             &err);
    REQUIRE(owner != NULL);
    /* the buffer start is aligned too, to the alignment and to 64 at least */
    CHECK(((uintptr_t)base % (align > 64 ? align : 64)) == 0);
    seen s = {owner, base, size, align, threshold, 0, 0, 0};
    oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(m), inspect, &s);
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
    CHECK_STATUS(oc_msg_consolidate_tensors(&onnx_ModelProto_desc, oc_model_proto(m), &o, &owner,
                                            NULL, NULL, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(owner == NULL);
    /* nothing qualifies: OK, no buffer */
    oc_tensor_buffer_options big = {1u << 20, 64};
    CHECK_OK(oc_msg_consolidate_tensors(&onnx_ModelProto_desc, oc_model_proto(m), &big, &owner,
                                        NULL, NULL, &err),
             &err);
    CHECK(owner == NULL);
    REQUIRE(oc_model_save_memory(m, NULL, &after, &na, &err) == OC_OK);
    CHECK(na == nb && memcmp(before, after, (size_t)nb) == 0);
    /* without asking for the token, the tensors alone keep the buffer alive */
    oc_tensor_buffer_options all = {1, 64};
    CHECK_OK(oc_msg_consolidate_tensors(&onnx_ModelProto_desc, oc_model_proto(m), &all, NULL, NULL,
                                        NULL, &err),
             &err);
    onnx_TensorProto *t = oc_model_proto(m)->graph->initializer.items[2];
    CHECK_EQ(t->raw_data.mode, OC_BYTES_SHARED);
    CHECK_EQ(oc_owner_refcount(t->raw_data.owner), 7); /* 7 non-empty tensors, no caller ref */
    oc_model_free(m);
    free(before);
    free(after);
}

/* ---- storage pools: repeated loads reuse the storage of the previous one ---- */

static const uint64_t pool_sizes[] = {70000, 200000, 70000, 100, 65536, 65535};
#define NPOOL (sizeof pool_sizes / sizeof pool_sizes[0])

static oc_model *make_big_model(void) {
    oc_model *m = oc_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    mp->graph = OC_NEW(a, GraphProto);
    for (size_t i = 0; i < NPOOL; i++) {
        onnx_TensorProto *t = OC_ADD(a, TensorProto, mp->graph->initializer);
        uint8_t *p;
        oc_bytes_set_alloc(&t->raw_data, pool_sizes[i], &p, NULL);
        for (uint64_t j = 0; j < pool_sizes[i]; j++) p[j] = (uint8_t)(i * 7 + j * 13);
        OC_SET_HAS(TensorProto, t, raw_data);
    }
    return m;
}

typedef struct pool_seen {
    const uint8_t *data[16];
    unsigned n, pooled, owned, bad;
} pool_seen;

static oc_status pool_inspect(void *ctx, onnx_TensorProto *t) {
    pool_seen *s = ctx;
    const oc_bytes *b = &t->raw_data;
    if (s->n < 16) s->data[s->n++] = b->data;
    if (b->size >= OC_STORAGE_POOL_MIN_BLOCK) {
        s->pooled++;
        s->bad += b->mode != OC_BYTES_SHARED || !b->owner;
    } else {
        s->owned++;
        s->bad += b->mode != OC_BYTES_OWNED;
    }
    s->bad += ((uintptr_t)b->data % 64) != 0;
    return OC_OK;
}

static int same_pointers(const pool_seen *a, const pool_seen *b) {
    for (unsigned i = 0; i < a->n; i++) { /* equal sizes may trade blocks: compare as sets */
        if (pool_sizes[i] < OC_STORAGE_POOL_MIN_BLOCK) continue;
        int found = 0;
        for (unsigned j = 0; j < b->n; j++) found |= a->data[i] == b->data[j];
        if (!found) return 0;
    }
    return 1;
}

static void test_pool_loads(void) {
    oc_model *src = make_big_model();
    oc_error err;
    void *bytes, *again;
    uint64_t n, n2, pooled_bytes = 0;
    REQUIRE(oc_model_save_memory(src, NULL, &bytes, &n, &err) == OC_OK);
    for (size_t i = 0; i < NPOOL; i++)
        if (pool_sizes[i] >= OC_STORAGE_POOL_MIN_BLOCK) pooled_bytes += pool_sizes[i];
    for (int threads = 1; threads <= 2; threads++) {
        oc_storage_pool *pool = oc_storage_pool_new(UINT64_MAX);
        REQUIRE(pool);
        oc_parse_options po;
        oc_parse_options_init(&po);
        po.storage_pool = pool;
        po.num_threads = threads;
        pool_seen first = {{0}, 0, 0, 0, 0}, second = {{0}, 0, 0, 0, 0};
        oc_model *m = NULL;
        CHECK_OK(oc_model_load_memory(bytes, n, &po, &m, &err), &err);
        REQUIRE(m);
        oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(m), pool_inspect, &first);
        CHECK_EQ(first.pooled, 4);
        CHECK_EQ(first.owned, 2);
        CHECK_EQ(first.bad, 0);
        CHECK_OK(oc_model_save_memory(m, NULL, &again, &n2, &err), &err);
        CHECK(n2 == n && memcmp(again, bytes, (size_t)n) == 0);
        free(again);
        CHECK_EQ(oc_storage_pool_free_bytes(pool), 0);
        oc_model_free(m);
        CHECK_EQ(oc_storage_pool_free_bytes(pool), pooled_bytes);
        /* The second load gets the same blocks back, and the same bytes in them. */
        m = NULL;
        CHECK_OK(oc_model_load_memory(bytes, n, &po, &m, &err), &err);
        REQUIRE(m);
        oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(m), pool_inspect, &second);
        CHECK(same_pointers(&first, &second));
        CHECK_EQ(oc_storage_pool_free_bytes(pool), 0);
        CHECK_OK(oc_model_save_memory(m, NULL, &again, &n2, &err), &err);
        CHECK(n2 == n && memcmp(again, bytes, (size_t)n) == 0);
        free(again);
        /* The pool may go first: blocks in use stay valid and go when released. */
        oc_model *clone = NULL;
        CHECK_OK(oc_model_clone(m, &clone, &err), &err);
        oc_storage_pool_free(pool);
        oc_model_free(m);
        CHECK_OK(oc_model_save_memory(clone, NULL, &again, &n2, &err), &err);
        CHECK(n2 == n && memcmp(again, bytes, (size_t)n) == 0);
        free(again);
        oc_model_free(clone);
    }
    free(bytes);
    oc_model_free(src);
}

static void test_pool_storage(void) {
    oc_error err;
    uint8_t *p, *q;
    /* A pool keeping at most 100,000 free bytes: a 200,000-byte block goes to the system. */
    oc_storage_pool *pool = oc_storage_pool_new(100000);
    REQUIRE(pool);
    oc_bytes a, b, small;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&small, 0, sizeof small);
    CHECK_OK(oc_bytes_set_storage(&a, 200000, 0, pool, &p, &err), &err);
    CHECK_OK(oc_bytes_set_storage(&b, 90000, 4096, pool, &q, &err), &err);
    CHECK_EQ((uintptr_t)q % 4096, 0);
    CHECK_OK(oc_bytes_set_storage(&small, 1000, 0, pool, &p, &err), &err);
    CHECK_EQ(small.mode, OC_BYTES_OWNED);
    CHECK_EQ(a.mode, OC_BYTES_SHARED);
    oc_bytes_release(&a);
    CHECK_EQ(oc_storage_pool_free_bytes(pool), 0);
    oc_bytes_release(&b);
    CHECK_EQ(oc_storage_pool_free_bytes(pool), 90000);
    /* Reuse honours the alignment asked for. */
    CHECK_OK(oc_bytes_set_storage(&b, 90000, 4096, pool, &p, &err), &err);
    CHECK_PTR_EQ(p, q);
    oc_bytes_release(&b);
    CHECK_STATUS(oc_bytes_set_storage(&b, 90000, 48, pool, &p, &err), OC_ERR_INVALID_ARG, &err);
    oc_bytes_release(&small);
    oc_storage_pool_free(pool);
    oc_storage_pool_free(NULL);
}

/* Many threads taking and returning blocks of a few sizes at once (ASan/TSan food). */
static void *pool_worker(void *arg) {
    oc_storage_pool *pool = arg;
    oc_error err;
    for (int i = 0; i < 2000; i++) {
        oc_bytes s;
        uint8_t *p;
        memset(&s, 0, sizeof s);
        uint64_t size = OC_STORAGE_POOL_MIN_BLOCK + (uint64_t)(i % 3) * 4096;
        if (oc_bytes_set_storage(&s, size, 0, pool, &p, &err) != OC_OK) return (void *)1;
        p[0] = p[size - 1] = (uint8_t)i;
        oc_bytes_release(&s);
    }
    return NULL;
}

static void test_pool_threads(void) {
    oc_storage_pool *pool = oc_storage_pool_new(UINT64_MAX);
    REQUIRE(pool);
    pthread_t t[4];
    for (int i = 0; i < 4; i++) CHECK_EQ(pthread_create(&t[i], NULL, pool_worker, pool), 0);
    for (int i = 0; i < 4; i++) {
        void *r = (void *)1;
        pthread_join(t[i], &r);
        CHECK(r == NULL);
    }
    CHECK(oc_storage_pool_free_bytes(pool) <= 12u * (OC_STORAGE_POOL_MIN_BLOCK + 8192u));
    oc_storage_pool_free(pool);
}

#define CHECK_CSTR(got, want) CHECK(strcmp((got), (want)) == 0)

/* oc_quote (status.h): the one rendering of strings from files in messages and output. */
static void test_quote(void) {
    char b[OC_QUOTE_SIZE];
    CHECK_CSTR(oc_quote("W", 1, b, sizeof b), "W");
    CHECK_CSTR(oc_quote(NULL, 0, b, sizeof b), "");
    CHECK_CSTR(oc_quote("x\x1b[31m\nok", 9, b, sizeof b), "x\\x1b[31m\\x0aok");
    CHECK_CSTR(oc_quote("1\0002", 3, b, sizeof b), "1\\x002"); /* counted, not cut at NUL */
    CHECK_CSTR(oc_quote("a\\b\x7f", 4, b, sizeof b), "a\\x5cb\\x7f");
    CHECK_CSTR(oc_quote("\xc3\xa9t\xc3", 4, b, sizeof b), "\xc3\xa9t\\xc3"); /* é kept */
    CHECK_CSTR(oc_quote("\xc2\x9b", 2, b, sizeof b), "\\xc2\\x9b");          /* C1 CSI escaped */
    CHECK_CSTR(oc_quote("\xed\xa0\x80", 3, b, sizeof b), "\\xed\\xa0\\x80"); /* surrogate */
    /* Bidirectional controls and line separators: every byte escaped (spec/security.md). */
    CHECK_CSTR(oc_quote("a\xe2\x80\xae"
                        "b",
                        5, b, sizeof b),
               "a\\xe2\\x80\\xae"
               "b"); /* U+202E */
    CHECK_CSTR(oc_quote("\xe2\x80\xaa\xe2\x81\xa9", 6, b, sizeof b),
               "\\xe2\\x80\\xaa\\xe2\\x81\\xa9"); /* U+202A, U+2069 */
    CHECK_CSTR(oc_quote("\xe2\x81\xa6\xe2\x80\x8f\xd8\x9c", 8, b, sizeof b),
               "\\xe2\\x81\\xa6\\xe2\\x80\\x8f\\xd8\\x9c"); /* U+2066, U+200F, U+061C */
    CHECK_CSTR(oc_quote("\xe2\x80\xa8\xe2\x80\x8e", 6, b, sizeof b),
               "\\xe2\\x80\\xa8\\xe2\\x80\\x8e"); /* U+2028, U+200E */
    /* Neighbours stay: U+2027, U+202F, U+206A, U+061B. */
    CHECK_CSTR(oc_quote("\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xaa\xd8\x9b", 11, b, sizeof b),
               "\xe2\x80\xa7\xe2\x80\xaf\xe2\x81\xaa\xd8\x9b");
    /* Bounded: cut with "..." and never inside an escape; the whole fits exactly. */
    char longname[200];
    memset(longname, 'a', sizeof longname);
    oc_quote(longname, sizeof longname, b, sizeof b);
    CHECK_EQ(strlen(b), sizeof b - 1);
    CHECK(strcmp(b + strlen(b) - 3, "...") == 0);
    char small[8];
    CHECK_CSTR(oc_quote("abcdefg", 7, small, sizeof small), "abcdefg");
    CHECK_CSTR(oc_quote("abcdefgh", 8, small, sizeof small), "abcd...");
    CHECK_CSTR(oc_quote("\x01\x02\x03", 3, small, sizeof small), "\\x01...");
    CHECK_CSTR(oc_quote("\x01", 1, small, sizeof small), "\\x01");
    CHECK_CSTR(oc_quote("abc", 3, small, 3), "");
    CHECK(oc_quote("abc", 3, NULL, 8) == NULL);
}

/* oc_error_detail (status.h): the message after "FILE: ", with the file said once: the
 * name oc_error_file recorded is left out with its separator, nothing else is. */
static void test_error_detail(void) {
    char b[OC_ERROR_MESSAGE_MAX + 16];
    oc_error e;
    oc_error_file(&e, "m.onnx",
                  oc_error_set(&e, OC_ERR_IO, OC_NO_OFFSET, "cannot open m.onnx: No such file"));
    CHECK(e.file_at == 12 && e.file_len == 6);
    CHECK_CSTR(oc_error_detail(&e, "m.onnx", b, sizeof b), "cannot open: No such file");
    CHECK_CSTR(oc_error_detail(&e, "other.onnx", b, sizeof b), e.message);
    CHECK_CSTR(oc_error_detail(&e, NULL, b, sizeof b), e.message);
    CHECK_CSTR(oc_error_detail(&e, "", b, sizeof b), e.message);
    oc_error_file(&e, "m.onnx", oc_error_set(&e, OC_ERR_MALFORMED, 7, "m.onnx: bad tag"));
    CHECK_CSTR(oc_error_detail(&e, "m.onnx", b, sizeof b), "bad tag");
    oc_error_file(&e, "m.onnx", oc_error_set(&e, OC_ERR_IO, OC_NO_OFFSET, "m.onnx is not a file"));
    CHECK_CSTR(oc_error_detail(&e, "m.onnx", b, sizeof b), "is not a file");
    /* The same text with no file recorded stays whole: nothing is read back from it. */
    oc_error_set(&e, OC_ERR_IO, OC_NO_OFFSET, "m.onnx already exists");
    CHECK(e.file_len == 0);
    CHECK_CSTR(oc_error_detail(&e, "m.onnx", b, sizeof b), "m.onnx already exists");
    /* The recorded name stands as a word of its own: not inside a longer one ("o" in
     * "cannot", "open"), not a prefix of another ("m.onnx.data"). */
    oc_error_file(&e, "o", oc_error_set(&e, OC_ERR_IO, OC_NO_OFFSET, "cannot open o: gone"));
    CHECK(e.file_at == 12 && e.file_len == 1);
    CHECK_CSTR(oc_error_detail(&e, "o", b, sizeof b), "cannot open: gone");
    oc_error_file(&e, "m.onnx", oc_error_set(&e, OC_ERR_IO, OC_NO_OFFSET, "m.onnx.data: gone"));
    CHECK(e.file_len == 0);
    CHECK_CSTR(oc_error_detail(&e, "m.onnx", b, sizeof b), "m.onnx.data: gone");
    oc_error_file(&e, "m.onnx", oc_error_set(&e, OC_ERR_IO, OC_NO_OFFSET, "m.onnx: "));
    CHECK_CSTR(oc_error_detail(&e, "m.onnx", b, sizeof b), "m.onnx: ");
    /* A new error forgets the file of the last one. */
    oc_error_set(&e, OC_ERR_IO, OC_NO_OFFSET, "cannot open m.onnx: x");
    CHECK(e.file_len == 0);
    /* An empty message: the status name; no buffer: "cannot" forms stay whole. */
    oc_error_clear(&e);
    CHECK(e.rule[0] == '\0' && e.file_len == 0);
    e.code = OC_ERR_TRUNCATED;
    CHECK_CSTR(oc_error_detail(&e, "m.onnx", b, sizeof b), oc_status_name(OC_ERR_TRUNCATED));
    oc_error_file(&e, "m.onnx", oc_error_set(&e, OC_ERR_IO, OC_NO_OFFSET, "cannot open m.onnx: x"));
    CHECK_CSTR(oc_error_detail(&e, "m.onnx", NULL, 0), "cannot open m.onnx: x");
    CHECK(oc_error_file(NULL, "m.onnx", OC_ERR_IO) == OC_ERR_IO);
}

static onnx_TensorProto *sized(oc_arena *a, const char *name, int32_t type, const int64_t *dims,
                               size_t ndims, uint64_t raw) {
    onnx_TensorProto *t = oc_arena_alloc(a, sizeof *t);
    memset(t, 0, sizeof *t);
    oc_str_set_cstr(a, &t->name, name);
    OC_SET_HAS(TensorProto, t, name);
    t->data_type = type;
    OC_SET_HAS(TensorProto, t, data_type);
    for (size_t i = 0; i < ndims; i++)
        *(int64_t *)oc_array_push(a, &t->dims, sizeof(int64_t)) = dims[i];
    if (raw != UINT64_MAX) { /* borrowed: nothing to release (raw <= 64) */
        static const uint8_t zeros[64];
        oc_bytes_set_borrowed(&t->raw_data, zeros, raw);
        OC_SET_HAS(TensorProto, t, raw_data);
    }
    return t;
}

/* oc_error_set_rule: the rule in err->rule and at the end of the message; a message too
 * long for oc_error keeps its start and its rule, and is never cut inside a UTF-8
 * sequence. */
static void test_error_message(void) {
    oc_error err;
    char longtext[600];
    memset(longtext, 'a', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = '\0';
    oc_error_set_rule(&err, OC_ERR_MALFORMED, 7, "W-1", "short");
    CHECK_CSTR(err.message, "short (W-1)");
    CHECK_CSTR(err.rule, "W-1");
    CHECK(err.code == OC_ERR_MALFORMED && err.offset == 7);
    oc_error_set_rule(&err, OC_ERR_MALFORMED, 0, "C-53", "bad: %s", longtext);
    size_t n = strlen(err.message);
    CHECK(n == OC_ERROR_MESSAGE_MAX - 1);
    CHECK(strncmp(err.message, "bad: aaa", 8) == 0);
    CHECK(strcmp(err.message + n - 10, "aaa (C-53)") != 0); /* "..." sits before the tag */
    CHECK(strcmp(err.message + n - 10, "... (C-53)") == 0);
    /* No rule: plain cut with "..." at the end, and err->rule empty. */
    oc_error_set(&err, OC_ERR_MALFORMED, 0, "bad: %s", longtext);
    CHECK_CSTR(err.rule, "");
    CHECK(strlen(err.message) == OC_ERROR_MESSAGE_MAX - 1);
    CHECK(strcmp(err.message + OC_ERROR_MESSAGE_MAX - 4, "...") == 0);
    /* A tag written into the text is text: no rule is read back from a message. */
    oc_error_set(&err, OC_ERR_MALFORMED, 0, "bad: %s (C-53)", longtext);
    CHECK(strcmp(err.message + strlen(err.message) - 3, "...") == 0);
    CHECK_CSTR(err.rule, "");
    /* Longer than any stack buffer (a long path): the tag still survives. */
    char huge[3000];
    memset(huge, 'p', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    oc_error_set_rule(&err, OC_ERR_MALFORMED, 0, "E-12", "file %s is bad", huge);
    n = strlen(err.message);
    CHECK(strcmp(err.message + n - 10, "... (E-12)") == 0);
    /* A system error keeps its reason after the tag, and never ends in a lone ':'. */
    oc_error_set_errno_rule(&err, ENOENT, "E-3", "cannot open %s", huge);
    n = strlen(err.message);
    CHECK(n == OC_ERROR_MESSAGE_MAX - 1);
    CHECK(strstr(err.message, "... (E-3): ") != NULL);
    const char *why = strerror(ENOENT);
    CHECK(n > strlen(why) && strcmp(err.message + n - strlen(why), why) == 0);
    CHECK(err.code == OC_ERR_NOT_FOUND && err.sys_errno == ENOENT);
    CHECK_CSTR(err.rule, "E-3");
    oc_error_set_errno(&err, EACCES, "cannot open %s", "x");
    CHECK(strncmp(err.message, "cannot open x: ", 15) == 0);
    /* A cut never splits a multi-byte sequence: 'e' + 2-byte sequences across the cut. */
    char utf8[600];
    size_t k = 0;
    utf8[k++] = 'e';
    while (k + 2 < sizeof utf8) utf8[k++] = (char)0xC3, utf8[k++] = (char)0xA9;
    utf8[k] = '\0';
    for (int shift = 0; shift < 2; shift++) {
        oc_error_set_rule(&err, OC_ERR_MALFORMED, 0, "Z-36", "%s%s", shift ? "x" : "", utf8);
        n = strlen(err.message);
        CHECK(strcmp(err.message + n - 10, "... (Z-36)") == 0);
        CHECK(oc_utf8_len(err.message + n - 12, 2) == 2); /* whole sequence before "..." */
    }
}

/* oc_tensor_check_size (W-40): dims against data_type and the payload. */
static void test_check_size(void) {
    oc_arena *a = oc_arena_new();
    oc_error err;
    const int64_t d35[] = {3, 5}, dneg[] = {-3, 5}, d2[] = {2};
    const int64_t dbig[] = {INT64_C(1) << 32, INT64_C(1) << 32, INT64_C(1) << 32};
    const int64_t dbytes[] = {INT64_C(1) << 62}, dzero[] = {INT64_C(1) << 62, 0, 1 << 30};
    const int64_t d3[] = {3};
    onnx_TensorProto *t;
    CHECK_OK(oc_tensor_check_size(sized(a, "W", 1, d35, 2, 60), &err), &err);
    CHECK_OK(oc_tensor_check_size(sized(a, "W", 1, NULL, 0, 4), &err), &err); /* scalar */
    CHECK_OK(oc_tensor_check_size(sized(a, "W", 1, dzero, 3, 0), &err), &err);
    CHECK_OK(oc_tensor_check_size(sized(a, "W", 22, d3, 1, 2), &err), &err);  /* INT4: 2 */
    CHECK_OK(oc_tensor_check_size(sized(a, "W", 26, d3, 1, 1), &err), &err);  /* INT2: 1 */
    CHECK_OK(oc_tensor_check_size(sized(a, "W", 15, d2, 1, 32), &err), &err); /* COMPLEX128 */
    CHECK_OK(oc_tensor_check_size(sized(a, "S", 8, d35, 2, 7), &err), &err);  /* STRING */
    /* W-42: no data at all for 15 elements; typed counts; a type ONNX does not define */
    CHECK_STATUS(oc_tensor_check_size(sized(a, "T", 1, d35, 2, UINT64_MAX), &err),
                 OC_ERR_INCONSISTENT, &err);
    CHECK(strstr(err.message, "tensor 'T'") && strstr(err.message, "has no data (W-42)"));
    CHECK_OK(oc_tensor_check_size(sized(a, "T", 1, dzero, 3, UINT64_MAX), &err), &err);
    t = sized(a, "F", 1, d3, 1, UINT64_MAX);
    for (int i = 0; i < 2; i++) *(float *)oc_array_push(a, &t->float_data, sizeof(float)) = 1.0f;
    CHECK_STATUS(oc_tensor_check_size(t, &err), OC_ERR_INCONSISTENT, &err);
    CHECK(strstr(err.message, "make 3 values in float_data, but it holds 2 (W-42)") != NULL);
    *(float *)oc_array_push(a, &t->float_data, sizeof(float)) = 1.0f;
    CHECK_OK(oc_tensor_check_size(t, &err), &err);
    t = sized(a, "I4", 22, d3, 1, UINT64_MAX); /* INT4: two elements a value */
    for (int i = 0; i < 2; i++) *(int32_t *)oc_array_push(a, &t->int32_data, sizeof(int32_t)) = 1;
    CHECK_OK(oc_tensor_check_size(t, &err), &err);
    t = sized(a, "C", 14, d3, 1, UINT64_MAX); /* COMPLEX64: two floats an element */
    for (int i = 0; i < 6; i++) *(float *)oc_array_push(a, &t->float_data, sizeof(float)) = 1.0f;
    CHECK_OK(oc_tensor_check_size(t, &err), &err);
    CHECK_STATUS(oc_tensor_check_size(sized(a, "X", 99, d3, 1, 3), &err), OC_ERR_UNSUPPORTED, &err);
    CHECK(strstr(err.message, "data_type 99, which ONNX does not define (W-42)") != NULL);
    CHECK_STATUS(oc_tensor_check_size(sized(a, "W", 1, d35, 2, 7), &err), OC_ERR_INCONSISTENT,
                 &err);
    CHECK(strstr(err.message, "tensor 'W'") && strstr(err.message, "60 bytes") &&
          strstr(err.message, "7"));
    CHECK_STATUS(oc_tensor_check_size(sized(a, "W", 1, d2, 1, 12), &err), OC_ERR_INCONSISTENT,
                 &err);
    CHECK_STATUS(oc_tensor_check_size(sized(a, "W", 22, d3, 1, 1), &err), OC_ERR_INCONSISTENT,
                 &err);
    CHECK_STATUS(oc_tensor_check_size(sized(a, "W", 1, dneg, 2, 60), &err), OC_ERR_MALFORMED, &err);
    CHECK(strstr(err.message, "negative") != NULL);
    CHECK_STATUS(oc_tensor_check_size(sized(a, "W", 1, dbig, 3, 4), &err), OC_ERR_MALFORMED, &err);
    CHECK(strstr(err.message, "elements") != NULL);
    CHECK_STATUS(oc_tensor_check_size(sized(a, "W", 1, dbytes, 1, 4), &err), OC_ERR_MALFORMED,
                 &err);
    CHECK(strstr(err.message, "bytes") != NULL);
    /* No fixed size, but dims are still checked. */
    CHECK_STATUS(oc_tensor_check_size(sized(a, "S", 8, dneg, 2, 0), &err), OC_ERR_MALFORMED, &err);
    /* EXTERNAL: the `length` key, read under E-12; no length, nothing to compare. */
    t = sized(a, "E", 1, d35, 2, UINT64_MAX);
    t->data_location = 1;
    OC_SET_HAS(TensorProto, t, data_location);
    CHECK_OK(oc_tensor_check_size(t, &err), &err);
    onnx_StringStringEntryProto *e = OC_ADD(a, StringStringEntryProto, t->external_data);
    oc_str_set_cstr(a, &e->key, "length");
    oc_str_set_cstr(a, &e->value, "60");
    CHECK_OK(oc_tensor_check_size(t, &err), &err);
    oc_str_set_cstr(a, &e->value, "59");
    CHECK_STATUS(oc_tensor_check_size(t, &err), OC_ERR_INCONSISTENT, &err);
    CHECK(strstr(err.message, "length") != NULL);
    oc_str_set_cstr(a, &e->value, "-60");
    CHECK_STATUS(oc_tensor_check_size(t, &err), OC_ERR_MALFORMED, &err);
    CHECK(strstr(err.message, "'-60' is not a non-negative integer") != NULL);
    /* The name is escaped. */
    CHECK_STATUS(oc_tensor_check_size(sized(a, "W\x1b", 1, d2, 1, 1), &err), OC_ERR_INCONSISTENT,
                 &err);
    CHECK(strstr(err.message, "tensor 'W\\x1b'") != NULL);
    CHECK_STATUS(oc_tensor_check_size(NULL, &err), OC_ERR_INVALID_ARG, &err);
    oc_arena_free(a);
}

/* t's typed bytes equal the n bytes at want. */
static int typed_bytes_are(const onnx_TensorProto *t, const char *want, uint64_t n) {
    oc_bytes b = {0};
    oc_error err;
    int same = oc_tensor_typed_bytes(t, &b, &err) == OC_OK && b.size == n &&
               (n == 0 || memcmp(b.data, want, (size_t)n) == 0);
    oc_bytes_release(&b);
    return same;
}

#define PUSH(a, field, type, v) (*(type *)oc_array_push((a), &(field), sizeof(type)) = (v))

/* oc_tensor_typed_bytes: each typed field as the little-endian bytes raw_data would hold
 * (written out here byte by byte, whatever the host's order); the python hostile suite
 * checks every type against python3-onnx. Counts, types and segments are refused with
 * oc_tensor_check_size's errors; STRING and UNDEFINED have no bytes; oc_tensor_strings. */
static void test_typed_bytes(void) {
    oc_arena *a = oc_arena_new();
    oc_error err;
    oc_bytes b = {0};
    const int64_t d2[] = {2}, d3[] = {3}, d0[] = {0};
    onnx_TensorProto *t = sized(a, "F", 1, d2, 1, UINT64_MAX);
    PUSH(a, t->float_data, float, 1.5f);
    PUSH(a, t->float_data, float, -2.0f);
    CHECK(typed_bytes_are(t, "\x00\x00\xc0\x3f\x00\x00\x00\xc0", 8));
    t = sized(a, "S", 1, NULL, 0, UINT64_MAX); /* 0-d: one element */
    PUSH(a, t->float_data, float, 1.5f);
    CHECK(typed_bytes_are(t, "\x00\x00\xc0\x3f", 4));
    t = sized(a, "D", 15, NULL, 0, UINT64_MAX); /* COMPLEX128: a pair, real part first */
    PUSH(a, t->double_data, double, 1.0);
    PUSH(a, t->double_data, double, -2.0);
    CHECK(typed_bytes_are(t, "\0\0\0\0\0\0\xf0\x3f\0\0\0\0\0\0\0\xc0", 16));
    t = sized(a, "I16", 5, d3, 1, UINT64_MAX); /* the low 16 bits of each value */
    PUSH(a, t->int32_data, int32_t, -2);
    PUSH(a, t->int32_data, int32_t, 0x12345);
    PUSH(a, t->int32_data, int32_t, 7);
    CHECK(typed_bytes_are(t, "\xfe\xff\x45\x23\x07\x00", 6));
    t = sized(a, "B", 9, d3, 1, UINT64_MAX); /* BOOL: 0 or 1 */
    PUSH(a, t->int32_data, int32_t, 2);
    PUSH(a, t->int32_data, int32_t, 0);
    PUSH(a, t->int32_data, int32_t, -1);
    CHECK(typed_bytes_are(t, "\x01\x00\x01", 3));
    t = sized(a, "H", 10, NULL, 0, UINT64_MAX); /* FLOAT16: its bit pattern */
    PUSH(a, t->int32_data, int32_t, 0x3e00);
    CHECK(typed_bytes_are(t, "\x00\x3e", 2));
    t = sized(a, "U4", 21, d3, 1, UINT64_MAX); /* three 4-bit elements: two bytes */
    PUSH(a, t->int32_data, int32_t, 0x21);
    PUSH(a, t->int32_data, int32_t, 0x103);
    CHECK(typed_bytes_are(t, "\x21\x03", 2));
    t = sized(a, "U32", 12, d2, 1, UINT64_MAX);
    PUSH(a, t->uint64_data, uint64_t, UINT64_C(0x1ffffffff));
    PUSH(a, t->uint64_data, uint64_t, 5);
    CHECK(typed_bytes_are(t, "\xff\xff\xff\xff\x05\x00\x00\x00", 8));
    t = sized(a, "I64", 7, NULL, 0, UINT64_MAX);
    PUSH(a, t->int64_data, int64_t, -2);
    CHECK(typed_bytes_are(t, "\xfe\xff\xff\xff\xff\xff\xff\xff", 8));
    CHECK(typed_bytes_are(sized(a, "E", 1, d0, 1, UINT64_MAX), "", 0)); /* no element */
    /* refused: W-42's count, no data, an unknown type; a segment (W-40); raw_data */
    t = sized(a, "N", 1, d3, 1, UINT64_MAX);
    PUSH(a, t->float_data, float, 1.0f);
    CHECK_STATUS(oc_tensor_typed_bytes(t, &b, &err), OC_ERR_INCONSISTENT, &err);
    CHECK(strcmp(err.rule, "W-42") == 0 && b.size == 0);
    CHECK_STATUS(oc_tensor_typed_bytes(sized(a, "N", 1, d3, 1, UINT64_MAX), &b, &err),
                 OC_ERR_INCONSISTENT, &err);
    CHECK(strstr(err.message, "has no data") != NULL);
    /* COMPLEX64 of 2^63 + 2 elements: twice as many values wraps to 4 */
    const int64_t dhuge[] = {(INT64_C(1) << 62) + 1, 2};
    t = sized(a, "C", 14, dhuge, 2, UINT64_MAX);
    for (int i = 0; i < 4; i++) PUSH(a, t->float_data, float, 1.0f);
    CHECK_STATUS(oc_tensor_typed_bytes(t, &b, &err), OC_ERR_MALFORMED, &err);
    CHECK(strcmp(err.rule, "W-40") == 0 && b.size == 0);
    t = sized(a, "X", 99, NULL, 0, UINT64_MAX);
    PUSH(a, t->int32_data, int32_t, 1);
    CHECK_STATUS(oc_tensor_typed_bytes(t, &b, &err), OC_ERR_UNSUPPORTED, &err);
    CHECK(strcmp(err.rule, "W-42") == 0);
    t = sized(a, "P", 1, NULL, 0, UINT64_MAX);
    PUSH(a, t->float_data, float, 1.0f);
    t->segment = OC_NEW(a, TensorProto_Segment);
    CHECK_STATUS(oc_tensor_typed_bytes(t, &b, &err), OC_ERR_UNSUPPORTED, &err);
    CHECK(strstr(err.message, "segment") && strcmp(err.rule, "W-40") == 0);
    CHECK_STATUS(oc_tensor_typed_bytes(sized(a, "R", 1, NULL, 0, 4), &b, &err), OC_ERR_INVALID_ARG,
                 &err);
    CHECK_STATUS(oc_tensor_typed_bytes(NULL, &b, &err), OC_ERR_INVALID_ARG, &err);
    /* UNDEFINED and STRING have no raw bytes; oc_tensor_strings gives STRING's values */
    t = sized(a, "U", 0, NULL, 0, UINT64_MAX);
    PUSH(a, t->int32_data, int32_t, 1);
    CHECK_STATUS(oc_tensor_typed_bytes(t, &b, &err), OC_ERR_UNSUPPORTED, &err);
    CHECK(strstr(err.message, "UNDEFINED") != NULL);
    t = sized(a, "Str", 8, d2, 1, UINT64_MAX);
    oc_str_set_cstr(a, oc_array_push(a, &t->string_data, sizeof(oc_str)), "ab");
    oc_str_set_cstr(a, oc_array_push(a, &t->string_data, sizeof(oc_str)), "");
    CHECK_STATUS(oc_tensor_typed_bytes(t, &b, &err), OC_ERR_UNSUPPORTED, &err);
    CHECK(strstr(err.message, "tensor 'Str' holds STRING values") != NULL);
    const oc_str *items;
    uint64_t count;
    CHECK_OK(oc_tensor_strings(t, &items, &count, &err), &err);
    CHECK(count == 2 && items[0].size == 2 && memcmp(items[0].data, "ab", 2) == 0 &&
          items[1].size == 0);
    t = sized(a, "Str", 8, d3, 1, UINT64_MAX);
    oc_str_set_cstr(a, oc_array_push(a, &t->string_data, sizeof(oc_str)), "ab");
    CHECK_STATUS(oc_tensor_strings(t, &items, &count, &err), OC_ERR_INCONSISTENT, &err);
    CHECK(items == NULL && count == 0 && strcmp(err.rule, "W-42") == 0);
    CHECK_STATUS(oc_tensor_strings(sized(a, "F", 1, d0, 1, UINT64_MAX), &items, &count, &err),
                 OC_ERR_INVALID_ARG, &err);
    oc_arena_free(a);
}

int main(void) {
    RUN(test_quote);
    RUN(test_error_detail);
    RUN(test_error_message);
    RUN(test_check_size);
    RUN(test_typed_bytes);
    RUN(test_consolidate);
    RUN(test_consolidate_errors);
    RUN(test_pool_storage);
    RUN(test_pool_loads);
    RUN(test_pool_threads);
    return check_report("test_tensor");
}
