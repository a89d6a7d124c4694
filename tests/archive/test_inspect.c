/*
 * test_inspect.c - the figures and checks behind `onnxz info`, `ls` and `verify` as library
 * calls (onnxcore/stats.h, onnxz/listing.h, onnxz/verify.h), on a model built here whose
 * every figure is known: oc_model_stats_collect counts the graph's parts (nodes in a
 * subgraph and a function too) and the tensor shares of a model with external data;
 * oz_archive_list lists an archive's entries with the tensors that name them;
 * oz_archive_verify and oz_verify_model pass on the files as saved, give their figures,
 * and refuse a flipped byte in a tensor (CRC-32; SHA-1 checksum) and a missing data file;
 * oz_list_path opens and lists an archive in one call (and refuses a .onnx);
 * oz_verify_path and oz_reader_verify choose those checks by the file's form (an encrypted
 * archive gets a model's), and refuse a data_dir for an archive and an encrypted file
 * without a key.
 *
 * usage: test_inspect WORKDIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/onnxz.h>
#include <onnxz/reader.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"

enum { BIG = 3000, SMALL = 16 };

/* Two big tensors ("a", "b": entries / external data), one small ("s": stays inside),
 * one typed (3 floats); a main graph of 2 nodes, one holding a 2-node subgraph; a
 * function of 1 node. Nodes in total: 2 + 2 + 1. */
static oc_model *make_model(void) {
    oc_model *m = tm_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    tm_add_bytes(a, mp->graph, "a", BIG, BIG);
    tm_add_bytes(a, mp->graph, "b", BIG + 1, BIG + 1);
    tm_add_bytes(a, mp->graph, "s", SMALL, SMALL);
    onnx_TensorProto *t = OC_ADD(a, TensorProto, mp->graph->initializer);
    oc_str_set_cstr(a, &t->name, "f");
    OC_SET_HAS(TensorProto, t, name);
    t->data_type = 1; /* FLOAT */
    OC_SET_HAS(TensorProto, t, data_type);
    int64_t *d = oc_array_push(a, &t->dims, sizeof(int64_t));
    if (d) *d = 3;
    for (int i = 0; i < 3; i++) {
        float *f = oc_array_push(a, &t->float_data, sizeof(float));
        if (f) *f = (float)i;
    }
    tm_add_node(a, mp->graph, "Relu");
    onnx_NodeProto *ifn = tm_add_node(a, mp->graph, "If");
    onnx_AttributeProto *attr = OC_ADD(a, AttributeProto, ifn->attribute);
    attr->g = OC_NEW(a, GraphProto);
    tm_add_node(a, attr->g, "Relu");
    tm_add_node(a, attr->g, "Relu");
    onnx_FunctionProto *fn = OC_ADD(a, FunctionProto, mp->functions);
    onnx_NodeProto *fnode = OC_ADD(a, NodeProto, fn->node);
    oc_str_set_cstr(a, &fnode->op_type, "Relu");
    OC_SET_HAS(NodeProto, fnode, op_type);
    return m;
}

static void flip_byte(const char *path, long at) {
    FILE *f = fopen(path, "r+b");
    int c;
    CHECK(f != NULL);
    if (!f) return;
    fseek(f, at, SEEK_SET);
    c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x55, f);
    fclose(f);
}

static void check_stats(const oc_model_stats *s) {
    CHECK_EQ(s->nodes, 2);
    CHECK_EQ(s->nodes_total, 5);
    CHECK_EQ(s->initializers, 4);
    CHECK_EQ(s->functions, 1);
    CHECK_EQ(s->tensors, 4);
    CHECK_EQ(s->raw.tensors, 1);
    CHECK_EQ(s->raw.bytes, SMALL);
    CHECK_EQ(s->typed.tensors, 1);
    CHECK_EQ(s->typed.bytes, 12);
    CHECK_EQ(s->external.tensors, 2);
    CHECK_EQ(s->external.bytes, 2 * BIG + 1);
    CHECK_EQ(s->tensor_bytes, SMALL + 12 + 2 * BIG + 1);
    CHECK_EQ(s->external_unknown_length, 0);
}

/* An archive: listed, verified, then refused with one byte of "b" flipped. */
/* oz_list_path on the archive at path: the listing oz_archive_list gave (want), with the
 * file's size, holding what it points into. */
static void check_list_path(const char *path, const oz_archive_listing *want) {
    oz_archive_listing *l = NULL;
    oc_error err;
    FILE *f = fopen(path, "rb");
    long size = f && fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (f) fclose(f);
    CHECK_OK(oz_list_path(path, NULL, &l, &err), &err);
    if (!l || !want) return;
    CHECK_EQ(l->count, want->count);
    CHECK_EQ(l->model_index, want->model_index);
    CHECK_EQ(l->tensor_entries, want->tensor_entries);
    CHECK_EQ(l->min_tensor_alignment, want->min_tensor_alignment);
    CHECK_EQ(l->file_size, (uint64_t)size);
    CHECK_EQ(want->file_size, (uint64_t)size);
    for (uint64_t i = 0; i < l->count && i < want->count; i++) {
        CHECK_EQ(l->entries[i].zip.data_offset, want->entries[i].zip.data_offset);
        CHECK_EQ(l->entries[i].ntensors, want->entries[i].ntensors);
    }
    CHECK_STR_EQ(l->names[l->entries[1].first_name], "b");
    oz_archive_listing_free(l);
}

/* oz_verify_path on the archive at path gives oz_archive_verify's figures (want), and so
 * does oz_reader_verify on it open; a data_dir is refused before it is opened. */
static void check_verify_archive(const char *path, const oz_archive_report *want) {
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oz_reader_options ro = OZ_READER_OPTIONS_INIT;
    oz_verify_report *v = NULL;
    oz_reader *reader = NULL;
    oc_error err;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) {
            CHECK_OK(oz_verify_path(path, NULL, &v, &info, &err), &err);
            CHECK_EQ(info.kind, OZ_KIND_ZIP);
            CHECK(info.is_archive);
        } else {
            CHECK_OK(oz_reader_open(path, &ro, &reader, NULL, &err), &err);
            CHECK_OK(oz_reader_verify(reader, NULL, &v, &err), &err);
        }
        CHECK(v && v->archive && !v->model);
        if (v && v->archive && want) {
            CHECK_EQ(v->kind, OZ_KIND_ZIP);
            CHECK(v->is_archive);
            CHECK_EQ(v->archive->entries, want->entries);
            CHECK_EQ(v->archive->entry_tensors, want->entry_tensors);
            CHECK_EQ(v->archive->entry_bytes, want->entry_bytes);
            CHECK_EQ(v->archive->model_size, want->model_size);
        }
        oz_verify_report_free(v);
        v = NULL;
    }
    o.parse.data_dir = ".";
    CHECK_STATUS(oz_verify_path(path, &o, &v, &info, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(v == NULL && info.kind == OZ_KIND_ZIP);
    CHECK_STATUS(oz_reader_verify(reader, &o, &v, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(v == NULL);
    oz_reader_close(reader);
}

/* The archive at path encrypted: verified as a model (oz_verify_model's figures, its
 * payload an archive) given the key, and refused without one, the kind said. */
static void check_verify_encrypted(const char *path, const char *dir) {
    static const char key[] = "passphrase";
    char enc[4200];
    oc_crypt_options co = OC_CRYPT_OPTIONS_INIT;
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oz_verify_report *v = NULL;
    oc_error err;
    if (!oc_crypt_available()) return;
    snprintf(enc, sizeof enc, "%s/m.onnxc", dir);
    co.iterations = 1000;
    CHECK_OK(oc_crypt_encrypt_file(path, enc, key, strlen(key), &co, &err), &err);
    CHECK_STATUS(oz_verify_path(enc, NULL, &v, &info, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(v == NULL && info.kind == OZ_KIND_ONNXZEC1);
    o.key = key;
    o.key_len = strlen(key);
    o.crypt = &co;
    CHECK_OK(oz_verify_path(enc, &o, &v, &info, &err), &err);
    CHECK(v && v->model && !v->archive);
    if (v && v->model) {
        CHECK_EQ(v->kind, OZ_KIND_ONNXZEC1);
        CHECK(v->is_archive);
        CHECK_EQ(v->model->tensors, 4);
    }
    oz_verify_report_free(v);
    remove(enc);
}

static void test_archive(const oc_model *m, const char *dir) {
    char path[4200];
    oz_archive *ar = NULL;
    oc_model *refs = NULL;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oz_archive_listing *l = NULL;
    oz_archive_report *r = NULL;
    oc_error err;
    snprintf(path, sizeof path, "%s/m.onnxz", dir);
    CHECK_OK(oz_archive_save(m, path, NULL, &err), &err);
    CHECK_OK(oz_archive_open(path, NULL, &ar, &err), &err);
    po.no_copy = 1;
    po.skip_external_data = 1;
    CHECK_OK(oz_archive_load_model(ar, &po, &refs, &err), &err);
    CHECK_OK(oz_archive_list(ar, oc_model_proto(refs), &l, &err), &err);
    if (l) {
        CHECK_EQ(l->count, 3);
        CHECK_EQ(l->model_index, 2);
        CHECK(l->entries[2].is_model);
        CHECK(oz_archive_listing_model_last(l));
        CHECK_EQ(l->tensor_entries, 2);
        CHECK_EQ(l->stored_entries, 3);
        CHECK_EQ(l->deflated_entries, 0);
        CHECK(l->min_tensor_alignment >= 64);
        for (uint64_t i = 0; i < 2; i++) {
            CHECK_EQ(l->entries[i].ntensors, 1);
            CHECK_EQ(l->entries[i].zip.uncompressed_size, BIG + i);
            CHECK_STR_EQ(l->names[l->entries[i].first_name], i ? "b" : "a");
        }
    }
    oc_model_stats *s = NULL;
    CHECK_OK(oc_model_stats_collect(oc_model_proto(refs), &s, &err), &err);
    if (s) {
        check_stats(s);
        CHECK_EQ(s->nlocations, 2); /* an archive's locations are its entries */
    }
    oc_model_stats_free(s);
    CHECK_OK(oz_archive_verify(ar, NULL, &r, &err), &err);
    if (r && l) {
        CHECK_EQ(r->entries, 3);
        CHECK_EQ(r->tensor_entries, 2);
        CHECK_EQ(r->entry_tensors, 2);
        CHECK_EQ(r->entry_bytes, 2 * BIG + 1);
        CHECK_EQ(r->model_size, l->entries[2].zip.uncompressed_size);
    }
    long at = l ? (long)l->entries[1].zip.data_offset + 10 : 0;
    check_verify_archive(path, r);
    check_list_path(path, l);
    check_verify_encrypted(path, dir);
    oz_archive_report_free(r);
    oz_archive_listing_free(l);
    oc_model_free(refs);
    oz_archive_close(ar);

    flip_byte(path, at);
    r = NULL;
    CHECK_OK(oz_archive_open(path, NULL, &ar, &err), &err); /* the directory is intact */
    CHECK_STATUS(oz_archive_verify(ar, NULL, &r, &err), OC_ERR_CHECKSUM, &err);
    CHECK(r == NULL);
    oz_archive_close(ar);
}

/* oz_verify_path on the model at path: oz_verify_model's figures. */
static void check_verify_model(const char *path, uint64_t sums) {
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oz_verify_report *v = NULL;
    oc_error err;
    CHECK_OK(oz_verify_path(path, NULL, &v, &info, &err), &err);
    CHECK(v && v->model && !v->archive);
    if (v && v->model) {
        CHECK_EQ(v->kind, OZ_KIND_MODEL);
        CHECK(!v->is_archive);
        CHECK_EQ(v->model->tensors, 4);
        CHECK_EQ(v->model->external_tensors, 2);
        CHECK_EQ(v->model->checksums, sums);
    }
    oz_verify_report_free(v);
}

/* The stats of the model at path (external data beside it) read as references; sums:
 * how many of its external tensors carry a checksum. */
static void check_locations(const char *path, uint64_t sums) {
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    oc_model *refs = NULL;
    oc_model_stats *s = NULL;
    oc_error err;
    o.parse.skip_external_data = 1;
    CHECK_OK(oz_open(path, &o, &refs, NULL, &err), &err);
    CHECK_OK(oc_model_stats_collect(oc_model_proto(refs), &s, &err), &err);
    if (s) {
        check_stats(s);
        CHECK_EQ(s->nlocations, 1);
        CHECK_STR_EQ(s->locations[0].location, "m.onnx.data");
        CHECK_EQ(s->locations[0].tensors, 2);
        CHECK_EQ(s->external_checksums, sums);
    }
    oc_model_stats_free(s);
    oc_model_free(refs);
}

/* A model with external data and SHA-1 checksums: verified with its figures, then refused
 * with one byte of its data flipped and with the data file gone. Built without OpenSSL,
 * checksums are refused as unsupported, and the model is saved and checked without them
 * (a flipped byte then goes unseen: nothing to compare it with). */
static void test_model(const oc_model *m, const char *dir) {
    char path[4200], data[4200];
    oc_serialize_options so = OC_SERIALIZE_OPTIONS_INIT;
    oz_model_report *r = NULL;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oc_error err;
    snprintf(path, sizeof path, "%s/m.onnx", dir);
    snprintf(data, sizeof data, "%s/m.onnx.data", dir);
    so.external_data = "m.onnx.data";
    so.checksum = 1;
    const bool sha1 = oc_crypt_available();
    if (!sha1) {
        CHECK_STATUS(oc_model_save_file(m, path, &so, &err), OC_ERR_UNSUPPORTED, &err);
        so.checksum = 0;
    }
    CHECK_OK(oc_model_save_file(m, path, &so, &err), &err);
    CHECK_OK(oz_verify_model(path, NULL, &r, &info, &err), &err);
    CHECK_EQ(info.kind, OZ_KIND_MODEL);
    if (r) {
        CHECK_EQ(r->tensors, 4);
        CHECK_EQ(r->external_tensors, 2);
        CHECK_EQ(r->external_files, 1);
        CHECK_EQ(r->external_bytes, 2 * BIG + 1);
        CHECK_EQ(r->checksums, sha1 ? 2 : 0);
    }
    oz_model_report_free(r);
    check_verify_model(path, sha1 ? 2 : 0);
    oz_archive_listing *l = NULL;
    CHECK(oz_list_path(path, NULL, &l, &err) != OC_OK); /* a .onnx is no archive */
    CHECK(l == NULL);
    check_locations(path, sha1 ? 2 : 0);

    if (sha1) {
        flip_byte(data, BIG + 200); /* inside "b", whatever its alignment */
        r = NULL;
        CHECK_STATUS(oz_verify_model(path, NULL, &r, NULL, &err), OC_ERR_CHECKSUM, &err);
        CHECK(r == NULL);
    }
    r = NULL;
    CHECK(remove(data) == 0);
    CHECK_STATUS(oz_verify_model(path, NULL, &r, NULL, &err), OC_ERR_NOT_FOUND, &err);
    CHECK(r == NULL);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "inspect") != 0) return 2;
    oc_model *m = make_model();
    test_archive(m, td_dir);
    test_model(m, td_dir);
    oc_model_free(m);
    td_remove(td_dir);
    return check_report("test_inspect");
}
