/*
 * edit_driver - library-level operations for edit_test.py (spec/onnxz.md A-50..A-59):
 *   edit_driver save IN.onnx OUT.onnxz [--align N] [--deflate]
 *   edit_driver replace ARCHIVE NEW.onnx [--align N] [--deflate] [--append-only]
 *                       [--crash-at STEP] [--pause-ms N]
 *       NEW.onnx is read as it is (its EXTERNAL tensors stay references) and becomes the
 *       archive's model. --crash-at kills the process with SIGKILL when the editor reaches
 *       STEP (internal/edit.h); --pause-ms sleeps at every step (for kills at random
 *       moments). Prints the steps taken, then `ok` or `<status>: <message>`.
 *   edit_driver touch ARCHIVE KEY VALUE [--no-copy] [--mapped] [--append-only]
 *       the usual flow in C: begin an edit, load its model with skip_external_data (and
 *       no_copy), add a metadata_props entry, commit, end. --mapped: the flow without an
 *       edit handle (oz_archive_load, then oz_archive_replace_model), whose mapping the
 *       process still holds while it edits (A-58 refuses that unless append-only).
 *   edit_driver recover ARCHIVE   begin an edit and end it: rolls an interrupted one back
 *   edit_driver load ARCHIVE OUT.onnx [--pread]
 *       the model with its tensors, as a plain .onnx (read through a mapping, or pread)
 *   edit_driver model ARCHIVE OUT.onnx     the model alone (its tensors stay references)
 *   edit_driver space ARCHIVE              `file_size archive_size unused_bytes`
 *   edit_driver big ARCHIVE SIZE
 *       an archive of one SIZE-byte tensor entry `big` (streamed from a pattern) and a model
 *       whose initializer `big` points at it: offsets past 4 GiB for the `large` test.
 * Exit status 0 on success, 1 on a library error, 2 on bad usage.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/archive.h>

#include "internal/edit.h"

static const char *crash_at;
static long pause_ms;
static int mapped;

static void on_step(const char *step) {
    printf("step %s\n", step);
    fflush(stdout);
    if (pause_ms > 0) {
        struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (crash_at && strcmp(crash_at, step) == 0) raise(SIGKILL);
}

static int report(oc_status st, const oc_error *err) {
    if (st == OC_OK) {
        printf("ok\n");
        return 0;
    }
    printf("%s: %s\n", oc_status_name(st), err->message);
    return 1;
}

/* The `big` archive: entry `big` of `size` pattern bytes, then the model pointing at it. */
static int big(const char *path, uint64_t size) {
    oc_error err;
    oz_zip_writer *w = NULL;
    oc_model *m = oc_model_new();
    void *enc = NULL;
    uint64_t enc_n = 0;
    static unsigned char chunk[1 << 20];
    for (size_t i = 0; i < sizeof chunk; i++) chunk[i] = (unsigned char)(i % 251);
    oc_status st = m ? oz_zip_writer_open(path, 0, 0, &w, &err) : OC_ERR_NOMEM;
    if (st == OC_OK) st = oz_zip_writer_begin(w, "big", size, NULL, &err);
    for (uint64_t done = 0; st == OC_OK && done < size; done += sizeof chunk) {
        uint64_t n = size - done < sizeof chunk ? size - done : sizeof chunk;
        st = oz_zip_writer_write(w, chunk, n, &err);
    }
    if (st == OC_OK) st = oz_zip_writer_end(w, &err);
    if (st == OC_OK) {
        onnx_ModelProto *p = oc_model_proto(m);
        oc_arena *a = oc_model_arena(m);
        char len[24];
        snprintf(len, sizeof len, "%llu", (unsigned long long)size);
        p->ir_version = 9;
        OC_SET_HAS(ModelProto, p, ir_version);
        p->graph = OC_NEW(a, GraphProto);
        onnx_TensorProto *t = p->graph ? OC_ADD(a, TensorProto, p->graph->initializer) : NULL;
        onnx_StringStringEntryProto *loc =
            t ? OC_ADD(a, StringStringEntryProto, t->external_data) : NULL;
        onnx_StringStringEntryProto *ln =
            t ? OC_ADD(a, StringStringEntryProto, t->external_data) : NULL;
        int64_t *dim = t ? oc_array_push(a, &t->dims, sizeof *t->dims.items) : NULL;
        if (!loc || !ln || !dim || oc_str_set_cstr(a, &t->name, "big") != OC_OK ||
            oc_str_set_cstr(a, &loc->key, "location") != OC_OK ||
            oc_str_set_cstr(a, &loc->value, "big") != OC_OK ||
            oc_str_set_cstr(a, &ln->key, "length") != OC_OK ||
            oc_str_set_cstr(a, &ln->value, len) != OC_OK) {
            st = OC_ERR_NOMEM;
        } else {
            *dim = (int64_t)size;
            t->data_type = 2;     /* UINT8 */
            t->data_location = 1; /* EXTERNAL */
            OC_SET_HAS(TensorProto, t, name);
            OC_SET_HAS(TensorProto, t, data_type);
            OC_SET_HAS(TensorProto, t, data_location);
            OC_SET_HAS(StringStringEntryProto, loc, key);
            OC_SET_HAS(StringStringEntryProto, loc, value);
            OC_SET_HAS(StringStringEntryProto, ln, key);
            OC_SET_HAS(StringStringEntryProto, ln, value);
            st = oc_encode_to_memory(&onnx_ModelProto_desc, p, &enc, &enc_n, &err);
        }
    }
    if (st == OC_OK) st = oz_zip_writer_add(w, OZ_MODEL_ENTRY, enc, enc_n, NULL, &err);
    if (st == OC_OK) st = oz_zip_writer_finish(w, &err);
    oz_zip_writer_free(w);
    oc_model_free(m);
    free(enc);
    return report(st, &err);
}

static void options(int argc, char **argv, int from, oz_archive_options *ao, int *no_copy) {
    for (int i = from; i < argc; i++) {
        if (!strcmp(argv[i], "--deflate"))
            ao->deflate_model = 1;
        else if (!strcmp(argv[i], "--append-only"))
            ao->append_only = 1;
        else if (!strcmp(argv[i], "--no-copy"))
            *no_copy = 1;
        else if (!strcmp(argv[i], "--mapped"))
            mapped = 1;
        else if (!strcmp(argv[i], "--align") && i + 1 < argc)
            ao->serialize.buffer.alignment = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--crash-at") && i + 1 < argc)
            crash_at = argv[++i];
        else if (!strcmp(argv[i], "--pause-ms") && i + 1 < argc)
            pause_ms = strtol(argv[++i], NULL, 10);
    }
}

int main(int argc, char **argv) {
    oz_archive_options ao = OZ_ARCHIVE_OPTIONS_INIT;
    ao.serialize.buffer.raw_data_threshold = 64; /* the test models' small tensors as entries */
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oc_error err;
    oc_error_clear(&err);
    int no_copy = 0;
    oc_model *m = NULL;
    oc_status st;
    if (argc >= 4 && !strcmp(argv[1], "save")) {
        options(argc, argv, 4, &ao, &no_copy);
        st = oc_model_load_file(argv[2], &po, &m, &err);
        if (st == OC_OK) st = oz_archive_save(m, argv[3], &ao, &err);
        oc_model_free(m);
        return report(st, &err);
    }
    if (argc >= 4 && !strcmp(argv[1], "replace")) {
        options(argc, argv, 4, &ao, &no_copy);
        po.skip_external_data = 1;
        st = oc_model_load_file(argv[3], &po, &m, &err);
        oz__edit_test_hook = on_step;
        if (st == OC_OK)
            st = oz_archive_replace_model(argv[2], &onnx_ModelProto_desc, oc_model_proto(m), &ao,
                                          &err);
        oc_model_free(m);
        return report(st, &err);
    }
    if (argc >= 5 && !strcmp(argv[1], "touch")) {
        options(argc, argv, 5, &ao, &no_copy);
        po.skip_external_data = 1;
        po.no_copy = no_copy;
        po.buffer.raw_data_threshold = 0;
        oz__edit_test_hook = on_step;
        oz_archive_edit *ed = NULL;
        if (mapped) {
            st = oz_archive_load(argv[2], &po, &m, &err);
        } else {
            st = oz_archive_edit_begin(argv[2], &ao, &ed, &err);
            if (st == OC_OK) st = oz_archive_load_model(oz_archive_edit_archive(ed), &po, &m, &err);
        }
        if (st == OC_OK) {
            onnx_ModelProto *p = oc_model_proto(m);
            oc_arena *a = oc_model_arena(m);
            onnx_StringStringEntryProto *kv = OC_ADD(a, StringStringEntryProto, p->metadata_props);
            if (!kv || oc_str_set_cstr(a, &kv->key, argv[3]) != OC_OK ||
                oc_str_set_cstr(a, &kv->value, argv[4]) != OC_OK) {
                oc_model_free(m);
                return report(OC_ERR_NOMEM, &err);
            }
            OC_SET_HAS(StringStringEntryProto, kv, key);
            OC_SET_HAS(StringStringEntryProto, kv, value);
            st = ed ? oz_archive_edit_commit(ed, &onnx_ModelProto_desc, p, &err)
                    : oz_archive_replace_model(argv[2], &onnx_ModelProto_desc, p, &ao, &err);
        }
        oz_archive_edit_end(ed);
        oc_model_free(m);
        return report(st, &err);
    }
    if (argc == 3 && !strcmp(argv[1], "recover")) {
        oz_archive_edit *ed = NULL;
        st = oz_archive_edit_begin(argv[2], NULL, &ed, &err);
        oz_archive_edit_end(ed);
        return report(st, &err);
    }
    if ((argc == 4 || argc == 5) && !strcmp(argv[1], "load")) {
        oz_zip_reader_options zo = OZ_ZIP_READER_OPTIONS_INIT;
        zo.use_pread = argc == 5 && !strcmp(argv[4], "--pread");
        oz_archive *ar = NULL;
        st = oz_archive_open(argv[2], &zo, &ar, &err);
        if (st == OC_OK) st = oz_archive_load_model(ar, &po, &m, &err);
        oz_archive_close(ar);
        if (st == OC_OK) st = oc_model_save_file(m, argv[3], NULL, &err);
        oc_model_free(m);
        return report(st, &err);
    }
    if (argc == 4 && !strcmp(argv[1], "model")) {
        po.skip_external_data = 1;
        st = oz_archive_load(argv[2], &po, &m, &err);
        if (st == OC_OK) st = oc_model_save_file(m, argv[3], NULL, &err);
        oc_model_free(m);
        return report(st, &err);
    }
    if (argc == 4 && !strcmp(argv[1], "big")) return big(argv[2], strtoull(argv[3], NULL, 10));
    if (argc == 3 && !strcmp(argv[1], "space")) {
        oz_archive *ar = NULL;
        st = oz_archive_open(argv[2], NULL, &ar, &err);
        if (st != OC_OK) return report(st, &err);
        oz_archive_space s;
        oz_archive_get_space(ar, &s);
        oz_archive_close(ar);
        printf("%llu %llu %llu\n", (unsigned long long)s.file_size,
               (unsigned long long)s.archive_size, (unsigned long long)s.unused_bytes);
        return 0;
    }
    fprintf(stderr, "usage: see the comment at the top of edit_driver.c\n");
    return 2;
}
