/*
 * test_slice.c - slices of tensors (onnxz/slice.h) planned and read over every form a
 * reader opens (a .onnx with inline and with external data, an archive, encrypted files):
 * random slices of a 3-d tensor compared with an element-by-element gather of the whole
 * tensor (an archive's tensors STORED, and DEFLATED: inflated as a stream), the runs a
 * plan makes, a leading slice shared with the mapping (no copy), typed fields, sub-byte
 * types on and off byte boundaries, and every refusal: bad indices, steps, a small
 * buffer, STRING, hostile dims.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onnxcore/crypto.h>
#include <onnxcore/onnxcore.h>
#include <onnxz/convert.h>
#include <onnxz/slice.h>
#include <onnxz/zip.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"
#include "testarchive.h"

static oc_error err;
static const char pass[] = "open sesame";

/* The cube: UINT8 [D0, D1, D2], over the external-data threshold. */
enum { D0 = 20, D1 = 15, D2 = 8 };
static const int64_t cube_dims[3] = {D0, D1, D2};

/* cube; "f32" FLOAT [30, 16]; "i4" INT4 [40, 64] (packed, 1280 bytes); "i4odd" INT4
 * [3, 3] (9 elements: 5 bytes, the last half padding, W-40); "typed" FLOAT [4, 3] in
 * float_data. */
static void save(const char *name, const char *data) {
    oc_model *m = tm_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_GraphProto *g = oc_model_proto(m)->graph;
    ta_set_dims(a, tm_add_bytes(a, g, "cube", D0 * D1 * D2, 1), cube_dims, 3);
    onnx_TensorProto *f = tm_add_bytes(a, g, "f32", 30 * 16 * 4, 2);
    f->data_type = 1;
    ta_set_dims(a, f, (const int64_t[]){30, 16}, 2);
    onnx_TensorProto *i4 = tm_add_bytes(a, g, "i4", 40 * 64 / 2, 3);
    i4->data_type = 22; /* INT4 */
    ta_set_dims(a, i4, (const int64_t[]){40, 64}, 2);
    onnx_TensorProto *odd = tm_add_bytes(a, g, "i4odd", 5, 5);
    odd->data_type = 22;
    ta_set_dims(a, odd, (const int64_t[]){3, 3}, 2);
    onnx_TensorProto *ty = tm_add_bytes(a, g, "typed", 1, 4);
    ty->data_type = 1;
    ta_set_dims(a, ty, (const int64_t[]){4, 3}, 2);
    oc_bytes_release(&ty->raw_data);
    OC_CLEAR_HAS(TensorProto, ty, raw_data);
    for (int i = 0; i < 12; i++) {
        float *v = oc_array_push(a, &ty->float_data, sizeof(float));
        if (v) *v = (float)i + 0.5f;
    }
    oz_archive_options o = OZ_ARCHIVE_OPTIONS_INIT;
    o.serialize.external_data = data;
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

/* The oracle: the slice gathered element by element from the whole tensor's bytes, with
 * Python's rules spelled out again. Returns the bytes written to out (es each element). */
static uint64_t gather(const uint8_t *whole, const int64_t *dims, size_t n, size_t es,
                       const oz_slice_range *rs, size_t count, uint8_t *out) {
    int64_t start[8], cnt[8], step[8];
    uint64_t total = 1, w = 0;
    for (size_t d = 0; d < n; d++) {
        oz_slice_range rg = d < count ? rs[d] : (oz_slice_range)OZ_SLICE_ALL;
        int64_t lo = rg.start, hi = rg.stop;
        if (rg.index) {
            start[d] = lo < 0 ? lo + dims[d] : lo, cnt[d] = 1, step[d] = 1;
        } else {
            if (lo < 0) lo = lo + dims[d] < 0 ? 0 : lo + dims[d];
            if (hi < 0) hi = hi + dims[d] < 0 ? 0 : hi + dims[d];
            if (lo > dims[d]) lo = dims[d];
            if (hi > dims[d]) hi = dims[d];
            start[d] = lo, step[d] = rg.step;
            cnt[d] = hi > lo ? (hi - lo - 1) / rg.step + 1 : 0;
        }
        total *= (uint64_t)cnt[d];
    }
    for (uint64_t e = 0; e < total; e++) {
        uint64_t rest = e, src = 0, stride = 1;
        for (size_t d = n; d-- > 0;) {
            uint64_t i = rest % (uint64_t)cnt[d];
            rest /= (uint64_t)cnt[d];
            src += ((uint64_t)start[d] + i * (uint64_t)step[d]) * stride;
            stride *= (uint64_t)dims[d];
        }
        memcpy(out + w, whole + src * es, es);
        w += es;
    }
    return w;
}

static uint32_t rng = 12345;
static int64_t rnd(int64_t lo, int64_t hi) { /* in [lo, hi] */
    rng = rng * 1103515245u + 12345u;
    return lo + (int64_t)((rng >> 8) % (uint32_t)(hi - lo + 1));
}

static oz_slice_range random_range(int64_t dim) {
    oz_slice_range rg = OZ_SLICE_ALL;
    switch (rnd(0, 4)) {
    case 0:
        return rg;
    case 1:
        return (oz_slice_range){rnd(-dim, dim - 1), 0, 1, true};
    default:
        rg.start = rnd(-dim - 3, dim + 3);
        rg.stop = rnd(0, 5) == 0 ? INT64_MAX : rnd(-dim - 3, dim + 3);
        rg.step = rnd(0, 2) ? 1 : rnd(1, 5);
        return rg;
    }
}

/* A copy of archive `in` whose tensor entries are DEFLATED (a layout A-3 refuses, which
 * other writers make and readers take): its slices are inflated as a stream (Z-79). */
/* One slice of t read three ways (a span, into a buffer, the oracle), all the same. */
static void check_one(oz_reader *r, const onnx_TensorProto *t, const uint8_t *whole,
                      const int64_t *dims, size_t n, size_t es, const oz_slice_range *rs,
                      size_t count, const char *form) {
    static uint8_t want[D0 * D1 * D2 * 4], into[D0 * D1 * D2 * 4];
    oz_slice *s = NULL;
    CHECK_STATUS(oz_slice_new(t, rs, count, &s, &err), OC_OK, &err);
    if (!s) return;
    uint64_t n_want = gather(whole, dims, n, es, rs, count, want);
    oc_bytes b = {0};
    CHECK_STATUS(oz_reader_read_slice(r, s, &b, &err), OC_OK, &err);
    CHECK_STATUS(oz_reader_read_slice_into(r, s, into, sizeof into, &err), OC_OK, &err);
    uint64_t elements = 1;
    for (size_t d = 0; d < oz_slice_rank(s); d++) elements *= (uint64_t)oz_slice_dims(s)[d];
    bool same =
        b.size == n_want && oz_slice_size(s) == n_want && elements * es == n_want &&
        (n_want == 0 || (memcmp(b.data, want, n_want) == 0 && memcmp(into, want, n_want) == 0));
    if (!CHECK(same)) {
        fprintf(stderr, "  %s: slice of %zu ranges:", form, count);
        for (size_t d = 0; d < count; d++)
            fprintf(stderr, " [%lld %lld %lld %d]", (long long)rs[d].start, (long long)rs[d].stop,
                    (long long)rs[d].step, rs[d].index);
        fprintf(stderr, "\n");
    }
    oc_bytes_release(&b);
    oz_slice_free(s);
}

/* Random slices of the cube and of f32, and the typed tensor's, in one form. */
static void check_form(const char *name, const char *key) {
    oz_reader *r = open_reader(name, key);
    if (!r) return;
    static const char *names[] = {"cube", "f32", "typed"};
    for (size_t k = 0; k < 3; k++) {
        const onnx_TensorProto *t = find(r, names[k]);
        oc_bytes whole = {0};
        CHECK_STATUS(oz_reader_read(r, t, &whole, &err), OC_OK, &err);
        if (!t || !whole.size) continue;
        size_t n = (size_t)t->dims.count, es = k == 0 ? 1 : 4;
        for (int i = 0; i < 150; i++) {
            oz_slice_range rs[3];
            size_t count = (size_t)rnd(0, (int64_t)n);
            for (size_t d = 0; d < count; d++) rs[d] = random_range(t->dims.items[d]);
            check_one(r, t, whole.data, t->dims.items, n, es, rs, count, name);
        }
        oc_bytes_release(&whole);
    }
    oz_reader_close(r);
}

/* The runs a plan makes, and where they lie. */
static void check_runs(void) {
    oz_reader *r = open_reader("one.onnx", NULL);
    if (!r) return;
    const onnx_TensorProto *t = find(r, "cube");
    struct {
        oz_slice_range rs[3];
        size_t count;
        uint64_t runs, first_at, run_size;
    } cases[] = {
        {{{2, 5, 1, false}}, 1, 1, 2 * D1 * D2, 3 * D1 * D2}, /* leading rows */
        {{{3, 0, 1, true}}, 1, 1, 3 * D1 * D2, D1 * D2},      /* an index */
        {{{3, 0, 1, true}, {4, 6, 1, false}}, 2, 1, 3 * D1 * D2 + 4 * D2, 2 * D2},
        {{OZ_SLICE_ALL, {1, 3, 1, false}}, 2, D0, D2, 2 * D2}, /* a middle part */
        {{{0, 4, 2, false}}, 1, 2, 0, D1 * D2},                /* a step */
        {{OZ_SLICE_ALL, OZ_SLICE_ALL, {0, 1, 1, true}}, 3, D0 * D1, 0, 1},
        {{{5, 5, 1, false}}, 1, 0, 0, 0}, /* empty */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        oz_slice *s = NULL;
        CHECK_STATUS(oz_slice_new(t, cases[i].rs, cases[i].count, &s, &err), OC_OK, &err);
        if (!s) continue;
        uint64_t at = 0, size = 0;
        if (oz_slice_runs(s)) oz_slice_run(s, 0, &at, &size);
        if (!CHECK(oz_slice_runs(s) == cases[i].runs && at == cases[i].first_at &&
                   size == cases[i].run_size))
            fprintf(stderr, "  case %zu: %llu runs, the first %llu at %llu\n", i,
                    (unsigned long long)oz_slice_runs(s), (unsigned long long)size,
                    (unsigned long long)at);
        oz_slice_free(s);
    }
    oz_reader_close(r);
}

/* A leading slice of a mapped tensor is a span of the mapping, inside the whole one. */
static void check_zero_copy(const char *name) {
    oz_reader *r = open_reader(name, NULL);
    if (!r) return;
    const onnx_TensorProto *t = find(r, "cube");
    oc_bytes whole = {0}, part = {0};
    oz_slice *s = NULL;
    oz_slice_range rs[1] = {{4, 9, 1, false}};
    CHECK_STATUS(oz_reader_read(r, t, &whole, &err), OC_OK, &err);
    CHECK_STATUS(oz_slice_new(t, rs, 1, &s, &err), OC_OK, &err);
    CHECK_STATUS(oz_reader_read_slice(r, s, &part, &err), OC_OK, &err);
    CHECK(part.mode == OC_BYTES_SHARED && part.data == whole.data + 4 * D1 * D2);
    oz_slice_free(s);
    oz_reader_close(r);
    CHECK(part.size == 5 * D1 * D2 && part.data[0] == tm_byte(4 * D1 * D2, 1)); /* outlives r */
    oc_bytes_release(&part);
    oc_bytes_release(&whole);
}

/* INT4: rows (an even count of elements each) are read; a part of a byte is refused. */
static void check_sub_byte(void) {
    oz_reader *r = open_reader("a.onnxz", NULL);
    if (!r) return;
    const onnx_TensorProto *t = find(r, "i4");
    oz_slice *s = NULL;
    oz_slice_range rows[2] = {{3, 7, 1, false}, {10, 20, 1, false}};
    CHECK_STATUS(oz_slice_new(t, rows, 2, &s, &err), OC_OK, &err);
    oc_bytes b = {0};
    CHECK_STATUS(oz_reader_read_slice(r, s, &b, &err), OC_OK, &err);
    CHECK(b.size == 4 * 5);
    for (uint64_t i = 0; i < b.size; i++)
        CHECK(b.data[i] == tm_byte((3 + i / 5) * 32 + 5 + i % 5, 3));
    oc_bytes_release(&b);
    oz_slice_free(s);
    rows[1] = (oz_slice_range){3, 20, 1, false};
    CHECK_STATUS(oz_slice_new(t, rows, 2, &s, &err), OC_ERR_UNSUPPORTED, &err);
    CHECK(s == NULL && strstr(err.message, "'i4'") && strstr(err.message, "INT4"));
    rows[1] = (oz_slice_range){0, 64, 3, false};
    CHECK_STATUS(oz_slice_new(t, rows, 2, &s, &err), OC_ERR_UNSUPPORTED, &err);
    oz_reader_close(r);
}

/* One slice of "i4odd" (INT4 [3, 3]): its bytes are want's first n, or it is refused
 * (n < 0) as splitting bytes. */
static void check_odd(oz_reader *r, const onnx_TensorProto *t, const oz_slice_range *rs,
                      size_t count, const uint8_t *want, int n) {
    oz_slice *s = NULL;
    oc_status st = oz_slice_new(t, rs, count, &s, &err);
    if (n < 0) {
        CHECK(st == OC_ERR_UNSUPPORTED && s == NULL && strstr(err.message, "splits bytes"));
        return;
    }
    CHECK_STATUS(st, OC_OK, &err);
    if (!s) return;
    oc_bytes b = {0};
    uint8_t into[8];
    CHECK(oz_slice_size(s) == (uint64_t)n);
    CHECK_STATUS(oz_reader_read_slice(r, s, &b, &err), OC_OK, &err);
    CHECK(b.size == (size_t)n && memcmp(b.data, want, (size_t)n) == 0);
    CHECK_STATUS(oz_reader_read_slice_into(r, s, into, sizeof into, &err), OC_OK, &err);
    CHECK(memcmp(into, want, (size_t)n) == 0);
    oc_bytes_release(&b);
    oz_slice_free(s);
}

/* INT4 of an odd element count: a part that ends at the tensor's end ends on its padded
 * last byte, so it is read (the whole tensor too, as oz_reader_read gives it); a part
 * that ends inside a byte elsewhere is refused. */
static void check_sub_byte_end(const char *name) {
    oz_reader *r = open_reader(name, NULL);
    if (!r) return;
    const onnx_TensorProto *t = find(r, "i4odd");
    oc_bytes whole = {0};
    CHECK_STATUS(oz_reader_read(r, t, &whole, &err), OC_OK, &err);
    CHECK(whole.size == 5);
    const oz_slice_range all = OZ_SLICE_ALL;
    check_odd(r, t, NULL, 0, whole.data, 5);
    check_odd(r, t, (const oz_slice_range[]){{0, 3, 1, false}, all}, 2, whole.data, 5);
    check_odd(r, t, (const oz_slice_range[]){{-1, 0, 1, true}}, 1, whole.data + 3, 2);
    check_odd(r, t, (const oz_slice_range[]){{0, 2, 1, false}}, 1, whole.data, 3);
    check_odd(r, t, (const oz_slice_range[]){{2, 0, 1, true}, {2, 3, 1, false}}, 2, whole.data + 4,
              1);
    check_odd(r, t, (const oz_slice_range[]){{0, 1, 1, false}}, 1, NULL, -1); /* ends at 3 */
    check_odd(r, t, (const oz_slice_range[]){{1, 3, 1, false}}, 1, NULL, -1); /* from 3 */
    check_odd(r, t, (const oz_slice_range[]){all, {2, 3, 1, false}}, 2, NULL, -1);
    oc_bytes_release(&whole);
    oz_reader_close(r);
}

static void refuse(const onnx_TensorProto *t, const oz_slice_range *rs, size_t count,
                   oc_status status, const char *says) {
    oz_slice *s = (oz_slice *)&err; /* must come back NULL */
    CHECK_STATUS(oz_slice_new(t, rs, count, &s, &err), status, &err);
    CHECK(s == NULL);
    if (says && !CHECK(strstr(err.message, says) != NULL))
        fprintf(stderr, "  message '%s' lacks '%s'\n", err.message, says);
}

/* Every refusal, each before a byte is read. */
static void check_refusals(void) {
    oz_reader *r = open_reader("two.onnx", NULL);
    if (!r) return;
    const onnx_TensorProto *t = find(r, "cube");
    oz_slice_range rs[4] = {OZ_SLICE_ALL, OZ_SLICE_ALL, OZ_SLICE_ALL, OZ_SLICE_ALL};
    refuse(t, rs, 4, OC_ERR_INVALID_ARG, "4 indices for its 3 dimensions");
    rs[1] = (oz_slice_range){0, 5, 0, false};
    refuse(t, rs, 2, OC_ERR_INVALID_ARG, "dimension 1: step 0");
    rs[1] = (oz_slice_range){5, 0, -1, false};
    refuse(t, rs, 2, OC_ERR_INVALID_ARG, "step -1");
    rs[1] = (oz_slice_range){D1, 0, 1, true};
    refuse(t, rs, 2, OC_ERR_INVALID_ARG, "index 15 is outside dimension 1");
    rs[1] = (oz_slice_range){-D1 - 1, 0, 1, true};
    refuse(t, rs, 2, OC_ERR_INVALID_ARG, "outside dimension 1");
    rs[1] = (oz_slice_range){INT64_MIN, 0, 1, true};
    refuse(t, rs, 2, OC_ERR_INVALID_ARG, "outside dimension 1");
    rs[1] = (oz_slice_range){INT64_MIN, INT64_MAX, INT64_MAX, false}; /* clamped: row 0 */
    oz_slice *s = NULL;
    CHECK_STATUS(oz_slice_new(t, rs, 2, &s, &err), OC_OK, &err);
    CHECK(oz_slice_size(s) == D0 * D2);
    uint8_t small[8];
    CHECK_STATUS(oz_reader_read_slice_into(r, s, small, sizeof small, &err), OC_ERR_INVALID_ARG,
                 &err);
    oz_slice_free(s);

    /* hostile dims on a tensor of our own: negative, a product past 2^64, STRING */
    onnx_TensorProto h = *t;
    int64_t neg[3] = {D0, -1, D2}, huge[3] = {INT64_MAX, INT64_MAX, 4};
    h.dims.items = neg;
    refuse(&h, NULL, 0, OC_ERR_MALFORMED, "dim 1 is negative");
    h.dims.items = huge;
    refuse(&h, NULL, 0, OC_ERR_MALFORMED, "more than 2^64 - 1");
    h.dims.items = (int64_t *)cube_dims;
    h.data_type = 8;
    refuse(&h, NULL, 0, OC_ERR_UNSUPPORTED, "STRING");
    oz_reader_close(r);
}

static void encrypt(const char *in, const char *out, oc_crypt_format format) {
    CHECK_OK(tm_encrypt_file(td_at(in), td_at(out), pass, format, &err), &err);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "slice") != 0) return 2;
    save("one.onnx", NULL);
    save("two.onnx", "two.data");
    save("a.onnxz", NULL);
    check_form("one.onnx", NULL);
    check_form("two.onnx", NULL);
    check_form("a.onnxz", NULL);
    ta_deflate_copy("a.onnxz", "d.onnxz", &err);
    check_form("d.onnxz", NULL);
    if (oc_crypt_available()) {
        encrypt("two.onnx", "two.zec1", OC_CRYPT_ONNXZEC1);
        encrypt("a.onnxz", "a.cry1", OC_CRYPT_ONNXCRY1);
        check_form("two.zec1", pass);
        check_form("a.cry1", pass);
    }
    check_runs();
    check_zero_copy("two.onnx");
    check_zero_copy("a.onnxz");
    check_sub_byte();
    check_sub_byte_end("one.onnx");
    check_sub_byte_end("a.onnxz");
    check_sub_byte_end("d.onnxz");
    check_refusals();
    td_remove(td_dir);
    return check_report("test_slice");
}
