/*
 * test_open.c - the one detection call (oz_detect, oz_detect_file: every kind) and the one
 * open call (oz_open, oz_load_any) on every form: single .onnx, two-file, N-file, .onnxz,
 * and each of them encrypted (ONNXZEC1, ONNXCRY1) when the build has OpenSSL; the
 * refusals (empty, cut short, no key, wrong key); and the path helper the libraries share.
 *
 * usage: test_open WORKDIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/crypto.h>
#include <onnxcore/onnxcore.h>
#include <onnxz/convert.h>
#include <onnxz/open.h>

#include "onnxcore_private.h"
#include "internal/source.h"

#include "check.h"
#include "testdir.h"
#include "testmodel.h"

static oc_error err;
static const char pass[] = "open sesame";

static void put(const char *name, const void *data, size_t n) {
    CHECK(td_write(td_at(name), data, n) == 0);
}

/* Two tensors over the external-data threshold and one inline. */
static oc_model *make_model(void) {
    oc_model *m = tm_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_GraphProto *g = oc_model_proto(m)->graph;
    tm_add_bytes(a, g, "w0", 300000, 1);
    tm_add_bytes(a, g, "w1", 70000, 2);
    tm_add_bytes(a, g, "tiny", 10, 3);
    return m;
}

/* 1 when m holds make_model's tensors with their bytes. */
static int same_tensors(const oc_model *m) {
    static const struct {
        const char *name;
        uint64_t n;
        unsigned seed;
    } want[] = {{"w0", 300000, 1}, {"w1", 70000, 2}, {"tiny", 10, 3}};
    const onnx_ModelProto *mp = oc_model_proto((oc_model *)m);
    if (!mp || !mp->graph || mp->graph->initializer.count != 3) return 0;
    for (size_t k = 0; k < 3; k++) {
        const onnx_TensorProto *t = mp->graph->initializer.items[k];
        if (t->name.size != strlen(want[k].name) ||
            memcmp(t->name.data, want[k].name, t->name.size) != 0 || t->raw_data.size != want[k].n)
            return 0;
        for (uint64_t i = 0; i < want[k].n; i++)
            if (t->raw_data.data[i] != tm_byte(i, want[k].seed)) return 0;
    }
    return 1;
}

static void test_detect_memory(void) {
    CHECK(oz_detect(NULL, 0, 0) == OZ_KIND_EMPTY);
    CHECK(oz_detect("", 0, 0) == OZ_KIND_EMPTY);
    CHECK(oz_detect("\x08\x0a\x12\x02", 4, 4) == OZ_KIND_MODEL); /* ir_version 10 ... */
    CHECK(oz_detect("PK\3\4rest", 8, 1000) == OZ_KIND_ZIP);
    CHECK(oz_detect("PK\5\6", 4, 22) == OZ_KIND_ZIP);  /* an empty archive */
    CHECK(oz_detect("PK\1\2", 4, 4) == OZ_KIND_MODEL); /* not a first record */
    CHECK(oz_detect("P", 1, 1) == OZ_KIND_ZIP_SHORT);
    CHECK(oz_detect("PK\3", 3, 3) == OZ_KIND_ZIP_SHORT);
    CHECK(oz_detect("PK\3", 3, 100) == OZ_KIND_MODEL); /* only a short look, not a short file */
    CHECK(oz_detect("ONNXZEC1....", 12, 12) == OZ_KIND_ONNXZEC1);
    CHECK(oz_detect("ONNXCRY1", 8, 5000) == OZ_KIND_ONNXCRY1);
    CHECK(oz_detect("ONNXCRY2", 8, 8) == OZ_KIND_MODEL);
    CHECK(oz_detect("ONNXZ", 5, 5) == OZ_KIND_CRYPT_SHORT);
    CHECK(oz_detect("ONNXCRY", 7, 7) == OZ_KIND_CRYPT_SHORT);
    CHECK(oz_detect("O", 1, 1) == OZ_KIND_CRYPT_SHORT);
    CHECK(oz_detect("ONNXQ", 5, 5) == OZ_KIND_MODEL);
    CHECK(oz_detect("\xff\xfe garbage", 10, 10) == OZ_KIND_MODEL); /* the decoder judges */
    CHECK(oz_detect("ONNXZEC1", 8, 4) == OZ_KIND_CRYPT_SHORT);     /* size wins over n */
    oc_crypt_format f = OC_CRYPT_ONNXCRY1;
    CHECK(oz_kind_is_encrypted(OZ_KIND_ONNXZEC1, &f) && f == OC_CRYPT_ONNXZEC1);
    CHECK(!oz_kind_is_encrypted(OZ_KIND_CRYPT_SHORT, &f) && f == OC_CRYPT_NONE);
    CHECK(strcmp(oz_kind_name(OZ_KIND_ZIP_SHORT), "zip cut short") == 0);
}

static oz_kind detect_file(const char *name) {
    oz_kind k = OZ_KIND_EMPTY;
    CHECK_STATUS(oz_detect_file(td_at(name), &k, &err), OC_OK, &err);
    return k;
}

static void test_detect_file(void) {
    put("empty", "", 0);
    put("short.zip", "PK", 2);
    put("short.enc", "ONNXZE", 6);
    put("garbage", "\xff\xff\xff\xff\xff\xff\xff\xff\xff", 9);
    put("magic.zec1", "ONNXZEC1", 8);
    CHECK(detect_file("empty") == OZ_KIND_EMPTY);
    CHECK(detect_file("short.zip") == OZ_KIND_ZIP_SHORT);
    CHECK(detect_file("short.enc") == OZ_KIND_CRYPT_SHORT);
    CHECK(detect_file("garbage") == OZ_KIND_MODEL);
    CHECK(detect_file("magic.zec1") == OZ_KIND_ONNXZEC1);
    CHECK(detect_file("one.onnx") == OZ_KIND_MODEL);
    CHECK(detect_file("a.onnxz") == OZ_KIND_ZIP);
    CHECK(oz_is_archive_file(td_at("a.onnxz")) && oz_is_archive_file(td_at("short.zip")) &&
          !oz_is_archive_file(td_at("one.onnx")) && !oz_is_archive_file(td_at("missing")));
    oz_kind k;
    CHECK_STATUS(oz_detect_file(td_at("missing"), &k, &err), OC_ERR_NOT_FOUND, &err);
    CHECK_STATUS(oz_detect_file(td_dir, &k, &err), OC_ERR_IO, &err); /* a directory: not opened */
    CHECK(strstr(err.message, "not a regular file") != NULL);
}

/* oz_open on name: the tensors back, the kind and form as expected. */
static void open_ok(const char *name, const void *key, oz_kind kind, int archive) {
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oc_model *m = NULL;
    o.key = key;
    o.key_len = key ? strlen(key) : 0;
    CHECK_STATUS(oz_open(td_at(name), &o, &m, &info, &err), OC_OK, &err);
    if (!m) {
        fprintf(stderr, "  (opening %s)\n", name);
        return;
    }
    CHECK(same_tensors(m));
    CHECK(info.kind == kind && info.is_archive == archive);
    oc_model_free(m);
    /* Again with no_copy: tensors borrow from the mapping or decrypted buffer, which
     * outlives the call. */
    o.parse.no_copy = 1;
    m = NULL;
    CHECK_STATUS(oz_open(td_at(name), &o, &m, NULL, &err), OC_OK, &err);
    CHECK(m && same_tensors(m));
    oc_model_free(m);
}

static void open_fails(const char *name, const void *key, oc_status want, const char *says) {
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    oc_model *m = (oc_model *)&o; /* must come back NULL */
    o.key = key;
    o.key_len = key ? strlen(key) : 0;
    CHECK_STATUS(oz_open(td_at(name), &o, &m, NULL, &err), want, &err);
    CHECK(m == NULL);
    if (says && !CHECK(strstr(err.message, says) != NULL))
        fprintf(stderr, "%s: message '%s' lacks '%s'\n", name, err.message, says);
}

static void save(oc_model *m, const char *name, const char *data, uint64_t max_file) {
    oz_archive_options o = OZ_ARCHIVE_OPTIONS_INIT;
    o.serialize.external_data = data;
    o.serialize.max_external_file_size = max_file;
    CHECK_STATUS(oz_save_any(m, td_at(name), OZ_FORM_AUTO, &o, &err), OC_OK, &err);
}

static void encrypt(const char *in, const char *out, oc_crypt_format format) {
    CHECK_OK(tm_encrypt_file(td_at(in), td_at(out), pass, format, &err), &err);
}

static void test_path(void) {
    static const struct {
        const char *in, *dir, *base;
    } cases[] = {
        {"m.onnx", ".", "m.onnx"},
        {"/m.onnx", "/", "m.onnx"},
        {"a/m.onnx", "a", "m.onnx"},
        {"/a/b/m", "/a/b", "m"},
        {"a/", "a", ""},
        {"", ".", ""},
        /* the cases the hand-written copies this helper replaced (fileio.c's dir_of, the
         * crypto and archive loaders' strndup) answered the same way */
        {"/", "/", ""},
        {"a", ".", "a"},
        {"/a", "/", "a"},
        {"a/b", "a", "b"},
        {"a//b", "a/", "b"},
        {"a/b/", "a/b", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *d = oc__path_dir(cases[i].in);
        CHECK(d && strcmp(d, cases[i].dir) == 0);
        CHECK(strcmp(oc__path_base(cases[i].in), cases[i].base) == 0);
        free(d);
    }
    /* URLs: the directory of the path, without query or fragment (external data beside a
     * model read over HTTP; the query of a signed URL names the model, not its data) */
    static const struct {
        const char *in, *dir;
    } urls[] = {
        {"https://h/m/a.onnx", "https://h/m"},
        {"http://h/a.onnx?x=/y", "http://h"},
        {"HTTPS://h:8/a/b/c.onnx#f/g", "HTTPS://h:8/a/b"},
        {"http://h", "http://h"},
        {"http://h?q=/a", "http://h"},
    };
    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        char *d = oc__path_dir(urls[i].in);
        CHECK(d && strcmp(d, urls[i].dir) == 0);
        free(d);
    }
}

/* Loads name (an archive) with oz_archive_load and, through oz_open, with the same parse
 * options; both must give make_model's tensors. *mapped receives how many of the tensors'
 * spans lie in a file mapping (internal/source.h). */
static oc_model *load_archive(const char *name, int use_pread, int no_copy, int *mapped) {
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.use_pread = use_pread;
    po.no_copy = no_copy;
    oc_model *m = NULL;
    CHECK_STATUS(oz_archive_load(td_at(name), &po, &m, &err), OC_OK, &err);
    *mapped = 0;
    if (!m) return NULL;
    CHECK(same_tensors(m));
    const onnx_GraphProto *g = oc_model_proto(m)->graph;
    for (size_t k = 0; g && k < g->initializer.count; k++) {
        uint64_t off;
        const oc_bytes *b = &g->initializer.items[k]->raw_data;
        if (oc__bytes_source(b, &off)) ++*mapped;
        CHECK(b->mode != OC_BYTES_BORROWED); /* never bytes the load does not keep */
    }
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oc_model *m2 = NULL;
    o.parse = po;
    CHECK_STATUS(oz_open(td_at(name), &o, &m2, &info, &err), OC_OK, &err);
    CHECK(m2 && same_tensors(m2) && info.is_archive);
    g = m2 ? oc_model_proto(m2)->graph : NULL;
    for (size_t k = 0; use_pread && g && k < g->initializer.count; k++) {
        uint64_t off;
        CHECK(!oc__bytes_source(&g->initializer.items[k]->raw_data, &off));
    }
    oc_model_free(m2);
    return m;
}

/* use_pread reaches the archive's reader: every tensor is a copy (none lies in a mapping,
 * no_copy or not), and the model equals the mapped load's. */
static void test_archive_pread(void) {
    int mapped;
    oc_model *ref = load_archive("a.onnxz", 0, 1, &mapped);
    CHECK(mapped >= 2); /* the check sees mappings: both large tensors share the file's */
    for (int no_copy = 0; no_copy < 2; no_copy++) {
        oc_model *m = load_archive("a.onnxz", 1, no_copy, &mapped);
        CHECK(mapped == 0);
        const onnx_GraphProto *a = ref ? oc_model_proto(ref)->graph : NULL;
        const onnx_GraphProto *b = m ? oc_model_proto(m)->graph : NULL;
        CHECK(a && b && a->initializer.count == b->initializer.count);
        for (size_t k = 0; a && b && k < a->initializer.count && k < b->initializer.count; k++) {
            const onnx_TensorProto *x = a->initializer.items[k], *y = b->initializer.items[k];
            CHECK(x->name.size == y->name.size &&
                  memcmp(x->name.data, y->name.data, x->name.size) == 0);
            CHECK(x->raw_data.size == y->raw_data.size &&
                  (!x->raw_data.size ||
                   memcmp(x->raw_data.data, y->raw_data.data, x->raw_data.size) == 0));
        }
        oc_model_free(m);
    }
    oc_model_free(ref);
}

/* How many of m's tensors lie in a file mapping (internal/source.h). */
static int count_mapped(const oc_model *m) {
    const onnx_GraphProto *g = m ? oc_model_proto((oc_model *)m)->graph : NULL;
    int n = 0;
    for (size_t k = 0; g && k < g->initializer.count; k++) {
        uint64_t off;
        if (oc__bytes_source(&g->initializer.items[k]->raw_data, &off)) n++;
    }
    return n;
}

/* use_pread reaches external data: data files (two-file, N-file, with checksums) are read
 * with pread, every tensor a copy, no_copy or not, 1 or 2 threads; the tensors are the
 * mapped load's. A data file cut short after the model was written is refused alike. */
static void test_external_pread(void) {
    static const char *const models[] = {"two.onnx", "n.onnx", "sum.onnx"};
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        if (i == 2 && !oc_crypt_available()) break; /* checksums need OpenSSL */
        for (int mode = 0; mode < 8; mode++) {
            oc_parse_options po = OC_PARSE_OPTIONS_INIT;
            po.use_pread = mode & 1;
            po.no_copy = (mode >> 1) & 1;
            po.num_threads = mode & 4 ? 2 : 1;
            po.verify_checksums = i == 2;
            oc_model *m = NULL;
            CHECK_STATUS(oc_model_load_file(td_at(models[i]), &po, &m, &err), OC_OK, &err);
            CHECK(m && same_tensors(m));
            if (po.use_pread) CHECK(count_mapped(m) == 0);
            if (!po.use_pread && po.no_copy) CHECK(count_mapped(m) == 2); /* w0, w1 in place */
            oc_model_free(m);
        }
    }
    if (!oc_crypt_available()) return;
    /* a checksum that does not match, read with pread: the same refusal as mapped */
    char path[sizeof td_dir + 32], cmd[3 * sizeof td_dir + 64];
    snprintf(cmd, sizeof cmd, "cp '%s/sum.data' '%s/sum.data.good'", td_dir, td_dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/sum.data", td_dir);
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, 1000, SEEK_SET) == 0 && fputc(0x5a ^ fgetc(f), f) != EOF);
    if (f) fclose(f);
    for (int pread_ = 0; pread_ < 2; pread_++) {
        oc_parse_options po = OC_PARSE_OPTIONS_INIT;
        po.use_pread = pread_;
        po.verify_checksums = 1;
        oc_model *m = NULL;
        CHECK_STATUS(oc_model_load_file(td_at("sum.onnx"), &po, &m, &err), OC_ERR_CHECKSUM, &err);
        CHECK(m == NULL && strstr(err.message, "checksum mismatch"));
    }
    /* cut short: past its end, mapped or read */
    CHECK(truncate(path, 100) == 0);
    for (int pread_ = 0; pread_ < 2; pread_++) {
        oc_parse_options po = OC_PARSE_OPTIONS_INIT;
        po.use_pread = pread_;
        oc_model *m = NULL;
        CHECK_STATUS(oc_model_load_file(td_at("sum.onnx"), &po, &m, &err), OC_ERR_TRUNCATED, &err);
        CHECK(m == NULL && strstr(err.message, "past the end of 'sum.data'"));
    }
    CHECK(rename(td_at("sum.data.good"), path) == 0);
}

/* Many data files, read with pread: each is closed once its tensors are read, so a model
 * of more data files than the process may hold open loads as it does mapped. 600 tensors
 * of 2,000 bytes with 2,000-byte data files: one file each (E-13; the threshold keeps
 * them external). */
static void test_external_pread_many_files(void) {
    enum { N = 600, BYTES = 2000 };
    oc_model *m = tm_model_new();
    char name[32];
    for (unsigned k = 0; k < N; k++) {
        snprintf(name, sizeof name, "t%u", k);
        tm_add_bytes(oc_model_arena(m), oc_model_proto(m)->graph, name, BYTES, k);
    }
    save(m, "many.onnx", "many.data", BYTES);
    oc_model_free(m);
    struct rlimit old, low;
    CHECK(getrlimit(RLIMIT_NOFILE, &old) == 0);
    low = old;
    low.rlim_cur = 200; /* fewer than the data files */
    CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0);
    for (int mode = 0; mode < 4; mode++) {
        oc_parse_options po = OC_PARSE_OPTIONS_INIT;
        po.use_pread = mode & 1;
        po.num_threads = mode & 2 ? 2 : 1;
        m = NULL;
        CHECK_STATUS(oc_model_load_file(td_at("many.onnx"), &po, &m, &err), OC_OK, &err);
        const onnx_GraphProto *g = m ? oc_model_proto(m)->graph : NULL;
        CHECK(g && g->initializer.count == N);
        for (unsigned k = 0; g && k < g->initializer.count; k++) {
            const oc_bytes *b = &g->initializer.items[k]->raw_data;
            int same = b->size == BYTES;
            for (uint64_t i = 0; same && i < BYTES; i++) same = b->data[i] == tm_byte(i, k);
            CHECK(same);
        }
        oc_model_free(m);
    }
    CHECK(setrlimit(RLIMIT_NOFILE, &old) == 0);
}

static int same_file(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* A fetch that claims one byte more than its stream gives. */
static oc_status short_size(void *ctx, const onnx_TensorProto *t, uint64_t *n, oc_error *e) {
    const oc_tensor_fetch *inner = ctx;
    oc_status st = inner->size(inner->ctx, t, n, e);
    *n += 1;
    return st;
}

static oc_status short_stream(void *ctx, const onnx_TensorProto *t, oc_write_fn write, void *wctx,
                              oc_error *e) {
    const oc_tensor_fetch *inner = ctx;
    return inner->stream(inner->ctx, t, write, wctx, e);
}

/* Every output form written from in's deferred model, tensor by tensor through the
 * fetch, is byte for byte what the same save of the loaded model writes (outputs in
 * directory k, the loaded model's in k/sub). Returns the deferred model and its weights. */
static void deferred_forms(const char *in, const char *k, oc_model **lazy_out, oz_weights **w_out) {
    static const struct {
        const char *name, *data;
        uint64_t threshold, max_file;
    } outs[] = {{"d.onnx", NULL, 1024, 0},
                {"d2.onnx", "d2.data", 1024, 0},
                {"dn.onnx", "dn.data", 1024, 100000},
                {"d.onnxz", NULL, 1024, 0},
                {"dt.onnxz", NULL, 100000, 0}, /* w1 (70000 bytes) fetched into the model */
                {"dx.onnx", "dx.data", 100000, 0}};
    char path[300];
    oc_model *lazy = NULL, *full = NULL;
    oz_weights *w = NULL;
    *lazy_out = NULL;
    *w_out = NULL;
    snprintf(path, sizeof path, "%s/sub", k);
    mkdir(td_at(k), 0755);
    mkdir(td_at(path), 0755);
    CHECK_STATUS(oz_open_deferred(td_at(in), NULL, &lazy, &w, NULL, &err), OC_OK, &err);
    CHECK_STATUS(oz_open(td_at(in), NULL, &full, NULL, &err), OC_OK, &err);
    if (!lazy || !w || !full) return;
    const onnx_ModelProto *mp = oc_model_proto(lazy);
    CHECK(oc_tensor_is_external(mp->graph->initializer.items[0]) &&
          !OC_HAS(TensorProto, (onnx_TensorProto *)mp->graph->initializer.items[0], raw_data));
    oc_tensor_fetch fetch;
    oz_weights_fetch(w, &fetch);
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        char ref[300], mine[300];
        snprintf(ref, sizeof ref, "%s/sub/%s", k, outs[i].name);
        snprintf(mine, sizeof mine, "%s/%s", k, outs[i].name);
        oz_archive_options o = OZ_ARCHIVE_OPTIONS_INIT;
        o.serialize.buffer.raw_data_threshold = outs[i].threshold;
        o.serialize.max_external_file_size = outs[i].max_file;
        o.serialize.external_data = outs[i].data; /* the same name in both directories */
        CHECK_STATUS(oz_save_any(full, td_at(ref), OZ_FORM_AUTO, &o, &err), OC_OK, &err);
        o.serialize.fetch = &fetch;
        CHECK_STATUS(oz_save_any(lazy, td_at(mine), OZ_FORM_AUTO, &o, &err), OC_OK, &err);
        CHECK(same_file(td_at(ref), td_at(mine)));
        if (outs[i].data) {
            char a[300], b[300];
            snprintf(a, sizeof a, "%s/sub/%s", k, outs[i].data);
            snprintf(b, sizeof b, "%s/%s", k, outs[i].data);
            CHECK(same_file(td_at(a), td_at(b)));
            snprintf(a, sizeof a, "%s/sub/%s.1", k, outs[i].data);
            snprintf(b, sizeof b, "%s/%s.1", k, outs[i].data);
            CHECK(access(td_at(a), F_OK) != 0 || same_file(td_at(a), td_at(b)));
        }
    }
    {
        /* To memory: the same bytes as the loaded model's serialization. */
        oc_serialize_options so = OC_SERIALIZE_OPTIONS_INIT;
        void *a = NULL, *b = NULL;
        uint64_t na = 0, nb = 0;
        so.fetch = &fetch;
        CHECK_STATUS(oc_model_save_memory(lazy, &so, &a, &na, &err), OC_OK, &err);
        CHECK_STATUS(oc_model_save_memory(full, NULL, &b, &nb, &err), OC_OK, &err);
        CHECK(a && b && na == nb && memcmp(a, b, (size_t)na) == 0);
        free(a);
        free(b);
    }
    oc_model_free(full);
    *lazy_out = lazy;
    *w_out = w;
}

/* Saves lazy through w's fetch to name, which must fail with want and leave nothing. */
static void deferred_fails(const oc_model *lazy, oz_weights *w, const char *name, oc_status want) {
    oc_tensor_fetch fetch;
    oz_archive_options o = OZ_ARCHIVE_OPTIONS_INIT;
    oz_weights_fetch(w, &fetch);
    o.serialize.fetch = &fetch;
    CHECK_STATUS(oz_save_any(lazy, td_at(name), OZ_FORM_AUTO, &o, &err), want, &err);
    CHECK(access(td_at(name), F_OK) != 0);
}

/* oz_open_deferred + oz_weights_fetch, for an archive (its entries) and for models with
 * external data (their data files): every output form is the loaded model's, byte for
 * byte; bad references, files that changed since the open and a fetch that lies fail and
 * leave nothing. */
static void test_deferred(void) {
    oc_model *lazy;
    oz_weights *w;
    deferred_forms("a.onnxz", "da", &lazy, &w);
    if (lazy && w) {
        /* The bytes are checked against the size the fetch gave: nothing is written. */
        oc_tensor_fetch fetch;
        oz_weights_fetch(w, &fetch);
        oz_archive_options o = OZ_ARCHIVE_OPTIONS_INIT;
        oc_tensor_fetch liar = {short_size, short_stream, &fetch};
        o.serialize.fetch = &liar;
        CHECK_STATUS(oz_save_any(lazy, td_at("liar.onnxz"), OZ_FORM_AUTO, &o, &err),
                     OC_ERR_TRUNCATED, &err);
        CHECK(access(td_at("liar.onnxz"), F_OK) != 0);
        CHECK_STATUS(oz_save_any(lazy, td_at("liar.onnx"), OZ_FORM_AUTO, &o, &err),
                     OC_ERR_TRUNCATED, &err);
        CHECK(access(td_at("liar.onnx"), F_OK) != 0);
        /* A reference to an entry the archive does not have. */
        onnx_TensorProto *t = oc_model_proto(lazy)->graph->initializer.items[1];
        for (uint64_t k = 0; k < t->external_data.count; k++) {
            onnx_StringStringEntryProto *e = t->external_data.items[k];
            if (oc_str_eq(e->key, "location"))
                oc_str_set_cstr(oc_model_arena(lazy), &e->value, "no-such-entry");
        }
        deferred_fails(lazy, w, "bad.onnx", OC_ERR_NOT_FOUND);
        CHECK(strstr(err.message, "no-such-entry") != NULL);
        /* A check through the fetch resolves every reference, of a type without a size
         * too (verify of a remote archive); an empty fetch is no fetch. */
        t->data_type = 8; /* STRING */
        OC_SET_HAS(TensorProto, t, data_type);
        CHECK_STATUS(oc_model_check_tensor_sizes_fetched(lazy, &fetch, &err), OC_ERR_NOT_FOUND,
                     &err);
        CHECK(strstr(err.message, "no-such-entry") != NULL);
        oc_tensor_fetch none = {NULL, NULL, NULL};
        CHECK_STATUS(oc_model_check_tensor_sizes_fetched(lazy, &none, &err), OC_OK, &err);
    }
    oc_model_free(lazy);
    oz_weights_close(w);

    /* Two files, N files: the data files stay beside the model until streamed. */
    deferred_forms("two.onnx", "d2", &lazy, &w);
    oc_model_free(lazy);
    oz_weights_close(w);
    deferred_forms("n.onnx", "dn", &lazy, &w);
    oc_model_free(lazy);
    oz_weights_close(w);
    /* Copies to change under an open model (the originals serve later tests). */
    char cmd[5 * sizeof td_dir + 100];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/mut' && cp '%s'/n.onnx '%s'/n.data* %s%s%s '%s/mut/'",
             td_dir, td_dir, td_dir, oc_crypt_available() ? "'" : "",
             oc_crypt_available() ? td_dir : "", oc_crypt_available() ? "'/sum.*" : "", td_dir);
    CHECK(system(cmd) == 0);
    CHECK_STATUS(oz_open_deferred(td_at("mut/n.onnx"), NULL, &lazy, &w, NULL, &err), OC_OK, &err);
    if (lazy && w) {
        /* n.data is closed after the check and opened again for the save (n.data.1, the
         * last checked, stays open): another file under its name, of the same size, or
         * the same one grown, is refused, every time; nothing mixed, nothing written. */
        snprintf(cmd, sizeof cmd,
                 "cd '%s/mut' && head -c $(stat -c %%s n.data) /dev/urandom > x && mv x n.data",
                 td_dir);
        CHECK(system(cmd) == 0);
        deferred_fails(lazy, w, "swapped.onnx", OC_ERR_INCONSISTENT);
        CHECK(strstr(err.message, "'n.data'") && strstr(err.message, "changed"));
        deferred_fails(lazy, w, "swapped.onnx", OC_ERR_INCONSISTENT); /* and again */
        FILE *f = fopen(td_at("mut/n.data"), "ab");
        if (f) {
            fputc(0, f);
            fclose(f);
        }
        deferred_fails(lazy, w, "grown.onnx", OC_ERR_INCONSISTENT);
        CHECK(strstr(err.message, "'n.data'") && strstr(err.message, "changed"));
    }
    oc_model_free(lazy);
    oz_weights_close(w);

    if (oc_crypt_available()) {
        /* Checksums are checked as the bytes stream: a byte flipped after the open fails
         * after the tensor's last byte, and nothing is written. */
        oz_open_options oo = OZ_OPEN_OPTIONS_INIT;
        oo.parse.verify_checksums = 1;
        deferred_forms("sum.onnx", "ds", &lazy, &w);
        oc_model_free(lazy);
        oz_weights_close(w);
        CHECK_STATUS(oz_open_deferred(td_at("mut/sum.onnx"), &oo, &lazy, &w, NULL, &err), OC_OK,
                     &err);
        FILE *f = fopen(td_at("mut/sum.data"), "r+b");
        if (f && fseek(f, 0, SEEK_END) == 0) {
            long end = ftell(f);
            fseek(f, end / 2, SEEK_SET);
            int c = fgetc(f);
            fseek(f, end / 2, SEEK_SET);
            fputc(c ^ 0xff, f);
        }
        if (f) fclose(f);
        if (lazy && w) {
            deferred_fails(lazy, w, "sum-bad.onnxz", OC_ERR_CHECKSUM);
            CHECK(strstr(err.message, "checksum mismatch") != NULL);
        }
        oc_model_free(lazy);
        oz_weights_close(w);
    }

    /* No external data: loaded whole. */
    CHECK_STATUS(oz_open_deferred(td_at("one.onnx"), NULL, &lazy, &w, NULL, &err), OC_OK, &err);
    CHECK(w && lazy && same_tensors(lazy));
    oc_model_free(lazy);
    oz_weights_close(w);
    /* A data file missing at the open: refused then, as a load refuses it. */
    CHECK(rename(td_at("two.data"), td_at("two.data.away")) == 0);
    CHECK_STATUS(oz_open_deferred(td_at("two.onnx"), NULL, &lazy, &w, NULL, &err), OC_ERR_NOT_FOUND,
                 &err);
    CHECK(w == NULL && lazy == NULL && strstr(err.message, "two.data"));
    CHECK(rename(td_at("two.data.away"), td_at("two.data")) == 0);
    CHECK_STATUS(oz_open_deferred(td_at("missing"), NULL, &lazy, &w, NULL, &err), OC_ERR_NOT_FOUND,
                 &err);
    CHECK(w == NULL && lazy == NULL);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "open") != 0 || mkdir(td_at("sub"), 0777) != 0) return 2;
    char cmd[2 * sizeof td_dir + 64];
    test_detect_memory();
    test_path();

    oc_model *src = make_model();
    save(src, "one.onnx", NULL, 0);
    save(src, "two.onnx", "two.data", 0);
    save(src, "n.onnx", "n.data", 100000);
    save(src, "a.onnxz", NULL, 0);
    if (oc_crypt_available()) { /* a two-file model with SHA-1 checksums */
        oz_archive_options o = OZ_ARCHIVE_OPTIONS_INIT;
        o.serialize.external_data = "sum.data";
        o.serialize.checksum = 1;
        CHECK_STATUS(oz_save_any(src, td_at("sum.onnx"), OZ_FORM_AUTO, &o, &err), OC_OK, &err);
    }
    oc_model_free(src);
    test_detect_file();

    open_ok("one.onnx", NULL, OZ_KIND_MODEL, 0);
    open_ok("two.onnx", NULL, OZ_KIND_MODEL, 0);
    open_ok("n.onnx", NULL, OZ_KIND_MODEL, 0);
    open_ok("a.onnxz", NULL, OZ_KIND_ZIP, 1);
    test_archive_pread();
    test_deferred();
    test_external_pread();
    test_external_pread_many_files();
    open_ok("two.onnx", pass, OZ_KIND_MODEL, 0); /* a key is ignored for a plain file */
    {
        /* oz_load_any is oz_open without a key. */
        oc_model *m = NULL;
        CHECK_STATUS(oz_load_any(td_at("n.onnx"), NULL, &m, &err), OC_OK, &err);
        CHECK(m && same_tensors(m));
        oc_model_free(m);
        CHECK_STATUS(oz_load_any(td_at("empty"), NULL, &m, &err), OC_ERR_MALFORMED, &err);
    }
    {
        /* External data kept as references, the data files never opened. */
        oz_open_options o = OZ_OPEN_OPTIONS_INIT;
        oc_model *m = NULL;
        o.parse.skip_external_data = 1;
        CHECK(rename(td_at("two.data"), td_at("two.data.away")) == 0);
        CHECK_STATUS(oz_open(td_at("two.onnx"), &o, &m, NULL, &err), OC_OK, &err);
        oc_model_free(m);
        open_fails("two.onnx", NULL, OC_ERR_NOT_FOUND, "two.data");
        CHECK(rename(td_at("two.data.away"), td_at("two.data")) == 0);
    }

    open_fails("empty", NULL, OC_ERR_MALFORMED, "empty file, not an ONNX model");
    open_fails("short.zip", NULL, OC_ERR_TRUNCATED, NULL);
    open_fails("short.enc", NULL, OC_ERR_TRUNCATED,
               "ends inside the magic of an encrypted file (6 of 8");
    open_fails("garbage", NULL, OC_ERR_TRUNCATED, NULL);
    open_fails("missing", NULL, OC_ERR_NOT_FOUND, NULL);
    open_fails("magic.zec1", NULL, OC_ERR_INVALID_ARG, "a key is needed");

    if (oc_crypt_available()) {
        encrypt("one.onnx", "one.zec1", OC_CRYPT_ONNXZEC1);
        encrypt("two.onnx", "two.zec1", OC_CRYPT_ONNXZEC1); /* its data files beside it */
        encrypt("n.onnx", "n.cry1", OC_CRYPT_ONNXCRY1);
        encrypt("a.onnxz", "a.zec1", OC_CRYPT_ONNXZEC1);
        encrypt("a.onnxz", "a.cry1", OC_CRYPT_ONNXCRY1);
        CHECK(detect_file("a.cry1") == OZ_KIND_ONNXCRY1);
        open_ok("one.zec1", pass, OZ_KIND_ONNXZEC1, 0);
        open_ok("two.zec1", pass, OZ_KIND_ONNXZEC1, 0);
        open_ok("n.cry1", pass, OZ_KIND_ONNXCRY1, 0);
        open_ok("a.zec1", pass, OZ_KIND_ONNXZEC1, 1);
        open_ok("a.cry1", pass, OZ_KIND_ONNXCRY1, 1);
        open_fails("a.zec1", NULL, OC_ERR_INVALID_ARG, "is encrypted (ONNXZEC1)");
        open_fails("one.zec1", "wrong", OC_ERR_BAD_KEY, NULL);
        {
            /* The encrypted two-file model finds its data in data_dir when told. */
            oz_open_options o = OZ_OPEN_OPTIONS_INIT;
            oc_model *m = NULL;
            snprintf(cmd, sizeof cmd, "mv '%s/two.zec1' '%s/sub/'", td_dir, td_dir);
            CHECK(system(cmd) == 0);
            o.key = pass;
            o.key_len = strlen(pass);
            o.parse.data_dir = td_dir;
            CHECK_STATUS(oz_open(td_at("sub/two.zec1"), &o, &m, NULL, &err), OC_OK, &err);
            CHECK(m && same_tensors(m));
            oc_model_free(m);
        }
    } else {
        /* Still told apart; loading says why it cannot. */
        put("one.zec1", "ONNXZEC1xxxxxxxxxxxxxxxxxxxxxxxx", 32);
        CHECK(detect_file("one.zec1") == OZ_KIND_ONNXZEC1);
        open_fails("one.zec1", pass, OC_ERR_UNSUPPORTED, NULL);
    }

    td_remove(td_dir);
    return check_report("test_open");
}
