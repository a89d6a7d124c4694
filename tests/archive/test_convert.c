/*
 * test_convert.c - oz_convert, the one-call converter (onnxz/convert.h): all 12 directions
 * among a single .onnx, two-file, N-file and .onnxz; every chain gives back the source's
 * bytes when converted to a single .onnx; converting onto the input; progress reports;
 * errors naming the right file.
 *
 * usage: test_convert WORKDIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/convert.h>

static int failures, checks;
#define CHECK(c)                                                                            \
    do {                                                                                    \
        checks++;                                                                           \
        if (!(c)) {                                                                         \
            failures++;                                                                     \
            fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #c);          \
        }                                                                                   \
    } while (0)
#define CHECK_OK(expr)                                                                      \
    do {                                                                                    \
        oc_status st_ = (expr);                                                             \
        checks++;                                                                           \
        if (st_ != OC_OK) {                                                                 \
            failures++;                                                                     \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #expr,             \
                    oc_status_name(st_), err.message);                                      \
        }                                                                                   \
    } while (0)

static char dir[4096];
static oc_error err;

static const char *at(const char *name) {
    static char buf[4][4200];
    static int k;
    k = (k + 1) & 3;
    snprintf(buf[k], sizeof buf[k], "%.4000s/%.150s", dir, name);
    return buf[k];
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(size > 0 ? (size_t)size : 1);
    *n = b && size >= 0 ? fread(b, 1, (size_t)size, f) : 0;
    fclose(f);
    return b;
}

static void add_tensor(oc_arena *a, onnx_GraphProto *g, const char *name, uint64_t n, unsigned seed) {
    onnx_TensorProto *t = OC_ADD(a, TensorProto, g->initializer);
    uint8_t *p;
    oc_str_set_cstr(a, &t->name, name);
    OC_SET_HAS(TensorProto, t, name);
    t->data_type = 2; /* UINT8 */
    OC_SET_HAS(TensorProto, t, data_type);
    int64_t *d = oc_array_push(a, &t->dims, sizeof(int64_t));
    if (d) *d = (int64_t)n;
    if (oc_bytes_set_alloc(&t->raw_data, n, &p, NULL) != OC_OK) return;
    for (uint64_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 7 + seed);
    OC_SET_HAS(TensorProto, t, raw_data);
}

/* Tensors large and small (under the threshold they stay inline), one in a subgraph. */
static oc_model *make_model(void) {
    oc_model *m = oc_model_new();
    oc_arena *a = oc_model_arena(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    mp->ir_version = 10;
    OC_SET_HAS(ModelProto, mp, ir_version);
    mp->graph = OC_NEW(a, GraphProto);
    add_tensor(a, mp->graph, "w0", 300000, 1);
    add_tensor(a, mp->graph, "w1", 70000, 2);
    add_tensor(a, mp->graph, "tiny", 10, 3);
    add_tensor(a, mp->graph, "w/with slash", 5000, 4);
    onnx_NodeProto *n = OC_ADD(a, NodeProto, mp->graph->node);
    onnx_AttributeProto *at = OC_ADD(a, AttributeProto, n->attribute);
    at->g = OC_NEW(a, GraphProto);
    add_tensor(a, at->g, "inner", 4096, 5);
    return m;
}

typedef struct form {
    const char *name;    /* file name */
    oz_form form;
    const char *data;    /* external data location, or NULL */
    uint64_t max_file;   /* split size for N-file */
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
    snprintf(cmd, sizeof cmd, "cd '%s' && rm -f d_* e_* *.data *.data.*", dir);
    if (system(cmd) != 0) failures++;
}

int main(int argc, char **argv) {
    snprintf(dir, sizeof dir, "%s/test_convert", argc > 1 ? argv[1] : "/tmp");
    char cmd[2 * sizeof dir + 64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd) != 0) return 2;
    oc_model *src = make_model();
    oz_convert_options single = OZ_CONVERT_OPTIONS_INIT;
    CHECK_OK(oc_model_save_file(src, at("source.onnx"), NULL, &err));
    size_t want_n = 0;
    uint8_t *want = slurp(at("source.onnx"), &want_n);
    CHECK(want && want_n > 370000);

    CHECK(oz_form_of_name("x.ONNXZ") == OZ_FORM_ONNXZ && oz_form_of_name("x.onnx") == OZ_FORM_ONNX &&
          oz_form_of_name("onnxz") == OZ_FORM_ONNX && oz_form_of_name("x.onnxc") == OZ_FORM_ONNX);
    /* The one rule of a form by name: the extension in any case, nothing for another name. */
    CHECK(oz_form_named("d/x.ONNXZ") == OZ_FORM_ONNXZ && oz_form_named("x.Onnxc") == OZ_FORM_ONNXC &&
          oz_form_named("x.onnx") == OZ_FORM_ONNX && oz_form_named("x.bin") == OZ_FORM_AUTO &&
          oz_form_named("onnx") == OZ_FORM_AUTO && oz_form_named("xonnx") == OZ_FORM_AUTO &&
          oz_form_named("x.onnx.gz") == OZ_FORM_AUTO && oz_form_named(NULL) == OZ_FORM_AUTO);
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
            CHECK_OK(oz_convert(at("source.onnx"), at(xn), &ox, &err));
            CHECK_OK(oz_convert(at(xn), at(yn), &oy, &err));
            CHECK(pr.calls >= 2 && pr.backwards == 0 && pr.last_done == pr.total && pr.total > 370000);
            CHECK_OK(oz_convert(at(yn), at("d_back.onnx"), &single, &err));
            size_t got_n = 0;
            uint8_t *got = slurp(at("d_back.onnx"), &got_n);
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
        CHECK_OK(oz_convert(at("source.onnx"), at("d_n.onnx"), &o, &err));
        CHECK(stat(at("n.data"), &st) == 0 && stat(at("n.data.1"), &st) == 0);
        rm_outputs();
    }

    /* Onto its own input (overwrite is the default): the mapping keeps the old bytes. */
    CHECK_OK(oz_convert(at("source.onnx"), at("d_self.onnxz"), NULL, &err));
    CHECK_OK(oz_convert(at("d_self.onnxz"), at("d_self.onnxz"), NULL, &err));
    CHECK_OK(oz_convert(at("d_self.onnxz"), at("d_self.onnx"), NULL, &err));
    {
        size_t n = 0;
        uint8_t *b = slurp(at("d_self.onnx"), &n);
        CHECK(b && n == want_n && memcmp(b, want, n) == 0);
        free(b);
    }
    /* Without overwrite an existing OUT stays, and the error says so. */
    {
        oz_convert_options o = OZ_CONVERT_OPTIONS_INIT;
        o.save.serialize.overwrite = 0;
        CHECK(oz_convert(at("source.onnx"), at("d_self.onnx"), &o, &err) == OC_ERR_EXISTS);
    }
    /* Errors: a missing input, external data asked of an archive. */
    CHECK(oz_convert(at("missing.onnx"), at("d_m.onnxz"), NULL, &err) == OC_ERR_NOT_FOUND);
    CHECK(strstr(err.message, "missing.onnx") != NULL);
    {
        oz_convert_options o = OZ_CONVERT_OPTIONS_INIT;
        o.save.serialize.external_data = "x.data";
        CHECK(oz_convert(at("source.onnx"), at("d_bad.onnxz"), &o, &err) == OC_ERR_INVALID_ARG);
        CHECK(access(at("d_bad.onnxz"), F_OK) != 0);
    }
    rm_outputs();
    free(want);
    oc_model_free(src);
    printf("test_convert: %d of %d checks failed\n", failures, checks);
    if (!failures) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) return 1;
    }
    return failures ? 1 : 0;
}
