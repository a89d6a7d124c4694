/*
 * test_reader.c - oz_reader (onnxz/reader.h) over every form a file takes: a .onnx with
 * no, one and many data files, an archive, a ZIP cut short, an empty file, encrypted ones
 * with and without their key; the index (count, at, find), read, size and read_to giving
 * the same bytes, a mapping shared rather than copied, threads reading one reader, the
 * L-2 check after a data file or the model is replaced, skip_data_files, the options'
 * size rules, and the size of tensors in typed fields (float_data...), counted as the read
 * converts them; a cold archive's open reading its headers alone, and prefetch reading
 * its tensors ahead.
 */
#define _DEFAULT_SOURCE /* mincore */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/crypto.h>
#include <onnxcore/onnxcore.h>
#include <onnxz/convert.h>
#include <onnxz/reader.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"

static oc_error err;
static const char pass[] = "open sesame";

static void put(const char *name, const void *data, size_t n) {
    CHECK(td_write(td_at(name), data, n) == 0);
}

/* The model's tensors: two over the external-data threshold and one inline. */
static const struct {
    const char *name;
    uint64_t n;
    unsigned seed;
} want[] = {{"w0", 300000, 1}, {"w1", 70000, 2}, {"tiny", 10, 3}};
#define NWANT (sizeof want / sizeof want[0])

static void save(const char *name, const char *data, uint64_t max_file) {
    oc_model *m = tm_model_new();
    for (size_t k = 0; k < NWANT; k++)
        tm_add_bytes(oc_model_arena(m), oc_model_proto(m)->graph, want[k].name, want[k].n,
                     want[k].seed);
    oz_archive_options o = OZ_ARCHIVE_OPTIONS_INIT;
    o.serialize.external_data = data;
    o.serialize.max_external_file_size = max_file;
    CHECK_STATUS(oz_save_any(m, td_at(name), OZ_FORM_AUTO, &o, &err), OC_OK, &err);
    oc_model_free(m);
}

static bool is_pattern(const uint8_t *p, uint64_t n, size_t k) {
    if (n != want[k].n) return false;
    for (uint64_t i = 0; i < n; i++)
        if (p[i] != tm_byte(i, want[k].seed)) return false;
    return true;
}

/* A sink that checks what it is given against tensor k's bytes. */
typedef struct sink {
    size_t k;
    uint64_t got;
    bool same;
} sink;

static oc_status sink_write(void *ctx, const void *data, uint64_t size, oc_error *e) {
    sink *s = ctx;
    (void)e;
    for (uint64_t i = 0; i < size; i++)
        if (((const uint8_t *)data)[i] != tm_byte(s->got + i, want[s->k].seed)) s->same = false;
    s->got += size;
    return OC_OK;
}

/* Every tensor of r by its name, by read, size and read_to; found again through at. */
static void check_tensors(oz_reader *r, const char *what) {
    oc_error e; /* its own: two threads run this at once */
    oc_error_clear(&e);
    CHECK(oz_reader_count(r) == NWANT);
    for (size_t k = 0; k < NWANT; k++) {
        const onnx_TensorProto *t = oz_reader_find(r, want[k].name, strlen(want[k].name));
        CHECK(t != NULL);
        if (!t) {
            fprintf(stderr, "  (%s: no %s)\n", what, want[k].name);
            continue;
        }
        bool listed = false;
        for (uint64_t i = 0; i < oz_reader_count(r); i++) listed |= oz_reader_at(r, i) == t;
        CHECK(listed);
        oc_bytes b = {0}, again = {0};
        uint64_t n = 0;
        CHECK_STATUS(oz_reader_read(r, t, &b, &e), OC_OK, &e);
        CHECK(is_pattern(b.data, b.size, k));
        CHECK_STATUS(oz_reader_read(r, t, &again, &e), OC_OK, &e);
        CHECK(again.size == b.size);
        CHECK_STATUS(oz_reader_size(r, t, &n, &e), OC_OK, &e);
        CHECK(n == want[k].n);
        sink s = {k, 0, true};
        CHECK_STATUS(oz_reader_read_to(r, t, sink_write, &s, &e), OC_OK, &e);
        CHECK(s.same && s.got == want[k].n);
        oc_bytes_release(&b);
        oc_bytes_release(&again);
    }
    CHECK(oz_reader_find(r, "w0\0", 3) == NULL); /* a NUL is a byte of the name */
    CHECK(oz_reader_find(r, "nothing", 7) == NULL);
    CHECK(oz_reader_at(r, NWANT) == NULL);
}

static oz_reader *open_ok(const char *name, const void *key, oz_kind kind, bool archive) {
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oz_reader *r = NULL;
    o.key = key;
    o.key_len = key ? strlen(key) : 0;
    CHECK_STATUS(oz_reader_open(td_at(name), &o, &r, &info, &err), OC_OK, &err);
    if (!r) {
        fprintf(stderr, "  (opening %s)\n", name);
        return NULL;
    }
    CHECK(info.kind == kind && info.is_archive == archive && info.file_size > 0);
    oz_open_info again = OZ_OPEN_INFO_INIT;
    oz_reader_info(r, &again);
    CHECK(memcmp(&again, &info, sizeof info) == 0);
    CHECK(oz_reader_model(r) != NULL);
    CHECK((oz_reader_archive(r) != NULL) == archive); /* an encrypted one's too */
    check_tensors(r, name);
    CHECK_STATUS(oz_reader_unchanged(r, &err), OC_OK, &err);
    return r;
}

static void open_fails(const char *name, const void *key, oc_status status, const char *says,
                       oz_kind kind) {
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oz_reader *r = (oz_reader *)&o; /* must come back NULL */
    o.key = key;
    o.key_len = key ? strlen(key) : 0;
    CHECK_STATUS(oz_reader_open(td_at(name), &o, &r, &info, &err), status, &err);
    CHECK(r == NULL);
    CHECK(info.kind == kind);
    if (says && !CHECK(strstr(err.message, says) != NULL))
        fprintf(stderr, "%s: message '%s' lacks '%s'\n", name, err.message, says);
}

/* The model as the file holds it: its large tensors references, the small one inline. */
static void check_references(const char *name, const char *key) {
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    oz_reader *r = NULL;
    o.key = key;
    o.key_len = key ? strlen(key) : 0;
    CHECK_STATUS(oz_reader_open(td_at(name), &o, &r, NULL, &err), OC_OK, &err);
    if (!r) return;
    const onnx_GraphProto *g = oc_model_proto(oz_reader_model(r))->graph;
    CHECK(g && g->initializer.count == NWANT);
    for (size_t k = 0; g && k < g->initializer.count; k++)
        CHECK(oc_tensor_is_external(g->initializer.items[k]) == (want[k].n > 1024));
    oz_reader_close(r);
}

/* A mapped file's tensor is a span of the mapping: two reads share its bytes. */
static void check_zero_copy(const char *name) {
    oz_reader *r = NULL;
    CHECK_STATUS(oz_reader_open(td_at(name), NULL, &r, NULL, &err), OC_OK, &err);
    if (!r) return;
    oc_bytes a = {0}, b = {0};
    const onnx_TensorProto *t = oz_reader_find(r, "w0", 2);
    CHECK_STATUS(oz_reader_read(r, t, &a, &err), OC_OK, &err);
    CHECK_STATUS(oz_reader_read(r, t, &b, &err), OC_OK, &err);
    CHECK(a.data && a.data == b.data);
    oz_reader_close(r);
    CHECK(is_pattern(a.data, a.size, 0)); /* the span outlives the reader */
    oc_bytes_release(&a);
    oc_bytes_release(&b);
}

/* skip_data_files: r's tensors in data files are references no read fetches (each read
 * refused, naming the option); the inline one reads as ever. */
static void check_skipped(oz_reader *r, const char *what) {
    CHECK(oz_reader_count(r) == NWANT);
    for (size_t k = 0; k < NWANT; k++) {
        const onnx_TensorProto *t = oz_reader_find(r, want[k].name, strlen(want[k].name));
        oc_bytes b = {0};
        uint64_t n = 0;
        sink s = {k, 0, true};
        if (!CHECK(t != NULL)) continue;
        if (want[k].n <= 1024) {
            CHECK_STATUS(oz_reader_read(r, t, &b, &err), OC_OK, &err);
            CHECK(is_pattern(b.data, b.size, k));
            oc_bytes_release(&b);
            continue;
        }
        CHECK(oc_tensor_is_external(t));
        CHECK_STATUS(oz_reader_read(r, t, &b, &err), OC_ERR_UNSUPPORTED, &err);
        if (!CHECK(strstr(err.message, "skip_data_files") != NULL))
            fprintf(stderr, "%s: '%s'\n", what, err.message);
        CHECK_STATUS(oz_reader_size(r, t, &n, &err), OC_ERR_UNSUPPORTED, &err);
        CHECK_STATUS(oz_reader_read_to(r, t, sink_write, &s, &err), OC_ERR_UNSUPPORTED, &err);
        CHECK(s.got == 0);
    }
}

static oz_reader *open_skipping(const char *name, const char *key) {
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    oz_reader *r = NULL;
    o.key = key;
    o.key_len = key ? strlen(key) : 0;
    o.skip_data_files = true;
    CHECK_STATUS(oz_reader_open(td_at(name), &o, &r, NULL, &err), OC_OK, &err);
    return r;
}

/* A .onnx whose data file is gone opens with skip_data_files (and not without); an
 * archive's entries are read as ever. */
static void check_skip_data_files(void) {
    oz_reader *r = NULL;
    save("lost.onnx", "lost.data", 0);
    CHECK(unlink(td_at("lost.data")) == 0);
    CHECK(oz_reader_open(td_at("lost.onnx"), NULL, &r, NULL, &err) != OC_OK && !r);
    if ((r = open_skipping("lost.onnx", NULL)) != NULL) {
        check_skipped(r, "lost.onnx");
        CHECK_STATUS(oz_reader_unchanged(r, &err), OC_OK, &err);
        oz_reader_close(r);
    }
    if ((r = open_skipping("a.onnxz", NULL)) != NULL) {
        check_tensors(r, "a.onnxz, skip_data_files");
        oz_reader_close(r);
    }
}

static void *read_all(void *arg) {
    for (int i = 0; i < 20; i++) check_tensors(arg, "thread");
    return NULL;
}

static void check_threads(const char *name) {
    oz_reader *r = NULL;
    pthread_t th[2];
    CHECK_STATUS(oz_reader_open(td_at(name), NULL, &r, NULL, &err), OC_OK, &err);
    if (!r) return;
    for (int i = 0; i < 2; i++) CHECK(pthread_create(&th[i], NULL, read_all, r) == 0);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    oz_reader_close(r);
}

/* L-2: a data file, then the model file, saved over after the open. */
static void check_unchanged(void) {
    oz_reader *r = open_ok("n.onnx", NULL, OZ_KIND_MODEL, false);
    if (!r) return;
    save("n2.onnx", "n.data", 100000);
    CHECK_STATUS(oz_reader_unchanged(r, &err), OC_ERR_INCONSISTENT, &err);
    CHECK(strstr(err.message, "its data file 'n.data") != NULL);
    check_tensors(r, "n.onnx after a data file was replaced"); /* the mapping stays */
    oz_reader_close(r);
    r = open_ok("two.onnx", NULL, OZ_KIND_MODEL, false);
    if (!r) return;
    CHECK(rename(td_at("one.onnx"), td_at("two.onnx")) == 0);
    CHECK_STATUS(oz_reader_unchanged(r, &err), OC_ERR_INCONSISTENT, &err);
    CHECK(strstr(err.message, "replaced since it was opened") != NULL);
    oz_reader_close(r);
}

/* Sized options: a size never set, and a later caller's option this library lacks. */
static void check_options(void) {
    struct {
        oz_reader_options o;
        uint64_t later;
    } big;
    oz_reader *r = NULL;
    oz_reader_options_init(&big.o);
    big.o.size = 0;
    CHECK_STATUS(oz_reader_open(td_at("one.onnx"), &big.o, &r, NULL, &err), OC_ERR_INVALID_ARG,
                 &err);
    big.o.size = sizeof big;
    big.later = 0;
    CHECK_STATUS(oz_reader_open(td_at("one.onnx"), &big.o, &r, NULL, &err), OC_OK, &err);
    oz_reader_close(r);
    big.later = 1;
    CHECK_STATUS(oz_reader_open(td_at("one.onnx"), &big.o, &r, NULL, &err), OC_ERR_INVALID_ARG,
                 &err);
    oz_reader_options older = OZ_READER_OPTIONS_INIT; /* as a caller before key existed */
    older.size = offsetof(oz_reader_options, key);
    CHECK_STATUS(oz_reader_open(td_at("two.onnx"), &older, &r, NULL, &err), OC_OK, &err);
    oz_reader_close(r);
    oz_open_info info = {0};
    CHECK_STATUS(oz_reader_open(td_at("one.onnx"), NULL, &r, &info, &err), OC_ERR_INVALID_ARG,
                 &err);
    CHECK_STATUS(oz_reader_open(NULL, NULL, &r, NULL, &err), OC_ERR_INVALID_ARG, &err);
    oz_reader_close(NULL);
}

static void encrypt(const char *in, const char *out, oc_crypt_format format) {
    CHECK_OK(tm_encrypt_file(td_at(in), td_at(out), pass, format, &err), &err);
}

static void check_encrypted(void) {
    if (!oc_crypt_available()) return;
    encrypt("two.onnx", "two.zec1", OC_CRYPT_ONNXZEC1);
    encrypt("a.onnxz", "a.cry1", OC_CRYPT_ONNXCRY1);
    oz_reader_close(open_ok("two.zec1", pass, OZ_KIND_ONNXZEC1, false));
    oz_reader_close(open_ok("a.cry1", pass, OZ_KIND_ONNXCRY1, true));
    /* the decrypted archive's model holds references to its entries, as a file's does */
    check_references("a.cry1", pass);
    check_references("two.zec1", pass);
    oz_reader *r = open_skipping("two.zec1", pass);
    if (r) check_skipped(r, "two.zec1");
    oz_reader_close(r);
    open_fails("two.zec1", NULL, OC_ERR_INVALID_ARG, "a key is needed", OZ_KIND_ONNXZEC1);
    open_fails("a.cry1", "wrong", OC_ERR_BAD_KEY, NULL, OZ_KIND_ONNXCRY1);
}

/* prefetch (the mapped files read ahead) is advice: every form reads the same tensors. */
static void check_prefetch(const char *name) {
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    oz_reader *r = NULL;
    o.prefetch = 1;
    CHECK_STATUS(oz_reader_open(td_at(name), &o, &r, NULL, &err), OC_OK, &err);
    if (r) check_tensors(r, name);
    oz_reader_close(r);
}

/* A tensor in typed fields: name, data_type, dims (ndims of them) and nvalues values of
 * the field the type reads (float_data for FLOAT and COMPLEX64, string_data for STRING,
 * else int32_data). */
static void add_typed(oc_arena *a, onnx_GraphProto *g, const char *name, int32_t type,
                      const int64_t *dims, size_t ndims, size_t nvalues) {
    onnx_TensorProto *t = OC_ADD(a, TensorProto, g->initializer);
    oc_str_set_cstr(a, &t->name, name);
    OC_SET_HAS(TensorProto, t, name);
    t->data_type = type;
    OC_SET_HAS(TensorProto, t, data_type);
    for (size_t i = 0; i < ndims; i++) {
        int64_t *d = oc_array_push(a, &t->dims, sizeof(int64_t));
        if (d) *d = dims[i];
    }
    for (size_t i = 0; i < nvalues; i++) {
        if (type == 1 || type == 14) {
            float *f = oc_array_push(a, &t->float_data, sizeof(float));
            if (f) *f = (float)i + 0.5f;
        } else if (type == 8) {
            oc_str *str = oc_array_push(a, &t->string_data, sizeof(oc_str));
            if (str) oc_str_set_cstr(a, str, "x");
        } else {
            int32_t *v = oc_array_push(a, &t->int32_data, sizeof(int32_t));
            if (v) *v = (int32_t)i;
        }
    }
}

/* oz_reader_size of tensors in typed fields: the bytes oz_reader_read gives (and the
 * count W-40 makes of the dims), counted without converting; a tensor whose values are
 * not the count its dims make, and a STRING one, fail as the read fails. */
static void check_typed_sizes(void) {
    static const int64_t d3[] = {3}, d5[] = {5}, d2[] = {2}, d23[] = {2, 3};
    static const struct {
        const char *name;
        int32_t type;
        const int64_t *dims;
        size_t ndims, nvalues;
        oc_status status;
        uint64_t size;
    } cases[] = {
        {"f", 1, d3, 1, 3, OC_OK, 12},   /* FLOAT */
        {"c", 14, d2, 1, 4, OC_OK, 16},  /* COMPLEX64: pairs in float_data */
        {"i8", 3, d5, 1, 5, OC_OK, 5},   /* INT8 from int32_data */
        {"h", 10, d23, 2, 6, OC_OK, 12}, /* FLOAT16 bit patterns */
        {"i4", 22, d3, 1, 2, OC_OK, 2},  /* INT4: two a byte, the last half empty */
        {"scalar", 1, NULL, 0, 1, OC_OK, 4},
        {"short", 1, d3, 1, 2, OC_ERR_INCONSISTENT, 0}, /* 2 values for 3 elements */
        {"s", 8, d2, 1, 2, OC_ERR_UNSUPPORTED, 0},      /* STRING: no raw bytes */
    };
    const size_t ncases = sizeof cases / sizeof cases[0];
    oc_model *m = tm_model_new();
    for (size_t i = 0; i < ncases; i++)
        add_typed(oc_model_arena(m), oc_model_proto(m)->graph, cases[i].name, cases[i].type,
                  cases[i].dims, cases[i].ndims, cases[i].nvalues);
    CHECK_STATUS(oc_model_save_file(m, td_at("typed.onnx"), NULL, &err), OC_OK, &err);
    oc_model_free(m);
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    oz_reader *r = NULL;
    CHECK_STATUS(oz_reader_open(td_at("typed.onnx"), &o, &r, NULL, &err), OC_OK, &err);
    for (size_t i = 0; r && i < ncases; i++) {
        const onnx_TensorProto *t = oz_reader_find(r, cases[i].name, strlen(cases[i].name));
        oc_error size_err, read_err;
        oc_bytes b = {0};
        uint64_t n = 99;
        CHECK(t != NULL);
        if (!t) continue;
        oc_error_clear(&size_err);
        oc_error_clear(&read_err);
        oc_status st = oz_reader_size(r, t, &n, &size_err);
        CHECK_STATUS(st, cases[i].status, &size_err);
        CHECK_STATUS(oz_reader_read(r, t, &b, &read_err), cases[i].status, &read_err);
        if (st == OC_OK) {
            CHECK_EQ(n, cases[i].size);
            CHECK_EQ(b.size, n);
        } else {
            bool same = strcmp(size_err.message, read_err.message) == 0 &&
                        strcmp(size_err.rule, read_err.rule) == 0;
            CHECK(same);
            if (!same)
                fprintf(stderr, "  %s: size '%s', read '%s'\n", cases[i].name, size_err.message,
                        read_err.message);
        }
        oc_bytes_release(&b);
    }
    oz_reader_close(r);
}

/* The sixteen tensors of check_cold_archive, each its pattern. */
static void check_tensors_of_sixteen(oz_reader *r) {
    char name[16];
    for (unsigned k = 0; k < 16; k++) {
        snprintf(name, sizeof name, "t%u", k);
        const onnx_TensorProto *t = oz_reader_find(r, name, strlen(name));
        oc_bytes b = {0};
        CHECK_STATUS(t ? oz_reader_read(r, t, &b, &err) : OC_ERR_NOT_FOUND, OC_OK, &err);
        bool same = b.size == (uint64_t)2 << 20;
        for (uint64_t i = 0; same && i < b.size; i++) same = b.data[i] == tm_byte(i, k);
        CHECK(same);
        oc_bytes_release(&b);
    }
}

/* Pages of the file at path in the page cache (mincore over a mapping of it). */
static uint64_t cached_pages(const char *path, uint64_t *pages) {
    int fd = open(path, O_RDONLY);
    struct stat st;
    uint64_t n = 0;
    *pages = 0;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        if (fd >= 0) close(fd);
        return 0;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = (size_t)st.st_size;
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    unsigned char *v = malloc((len + page - 1) / page);
    if (m != MAP_FAILED && v && mincore(m, len, v) == 0)
        for (size_t i = 0; i < (len + page - 1) / page; i++) n += v[i] & 1;
    *pages = (len + page - 1) / page;
    free(v);
    if (m != MAP_FAILED) munmap(m, len);
    close(fd);
    return n;
}

/* The file's pages dropped from the page cache (written back first: only clean pages
 * go). False when the system keeps them anyway. */
static bool drop_cached(const char *path) {
    int fd = open(path, O_RDONLY);
    bool ok = fd >= 0 && fsync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    if (fd >= 0) close(fd);
    uint64_t pages;
    return ok && cached_pages(path, &pages) < pages / 8;
}

/* An archive of sixteen 2 MiB tensors, not in the page cache: opening it reads its
 * headers, not the tensors around them (the local-header pass asks a mapping for no
 * read-around); opened with prefetch, the kernel reads the tensors' ranges ahead, all of
 * them, without a byte of them touched. */
static void check_cold_archive(void) {
    oc_model *m = tm_model_new();
    char name[16];
    for (unsigned k = 0; k < 16; k++) {
        snprintf(name, sizeof name, "t%u", k);
        tm_add_bytes(oc_model_arena(m), oc_model_proto(m)->graph, name, (uint64_t)2 << 20, k);
    }
    CHECK_STATUS(oz_save_any(m, td_at("cold.onnxz"), OZ_FORM_AUTO, NULL, &err), OC_OK, &err);
    oc_model_free(m);
    const char *path = td_at("cold.onnxz");
    if (!drop_cached(path)) { /* a filesystem that keeps its pages (tmpfs): nothing to see */
        fprintf(stderr, "  (the page cache keeps %s: not checked)\n", path);
        return;
    }
    uint64_t pages, cached;
    oz_reader *r = NULL;
    CHECK_STATUS(oz_reader_open(path, NULL, &r, NULL, &err), OC_OK, &err);
    cached = cached_pages(path, &pages);
    if (!CHECK(cached < pages / 4))
        fprintf(stderr, "  open read %llu of %llu pages\n", (unsigned long long)cached,
                (unsigned long long)pages);
    oz_reader_close(r);
    CHECK(drop_cached(path));
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    o.prefetch = 1;
    CHECK_STATUS(oz_reader_open(path, &o, &r, NULL, &err), OC_OK, &err);
    for (int i = 0; i < 200 && (cached = cached_pages(path, &pages)) < pages - pages / 16; i++)
        usleep(10000); /* the reads ahead are the kernel's, not waited for */
    if (!CHECK(cached >= pages - pages / 16))
        fprintf(stderr, "  prefetch read %llu of %llu pages\n", (unsigned long long)cached,
                (unsigned long long)pages);
    if (r) check_tensors_of_sixteen(r);
    oz_reader_close(r);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "reader") != 0) return 2;

    save("one.onnx", NULL, 0);
    save("two.onnx", "two.data", 0);
    save("n.onnx", "n.data", 100000);
    save("a.onnxz", NULL, 0);
    put("empty", "", 0);
    put("short.zip", "PK\3", 3);
    put("short.enc", "ONNXZE", 6);

    oz_reader_close(open_ok("one.onnx", NULL, OZ_KIND_MODEL, false));
    oz_reader_close(open_ok("two.onnx", NULL, OZ_KIND_MODEL, false));
    oz_reader_close(open_ok("n.onnx", NULL, OZ_KIND_MODEL, false));
    oz_reader_close(open_ok("a.onnxz", NULL, OZ_KIND_ZIP, true));
    check_references("two.onnx", NULL);
    check_references("a.onnxz", NULL);
    check_zero_copy("two.onnx");
    check_zero_copy("a.onnxz");
    check_threads("a.onnxz");
    check_threads("n.onnx");
    check_prefetch("one.onnx");
    check_prefetch("two.onnx");
    check_prefetch("n.onnx");
    check_prefetch("a.onnxz");
    check_cold_archive();
    open_fails("empty", NULL, OC_ERR_MALFORMED, "empty file, not an ONNX model", OZ_KIND_EMPTY);
    open_fails("short.zip", NULL, OC_ERR_TRUNCATED, NULL, OZ_KIND_ZIP_SHORT);
    open_fails("short.enc", NULL, OC_ERR_TRUNCATED, "ends inside the magic", OZ_KIND_CRYPT_SHORT);
    open_fails("missing", NULL, OC_ERR_NOT_FOUND, NULL, OZ_KIND_MODEL);
    check_skip_data_files();
    check_encrypted();
    check_options();
    check_unchanged();
    check_typed_sizes();

    td_remove(td_dir);
    return check_report("test_reader");
}
