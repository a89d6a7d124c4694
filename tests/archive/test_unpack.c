/*
 * test_unpack.c - an archive unpacked into a directory as one library call
 * (onnxz/unpack.h, spec/onnxz.md A-30): model.onnx and one file per entry, which load to
 * the archive's model; the refusals before anything is written (a DIR not empty, not a
 * directory; an archive that is none), naming the right side; a cancel half-way takes
 * back exactly what the call created, in a new DIR and in one that held a file already.
 *
 * usage: test_unpack WORKDIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/onnxz.h>

#include "check.h"
#include "testdir.h"

enum { BIG = 3000, TENSORS = 5 };

static void add_raw(oc_arena *a, onnx_GraphProto *g, const char *name, uint64_t n) {
    onnx_TensorProto *t = OC_ADD(a, TensorProto, g->initializer);
    uint8_t *p;
    oc_str_set_cstr(a, &t->name, name);
    OC_SET_HAS(TensorProto, t, name);
    t->data_type = 2; /* UINT8 */
    OC_SET_HAS(TensorProto, t, data_type);
    int64_t *d = oc_array_push(a, &t->dims, sizeof(int64_t));
    if (d) *d = (int64_t)n;
    if (oc_bytes_set_alloc(&t->raw_data, n, &p, NULL) != OC_OK) return;
    for (uint64_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 7 + n);
    OC_SET_HAS(TensorProto, t, raw_data);
}

static oc_model *make_model(void) {
    oc_model *m = oc_model_new();
    onnx_ModelProto *mp = oc_model_proto(m);
    char name[16];
    mp->ir_version = 10;
    OC_SET_HAS(ModelProto, mp, ir_version);
    mp->graph = OC_NEW(oc_model_arena(m), GraphProto);
    for (int i = 0; i < TENSORS; i++) {
        snprintf(name, sizeof name, "w%d", i);
        add_raw(oc_model_arena(m), mp->graph, name, BIG + (uint64_t)i);
    }
    return m;
}

static char dir[4096];

static const char *at(const char *name) {
    static char buf[4][4200];
    static int k;
    k = (k + 1) & 3;
    snprintf(buf[k], sizeof buf[k], "%.4000s/%.150s", dir, name);
    return buf[k];
}

/* The model at path has the source's tensors. */
static void check_loads(const oc_model *src, const char *path) {
    oc_model *m = NULL;
    oc_error err;
    CHECK_OK(oz_open(path, NULL, &m, NULL, &err), &err);
    if (!m) return;
    const onnx_GraphProto *g = oc_model_proto(m)->graph, *w = oc_model_proto_const(src)->graph;
    if (CHECK(g && g->initializer.count == TENSORS))
        for (uint64_t i = 0; i < TENSORS; i++)
            CHECK_MEM_EQ(g->initializer.items[i]->raw_data.data,
                         w->initializer.items[i]->raw_data.data,
                         (size_t)w->initializer.items[i]->raw_data.size);
    oc_model_free(m);
}

static void test_unpack(const oc_model *src) {
    oz_unpack_info info = OZ_UNPACK_INFO_INIT;
    oz_unpack_options opts = OZ_UNPACK_OPTIONS_INIT;
    oc_error err;
    CHECK_OK(oz_archive_save(src, at("m.onnxz"), NULL, &err), &err);
    opts.no_sync = 1;
    CHECK_OK(oz_unpack_file(at("m.onnxz"), at("out"), &opts, &info, &err), &err);
    CHECK_EQ(info.files, TENSORS);
    CHECK_EQ(info.bytes, TENSORS * BIG + TENSORS * (TENSORS - 1) / 2);
    CHECK_EQ(td_count(at("out"), 0), TENSORS + 1);
    check_loads(src, at("out/model.onnx"));
    /* Not empty: refused, unless overwrite, which writes over its own files. */
    CHECK_STATUS(oz_unpack_file(at("m.onnxz"), at("out"), &opts, &info, &err), OC_ERR_EXISTS, &err);
    CHECK(!info.input_failed);
    opts.overwrite = 1;
    CHECK_OK(oz_unpack_file(at("m.onnxz"), at("out"), &opts, NULL, &err), &err);
    check_loads(src, at("out/model.onnx"));
}

static void test_refusals(void) {
    oz_unpack_info info = OZ_UNPACK_INFO_INIT;
    oc_error err;
    CHECK_STATUS(oz_unpack_file(at("m.onnxz"), at("m.onnxz"), NULL, &info, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "not a directory") != NULL);
    CHECK(!info.input_failed);
    CHECK_STATUS(oz_unpack_file(at("none.onnxz"), at("d1"), NULL, &info, &err), OC_ERR_NOT_FOUND,
                 &err);
    CHECK(info.input_failed);
    CHECK(access(at("d1"), F_OK) != 0);
    CHECK(td_write(at("notzip.onnxz"), "not a zip at all", 16) == 0);
    CHECK(oz_unpack_file(at("notzip.onnxz"), at("d2"), NULL, &info, &err) != OC_OK);
    CHECK(info.input_failed);
    CHECK(access(at("d2"), F_OK) != 0);
    CHECK_STATUS(oz_unpack_file(at("m.onnxz"), "", NULL, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_unpack_file(at("m.onnxz"), "-", NULL, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(access("-", F_OK) != 0); /* standard output is no directory (S-41) */
}

/* Cancels at the n-th file. */
static int cancel_at(void *ctx) {
    int *left = ctx;
    return --*left < 0;
}

static void test_cancel(void) {
    oz_unpack_options opts = OZ_UNPACK_OPTIONS_INIT;
    oc_error err;
    int left = 2;
    opts.no_sync = 1;
    opts.cancel = cancel_at;
    opts.cancel_ctx = &left;
    CHECK_STATUS(oz_unpack_file(at("m.onnxz"), at("new"), &opts, NULL, &err), OC_ERR_CANCELLED,
                 &err);
    CHECK(strcmp(err.message, "cancelled") == 0);
    CHECK(access(at("new"), F_OK) != 0); /* made by the call: gone again */
    td_mkdirs(at("kept"));
    CHECK(td_write(at("kept/mine.txt"), "mine", 4) == 0);
    left = TENSORS; /* the model's turn */
    opts.overwrite = 1;
    CHECK_STATUS(oz_unpack_file(at("m.onnxz"), at("kept"), &opts, NULL, &err), OC_ERR_CANCELLED,
                 &err);
    CHECK_EQ(td_count(at("kept"), 0), 1);
    CHECK(access(at("kept/mine.txt"), F_OK) == 0);
}

int main(int argc, char **argv) {
    if (argc != 2 || td_make(argv[1], "unpack", dir, sizeof dir) != 0) {
        fprintf(stderr, "usage: test_unpack WORKDIR\n");
        return 2;
    }
    oc_model *m = make_model();
    test_unpack(m);
    test_refusals();
    test_cancel();
    oc_model_free(m);
    td_remove(dir);
    return check_report("test_unpack");
}
