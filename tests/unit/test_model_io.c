/*
 * test_model_io.c - models in memory and in files (model.h): round trips, atomic saves,
 * failures that leave nothing behind, no_copy file mappings that outlive the model and the
 * file's name, clones, and the generic message load/save.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"
#include "wire.h"

static char dir[4096];

static void pathof(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", dir, name);
}

static uint8_t pattern(uint64_t i, unsigned seed) { return (uint8_t)(i * 131u + seed + (i >> 12)); }

static void set_raw(onnx_TensorProto *t, uint64_t n, unsigned seed) {
    uint8_t *w = NULL;
    if (oc_bytes_set_alloc(&t->raw_data, n, &w, NULL) != OC_OK) return;
    for (uint64_t i = 0; i < n; i++) w[i] = pattern(i, seed);
    OC_SET_HAS(TensorProto, t, raw_data);
}

static int raw_ok(const onnx_TensorProto *t, uint64_t n, unsigned seed) {
    if (!t || t->raw_data.size != n || (n && !t->raw_data.data)) return 0;
    for (uint64_t i = 0; i < n; i++)
        if (t->raw_data.data[i] != pattern(i, seed)) return 0;
    return 1;
}

enum { BIG = 1u << 20, SMALL = 16 };

/* A model: W (1 MiB raw_data), s (16 bytes), an int64 tensor, a node, unknown fields. */
static oc_model *make_model(void) {
    oc_model *model = oc_model_new();
    if (!model) return NULL;
    oc_arena *a = oc_model_arena(model);
    onnx_ModelProto *m = oc_model_proto(model);
    SETV(ModelProto, m, ir_version, 10);
    SETS(ModelProto, m, producer_name, a, "test_model_io");
    onnx_OperatorSetIdProto *op = OC_ADD(a, OperatorSetIdProto, m->opset_import);
    SETS(OperatorSetIdProto, op, domain, a, "");
    SETV(OperatorSetIdProto, op, version, 21);
    onnx_GraphProto *g = m->graph = OC_NEW(a, GraphProto);
    SETS(GraphProto, g, name, a, "g");
    onnx_NodeProto *n = OC_ADD(a, NodeProto, g->node);
    SETS(NodeProto, n, op_type, a, "Add");
    onnx_TensorProto *t = OC_ADD(a, TensorProto, g->initializer);
    SETS(TensorProto, t, name, a, "W");
    int64_t *d = oc_array_push(a, &t->dims, sizeof(int64_t));
    if (d) *d = BIG / 4;
    SETV(TensorProto, t, data_type, 1);
    set_raw(t, BIG, 1);
    t = OC_ADD(a, TensorProto, g->initializer);
    SETS(TensorProto, t, name, a, "s");
    set_raw(t, SMALL, 2);
    t = OC_ADD(a, TensorProto, g->initializer);
    SETS(TensorProto, t, name, a, "i");
    SETV(TensorProto, t, data_type, 7);
    int64_t *v = oc_array_push(a, &t->int64_data, sizeof(int64_t));
    if (v) *v = -5;
    /* An unknown field on the model, kept through every round trip. */
    wbuf u = {0};
    wb_str(&u, 1000, "future field");
    oc_str_set(a, &m->hdr.unknown, u.p, u.n);
    wb_free(&u);
    return model;
}

static onnx_TensorProto *init(oc_model *model, const char *name) {
    onnx_ModelProto *m = oc_model_proto(model);
    if (!m || !m->graph) return NULL;
    for (uint64_t i = 0; i < m->graph->initializer.count; i++)
        if (oc_str_eq(m->graph->initializer.items[i]->name, name))
            return m->graph->initializer.items[i];
    return NULL;
}

static int save_mem(const oc_model *m, void **out, uint64_t *size) {
    oc_error err;
    oc_error_clear(&err);
    return CHECK_OK(oc_model_save_memory(m, NULL, out, size, &err), &err);
}

/* Same bytes as expected */
static int file_is(const char *path, const void *data, uint64_t size) {
    size_t n = 0;
    uint8_t *f = td_read(path, &n);
    int ok = f && n == size && (size == 0 || memcmp(f, data, (size_t)size) == 0);
    free(f);
    return ok;
}

static void test_memory_roundtrip(void) {
    oc_model *m = make_model();
    REQUIRE(m != NULL);
    void *b1 = NULL, *b2 = NULL;
    uint64_t n1 = 0, n2 = 0;
    REQUIRE(save_mem(m, &b1, &n1));
    CHECK(n1 > BIG);
    uint64_t sz = 0;
    CHECK_OK(oc_encoded_size(&onnx_ModelProto_desc, oc_model_proto_const(m), &sz, NULL), NULL);
    CHECK_EQ(sz, n1);

    oc_model *l = NULL;
    oc_error err;
    oc_error_clear(&err);
    CHECK_OK(oc_model_load_memory(b1, n1, NULL, &l, &err), &err);
    REQUIRE(l != NULL);
    CHECK(raw_ok(init(l, "W"), BIG, 1));
    CHECK(raw_ok(init(l, "s"), SMALL, 2));
    CHECK_EQ(init(l, "W")->raw_data.mode, OC_BYTES_OWNED);
    CHECK(oc_str_eq(oc_model_proto(l)->producer_name, "test_model_io"));
    REQUIRE(save_mem(l, &b2, &n2));
    CHECK_EQ(n1, n2);
    CHECK(n1 == n2 && memcmp(b1, b2, (size_t)n1) == 0);
    free(b2);

    /* no_copy from memory: the big tensor borrows from the buffer, the small one is
     * copied (default threshold 1024). */
    oc_parse_options o = OC_PARSE_OPTIONS_INIT;
    o.no_copy = 1;
    oc_model *nc = NULL;
    CHECK_OK(oc_model_load_memory(b1, n1, &o, &nc, &err), &err);
    REQUIRE(nc != NULL);
    onnx_TensorProto *w = init(nc, "W");
    REQUIRE(w != NULL);
    CHECK_EQ(w->raw_data.mode, OC_BYTES_BORROWED);
    CHECK((const uint8_t *)w->raw_data.data >= (const uint8_t *)b1 &&
          (const uint8_t *)w->raw_data.data < (const uint8_t *)b1 + n1);
    CHECK_EQ(init(nc, "s")->raw_data.mode, OC_BYTES_OWNED);
    REQUIRE(save_mem(nc, &b2, &n2));
    CHECK(n1 == n2 && memcmp(b1, b2, (size_t)n1) == 0);
    free(b2);

    /* A clone of a model that borrows keeps borrowing; a clone of an owned model owns. */
    oc_model *c = NULL;
    CHECK_OK(oc_model_clone(nc, &c, &err), &err);
    REQUIRE(c != NULL);
    CHECK_EQ(init(c, "W")->raw_data.mode, OC_BYTES_BORROWED);
    CHECK_PTR_EQ(init(c, "W")->raw_data.data, w->raw_data.data);
    oc_model_free(c);
    oc_model_free(nc);

    oc_model *c2 = NULL;
    CHECK_OK(oc_model_clone(l, &c2, &err), &err);
    REQUIRE(c2 != NULL);
    CHECK(oc_model_proto(c2) != oc_model_proto(l));
    onnx_TensorProto *cw = init(c2, "W");
    REQUIRE(cw != NULL);
    CHECK_EQ(cw->raw_data.mode, OC_BYTES_OWNED);
    CHECK(cw->raw_data.data != init(l, "W")->raw_data.data);
    CHECK(((uintptr_t)cw->raw_data.data % 64) == 0);
    oc_model_free(l);
    CHECK(raw_ok(init(c2, "W"), BIG, 1));
    REQUIRE(save_mem(c2, &b2, &n2));
    CHECK(n1 == n2 && memcmp(b1, b2, (size_t)n1) == 0);
    free(b2);
    oc_model_free(c2);

    /* A malformed buffer fails with an explanation. */
    const uint8_t bad[] = {0x08, 0x01, 0x3a, 0x10, 0x0a};
    oc_model *bm = NULL;
    oc_error_clear(&err);
    CHECK_STATUS(oc_model_load_memory(bad, sizeof bad, NULL, &bm, &err), OC_ERR_TRUNCATED, &err);
    CHECK(err.message[0] != '\0');
    if (bm) oc_model_free(bm);

    /* An empty model saves as zero bytes; zero bytes load as an empty model. */
    oc_model *e = oc_model_new();
    REQUIRE(e != NULL);
    void *eb = NULL;
    uint64_t en = 99;
    CHECK(save_mem(e, &eb, &en));
    CHECK_EQ(en, 0);
    free(eb);
    oc_model_free(e);
    e = NULL;
    CHECK_OK(oc_model_load_memory("", 0, NULL, &e, &err), &err);
    if (CHECK(e != NULL)) {
        CHECK_EQ(oc_model_proto(e)->hdr.has, 0);
        CHECK_PTR_EQ(oc_model_proto(e)->graph, NULL);
    }
    oc_model_free(e);
    oc_model_free(NULL);
    free(b1);
    oc_model_free(m);
}

static void test_file_roundtrip(void) {
    oc_model *m = make_model();
    REQUIRE(m != NULL);
    void *b1 = NULL;
    uint64_t n1 = 0;
    REQUIRE(save_mem(m, &b1, &n1));
    char p[4200];
    pathof(p, sizeof p, "model.onnx");
    oc_error err;
    oc_error_clear(&err);
    mode_t old_umask = umask(022);
    CHECK_OK(oc_model_save_file(m, p, NULL, &err), &err);
    umask(old_umask);
    CHECK(file_is(p, b1, n1));
    /* The file gets the mode a plain creat() would give: 0666 less the umask (W-30). */
    struct stat st;
    if (CHECK(stat(p, &st) == 0)) CHECK_EQ(st.st_mode & 0777, 0644);
    /* Nothing else is left in the directory. */
    CHECK_EQ(td_count(dir, 0), 1);

    oc_model *l = NULL;
    CHECK_OK(oc_model_load_file(p, NULL, &l, &err), &err);
    REQUIRE(l != NULL);
    void *b2 = NULL;
    uint64_t n2 = 0;
    REQUIRE(save_mem(l, &b2, &n2));
    CHECK(n1 == n2 && memcmp(b1, b2, (size_t)n1) == 0);
    CHECK_EQ(init(l, "W")->raw_data.mode, OC_BYTES_OWNED);
    /* A copy load drops the mapping before it returns (W-31). */
    CHECK_EQ(td_mapped(p), 0);
    free(b2);
    oc_model_free(l);

    /* Saving over an existing file replaces it through a rename: a descriptor open on the
     * old file still reads the old bytes, and the inode changes. */
    int fd = open(p, O_RDONLY);
    CHECK(fd >= 0);
    struct stat before;
    CHECK(fstat(fd, &before) == 0);
    oc_model *m2 = oc_model_new();
    REQUIRE(m2 != NULL);
    SETS(ModelProto, oc_model_proto(m2), doc_string, oc_model_arena(m2), "replacement");
    CHECK_OK(oc_model_save_file(m2, p, NULL, &err), &err); /* NULL options: replaces */
    void *b3 = NULL;
    uint64_t n3 = 0;
    REQUIRE(save_mem(m2, &b3, &n3));
    CHECK(file_is(p, b3, n3));
    if (CHECK(stat(p, &st) == 0)) CHECK(st.st_ino != before.st_ino);
    if (fd >= 0) {
        uint8_t head[64];
        ssize_t got = pread(fd, head, sizeof head, 0);
        CHECK_EQ(got, 64);
        CHECK(got == 64 && memcmp(head, b1, 64) == 0);
        close(fd);
    }
    CHECK_EQ(td_count(dir, 0), 1);

    /* no_overwrite onto an existing file: OC_ERR_EXISTS, the file untouched. */
    oc_serialize_options so = OC_SERIALIZE_OPTIONS_INIT;
    so.no_overwrite = 1;
    oc_error_clear(&err);
    CHECK_STATUS(oc_model_save_file(m, p, &so, &err), OC_ERR_EXISTS, &err);
    CHECK_EQ(err.code, OC_ERR_EXISTS);
    CHECK(err.message[0] != '\0');
    CHECK(file_is(p, b3, n3));
    if (td_count(dir, 0) != 1) {
        CHECK(!"leftovers after OC_ERR_EXISTS");
        td_count(dir, 1);
    }
    /* no_overwrite onto a new name works. */
    char p2[4200];
    pathof(p2, sizeof p2, "fresh.onnx");
    CHECK_OK(oc_model_save_file(m, p2, &so, &err), &err);
    CHECK(file_is(p2, b1, n1));
    unlink(p2);
    unlink(p);

    /* A relative path without a directory part: the temporary file goes to the current
     * directory. */
    char cwd[4096];
    if (CHECK(getcwd(cwd, sizeof cwd) != NULL) && CHECK(chdir(dir) == 0)) {
        CHECK_OK(oc_model_save_file(m, "relative.onnx", NULL, &err), &err);
        CHECK(file_is("relative.onnx", b1, n1));
        CHECK_EQ(td_count(".", 0), 1);
        unlink("relative.onnx");
        CHECK(chdir(cwd) == 0);
    }
    free(b1);
    free(b3);
    oc_model_free(m2);
    oc_model_free(m);
}

static void test_failed_saves(void) {
    oc_model *m = make_model();
    REQUIRE(m != NULL);
    oc_error err;
    char p[4200];
    int before = td_count(dir, 0);

    /* A target in a directory that does not exist. */
    pathof(p, sizeof p, "no-such-dir/model.onnx");
    oc_error_clear(&err);
    /* ENOENT maps to OC_ERR_NOT_FOUND everywhere (status.h: a named file does not exist). */
    CHECK_STATUS(oc_model_save_file(m, p, NULL, &err), OC_ERR_NOT_FOUND, &err);
    CHECK_EQ(err.sys_errno, ENOENT);
    CHECK(err.message[0] != '\0');
    CHECK_EQ(td_count(dir, 0), before);

    /* A target whose "directory" is a file. */
    char f[4200];
    pathof(f, sizeof f, "plain-file");
    CHECK(td_write(f, "x", 1) == 0);
    before = td_count(dir, 0);
    pathof(p, sizeof p, "plain-file/model.onnx");
    oc_error_clear(&err);
    CHECK_STATUS(oc_model_save_file(m, p, NULL, &err), OC_ERR_IO, &err);
    CHECK_EQ(err.sys_errno, ENOTDIR);
    CHECK_EQ(td_count(dir, 0), before);
    unlink(f);

    /* A target that is a directory (no_overwrite off): the rename fails; the directory and its
     * contents stay, no temporary file is left beside it. */
    char d[4200], inner[4300];
    pathof(d, sizeof d, "a-directory");
    CHECK(mkdir(d, 0777) == 0);
    snprintf(inner, sizeof inner, "%s/keep", d);
    CHECK(td_write(inner, "keep", 4) == 0);
    before = td_count(dir, 0);
    oc_error_clear(&err);
    CHECK_STATUS(oc_model_save_file(m, d, NULL, &err), OC_ERR_IO, &err);
    CHECK(err.sys_errno != 0);
    CHECK(err.message[0] != '\0');
    if (!CHECK_EQ(td_count(dir, 0), before)) td_count(dir, 1);
    CHECK_EQ(td_count(d, 0), 1);
    CHECK(file_is(inner, "keep", 4));
    /* ... and with no_overwrite, it exists. */
    oc_serialize_options so = OC_SERIALIZE_OPTIONS_INIT;
    so.no_overwrite = 1;
    CHECK_STATUS(oc_model_save_file(m, d, &so, &err), OC_ERR_EXISTS, &err);
    CHECK_EQ(td_count(dir, 0), before);
    unlink(inner);
    rmdir(d);

    /* A write that fails half-way (the file size limit: EFBIG) over an existing target:
     * the old content is intact and the temporary file is gone. */
    pathof(p, sizeof p, "existing.onnx");
    CHECK(td_write(p, "old content", 11) == 0);
    before = td_count(dir, 0);
    struct rlimit saved, lim;
    if (CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0)) {
        void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
        lim = saved;
        lim.rlim_cur = 64 * 1024; /* the model is larger than 1 MiB */
        CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
        oc_error_clear(&err);
        oc_status st = oc_model_save_file(m, p, NULL, &err);
        setrlimit(RLIMIT_FSIZE, &saved);
        signal(SIGXFSZ, old_handler);
        CHECK_STATUS(st, OC_ERR_IO, &err);
        CHECK_EQ(err.sys_errno, EFBIG);
        CHECK(err.message[0] != '\0');
        CHECK(file_is(p, "old content", 11));
        if (!CHECK_EQ(td_count(dir, 0), before)) td_count(dir, 1);
        /* The same save with the limit lifted succeeds. */
        CHECK_OK(oc_model_save_file(m, p, NULL, &err), &err);
        CHECK(!file_is(p, "old content", 11));
        CHECK_EQ(td_count(dir, 0), before);
    }
    unlink(p);

    /* With no_overwrite, a save split over data files refuses while a part of its
     * location's name is there (LOCATION.N, one another save left), naming it, before
     * anything is written. */
    char stale[4200], part[4300];
    pathof(p, sizeof p, "split.onnx");
    pathof(stale, sizeof stale, "split.data.7");
    CHECK(td_write(stale, "old", 3) == 0);
    before = td_count(dir, 0);
    so.no_overwrite = 1;
    so.external_data = "split.data";
    so.max_external_file_size = 1u << 20;
    CHECK_STATUS(oc_model_save_file(m, p, &so, &err), OC_ERR_EXISTS, &err);
    CHECK(err.file_len == strlen(stale) &&
          strncmp(err.message + err.file_at, stale, err.file_len) == 0);
    CHECK_EQ(td_count(dir, 0), before);
    CHECK(file_is(stale, "old", 3));
    so.no_overwrite = 0;
    CHECK_OK(oc_model_save_file(m, p, &so, &err), &err);
    unlink(p);
    unlink(stale);
    for (int i = 0; i < 16; i++) {
        pathof(part, sizeof part, "split.data");
        if (i) snprintf(part + strlen(part), sizeof part - strlen(part), ".%d", i);
        unlink(part);
    }
    oc_model_free(m);
}

static void test_load_failures(void) {
    oc_model *l = NULL;
    oc_error err;
    char p[4200];

    /* Missing file. */
    pathof(p, sizeof p, "missing.onnx");
    oc_error_clear(&err);
    oc_status st = oc_model_load_file(p, NULL, &l, &err);
    CHECK(st == OC_ERR_NOT_FOUND || st == OC_ERR_IO);
    CHECK_EQ(err.code, st);
    CHECK(err.message[0] != '\0');
    if (st == OC_ERR_IO) CHECK_EQ(err.sys_errno, ENOENT);
    if (l) oc_model_free(l);
    l = NULL;
    /* ... with no_copy too. */
    oc_parse_options o = OC_PARSE_OPTIONS_INIT;
    o.no_copy = 1;
    st = oc_model_load_file(p, &o, &l, &err);
    CHECK(st == OC_ERR_NOT_FOUND || st == OC_ERR_IO);
    if (l) oc_model_free(l);
    l = NULL;

    /* A directory, a FIFO (must not block waiting for a writer): not regular files. */
    oc_error_clear(&err);
    st = oc_model_load_file(dir, NULL, &l, &err);
    CHECK_STATUS(st, OC_ERR_IO, &err);
    CHECK(err.message[0] != '\0');
    if (l) oc_model_free(l);
    l = NULL;
    pathof(p, sizeof p, "fifo");
    if (CHECK(mkfifo(p, 0600) == 0)) {
        alarm(20); /* a hang becomes a failure */
        oc_error_clear(&err);
        st = oc_model_load_file(p, NULL, &l, &err);
        alarm(0);
        CHECK_STATUS(st, OC_ERR_IO, &err);
        if (l) oc_model_free(l);
        l = NULL;
        unlink(p);
    }

    /* An empty file is an empty ModelProto, copied or mapped. */
    pathof(p, sizeof p, "empty.onnx");
    CHECK(td_write(p, "", 0) == 0);
    for (int nc = 0; nc <= 1; nc++) {
        o.no_copy = nc;
        oc_error_clear(&err);
        CHECK_OK(oc_model_load_file(p, &o, &l, &err), &err);
        if (CHECK(l != NULL)) {
            CHECK_EQ(oc_model_proto(l)->hdr.has, 0);
            CHECK_PTR_EQ(oc_model_proto(l)->graph, NULL);
            CHECK_EQ(oc_model_proto(l)->hdr.unknown.size, 0);
            void *b = NULL;
            uint64_t n = 1;
            CHECK(save_mem(l, &b, &n));
            CHECK_EQ(n, 0);
            free(b);
        }
        oc_model_free(l);
        l = NULL;
    }
    unlink(p);

    /* A truncated file. */
    oc_model *m = make_model();
    REQUIRE(m != NULL);
    void *b = NULL;
    uint64_t n = 0;
    REQUIRE(save_mem(m, &b, &n));
    pathof(p, sizeof p, "cut.onnx");
    CHECK(td_write(p, b, (size_t)(n - 100)) == 0);
    for (int nc = 0; nc <= 1; nc++) {
        o.no_copy = nc;
        oc_error_clear(&err);
        CHECK_STATUS(oc_model_load_file(p, &o, &l, &err), OC_ERR_TRUNCATED, &err);
        CHECK(err.offset <= n - 100);
        if (l) oc_model_free(l);
        l = NULL;
    }
    /* A failed no_copy load leaves no mapping behind. */
    CHECK_EQ(td_mapped(p), 0);
    unlink(p);
    free(b);
    oc_model_free(m);
}

static void test_no_copy_file(void) {
    oc_model *m = make_model();
    REQUIRE(m != NULL);
    void *b1 = NULL;
    uint64_t n1 = 0;
    REQUIRE(save_mem(m, &b1, &n1));
    oc_model_free(m);
    char p[4200];
    pathof(p, sizeof p, "mapped.onnx");
    CHECK(td_write(p, b1, (size_t)n1) == 0);

    oc_parse_options o = OC_PARSE_OPTIONS_INIT;
    o.no_copy = 1;
    oc_model *l = NULL;
    oc_error err;
    oc_error_clear(&err);
    CHECK_OK(oc_model_load_file(p, &o, &l, &err), &err);
    REQUIRE(l != NULL);
    onnx_TensorProto *w = init(l, "W");
    REQUIRE(w != NULL);
    CHECK_EQ(w->raw_data.mode, OC_BYTES_SHARED);
    CHECK(w->raw_data.owner != NULL);
    CHECK(oc_bytes_is_borrowed(&w->raw_data));
    CHECK(raw_ok(w, BIG, 1));
    CHECK_EQ(init(l, "s")->raw_data.mode, OC_BYTES_OWNED); /* below the threshold */
    CHECK(raw_ok(init(l, "s"), SMALL, 2));
    CHECK_EQ(td_mapped(p), 1);
    oc_owner *own = w->raw_data.owner;
    uint64_t rc = oc_owner_refcount(own);
    CHECK(rc >= 1);

    /* The clone shares the mapping. */
    oc_model *c = NULL;
    CHECK_OK(oc_model_clone(l, &c, &err), &err);
    REQUIRE(c != NULL);
    onnx_TensorProto *cw = init(c, "W");
    REQUIRE(cw != NULL);
    CHECK_EQ(cw->raw_data.mode, OC_BYTES_SHARED);
    CHECK_PTR_EQ(cw->raw_data.owner, own);
    CHECK_PTR_EQ(cw->raw_data.data, w->raw_data.data);
    CHECK(oc_owner_refcount(own) > rc);
    CHECK(init(c, "s")->raw_data.data != init(l, "s")->raw_data.data);

    uint64_t rc_clone = oc_owner_refcount(own);
    /* The original goes, then the file's name: the clone's tensors stay valid. */
    oc_model_free(l);
    CHECK(oc_owner_refcount(own) < rc_clone);
    CHECK(oc_owner_refcount(own) >= 1);
    CHECK(raw_ok(cw, BIG, 1));
    CHECK(unlink(p) == 0);
    CHECK(raw_ok(cw, BIG, 1));
    CHECK(raw_ok(init(c, "s"), SMALL, 2));
    CHECK_EQ(td_mapped(p), 1);
    void *b2 = NULL;
    uint64_t n2 = 0;
    REQUIRE(save_mem(c, &b2, &n2));
    CHECK(n1 == n2 && memcmp(b1, b2, (size_t)n1) == 0);
    free(b2);

    /* A span copied out of the model keeps the mapping after the model is gone. */
    oc_bytes kept = {0};
    CHECK_OK(oc_bytes_copy(&kept, &cw->raw_data, &err), &err);
    oc_model_free(c);
    CHECK_EQ(td_mapped(p), 1);
    CHECK_EQ(kept.size, BIG);
    CHECK(kept.size == BIG && kept.data[BIG - 1] == pattern(BIG - 1, 1));
    oc_bytes_release(&kept);
    /* The last reference is gone: so is the mapping. */
    CHECK_EQ(td_mapped(p), 0);

    /* threshold 0: even the small tensor shares the mapping. */
    CHECK(td_write(p, b1, (size_t)n1) == 0);
    o.buffer.raw_data_threshold = 0;
    CHECK_OK(oc_model_load_file(p, &o, &l, &err), &err);
    REQUIRE(l != NULL);
    CHECK_EQ(init(l, "s")->raw_data.mode, OC_BYTES_SHARED);
    CHECK_PTR_EQ(init(l, "s")->raw_data.owner, init(l, "W")->raw_data.owner);
    oc_model_free(l);
    CHECK_EQ(td_mapped(p), 0);
    unlink(p);
    free(b1);
}

static void test_message_files(void) {
    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);
    onnx_TensorProto *t = OC_NEW(a, TensorProto);
    REQUIRE(t != NULL);
    SETS(TensorProto, t, name, a, "tensor");
    SETV(TensorProto, t, data_type, 2);
    int64_t *d = oc_array_push(a, &t->dims, sizeof(int64_t));
    if (d) *d = 4096;
    set_raw(t, 4096, 5);
    void *b = NULL;
    uint64_t n = 0;
    oc_error err;
    oc_error_clear(&err);
    CHECK_OK(oc_encode_to_memory(&onnx_TensorProto_desc, t, &b, &n, &err), &err);

    char p[4200];
    pathof(p, sizeof p, "tensor.pb");
    CHECK_OK(oc_msg_save_file(&onnx_TensorProto_desc, t, p, NULL, &err), &err);
    CHECK(file_is(p, b, n));
    CHECK_EQ(td_count(dir, 0), 1);
    oc_serialize_options so = OC_SERIALIZE_OPTIONS_INIT;
    so.no_overwrite = 1;
    CHECK_STATUS(oc_msg_save_file(&onnx_TensorProto_desc, t, p, &so, &err), OC_ERR_EXISTS, &err);

    oc_arena *a2 = oc_arena_new();
    void *out = NULL;
    CHECK_OK(oc_msg_load_file(&onnx_TensorProto_desc, p, a2, NULL, &out, &err), &err);
    onnx_TensorProto *l = out;
    REQUIRE(l != NULL);
    CHECK(oc_str_eq(l->name, "tensor"));
    CHECK_EQ(l->data_type, 2);
    CHECK(l->dims.count == 1 && l->dims.items[0] == 4096);
    CHECK(raw_ok(l, 4096, 5));
    CHECK_EQ(l->raw_data.mode, OC_BYTES_OWNED);
    CHECK_EQ(td_mapped(p), 0);

    oc_parse_options o = OC_PARSE_OPTIONS_INIT;
    o.no_copy = 1;
    out = NULL;
    CHECK_OK(oc_msg_load_file(&onnx_TensorProto_desc, p, a2, &o, &out, &err), &err);
    l = out;
    REQUIRE(l != NULL);
    CHECK_EQ(l->raw_data.mode, OC_BYTES_SHARED);
    CHECK(raw_ok(l, 4096, 5));
    CHECK_EQ(td_mapped(p), 1);
    oc_arena_free(a2);
    CHECK_EQ(td_mapped(p), 0);

    /* Another message type: a SequenceProto of two tensors. */
    onnx_SequenceProto *s = OC_NEW(a, SequenceProto);
    SETS(SequenceProto, s, name, a, "seq");
    onnx_TensorProto *e = OC_ADD(a, TensorProto, s->tensor_values);
    set_raw(e, 2000, 6);
    e = OC_ADD(a, TensorProto, s->tensor_values);
    set_raw(e, 3, 7);
    char ps[4200];
    pathof(ps, sizeof ps, "seq.pb");
    CHECK_OK(oc_msg_save_file(&onnx_SequenceProto_desc, s, ps, NULL, &err), &err);
    a2 = oc_arena_new();
    out = NULL;
    CHECK_OK(oc_msg_load_file(&onnx_SequenceProto_desc, ps, a2, &o, &out, &err), &err);
    onnx_SequenceProto *ls = out;
    REQUIRE(ls != NULL);
    CHECK(oc_str_eq(ls->name, "seq"));
    if (CHECK_EQ(ls->tensor_values.count, 2)) {
        CHECK(raw_ok(ls->tensor_values.items[0], 2000, 6));
        CHECK(raw_ok(ls->tensor_values.items[1], 3, 7));
    }
    /* Loading bytes of the wrong type fails or yields unknown fields, never crashes. */
    void *junk = NULL;
    oc_status st = oc_msg_load_file(&onnx_ModelProto_desc, p, a2, NULL, &junk, &err);
    CHECK(st == OC_OK || st == OC_ERR_MALFORMED || st == OC_ERR_TRUNCATED);
    oc_arena_free(a2);
    unlink(ps);
    unlink(p);
    free(b);
    oc_arena_free(a);
}

/* Size caps (limits.h): at the cap a load works; one byte under it fails with
 * OC_ERR_LIMIT naming the option, from memory, a mapped file and the pread path alike. */
static void test_size_limits(void) {
    oc_model *m = make_model();
    REQUIRE(m != NULL);
    void *b = NULL;
    uint64_t n = 0;
    REQUIRE(save_mem(m, &b, &n));
    char p[4200];
    pathof(p, sizeof p, "limits.onnx");
    oc_error err;
    CHECK_OK(oc_model_save_file(m, p, NULL, &err), &err);
    for (int how = 0; how < 3; how++) {           /* memory, mapped file, pread */
        for (int which = 0; which < 2; which++) { /* max_model_bytes, max_tensor_bytes */
            uint64_t cap = which == 0 ? n : BIG;
            for (int over = 0; over < 2; over++) {
                oc_parse_options po;
                oc_parse_options_init(&po);
                po.use_pread = how == 2;
                if (which == 0)
                    po.max_model_bytes = cap - (uint64_t)over;
                else
                    po.max_tensor_bytes = cap - (uint64_t)over;
                oc_model *got = NULL;
                oc_status st = how == 0 ? oc_model_load_memory(b, n, &po, &got, &err)
                                        : oc_model_load_file(p, &po, &got, &err);
                if (!over) {
                    CHECK_OK(st, &err);
                    CHECK(got && raw_ok(init(got, "W"), BIG, 1));
                } else {
                    CHECK_STATUS(st, OC_ERR_LIMIT, &err);
                    CHECK(strstr(err.message,
                                 which == 0 ? "max_model_bytes" : "max_tensor_bytes") != NULL);
                    /* A tensor over the cap is found where it is: its offset is given. */
                    if (which == 1) CHECK(err.offset != OC_NO_OFFSET && err.offset < n);
                    CHECK(got == NULL);
                }
                oc_model_free(got);
            }
        }
    }
    /* External data: one tensor's cap, and the cap on all of it. */
    oc_serialize_options so;
    oc_serialize_options_init(&so);
    so.external_data = "limits.data";
    CHECK_OK(oc_model_save_file(m, p, &so, &err), &err);
    for (int which = 0; which < 2; which++)
        for (int over = 0; over < 2; over++) {
            oc_parse_options po;
            oc_parse_options_init(&po);
            if (which == 0)
                po.max_tensor_bytes = BIG - (uint64_t)over;
            else
                po.max_external_bytes = BIG - (uint64_t)over;
            oc_model *got = NULL;
            oc_status st = oc_model_load_file(p, &po, &got, &err);
            if (!over) {
                CHECK_OK(st, &err);
                CHECK(got && raw_ok(init(got, "W"), BIG, 1));
            } else {
                CHECK_STATUS(st, OC_ERR_LIMIT, &err);
                CHECK(strstr(err.message, which == 0 ? "max_tensor_bytes" : "max_external_bytes"));
                CHECK(strstr(err.message, "'W'") != NULL);
            }
            oc_model_free(got);
        }
    pathof(p, sizeof p, "limits.data");
    CHECK_EQ(remove(p), 0);
    pathof(p, sizeof p, "limits.onnx");
    free(b);
    oc_model_free(m);
    CHECK_EQ(remove(p), 0);
}

/* Loads p with po, and returns the model serialized (NULL on failure), checking W. */
static void *load_saved(const char *p, const oc_parse_options *po, uint64_t *n) {
    oc_error err;
    oc_model *got = NULL;
    void *out = NULL;
    oc_error_clear(&err);
    if (CHECK_OK(oc_model_load_file(p, po, &got, &err), &err) && got) {
        CHECK(raw_ok(init(got, "W"), BIG, 1));
        CHECK_EQ(oc_bytes_is_borrowed(&init(got, "W")->raw_data), po->no_copy && !po->use_pread);
        if (!save_mem(got, &out, n)) out = NULL;
    }
    oc_model_free(got);
    return out;
}

/* prefetch (oc_parse_options) is advice: with every way of reading (mapped no_copy, mapped
 * copying, pread) and for the model's own tensors and a data file's, a load gives the same
 * bytes as the same load without it, and the tensors are where the mode puts them. */
static void test_prefetch(void) {
    oc_model *m = make_model();
    REQUIRE(m != NULL);
    char p[4200], d[4200];
    pathof(p, sizeof p, "prefetch.onnx");
    pathof(d, sizeof d, "prefetch.data");
    oc_error err;
    oc_error_clear(&err);
    oc_serialize_options so;
    oc_serialize_options_init(&so);
    for (int external = 0; external < 2; external++) {
        so.external_data = external ? "prefetch.data" : NULL;
        CHECK_OK(oc_model_save_file(m, p, &so, &err), &err);
        for (int how = 0; how < 3; how++) {
            oc_parse_options po = OC_PARSE_OPTIONS_INIT;
            po.no_copy = how == 0;
            po.use_pread = how == 2;
            uint64_t n1 = 0, n2 = 0;
            void *plain = load_saved(p, &po, &n1);
            po.prefetch = 1;
            void *ahead = load_saved(p, &po, &n2);
            CHECK(plain && ahead && n1 == n2 && memcmp(plain, ahead, (size_t)n1) == 0);
            free(plain);
            free(ahead);
        }
    }
    CHECK_EQ(remove(d), 0);
    CHECK_EQ(remove(p), 0);
    oc_model_free(m);
}

int main(int argc, char **argv) {
    const char *base = argc > 1 ? argv[1] : NULL;
    if (td_make(base, "model_io", dir, sizeof dir) != 0) {
        fprintf(stderr, "cannot make a scratch directory under %s\n", base ? base : "/tmp");
        return 1;
    }
    RUN(test_memory_roundtrip);
    RUN(test_file_roundtrip);
    RUN(test_failed_saves);
    RUN(test_load_failures);
    RUN(test_no_copy_file);
    RUN(test_message_files);
    RUN(test_size_limits);
    RUN(test_prefetch);
    if (!CHECK_EQ(td_count(dir, 0), 0)) td_count(dir, 1);
    td_remove(dir);
    return check_report("test_model_io");
}
