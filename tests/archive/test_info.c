/*
 * test_info.c - the report of `onnxz info` (onnxz/info.h) gathered from an archive and from
 * a bare model: the path shown without a URL's password (N-2), the default operator set's
 * name, absent header fields as null, strings that are not UTF-8 or act on the line
 * quoted by the one JSON rule, the archive's listing and its alignment, the encryption
 * key present only for an encrypted file, the source's size rules, the report of an open
 * reader. The whole document is compared with the tool's
 * by the cli and Python tests; here its parts, under valgrind.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onnxz/convert.h>
#include <onnxcore/crypto.h>
#include <onnxz/info.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"

static oc_error err;

/* info's JSON document, as a new NUL-terminated string. */
static char *json_of(const oz_info *info) {
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out) return NULL;
    oz_info_write_json(info, out);
    CHECK(!ferror(out));
    fclose(out);
    return text;
}

static void check_has(const char *json, const char *want) {
    if (!CHECK(strstr(json, want) != NULL)) fprintf(stderr, "  no %s in:\n%s", want, json);
}

/* A model with a named graph, two operator sets (one the default domain), a tensor large
 * enough for an entry of its own and one kept inline. */
static void save_archive(const char *path) {
    oc_model *m = tm_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    onnx_OperatorSetIdProto *op = OC_ADD(a, OperatorSetIdProto, mp->opset_import);
    SETV(OperatorSetIdProto, op, version, 21);
    op = OC_ADD(a, OperatorSetIdProto, mp->opset_import);
    SETS(OperatorSetIdProto, op, domain, a, "com.example");
    SETV(OperatorSetIdProto, op, version, 1);
    SETS(ModelProto, mp, producer_name, a, "test_info");
    SETS(GraphProto, mp->graph, name, a, "g");
    tm_add_bytes(a, mp->graph, "w", 100000, 1);
    tm_add_bytes(a, mp->graph, "b", 8, 2);
    tm_add_node(a, mp->graph, "Relu");
    CHECK_OK(oz_save(m, path, NULL, &err), &err);
    oc_model_free(m);
}

static void check_archive(void) {
    oz_archive *ar = NULL;
    oc_model *m = NULL;
    oz_info *r = NULL;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    const char *path = td_at("a.onnxz");
    save_archive(path);
    po.skip_external_data = 1;
    REQUIRE(oz_archive_open(path, NULL, &ar, &err) == OC_OK);
    CHECK_OK(oz_archive_load_model(ar, &po, &m, &err), &err);
    /* the report shows the path it is given: a URL's password never */
    oz_info_source src = {.size = sizeof src,
                          .path = "https://someone:secret@example.com/a.onnxz",
                          .file_size = 1234,
                          .payload_archive = true,
                          .model = oc_model_proto(m),
                          .archive = ar};
    CHECK_OK(oz_info_collect(&src, &r, &err), &err);
    if (r) {
        CHECK(strcmp(r->file, "https://example.com/a.onnxz") == 0);
        CHECK(r->archive && r->crypt == OC_CRYPT_NONE);
        CHECK(r->has_ir_version && r->ir_version == 10 && !r->has_model_version);
        CHECK(r->has_producer_name && r->has_graph_name && !r->has_domain);
        CHECK_EQ(r->nopsets, 2);
        CHECK_STR_EQ(r->opsets[0].domain, "ai.onnx");
        CHECK_STR_EQ(r->opsets[1].domain, "com.example");
        CHECK_EQ(r->stats->nodes, 1);
        CHECK_EQ(r->stats->external.tensors, 1);
        CHECK_EQ(r->stats->raw.tensors, 1);
        CHECK(r->listing && r->alignment_known);
        CHECK_EQ(r->listing->tensor_entries, 1);
        char *json = json_of(r);
        REQUIRE(json);
        static const char head[] = "{\n  \"file\": \"https://example.com/a.onnxz\",\n";
        CHECK(strncmp(json, head, sizeof head - 1) == 0);
        CHECK(strcmp(json + strlen(json) - 3, "\n}\n") == 0);
        CHECK(strstr(json, "secret") == NULL && strstr(json, "encrypted") == NULL);
        check_has(json, "\"file_size\": 1234,\n  \"format\": \"onnxz\",\n");
        check_has(json, "\"opset_import\": [{\"domain\": \"ai.onnx\", \"version\": 21}, "
                        "{\"domain\": \"com.example\", \"version\": 1}]");
        check_has(json, "\"model_version\": null");
        check_has(json, "\"graph_name\": \"g\"");
        check_has(json, "\"min_tensor_alignment\": 64, \"zero_copy\": true");
        check_has(json, "\"model_entry\": {\"method\": \"stored\"");
        free(json);
    }
    oz_info_free(r);
    oc_model_free(m);
    oz_archive_close(ar);
}

/* No graph, producer_name bytes that are not UTF-8 or act on the line, encrypted. */
static void check_bare(void) {
    static const char odd[] = "\xff\n\xc2\x85x\"";
    oc_model *m = oc_model_new();
    oz_info *r = NULL;
    REQUIRE(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    mp->producer_name = (oc_str){odd, sizeof odd - 1};
    OC_SET_HAS(ModelProto, mp, producer_name);
    oz_info_source src = {
        .size = sizeof src, .path = "m.onnxc", .crypt = OC_CRYPT_ONNXCRY1, .model = mp};
    CHECK_OK(oz_info_collect(&src, &r, &err), &err);
    if (r) {
        CHECK(!r->archive && !r->listing && !r->has_graph_name && r->nopsets == 0);
        char *json = json_of(r);
        REQUIRE(json);
        check_has(json, "\"format\": \"onnx\",\n  \"encrypted\": \"ONNXCRY1\",\n"
                        "  \"ir_version\": null,\n");
        check_has(json, "\"producer_name\": \"\\ufffd\\n\\u0085x\\\"\"");
        check_has(json, "\"opset_import\": [],\n  \"graph_name\": null,\n  \"nodes\": 0,");
        check_has(json, "\"locations\": []},\n  \"archive\": null\n}\n");
        free(json);
    }
    oz_info_free(r);
    oc_model_free(m);
    oz_info_free(NULL);
}

/* The source's size rules (onnxcore/options.h, "Extending") and what it must name. */
static void check_source_rules(void) {
    oc_model *m = oc_model_new();
    oz_info *r = NULL;
    struct {
        oz_info_source src;
        int later; /* a field of a later version */
    } big;
    REQUIRE(m);
    oz_info_source src = OZ_INFO_SOURCE_INIT;
    src.path = "m.onnx";
    CHECK_STATUS(oz_info_collect(&src, &r, &err), OC_ERR_INVALID_ARG, &err); /* no model */
    CHECK(r == NULL);
    src.model = oc_model_proto(m);
    src.size = 0;
    CHECK_STATUS(oz_info_collect(&src, &r, &err), OC_ERR_INVALID_ARG, &err);
    memset(&big, 0, sizeof big);
    big.src = src;
    big.src.size = sizeof big;
    big.later = 1;
    CHECK_STATUS(oz_info_collect(&big.src, &r, &err), OC_ERR_INVALID_ARG, &err);
    big.later = 0;
    CHECK_OK(oz_info_collect(&big.src, &r, &err), &err);
    oz_info_free(r);
    r = NULL;
    src.size = offsetof(oz_info_source, model) + sizeof src.model; /* an older, shorter one */
    CHECK_OK(oz_info_collect(&src, &r, &err), &err);
    CHECK(r && r->listing == NULL);
    oz_info_free(r);
    oc_model_free(m);
}

/* The report of an open reader, with skip_data_files (as `onnxz info` opens). */
static oz_info *report_of(const char *path, const char *key) {
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    oz_reader *rd = NULL;
    oz_info *r = NULL;
    o.key = key;
    o.key_len = key ? strlen(key) : 0;
    o.skip_data_files = true;
    CHECK_OK(oz_reader_open(path, &o, &rd, NULL, &err), &err);
    if (rd) CHECK_OK(oz_info_collect_reader(rd, &r, &err), &err);
    if (r) { /* what the report points into is the reader's: its JSON, before the close */
        char *json = json_of(r);
        CHECK(json && strstr(json, "\"file\": ") != NULL);
        free(json);
    }
    oz_reader_close(rd);
    return r;
}

/* oz_info_collect_reader: an archive's report is the one gathered from what a caller
 * opened itself; an encrypted archive's model holds references, its entries unlisted; a
 * .onnx whose data file is gone is reported. */
static void check_reader(void) {
    const char *path = td_at("r.onnxz");
    save_archive(path);
    oz_reader_options o = OZ_READER_OPTIONS_INIT;
    oz_reader *rd = NULL;
    oz_info *mine = NULL, *theirs = NULL;
    o.skip_data_files = true;
    REQUIRE(oz_reader_open(path, &o, &rd, NULL, &err) == OC_OK);
    CHECK_OK(oz_info_collect_reader(rd, &mine, &err), &err);
    oz_open_info found = OZ_OPEN_INFO_INIT;
    oz_reader_info(rd, &found);
    oz_info_source src = {.size = sizeof src,
                          .path = path,
                          .file_size = found.file_size,
                          .payload_archive = true,
                          .model = oc_model_proto(oz_reader_model(rd)),
                          .archive = oz_reader_archive(rd)};
    CHECK_OK(oz_info_collect(&src, &theirs, &err), &err);
    char *a = mine ? json_of(mine) : NULL, *b = theirs ? json_of(theirs) : NULL;
    CHECK(a && b && strcmp(a, b) == 0 && strstr(a, "\"archive\": {") != NULL);
    free(a);
    free(b);
    oz_info_free(mine);
    oz_info_free(theirs);
    oz_reader_close(rd);
    CHECK_STATUS(oz_info_collect_reader(NULL, &mine, &err), OC_ERR_INVALID_ARG, &err);

    if (oc_crypt_available()) {
        CHECK_OK(tm_encrypt_file(path, td_at("r.onnxc"), "k", OC_CRYPT_ONNXZEC1, &err), &err);
        oz_info *r = report_of(td_at("r.onnxc"), "k");
        CHECK(r && r->archive && r->crypt == OC_CRYPT_ONNXZEC1 && !r->listing);
        CHECK(r && r->stats->external.tensors == 1 && r->stats->raw.tensors == 1);
        oz_info_free(r);
    }

    oc_model *m = tm_model_new();
    tm_add_bytes(oc_model_arena(m), oc_model_proto(m)->graph, "w", 100000, 1);
    oz_archive_options ao = OZ_ARCHIVE_OPTIONS_INIT;
    ao.serialize.external_data = "gone.data";
    CHECK_OK(oz_save_any(m, td_at("gone.onnx"), OZ_FORM_AUTO, &ao, &err), &err);
    oc_model_free(m);
    CHECK(remove(td_at("gone.data")) == 0);
    oz_info *r = report_of(td_at("gone.onnx"), NULL);
    CHECK(r && !r->archive && r->stats->external.tensors == 1 && r->stats->nlocations == 1);
    oz_info_free(r);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "info") != 0) return 2;
    RUN(check_archive);
    RUN(check_bare);
    RUN(check_source_rules);
    RUN(check_reader);
    return check_report("test_info");
}
