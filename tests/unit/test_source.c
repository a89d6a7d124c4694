/*
 * test_source.c - the byte sources (libonnxcore/internal/source.h): memory (borrowed,
 * owned, kept by another owner), a mapped file and a file read with pread; reads, short
 * reads at the end, ranges past the end, maps of a range, and lifetimes by reference.
 * And the HTTP settings by name (oc_http_options_parse), with which programs fill a URL
 * source's options from their environment.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <onnxcore/http.h>
#include <onnxcore/onnxcore.h>

#include "internal/bytes.h"
#include "internal/decode.h"
#include "internal/source.h"
#include "internal/source_file.h"

#include "check.h"
#include "testdir.h"
#include "testmodel.h"

static const char *work_dir = "/tmp";

static uint8_t pattern(uint64_t i) { return (uint8_t)(i * 131u + (i >> 11)); }

static void fill(uint8_t *p, uint64_t at, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) p[i] = pattern(at + i);
}

static int same_as_pattern(const uint8_t *p, uint64_t at, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != pattern(at + i)) return 0;
    return 1;
}

/* Reads, short reads and ranges past the end, the same for every kind of source. */
static void check_reads(oc_source *s, uint64_t size) {
    oc_error err;
    uint8_t buf[300];
    uint64_t got = 1;
    CHECK_EQ(s->size, size);
    CHECK_OK(oc_source_read(s, 0, buf, 0, &err), &err);
    if (size >= 300) {
        CHECK_OK(oc_source_read(s, size - 300, buf, 300, &err), &err);
        CHECK(same_as_pattern(buf, size - 300, 300));
        CHECK_OK(oc_source_read(s, 7, buf, 1, &err), &err);
        CHECK_EQ(buf[0], pattern(7));
    }
    /* a range running past the end: read_some stops there, read says truncated */
    CHECK_OK(oc_source_read_some(s, size - 10, buf, 100, &got, &err), &err);
    CHECK_EQ(got, 10);
    CHECK(same_as_pattern(buf, size - 10, 10));
    CHECK_STATUS(oc_source_read(s, size - 10, buf, 100, &err), OC_ERR_TRUNCATED, &err);
    CHECK_OK(oc_source_read_some(s, size, buf, 100, &got, &err), &err);
    CHECK_EQ(got, 0);
    CHECK_OK(oc_source_read_some(s, UINT64_MAX, buf, 100, &got, &err), &err);
    CHECK_EQ(got, 0);
    CHECK_STATUS(oc_source_read(s, size + 1, buf, 1, &err), OC_ERR_TRUNCATED, &err);
    /* maps: any range inside, nothing past the end; the bytes are the source's */
    oc_bytes span;
    memset(&span, 0, sizeof span);
    CHECK_OK(oc_source_map(s, 5, size - 5, &span, &err), &err);
    CHECK_EQ(span.size, size - 5);
    CHECK(same_as_pattern(span.data, 5, size - 5));
    CHECK_OK(oc_source_map(s, size, 0, &span, &err), &err);
    CHECK_EQ(span.size, 0);
    oc_bytes before = span;
    CHECK_STATUS(oc_source_map(s, size - 4, 5, &span, &err), OC_ERR_TRUNCATED, &err);
    CHECK_STATUS(oc_source_map(s, UINT64_MAX, 2, &span, &err), OC_ERR_TRUNCATED, &err);
    CHECK(span.data == before.data && span.size == before.size); /* unchanged on failure */
    oc_bytes_release(&span);
    oc_source_drop(s, 0, size);   /* advice: the bytes read after it are the same */
    oc_source_drop(s, size, 100); /* past the end: nothing */
    oc_source_range r = {0, size};
    oc_source_will_read(s, &r, 1);
    CHECK_OK(oc_source_read(s, 1, buf, 20, &err), &err);
    CHECK(same_as_pattern(buf, 1, 20));
}

static int released;
static void count_release(void *ctx) {
    released++;
    free(ctx);
}

static void test_memory(void) {
    enum { N = 5000 };
    oc_error err;
    uint8_t *data = malloc(N);
    REQUIRE(data != NULL);
    fill(data, 0, N);

    /* borrowed: the caller keeps the bytes; maps borrow them */
    oc_source *s;
    CHECK_OK(oc_source_memory(data, N, NULL, NULL, NULL, "borrowed", &s, &err), &err);
    CHECK(s->caps & OC_SOURCE_MAP);
    CHECK(!(s->caps & OC_SOURCE_BYPASS));
    check_reads(s, N);
    oc_bytes span;
    memset(&span, 0, sizeof span);
    CHECK_OK(oc_source_map(s, 10, 20, &span, &err), &err);
    CHECK_EQ(span.mode, OC_BYTES_BORROWED);
    CHECK_PTR_EQ(span.data, data + 10);
    CHECK_EQ(oc_owner_refcount(s->owner), 1);
    CHECK_PTR_EQ(oc__source_of_owner(s->owner), s);
    CHECK_PTR_EQ(oc_source_ref(s), s);
    CHECK_EQ(oc_owner_refcount(s->owner), 2);
    oc_source_unref(s);
    oc_source_unref(s);
    oc_bytes_release(&span);

    /* owned: the bytes go with the last reference, a mapped span's included */
    released = 0;
    uint8_t *owned = malloc(N);
    REQUIRE(owned != NULL);
    fill(owned, 0, N);
    CHECK_OK(oc_source_memory(owned, N, count_release, owned, NULL, NULL, &s, &err), &err);
    CHECK_OK(oc_source_map(s, 100, 200, &span, &err), &err);
    CHECK_EQ(span.mode, OC_BYTES_SHARED);
    CHECK_PTR_EQ(span.owner, s->owner);
    CHECK_EQ(oc_owner_refcount(s->owner), 2);
    uint64_t at = 0;
    CHECK_PTR_EQ(oc__bytes_source(&span, &at), s);
    CHECK_EQ(at, 100);
    oc_source_unref(s);
    CHECK_EQ(released, 0);
    CHECK(same_as_pattern(span.data, 100, 200)); /* still alive: the span holds it */
    oc_bytes copy;
    memset(&copy, 0, sizeof copy);
    CHECK_OK(oc_bytes_copy(&copy, &span, &err), &err);
    oc_bytes_release(&span);
    CHECK_EQ(released, 0);
    oc_bytes_release(&copy);
    CHECK_EQ(released, 1);

    /* kept by another owner: maps share that owner, and the source holds a reference */
    uint8_t *kept = malloc(N);
    REQUIRE(kept != NULL);
    fill(kept, 0, N);
    released = 0;
    oc_owner *keep = oc_owner_new(count_release, kept);
    REQUIRE(keep != NULL);
    CHECK_OK(oc_source_memory(kept, N, NULL, NULL, keep, "kept", &s, &err), &err);
    CHECK_EQ(oc_owner_refcount(keep), 2);
    oc_owner_unref(keep);
    check_reads(s, N);
    CHECK_OK(oc_source_map(s, 1, 2, &span, &err), &err);
    CHECK_PTR_EQ(span.owner, keep);
    CHECK(oc__bytes_source(&span, &at) == NULL); /* not the source's own owner */
    oc_source_unref(s);
    CHECK_EQ(released, 0);
    oc_bytes_release(&span);
    CHECK_EQ(released, 1);

    /* empty, and refused arguments */
    CHECK_OK(oc_source_memory(NULL, 0, NULL, NULL, NULL, NULL, &s, &err), &err);
    CHECK_EQ(s->size, 0);
    uint64_t got = 9;
    uint8_t b;
    CHECK_OK(oc_source_read_some(s, 0, &b, 1, &got, &err), &err);
    CHECK_EQ(got, 0);
    oc_source_unref(s);
    CHECK_STATUS(oc_source_memory(NULL, 1, NULL, NULL, NULL, NULL, &s, &err), OC_ERR_INVALID_ARG,
                 &err);
    free(data);
}

static void write_pattern(const char *path, uint64_t size) {
    uint8_t *p = malloc(size ? (size_t)size : 1);
    REQUIRE(p != NULL);
    fill(p, 0, size);
    REQUIRE(td_write(path, p, (size_t)size) == 0);
    free(p);
}

static void test_files(void) {
    char dir[4096], big[4200], small[4200], empty[4200];
    REQUIRE(td_make(work_dir, "source", dir, sizeof dir) == 0);
    snprintf(big, sizeof big, "%s/big", dir);
    snprintf(small, sizeof small, "%s/small", dir);
    snprintf(empty, sizeof empty, "%s/empty", dir);
    const uint64_t BIG = (3u << 20) + 77;
    write_pattern(big, BIG);
    write_pattern(small, 1000);
    write_pattern(empty, 0);
    oc_error err;
    oc_source *s;

    /* mapped, large: maps, drops, and reads with pread around the mapping */
    CHECK_OK(oc_source_file(big, -1, NULL, OC_FILE_MAPPED, 0, &s, &err), &err);
    CHECK_EQ(s->caps & (OC_SOURCE_MAP | OC_SOURCE_DROP | OC_SOURCE_BYPASS),
             OC_SOURCE_MAP | OC_SOURCE_DROP | OC_SOURCE_BYPASS);
    check_reads(s, BIG);
    oc_bytes span;
    memset(&span, 0, sizeof span);
    CHECK_OK(oc_source_map(s, 1u << 20, 1u << 20, &span, &err), &err);
    CHECK_EQ(span.mode, OC_BYTES_SHARED);
    int fd = -1;
    uint64_t off = 0;
    CHECK(oc__bytes_file_source(&span, &fd, &off));
    CHECK_EQ(off, 1u << 20);
    oc_source_unref(s); /* the span keeps the mapping */
    CHECK(same_as_pattern(span.data, 1u << 20, 1u << 20));
    /* a large span of the mapping written out: read around the mapping, same bytes */
    oc_bytes_release(&span);

    /* mapped, small: no descriptor kept, so nothing reads around the mapping */
    CHECK_OK(oc_source_file(small, -1, NULL, OC_FILE_MAPPED, 0, &s, &err), &err);
    CHECK(!(s->caps & OC_SOURCE_BYPASS));
    check_reads(s, 1000);
    CHECK_OK(oc_source_map(s, 0, 1000, &span, &err), &err);
    CHECK(!oc__bytes_file_source(&span, &fd, &off));
    oc_bytes_release(&span);
    oc_source_unref(s);
    /* ... unless asked to keep one (the archive reader's lock) */
    int raw = open(small, O_RDONLY);
    REQUIRE(raw >= 0);
    CHECK_OK(oc_source_file(NULL, raw, "small by fd", OC_FILE_MAPPED, 1, &s, &err), &err);
    close(raw); /* the source has its own */
    CHECK(s->caps & OC_SOURCE_BYPASS);
    check_reads(s, 1000);
    oc_source_unref(s);

    /* pread: nothing mapped; a map is an owned copy */
    CHECK_OK(oc_source_file(big, -1, NULL, OC_FILE_PREAD, 0, &s, &err), &err);
    CHECK_EQ(s->caps, 0);
    CHECK(s->data == NULL);
    check_reads(s, BIG);
    CHECK_OK(oc_source_map(s, 3, 5000, &span, &err), &err);
    CHECK_EQ(span.mode, OC_BYTES_OWNED);
    CHECK(same_as_pattern(span.data, 3, 5000));
    oc_bytes_release(&span);
    /* a file cut short after it was measured: a short read, truncated */
    REQUIRE(truncate(big, 1u << 20) == 0);
    uint8_t buf[64];
    uint64_t got = 0;
    CHECK_OK(oc_source_read_some(s, (1u << 20) - 10, buf, 64, &got, &err), &err);
    CHECK_EQ(got, 10);
    CHECK_STATUS(oc_source_read(s, 2u << 20, buf, 64, &err), OC_ERR_TRUNCATED, &err);
    CHECK_STATUS(oc_source_map(s, 2u << 20, 64, &span, &err), OC_ERR_TRUNCATED, &err);
    oc_source_unref(s);
    write_pattern(big, BIG);

    /* a mapped file cut short: reads around the mapping see the end, never fault */
    CHECK_OK(oc_source_file(big, -1, NULL, OC_FILE_MAPPED, 0, &s, &err), &err);
    REQUIRE(truncate(big, 1u << 20) == 0);
    CHECK_OK(oc_source_read_some(s, (1u << 20) - 10, buf, 64, &got, &err), &err);
    CHECK_EQ(got, 10);
    oc_source_unref(s);

    /* empty, missing, not a regular file */
    CHECK_OK(oc_source_file(empty, -1, NULL, OC_FILE_MAPPED, 0, &s, &err), &err);
    CHECK_EQ(s->size, 0);
    CHECK(s->data == NULL);
    CHECK_OK(oc_source_map(s, 0, 0, &span, &err), &err);
    CHECK_EQ(span.size, 0);
    oc_bytes_release(&span);
    oc_source_unref(s);
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/missing", dir);
    CHECK_STATUS(oc_source_file(missing, -1, NULL, OC_FILE_PREAD, 0, &s, &err), OC_ERR_NOT_FOUND,
                 &err);
    CHECK_STATUS(oc_source_file(dir, -1, NULL, OC_FILE_MAPPED, 0, &s, &err), OC_ERR_IO, &err);
    CHECK_STATUS(oc_source_file(dir, -1, NULL, OC_FILE_PREAD, 0, &s, &err), OC_ERR_IO, &err);

    /* oc_map_file is a mapped source seen whole: its owner is the source's */
    oc_mapped m;
    CHECK_OK(oc_map_file(small, &m, &err), &err);
    CHECK_EQ(m.size, 1000);
    CHECK(same_as_pattern(m.data, 0, 1000));
    s = oc__source_of_owner(m.owner);
    CHECK(s != NULL);
    if (s) CHECK_PTR_EQ(s->data, m.data);
    oc_owner_unref(m.owner);
    td_remove(dir);
}

/* ---- the one decoder, contiguous and through a window ---- */

static void set_str(oc_arena *a, oc_str *s, const char *v) { oc_str_set_cstr(a, s, v); }

static void set_pattern(onnx_TensorProto *t, uint64_t n, uint64_t seed) {
    uint8_t *w = NULL;
    if (oc_bytes_set_alloc(&t->raw_data, n, &w, NULL) != OC_OK) return;
    fill(w, seed, n);
    OC_SET_HAS(TensorProto, t, raw_data);
}

/* A model whose fields cross any window: payloads larger than the default window, a long
 * packed run, a long unknown field, nested graphs, thousands of small nodes. */
static int make_model_bytes(void **out, uint64_t *size) {
    oc_model *model = tm_model_new();
    if (!model) return 0;
    oc_arena *a = oc_model_arena(model);
    onnx_ModelProto *m = oc_model_proto(model);
    onnx_GraphProto *g = m->graph;
    set_str(a, &g->name, "g");
    OC_SET_HAS(GraphProto, g, name);
    for (int i = 0; i < 3000; i++) {
        onnx_NodeProto *n = OC_ADD(a, NodeProto, g->node);
        char name[64];
        snprintf(name, sizeof name, "/model/layers.%d/act/LeakyRelu", i);
        set_str(a, &n->name, name);
        OC_SET_HAS(NodeProto, n, name);
        set_str(a, &n->op_type, "LeakyRelu");
        OC_SET_HAS(NodeProto, n, op_type);
        onnx_AttributeProto *at = OC_ADD(a, AttributeProto, n->attribute);
        set_str(a, &at->name, "alpha");
        OC_SET_HAS(AttributeProto, at, name);
        at->f = 0.01f * (float)i;
        OC_SET_HAS(AttributeProto, at, f);
        if (i == 1500) { /* a subgraph holding a large tensor, two levels down */
            at = OC_ADD(a, AttributeProto, n->attribute);
            set_str(a, &at->name, "body");
            OC_SET_HAS(AttributeProto, at, name);
            onnx_GraphProto *sub = at->g = OC_NEW(a, GraphProto);
            onnx_TensorProto *t = OC_ADD(a, TensorProto, sub->initializer);
            set_pattern(t, (1u << 20) + 333, 5);
        }
    }
    onnx_TensorProto *t = OC_ADD(a, TensorProto, g->initializer);
    set_str(a, &t->name, "big");
    OC_SET_HAS(TensorProto, t, name);
    set_pattern(t, (5u << 19) + 1, 1);
    t = OC_ADD(a, TensorProto, g->initializer);
    set_pattern(t, 100, 2);
    t = OC_ADD(a, TensorProto, g->initializer);
    for (int i = 0; i < 300000; i++) { /* 1.2 MB packed: a window grows to hold it */
        float *f = oc_array_push(a, &t->float_data, sizeof(float));
        if (f) *f = (float)i;
    }
    void *b = NULL;
    uint64_t n = 0;
    oc_error err;
    int ok = oc_model_save_memory(model, NULL, &b, &n, &err) == OC_OK;
    oc_model_free(model);
    if (!ok) return 0;
    /* an unknown field of 1.5 MB at the end of the model (field 900, bytes) */
    uint64_t extra = 3u << 19;
    uint8_t *c = realloc(b, (size_t)(n + 16 + extra));
    if (!c) {
        free(b);
        return 0;
    }
    uint8_t *q = c + n;
    uint64_t key = 900u << 3 | 2u;
    for (uint64_t v = key;; v >>= 7) {
        *q++ = (uint8_t)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
        if (v < 0x80) break;
    }
    for (uint64_t v = extra;; v >>= 7) {
        *q++ = (uint8_t)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
        if (v < 0x80) break;
    }
    fill(q, 77, extra);
    *out = c;
    *size = (uint64_t)(q - c) + extra;
    return 1;
}

/* Decodes size bytes through src (window 0: the source's own way); returns the status,
 * the error offset in *at and the encoding in *enc (on success). */
static oc_status decode_via(oc_source *src, uint64_t window, int threads, uint64_t *at, void **enc,
                            uint64_t *enc_size) {
    oc_arena *a = oc_arena_new();
    void *msg = a ? oc_msg_new(a, &onnx_ModelProto_desc) : NULL;
    oc_error err;
    oc_error_clear(&err);
    if (!msg) {
        oc_arena_free(a);
        return OC_ERR_NOMEM;
    }
    oc_parse_options po;
    oc_parse_options_init(&po);
    po.num_threads = threads;
    oc_status st = oc__decode_source_window(&onnx_ModelProto_desc, msg, src, a, &po, window, &err);
    *at = err.offset;
    *enc = NULL;
    *enc_size = 0;
    if (st == OC_OK)
        CHECK_OK(oc_encode_to_memory(&onnx_ModelProto_desc, msg, enc, enc_size, &err), &err);
    oc_arena_free(a);
    return st;
}

static void test_windowed_decode(void) {
    void *b = NULL;
    uint64_t n = 0;
    REQUIRE(make_model_bytes(&b, &n));
    char dir[4096], path[4200];
    REQUIRE(td_make(work_dir, "window", dir, sizeof dir) == 0);
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    REQUIRE(td_write(path, b, (size_t)n) == 0);
    oc_error err;
    oc_source *mem, *file;
    CHECK_OK(oc_source_memory(b, n, NULL, NULL, NULL, "model", &mem, &err), &err);
    CHECK_OK(oc_source_file(path, -1, NULL, OC_FILE_PREAD, 0, &file, &err), &err);
    uint64_t at0, at;
    void *e0, *e;
    uint64_t n0, en;
    /* the contiguous decode (a memory source maps) is the reference */
    REQUIRE(decode_via(mem, 0, 1, &at0, &e0, &n0) == OC_OK);
    static const uint64_t windows[] = {1, 13, 1000, 1u << 16, 1u << 20};
    for (unsigned i = 0; i < sizeof windows / sizeof windows[0]; i++)
        for (int threads = 1; threads <= 2; threads++) {
            CHECK_OK(decode_via(mem, windows[i], threads, &at, &e, &en), NULL);
            CHECK(en == n0 && e && memcmp(e, e0, (size_t)n0) == 0);
            free(e);
        }
    CHECK_OK(decode_via(file, 0, 2, &at, &e, &en), NULL);
    CHECK(en == n0 && e && memcmp(e, e0, (size_t)n0) == 0);
    free(e);
    free(e0);
    oc_source_unref(file);
    oc_source_unref(mem);
    /* cut short anywhere: the same status and offset as the contiguous decode */
    static const uint64_t cuts[] = {1, 2, 100, 5000, 70000, 1u << 20, 2u << 20, 3u << 20};
    for (unsigned i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        uint64_t cut = n - cuts[i];
        CHECK_OK(oc_source_memory(b, cut, NULL, NULL, NULL, "cut", &mem, &err), &err);
        oc_status want = decode_via(mem, 0, 1, &at0, &e0, &n0);
        free(e0);
        for (unsigned w = 0; w < sizeof windows / sizeof windows[0]; w++) {
            oc_status got = decode_via(mem, windows[w], 1, &at, &e, &en);
            free(e);
            if (!CHECK_EQ(got, want) || !CHECK_EQ(at, at0))
                fprintf(stderr, "  cut %llu, window %llu\n", (unsigned long long)cut,
                        (unsigned long long)windows[w]);
        }
        oc_source_unref(mem);
    }
    free(b);
    td_remove(dir);
}

/* A table of settings, as an environment would give them: "NAME=value" strings. */
static const char *lookup(void *ctx, const char *name) {
    size_t n = strlen(name);
    for (const char *const *e = ctx; *e; e++)
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
    return NULL;
}

/* oc_http_options_parse: every setting, unset and empty ones, and bad values naming the
 * setting without changing anything. */
static void test_http_settings(void) {
    oc_error err;
    oc_http_options o = OC_HTTP_OPTIONS_INIT;
    const char *none[] = {"ONNXZ_HTTP_AUTH=", NULL};
    o.retries = 7;
    CHECK_OK(oc_http_options_parse(&o, lookup, (void *)none, &err), &err);
    CHECK(o.auth == NULL && o.ca_file == NULL && o.timeout_ms == 0 && o.retries == 7);
    const char *all[] = {"ONNXZ_HTTP_AUTH=Bearer t",
                         "ONNXZ_CA_FILE=ca.pem",
                         "ONNXZ_HTTP_INSECURE=1",
                         "ONNXZ_HTTP_TIMEOUT=86400",
                         "ONNXZ_HTTP_RETRIES=0",
                         "ONNXZ_HTTP_PARALLEL=16",
                         NULL};
    CHECK_OK(oc_http_options_parse(&o, lookup, (void *)all, &err), &err);
    CHECK(o.auth && strcmp(o.auth, "Bearer t") == 0 && o.ca_file &&
          strcmp(o.ca_file, "ca.pem") == 0);
    CHECK(o.insecure == 1 && o.timeout_ms == 86400000u && o.retries == -1 && o.parallel == 16);
    static const char *const bad[][2] = {
        {"ONNXZ_HTTP_TIMEOUT=0", "ONNXZ_HTTP_TIMEOUT: '0' is not a whole number from 1 to 86400"},
        {"ONNXZ_HTTP_INSECURE=yes", "ONNXZ_HTTP_INSECURE: 'yes' is not"},
        {"ONNXZ_HTTP_RETRIES=101", "ONNXZ_HTTP_RETRIES: '101' is not"},
        {"ONNXZ_HTTP_PARALLEL=4x", "ONNXZ_HTTP_PARALLEL: '4x' is not"},
        {"ONNXZ_HTTP_PARALLEL= 4", "ONNXZ_HTTP_PARALLEL: ' 4' is not"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *env[] = {"ONNXZ_HTTP_AUTH=other", bad[i][0], NULL};
        oc_http_options before = o;
        CHECK_STATUS(oc_http_options_parse(&o, lookup, (void *)env, &err), OC_ERR_INVALID_ARG,
                     &err);
        CHECK(strncmp(err.message, bad[i][1], strlen(bad[i][1])) == 0);
        CHECK(memcmp(&o, &before, sizeof o) == 0); /* nothing changed */
    }
    CHECK_STATUS(oc_http_options_parse(&o, NULL, NULL, &err), OC_ERR_INVALID_ARG, &err);
    o.size = 0;
    CHECK_STATUS(oc_http_options_parse(&o, lookup, (void *)all, &err), OC_ERR_INVALID_ARG, &err);
}

int main(int argc, char **argv) {
    if (argc > 1) work_dir = argv[1];
    RUN(test_memory);
    RUN(test_files);
    RUN(test_windowed_decode);
    RUN(test_http_settings);
    return check_report("test_source");
}
