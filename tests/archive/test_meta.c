/*
 * test_meta.c - a model's metadata edited in one library call (onnxz/metadata.h): the
 * edits in their order on an archive (in place) and on a .onnx file, through a symbolic
 * link, read back; a read without edits; the refusals before anything is touched (a bad
 * edit, a URL, an encrypted file) and a .onnx file another editor holds (busy, A-58).
 *
 * usage: test_meta WORKDIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/onnxz.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"

enum { BIG = 3000 };

static oc_model *make_model(void) {
    oc_model *m = tm_model_new();
    tm_add_bytes(oc_model_arena(m), oc_model_proto(m)->graph, "w", BIG, 0);
    return m;
}

static const oz_metadata_edit edits[] = {
    {OZ_METADATA_PRODUCER, NULL, "me"},
    {OZ_METADATA_SET, "a", "1"},
    {OZ_METADATA_SET, "b", "2"},
    {OZ_METADATA_SET, "a", "3"},
    {OZ_METADATA_REMOVE, "b", NULL},
    {OZ_METADATA_DOC_STRING, NULL, "doc"},
    {OZ_METADATA_PRODUCER_VERSION, NULL, "9"},
};
enum { NEDITS = sizeof edits / sizeof edits[0] };

/* The fields the edits leave: producer "me" version "9", doc "doc", props a=3 only. */
static void check_fields(const oc_model *model) {
    const onnx_ModelProto *m = oc_model_proto_const(model);
    CHECK_STR_EQ(m->producer_name, "me");
    CHECK_STR_EQ(m->producer_version, "9");
    CHECK_STR_EQ(m->doc_string, "doc");
    if (CHECK_EQ(m->metadata_props.count, 1)) {
        CHECK_STR_EQ(m->metadata_props.items[0]->key, "a");
        CHECK_STR_EQ(m->metadata_props.items[0]->value, "3");
    }
}

/* Edited, then read back with no edits: the same fields, the tensor intact. */
static void test_edit(const char *path, bool archive) {
    oz_metadata_info info = OZ_METADATA_INFO_INIT;
    oc_model *m = NULL;
    oc_error err;
    CHECK_OK(oz_edit_metadata(path, edits, NEDITS, NULL, &m, &info, &err), &err);
    CHECK(info.is_archive == archive);
    CHECK(!info.rolled_back);
    if (m) check_fields(m);
    oc_model_free(m);
    m = NULL;
    CHECK_OK(oz_edit_metadata(path, NULL, 0, NULL, &m, NULL, &err), &err);
    if (m) check_fields(m);
    oc_model_free(m);
    m = NULL;
    CHECK_OK(oz_open(path, NULL, &m, NULL, &err), &err);
    if (m) {
        const onnx_TensorProto *t = oc_model_proto(m)->graph->initializer.items[0];
        CHECK_EQ(t->raw_data.size, BIG);
        CHECK_EQ(t->raw_data.data[BIG - 1], (uint8_t)((BIG - 1) * 7));
    }
    oc_model_free(m);
}

static void test_refusals(void) {
    oz_metadata_edit bad[] = {{OZ_METADATA_SET, "", "x"}};
    oz_metadata_options opts = OZ_METADATA_OPTIONS_INIT;
    oc_error err;
    size_t before;
    free(td_read(td_at("m.onnx"), &before));
    CHECK_STATUS(oz_edit_metadata(td_at("m.onnx"), bad, 1, NULL, NULL, NULL, &err),
                 OC_ERR_INVALID_ARG, &err);
    bad[0].op = (oz_metadata_op)9;
    CHECK_STATUS(oz_edit_metadata(td_at("m.onnx"), bad, 1, NULL, NULL, NULL, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_edit_metadata("https://example.com/m.onnx", edits, 1, NULL, NULL, NULL, &err),
                 OC_ERR_INVALID_ARG, &err);
    opts.size = 0;
    CHECK_STATUS(oz_edit_metadata(td_at("m.onnx"), edits, 1, &opts, NULL, NULL, &err),
                 OC_ERR_INVALID_ARG, &err);
    /* Another editor holds the file. */
    int fd = open(td_at("m.onnx"), O_RDONLY);
    CHECK(fd >= 0 && flock(fd, LOCK_EX) == 0);
    CHECK_STATUS(oz_edit_metadata(td_at("m.onnx"), edits, 1, NULL, NULL, NULL, &err), OC_ERR_BUSY,
                 &err);
    CHECK(strcmp(err.rule, "A-58") == 0);
    close(fd);
    size_t after;
    free(td_read(td_at("m.onnx"), &after));
    CHECK_EQ(after, before);
}

static void test_encrypted(const oc_model *src) {
    oz_save_options so = OZ_SAVE_OPTIONS_INIT;
    oc_error err;
    if (!oc_crypt_available()) return;
    so.key = "pw";
    so.key_len = 2;
    CHECK_OK(oz_save(src, td_at("m.onnxc"), &so, &err), &err);
    CHECK_STATUS(oz_edit_metadata(td_at("m.onnxc"), edits, 1, NULL, NULL, NULL, &err),
                 OC_ERR_UNSUPPORTED, &err);
    CHECK(strstr(err.message, "encrypted") != NULL);
}

int main(int argc, char **argv) {
    oc_error err;
    if (td_start(argc, argv, "meta") != 0) return 2;
    oc_model *m = make_model();
    CHECK_OK(oz_archive_save(m, td_at("m.onnxz"), NULL, &err), &err);
    CHECK_OK(oz_save(m, td_at("m.onnx"), NULL, &err), &err);
    test_edit(td_at("m.onnxz"), true);
    CHECK(symlink("m.onnx", td_at("link.onnx")) == 0);
    test_edit(td_at("link.onnx"), false);
    struct stat st;
    CHECK(lstat(td_at("link.onnx"), &st) == 0 && S_ISLNK(st.st_mode)); /* the target was edited */
    test_refusals();
    test_encrypted(m);
    oc_model_free(m);
    td_remove(td_dir);
    return check_report("test_meta");
}
