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
#include "testmodel.h"

enum { BIG = 3000, TENSORS = 5 };

static oc_model *make_model(void) {
    oc_model *m = tm_model_new();
    char name[16];
    for (int i = 0; i < TENSORS; i++) {
        snprintf(name, sizeof name, "w%d", i);
        tm_add_bytes(oc_model_arena(m), oc_model_proto(m)->graph, name, BIG + (uint64_t)i,
                     BIG + (uint64_t)i);
    }
    return m;
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
    CHECK_OK(oz_archive_save(src, td_at("m.onnxz"), NULL, &err), &err);
    opts.no_sync = 1;
    CHECK_OK(oz_unpack_file(td_at("m.onnxz"), td_at("out"), &opts, &info, &err), &err);
    CHECK_EQ(info.files, TENSORS);
    CHECK_EQ(info.bytes, TENSORS * BIG + TENSORS * (TENSORS - 1) / 2);
    CHECK_EQ(td_count(td_at("out"), 0), TENSORS + 1);
    check_loads(src, td_at("out/model.onnx"));
    /* Not empty: refused with no_overwrite; by default written over, files and all. */
    opts.no_overwrite = 1;
    CHECK_STATUS(oz_unpack_file(td_at("m.onnxz"), td_at("out"), &opts, &info, &err), OC_ERR_EXISTS,
                 &err);
    CHECK(!info.input_failed);
    opts.no_overwrite = 0;
    CHECK_OK(oz_unpack_file(td_at("m.onnxz"), td_at("out"), &opts, NULL, &err), &err);
    check_loads(src, td_at("out/model.onnx"));
}

static void test_refusals(void) {
    oz_unpack_info info = OZ_UNPACK_INFO_INIT;
    oc_error err;
    CHECK_STATUS(oz_unpack_file(td_at("m.onnxz"), td_at("m.onnxz"), NULL, &info, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "not a directory") != NULL);
    CHECK(!info.input_failed);
    CHECK_STATUS(oz_unpack_file(td_at("none.onnxz"), td_at("d1"), NULL, &info, &err),
                 OC_ERR_NOT_FOUND, &err);
    CHECK(info.input_failed);
    CHECK(access(td_at("d1"), F_OK) != 0);
    CHECK(td_write(td_at("notzip.onnxz"), "not a zip at all", 16) == 0);
    CHECK(oz_unpack_file(td_at("notzip.onnxz"), td_at("d2"), NULL, &info, &err) != OC_OK);
    CHECK(info.input_failed);
    CHECK(access(td_at("d2"), F_OK) != 0);
    CHECK_STATUS(oz_unpack_file(td_at("m.onnxz"), "", NULL, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_unpack_file(td_at("m.onnxz"), "-", NULL, NULL, &err), OC_ERR_INVALID_ARG, &err);
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
    CHECK_STATUS(oz_unpack_file(td_at("m.onnxz"), td_at("new"), &opts, NULL, &err),
                 OC_ERR_CANCELLED, &err);
    CHECK(strcmp(err.message, "cancelled") == 0);
    CHECK(access(td_at("new"), F_OK) != 0); /* made by the call: gone again */
    td_mkdirs(td_at("kept"));
    CHECK(td_write(td_at("kept/mine.txt"), "mine", 4) == 0);
    left = TENSORS; /* the model's turn */
    CHECK_STATUS(oz_unpack_file(td_at("m.onnxz"), td_at("kept"), &opts, NULL, &err),
                 OC_ERR_CANCELLED, &err);
    CHECK_EQ(td_count(td_at("kept"), 0), 1);
    CHECK(access(td_at("kept/mine.txt"), F_OK) == 0);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "unpack") != 0) return 2;
    oc_model *m = make_model();
    test_unpack(m);
    test_refusals();
    test_cancel();
    oc_model_free(m);
    td_remove(td_dir);
    return check_report("test_unpack");
}
