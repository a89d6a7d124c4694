/*
 * test_read_many.c - oz_reader_read_many (onnxz/read_many.h) over every form a reader
 * opens (a .onnx with inline data, with one data file and split over several, an archive,
 * encrypted files): every tensor whole and slices of two, on 1, 2 and all threads,
 * compared with what oz_reader_read and oz_reader_read_slice give; typed fields; a tensor
 * larger than the chunk the threads share; every refusal made before any buffer is
 * written; a data file renamed over (the bytes of the file opened, L-2) and one cut in
 * place (an error naming the tensor and the file, not a fault: the bytes are read with
 * pread, not through the mapping); a cancel. An archive whose tensors are DEFLATED, each
 * sliced several ways: every request inflated as a stream into its buffer, the same bytes
 * as oz_reader_read_slice gives.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <onnxcore/crypto.h>
#include <onnxcore/onnxcore.h>
#include <onnxz/convert.h>
#include <onnxz/read_many.h>
#include <onnxz/zip.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"
#include "testarchive.h"

static oc_error err;
static const char pass[] = "open sesame";
static uint64_t salt; /* added to every seed: other bytes under the same names */

/* "big" UINT8 [BIG_ROWS, BIG_COLS]: 5 MiB, more than the 4 MiB a thread takes at once. */
enum { BIG_ROWS = 1280, BIG_COLS = 4096 + 3 };

/* big; "cube" UINT8 [20, 15, 8]; "small" (10 bytes, inline in every form); "typed" FLOAT
 * [4, 3] in float_data; "empty" UINT8 [0]. */
static void save(const char *name, const char *data, uint64_t split) {
    oc_model *m = tm_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_GraphProto *g = oc_model_proto(m)->graph;
    ta_set_dims(a, tm_add_bytes(a, g, "big", (uint64_t)BIG_ROWS * BIG_COLS, 1 + salt),
                (const int64_t[]){BIG_ROWS, BIG_COLS}, 2);
    ta_set_dims(a, tm_add_bytes(a, g, "cube", 20 * 15 * 8, 2 + salt), (const int64_t[]){20, 15, 8},
                3);
    tm_add_bytes(a, g, "small", 10, 3 + salt);
    tm_add_bytes(a, g, "empty", 0, 4 + salt);
    onnx_TensorProto *ty = tm_add_bytes(a, g, "typed", 1, 5);
    ty->data_type = 1;
    ta_set_dims(a, ty, (const int64_t[]){4, 3}, 2);
    oc_bytes_release(&ty->raw_data);
    OC_CLEAR_HAS(TensorProto, ty, raw_data);
    for (int i = 0; i < 12; i++) {
        float *v = oc_array_push(a, &ty->float_data, sizeof(float));
        if (v) *v = (float)i + 0.25f + (float)salt;
    }
    oz_archive_options o = OZ_ARCHIVE_OPTIONS_INIT;
    o.serialize.external_data = data;
    o.serialize.max_external_file_size = split;
    CHECK_STATUS(oz_save_any(m, td_at(name), OZ_FORM_AUTO, &o, &err), OC_OK, &err);
    oc_model_free(m);
}

static oz_reader *open_reader(const char *name, const char *key) {
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    oz_reader *r = NULL;
    o.key = key;
    o.key_len = key ? strlen(key) : 0;
    CHECK_STATUS(oz_reader_open(td_at(name), &o, &r, NULL, &err), OC_OK, &err);
    return r;
}

static const onnx_TensorProto *find(oz_reader *r, const char *name) {
    const onnx_TensorProto *t = oz_reader_find(r, name, strlen(name));
    CHECK(t != NULL);
    return t;
}

/* The requests of a form: every tensor whole, then slices of big and cube; with what
 * oz_reader_read and oz_reader_read_slice give for each. */
#define NSLICES 5
typedef struct set {
    oz_read_request q[16];
    oc_bytes want[16];
    oz_slice *slices[NSLICES];
    size_t n;
} set;

static void add(set *s, const onnx_TensorProto *t, oz_slice *sl, oz_reader *r) {
    oz_read_request *q = &s->q[s->n];
    oc_bytes *w = &s->want[s->n];
    if (sl) {
        CHECK_STATUS(oz_reader_read_slice(r, sl, w, &err), OC_OK, &err);
        *q = (oz_read_request){NULL, sl, NULL, oz_slice_size(sl)};
    } else {
        CHECK_STATUS(oz_reader_read(r, t, w, &err), OC_OK, &err);
        *q = (oz_read_request){t, NULL, NULL, w->size};
    }
    q->dst = malloc(q->size ? q->size : 1);
    CHECK(q->dst != NULL);
    s->n++;
}

static void set_make(set *s, oz_reader *r) {
    memset(s, 0, sizeof *s);
    for (uint64_t i = 0; i < oz_reader_count(r); i++) add(s, oz_reader_at(r, i), NULL, r);
    const oz_slice_range all = OZ_SLICE_ALL;
    struct {
        const char *tensor;
        oz_slice_range rs[3];
        size_t count;
    } cases[NSLICES] = {
        {"big", {{100, 1200, 1, false}}, 1},                      /* one run of 4.3 MiB */
        {"big", {{0, BIG_ROWS, 7, false}, {5, -5, 1, false}}, 2}, /* runs apart */
        {"cube", {all, {2, 9, 1, false}}, 2},                     /* a middle part */
        {"cube", {{3, 0, 1, true}, all, {1, 8, 3, false}}, 3},
        {"big", {{7, 7, 1, false}}, 1}, /* empty */
    };
    for (size_t k = 0; k < NSLICES; k++) {
        const onnx_TensorProto *t = find(r, cases[k].tensor);
        CHECK_STATUS(oz_slice_new(t, cases[k].rs, cases[k].count, &s->slices[k], &err), OC_OK,
                     &err);
        if (s->slices[k]) add(s, NULL, s->slices[k], r);
    }
}

static void set_free(set *s) {
    for (size_t i = 0; i < s->n; i++) {
        free(s->q[i].dst);
        oc_bytes_release(&s->want[i]);
    }
    for (size_t k = 0; k < NSLICES; k++) oz_slice_free(s->slices[k]);
}

static void clear(set *s, int byte) {
    for (size_t i = 0; i < s->n; i++) memset(s->q[i].dst, byte, s->q[i].size);
}

/* Every buffer of s holds what it should. */
static void check_same(const set *s, const char *form, int threads) {
    for (size_t i = 0; i < s->n; i++) {
        const oz_read_request *q = &s->q[i];
        if (!CHECK(q->size == s->want[i].size &&
                   (!q->size || memcmp(q->dst, s->want[i].data, q->size) == 0)))
            fprintf(stderr, "  %s, %d threads: request %zu (%llu bytes) differs\n", form, threads,
                    i, (unsigned long long)q->size);
    }
}

static void check_form(const char *name, const char *key) {
    oz_reader *r = open_reader(name, key);
    if (!r) return;
    set s;
    set_make(&s, r);
    CHECK(s.n == 5 + NSLICES);
    static const int threads[] = {0, 1, 2, -1};
    for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
        oz_read_many_options o = OZ_READ_MANY_OPTIONS_INIT;
        o.num_threads = threads[k];
        clear(&s, 0xEE);
        CHECK_STATUS(oz_reader_read_many(r, s.q, s.n, &o, &err), OC_OK, &err);
        check_same(&s, name, threads[k]);
    }
    clear(&s, 0x11); /* NULL options: the defaults */
    CHECK_STATUS(oz_reader_read_many(r, s.q, s.n, NULL, &err), OC_OK, &err);
    check_same(&s, name, 1);
    CHECK_STATUS(oz_reader_read_many(r, s.q, 0, NULL, &err), OC_OK, &err);
    set_free(&s);
    oz_reader_close(r);
}

/* Each wrong request refused before a byte of any buffer is written. */
static void refuse(oz_reader *r, set *s, size_t i, oz_read_request bad, const char *says) {
    oz_read_request keep = s->q[i];
    clear(s, 0xEE);
    s->q[i] = bad;
    CHECK_STATUS(oz_reader_read_many(r, s->q, s->n, NULL, &err), OC_ERR_INVALID_ARG, &err);
    if (!CHECK(strstr(err.message, says) != NULL))
        fprintf(stderr, "  message '%s' lacks '%s'\n", err.message, says);
    s->q[i] = keep;
    for (size_t k = 0; k < s->n; k++)
        for (uint64_t b = 0; b < s->q[k].size; b += 4093)
            if (!CHECK(((uint8_t *)s->q[k].dst)[b] == 0xEE)) return;
}

static void check_refusals(void) {
    oz_reader *r = open_reader("two.onnx", NULL);
    if (!r) return;
    set s;
    set_make(&s, r);
    size_t last = s.n - 2; /* a slice of cube */
    oz_read_request q = s.q[0];
    q.size++;
    refuse(r, &s, 0, q, "a buffer of 5246721 bytes for the 5246720 bytes of the tensor");
    q.size -= 2;
    refuse(r, &s, 0, q, "'big': a buffer of 5246719 bytes");
    q = s.q[last];
    q.size = 1;
    refuse(r, &s, last, q, "for the 45 bytes of its slice");
    q.tensor = s.q[1].tensor;
    refuse(r, &s, last, q, "names both a tensor and a slice");
    q = s.q[1];
    q.tensor = NULL;
    refuse(r, &s, 1, q, "names neither");
    q = s.q[1];
    q.dst = NULL;
    refuse(r, &s, 1, q, "no buffer");
    oz_read_many_options o = OZ_READ_MANY_OPTIONS_INIT;
    o.size = 4097; /* garbage */
    CHECK_STATUS(oz_reader_read_many(r, s.q, s.n, &o, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_reader_read_many(NULL, s.q, s.n, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_reader_read_many(r, NULL, 1, NULL, &err), OC_ERR_INVALID_ARG, &err);
    set_free(&s);
    oz_reader_close(r);
}

static int calls;
static int stop_now(void *ctx) {
    calls++;
    return *(int *)ctx;
}

/* The caller's cancel is asked on its thread; nonzero stops the reads. */
static void check_cancel(const char *name) {
    oz_reader *r = open_reader(name, NULL);
    if (!r) return;
    set s;
    set_make(&s, r);
    int stop = 0;
    oz_read_many_options o = OZ_READ_MANY_OPTIONS_INIT;
    o.num_threads = 1; /* the caller's thread takes the first chunk: it is asked then */
    o.cancel = stop_now;
    o.cancel_ctx = &stop;
    CHECK_STATUS(oz_reader_read_many(r, s.q, s.n, &o, &err), OC_OK, &err);
    CHECK(calls >= 1);
    check_same(&s, name, 2);
    stop = 1;
    CHECK_STATUS(oz_reader_read_many(r, s.q, s.n, &o, &err), OC_ERR_CANCELLED, &err);
    CHECK(strstr(err.message, "tensor '") && strstr(err.message, "cancelled"));
    set_free(&s);
    oz_reader_close(r);
}

/* Files changed under an open reader: one renamed over changes nothing (the bytes of the
 * file opened, as oz_reader_read's); a data file cut in place is an error naming the
 * tensor and the file. */
static void check_replaced(const char *model, const char *file) {
    oz_reader *r = open_reader(model, NULL);
    if (!r) return;
    set s;
    set_make(&s, r);
    bool archive = strcmp(file, model) == 0; /* else file is the model's data file */
    salt = 100;
    save(archive ? "other.onnxz" : "other.onnx", archive ? NULL : "other.data", 0);
    salt = 0;
    CHECK(rename(td_at(archive ? "other.onnxz" : "other.data"), td_at(file)) == 0);
    clear(&s, 0xEE);
    CHECK_STATUS(oz_reader_read_many(r, s.q, s.n, NULL, &err), OC_OK, &err);
    check_same(&s, "renamed over", 1);
    set_free(&s);
    oz_reader_close(r);

    /* cut in place, under a reader opened on the new file (a data file: an archive cut
     * takes its model, whose names lie in the mapping, with it) */
    if (archive) return;
    r = open_reader(model, NULL);
    if (!r) return;
    const onnx_TensorProto *big = find(r, "big");
    uint8_t *buf = malloc((uint64_t)BIG_ROWS * BIG_COLS);
    oz_read_request q = {big, NULL, buf, (uint64_t)BIG_ROWS * BIG_COLS};
    int fd = open(td_at(file), O_WRONLY);
    CHECK(fd >= 0 && ftruncate(fd, 4096) == 0);
    if (fd >= 0) close(fd);
    oz_read_many_options o = OZ_READ_MANY_OPTIONS_INIT;
    o.num_threads = 2;
    CHECK_STATUS(oz_reader_read_many(r, &q, 1, &o, &err), OC_ERR_TRUNCATED, &err);
    if (!CHECK(strstr(err.message, "tensor 'big'") && strstr(err.message, file) &&
               strstr(err.message, "cut short") && err.file_len > 0))
        fprintf(stderr, "  message: %s\n", err.message);
    free(buf);
    oz_reader_close(r);
}

/* A copy of archive `in` whose tensor entries are DEFLATED (a layout A-3 refuses, which
 * other writers make and readers take). */
/* Slices of big in archive `name` (its entries DEFLATED) read together, some in one pass
 * of the entry (they end before it does), some each alone (together they take all of the
 * entry, but none takes all of it: one pass would check its CRC, Z-79), equal to
 * oz_reader_read_slice. */
static void check_passes(const char *name) {
    oz_reader *r = open_reader(name, NULL);
    if (!r) return;
    const onnx_TensorProto *t = find(r, "big");
    static const oz_slice_range cases[][2] = {
        {{3, 5, 1, false}, {0, 9, 1, false}}, /* one pass */
        {{100, 1200, 7, false}, {-9, INT64_MAX, 1, false}},
        {{9, 9, 1, false}, {0, 1, 1, false}}, /* empty */
        {{0, 2, 1, false}, {0, 1, 1, false}}, /* each alone */
        {{-1, 0, 1, true}, {-1, INT64_MAX, 1, false}},
    };
    enum { N = sizeof cases / sizeof cases[0] };
    oz_slice *sl[N] = {0};
    oz_read_request q[N];
    oc_bytes want[N] = {{0}};
    for (size_t k = 0; k < N; k++) {
        CHECK_STATUS(oz_slice_new(t, cases[k], 2, &sl[k], &err), OC_OK, &err);
        if (sl[k]) CHECK_STATUS(oz_reader_read_slice(r, sl[k], &want[k], &err), OC_OK, &err);
        q[k] =
            (oz_read_request){NULL, sl[k], malloc(oz_slice_size(sl[k]) + 1), oz_slice_size(sl[k])};
    }
    for (size_t n = 3; n <= N; n += 2) { /* the first three in one pass, then all */
        for (size_t k = 0; k < n; k++) memset(q[k].dst, 0xEE, q[k].size);
        CHECK_STATUS(oz_reader_read_many(r, q, n, NULL, &err), OC_OK, &err);
        for (size_t k = 0; k < n; k++)
            if (!CHECK(q[k].size == want[k].size &&
                       (!q[k].size || memcmp(q[k].dst, want[k].data, q[k].size) == 0)))
                fprintf(stderr, "  %s: %zu requests, request %zu differs\n", name, n, k);
    }
    for (size_t k = 0; k < N; k++) {
        free(q[k].dst);
        oc_bytes_release(&want[k]);
        oz_slice_free(sl[k]);
    }
    oz_reader_close(r);
}

static void encrypt(const char *in, const char *out, oc_crypt_format format) {
    CHECK_OK(tm_encrypt_file(td_at(in), td_at(out), pass, format, &err), &err);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "read_many") != 0) return 2;
    save("one.onnx", NULL, 0);
    save("two.onnx", "two.data", 0);
    save("many.onnx", "many.data", 4096); /* big in a file of its own, the others in more */
    save("a.onnxz", NULL, 0);
    check_form("one.onnx", NULL);
    check_form("two.onnx", NULL);
    check_form("many.onnx", NULL);
    check_form("a.onnxz", NULL);
    ta_deflate_copy("a.onnxz", "d.onnxz", &err);
    check_form("d.onnxz", NULL);
    check_passes("d.onnxz");
    check_passes("a.onnxz");
    if (oc_crypt_available()) {
        encrypt("two.onnx", "two.zec1", OC_CRYPT_ONNXZEC1);
        encrypt("a.onnxz", "a.cry1", OC_CRYPT_ONNXCRY1);
        check_form("two.zec1", pass);
        check_form("a.cry1", pass);
    }
    check_refusals();
    check_cancel("a.onnxz");
    check_cancel("d.onnxz");
    check_replaced("two.onnx", "two.data");
    check_replaced("a.onnxz", "a.onnxz");
    td_remove(td_dir);
    return check_report("test_read_many");
}
