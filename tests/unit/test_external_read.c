/*
 * test_external_read.c - external data read with pread (use_pread, spec E-13) when the
 * data file fails under the load: cut short after it was opened and measured, or a read
 * that fails (EIO). The error is the tensor's, like every other of a load: it names the
 * tensor, its offset is OC_NO_OFFSET (the data file's offset is no offset of the model's
 * input; the mapped load reports none), an I/O error keeps its errno; with and without
 * checksums (hashed in the copy read), on 1 and 2 threads.
 *
 * And the rule of each error the loader raises about a pair, in err->rule: a checksum
 * that is no SHA-1 (E-1) or that differs (E-15), a pair whose lock another process holds
 * (E-25).
 *
 * The test interposes pread: the library's calls on the data file cut it short, or fail,
 * at the first read of it.
 */
#undef _FILE_OFFSET_BITS /* pread and pread64 both as themselves: both are interposed */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"

static const char *work_dir = "/tmp";
static char victim[PATH_MAX]; /* the data file */
static int armed;             /* 1: cut it short at its next read, 2: fail that read */

ssize_t pread64(int fd, void *buf, size_t n, off64_t at);
ssize_t pread64(int fd, void *buf, size_t n, off64_t at) {
    if (armed) {
        char link[64], target[PATH_MAX];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t k = readlink(link, target, sizeof target - 1);
        target[k > 0 ? k : 0] = '\0';
        if (strcmp(target, victim) == 0) {
            int how = armed;
            armed = 0;
            if (how == 2) {
                errno = EIO;
                return -1;
            }
            if (truncate(victim, 100) != 0) return -1;
        }
    }
    return (ssize_t)syscall(SYS_pread64, fd, buf, n, at);
}

ssize_t pread(int fd, void *buf, size_t n, off_t at) { return pread64(fd, buf, n, at); }

static void add_entry(oc_arena *a, onnx_TensorProto *t, const char *key, const char *value) {
    onnx_StringStringEntryProto *e = OC_ADD(a, StringStringEntryProto, t->external_data);
    oc_str_set_cstr(a, &e->key, key);
    OC_SET_HAS(StringStringEntryProto, e, key);
    oc_str_set_cstr(a, &e->value, value);
    OC_SET_HAS(StringStringEntryProto, e, value);
}

/* A UINT8 tensor whose length bytes at offset of the data file loc hold its data. */
static onnx_TensorProto *add_tensor(oc_arena *a, onnx_GraphProto *g, const char *name,
                                    const char *loc, const char *offset, const char *length,
                                    const char *checksum) {
    onnx_TensorProto *t = OC_ADD(a, TensorProto, g->initializer);
    oc_str_set_cstr(a, &t->name, name);
    OC_SET_HAS(TensorProto, t, name);
    t->data_type = 2; /* UINT8 */
    OC_SET_HAS(TensorProto, t, data_type);
    t->data_location = 1; /* EXTERNAL */
    OC_SET_HAS(TensorProto, t, data_location);
    add_entry(a, t, "location", loc);
    add_entry(a, t, "offset", offset);
    add_entry(a, t, "length", length);
    if (checksum) add_entry(a, t, "checksum", checksum);
    return t;
}

static void test_cut_and_failed_reads(void) {
    char dir[PATH_MAX], model[PATH_MAX + 16];
    REQUIRE(td_make(work_dir, "external_read", dir, sizeof dir) == 0);
    snprintf(victim, sizeof victim, "%.4000s/w.bin", dir);
    snprintf(model, sizeof model, "%s/m.onnx", dir);
    static uint8_t data[8192];
    for (unsigned i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 31u + 7u);

    /* one tensor, bytes [4096, +4096) of w.bin (with a checksum that the cut decides
     * before it is compared) */
    oc_model *m = tm_model_new();
    add_tensor(oc_model_arena(m), oc_model_proto(m)->graph, "w", "w.bin", "4096", "4096",
               "0000000000000000000000000000000000000000");
    oc_error err;
    CHECK_OK(oc_model_save_file(m, model, NULL, &err), &err);
    oc_model_free(m);

    for (int mode = 0; mode < 8; mode++) {
        int how = 1 + (mode & 1), verify = (mode >> 1) & 1, threads = mode & 4 ? 2 : 1;
        if (verify && !oc_crypt_available()) continue;
        REQUIRE(td_write(victim, data, sizeof data) == 0);
        oc_parse_options po = OC_PARSE_OPTIONS_INIT;
        po.use_pread = 1;
        po.verify_checksums = verify;
        po.num_threads = threads;
        oc_model *out = NULL;
        armed = how;
        oc_status st = oc_model_load_file(model, &po, &out, &err);
        armed = 0;
        CHECK_STATUS(st, how == 1 ? OC_ERR_TRUNCATED : OC_ERR_IO, &err);
        CHECK(out == NULL);
        CHECK_EQ(err.offset, OC_NO_OFFSET);
        CHECK(strstr(err.message, "tensor 'w'") != NULL);
        if (how == 2) CHECK_EQ(err.sys_errno, EIO);
        oc_model_free(out);
    }
    td_remove(dir);
}

/* A failed read is no earlier than the mapped load's errors (E-13, E-15): a later
 * tensor's bad reference is reported first (references are all checked before any read
 * can fail the load), and an earlier tensor's checksum mismatch too (the first failure in
 * model order), though w.bin is read, and fails, as soon as its last tensor is resolved. */
static void test_read_failure_order(void) {
    char dir[PATH_MAX], model[PATH_MAX + 16], path[PATH_MAX + 16];
    REQUIRE(td_make(work_dir, "external_read_order", dir, sizeof dir) == 0);
    snprintf(victim, sizeof victim, "%.4000s/w.bin", dir);
    static uint8_t data[8192];
    for (unsigned i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 13u + 1u);
    snprintf(path, sizeof path, "%s/c.bin", dir);
    REQUIRE(td_write(path, data, 4096) == 0);
    snprintf(path, sizeof path, "%s/x.bin", dir);
    REQUIRE(td_write(path, data, 100) == 0);
    const char *zeros = "0000000000000000000000000000000000000000";
    for (int kind = 0; kind < 2; kind++) {
        /* 0: w (its read fails), then x past the end of x.bin; 1: c (a checksum that does
         * not match), then w */
        oc_model *m = tm_model_new();
        oc_arena *a = oc_model_arena(m);
        onnx_GraphProto *g = oc_model_proto(m)->graph;
        if (kind == 1) add_tensor(a, g, "c", "c.bin", "0", "100", zeros);
        add_tensor(a, g, "w", "w.bin", "4096", "100", NULL);
        if (kind == 0) add_tensor(a, g, "x", "x.bin", "200", "100", NULL);
        snprintf(model, sizeof model, "%s/m%d.onnx", dir, kind);
        oc_error err;
        CHECK_OK(oc_model_save_file(m, model, NULL, &err), &err);
        oc_model_free(m);
        for (int mode = 0; mode < 8; mode++) {
            int how = 1 + (mode & 1), verify = (mode >> 1) & 1, threads = mode & 4 ? 2 : 1;
            if (kind == 1 && !verify) continue;
            if (verify && !oc_crypt_available()) continue;
            REQUIRE(td_write(victim, data, sizeof data) == 0);
            oc_parse_options po = OC_PARSE_OPTIONS_INIT;
            po.use_pread = 1;
            po.verify_checksums = verify;
            po.num_threads = threads;
            oc_model *out = NULL;
            armed = how;
            oc_status st = oc_model_load_file(model, &po, &out, &err);
            armed = 0;
            CHECK_STATUS(st, kind == 0 ? OC_ERR_TRUNCATED : OC_ERR_CHECKSUM, &err);
            CHECK(out == NULL);
            CHECK(strstr(err.message, kind == 0 ? "tensor 'x'" : "tensor 'c'") != NULL);
            oc_model_free(out);
        }
    }
    td_remove(dir);
}

/* err->rule holds the rule of each pair error, as the message ends with it. */
static void test_rules(void) {
    char dir[PATH_MAX], model[PATH_MAX + 16], path[PATH_MAX + 16];
    REQUIRE(td_make(work_dir, "external_read_rules", dir, sizeof dir) == 0);
    static uint8_t data[100];
    snprintf(path, sizeof path, "%s/c.bin", dir);
    REQUIRE(td_write(path, data, sizeof data) == 0);
    static const char *const sums[][2] = {{"xyz", "E-1"},
                                          {"0000000000000000000000000000000000000000", "E-15"}};
    oc_error err;
    for (int k = 0; k < 2; k++) {
        oc_model *m = oc_model_new();
        onnx_ModelProto *mp = oc_model_proto(m);
        mp->graph = OC_NEW(oc_model_arena(m), GraphProto);
        add_tensor(oc_model_arena(m), mp->graph, "c", "c.bin", "0", "100", sums[k][0]);
        snprintf(model, sizeof model, "%s/m%d.onnx", dir, k);
        CHECK_OK(oc_model_save_file(m, model, NULL, &err), &err);
        oc_model_free(m);
        oc_parse_options po = OC_PARSE_OPTIONS_INIT;
        po.verify_checksums = 1;
        oc_model *out = NULL;
        if (oc_crypt_available()) {
            CHECK_STATUS(oc_model_load_file(model, &po, &out, &err), OC_ERR_CHECKSUM, &err);
            CHECK(strcmp(err.rule, sums[k][1]) == 0);
        }
        oc_model_free(out);
    }
    /* E-25: a save of a pair while another holds the directory's lock (here: this
     * process, through another open file). */
    oc_model *m = NULL;
    CHECK_OK(oc_model_load_file(model, NULL, &m, &err), &err);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    REQUIRE(fd >= 0 && flock(fd, LOCK_EX) == 0);
    oc_serialize_options so = OC_SERIALIZE_OPTIONS_INIT;
    so.external_data = "two.bin";
    so.buffer.raw_data_threshold = 0;
    snprintf(path, sizeof path, "%s/two.onnx", dir);
    CHECK_STATUS(oc_model_save_file(m, path, &so, &err), OC_ERR_BUSY, &err);
    CHECK(strcmp(err.rule, "E-25") == 0);
    oc_model_free(m);
    close(fd);
    td_remove(dir);
}

int main(int argc, char **argv) {
    if (argc > 1) work_dir = argv[1];
    test_cut_and_failed_reads();
    test_read_failure_order();
    test_rules();
    return check_report("test_external_read");
}
