/*
 * test_stub.c - a stub of an archive (onnxz/stub.h, spec/onnxz.md A-60..A-63) as one
 * library call: oz_stub_file writes a .onnx whose tensors read the archive's entries in
 * place (a load gives the archive's bytes), with its entry records; oz_verify_model
 * checks those references and fails once the archive is rebuilt with another layout;
 * the refusals (OUT misnamed, elsewhere, the archive itself, existing; an input that is
 * no archive), each naming the right file; oz_stub_check opening nothing outside its
 * directory.
 *
 * usage: test_stub WORKDIR
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/onnxz.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"

enum { BIG = 3000, SMALL = 16 };

/* Two tensors that become entries ("a", "b") and one that stays inside ("s"). */
static oc_model *make_model(void) {
    oc_model *m = tm_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_GraphProto *g = oc_model_proto(m)->graph;
    tm_add_bytes(a, g, "a", BIG, BIG);
    tm_add_bytes(a, g, "b", BIG + 1, BIG + 1);
    tm_add_bytes(a, g, "s", SMALL, SMALL);
    return m;
}

/* The stub loads (its data read from the archive) to the source's tensors, and carries one
 * record line per entry. */
static void check_stub_reads(const oc_model *src, const char *stub) {
    oc_model *m = NULL;
    oc_error err;
    CHECK_OK(oz_open(stub, NULL, &m, NULL, &err), &err);
    if (!m) return;
    const onnx_GraphProto *g = oc_model_proto(m)->graph, *w = oc_model_proto_const(src)->graph;
    REQUIRE(g && g->initializer.count == 3);
    for (uint64_t i = 0; i < 3; i++) {
        CHECK_EQ(g->initializer.items[i]->raw_data.size, w->initializer.items[i]->raw_data.size);
        CHECK_MEM_EQ(g->initializer.items[i]->raw_data.data, w->initializer.items[i]->raw_data.data,
                     (size_t)w->initializer.items[i]->raw_data.size);
    }
    const onnx_ModelProto *mp = oc_model_proto(m);
    int lines = -1;
    for (uint64_t i = 0; i < mp->metadata_props.count; i++) {
        const onnx_StringStringEntryProto *e = mp->metadata_props.items[i];
        if (e->key.size != strlen(OZ_STUB_RECORD_KEY) ||
            memcmp(e->key.data, OZ_STUB_RECORD_KEY, e->key.size) != 0)
            continue;
        lines = 0;
        for (uint64_t j = 0; j < e->value.size; j++) lines += e->value.data[j] == '\n';
    }
    CHECK_EQ(lines, 2);
    oc_model_free(m);
}

static void test_stub_and_verify(const oc_model *src) {
    oz_stub_info info = OZ_STUB_INFO_INIT;
    oz_model_report *r = NULL;
    oc_error err;
    CHECK_OK(oz_archive_save(src, td_at("m.onnxz"), NULL, &err), &err);
    CHECK_OK(oz_stub_file(td_at("m.onnxz"), td_at("s.onnx"), NULL, &info, &err), &err);
    CHECK_EQ(info.tensors, 2);
    CHECK_EQ(info.bytes, 2 * BIG + 1);
    CHECK(info.file_size > 0 && info.file_size < BIG);
    check_stub_reads(src, td_at("s.onnx"));
    CHECK_OK(oz_verify_model(td_at("s.onnx"), NULL, &r, NULL, &err), &err);
    if (r) CHECK_EQ(r->archive_references, 2);
    oz_model_report_free(r);

    /* The archive rebuilt with another layout: the stub reads other bytes. */
    oz_archive_options ao = OZ_ARCHIVE_OPTIONS_INIT;
    ao.serialize.buffer.alignment = 4096;
    CHECK_OK(oz_archive_save(src, td_at("m.onnxz"), &ao, &err), &err);
    r = NULL;
    CHECK_STATUS(oz_verify_model(td_at("s.onnx"), NULL, &r, NULL, &err), OC_ERR_INCONSISTENT, &err);
    CHECK(strcmp(err.rule, "A-62") == 0);
    CHECK(strstr(err.message, "tensor 'a'") != NULL);
    CHECK(r == NULL);
    /* Made again over the old stub (all-zero options replace), it matches. */
    CHECK_OK(oz_stub_file(td_at("m.onnxz"), td_at("s.onnx"), NULL, NULL, &err), &err);
    CHECK_OK(oz_verify_model(td_at("s.onnx"), NULL, &r, NULL, &err), &err);
    oz_model_report_free(r);
    /* an info never initialised is refused, as oz_open refuses it */
    oz_open_info oi = OZ_OPEN_INFO_INIT;
    oi.size = 0;
    r = NULL;
    CHECK_STATUS(oz_verify_model(td_at("s.onnx"), NULL, &r, &oi, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(r == NULL);
}

/* OUT "-" is written through (stub.h), wherever the archive is: standard output here goes
 * to a file, which then reads as the stub beside the archive. */
static void test_stub_to_stdout(const oc_model *src) {
    oc_error err;
    fflush(stdout);
    int saved = dup(1), fd = open(td_at("stdout.bin"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(saved >= 0 && fd >= 0);
    REQUIRE(dup2(fd, 1) == 1);
    close(fd);
    oc_status st = oz_stub_file(td_at("m.onnxz"), "-", NULL, NULL, &err);
    dup2(saved, 1);
    close(saved);
    CHECK_OK(st, &err);
    CHECK(rename(td_at("stdout.bin"), td_at("piped.onnx")) == 0);
    check_stub_reads(src, td_at("piped.onnx"));
}

/* Each refusal names its file (input_failed: the archive's) and writes nothing. */
static void test_refusals(void) {
    oz_stub_info info = OZ_STUB_INFO_INIT;
    oz_stub_options opts = OZ_STUB_OPTIONS_INIT;
    oc_error err;
    opts.no_overwrite = 1;
    CHECK_STATUS(oz_stub_file(td_at("m.onnxz"), td_at("s.onnx"), &opts, &info, &err), OC_ERR_EXISTS,
                 &err);
    CHECK(!info.input_failed);
    CHECK_STATUS(oz_stub_file(td_at("m.onnxz"), td_at("x.onnxz"), NULL, &info, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(info.out_misnamed);
    CHECK(access(td_at("x.onnxz"), F_OK) != 0);
    td_mkdirs(td_at("sub"));
    CHECK_STATUS(oz_stub_file(td_at("m.onnxz"), td_at("sub/x.onnx"), NULL, &info, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "same directory") != NULL);
    CHECK(!info.out_misnamed && !info.input_failed);
    CHECK(symlink("m.onnxz", td_at("link.onnx")) == 0);
    opts.no_overwrite = 0;
    CHECK_STATUS(oz_stub_file(td_at("m.onnxz"), td_at("link.onnx"), &opts, &info, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "archive itself") != NULL);
    CHECK_STATUS(oz_stub_file(td_at("s.onnx"), td_at("y.onnx"), NULL, &info, &err),
                 OC_ERR_UNSUPPORTED, &err);
    CHECK(info.input_failed);
    CHECK(strstr(err.message, "not an .onnxz archive") != NULL);
    CHECK(access(td_at("y.onnx"), F_OK) != 0);
    CHECK_STATUS(oz_stub_file(td_at("none.onnxz"), td_at("y.onnx"), NULL, &info, &err),
                 OC_ERR_NOT_FOUND, &err);
    CHECK(info.input_failed);
    opts.size = 0;
    CHECK_STATUS(oz_stub_file(td_at("m.onnxz"), td_at("y.onnx"), &opts, NULL, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_stub_file(NULL, td_at("y.onnx"), NULL, NULL, &err), OC_ERR_INVALID_ARG, &err);
    info.size = 0; /* never initialised */
    CHECK_STATUS(oz_stub_file(td_at("m.onnxz"), td_at("y.onnx"), NULL, &info, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(access(td_at("y.onnx"), F_OK) != 0);
}

/* oz_stub_check opens each location as a load opens data files: beneath data_dir, no
 * `..`, no symbolic link (E-10, E-11), however the model was loaded. */
static void test_check_stays_beneath(void) {
    oz_open_options oo = OZ_OPEN_OPTIONS_INIT;
    oc_model *m = NULL;
    oc_error err;
    oo.parse.skip_external_data = 1;
    CHECK_OK(oz_open(td_at("s.onnx"), &oo, &m, NULL, &err), &err);
    if (!m) return;
    td_mkdirs(td_at("d"));
    CHECK(symlink("../m.onnxz", td_at("d/l.onnxz")) == 0);
    CHECK_OK(oz_stub_check(m, td_dir, NULL, &err), &err);
    static const char *const places[] = {"../m.onnxz", "l.onnxz"}; /* out; through a link */
    static const char *const rules[] = {"E-10", "E-11"};
    for (int k = 0; k < 2; k++) {
        const onnx_GraphProto *g = oc_model_proto(m)->graph;
        for (uint64_t i = 0; i < g->initializer.count; i++) {
            oc_str *loc = (oc_str *)oc_tensor_external_value(g->initializer.items[i], "location");
            if (!loc) continue;
            loc->data = places[k];
            loc->size = strlen(places[k]);
        }
        CHECK_RULE(oz_stub_check(m, td_at("d"), NULL, &err), OC_ERR_UNSAFE_PATH, &err, rules[k]);
    }
    oc_model_free(m);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "stub") != 0) return 2;
    oc_model *m = make_model();
    test_stub_and_verify(m);
    test_stub_to_stdout(m);
    test_refusals();
    test_check_stays_beneath();
    oc_model_free(m);
    td_remove(td_dir);
    return check_report("test_stub");
}
