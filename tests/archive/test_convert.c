/*
 * test_convert.c - oz_convert, the one-call converter (onnxz/convert.h): all 12 directions
 * among a single .onnx, two-file, N-file and .onnxz; every chain gives back the source's
 * bytes when converted to a single .onnx; converting onto the input; progress reports;
 * errors naming the right file; the writer's memory budget (M-5).
 *
 * usage: test_convert WORKDIR
 */
#define _DEFAULT_SOURCE /* mincore */
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/convert.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"

static oc_error err;

/* Tensors large and small (under the threshold they stay inline), one in a subgraph. */
static oc_model *make_model(void) {
    oc_model *m = tm_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    tm_add_bytes(a, mp->graph, "w0", 300000, 1);
    tm_add_bytes(a, mp->graph, "w1", 70000, 2);
    tm_add_bytes(a, mp->graph, "tiny", 10, 3);
    tm_add_bytes(a, mp->graph, "w/with slash", 5000, 4);
    onnx_NodeProto *n = OC_ADD(a, NodeProto, mp->graph->node);
    onnx_AttributeProto *at = OC_ADD(a, AttributeProto, n->attribute);
    at->g = OC_NEW(a, GraphProto);
    tm_add_bytes(a, at->g, "inner", 4096, 5);
    return m;
}

typedef struct form {
    const char *name; /* file name */
    oz_form form;
    const char *data;  /* external data location, or NULL */
    uint64_t max_file; /* split size for N-file */
} form;

static const form forms[] = {
    {"one.onnx", OZ_FORM_ONNX, NULL, 0},
    {"two.onnx", OZ_FORM_ONNX, "two.data", 0},
    {"n.onnx", OZ_FORM_ONNX, "n.data", 100000},
    {"a.onnxz", OZ_FORM_AUTO, NULL, 0},
};
#define NFORMS (sizeof forms / sizeof forms[0])

static oz_convert_options options_for(const form *f) {
    oz_convert_options o = OZ_CONVERT_OPTIONS_INIT;
    o.output = f->form;
    o.save.serialize.external_data = f->data;
    o.save.serialize.max_external_file_size = f->max_file;
    return o;
}

typedef struct progress {
    uint64_t calls, last_done, total, backwards;
} progress;

static void on_progress(void *ctx, uint64_t done, uint64_t total) {
    progress *p = ctx;
    p->backwards += done < p->last_done || done > total;
    p->calls++;
    p->last_done = done;
    p->total = total;
}

static void rm_outputs(void) {
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f d_* e_* *.data *.data.*", td_dir);
    CHECK(system(cmd) == 0);
}

/* oz_save_check: each rule of the save options, with the option at fault named first. */
static void expect_refused(const char *out, const oz_save_options *o, oz_save_option want) {
    oz_save_option bad = OZ_SAVE_OPT_NONE;
    CHECK(oz_save_check(out, o, NULL, &bad, &err) == OC_ERR_INVALID_ARG);
    CHECK(bad == want);
    const char *name = oz_save_option_name(want);
    CHECK(strncmp(err.message, name, strlen(name)) == 0 && err.message[strlen(name)] == ' ');
    if (bad != want) fprintf(stderr, "  %s: %s\n", out, err.message);
}

static void test_save_rules(void) {
    oz_save_options o;
    oz_form got = OZ_FORM_AUTO;
    oz_save_options_init(&o);
    CHECK_OK(oz_save_check("m.ONNXZ", &o, &got, NULL, &err), &err);
    CHECK(got == OZ_FORM_ONNXZ);
    expect_refused("m.bin", &o, OZ_SAVE_OPT_FORM);
    o.form = OZ_FORM_ONNXZ;
    CHECK_OK(oz_save_check("m.bin", &o, &got, NULL, &err), &err);
    o.form = (oz_form)7;
    expect_refused("m.onnx", &o, OZ_SAVE_OPT_FORM);
    oz_save_options_init(&o);
    expect_refused("m.onnxc", &o, OZ_SAVE_OPT_KEY);
    o.key = "k";
    o.key_len = 1;
    CHECK_OK(oz_save_check("m.onnxc", &o, NULL, NULL, &err), &err);
    expect_refused("m.onnx", &o, OZ_SAVE_OPT_KEY); /* not written plain */
    expect_refused("m.onnxz", &o, OZ_SAVE_OPT_KEY);
    o.form = OZ_FORM_ONNX;
    expect_refused("m.onnxc", &o, OZ_SAVE_OPT_KEY);
    o.form = OZ_FORM_AUTO;
    o.external_data = "d";
    expect_refused("m.onnxc", &o, OZ_SAVE_OPT_EXTERNAL_DATA);
    expect_refused("m.onnxz", &o, OZ_SAVE_OPT_EXTERNAL_DATA);
    oz_save_options_init(&o);
    o.external_data = "";
    expect_refused("m.onnx", &o, OZ_SAVE_OPT_EXTERNAL_DATA);
    oz_save_options_init(&o);
    oc_crypt_options co = OC_CRYPT_OPTIONS_INIT;
    o.crypt = &co;
    expect_refused("m.onnx", &o, OZ_SAVE_OPT_CRYPT);
    oz_save_options_init(&o);
    o.deflate_model = 1;
    expect_refused("m.onnx", &o, OZ_SAVE_OPT_DEFLATE_MODEL);
    oz_save_options_init(&o);
    o.has_align = true;
    o.align = 64;
    expect_refused("m.onnx", &o, OZ_SAVE_OPT_ALIGN); /* a single .onnx has no layout */
    o.align = 100;
    expect_refused("m.onnxz", &o, OZ_SAVE_OPT_ALIGN);
    o.align = 32;
    expect_refused("m.onnxz", &o, OZ_SAVE_OPT_ALIGN);
    o.external_data = "d";
    CHECK_OK(oz_save_check("m.onnx", &o, NULL, NULL, &err), &err); /* data files: 1 to 1M */
    o.align = 2u << 20;
    expect_refused("m.onnx", &o, OZ_SAVE_OPT_ALIGN);
    oz_save_options_init(&o);
    o.has_threshold = true; /* even the default value: given where it does not apply */
    o.threshold = 1024;
    expect_refused("m.onnx", &o, OZ_SAVE_OPT_THRESHOLD);
    oz_save_options_init(&o);
    o.has_max_file_size = true;
    o.max_file_size = 10;
    expect_refused("m.onnxz", &o, OZ_SAVE_OPT_MAX_FILE_SIZE);
    o.external_data = "d";
    o.max_file_size = 0;
    expect_refused("m.onnx", &o, OZ_SAVE_OPT_MAX_FILE_SIZE);
    oz_save_options_init(&o);
    o.checksum = 1;
    expect_refused("m.onnx", &o, OZ_SAVE_OPT_CHECKSUM);
    CHECK(strcmp(oz_save_option_name((oz_save_option)99), "") == 0);

    /* oz_save_check_before_key: a .onnxc OUT's key may come later, and every other rule
     * still holds for it */
    oz_save_option bad = OZ_SAVE_OPT_NONE;
    oz_save_options_init(&o);
    got = OZ_FORM_AUTO;
    CHECK_OK(oz_save_check_before_key("m.onnxc", &o, &got, &bad, &err), &err);
    CHECK(got == OZ_FORM_ONNXC);
    CHECK_OK(oz_save_check_before_key("m.onnx", &o, &got, &bad, &err), &err);
    CHECK(got == OZ_FORM_ONNX);
    o.has_align = true;
    o.align = 64;
    CHECK(oz_save_check_before_key("m.onnxc", &o, NULL, &bad, &err) == OC_ERR_INVALID_ARG);
    CHECK(bad == OZ_SAVE_OPT_ALIGN);
    oz_save_options_init(&o);
    o.deflate_model = 1;
    CHECK(oz_save_check_before_key("m.onnxc", &o, NULL, &bad, &err) == OC_ERR_INVALID_ARG);
    CHECK(bad == OZ_SAVE_OPT_DEFLATE_MODEL);
    oz_save_options_init(&o);
    o.key = "k";
    o.key_len = 1;
    CHECK(oz_save_check_before_key("m.onnx", &o, NULL, &bad, &err) == OC_ERR_INVALID_ARG);
    CHECK(bad == OZ_SAVE_OPT_KEY); /* a key given still applies to .onnxc alone */
}

/* a URL is read, never written. oz_save_check refuses one as OUT or as the data
 * file's location, before any other rule (the form, here unknown or wrong), and names it
 * as the error's file without its password: the message the tool and Python print. */
static void expect_url_refused(const char *out, const oz_save_options *o, const char *shown) {
    oz_save_option bad = OZ_SAVE_OPT_FORM;
    char want[256];
    snprintf(want, sizeof want, "%s is a URL: onnxz writes local files only", shown);
    CHECK(oz_save_check(out, o, NULL, &bad, &err) == OC_ERR_INVALID_ARG);
    CHECK(bad == OZ_SAVE_OPT_NONE);
    CHECK(strcmp(err.message, want) == 0);
    CHECK(err.file_at == 0 && err.file_len == strlen(shown));
    if (strcmp(err.message, want) != 0) fprintf(stderr, "  %s: %s\n", out, err.message);
}

static void test_save_refuses_urls(void) {
    oz_save_options o;
    oz_save_options_init(&o);
    expect_url_refused("http://host/m.onnxz", &o, "http://host/m.onnxz");
    expect_url_refused("HTTPS://u:secret@host/m", &o, "HTTPS://host/m");
    o.external_data = "http://host/d";
    expect_url_refused("m.onnx", &o, "http://host/d");
    expect_url_refused("m.onnxz", &o, "http://host/d"); /* before "applies to .onnx" */
    o.external_data = "http:d";                         /* a local name: no scheme's "//" */
    CHECK_OK(oz_save_check("m.onnx", &o, NULL, NULL, &err), &err);
}

static int cancel_always(void *ctx) {
    (*(int *)ctx)++;
    return 1;
}

/* Cancels from its second call on: while the tensors stream. */
static int cancel_later(void *ctx) { return ++*(int *)ctx > 1; }

/* A save cancelled while it streams a deferred model's tensors: OC_ERR_CANCELLED, a
 * message that blames no file, and no file left. */
static void test_cancel_streaming(void) {
    oc_model *m = NULL;
    oz_weights *w = NULL;
    oc_tensor_fetch fetch;
    CHECK_OK(oz_convert(td_at("source.onnx"), td_at("c.onnxz"), NULL, &err), &err);
    CHECK_OK(oz_open_deferred(td_at("c.onnxz"), NULL, &m, &w, NULL, &err), &err);
    oz_weights_fetch(w, &fetch);
    oz_save_options so = OZ_SAVE_OPTIONS_INIT;
    int asked = 0;
    so.fetch = &fetch;
    so.cancel = cancel_later;
    so.cancel_ctx = &asked;
    CHECK(oz_save(m, td_at("c_out.onnx"), &so, &err) == OC_ERR_CANCELLED);
    CHECK(asked > 1 && err.file_len == 0 && strstr(err.message, "cancelled") != NULL);
    CHECK(strcmp(oc_status_name(OC_ERR_CANCELLED), "cancelled") == 0);
    CHECK(access(td_at("c_out.onnx"), F_OK) != 0);
    oc_model_free(m);
    oz_weights_close(w);
    unlink(td_at("c.onnxz"));
}

/* oz_convert_file: the job of `onnxz convert`, encryption and cancellation included. */
static void test_convert_file(const uint8_t *want, size_t want_n) {
    oz_save_options so = OZ_SAVE_OPTIONS_INIT;
    oz_open_options oo = OZ_OPEN_OPTIONS_INIT;
    oz_convert_info info = OZ_CONVERT_INFO_INIT;
    /* A bad option is OUT's fault, found before IN is read (IN is missing here). */
    so.deflate_model = 1;
    CHECK(oz_convert_file(td_at("missing.onnx"), td_at("f.onnx"), NULL, &so, &info, &err) ==
          OC_ERR_INVALID_ARG);
    CHECK(!info.input_failed && strncmp(err.message, "deflate_model ", 14) == 0);
    so.deflate_model = 0;
    CHECK(oz_convert_file(td_at("missing.onnx"), td_at("f.onnx"), NULL, &so, &info, &err) ==
          OC_ERR_NOT_FOUND);
    CHECK(info.input_failed);
    /* Cancelled: no file. */
    int asked = 0;
    so.cancel = cancel_always;
    so.cancel_ctx = &asked;
    CHECK(oz_convert_file(td_at("source.onnx"), td_at("f.onnxz"), NULL, &so, &info, &err) ==
          OC_ERR_CANCELLED);
    CHECK(asked >= 1 && !info.input_failed && access(td_at("f.onnxz"), F_OK) != 0);
    CHECK(err.file_len == 0 && strstr(err.message, "cancelled") != NULL);
    so.cancel = NULL;
    /* Encrypted both ways, then back to the source's bytes. */
    CHECK_OK(oz_convert_file(td_at("source.onnx"), td_at("f.onnxz"), NULL, &so, &info, &err), &err);
    CHECK(info.in_kind == OZ_KIND_MODEL && !info.in_archive && info.in_size == want_n);
    if (!oc_crypt_available()) return;
    so.key = "pass";
    so.key_len = 4;
    oc_crypt_options co = OC_CRYPT_OPTIONS_INIT;
    co.iterations = 1000;
    so.crypt = &co;
    CHECK_OK(oz_convert_file(td_at("f.onnxz"), td_at("f.onnxc"), NULL, &so, &info, &err), &err);
    CHECK(info.in_archive);
    oz_save_options back = OZ_SAVE_OPTIONS_INIT;
    CHECK(oz_convert_file(td_at("f.onnxc"), td_at("f_back.onnx"), NULL, &back, &info, &err) ==
          OC_ERR_INVALID_ARG); /* no key for IN */
    CHECK(info.input_failed && info.in_kind == OZ_KIND_ONNXZEC1);
    oo.key = "pass";
    oo.key_len = 4;
    CHECK_OK(oz_convert_file(td_at("f.onnxc"), td_at("f_back.onnx"), &oo, &back, &info, &err),
             &err);
    size_t n = 0;
    uint8_t *got = td_read(td_at("f_back.onnx"), &n);
    CHECK(got && n == want_n && memcmp(got, want, n) == 0);
    free(got);
    unlink(td_at("f.onnxz"));
    unlink(td_at("f.onnxc"));
    unlink(td_at("f_back.onnx"));
}

/* w1's bytes, as make_model made them. */
static int is_w1(const oc_bytes *b) {
    if (b->size != 70000) return 0;
    for (uint64_t i = 0; i < b->size; i++)
        if (b->data[i] != tm_byte(i, 2)) return 0;
    return 1;
}

/* One tensor read from every form, with what the model was opened with as its source. */
static void test_tensor_read(void) {
    oz_convert_options o = options_for(&forms[2]); /* N-file */
    CHECK_OK(oz_convert(td_at("source.onnx"), td_at("r_n.onnx"), &o, &err), &err);
    CHECK_OK(oz_convert(td_at("source.onnx"), td_at("r.onnxz"), NULL, &err), &err);
    oz_open_options keep = OZ_OPEN_OPTIONS_INIT;
    keep.parse.skip_external_data = 1;
    oc_bytes b = {0};
    for (int i = 0; i < 2; i++) { /* a single .onnx (the tensor inline), then N-file */
        oc_model *m = NULL;
        CHECK_OK(oz_open(td_at(i ? "r_n.onnx" : "source.onnx"), &keep, &m, NULL, &err), &err);
        onnx_TensorProto *t = oz_model_find_tensor(m, "w1", 2);
        CHECK(t && oz_model_find_tensor(m, "inner", 5) != NULL); /* in a subgraph */
        CHECK(oz_model_find_tensor(m, "w", 1) == NULL &&
              oz_model_find_tensor(m, "w1\0", 3) == NULL);
        if (i) /* a reference, and nowhere to read it from */
            CHECK(oz_tensor_read(t, NULL, &b, &err) == OC_ERR_NOT_FOUND);
        oz_tensor_source src = {NULL, NULL, td_dir, NULL};
        CHECK_OK(oz_tensor_read(t, &src, &b, &err), &err);
        CHECK(is_w1(&b));
        oc_bytes_release(&b);
        oc_model_free(m);
    }
    /* The weights of a deferred open, and an archive's entries. */
    oc_model *m = NULL;
    oz_weights *w = NULL;
    for (int i = 0; i < 2; i++) {
        CHECK_OK(oz_open_deferred(td_at(i ? "r.onnxz" : "r_n.onnx"), NULL, &m, &w, NULL, &err),
                 &err);
        onnx_TensorProto *t = oz_model_find_tensor(m, "w1", 2);
        oz_tensor_source src = {NULL, w, NULL, NULL};
        CHECK(t && oc_tensor_is_external(t));
        CHECK_OK(oz_tensor_read(t, &src, &b, &err), &err);
        CHECK(is_w1(&b));
        oc_bytes_release(&b);
        oc_model_free(m);
        oz_weights_close(w);
    }
    oz_archive *ar = NULL;
    CHECK_OK(oz_archive_open(td_at("r.onnxz"), NULL, &ar, &err), &err);
    CHECK_OK(oz_archive_load_model(ar, &keep.parse, &m, &err), &err);
    oz_tensor_source src = {ar, NULL, NULL, NULL};
    CHECK_OK(oz_tensor_read(oz_model_find_tensor(m, "w1", 2), &src, &b, &err), &err);
    oc_model_free(m); /* the span holds the archive's mapping */
    oz_archive_close(ar);
    CHECK(is_w1(&b));
    oc_bytes_release(&b);
    /* Values in typed fields give the bytes raw_data would hold, a scalar's (no dims, one
     * element) included; a tensor with elements and no values at all is W-42's fault. */
    m = oc_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    mp->graph = OC_NEW(a, GraphProto);
    onnx_TensorProto *t = OC_ADD(a, TensorProto, mp->graph->initializer);
    t->data_type = 1;
    OC_SET_HAS(TensorProto, t, data_type);
    CHECK(oc_tensor_is_typed(t));
    /* One lookup (oc_tensor_index): a tensor without a name is not named "" */
    CHECK(oz_model_find_tensor(m, "", 0) == NULL);
    OC_SET_HAS(TensorProto, t, name); /* named "", as a decoded one is */
    CHECK(oz_model_find_tensor(m, "", 0) == t);
    float *f = oc_array_push(a, &t->float_data, sizeof(float));
    if (f) *f = 1.5f;
    CHECK_OK(oz_tensor_read(t, NULL, &b, &err), &err);
    CHECK(b.size == 4 && memcmp(b.data, "\x00\x00\xc0\x3f", 4) == 0); /* 1.5f, little-endian */
    oc_bytes_release(&b);
    int64_t *d = oc_array_push(a, &t->dims, sizeof(int64_t));
    if (d) *d = 2;
    CHECK(oz_tensor_read(t, NULL, &b, &err) == OC_ERR_INCONSISTENT); /* 2 elements, 1 value */
    t->float_data.count = 0;
    CHECK(oz_tensor_read(t, NULL, &b, &err) == OC_ERR_INCONSISTENT);
    CHECK(strstr(err.message, "no data") && strcmp(err.rule, "W-42") == 0);
    oc_bytes_set_borrowed(&t->raw_data, "12345678", 8);
    OC_SET_HAS(TensorProto, t, raw_data);
    CHECK(!oc_tensor_is_typed(t));
    CHECK_OK(oz_tensor_read(t, NULL, &b, &err), &err);
    CHECK(b.size == 8);
    oc_bytes_release(&b);
    /* W-40 before any byte is read: raw_data of the wrong size, and an archive entry that
     * its tensor's dims do not fit. */
    tm_add_bytes(a, mp->graph, "short", 10, 1);
    t = oz_model_find_tensor(m, "short", 5);
    t->dims.items[0] = 11;
    CHECK(oz_tensor_read(t, NULL, &b, &err) == OC_ERR_INCONSISTENT &&
          strcmp(err.rule, "W-40") == 0);
    oc_model_free(m);
    CHECK_OK(oz_archive_open(td_at("r.onnxz"), NULL, &ar, &err), &err);
    CHECK_OK(oz_archive_load_model(ar, &keep.parse, &m, &err), &err);
    t = oz_model_find_tensor(m, "w1", 2);
    t->dims.items[0] = 70001;
    src.archive = ar;
    CHECK(oz_tensor_read(t, &src, &b, &err) == OC_ERR_INCONSISTENT &&
          strcmp(err.rule, "W-40") == 0);
    CHECK(strstr(err.message, "its data holds 70000") != NULL);
    oc_model_free(m);
    oz_archive_close(ar);
    unlink(td_at("r_n.onnx"));
    unlink(td_at("r.onnxz"));
}

/* M-5: the writer's tables, estimated from the entries it will make, count against
 * max_memory with the model's arena, before anything is written: 20,000 4-byte tensors
 * (some 6 MB of tables beside a model of some 10 MB) are refused under 8 MiB with no file
 * left, and written without a cap, under 64 MiB, and by a caller of the struct's older
 * size (no max_memory: no cap). */
static void test_save_budget(void) {
    oc_model *m = oc_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    mp->graph = OC_NEW(a, GraphProto);
    char name[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(name, sizeof name, "t%d", i);
        tm_add_bytes(a, mp->graph, name, 4, (unsigned)i);
    }
    const char *sub = td_at("budget");
    CHECK(mkdir(sub, 0755) == 0);
    char out[4300];
    snprintf(out, sizeof out, "%s/m.onnxz", sub);
    oz_save_options so = OZ_SAVE_OPTIONS_INIT;
    so.has_threshold = true;
    so.threshold = 0;
    so.max_memory = 8u << 20;
    CHECK(oz_save(m, out, &so, &err) == OC_ERR_LIMIT);
    CHECK(strcmp(err.rule, "M-5") == 0 && strstr(err.message, "20000 tensors") &&
          strstr(err.message, "budget of 8388608 bytes (max_memory, M-5)"));
    CHECK(td_count(sub, 0) == 0);
    oz_convert_info info = OZ_CONVERT_INFO_INIT;
    CHECK_OK(oc_model_save_file(m, td_at("budget.onnx"), NULL, &err), &err);
    CHECK(oz_convert_file(td_at("budget.onnx"), out, NULL, &so, &info, &err) == OC_ERR_LIMIT);
    CHECK(!info.input_failed && strcmp(err.rule, "M-5") == 0 && td_count(sub, 0) == 0);
    so.max_memory = 64u << 20;
    CHECK_OK(oz_convert_file(td_at("budget.onnx"), out, NULL, &so, &info, &err), &err);
    so.max_memory = 0;
    CHECK_OK(oz_save(m, out, &so, &err), &err);
    so.max_memory = 1;
    so.size = offsetof(oz_save_options, max_memory);
    CHECK_OK(oz_save(m, out, &so, &err), &err);
    CHECK(td_count(sub, 0) == 1);
    oc_model_free(m);
}

/* How many pages of the file open as fd are in the page cache. */
static size_t resident_pages(int fd) {
    struct stat st;
    long page = sysconf(_SC_PAGESIZE);
    if (fstat(fd, &st) != 0 || st.st_size == 0 || page <= 0) return 0;
    size_t size = (size_t)st.st_size, n = (size + (size_t)page - 1) / (size_t)page, count = 0;
    unsigned char *vec = malloc(n);
    void *m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (vec && m != MAP_FAILED && mincore(m, size, vec) == 0)
        for (size_t i = 0; i < n; i++) count += vec[i] & 1;
    if (m != MAP_FAILED) munmap(m, size);
    free(vec);
    return count;
}

/* A file of 1 MiB on disk and in the page cache; its descriptor, kept open. */
static int cached_file(const char *path) {
    static char block[1 << 20];
    char sink[1 << 16];
    memset(block, 0x5a, sizeof block);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(block, 1, sizeof block, f) == sizeof block && fflush(f) == 0 &&
          fsync(fileno(f)) == 0);
    if (f) fclose(f);
    int fd = open(path, O_RDONLY);
    while (fd >= 0 && read(fd, sink, sizeof sink) > 0) continue;
    CHECK(fd >= 0 && resident_pages(fd) == sizeof block / (size_t)sysconf(_SC_PAGESIZE));
    return fd;
}

/* oz_save drops the cached pages of the files it replaces (OUT, its data file) before
 * writing their successors, for every face; not those of a file with another link. (The
 * old .onnx beside data files is read again for the parts it named, E-25.) */
static void test_save_releases_replaced(const oc_model *model) {
    size_t pages = (1 << 20) / (size_t)sysconf(_SC_PAGESIZE);
    int archive = cached_file(td_at("g.onnxz")), data = cached_file(td_at("g.data"));
    int other = cached_file(td_at("g_other"));
    CHECK(link(td_at("g_other"), td_at("h.onnxz")) == 0);
    CHECK_OK(oz_save(model, td_at("g.onnxz"), NULL, &err), &err);
    CHECK(resident_pages(archive) == 0);
    oz_save_options o;
    oz_save_options_init(&o);
    o.external_data = td_at("g.data"); /* absolute: its name beside OUT */
    CHECK_OK(oz_save(model, td_at("g.onnx"), &o, &err), &err);
    CHECK(resident_pages(data) == 0);
    CHECK_OK(oz_save(model, td_at("h.onnxz"), NULL, &err),
             &err); /* the name replaced, not g_other */
    CHECK(resident_pages(other) == pages);
    close(archive);
    close(data);
    close(other);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "convert") != 0) return 2;
    oc_model *src = make_model();
    oz_convert_options single = OZ_CONVERT_OPTIONS_INIT;
    CHECK_OK(oc_model_save_file(src, td_at("source.onnx"), NULL, &err), &err);
    size_t want_n = 0;
    uint8_t *want = td_read(td_at("source.onnx"), &want_n);
    CHECK(want && want_n > 370000);

    CHECK(oz_form_of_name("x.ONNXZ") == OZ_FORM_ONNXZ &&
          oz_form_of_name("x.onnx") == OZ_FORM_ONNX && oz_form_of_name("onnxz") == OZ_FORM_ONNX &&
          oz_form_of_name("x.onnxc") == OZ_FORM_ONNXC);
    /* A .onnxc name asks for an encrypted model, from every save: the calls that take no
     * key refuse it rather than write the model in the clear. */
    CHECK(oz_convert(td_at("source.onnx"), td_at("d_plain.onnxc"), NULL, &err) ==
          OC_ERR_INVALID_ARG);
    CHECK(oz_save_any(src, td_at("d_plain.onnxc"), OZ_FORM_AUTO, NULL, &err) == OC_ERR_INVALID_ARG);
    CHECK(access(td_at("d_plain.onnxc"), F_OK) != 0);
    /* The one rule of a form by name: the extension in any case, nothing for another name. */
    CHECK(oz_form_named("d/x.ONNXZ") == OZ_FORM_ONNXZ &&
          oz_form_named("x.Onnxc") == OZ_FORM_ONNXC && oz_form_named("x.onnx") == OZ_FORM_ONNX &&
          oz_form_named("x.bin") == OZ_FORM_AUTO && oz_form_named("onnx") == OZ_FORM_AUTO &&
          oz_form_named("xonnx") == OZ_FORM_AUTO && oz_form_named("x.onnx.gz") == OZ_FORM_AUTO &&
          oz_form_named(NULL) == OZ_FORM_AUTO);
    CHECK(oz_form_parse("onnxc") == OZ_FORM_ONNXC && oz_form_parse("ONNX") == OZ_FORM_AUTO &&
          oz_form_parse("auto") == OZ_FORM_AUTO && oz_form_parse(NULL) == OZ_FORM_AUTO);
    for (int f = OZ_FORM_ONNX; f <= OZ_FORM_ONNXC; f++)
        CHECK(oz_form_parse(oz_form_name((oz_form)f)) == (oz_form)f);
    CHECK(strcmp(oz_form_name((oz_form)9), "auto") == 0);

    /* Every direction X -> Y, then Y -> a single .onnx: the source's bytes. */
    unsigned directions = 0;
    for (unsigned x = 0; x < NFORMS; x++)
        for (unsigned y = 0; y < NFORMS; y++) {
            if (x == y) continue;
            char xn[64], yn[64], xd[64], yd[64];
            form fx = forms[x], fy = forms[y];
            snprintf(xn, sizeof xn, "d_x_%s", fx.name);
            snprintf(yn, sizeof yn, "e_y_%s", fy.name);
            if (fx.data) snprintf(xd, sizeof xd, "x_%s", fx.data), fx.data = xd;
            if (fy.data) snprintf(yd, sizeof yd, "y_%s", fy.data), fy.data = yd;
            oz_convert_options ox = options_for(&fx), oy = options_for(&fy);
            progress pr = {0, 0, 0, 0};
            oy.save.serialize.progress = on_progress;
            oy.save.serialize.progress_ctx = &pr;
            CHECK_OK(oz_convert(td_at("source.onnx"), td_at(xn), &ox, &err), &err);
            CHECK_OK(oz_convert(td_at(xn), td_at(yn), &oy, &err), &err);
            CHECK(pr.calls >= 2 && pr.backwards == 0 && pr.last_done == pr.total &&
                  pr.total > 370000);
            CHECK_OK(oz_convert(td_at(yn), td_at("d_back.onnx"), &single, &err), &err);
            size_t got_n = 0;
            uint8_t *got = td_read(td_at("d_back.onnx"), &got_n);
            CHECK(got && got_n == want_n && memcmp(got, want, want_n) == 0);
            if (!(got && got_n == want_n && memcmp(got, want, want_n) == 0))
                fprintf(stderr, "  direction %s -> %s differs\n", fx.name, fy.name);
            free(got);
            directions++;
            rm_outputs();
        }
    CHECK(directions == 12);

    /* The N-file form really splits: two.onnx's data in one file, n.onnx's in several. */
    {
        oz_convert_options o = options_for(&forms[2]);
        struct stat st;
        CHECK_OK(oz_convert(td_at("source.onnx"), td_at("d_n.onnx"), &o, &err), &err);
        CHECK(stat(td_at("n.data"), &st) == 0 && stat(td_at("n.data.1"), &st) == 0);
        rm_outputs();
    }

    /* Onto its own input (replacing is the default): the mapping keeps the old bytes. */
    CHECK_OK(oz_convert(td_at("source.onnx"), td_at("d_self.onnxz"), NULL, &err), &err);
    CHECK_OK(oz_convert(td_at("d_self.onnxz"), td_at("d_self.onnxz"), NULL, &err), &err);
    CHECK_OK(oz_convert(td_at("d_self.onnxz"), td_at("d_self.onnx"), NULL, &err), &err);
    {
        size_t n = 0;
        uint8_t *b = td_read(td_at("d_self.onnx"), &n);
        CHECK(b && n == want_n && memcmp(b, want, n) == 0);
        free(b);
    }
    /* With no_overwrite an existing OUT stays, and the error says so. */
    {
        oz_convert_options o = OZ_CONVERT_OPTIONS_INIT;
        o.save.serialize.no_overwrite = 1;
        CHECK(oz_convert(td_at("source.onnx"), td_at("d_self.onnx"), &o, &err) == OC_ERR_EXISTS);
    }
    /* Errors: a missing input, external data asked of an archive. */
    CHECK(oz_convert(td_at("missing.onnx"), td_at("d_m.onnxz"), NULL, &err) == OC_ERR_NOT_FOUND);
    CHECK(strstr(err.message, "missing.onnx") != NULL);
    {
        oz_convert_options o = OZ_CONVERT_OPTIONS_INIT;
        o.save.serialize.external_data = "x.data";
        CHECK(oz_convert(td_at("source.onnx"), td_at("d_bad.onnxz"), &o, &err) ==
              OC_ERR_INVALID_ARG);
        CHECK(access(td_at("d_bad.onnxz"), F_OK) != 0);
    }
    test_save_rules();
    test_save_refuses_urls();
    test_save_releases_replaced(src);
    test_convert_file(want, want_n);
    test_cancel_streaming();
    test_tensor_read();
    test_save_budget();
    rm_outputs();
    free(want);
    oc_model_free(src);
    td_remove(td_dir);
    return check_report("test_convert");
}
