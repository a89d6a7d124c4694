/*
 * test_codec.c - the wire codec (codec.h) against hand-built protobuf bytes: every wire
 * type, varint edge cases, malformed and truncated input, unknown fields, packed and
 * unpacked repeated scalars, presence, merging, oneofs, closed enums, float bits, nesting
 * depth, truncation at every prefix, no_copy spans, sizes and sinks, deep copies and the
 * tensor visitor.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>

#include "check.h"
#include "testmodel.h"
#include "wire.h"

/* ---------------------------------------------------------------------------------- */
/* Helpers                                                                              */

static void hexdump(const char *label, const uint8_t *p, size_t n) {
    fprintf(stderr, "  %s (%zu bytes):", label, n);
    for (size_t i = 0; i < n && i < 96; i++) fprintf(stderr, " %02x", p[i]);
    if (n > 96) fprintf(stderr, " ...");
    fputc('\n', stderr);
}

typedef struct sink {
    wbuf out;
    int calls;
    int fail_at;          /* fail on this call (1-based); 0 = never */
    int calls_after_fail; /* calls that arrived after we failed */
    int failed;
    const uint8_t *watch; /* a buffer whose bytes should be passed directly */
    uint64_t watch_size;
    int saw_watch;
} sink;

static oc_status sink_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    sink *s = ctx;
    if (s->failed) s->calls_after_fail++;
    s->calls++;
    if (s->fail_at && s->calls == s->fail_at) {
        s->failed = 1;
        if (err) {
            err->code = OC_ERR_IO;
            err->sys_errno = 28;
            err->offset = OC_NO_OFFSET;
            snprintf(err->message, sizeof err->message, "sink says no");
        }
        return OC_ERR_IO;
    }
    const uint8_t *p = data;
    if (s->watch && size && p >= s->watch && p < s->watch + s->watch_size) s->saw_watch = 1;
    wb_raw(&s->out, data, (size_t)size);
    return OC_OK;
}

/* Encodes msg with oc_encoded_size, oc_encode (sink) and oc_encode_to_memory; checks that
 * they agree and appends the bytes to out. Returns 1 when all went well. */
static int encode3(const oc_msgdesc *d, const void *msg, wbuf *out) {
    oc_error err;
    oc_error_clear(&err);
    uint64_t size = 0;
    int ok = 1;
    ok &= CHECK_OK(oc_encoded_size(d, msg, &size, &err), &err);
    sink s;
    memset(&s, 0, sizeof s);
    ok &= CHECK_OK(oc_encode(d, msg, sink_write, &s, &err), &err);
    void *mem = NULL;
    uint64_t msize = 0;
    ok &= CHECK_OK(oc_encode_to_memory(d, msg, &mem, &msize, &err), &err);
    ok &= CHECK_EQ(size, msize);
    ok &= CHECK_EQ(s.out.n, msize);
    if (s.out.n == msize) ok &= CHECK_MEM_EQ(s.out.p, mem, msize);
    if (mem) wb_raw(out, mem, (size_t)msize);
    free(mem);
    wb_free(&s.out);
    return ok;
}

typedef struct decoded {
    oc_arena *arena;
    void *msg;
    oc_status st;
    oc_error err;
} decoded;

static decoded dec(const oc_msgdesc *d, const void *data, size_t n, const oc_parse_options *o,
                   oc_owner *owner) {
    decoded x;
    memset(&x, 0, sizeof x);
    oc_error_clear(&x.err);
    x.arena = oc_arena_new();
    if (!x.arena) {
        x.st = OC_ERR_NOMEM;
        return x;
    }
    x.msg = oc_msg_new(x.arena, d);
    if (!x.msg) {
        x.st = OC_ERR_NOMEM;
        return x;
    }
    x.st = oc_decode(d, x.msg, data, n, x.arena, o, owner, &x.err);
    if (x.st != OC_OK) {
        /* The record matches the returned status and explains itself. */
        CHECK_EQ(x.err.code, x.st);
        CHECK(x.err.message[0] != '\0');
    }
    return x;
}

static void dec_free(decoded *x) {
    oc_arena_free(x->arena);
    x->arena = NULL;
    x->msg = NULL;
}

/* Decodes in (must succeed), encodes, and compares with expected. */
static int roundtrip(const char *what, const oc_msgdesc *d, const wbuf *in, const wbuf *expected) {
    decoded x = dec(d, in->p, in->n, NULL, NULL);
    int ok = CHECK_STATUS(x.st, OC_OK, &x.err);
    if (ok) {
        wbuf out = {0};
        ok = encode3(d, x.msg, &out);
        if (out.n != expected->n || (out.n && memcmp(out.p, expected->p, out.n) != 0)) {
            ok = 0;
            CHECK(!"re-encoded bytes differ from the expected bytes");
            fprintf(stderr, "  in %s\n", what);
            hexdump("input", in->p, in->n);
            hexdump("expected", expected->p, expected->n);
            hexdump("got", out.p, out.n);
        }
        wb_free(&out);
    } else {
        fprintf(stderr, "  in %s\n", what);
        hexdump("input", in->p, in->n);
    }
    dec_free(&x);
    return ok;
}

/* Decodes bytes that must fail with code; returns the offset reported. */
static uint64_t expect_fail(const char *what, const oc_msgdesc *d, const wbuf *in, oc_status code) {
    decoded x = dec(d, in->p, in->n, NULL, NULL);
    if (!CHECK_STATUS(x.st, code, &x.err)) {
        fprintf(stderr, "  in %s\n", what);
        hexdump("input", in->p, in->n);
    }
    uint64_t off = x.err.offset;
    if (x.st != OC_OK) {
        if (!CHECK(off == OC_NO_OFFSET || off <= in->n)) fprintf(stderr, "  in %s\n", what);
    }
    dec_free(&x);
    return off;
}

static uint32_t fbits(const float *f) {
    uint32_t b;
    memcpy(&b, f, 4);
    return b;
}
static uint64_t dbits(const double *f) {
    uint64_t b;
    memcpy(&b, f, 8);
    return b;
}

static void push_i64(oc_arena *a, void *arr, int64_t v) {
    int64_t *p = oc_array_push(a, arr, sizeof v);
    if (p) *p = v;
}
static void push_i32(oc_arena *a, void *arr, int32_t v) {
    int32_t *p = oc_array_push(a, arr, sizeof v);
    if (p) *p = v;
}
static void push_u64(oc_arena *a, void *arr, uint64_t v) {
    uint64_t *p = oc_array_push(a, arr, sizeof v);
    if (p) *p = v;
}
static void push_f32(oc_arena *a, void *arr, float v) {
    float *p = oc_array_push(a, arr, sizeof v);
    if (p) *p = v;
}
static void push_f64(oc_arena *a, void *arr, double v) {
    double *p = oc_array_push(a, arr, sizeof v);
    if (p) *p = v;
}
static void push_str(oc_arena *a, void *arr, const char *s) {
    oc_str *p = oc_array_push(a, arr, sizeof(oc_str));
    if (p) oc_str_set_cstr(a, p, s);
}

static onnx_TensorProto *named(oc_arena *a, onnx_TensorProto *t, const char *name) {
    if (t) SETS(TensorProto, t, name, a, name);
    return t;
}

static void set_raw(onnx_TensorProto *t, uint64_t n, unsigned seed) {
    uint8_t *w = NULL;
    if (oc_bytes_set_alloc(&t->raw_data, n, &w, NULL) != OC_OK) return;
    for (uint64_t i = 0; i < n; i++) w[i] = (uint8_t)(i * 31u + seed);
    OC_SET_HAS(TensorProto, t, raw_data);
}

static onnx_TensorProto *find_init(onnx_GraphProto *g, const char *name) {
    if (!g) return NULL;
    for (uint64_t i = 0; i < g->initializer.count; i++)
        if (oc_str_eq(g->initializer.items[i]->name, name)) return g->initializer.items[i];
    return NULL;
}

/* ---------------------------------------------------------------------------------- */
/* The rich model: every tensor has a unique name; visit order is listed in RICH_TENSORS. */

static const char *const RICH_TENSORS[] = {
    "a1.t", "g1.n.t", "g2.init", "g1.init", "a3.t0",  "a3.t1",   "g3.init", "g4.init",
    "a5.v", "a5.i",   "a6.0.v",  "a6.1.v",  "a6.1.i", "W",       "B",       "S",
    "D",    "sv",     "si",      "ti.init", "ta.n.t", "ta.init", "f.n.t",   "f.ap.t"};
enum { RICH_NTENSORS = sizeof RICH_TENSORS / sizeof RICH_TENSORS[0], W_RAW = 256 };

static onnx_ModelProto *build_rich_model(oc_arena *a) {
    onnx_ModelProto *m = OC_NEW(a, ModelProto);
    if (!m) return NULL;
    SETV(ModelProto, m, ir_version, 9);
    SETS(ModelProto, m, producer_name, a, "onnxz-test");
    SETS(ModelProto, m, producer_version, a, "1.0");
    SETS(ModelProto, m, domain, a, "ai.test");
    SETV(ModelProto, m, model_version, 3);
    SETS(ModelProto, m, doc_string, a, "a model with a bit of everything");
    onnx_OperatorSetIdProto *op = OC_ADD(a, OperatorSetIdProto, m->opset_import);
    SETS(OperatorSetIdProto, op, domain, a, "");
    SETV(OperatorSetIdProto, op, version, 17);
    op = OC_ADD(a, OperatorSetIdProto, m->opset_import);
    SETS(OperatorSetIdProto, op, domain, a, "ai.onnx.ml");
    SETV(OperatorSetIdProto, op, version, 3);
    onnx_StringStringEntryProto *kv = OC_ADD(a, StringStringEntryProto, m->metadata_props);
    SETS(StringStringEntryProto, kv, key, a, "k");
    SETS(StringStringEntryProto, kv, value, a, "v");

    onnx_GraphProto *g = m->graph = OC_NEW(a, GraphProto);
    SETS(GraphProto, g, name, a, "main");
    onnx_NodeProto *n = OC_ADD(a, NodeProto, g->node);
    push_str(a, &n->input, "X");
    push_str(a, &n->input, "W");
    push_str(a, &n->output, "Y");
    SETS(NodeProto, n, name, a, "n0");
    SETS(NodeProto, n, op_type, a, "MatMul");
    SETS(NodeProto, n, domain, a, "");

    onnx_AttributeProto *at = OC_ADD(a, AttributeProto, n->attribute); /* a0 */
    SETS(AttributeProto, at, name, a, "alpha");
    SETV(AttributeProto, at, f, 0.5f);
    SETV(AttributeProto, at, type, 1);

    at = OC_ADD(a, AttributeProto, n->attribute); /* a1 */
    SETS(AttributeProto, at, name, a, "value");
    at->t = named(a, OC_NEW(a, TensorProto), "a1.t");
    push_i64(a, &at->t->dims, 2);
    SETV(TensorProto, at->t, data_type, 1);
    push_f32(a, &at->t->float_data, 1.0f);
    push_f32(a, &at->t->float_data, -2.5f);
    SETV(AttributeProto, at, type, 4);

    at = OC_ADD(a, AttributeProto, n->attribute); /* a2: a subgraph with a subgraph */
    SETS(AttributeProto, at, name, a, "body");
    onnx_GraphProto *g1 = at->g = OC_NEW(a, GraphProto);
    SETS(GraphProto, g1, name, a, "sub");
    onnx_NodeProto *n1 = OC_ADD(a, NodeProto, g1->node);
    SETS(NodeProto, n1, op_type, a, "Identity");
    onnx_AttributeProto *at1 = OC_ADD(a, AttributeProto, n1->attribute);
    SETS(AttributeProto, at1, name, a, "inner");
    at1->t = named(a, OC_NEW(a, TensorProto), "g1.n.t");
    set_raw(at1->t, 16, 1);
    at1->g = OC_NEW(a, GraphProto);
    named(a, OC_ADD(a, TensorProto, at1->g->initializer), "g2.init");
    onnx_TensorProto *t = named(a, OC_ADD(a, TensorProto, g1->initializer), "g1.init");
    set_raw(t, 32, 2);
    SETV(AttributeProto, at, type, 5);

    at = OC_ADD(a, AttributeProto, n->attribute); /* a3 */
    SETS(AttributeProto, at, name, a, "many");
    named(a, OC_ADD(a, TensorProto, at->tensors), "a3.t0");
    named(a, OC_ADD(a, TensorProto, at->tensors), "a3.t1");
    SETV(AttributeProto, at, type, 9);

    at = OC_ADD(a, AttributeProto, n->attribute); /* a4 */
    SETS(AttributeProto, at, name, a, "branches");
    onnx_GraphProto *g3 = OC_ADD(a, GraphProto, at->graphs);
    named(a, OC_ADD(a, TensorProto, g3->initializer), "g3.init");
    onnx_GraphProto *g4 = OC_ADD(a, GraphProto, at->graphs);
    named(a, OC_ADD(a, TensorProto, g4->initializer), "g4.init");
    SETV(AttributeProto, at, type, 10);

    at = OC_ADD(a, AttributeProto, n->attribute); /* a5 */
    SETS(AttributeProto, at, name, a, "sp");
    at->sparse_tensor = OC_NEW(a, SparseTensorProto);
    at->sparse_tensor->values = named(a, OC_NEW(a, TensorProto), "a5.v");
    at->sparse_tensor->indices = named(a, OC_NEW(a, TensorProto), "a5.i");
    push_i64(a, &at->sparse_tensor->dims, 100);
    SETV(AttributeProto, at, type, 11);

    at = OC_ADD(a, AttributeProto, n->attribute); /* a6 */
    SETS(AttributeProto, at, name, a, "sps");
    onnx_SparseTensorProto *sp = OC_ADD(a, SparseTensorProto, at->sparse_tensors);
    sp->values = named(a, OC_NEW(a, TensorProto), "a6.0.v");
    sp = OC_ADD(a, SparseTensorProto, at->sparse_tensors);
    sp->values = named(a, OC_NEW(a, TensorProto), "a6.1.v");
    sp->indices = named(a, OC_NEW(a, TensorProto), "a6.1.i");
    SETV(AttributeProto, at, type, 12);

    at = OC_ADD(a, AttributeProto, n->attribute); /* a7: no tensors */
    SETS(AttributeProto, at, name, a, "axes");
    push_i64(a, &at->ints, -1);
    push_i64(a, &at->ints, 0);
    push_i64(a, &at->ints, 5);
    push_f32(a, &at->floats, 0.25f);
    push_str(a, &at->strings, "a");
    push_str(a, &at->strings, "bb");
    at->tp = OC_NEW(a, TypeProto);
    at->tp->tensor_type = OC_NEW(a, TypeProto_Tensor);
    SETV(TypeProto_Tensor, at->tp->tensor_type, elem_type, 1);
    SETV(AttributeProto, at, type, 7);

    onnx_NodeProto *nr = OC_ADD(a, NodeProto, g->node);
    SETS(NodeProto, nr, op_type, a, "Relu");
    push_str(a, &nr->input, "Y");
    push_str(a, &nr->output, "Z");

    t = named(a, OC_ADD(a, TensorProto, g->initializer), "W");
    push_i64(a, &t->dims, 8);
    push_i64(a, &t->dims, 8);
    SETV(TensorProto, t, data_type, 1);
    set_raw(t, W_RAW, 7);
    t = named(a, OC_ADD(a, TensorProto, g->initializer), "B");
    push_i64(a, &t->dims, 4);
    SETV(TensorProto, t, data_type, 7);
    push_i64(a, &t->int64_data, 1);
    push_i64(a, &t->int64_data, -2);
    push_i64(a, &t->int64_data, 3);
    push_i64(a, &t->int64_data, INT64_MIN);
    t = named(a, OC_ADD(a, TensorProto, g->initializer), "S");
    SETV(TensorProto, t, data_type, 8);
    push_str(a, &t->string_data, "x");
    push_str(a, &t->string_data, "");
    t = named(a, OC_ADD(a, TensorProto, g->initializer), "D");
    SETV(TensorProto, t, data_type, 11);
    push_f64(a, &t->double_data, 3.25);
    push_f64(a, &t->double_data, -0.0);
    push_i32(a, &t->int32_data, -7);
    push_u64(a, &t->uint64_data, UINT64_MAX);
    SETS(TensorProto, t, doc_string, a, "");
    SETV(TensorProto, t, data_location, 0);

    sp = OC_ADD(a, SparseTensorProto, g->sparse_initializer);
    sp->values = named(a, OC_NEW(a, TensorProto), "sv");
    set_raw(sp->values, 8, 3);
    sp->indices = named(a, OC_NEW(a, TensorProto), "si");
    push_i64(a, &sp->indices->int64_data, 0);
    push_i64(a, &sp->dims, 10);

    onnx_ValueInfoProto *vi = OC_ADD(a, ValueInfoProto, g->input);
    SETS(ValueInfoProto, vi, name, a, "X");
    vi->type = OC_NEW(a, TypeProto);
    vi->type->tensor_type = OC_NEW(a, TypeProto_Tensor);
    SETV(TypeProto_Tensor, vi->type->tensor_type, elem_type, 1);
    vi->type->tensor_type->shape = OC_NEW(a, TensorShapeProto);
    onnx_TensorShapeProto_Dimension *dim =
        OC_ADD(a, TensorShapeProto_Dimension, vi->type->tensor_type->shape->dim);
    SETV(TensorShapeProto_Dimension, dim, dim_value, 4);
    dim = OC_ADD(a, TensorShapeProto_Dimension, vi->type->tensor_type->shape->dim);
    SETS(TensorShapeProto_Dimension, dim, dim_param, a, "N");
    vi = OC_ADD(a, ValueInfoProto, g->output);
    SETS(ValueInfoProto, vi, name, a, "Z");
    vi->type = OC_NEW(a, TypeProto);
    vi->type->sequence_type = OC_NEW(a, TypeProto_Sequence);
    vi->type->sequence_type->elem_type = OC_NEW(a, TypeProto);
    vi->type->sequence_type->elem_type->tensor_type = OC_NEW(a, TypeProto_Tensor);
    SETV(TypeProto_Tensor, vi->type->sequence_type->elem_type->tensor_type, elem_type, 1);
    vi = OC_ADD(a, ValueInfoProto, g->value_info);
    SETS(ValueInfoProto, vi, name, a, "Y");
    SETS(ValueInfoProto, vi, doc_string, a, "");
    onnx_TensorAnnotation *qa = OC_ADD(a, TensorAnnotation, g->quantization_annotation);
    SETS(TensorAnnotation, qa, tensor_name, a, "W");
    kv = OC_ADD(a, StringStringEntryProto, qa->quant_parameter_tensor_names);
    SETS(StringStringEntryProto, kv, key, a, "SCALE_TENSOR");
    SETS(StringStringEntryProto, kv, value, a, "s");

    onnx_TrainingInfoProto *ti = OC_ADD(a, TrainingInfoProto, m->training_info);
    ti->initialization = OC_NEW(a, GraphProto);
    named(a, OC_ADD(a, TensorProto, ti->initialization->initializer), "ti.init");
    set_raw(ti->initialization->initializer.items[0], 4, 4);
    ti->algorithm = OC_NEW(a, GraphProto);
    SETS(GraphProto, ti->algorithm, name, a, "alg");
    onnx_NodeProto *na = OC_ADD(a, NodeProto, ti->algorithm->node);
    at = OC_ADD(a, AttributeProto, na->attribute);
    SETS(AttributeProto, at, name, a, "t");
    at->t = named(a, OC_NEW(a, TensorProto), "ta.n.t");
    named(a, OC_ADD(a, TensorProto, ti->algorithm->initializer), "ta.init");
    kv = OC_ADD(a, StringStringEntryProto, ti->update_binding);
    SETS(StringStringEntryProto, kv, key, a, "a");
    SETS(StringStringEntryProto, kv, value, a, "b");

    onnx_FunctionProto *fn = OC_ADD(a, FunctionProto, m->functions);
    SETS(FunctionProto, fn, name, a, "F");
    SETS(FunctionProto, fn, domain, a, "custom");
    push_str(a, &fn->input, "a");
    push_str(a, &fn->output, "b");
    push_str(a, &fn->attribute, "alpha");
    onnx_NodeProto *nf = OC_ADD(a, NodeProto, fn->node);
    SETS(NodeProto, nf, op_type, a, "Constant");
    at = OC_ADD(a, AttributeProto, nf->attribute);
    SETS(AttributeProto, at, name, a, "value");
    at->t = named(a, OC_NEW(a, TensorProto), "f.n.t");
    at = OC_ADD(a, AttributeProto, fn->attribute_proto);
    SETS(AttributeProto, at, name, a, "beta");
    at->t = named(a, OC_NEW(a, TensorProto), "f.ap.t");
    op = OC_ADD(a, OperatorSetIdProto, fn->opset_import);
    SETS(OperatorSetIdProto, op, domain, a, "");
    SETV(OperatorSetIdProto, op, version, 17);

    onnx_DeviceConfigurationProto *dc = OC_ADD(a, DeviceConfigurationProto, m->configuration);
    SETS(DeviceConfigurationProto, dc, name, a, "cfg");
    SETV(DeviceConfigurationProto, dc, num_devices, 2);
    push_str(a, &dc->device, "d0");
    push_str(a, &dc->device, "d1");
    return m;
}

/* Encodes the rich model into out. */
static int rich_bytes(wbuf *out) {
    oc_arena *a = oc_arena_new();
    if (!a) return 0;
    onnx_ModelProto *m = build_rich_model(a);
    int ok = m && encode3(&onnx_ModelProto_desc, m, out);
    oc_arena_free(a);
    return ok;
}

static void nested_typeproto(wbuf *out, int depth);

/* ---------------------------------------------------------------------------------- */
/* 1. Scalars of every wire type                                                        */

static void test_scalar_fields(void) {
    /* AttributeProto: string, fixed32, varint, bytes with a NUL, enum; written in field
     * order, so the re-encoding is identical. */
    wbuf in = {0};
    wb_str(&in, 1, "alpha");
    wb_f32(&in, 2, 0x3fc00000u); /* 1.5f */
    wb_vint(&in, 3, (uint64_t)(int64_t)-7);
    wb_len(&in, 4, "b\0y", 3);
    wb_vint(&in, 20, 1);
    decoded x = dec(&onnx_AttributeProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    onnx_AttributeProto *at = x.msg;
    if (x.st == OC_OK) {
        CHECK(OC_HAS(AttributeProto, at, name));
        CHECK_STR_EQ(at->name, "alpha");
        CHECK(OC_HAS(AttributeProto, at, f));
        CHECK(at->f == 1.5f);
        CHECK(OC_HAS(AttributeProto, at, i));
        CHECK_EQ(at->i, -7);
        CHECK(OC_HAS(AttributeProto, at, s));
        CHECK_EQ(at->s.size, 3);
        CHECK_MEM_EQ(at->s.data, "b\0y", 3);
        CHECK(OC_HAS(AttributeProto, at, type));
        CHECK_EQ(at->type, 1);
        CHECK(!OC_HAS(AttributeProto, at, doc_string));
        CHECK(!OC_HAS(AttributeProto, at, ref_attr_name));
        CHECK_PTR_EQ(at->t, NULL);
        CHECK_PTR_EQ(at->g, NULL);
        CHECK_EQ(at->hdr.unknown.size, 0);
    }
    dec_free(&x);
    CHECK(roundtrip("attribute scalars", &onnx_AttributeProto_desc, &in, &in));

    /* fixed64: TensorProto.double_data sent unpacked (wire type 1). */
    wbuf d = {0}, exp = {0};
    wb_f64(&d, 10, 0x400a000000000000ull); /* 3.25 */
    wb_f64(&d, 10, 0xbff0000000000000ull); /* -1.0 */
    x = dec(&onnx_TensorProto_desc, d.p, d.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    onnx_TensorProto *t = x.msg;
    if (x.st == OC_OK && CHECK_EQ(t->double_data.count, 2)) {
        CHECK(t->double_data.items[0] == 3.25);
        CHECK(t->double_data.items[1] == -1.0);
    }
    dec_free(&x);
    wb_tag(&exp, 10, WT_LEN);
    wb_varint(&exp, 16);
    wb_le64(&exp, 0x400a000000000000ull);
    wb_le64(&exp, 0xbff0000000000000ull);
    CHECK(roundtrip("double_data unpacked -> packed", &onnx_TensorProto_desc, &d, &exp));

    /* Strings are not UTF-8 validated; fields may come in any order and are written in
     * field-number order. */
    wbuf m = {0}, mexp = {0};
    wb_msg(&m, 7, &(wbuf){0});
    wb_len(&m, 2, "\xff\xfe\x80", 3);
    wb_vint(&m, 1, 7);
    wb_vint(&mexp, 1, 7);
    wb_len(&mexp, 2, "\xff\xfe\x80", 3);
    wb_msg(&mexp, 7, &(wbuf){0});
    CHECK(roundtrip("out of order, non-UTF-8", &onnx_ModelProto_desc, &m, &mexp));

    /* A non-canonical (over-long) varint and tag are accepted; written canonically. */
    wbuf nc = {0}, ncexp = {0};
    const uint8_t ncbytes[] = {0x88, 0x00, 0x87, 0x80, 0x00}; /* tag 1 in 2 bytes, 7 in 3 */
    wb_raw(&nc, ncbytes, sizeof ncbytes);
    wb_vint(&ncexp, 1, 7);
    CHECK(roundtrip("non-canonical varints", &onnx_ModelProto_desc, &nc, &ncexp));

    wb_free(&in);
    wb_free(&d);
    wb_free(&exp);
    wb_free(&m);
    wb_free(&mexp);
    wb_free(&nc);
    wb_free(&ncexp);
}

/* ---------------------------------------------------------------------------------- */
/* 2. Varints: 10-byte encodings, int32 sign extension and truncation to 32 bits        */

static void test_varints(void) {
    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);

    /* int64 -1: 10 bytes. */
    onnx_AttributeProto *at = OC_NEW(a, AttributeProto);
    SETV(AttributeProto, at, i, -1);
    wbuf out = {0};
    encode3(&onnx_AttributeProto_desc, at, &out);
    const uint8_t want_i[] = {0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK_EQ(out.n, sizeof want_i);
    CHECK_MEM_EQ(out.p, want_i, sizeof want_i);

    /* INT64_MIN */
    wb_reset(&out);
    at->i = INT64_MIN;
    encode3(&onnx_AttributeProto_desc, at, &out);
    const uint8_t want_min[] = {0x18, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    CHECK_EQ(out.n, sizeof want_min);
    CHECK_MEM_EQ(out.p, want_min, sizeof want_min);

    /* int32 -1 (TensorProto.data_type) is sign-extended to 10 bytes, as protobuf does. */
    onnx_TensorProto *t = OC_NEW(a, TensorProto);
    SETV(TensorProto, t, data_type, -1);
    wb_reset(&out);
    encode3(&onnx_TensorProto_desc, t, &out);
    const uint8_t want_dt[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    CHECK_EQ(out.n, sizeof want_dt);
    CHECK_MEM_EQ(out.p, want_dt, sizeof want_dt);

    /* ... and decodes back to -1. */
    decoded x = dec(&onnx_TensorProto_desc, want_dt, sizeof want_dt, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) CHECK_EQ(((onnx_TensorProto *)x.msg)->data_type, -1);
    dec_free(&x);

    /* int32 from a 5-byte varint 0xffffffff: -1 (low 32 bits); written back as 10 bytes. */
    const uint8_t five[] = {0x10, 0xff, 0xff, 0xff, 0xff, 0x0f};
    x = dec(&onnx_TensorProto_desc, five, sizeof five, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        CHECK_EQ(((onnx_TensorProto *)x.msg)->data_type, -1);
        wb_reset(&out);
        encode3(&onnx_TensorProto_desc, x.msg, &out);
        CHECK_EQ(out.n, sizeof want_dt);
        CHECK_MEM_EQ(out.p, want_dt, sizeof want_dt);
    }
    dec_free(&x);

    /* int32 from 2^32 + 7: 7. */
    wbuf in = {0};
    wb_vint(&in, 2, ((uint64_t)1 << 32) + 7);
    x = dec(&onnx_TensorProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) CHECK_EQ(((onnx_TensorProto *)x.msg)->data_type, 7);
    dec_free(&x);

    /* Negative int32 values in other messages: written as 10 bytes, read back. */
    onnx_NodeDeviceConfigurationProto *nd = OC_NEW(a, NodeDeviceConfigurationProto);
    SETV(NodeDeviceConfigurationProto, nd, pipeline_stage, -3);
    wb_reset(&out);
    encode3(&onnx_NodeDeviceConfigurationProto_desc, nd, &out);
    CHECK_EQ(out.n, 11);
    wb_reset(&in);
    wb_vint(&in, 3, (uint64_t)(int64_t)-3);
    CHECK_EQ(in.n, 11);
    CHECK(wb_same(&out, in.p, in.n));
    x = dec(&onnx_NodeDeviceConfigurationProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) CHECK_EQ(((onnx_NodeDeviceConfigurationProto *)x.msg)->pipeline_stage, -3);
    dec_free(&x);
    /* INT32_MIN */
    onnx_DeviceConfigurationProto *dc = OC_NEW(a, DeviceConfigurationProto);
    SETV(DeviceConfigurationProto, dc, num_devices, INT32_MIN);
    wb_reset(&out);
    wb_reset(&in);
    encode3(&onnx_DeviceConfigurationProto_desc, dc, &out);
    wb_vint(&in, 2, (uint64_t)(int64_t)INT32_MIN);
    CHECK(wb_same(&out, in.p, in.n));

    /* uint64 max in a packed uint64 field. */
    t = OC_NEW(a, TensorProto);
    push_u64(a, &t->uint64_data, UINT64_MAX);
    push_u64(a, &t->uint64_data, 1);
    wb_reset(&out);
    encode3(&onnx_TensorProto_desc, t, &out);
    const uint8_t want_u[] = {0x5a, 11,   0xff, 0xff, 0xff, 0xff, 0xff,
                              0xff, 0xff, 0xff, 0xff, 0x01, 0x01};
    CHECK_EQ(out.n, sizeof want_u);
    CHECK_MEM_EQ(out.p, want_u, sizeof want_u);

    wb_free(&out);
    wb_free(&in);
    oc_arena_free(a);
}

/* ---------------------------------------------------------------------------------- */
/* 3. Malformed and truncated input                                                     */

static void test_malformed(void) {
    wbuf b = {0};
    uint64_t off;

    /* An 11-byte varint value: malformed, at the varint's first byte. */
    wb_str(&b, 1, "ab"); /* offsets 0-3 */
    wb_byte(&b, 0x18);   /* offset 4: field 3 (i), varint */
    for (int i = 0; i < 10; i++) wb_byte(&b, 0xff);
    wb_byte(&b, 0x01);
    off = expect_fail("11-byte varint value", &onnx_AttributeProto_desc, &b, OC_ERR_MALFORMED);
    CHECK_EQ(off, 5);

    /* An 11-byte varint with a zero last byte (still 11 bytes). */
    wb_reset(&b);
    wb_byte(&b, 0x18);
    for (int i = 0; i < 10; i++) wb_byte(&b, 0x80);
    wb_byte(&b, 0x00);
    off = expect_fail("11-byte zero varint", &onnx_AttributeProto_desc, &b, OC_ERR_MALFORMED);
    CHECK_EQ(off, 1);

    /* An 11-byte tag. */
    wb_reset(&b);
    wb_str(&b, 1, "ab");
    for (int i = 0; i < 10; i++) wb_byte(&b, 0xff);
    wb_byte(&b, 0x01);
    off = expect_fail("11-byte tag", &onnx_AttributeProto_desc, &b, OC_ERR_MALFORMED);
    CHECK_EQ(off, 4);

    /* An 11-byte length. */
    wb_reset(&b);
    wb_str(&b, 1, "ab");
    wb_byte(&b, 0x22); /* field 4 (s), length-delimited */
    for (int i = 0; i < 10; i++) wb_byte(&b, 0xff);
    wb_byte(&b, 0x01);
    off = expect_fail("11-byte length", &onnx_AttributeProto_desc, &b, OC_ERR_MALFORMED);
    CHECK_EQ(off, 5);

    /* An 11-byte varint in an unknown field. */
    wb_reset(&b);
    wb_vint(&b, 1, 1);         /* 0-1 */
    wb_tag(&b, 99, WT_VARINT); /* 2-3 */
    for (int i = 0; i < 10; i++) wb_byte(&b, 0xff);
    wb_byte(&b, 0x01);
    off = expect_fail("11-byte unknown varint", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);
    CHECK_EQ(off, 4);

    /* Offsets are positions in the whole input, not in the submessage. */
    wb_reset(&b);
    {
        wbuf g = {0};
        wb_str(&g, 2, "g");       /* graph offsets 0-2 */
        wb_tag(&g, 3, WT_VARINT); /* 3: unknown field 3 of GraphProto */
        for (int i = 0; i < 10; i++) wb_byte(&g, 0xff);
        wb_byte(&g, 0x01);
        wb_vint(&b, 1, 1); /* 0-1 */
        wb_msg(&b, 7, &g); /* tag 2, length 3, graph starts at 4 */
        wb_free(&g);
    }
    off = expect_fail("nested 11-byte varint", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);
    CHECK_EQ(off, 8);

    /* A varint cut by the end of input. */
    wb_reset(&b);
    wb_byte(&b, 0x18);
    wb_byte(&b, 0xff);
    wb_byte(&b, 0xff);
    expect_fail("cut varint", &onnx_AttributeProto_desc, &b, OC_ERR_TRUNCATED);
    wb_reset(&b);
    wb_byte(&b, 0x80); /* a cut tag */
    expect_fail("cut tag", &onnx_AttributeProto_desc, &b, OC_ERR_TRUNCATED);

    /* Length past the end. */
    wb_reset(&b);
    wb_tag(&b, 2, WT_LEN);
    wb_varint(&b, 10);
    wb_bytes(&b, "abc");
    off = expect_fail("length past end", &onnx_ModelProto_desc, &b, OC_ERR_TRUNCATED);
    CHECK(off <= b.n);
    /* ... in an unknown field and in a submessage. */
    wb_reset(&b);
    wb_tag(&b, 99, WT_LEN);
    wb_varint(&b, 5);
    wb_bytes(&b, "ab");
    expect_fail("unknown length past end", &onnx_ModelProto_desc, &b, OC_ERR_TRUNCATED);
    wb_reset(&b);
    wb_tag(&b, 7, WT_LEN);
    wb_varint(&b, 100);
    wb_str(&b, 2, "name");
    expect_fail("submessage past end", &onnx_ModelProto_desc, &b, OC_ERR_TRUNCATED);
    /* A string inside a submessage that runs past the submessage's own end (but not past
     * the input's): must not be read from the bytes that follow. */
    wb_reset(&b);
    {
        const uint8_t bad[] = {0x3a, 0x03, 0x12, 0x05, 'a', 'b', 'c', 'd', 'e', 0x08, 0x01};
        wb_raw(&b, bad, sizeof bad);
        decoded x = dec(&onnx_ModelProto_desc, b.p, b.n, NULL, NULL);
        CHECK_STATUS(x.st, OC_ERR_TRUNCATED, &x.err); /* spec W-17 */
        dec_free(&x);
    }
    /* Huge lengths must not wrap around. */
    uint64_t huge[] = {UINT64_MAX, UINT64_MAX - 1, (uint64_t)1 << 63, (uint64_t)1 << 62,
                       UINT64_MAX - 3};
    for (int i = 0; i < 5; i++) {
        uint32_t fields[] = {2, 7, 99, 9}; /* string, message, unknown, raw_data */
        for (int k = 0; k < 4; k++) {
            wb_reset(&b);
            wb_tag(&b, fields[k], WT_LEN);
            wb_varint(&b, huge[i]);
            wb_bytes(&b, "abcdefgh");
            const oc_msgdesc *d = fields[k] == 9 ? &onnx_TensorProto_desc : &onnx_ModelProto_desc;
            decoded x = dec(d, b.p, b.n, NULL, NULL);
            if (!CHECK_STATUS(x.st, OC_ERR_TRUNCATED, &x.err))
                fprintf(stderr, "  huge length %llu in field %u: %s\n", (unsigned long long)huge[i],
                        fields[k], oc_status_name(x.st));
            dec_free(&x);
            /* and with no_copy (borrowed raw_data) */
            oc_parse_options o = OC_PARSE_OPTIONS_INIT;
            o.no_copy = 1;
            o.buffer.raw_data_threshold = 0;
            x = dec(d, b.p, b.n, &o, NULL);
            CHECK_STATUS(x.st, OC_ERR_TRUNCATED, &x.err);
            dec_free(&x);
        }
    }
    /* Fixed-width values cut short. */
    wb_reset(&b);
    wb_tag(&b, 2, WT_I32);
    wb_bytes(&b, "\x01\x02\x03");
    expect_fail("cut fixed32", &onnx_AttributeProto_desc, &b, OC_ERR_TRUNCATED);
    wb_reset(&b);
    wb_tag(&b, 99, WT_I64);
    wb_bytes(&b, "\x01\x02\x03\x04\x05\x06\x07");
    expect_fail("cut fixed64", &onnx_AttributeProto_desc, &b, OC_ERR_TRUNCATED);

    /* Wire types 6 and 7, field number 0. */
    for (unsigned wt = 6; wt <= 7; wt++) {
        wb_reset(&b);
        wb_vint(&b, 1, 1);
        wb_tag(&b, 9, wt); /* offset 2 */
        wb_byte(&b, 0);
        off = expect_fail("wire type 6/7", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);
        CHECK_EQ(off, 2);
        wb_reset(&b);
        wb_tag(&b, 1, wt); /* a known field number */
        wb_byte(&b, 0);
        expect_fail("wire type 6/7 on a known field", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);
    }
    for (unsigned wt = 0; wt <= 5; wt++) {
        wb_reset(&b);
        wb_vint(&b, 1, 1);
        wb_tag(&b, 0, wt); /* offset 2 */
        for (int i = 0; i < 9; i++) wb_byte(&b, 0);
        off = expect_fail("field number 0", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);
        CHECK_EQ(off, 2);
    }
    /* Field numbers above 2^29-1 (a tag that does not fit 32 bits). */
    wb_reset(&b);
    wb_varint(&b, (uint64_t)1 << 32); /* field 2^29, varint */
    wb_byte(&b, 1);
    expect_fail("field number 2^29", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);
    wb_reset(&b);
    wb_varint(&b, (uint64_t)1 << 40);
    wb_byte(&b, 1);
    expect_fail("field number 2^37", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);

    /* Groups: an end without a start, mismatched ends, a start without an end. */
    wb_reset(&b);
    wb_vint(&b, 1, 1);
    wb_tag(&b, 9, WT_EGROUP);
    expect_fail("unmatched end-group", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);
    wb_reset(&b);
    {
        wbuf g = {0};
        wb_str(&g, 2, "g");
        wb_tag(&g, 9, WT_EGROUP);
        wb_msg(&b, 7, &g);
        wb_free(&g);
    }
    expect_fail("unmatched end-group in a submessage", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);
    wb_reset(&b);
    wb_tag(&b, 9, WT_SGROUP);
    wb_vint(&b, 1, 5);
    wb_tag(&b, 10, WT_EGROUP);
    expect_fail("mismatched end-group", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);
    wb_reset(&b);
    wb_tag(&b, 9, WT_SGROUP);
    wb_vint(&b, 1, 5);
    expect_fail("group without end", &onnx_ModelProto_desc, &b, OC_ERR_TRUNCATED);
    wb_reset(&b);
    wb_tag(&b, 9, WT_SGROUP);
    wb_tag(&b, 1, 6);
    wb_tag(&b, 9, WT_EGROUP);
    expect_fail("bad wire type in a group", &onnx_ModelProto_desc, &b, OC_ERR_MALFORMED);
    /* A group that closes inside a submessage boundary it was opened outside of. */
    wb_reset(&b);
    {
        wbuf g = {0};
        wb_tag(&g, 9, WT_EGROUP);
        wb_tag(&b, 9, WT_SGROUP);
        wb_msg(&b, 7, &g);
        wb_tag(&b, 9, WT_EGROUP);
        wb_free(&g);
    }
    {
        decoded x = dec(&onnx_ModelProto_desc, b.p, b.n, NULL, NULL);
        /* The group is unknown: its contents are skipped, not parsed as a graph, so this is
         * in fact well-formed: field 7 inside a group is just group content. */
        CHECK_STATUS(x.st, OC_OK, &x.err);
        if (x.st == OC_OK) CHECK_EQ(((onnx_ModelProto *)x.msg)->hdr.unknown.size, b.n);
        dec_free(&x);
    }

    /* err may be NULL. */
    wb_reset(&b);
    wb_tag(&b, 0, 0);
    {
        oc_arena *a = oc_arena_new();
        void *m = oc_msg_new(a, &onnx_ModelProto_desc);
        CHECK_STATUS(oc_decode(&onnx_ModelProto_desc, m, b.p, b.n, a, NULL, NULL, NULL),
                     OC_ERR_MALFORMED, NULL);
        oc_arena_free(a);
    }

    /* Packed fields with bad contents. */
    wb_reset(&b);
    wb_len(&b, 4, "\x01\x02\x03\x04\x05", 5); /* float_data: 5 bytes */
    {
        decoded x = dec(&onnx_TensorProto_desc, b.p, b.n, NULL, NULL);
        CHECK_STATUS(x.st, OC_ERR_MALFORMED, &x.err); /* spec W-17 */
        dec_free(&x);
    }
    wb_reset(&b);
    wb_len(&b, 10, "\x01\x02\x03\x04\x05\x06\x07\x08\x09", 9); /* double_data: 9 bytes */
    {
        decoded x = dec(&onnx_TensorProto_desc, b.p, b.n, NULL, NULL);
        CHECK_STATUS(x.st, OC_ERR_MALFORMED, &x.err); /* spec W-17 */
        dec_free(&x);
    }
    wb_reset(&b);
    wb_len(&b, 7, "\x01\x80", 2); /* int64_data: the last varint is cut by the length */
    wb_vint(&b, 2, 1);            /* ... and would continue into this */
    {
        decoded x = dec(&onnx_TensorProto_desc, b.p, b.n, NULL, NULL);
        CHECK_STATUS(x.st, OC_ERR_MALFORMED, &x.err); /* spec W-17 */
        dec_free(&x);
    }
    wb_reset(&b);
    wb_len(&b, 1, "\x01\x80", 2); /* dims (unpacked REP field) sent packed, cut */
    wb_vint(&b, 2, 1);
    {
        decoded x = dec(&onnx_TensorProto_desc, b.p, b.n, NULL, NULL);
        CHECK_STATUS(x.st, OC_ERR_MALFORMED, &x.err); /* spec W-17 */
        dec_free(&x);
    }
    wb_reset(&b);
    wb_tag(&b, 7, WT_LEN);
    wb_varint(&b, 50);
    wb_byte(&b, 1);
    expect_fail("packed length past end", &onnx_TensorProto_desc, &b, OC_ERR_TRUNCATED);
    wb_free(&b);
}

/* Spec W-17: every decode error names the offset of the tag of the field at fault (a
 * too-long varint: its first byte). Each case puts one good field (2 bytes) first. */
static void test_error_offsets(void) {
    struct {
        const char *what;
        const oc_msgdesc *d;
        const char *bytes;
        size_t n;
        oc_status code;
        uint64_t off;
    } cases[] = {
        {"length past the end", &onnx_ModelProto_desc,
         "\x08\x01\x12\x0a"
         "abc",
         7, OC_ERR_TRUNCATED, 2},
        {"string past its submessage", &onnx_ModelProto_desc,
         "\x08\x01\x3a\x03\x12\x05"
         "abcde\x08\x01",
         13, OC_ERR_TRUNCATED, 4},
        {"cut fixed32", &onnx_AttributeProto_desc, "\x08\x01\x15\x01\x02", 5, OC_ERR_TRUNCATED, 2},
        {"cut fixed64", &onnx_TensorProto_desc, "\x08\x01\x51\x01\x02\x03", 6, OC_ERR_TRUNCATED, 2},
        {"cut varint value", &onnx_AttributeProto_desc, "\x08\x01\x18\x80", 4, OC_ERR_TRUNCATED, 2},
        {"cut tag", &onnx_AttributeProto_desc, "\x08\x01\x80", 3, OC_ERR_TRUNCATED, 2},
        {"cut length", &onnx_AttributeProto_desc, "\x08\x01\x0a\xff", 4, OC_ERR_TRUNCATED, 2},
        {"group without end", &onnx_ModelProto_desc, "\x08\x01\x4b\x08\x01", 5, OC_ERR_TRUNCATED,
         2},
        {"unmatched end-group", &onnx_ModelProto_desc, "\x08\x01\x4c", 3, OC_ERR_MALFORMED, 2},
        {"wire type 7", &onnx_ModelProto_desc, "\x08\x01\x4f\x00", 4, OC_ERR_MALFORMED, 2},
        {"field number 0", &onnx_ModelProto_desc, "\x08\x01\x00\x00", 4, OC_ERR_MALFORMED, 2},
        {"packed float, 5 bytes", &onnx_TensorProto_desc, "\x08\x01\x22\x05\x01\x02\x03\x04\x05", 9,
         OC_ERR_MALFORMED, 2},
        {"packed double, 9 bytes", &onnx_TensorProto_desc,
         "\x08\x01\x52\x09\x01\x02\x03\x04\x05\x06\x07\x08\x09", 13, OC_ERR_MALFORMED, 2},
        {"packed varint cut by its length", &onnx_TensorProto_desc,
         "\x08\x01\x3a\x02\x01\x80\x08\x01", 8, OC_ERR_MALFORMED, 2},
        {"11-byte varint", &onnx_AttributeProto_desc,
         "\x08\x01\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 14, OC_ERR_MALFORMED, 3},
        {"error in a nested group", &onnx_ModelProto_desc, "\x08\x01\x4b\x08\x01\x0f\x4c", 7,
         OC_ERR_MALFORMED, 5},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        decoded x = dec(cases[i].d, cases[i].bytes, cases[i].n, NULL, NULL);
        int ok = CHECK_STATUS(x.st, cases[i].code, &x.err);
        ok &= CHECK_EQ(x.err.offset, cases[i].off);
        if (!ok) fprintf(stderr, "  in %s\n", cases[i].what);
        dec_free(&x);
    }
    /* Too deep: the tag of the field holding the message one level too deep. The chain's
     * innermost message is empty: its field is the last two bytes. */
    wbuf b = {0};
    nested_typeproto(&b, 101);
    decoded x = dec(&onnx_TypeProto_desc, b.p, b.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_ERR_DEPTH, &x.err);
    CHECK_EQ(x.err.offset, b.n - 2);
    dec_free(&x);
    wb_free(&b);
}

/* ---------------------------------------------------------------------------------- */
/* 4. Unknown fields                                                                    */

static void test_unknown_fields(void) {
    wbuf in = {0}, unk = {0}, exp = {0};
    wbuf u9 = {0}, u13 = {0}, u12 = {0}, u11 = {0}, u10 = {0}, umax = {0};
    wb_vint(&u9, 9, 300);
    wb_f32(&u13, 13, 0xdeadbeefu);
    wb_tag(&u12, 12, WT_SGROUP); /* a group holding every wire type and a nested group */
    wb_vint(&u12, 1, 5);
    wb_str(&u12, 2, "xy");
    wb_tag(&u12, 3, WT_SGROUP);
    wb_f32(&u12, 4, 0x01020304u);
    wb_tag(&u12, 3, WT_EGROUP);
    wb_f64(&u12, 5, 0x1122334455667788ull);
    wb_tag(&u12, 12, WT_EGROUP);
    wb_str(&u11, 11, "unknown");
    wb_f64(&u10, 10, 0x0102030405060708ull);
    wb_vint(&umax, (1u << 29) - 1, 1); /* the largest field number */

    wb_cat(&in, &u9);
    wb_vint(&in, 1, 7); /* ir_version */
    wb_cat(&in, &u13);
    wb_str(&in, 2, "p"); /* producer_name */
    wb_cat(&in, &u12);
    wb_cat(&in, &u11);
    wb_cat(&in, &u10);
    wb_vint(&in, 5, 3); /* model_version */
    wb_cat(&in, &umax);

    wb_cat(&unk, &u9);
    wb_cat(&unk, &u13);
    wb_cat(&unk, &u12);
    wb_cat(&unk, &u11);
    wb_cat(&unk, &u10);
    wb_cat(&unk, &umax);

    wb_vint(&exp, 1, 7);
    wb_str(&exp, 2, "p");
    wb_vint(&exp, 5, 3);
    wb_cat(&exp, &unk);

    decoded x = dec(&onnx_ModelProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_ModelProto *m = x.msg;
        CHECK_EQ(m->ir_version, 7);
        CHECK_STR_EQ(m->producer_name, "p");
        CHECK_EQ(m->model_version, 3);
        CHECK_EQ(m->hdr.unknown.size, unk.n);
        CHECK_MEM_EQ(m->hdr.unknown.data, unk.p, unk.n);
    }
    dec_free(&x);
    CHECK(roundtrip("unknown fields of every wire type", &onnx_ModelProto_desc, &in, &exp));

    /* Unknown fields of a nested message stay with it; the parent's length adapts. */
    wbuf g = {0}, gexp = {0}, min = {0}, mexp = {0};
    wb_vint(&g, 3, 1);
    wb_str(&g, 2, "g");
    wb_str(&g, 4, "zz");
    wb_str(&gexp, 2, "g");
    wb_vint(&gexp, 3, 1);
    wb_str(&gexp, 4, "zz");
    wb_msg(&min, 7, &g);
    wb_vint(&min, 1, 1);
    wb_vint(&mexp, 1, 1);
    wb_msg(&mexp, 7, &gexp);
    CHECK(roundtrip("nested unknown fields", &onnx_ModelProto_desc, &min, &mexp));

    /* A known field with the wrong wire type is kept as an unknown field. */
    wbuf w = {0};
    wb_str(&w, 1, "A");                /* ir_version as bytes */
    wb_vint(&w, 2, 5);                 /* producer_name as a varint */
    wb_f32(&w, 5, 0x11223344u);        /* model_version as fixed32 */
    wb_vint(&w, 7, 1);                 /* graph as a varint */
    wb_f64(&w, 8, 0x0102030405060708); /* opset_import (repeated message) as fixed64 */
    x = dec(&onnx_ModelProto_desc, w.p, w.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_ModelProto *m = x.msg;
        CHECK(!OC_HAS(ModelProto, m, ir_version));
        CHECK(!OC_HAS(ModelProto, m, producer_name));
        CHECK(!OC_HAS(ModelProto, m, model_version));
        CHECK_PTR_EQ(m->graph, NULL);
        CHECK_EQ(m->opset_import.count, 0);
        CHECK_EQ(m->hdr.unknown.size, w.n);
        CHECK_MEM_EQ(m->hdr.unknown.data, w.p, w.n);
    }
    dec_free(&x);
    CHECK(roundtrip("wrong wire types", &onnx_ModelProto_desc, &w, &w));

    wbuf wa = {0}, waexp = {0};
    wb_vint(&wa, 2, 1);    /* AttributeProto.f (fixed32) as a varint */
    wb_str(&wa, 1, "n");   /* name, fine */
    wb_f32(&wa, 3, 0x10u); /* i (varint) as fixed32 */
    wb_vint(&wa, 4, 9);    /* s (bytes) as a varint */
    wb_str(&waexp, 1, "n");
    wb_vint(&waexp, 2, 1);
    wb_f32(&waexp, 3, 0x10u);
    wb_vint(&waexp, 4, 9);
    x = dec(&onnx_AttributeProto_desc, wa.p, wa.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_AttributeProto *at = x.msg;
        CHECK(!OC_HAS(AttributeProto, at, f));
        CHECK(!OC_HAS(AttributeProto, at, i));
        CHECK(!OC_HAS(AttributeProto, at, s));
        CHECK(OC_HAS(AttributeProto, at, name));
    }
    dec_free(&x);
    CHECK(roundtrip("attribute wrong wire types", &onnx_AttributeProto_desc, &wa, &waexp));

    /* A repeated string sent as a varint; a packed-only float field sent as a varint. */
    wbuf wn = {0}, wnexp = {0};
    wb_vint(&wn, 1, 1); /* NodeProto.input as varint -> unknown */
    wb_str(&wn, 4, "Op");
    wb_str(&wnexp, 4, "Op");
    wb_vint(&wnexp, 1, 1);
    CHECK(roundtrip("repeated string as varint", &onnx_NodeProto_desc, &wn, &wnexp));
    wbuf wt = {0};
    wb_vint(&wt, 4, 1); /* float_data as varint -> unknown */
    wb_f32(&wt, 7, 1);  /* int64_data as fixed32 -> unknown */
    CHECK(roundtrip("packed field wrong wire type", &onnx_TensorProto_desc, &wt, &wt));

    /* Deeply nested unknown groups: no crash (a limit may apply). */
    wbuf deep = {0};
    enum { DEEP_GROUPS = 1000000 };
    wb_vint(&deep, 1, 1);
    for (int i = 0; i < DEEP_GROUPS; i++) wb_tag(&deep, 9, WT_SGROUP);
    for (int i = 0; i < DEEP_GROUPS; i++) wb_tag(&deep, 9, WT_EGROUP);
    x = dec(&onnx_ModelProto_desc, deep.p, deep.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_ERR_DEPTH, &x.err); /* groups count against the limit (W-14) */
    dec_free(&x);
    /* ... and 50 nested groups are fine and kept. */
    wb_reset(&deep);
    for (int i = 0; i < 50; i++) wb_tag(&deep, 9, WT_SGROUP);
    for (int i = 0; i < 50; i++) wb_tag(&deep, 9, WT_EGROUP);
    CHECK(roundtrip("50 nested groups", &onnx_ModelProto_desc, &deep, &deep));

    wbuf *all[] = {&in,   &unk, &exp,  &u9, &u13, &u12,   &u11, &u10,   &umax, &g,
                   &gexp, &min, &mexp, &w,  &wa,  &waexp, &wn,  &wnexp, &wt,   &deep};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wb_free(all[i]);
}

/* ---------------------------------------------------------------------------------- */
/* 5. Repeated scalars: packed and unpacked in, packed out only where the schema says   */

static void test_repeated(void) {
    wbuf in = {0}, exp = {0}, p = {0};

    /* dims (REP): unpacked, packed and unpacked again -> written unpacked. */
    wb_vint(&in, 1, 2);
    wb_vint(&in, 1, 3);
    wb_varint(&p, 4);
    wb_varint(&p, 5);
    wb_msg(&in, 1, &p);
    wb_vint(&in, 1, 6);
    for (int v = 2; v <= 6; v++) wb_vint(&exp, 1, (uint64_t)v);
    decoded x = dec(&onnx_TensorProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK && CHECK_EQ(((onnx_TensorProto *)x.msg)->dims.count, 5))
        for (int i = 0; i < 5; i++) CHECK_EQ(((onnx_TensorProto *)x.msg)->dims.items[i], i + 2);
    dec_free(&x);
    CHECK(roundtrip("dims mixed -> unpacked", &onnx_TensorProto_desc, &in, &exp));

    /* float_data (PACKED): unpacked then packed -> one packed field. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_reset(&p);
    wb_f32(&in, 4, 0x3f800000u); /* 1.0 */
    wb_le32(&p, 0x40000000u);    /* 2.0 */
    wb_le32(&p, 0x40400000u);    /* 3.0 */
    wb_msg(&in, 4, &p);
    wb_tag(&exp, 4, WT_LEN);
    wb_varint(&exp, 12);
    wb_le32(&exp, 0x3f800000u);
    wb_le32(&exp, 0x40000000u);
    wb_le32(&exp, 0x40400000u);
    CHECK(roundtrip("float_data -> packed", &onnx_TensorProto_desc, &in, &exp));

    /* int32_data (PACKED): negative values are 10 bytes each inside the packed run; a
     * value above 32 bits keeps its low 32 bits. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_reset(&p);
    wb_vint(&in, 5, (uint64_t)(int64_t)-1);
    wb_varint(&p, 1);
    wb_varint(&p, (uint64_t)(int64_t)-2);
    wb_varint(&p, ((uint64_t)1 << 32) + 9);
    wb_msg(&in, 5, &p);
    wb_reset(&p);
    wb_varint(&p, (uint64_t)(int64_t)-1);
    wb_varint(&p, 1);
    wb_varint(&p, (uint64_t)(int64_t)-2);
    wb_varint(&p, 9);
    wb_msg(&exp, 5, &p);
    x = dec(&onnx_TensorProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_TensorProto *t = x.msg;
        if (CHECK_EQ(t->int32_data.count, 4)) {
            CHECK_EQ(t->int32_data.items[0], -1);
            CHECK_EQ(t->int32_data.items[1], 1);
            CHECK_EQ(t->int32_data.items[2], -2);
            CHECK_EQ(t->int32_data.items[3], 9);
        }
    }
    dec_free(&x);
    CHECK(roundtrip("int32_data -> packed", &onnx_TensorProto_desc, &in, &exp));

    /* int64_data, double_data, uint64_data (PACKED). */
    wb_reset(&in);
    wb_reset(&exp);
    wb_reset(&p);
    wb_vint(&in, 7, (uint64_t)INT64_MIN);
    wb_vint(&in, 11, UINT64_MAX);
    wb_f64(&in, 10, 0x3ff0000000000000ull);
    wb_reset(&p);
    wb_varint(&p, 0);
    wb_varint(&p, 5);
    wb_msg(&in, 7, &p);
    wb_vint(&in, 11, 42);
    wb_reset(&p);
    wb_le64(&p, 0x4000000000000000ull);
    wb_msg(&in, 10, &p);
    wb_reset(&p);
    wb_varint(&p, (uint64_t)INT64_MIN);
    wb_varint(&p, 0);
    wb_varint(&p, 5);
    wb_msg(&exp, 7, &p);
    wb_reset(&p);
    wb_le64(&p, 0x3ff0000000000000ull);
    wb_le64(&p, 0x4000000000000000ull);
    wb_msg(&exp, 10, &p);
    wb_reset(&p);
    wb_varint(&p, UINT64_MAX);
    wb_varint(&p, 42);
    wb_msg(&exp, 11, &p);
    CHECK(roundtrip("int64/double/uint64 -> packed", &onnx_TensorProto_desc, &in, &exp));

    /* An empty packed run adds nothing and writes nothing. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_len(&in, 4, "", 0);
    wb_len(&in, 1, "", 0);
    wb_str(&in, 8, "t");
    wb_str(&exp, 8, "t");
    x = dec(&onnx_TensorProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        CHECK_EQ(((onnx_TensorProto *)x.msg)->float_data.count, 0);
        CHECK_EQ(((onnx_TensorProto *)x.msg)->dims.count, 0);
    }
    dec_free(&x);
    CHECK(roundtrip("empty packed", &onnx_TensorProto_desc, &in, &exp));

    /* AttributeProto.ints and floats (REP): packed in, unpacked out. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_reset(&p);
    wb_le32(&p, 0x3f000000u);
    wb_le32(&p, 0xbf800000u);
    wb_msg(&in, 7, &p);
    wb_reset(&p);
    wb_varint(&p, (uint64_t)(int64_t)-1);
    wb_varint(&p, 0);
    wb_varint(&p, 300);
    wb_msg(&in, 8, &p);
    wb_f32(&exp, 7, 0x3f000000u);
    wb_f32(&exp, 7, 0xbf800000u);
    wb_vint(&exp, 8, (uint64_t)(int64_t)-1);
    wb_vint(&exp, 8, 0);
    wb_vint(&exp, 8, 300);
    x = dec(&onnx_AttributeProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_AttributeProto *at = x.msg;
        CHECK_EQ(at->floats.count, 2);
        if (CHECK_EQ(at->ints.count, 3)) {
            CHECK_EQ(at->ints.items[0], -1);
            CHECK_EQ(at->ints.items[2], 300);
        }
    }
    dec_free(&x);
    CHECK(roundtrip("attribute ints/floats -> unpacked", &onnx_AttributeProto_desc, &in, &exp));

    /* Other REP int64 fields: IntIntListEntryProto.value, MapProto.keys. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_reset(&p);
    wb_varint(&p, 1);
    wb_varint(&p, 2);
    wb_msg(&in, 2, &p);
    wb_vint(&exp, 2, 1);
    wb_vint(&exp, 2, 2);
    CHECK(roundtrip("IntIntListEntryProto.value", &onnx_IntIntListEntryProto_desc, &in, &exp));
    CHECK(roundtrip("ShardingSpecProto.device", &onnx_ShardingSpecProto_desc, &exp, &exp));

    /* Built through the API. */
    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);
    onnx_TensorProto *t = OC_NEW(a, TensorProto);
    push_i64(a, &t->dims, 3);
    push_i64(a, &t->dims, 1);
    push_i32(a, &t->int32_data, 7);
    push_i32(a, &t->int32_data, 8);
    wb_reset(&exp);
    wb_reset(&p);
    wb_vint(&exp, 1, 3);
    wb_vint(&exp, 1, 1);
    wb_varint(&p, 7);
    wb_varint(&p, 8);
    wb_msg(&exp, 5, &p);
    wbuf out = {0};
    encode3(&onnx_TensorProto_desc, t, &out);
    CHECK(wb_same(&out, exp.p, exp.n));
    wb_free(&out);
    oc_arena_free(a);

    wb_free(&in);
    wb_free(&exp);
    wb_free(&p);
}

/* ---------------------------------------------------------------------------------- */
/* 6. Presence, last-wins, merging, oneofs, closed enums                                */

static void test_presence(void) {
    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);
    onnx_ModelProto *m = OC_NEW(a, ModelProto);
    SETS(ModelProto, m, producer_name, a, ""); /* set, empty */
    SETV(ModelProto, m, model_version, 0);     /* set, zero */
    m->ir_version = 7;                         /* a value without presence: not written */
    oc_str_set_cstr(a, &m->domain, "ignored"); /* likewise */
    wbuf out = {0}, exp = {0};
    wb_str(&exp, 2, "");
    wb_vint(&exp, 5, 0);
    encode3(&onnx_ModelProto_desc, m, &out);
    CHECK(wb_same(&out, exp.p, exp.n));
    if (out.n != exp.n) hexdump("got", out.p, out.n);

    decoded x = dec(&onnx_ModelProto_desc, exp.p, exp.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_ModelProto *d = x.msg;
        CHECK(OC_HAS(ModelProto, d, producer_name));
        CHECK_EQ(d->producer_name.size, 0);
        CHECK(OC_HAS(ModelProto, d, model_version));
        CHECK_EQ(d->model_version, 0);
        CHECK(!OC_HAS(ModelProto, d, ir_version));
        CHECK(!OC_HAS(ModelProto, d, domain));
        CHECK(!OC_HAS(ModelProto, d, doc_string));
        CHECK_PTR_EQ(d->graph, NULL);
    }
    dec_free(&x);

    /* An empty submessage is present; a zero float is written. */
    onnx_ModelProto *m2 = OC_NEW(a, ModelProto);
    m2->graph = OC_NEW(a, GraphProto);
    wb_reset(&out);
    wb_reset(&exp);
    wb_len(&exp, 7, "", 0);
    encode3(&onnx_ModelProto_desc, m2, &out);
    CHECK(wb_same(&out, exp.p, exp.n));
    x = dec(&onnx_ModelProto_desc, exp.p, exp.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) CHECK(((onnx_ModelProto *)x.msg)->graph != NULL);
    dec_free(&x);

    onnx_AttributeProto *at = OC_NEW(a, AttributeProto);
    SETV(AttributeProto, at, f, 0.0f);
    SETV(AttributeProto, at, type, 0);
    SETS(AttributeProto, at, s, a, "");
    wb_reset(&out);
    wb_reset(&exp);
    wb_f32(&exp, 2, 0);
    wb_len(&exp, 4, "", 0);
    wb_vint(&exp, 20, 0);
    encode3(&onnx_AttributeProto_desc, at, &out);
    CHECK(wb_same(&out, exp.p, exp.n));

    /* Presence set on a string never assigned (data NULL, size 0): an empty string. */
    onnx_NodeProto *nd = OC_NEW(a, NodeProto);
    OC_SET_HAS(NodeProto, nd, domain);
    wb_reset(&out);
    wb_reset(&exp);
    wb_len(&exp, 7, "", 0);
    encode3(&onnx_NodeProto_desc, nd, &out);
    CHECK(wb_same(&out, exp.p, exp.n));
    /* ... and the same for raw_data. */
    onnx_TensorProto *tt = OC_NEW(a, TensorProto);
    OC_SET_HAS(TensorProto, tt, raw_data);
    wb_reset(&out);
    wb_reset(&exp);
    wb_len(&exp, 9, "", 0);
    encode3(&onnx_TensorProto_desc, tt, &out);
    CHECK(wb_same(&out, exp.p, exp.n));

    /* A message with nothing set encodes to nothing. */
    wb_reset(&out);
    encode3(&onnx_ModelProto_desc, OC_NEW(a, ModelProto), &out);
    CHECK_EQ(out.n, 0);
    x = dec(&onnx_ModelProto_desc, "", 0, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) CHECK_EQ(((onnx_ModelProto *)x.msg)->hdr.has, 0);
    dec_free(&x);

    wb_free(&out);
    wb_free(&exp);
    oc_arena_free(a);
}

static void test_merging(void) {
    wbuf in = {0}, exp = {0};
    /* Optional scalar twice: last wins. */
    wb_vint(&in, 1, 1);
    wb_vint(&in, 1, 2);
    wb_str(&in, 2, "a");
    wb_str(&in, 2, "bb");
    wb_vint(&exp, 1, 2);
    wb_str(&exp, 2, "bb");
    decoded x = dec(&onnx_ModelProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        CHECK_EQ(((onnx_ModelProto *)x.msg)->ir_version, 2);
        CHECK_STR_EQ(((onnx_ModelProto *)x.msg)->producer_name, "bb");
    }
    dec_free(&x);
    CHECK(roundtrip("last wins", &onnx_ModelProto_desc, &in, &exp));

    /* raw_data twice: last wins, the first span is released (LeakSanitizer). */
    wb_reset(&in);
    wb_reset(&exp);
    wb_len(&in, 9, "\x01\x02", 2);
    wb_len(&in, 9, "\x03", 1);
    wb_len(&exp, 9, "\x03", 1);
    CHECK(roundtrip("raw_data last wins", &onnx_TensorProto_desc, &in, &exp));

    /* Optional message twice: merged (scalars last-wins, repeated appended, unknown
     * concatenated). */
    wbuf g1 = {0}, g2 = {0}, n1 = {0}, n2 = {0}, gexp = {0};
    wb_str(&n1, 4, "X");
    wb_str(&n2, 4, "Y");
    wb_str(&g1, 2, "a");
    wb_msg(&g1, 1, &n1);
    wb_vint(&g1, 99, 1);
    wb_str(&g2, 10, "d");
    wb_msg(&g2, 1, &n2);
    wb_str(&g2, 2, "b");
    wb_vint(&g2, 98, 2);
    wb_reset(&in);
    wb_reset(&exp);
    wb_msg(&in, 7, &g1);
    wb_vint(&in, 1, 4);
    wb_msg(&in, 7, &g2);
    wb_msg(&gexp, 1, &n1);
    wb_msg(&gexp, 1, &n2);
    wb_str(&gexp, 2, "b");
    wb_str(&gexp, 10, "d");
    wb_vint(&gexp, 99, 1);
    wb_vint(&gexp, 98, 2);
    wb_vint(&exp, 1, 4);
    wb_msg(&exp, 7, &gexp);
    x = dec(&onnx_ModelProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_GraphProto *g = ((onnx_ModelProto *)x.msg)->graph;
        REQUIRE(g != NULL);
        CHECK_STR_EQ(g->name, "b");
        CHECK_STR_EQ(g->doc_string, "d");
        if (CHECK_EQ(g->node.count, 2)) {
            CHECK_STR_EQ(g->node.items[0]->op_type, "X");
            CHECK_STR_EQ(g->node.items[1]->op_type, "Y");
        }
    }
    dec_free(&x);
    CHECK(roundtrip("message merge", &onnx_ModelProto_desc, &in, &exp));

    /* Nested merge two levels down: TensorProto.segment begin, then end. */
    wbuf s1 = {0}, s2 = {0}, sexp = {0};
    wb_vint(&s1, 1, 10);
    wb_vint(&s2, 2, 20);
    wb_vint(&sexp, 1, 10);
    wb_vint(&sexp, 2, 20);
    wb_reset(&in);
    wb_reset(&exp);
    wb_msg(&in, 3, &s1);
    wb_msg(&in, 3, &s2);
    wb_msg(&exp, 3, &sexp);
    CHECK(roundtrip("segment merge", &onnx_TensorProto_desc, &in, &exp));

    /* oc_decode merges into a message that already holds data. */
    wbuf p1 = {0}, p2 = {0}, o1 = {0}, o2 = {0};
    wb_str(&o1, 1, "");
    wb_vint(&o1, 2, 17);
    wb_vint(&o2, 2, 3);
    wb_vint(&p1, 1, 8);
    wb_msg(&p1, 8, &o1);
    wb_msg(&p2, 8, &o2);
    wb_str(&p2, 2, "later");
    oc_arena *a = oc_arena_new();
    onnx_ModelProto *m = OC_NEW(a, ModelProto);
    oc_error err;
    oc_error_clear(&err);
    CHECK_OK(oc_decode(&onnx_ModelProto_desc, m, p1.p, p1.n, a, NULL, NULL, &err), &err);
    CHECK_OK(oc_decode(&onnx_ModelProto_desc, m, p2.p, p2.n, a, NULL, NULL, &err), &err);
    CHECK_EQ(m->ir_version, 8);
    CHECK_STR_EQ(m->producer_name, "later");
    if (CHECK_EQ(m->opset_import.count, 2)) {
        CHECK_EQ(m->opset_import.items[0]->version, 17);
        CHECK_EQ(m->opset_import.items[1]->version, 3);
    }
    oc_arena_free(a);

    wbuf *all[] = {&in, &exp, &g1, &g2, &n1, &n2, &gexp, &s1, &s2, &sexp, &p1, &p2, &o1, &o2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) wb_free(all[i]);
}

/* Appends TypeProto.tensor_type { elem_type 1, shape { dim } }: the dim's dim_value 5, then
 * dim_param "N" (both: the later wins), or dim_param "N" alone. */
static void wb_tensor_type(wbuf *b, int both) {
    wbuf dim = {0}, shape = {0}, tt = {0};
    if (both) wb_vint(&dim, 1, 5);
    wb_str(&dim, 2, "N");
    wb_msg(&shape, 1, &dim);
    wb_vint(&tt, 1, 1);
    wb_msg(&tt, 2, &shape);
    wb_msg(b, 1, &tt);
    wb_free(&dim);
    wb_free(&shape);
    wb_free(&tt);
}

static void test_oneof(void) {
    wbuf in = {0}, exp = {0}, tt = {0}, sub = {0};
    /* TypeProto: tensor_type then sequence_type -> only sequence_type. */
    wb_vint(&tt, 1, 1);
    wb_msg(&in, 1, &tt);
    wb_len(&in, 4, "", 0);
    wb_len(&exp, 4, "", 0);
    decoded x = dec(&onnx_TypeProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_TypeProto *tp = x.msg;
        CHECK_PTR_EQ(tp->tensor_type, NULL);
        CHECK(tp->sequence_type != NULL);
        CHECK(!OC_HAS(TypeProto, tp, tensor_type));
    }
    dec_free(&x);
    CHECK(roundtrip("oneof tensor then sequence", &onnx_TypeProto_desc, &in, &exp));

    /* sequence_type then tensor_type -> only tensor_type; denotation is not in the oneof. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_str(&in, 6, "den");
    wb_len(&in, 4, "", 0);
    wb_msg(&in, 1, &tt);
    wb_msg(&exp, 1, &tt);
    wb_str(&exp, 6, "den");
    x = dec(&onnx_TypeProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_TypeProto *tp = x.msg;
        CHECK(tp->tensor_type != NULL);
        CHECK_PTR_EQ(tp->sequence_type, NULL);
        CHECK_STR_EQ(tp->denotation, "den");
    }
    dec_free(&x);
    CHECK(roundtrip("oneof sequence then tensor", &onnx_TypeProto_desc, &in, &exp));

    /* The same oneof message twice merges. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_len(&sub, 2, "", 0); /* tensor_type { shape {} } */
    wb_msg(&in, 1, &tt);
    wb_msg(&in, 1, &sub);
    wb_reset(&sub);
    wb_vint(&sub, 1, 1);
    wb_len(&sub, 2, "", 0);
    wb_msg(&exp, 1, &sub);
    CHECK(roundtrip("oneof same member merges", &onnx_TypeProto_desc, &in, &exp));

    /* Several members in a row: map, opaque, sparse, optional -> the last. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_len(&in, 5, "", 0);
    wb_len(&in, 7, "", 0);
    wb_len(&in, 8, "", 0);
    wb_len(&in, 9, "", 0);
    wb_len(&exp, 9, "", 0);
    CHECK(roundtrip("oneof last of many", &onnx_TypeProto_desc, &in, &exp));

    /* Dimension: dim_value then dim_param -> dim_param, and the other way round. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_str(&in, 3, "d");
    wb_vint(&in, 1, 5);
    wb_str(&in, 2, "N");
    wb_str(&exp, 2, "N");
    wb_str(&exp, 3, "d");
    x = dec(&onnx_TensorShapeProto_Dimension_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_TensorShapeProto_Dimension *d = x.msg;
        CHECK(!OC_HAS(TensorShapeProto_Dimension, d, dim_value));
        CHECK(OC_HAS(TensorShapeProto_Dimension, d, dim_param));
        CHECK(OC_HAS(TensorShapeProto_Dimension, d, denotation));
        CHECK_STR_EQ(d->dim_param, "N");
    }
    dec_free(&x);
    CHECK(roundtrip("dim_value then dim_param", &onnx_TensorShapeProto_Dimension_desc, &in, &exp));
    wb_reset(&in);
    wb_reset(&exp);
    wb_str(&in, 2, "N");
    wb_vint(&in, 1, 5);
    wb_vint(&exp, 1, 5);
    x = dec(&onnx_TensorShapeProto_Dimension_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_TensorShapeProto_Dimension *d = x.msg;
        CHECK(OC_HAS(TensorShapeProto_Dimension, d, dim_value));
        CHECK(!OC_HAS(TensorShapeProto_Dimension, d, dim_param));
        CHECK_EQ(d->dim_value, 5);
    }
    dec_free(&x);
    CHECK(roundtrip("dim_param then dim_value", &onnx_TensorShapeProto_Dimension_desc, &in, &exp));
    /* dim_value 0 is present. */
    wb_reset(&in);
    wb_vint(&in, 1, 0);
    CHECK(roundtrip("dim_value 0", &onnx_TensorShapeProto_Dimension_desc, &in, &in));

    /* The same inside messages the decoder creates (ValueInfoProto.type, a shape's dims),
     * and in a TypeProto seen again, which merges into the first: the later member wins. */
    wbuf tp = {0};
    wb_reset(&in);
    wb_reset(&exp);
    wb_tensor_type(&tp, 1); /* tensor_type { elem_type 1, shape { dim { 5 then "N" } } } */
    wb_len(&tp, 4, "", 0);  /* sequence_type {} */
    wb_tensor_type(&tp, 1); /* tensor_type again */
    wb_msg(&in, 2, &tp);    /* ValueInfoProto.type */
    wb_reset(&tp);
    wb_len(&tp, 4, "", 0);
    wb_msg(&in, 2, &tp); /* type seen again: sequence_type replaces tensor_type */
    wb_msg(&exp, 2, &tp);
    x = dec(&onnx_ValueInfoProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_ValueInfoProto *vi = x.msg;
        CHECK(vi->type != NULL);
        if (vi->type) {
            CHECK_PTR_EQ(vi->type->tensor_type, NULL);
            CHECK(vi->type->sequence_type != NULL);
            CHECK(!OC_HAS(TypeProto, vi->type, tensor_type));
        }
    }
    dec_free(&x);
    CHECK(roundtrip("oneof in a type seen again", &onnx_ValueInfoProto_desc, &in, &exp));
    /* One type: sequence_type then tensor_type, whose dim keeps dim_param only. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_reset(&tp);
    wb_len(&tp, 4, "", 0);
    wb_tensor_type(&tp, 1);
    wb_msg(&in, 2, &tp);
    wb_reset(&tp);
    wb_tensor_type(&tp, 0);
    wb_msg(&exp, 2, &tp);
    CHECK(roundtrip("oneofs in nested messages", &onnx_ValueInfoProto_desc, &in, &exp));
    wb_free(&tp);

    /* SimpleShardedDimProto has the same oneof; num_shards stays. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_vint(&in, 3, 4);
    wb_str(&in, 2, "p");
    wb_vint(&in, 1, 8);
    wb_vint(&exp, 1, 8);
    wb_vint(&exp, 3, 4);
    CHECK(roundtrip("SimpleShardedDimProto oneof", &onnx_SimpleShardedDimProto_desc, &in, &exp));

    wb_free(&in);
    wb_free(&exp);
    wb_free(&tt);
    wb_free(&sub);
}

static void test_closed_enums(void) {
    wbuf in = {0}, exp = {0};
    /* AttributeProto.type = 99 -> unknown, written after the known fields. */
    wb_vint(&in, 20, 99);
    wb_str(&in, 1, "x");
    wb_str(&exp, 1, "x");
    wb_vint(&exp, 20, 99);
    decoded x = dec(&onnx_AttributeProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_AttributeProto *at = x.msg;
        CHECK(!OC_HAS(AttributeProto, at, type));
        CHECK_STR_EQ(at->name, "x");
        const uint8_t u[] = {0xa0, 0x01, 99};
        CHECK_EQ(at->hdr.unknown.size, 3);
        CHECK_MEM_EQ(at->hdr.unknown.data, u, 3);
    }
    dec_free(&x);
    CHECK(roundtrip("enum 99", &onnx_AttributeProto_desc, &in, &exp));

    /* The bounds: 0 and 14 are known, 15 and -1 are not; a known value after an unknown
     * one is set, the unknown one stays in the unknown fields. */
    wb_reset(&in);
    wb_vint(&in, 20, 14);
    CHECK(roundtrip("enum 14", &onnx_AttributeProto_desc, &in, &in));
    wb_reset(&in);
    wb_vint(&in, 20, 0);
    CHECK(roundtrip("enum 0", &onnx_AttributeProto_desc, &in, &in));
    wb_reset(&in);
    wb_vint(&in, 20, 15);
    x = dec(&onnx_AttributeProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) CHECK(!OC_HAS(AttributeProto, (onnx_AttributeProto *)x.msg, type));
    dec_free(&x);
    wb_reset(&in);
    wb_reset(&exp);
    wb_vint(&in, 20, (uint64_t)(int64_t)-1);
    wb_vint(&in, 20, 4);
    wb_vint(&exp, 20, 4);
    wb_vint(&exp, 20, (uint64_t)(int64_t)-1);
    x = dec(&onnx_AttributeProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        CHECK(OC_HAS(AttributeProto, (onnx_AttributeProto *)x.msg, type));
        CHECK_EQ(((onnx_AttributeProto *)x.msg)->type, 4);
    }
    dec_free(&x);
    CHECK(roundtrip("enum -1 then 4", &onnx_AttributeProto_desc, &in, &exp));

    /* An out-of-range value is re-encoded canonically into the unknown fields, as
     * protobuf does (it parses the value, then writes tag and varint anew). */
    wb_reset(&in);
    wb_reset(&exp);
    const uint8_t nc99[] = {0xa0, 0x01, 0xe3, 0x80, 0x00}; /* 99 in 3 bytes */
    wb_raw(&in, nc99, sizeof nc99);
    wb_vint(&exp, 20, 99);
    CHECK(roundtrip("non-canonical enum 99", &onnx_AttributeProto_desc, &in, &exp));

    /* TensorProto.data_location: 0..1. */
    wb_reset(&in);
    wb_reset(&exp);
    wb_vint(&in, 14, 2);
    wb_str(&in, 8, "t");
    wb_vint(&in, 14, 1);
    wb_str(&exp, 8, "t");
    wb_vint(&exp, 14, 1);
    wb_vint(&exp, 14, 2);
    CHECK(roundtrip("data_location", &onnx_TensorProto_desc, &in, &exp));

    /* An enum is an int32 on the wire: 2^32 + 1 reads as 1 (protobuf casts to int32
     * before the range check). */
    wb_reset(&in);
    wb_reset(&exp);
    wb_vint(&in, 14, ((uint64_t)1 << 32) + 1);
    wb_vint(&exp, 14, 1);
    CHECK(roundtrip("enum from 33 bits", &onnx_TensorProto_desc, &in, &exp));
    wb_free(&in);
    wb_free(&exp);
}

/* ---------------------------------------------------------------------------------- */
/* 7. Float bits                                                                        */

static void test_float_bits(void) {
    const uint32_t fb[] = {0x7fc12345u, 0xffa00001u, 0x7f800001u, 0x80000000u,
                           0x00000001u, 0xff800000u, 0x7fffffffu};
    const uint64_t db[] = {0x7ff0000000000001ull, 0xfff8dead00000000ull, 0x8000000000000000ull,
                           0x7ff8000000000abcull, 0x0000000000000001ull};
    enum { NF = sizeof fb / sizeof fb[0], ND = sizeof db / sizeof db[0] };

    for (int i = 0; i < NF; i++) {
        wbuf in = {0};
        wb_f32(&in, 2, fb[i]);
        decoded x = dec(&onnx_AttributeProto_desc, in.p, in.n, NULL, NULL);
        CHECK_STATUS(x.st, OC_OK, &x.err);
        if (x.st == OC_OK) CHECK_EQ(fbits(&((onnx_AttributeProto *)x.msg)->f), fb[i]);
        dec_free(&x);
        CHECK(roundtrip("AttributeProto.f bits", &onnx_AttributeProto_desc, &in, &in));
        wb_free(&in);
    }
    /* Packed float_data and double_data; unpacked AttributeProto.floats. */
    wbuf in = {0}, p = {0};
    for (int i = 0; i < NF; i++) wb_le32(&p, fb[i]);
    wb_msg(&in, 4, &p);
    wb_reset(&p);
    for (int i = 0; i < ND; i++) wb_le64(&p, db[i]);
    wb_msg(&in, 10, &p);
    decoded x = dec(&onnx_TensorProto_desc, in.p, in.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_TensorProto *t = x.msg;
        if (CHECK_EQ(t->float_data.count, NF))
            for (int i = 0; i < NF; i++) CHECK_EQ(fbits(&t->float_data.items[i]), fb[i]);
        if (CHECK_EQ(t->double_data.count, ND))
            for (int i = 0; i < ND; i++) CHECK_EQ(dbits(&t->double_data.items[i]), db[i]);
    }
    dec_free(&x);
    CHECK(roundtrip("packed float bits", &onnx_TensorProto_desc, &in, &in));
    wb_reset(&in);
    for (int i = 0; i < NF; i++) wb_f32(&in, 7, fb[i]);
    CHECK(roundtrip("attribute floats bits", &onnx_AttributeProto_desc, &in, &in));

    /* Set through the API with memcpy: encoded bit-exactly. */
    oc_arena *a = oc_arena_new();
    onnx_AttributeProto *at = OC_NEW(a, AttributeProto);
    memcpy(&at->f, &fb[1], 4);
    OC_SET_HAS(AttributeProto, at, f);
    wbuf out = {0}, exp = {0};
    wb_f32(&exp, 2, fb[1]);
    encode3(&onnx_AttributeProto_desc, at, &out);
    CHECK(wb_same(&out, exp.p, exp.n));
    oc_arena_free(a);
    wb_free(&out);
    wb_free(&exp);
    wb_free(&in);
    wb_free(&p);
}

/* ---------------------------------------------------------------------------------- */
/* 8. Nesting depth                                                                     */

/* A TypeProto chain with exactly `depth` message levels (root = 1): TypeProto,
 * TypeProto.Sequence, TypeProto, ... */
static void nested_typeproto(wbuf *out, int depth) {
    wbuf cur = {0}, next = {0};
    for (int level = depth; level >= 2; level--) {
        /* cur is the encoding of the message at `level`; wrap it in its parent. */
        int parent_is_typeproto = ((level - 1) % 2) == 1;
        wb_reset(&next);
        wb_tag(&next, parent_is_typeproto ? 4u : 1u, WT_LEN);
        wb_varint(&next, cur.n);
        wb_cat(&next, &cur);
        wbuf tmp = cur;
        cur = next;
        next = tmp;
    }
    wb_reset(out);
    wb_cat(out, &cur);
    wb_free(&cur);
    wb_free(&next);
}

static oc_status count_tensors(void *ctx, onnx_TensorProto *t) {
    (void)ctx;
    (void)t;
    return OC_OK;
}

static oc_status decode_depth(int depth, uint32_t max_depth, oc_error *err_out) {
    wbuf b = {0};
    nested_typeproto(&b, depth);
    oc_parse_options o = OC_PARSE_OPTIONS_INIT;
    o.max_depth = max_depth;
    decoded x = dec(&onnx_TypeProto_desc, b.p, b.n, &o, NULL);
    if (x.st == OC_OK) {
        /* Check the chain really is that deep and re-encodes identically. */
        int levels = 0;
        onnx_TypeProto *tp = x.msg;
        while (tp) {
            levels++;
            if (!tp->sequence_type) break;
            levels++;
            tp = tp->sequence_type->elem_type;
        }
        CHECK_EQ(levels, depth);
        wbuf out = {0};
        encode3(&onnx_TypeProto_desc, x.msg, &out);
        CHECK(wb_same(&out, b.p, b.n));
        wb_free(&out);
        /* The copier and the tensor walk cope with the same depth. */
        oc_arena *a2 = oc_arena_new();
        void *copy = NULL;
        CHECK_OK(oc_msg_copy(&onnx_TypeProto_desc, x.msg, a2, &copy, NULL), NULL);
        CHECK_OK(oc_msg_visit_tensors(&onnx_TypeProto_desc, x.msg, count_tensors, NULL), NULL);
        oc_arena_free(a2);
    }
    if (x.st != OC_OK) CHECK(x.err.offset == OC_NO_OFFSET || x.err.offset <= b.n);
    if (err_out) *err_out = x.err;
    oc_status st = x.st;
    dec_free(&x);
    wb_free(&b);
    return st;
}

/* Runs fn in a child process; true when it exits normally with 0 (no failed check). */
static int isolated(void (*fn)(void), const char *what) {
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        int before = check_failures_;
        fn();
        fflush(stdout);
        fflush(stderr);
        _exit(check_failures_ == before ? 0 : 1);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid) return 0;
    if (WIFSIGNALED(status))
        fprintf(stderr, "  %s: the child died of signal %d (stack overflow?)\n", what,
                WTERMSIG(status));
    else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        fprintf(stderr, "  %s: failed (exit %d)\n", what, WEXITSTATUS(status));
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void deep_above_hard_limit(void) {
    oc_error err;
    oc_status st = decode_depth(10000, 20000, &err);
    CHECK(st == OC_OK || st == OC_ERR_DEPTH);
}

/* The hard limit (OC_MAX_DEPTH_HARD) itself works on a default 8 MiB stack. */
static void deep_at_hard_limit(void) {
    oc_error err;
    CHECK_STATUS(decode_depth((int)OC_MAX_DEPTH_HARD, OC_MAX_DEPTH_HARD, &err), OC_OK, &err);
    CHECK_STATUS(decode_depth((int)OC_MAX_DEPTH_HARD + 1, OC_MAX_DEPTH_HARD + 5, &err),
                 OC_ERR_DEPTH, &err);
}

static void test_depth(void) {
    oc_error err;
    CHECK_STATUS(decode_depth(1, 0, &err), OC_OK, &err);
    CHECK_STATUS(decode_depth(2, 0, &err), OC_OK, &err);
    CHECK_STATUS(decode_depth(50, 0, &err), OC_OK, &err);
    CHECK_STATUS(decode_depth(100, 0, &err), OC_OK, &err);
    CHECK_STATUS(decode_depth(101, 0, &err), OC_ERR_DEPTH, &err);
    CHECK_STATUS(decode_depth(150, 0, &err), OC_ERR_DEPTH, &err);
    CHECK_STATUS(decode_depth(150, 200, &err), OC_OK, &err);
    CHECK_STATUS(decode_depth(200, 200, &err), OC_OK, &err);
    CHECK_STATUS(decode_depth(201, 200, &err), OC_ERR_DEPTH, &err);
    CHECK_STATUS(decode_depth(10, 10, &err), OC_OK, &err);
    CHECK_STATUS(decode_depth(11, 10, &err), OC_ERR_DEPTH, &err);
    CHECK_STATUS(decode_depth(2, 1, &err), OC_ERR_DEPTH, &err);
    CHECK_STATUS(decode_depth(10000, 0, &err), OC_ERR_DEPTH, &err);
    /* The deep ones run in a child process, so that a stack overflow is reported as a
     * failure instead of ending the whole test. */
    CHECK(isolated(deep_above_hard_limit, "10,000 levels with max_depth 20,000"));
    CHECK(isolated(deep_at_hard_limit, "OC_MAX_DEPTH_HARD levels (decode, encode, copy, visit)"));
    /* The limit counts levels in a whole model too: ModelProto(1) > GraphProto(2) >
     * ValueInfoProto(3) > TypeProto(4) ... */
    wbuf tp = {0}, vi = {0}, g = {0}, m = {0};
    nested_typeproto(&tp, 97); /* levels 4..100 */
    wb_msg(&vi, 2, &tp);
    wb_msg(&g, 11, &vi);
    wb_msg(&m, 7, &g);
    decoded x = dec(&onnx_ModelProto_desc, m.p, m.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    dec_free(&x);
    nested_typeproto(&tp, 98); /* levels 4..101 */
    wb_reset(&vi);
    wb_reset(&g);
    wb_reset(&m);
    wb_msg(&vi, 2, &tp);
    wb_msg(&g, 11, &vi);
    wb_msg(&m, 7, &g);
    x = dec(&onnx_ModelProto_desc, m.p, m.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_ERR_DEPTH, &x.err);
    dec_free(&x);
    wb_free(&tp);
    wb_free(&vi);
    wb_free(&g);
    wb_free(&m);
}

/* ---------------------------------------------------------------------------------- */
/* 9. Every prefix, and corrupted bytes                                                  */

/* Top-level field boundaries of a well-formed encoding (my own little parser). */
static int field_boundaries(const uint8_t *p, size_t n, uint8_t *is_boundary) {
    size_t i = 0;
    memset(is_boundary, 0, n + 1);
    is_boundary[0] = 1;
    while (i < n) {
        uint64_t tag = 0;
        int shift = 0;
        while (p[i] & 0x80) tag |= (uint64_t)(p[i++] & 0x7f) << shift, shift += 7;
        tag |= (uint64_t)p[i++] << shift;
        unsigned wt = (unsigned)(tag & 7);
        if (wt == WT_VARINT) {
            while (p[i] & 0x80) i++;
            i++;
        } else if (wt == WT_LEN) {
            uint64_t len = 0;
            shift = 0;
            while (p[i] & 0x80) len |= (uint64_t)(p[i++] & 0x7f) << shift, shift += 7;
            len |= (uint64_t)p[i++] << shift;
            i += (size_t)len;
        } else if (wt == WT_I32) {
            i += 4;
        } else if (wt == WT_I64) {
            i += 8;
        } else {
            return 0;
        }
        if (i > n) return 0;
        is_boundary[i] = 1;
    }
    return 1;
}

static void test_every_prefix(void) {
    wbuf full = {0};
    REQUIRE(rich_bytes(&full));
    size_t n = full.n;
    CHECK(n > 500);
    uint8_t *boundary = malloc(n + 1);
    REQUIRE(boundary != NULL);
    REQUIRE(field_boundaries(full.p, n, boundary));

    int bad = 0;
    for (int pass = 0; pass < 2; pass++) {
        oc_parse_options o = OC_PARSE_OPTIONS_INIT;
        if (pass == 1) {
            o.no_copy = 1;
            o.buffer.raw_data_threshold = 0;
        }
        for (size_t len = 0; len <= n; len++) {
            /* An exactly-sized heap copy, so that ASan sees any read past the end. */
            uint8_t *buf = malloc(len ? len : 1);
            if (!buf) break;
            memcpy(buf, full.p, len);
            decoded x = dec(&onnx_ModelProto_desc, buf, len, &o, NULL);
            if (boundary[len]) {
                if (x.st != OC_OK) {
                    bad++;
                    CHECK_STATUS(x.st, OC_OK, &x.err);
                    fprintf(stderr, "  prefix %zu of %zu (a field boundary)\n", len, n);
                }
            } else {
                int ok = (x.st == OC_ERR_TRUNCATED || x.st == OC_ERR_MALFORMED) &&
                         x.err.offset <= len && x.err.message[0] != '\0' && x.err.code == x.st;
                if (!ok) {
                    bad++;
                    if (bad < 10) {
                        CHECK(!"prefix must fail with TRUNCATED/MALFORMED and an offset <= length");
                        fprintf(stderr, "  prefix %zu of %zu: %s offset %lld \"%s\"\n", len, n,
                                oc_status_name(x.st),
                                x.err.offset == OC_NO_OFFSET ? -1LL : (long long)x.err.offset,
                                x.err.message);
                    }
                }
            }
            dec_free(&x);
            free(buf);
        }
    }
    CHECK_EQ(bad, 0);

    /* The full encoding decodes and re-encodes identically. */
    decoded x = dec(&onnx_ModelProto_desc, full.p, n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        wbuf out = {0};
        encode3(&onnx_ModelProto_desc, x.msg, &out);
        CHECK(wb_same(&out, full.p, n));
        wb_free(&out);
    }
    dec_free(&x);
    free(boundary);
    wb_free(&full);
}

static uint32_t rng_state = 12345;
static uint32_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

/* Flipped bytes: never a crash; a successful decode re-encodes stably. */
static void test_corruption(void) {
    wbuf full = {0};
    REQUIRE(rich_bytes(&full));
    size_t n = full.n;
    int bad = 0, oks = 0, errs = 0;
    for (size_t pos = 0; pos < n; pos++) {
        for (int k = 0; k < 4; k++) {
            uint8_t *buf = malloc(n);
            if (!buf) return;
            memcpy(buf, full.p, n);
            const uint8_t flips[4] = {0x01, 0x80, 0xff, (uint8_t)(rng() | 1)};
            buf[pos] ^= flips[k];
            oc_parse_options o = OC_PARSE_OPTIONS_INIT;
            o.no_copy = k & 1;
            o.buffer.raw_data_threshold = 0;
            decoded x = dec(&onnx_ModelProto_desc, buf, n, &o, NULL);
            if (x.st == OC_OK) {
                oks++;
                /* encode -> decode -> encode is a fixed point */
                void *e1 = NULL, *e2 = NULL;
                uint64_t n1 = 0, n2 = 0, sz = 0;
                oc_error err;
                oc_error_clear(&err);
                int ok =
                    oc_encode_to_memory(&onnx_ModelProto_desc, x.msg, &e1, &n1, &err) == OC_OK &&
                    oc_encoded_size(&onnx_ModelProto_desc, x.msg, &sz, &err) == OC_OK && sz == n1;
                if (ok) {
                    decoded y = dec(&onnx_ModelProto_desc, e1, (size_t)n1, NULL, NULL);
                    ok = y.st == OC_OK &&
                         oc_encode_to_memory(&onnx_ModelProto_desc, y.msg, &e2, &n2, &err) ==
                             OC_OK &&
                         n1 == n2 && (n1 == 0 || memcmp(e1, e2, (size_t)n1) == 0);
                    dec_free(&y);
                }
                if (!ok) {
                    bad++;
                    if (bad < 5)
                        fprintf(stderr, "  corruption at %zu ^0x%02x: re-encoding not stable\n",
                                pos, flips[k]);
                }
                free(e1);
                free(e2);
            } else {
                errs++;
                int ok =
                    (x.st == OC_ERR_TRUNCATED || x.st == OC_ERR_MALFORMED || x.st == OC_ERR_DEPTH ||
                     x.st == OC_ERR_LIMIT) &&
                    x.err.message[0] != '\0' &&
                    (x.err.offset <= n || (x.st != OC_ERR_TRUNCATED && x.st != OC_ERR_MALFORMED));
                if (!ok) {
                    bad++;
                    if (bad < 5)
                        fprintf(stderr, "  corruption at %zu ^0x%02x: %s offset %lld\n", pos,
                                flips[k], oc_status_name(x.st), (long long)x.err.offset);
                }
            }
            dec_free(&x);
            free(buf);
        }
    }
    CHECK_EQ(bad, 0);
    CHECK(oks > 0);
    CHECK(errs > 0);
    wb_free(&full);
}

/* ---------------------------------------------------------------------------------- */
/* 10. no_copy, skip_raw_data                                                           */

static int inside(const void *p, const void *base, size_t n) {
    return (const uint8_t *)p >= (const uint8_t *)base &&
           (const uint8_t *)p < (const uint8_t *)base + n;
}

typedef struct probe {
    int released;
} probe;
static void probe_release(void *ctx) { ((probe *)ctx)->released++; }

static void test_no_copy(void) {
    wbuf full = {0};
    REQUIRE(rich_bytes(&full));
    uint8_t expect_w[W_RAW];
    for (unsigned i = 0; i < W_RAW; i++) expect_w[i] = (uint8_t)(i * 31u + 7);

    struct {
        int no_copy;
        uint64_t threshold;
        oc_bytes_mode w_mode, small_mode; /* W: 256 bytes; g1.init: 32 bytes */
    } cases[] = {
        {1, 0, OC_BYTES_BORROWED, OC_BYTES_BORROWED},
        {1, 32, OC_BYTES_BORROWED, OC_BYTES_BORROWED},
        {1, 33, OC_BYTES_BORROWED, OC_BYTES_OWNED},
        {1, W_RAW, OC_BYTES_BORROWED, OC_BYTES_OWNED},
        {1, W_RAW + 1, OC_BYTES_OWNED, OC_BYTES_OWNED},
        {1, 1024, OC_BYTES_OWNED, OC_BYTES_OWNED}, /* the default */
        {0, 0, OC_BYTES_OWNED, OC_BYTES_OWNED},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        oc_parse_options o = OC_PARSE_OPTIONS_INIT;
        o.no_copy = cases[c].no_copy;
        o.buffer.raw_data_threshold = cases[c].threshold;
        decoded x = dec(&onnx_ModelProto_desc, full.p, full.n, &o, NULL);
        CHECK_STATUS(x.st, OC_OK, &x.err);
        if (x.st != OC_OK) {
            dec_free(&x);
            continue;
        }
        onnx_ModelProto *m = x.msg;
        onnx_TensorProto *w = find_init(m->graph, "W");
        onnx_TensorProto *g1 =
            m->graph && m->graph->node.count && m->graph->node.items[0]->attribute.count > 2
                ? find_init(m->graph->node.items[0]->attribute.items[2]->g, "g1.init")
                : NULL;
        if (!CHECK(w != NULL) || !CHECK(g1 != NULL)) {
            dec_free(&x);
            continue;
        }
        CHECK(OC_HAS(TensorProto, w, raw_data));
        CHECK_EQ(w->raw_data.size, W_RAW);
        CHECK_MEM_EQ(w->raw_data.data, expect_w, W_RAW);
        if (!CHECK_EQ(w->raw_data.mode, cases[c].w_mode))
            fprintf(stderr, "  case %zu (no_copy %d threshold %llu)\n", c, cases[c].no_copy,
                    (unsigned long long)cases[c].threshold);
        CHECK_EQ(g1->raw_data.mode, cases[c].small_mode);
        CHECK_EQ(g1->raw_data.size, 32);
        if (cases[c].w_mode == OC_BYTES_BORROWED) {
            CHECK(inside(w->raw_data.data, full.p, full.n));
            CHECK_PTR_EQ(w->raw_data.owner, NULL);
            CHECK(oc_bytes_is_borrowed(&w->raw_data));
        } else {
            CHECK(!inside(w->raw_data.data, full.p, full.n));
            CHECK(((uintptr_t)w->raw_data.data % 64) == 0);
        }
        if (cases[c].small_mode == OC_BYTES_BORROWED)
            CHECK(inside(g1->raw_data.data, full.p, full.n));
        else
            CHECK(!inside(g1->raw_data.data, full.p, full.n));
        /* Strings point into the input exactly when no_copy is on (W-18). */
        CHECK_EQ(inside(m->producer_name.data, full.p, full.n), cases[c].no_copy != 0);
        /* The re-encoding is the same whatever the modes. */
        wbuf out = {0};
        encode3(&onnx_ModelProto_desc, m, &out);
        CHECK(wb_same(&out, full.p, full.n));
        wb_free(&out);
        dec_free(&x);
    }

    /* With an owner: the spans share it, one reference each, plus one held by the arena for
     * the strings that point into the input (W-18); all dropped with the arena. */
    probe p = {0};
    oc_owner *own = oc_owner_new(probe_release, &p);
    REQUIRE(own != NULL);
    oc_parse_options o = OC_PARSE_OPTIONS_INIT;
    o.no_copy = 1;
    o.buffer.raw_data_threshold = 32; /* W, g1.init: shared; g1.n.t (16), sv (8), ti.init: copied */
    decoded x = dec(&onnx_ModelProto_desc, full.p, full.n, &o, own);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_TensorProto *w = find_init(((onnx_ModelProto *)x.msg)->graph, "W");
        REQUIRE(w != NULL);
        CHECK_EQ(w->raw_data.mode, OC_BYTES_SHARED);
        CHECK_PTR_EQ(w->raw_data.owner, own);
        CHECK(inside(w->raw_data.data, full.p, full.n));
        CHECK(inside(((onnx_ModelProto *)x.msg)->producer_name.data, full.p, full.n));
        CHECK_EQ(oc_owner_refcount(own), 4); /* ours, W, g1.init, the arena */
    }
    dec_free(&x);
    CHECK_EQ(oc_owner_refcount(own), 1);
    CHECK_EQ(p.released, 0);
    oc_owner_unref(own);
    CHECK_EQ(p.released, 1);

    /* skip_raw_data drops the payloads and keeps the rest. */
    o = (oc_parse_options)OC_PARSE_OPTIONS_INIT;
    o.skip_raw_data = 1;
    x = dec(&onnx_ModelProto_desc, full.p, full.n, &o, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        onnx_TensorProto *w = find_init(((onnx_ModelProto *)x.msg)->graph, "W");
        REQUIRE(w != NULL);
        CHECK_EQ(w->raw_data.size, 0);
        CHECK_EQ(w->dims.count, 2);
        CHECK_EQ(w->data_type, 1);
        onnx_TensorProto *b = find_init(((onnx_ModelProto *)x.msg)->graph, "B");
        CHECK(b && b->int64_data.count == 4);
        uint64_t sz = 0;
        CHECK_OK(oc_encoded_size(&onnx_ModelProto_desc, x.msg, &sz, NULL), NULL);
        CHECK(sz < full.n - W_RAW);
    }
    dec_free(&x);
    wb_free(&full);
}

/* Decoding with several threads (large payloads are copied by a pool) gives the same
 * message as a serial decode, also when the input is cut short. */
static void test_threaded_decode(void) {
    oc_arena *a = oc_arena_new();
    onnx_ModelProto *m = build_rich_model(a);
    REQUIRE(m != NULL);
    /* Large raw_data and packed arrays, of odd sizes. */
    for (unsigned k = 0; k < 6; k++) {
        char name[16];
        snprintf(name, sizeof name, "big%u", k);
        onnx_TensorProto *t = named(a, OC_ADD(a, TensorProto, m->graph->initializer), name);
        set_raw(t, (200u << 10) * (k + 1) + k, 20 + k);
        for (unsigned i = 0; i < 30000 + k; i++) {
            push_f32(a, &t->float_data, (float)i * 0.5f);
            push_f64(a, &t->double_data, (double)i);
        }
        for (unsigned i = 0; i < 20000; i++) push_i64(a, &t->int64_data, (int64_t)i - 10000);
    }
    wbuf full = {0};
    REQUIRE(encode3(&onnx_ModelProto_desc, m, &full));
    oc_arena_free(a);
    /* The encoding in a file, mapped (its owner keeps a descriptor of the file). */
    char path[] = "/tmp/test_codec_threads.XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, full.p, full.n) == (ssize_t)full.n);
    close(fd);
    oc_mapped mapped;
    oc_error merr;
    CHECK_OK(oc_map_file(path, &mapped, &merr), &merr);
    unlink(path); /* the mapping and its descriptor keep the file */

    const int threads[] = {0, 1, 2, 4, -1};
    for (int ti = 0; ti < 5; ti++) {
        for (int nc = 0; nc <= 1; nc++) {
            oc_parse_options o = OC_PARSE_OPTIONS_INIT;
            o.num_threads = threads[ti];
            o.no_copy = nc;
            decoded x = dec(&onnx_ModelProto_desc, full.p, full.n, &o, NULL);
            CHECK_STATUS(x.st, OC_OK, &x.err);
            if (x.st == OC_OK) {
                wbuf out = {0};
                encode3(&onnx_ModelProto_desc, x.msg, &out);
                if (!CHECK(wb_same(&out, full.p, full.n)))
                    fprintf(stderr, "  threads %d no_copy %d\n", threads[ti], nc);
                wb_free(&out);
                onnx_TensorProto *t = find_init(((onnx_ModelProto *)x.msg)->graph, "big5");
                if (CHECK(t != NULL)) {
                    CHECK_EQ(t->raw_data.mode, nc ? OC_BYTES_BORROWED : OC_BYTES_OWNED);
                    if (!nc) CHECK(((uintptr_t)t->raw_data.data % 64) == 0);
                    CHECK_EQ(t->float_data.count, 30005);
                    CHECK(t->float_data.count == 30005 && t->float_data.items[30004] == 15002.0f);
                }
            }
            dec_free(&x);
        }
        /* The same bytes from a mapped file, copying: payloads are read from the file the
         * mapping's owner keeps open (pread), serially or shared among the threads. */
        if (mapped.owner) {
            oc_parse_options o = OC_PARSE_OPTIONS_INIT;
            o.num_threads = threads[ti];
            decoded x = dec(&onnx_ModelProto_desc, mapped.data, mapped.size, &o, mapped.owner);
            CHECK_STATUS(x.st, OC_OK, &x.err);
            if (x.st == OC_OK) {
                wbuf out = {0};
                encode3(&onnx_ModelProto_desc, x.msg, &out);
                if (!CHECK(wb_same(&out, full.p, full.n)))
                    fprintf(stderr, "  threads %d, from a mapped file\n", threads[ti]);
                wb_free(&out);
                onnx_TensorProto *t = find_init(((onnx_ModelProto *)x.msg)->graph, "big5");
                if (CHECK(t != NULL)) CHECK_EQ(t->raw_data.mode, OC_BYTES_OWNED);
            }
            dec_free(&x);
        }
        /* Cut inside the payloads: an error, and no read past the end (ASan). */
        for (int cut = 1; cut <= 7; cut++) {
            size_t len = full.n / 8 * (size_t)cut + (size_t)cut;
            uint8_t *buf = malloc(len);
            REQUIRE(buf != NULL);
            memcpy(buf, full.p, len);
            oc_parse_options o = OC_PARSE_OPTIONS_INIT;
            o.num_threads = threads[ti];
            decoded x = dec(&onnx_ModelProto_desc, buf, len, &o, NULL);
            CHECK(x.st == OC_ERR_TRUNCATED || x.st == OC_ERR_MALFORMED);
            dec_free(&x);
            free(buf);
        }
    }
    oc_owner_unref(mapped.owner);
    wb_free(&full);
}

/* ---------------------------------------------------------------------------------- */
/* 11. Sizes and sinks                                                                   */

static void test_sinks(void) {
    oc_arena *a = oc_arena_new();
    REQUIRE(a != NULL);
    onnx_ModelProto *m = build_rich_model(a);
    REQUIRE(m != NULL);
    /* A large tensor: passed to the sink directly. */
    onnx_TensorProto *big = named(a, OC_ADD(a, TensorProto, m->graph->initializer), "big");
    set_raw(big, 1u << 20, 9);

    uint64_t size = 0;
    oc_error err;
    oc_error_clear(&err);
    CHECK_OK(oc_encoded_size(&onnx_ModelProto_desc, m, &size, &err), &err);
    sink s;
    memset(&s, 0, sizeof s);
    s.watch = big->raw_data.data;
    s.watch_size = big->raw_data.size;
    CHECK_OK(oc_encode(&onnx_ModelProto_desc, m, sink_write, &s, &err), &err);
    CHECK_EQ(s.out.n, size);
    CHECK(s.saw_watch);
    void *mem = NULL;
    uint64_t msize = 0;
    CHECK_OK(oc_encode_to_memory(&onnx_ModelProto_desc, m, &mem, &msize, &err), &err);
    CHECK_EQ(msize, size);
    CHECK(mem && s.out.n == msize && memcmp(mem, s.out.p, s.out.n) == 0);
    free(mem);
    int total_calls = s.calls;
    wb_free(&s.out);

    /* A failing sink: its error is returned and kept (the first error wins); no writes
     * after the failure. */
    for (int fail_at = 1; fail_at <= total_calls && fail_at <= 3; fail_at++) {
        memset(&s, 0, sizeof s);
        s.fail_at = fail_at;
        oc_error_clear(&err);
        CHECK_STATUS(oc_encode(&onnx_ModelProto_desc, m, sink_write, &s, &err), OC_ERR_IO, &err);
        CHECK_EQ(err.code, OC_ERR_IO);
        CHECK_EQ(err.sys_errno, 28);
        CHECK(strcmp(err.message, "sink says no") == 0);
        CHECK_EQ(s.calls_after_fail, 0);
        wb_free(&s.out);
    }
    if (total_calls > 1) {
        memset(&s, 0, sizeof s);
        s.fail_at = total_calls;
        CHECK_STATUS(oc_encode(&onnx_ModelProto_desc, m, sink_write, &s, NULL), OC_ERR_IO, NULL);
        wb_free(&s.out);
    }

    /* encoded_size agrees on a variety of messages. */
    const oc_msgdesc *descs[] = {&onnx_GraphProto_desc, &onnx_NodeProto_desc};
    const void *msgs[] = {m->graph, m->graph->node.items[0]};
    for (int i = 0; i < 2; i++) {
        wbuf out = {0};
        CHECK(encode3(descs[i], msgs[i], &out));
        wb_free(&out);
    }
    oc_arena_free(a);
}

/* ---------------------------------------------------------------------------------- */
/* 12. Deep copies                                                                       */

static void test_copy(void) {
    static const uint8_t borrowed_bytes[48] = {1, 2, 3};
    uint8_t *shared_bytes = malloc(512);
    REQUIRE(shared_bytes != NULL);
    memset(shared_bytes, 0x5c, 512);
    probe p = {0};
    oc_owner *own = oc_owner_new(probe_release, &p);
    REQUIRE(own != NULL);

    oc_arena *a = oc_arena_new();
    onnx_ModelProto *m = build_rich_model(a);
    REQUIRE(m != NULL);
    onnx_TensorProto *w = find_init(m->graph, "W");
    onnx_TensorProto *d = find_init(m->graph, "D");
    onnx_TensorProto *b = find_init(m->graph, "B");
    REQUIRE(w && d && b);
    oc_bytes_set_shared(&w->raw_data, shared_bytes, 512, own);
    oc_bytes_set_borrowed(&d->raw_data, borrowed_bytes, sizeof borrowed_bytes);
    OC_SET_HAS(TensorProto, d, raw_data);
    CHECK_OK(oc_bytes_set_copy(&b->raw_data, "owned!", 6, NULL), NULL);
    OC_SET_HAS(TensorProto, b, raw_data);
    /* Unknown fields on a nested message. */
    wbuf u = {0};
    wb_vint(&u, 99, 5);
    wb_str(&u, 98, "zz");
    CHECK_OK(oc_str_set(a, &m->graph->hdr.unknown, u.p, u.n), NULL);
    CHECK_EQ(oc_owner_refcount(own), 2);

    wbuf e1 = {0};
    REQUIRE(encode3(&onnx_ModelProto_desc, m, &e1));

    oc_arena *a2 = oc_arena_new();
    void *out = NULL;
    oc_error err;
    oc_error_clear(&err);
    CHECK_OK(oc_msg_copy(&onnx_ModelProto_desc, m, a2, &out, &err), &err);
    onnx_ModelProto *c = out;
    REQUIRE(c != NULL);
    CHECK(c != m);
    CHECK(c->graph != NULL && c->graph != m->graph);
    CHECK(c->producer_name.data != m->producer_name.data);
    CHECK_STR_EQ(c->producer_name, "onnxz-test");
    CHECK(c->graph->name.data != m->graph->name.data);
    CHECK(c->graph->node.items != m->graph->node.items);
    CHECK(c->graph->node.items[0] != m->graph->node.items[0]);
    CHECK(c->graph->hdr.unknown.data != m->graph->hdr.unknown.data);
    CHECK_EQ(c->graph->hdr.unknown.size, u.n);
    CHECK_MEM_EQ(c->graph->hdr.unknown.data, u.p, u.n);
    CHECK_EQ(c->hdr.has, m->hdr.has);

    onnx_TensorProto *cw = find_init(c->graph, "W");
    onnx_TensorProto *cd = find_init(c->graph, "D");
    onnx_TensorProto *cb = find_init(c->graph, "B");
    REQUIRE(cw && cd && cb);
    CHECK(cw != w);
    CHECK_EQ(cw->raw_data.mode, OC_BYTES_SHARED);
    CHECK_PTR_EQ(cw->raw_data.data, shared_bytes);
    CHECK_PTR_EQ(cw->raw_data.owner, own);
    CHECK_EQ(oc_owner_refcount(own), 3);
    CHECK_EQ(cd->raw_data.mode, OC_BYTES_BORROWED);
    CHECK_PTR_EQ(cd->raw_data.data, borrowed_bytes);
    CHECK_EQ(cb->raw_data.mode, OC_BYTES_OWNED);
    CHECK(cb->raw_data.data != b->raw_data.data);
    CHECK_EQ(cb->raw_data.size, 6);
    CHECK_MEM_EQ(cb->raw_data.data, "owned!", 6);
    CHECK(cb->int64_data.items != b->int64_data.items);
    /* A nested owned raw_data deep in a subgraph is duplicated too. */
    onnx_AttributeProto *at = c->graph->node.items[0]->attribute.items[2];
    onnx_AttributeProto *at0 = m->graph->node.items[0]->attribute.items[2];
    REQUIRE(at->g && at->g->node.count == 1);
    onnx_TensorProto *ct = at->g->node.items[0]->attribute.items[0]->t;
    onnx_TensorProto *ot = at0->g->node.items[0]->attribute.items[0]->t;
    REQUIRE(ct && ot);
    CHECK(ct->raw_data.data != ot->raw_data.data);
    CHECK_MEM_EQ(ct->raw_data.data, ot->raw_data.data, 16);

    /* The source goes; the copy stands alone and encodes the same. */
    oc_arena_free(a);
    CHECK_EQ(oc_owner_refcount(own), 2);
    wbuf e2 = {0};
    encode3(&onnx_ModelProto_desc, c, &e2);
    CHECK(wb_same(&e1, e2.p, e2.n));
    /* Copy of the copy, of a submessage type. */
    void *gc = NULL;
    oc_arena *a3 = oc_arena_new();
    CHECK_OK(oc_msg_copy(&onnx_GraphProto_desc, c->graph, a3, &gc, &err), &err);
    CHECK(gc != NULL && gc != c->graph);
    CHECK_EQ(oc_owner_refcount(own), 3);
    oc_arena_free(a3);
    oc_arena_free(a2);
    CHECK_EQ(oc_owner_refcount(own), 1);
    CHECK_EQ(p.released, 0);
    oc_owner_unref(own);
    CHECK_EQ(p.released, 1);
    free(shared_bytes);
    wb_free(&u);
    wb_free(&e1);
    wb_free(&e2);
}

/* ---------------------------------------------------------------------------------- */
/* 13. The tensor visitor                                                                */

typedef struct visit_log {
    char names[64][24];
    int n;
    int stop_after;
} visit_log;

static oc_status visit_fn(void *ctx, onnx_TensorProto *t) {
    visit_log *v = ctx;
    if (v->n < 64) {
        size_t len = t->name.size < 23 ? (size_t)t->name.size : 23;
        memcpy(v->names[v->n], t->name.data ? t->name.data : "", len);
        v->names[v->n][len] = '\0';
    }
    v->n++;
    if (v->stop_after && v->n == v->stop_after) return OC_ERR_LIMIT;
    return OC_OK;
}

static void check_visit_order(visit_log *v, const char *const *want, int nwant) {
    CHECK_EQ(v->n, nwant);
    /* The same set ... */
    int missing = 0;
    for (int i = 0; i < nwant; i++) {
        int found = 0;
        for (int k = 0; k < v->n && k < 64; k++) found |= strcmp(v->names[k], want[i]) == 0;
        if (!found) {
            missing++;
            fprintf(stderr, "  tensor %s was not visited\n", want[i]);
        }
    }
    CHECK_EQ(missing, 0);
    /* ... in encoding order. */
    int order_ok = v->n == nwant;
    for (int i = 0; order_ok && i < nwant; i++) order_ok = strcmp(v->names[i], want[i]) == 0;
    if (!CHECK(order_ok)) {
        fprintf(stderr, "  visit order:");
        for (int k = 0; k < v->n && k < 64; k++) fprintf(stderr, " %s", v->names[k]);
        fputc('\n', stderr);
    }
}

static void test_visit(void) {
    oc_arena *a = oc_arena_new();
    onnx_ModelProto *m = build_rich_model(a);
    REQUIRE(m != NULL);
    visit_log v;
    memset(&v, 0, sizeof v);
    CHECK_OK(oc_msg_visit_tensors(&onnx_ModelProto_desc, m, visit_fn, &v), NULL);
    check_visit_order(&v, RICH_TENSORS, RICH_NTENSORS);

    /* The same after a decode of the encoding. */
    wbuf e = {0};
    encode3(&onnx_ModelProto_desc, m, &e);
    decoded x = dec(&onnx_ModelProto_desc, e.p, e.n, NULL, NULL);
    CHECK_STATUS(x.st, OC_OK, &x.err);
    if (x.st == OC_OK) {
        memset(&v, 0, sizeof v);
        CHECK_OK(oc_msg_visit_tensors(&onnx_ModelProto_desc, x.msg, visit_fn, &v), NULL);
        check_visit_order(&v, RICH_TENSORS, RICH_NTENSORS);
    }
    dec_free(&x);
    wb_free(&e);

    /* Stopping early returns the callback's status. */
    memset(&v, 0, sizeof v);
    v.stop_after = 3;
    CHECK_STATUS(oc_msg_visit_tensors(&onnx_ModelProto_desc, m, visit_fn, &v), OC_ERR_LIMIT, NULL);
    CHECK_EQ(v.n, 3);

    /* From a graph: the main graph's tensors only (the first 19 of the list). */
    memset(&v, 0, sizeof v);
    CHECK_OK(oc_msg_visit_tensors(&onnx_GraphProto_desc, m->graph, visit_fn, &v), NULL);
    check_visit_order(&v, RICH_TENSORS, 19);

    /* Data messages: SequenceProto, MapProto, OptionalProto at every level. */
    onnx_SequenceProto *s = OC_NEW(a, SequenceProto);
    named(a, OC_ADD(a, TensorProto, s->tensor_values), "t1");
    named(a, OC_ADD(a, TensorProto, s->tensor_values), "t2");
    onnx_SparseTensorProto *sp = OC_ADD(a, SparseTensorProto, s->sparse_tensor_values);
    sp->values = named(a, OC_NEW(a, TensorProto), "v");
    sp->indices = named(a, OC_NEW(a, TensorProto), "i");
    onnx_SequenceProto *s2 = OC_ADD(a, SequenceProto, s->sequence_values);
    named(a, OC_ADD(a, TensorProto, s2->tensor_values), "t3");
    onnx_MapProto *mp = OC_ADD(a, MapProto, s->map_values);
    mp->values = OC_NEW(a, SequenceProto);
    named(a, OC_ADD(a, TensorProto, mp->values->tensor_values), "t4");
    onnx_OptionalProto *op = OC_ADD(a, OptionalProto, s->optional_values);
    op->tensor_value = named(a, OC_NEW(a, TensorProto), "t5");
    op->sparse_tensor_value = OC_NEW(a, SparseTensorProto);
    op->sparse_tensor_value->values = named(a, OC_NEW(a, TensorProto), "t6");
    op->sequence_value = OC_NEW(a, SequenceProto);
    named(a, OC_ADD(a, TensorProto, op->sequence_value->tensor_values), "t7");
    op->map_value = OC_NEW(a, MapProto);
    op->map_value->values = OC_NEW(a, SequenceProto);
    named(a, OC_ADD(a, TensorProto, op->map_value->values->tensor_values), "t8");
    op->optional_value = OC_NEW(a, OptionalProto);
    op->optional_value->tensor_value = named(a, OC_NEW(a, TensorProto), "t9");
    static const char *const seq_want[] = {"t1", "t2", "v",  "i",  "t3", "t4",
                                           "t5", "t6", "t7", "t8", "t9"};
    memset(&v, 0, sizeof v);
    CHECK_OK(oc_msg_visit_tensors(&onnx_SequenceProto_desc, s, visit_fn, &v), NULL);
    check_visit_order(&v, seq_want, 11);

    /* A message without tensors. */
    memset(&v, 0, sizeof v);
    CHECK_OK(oc_msg_visit_tensors(&onnx_TypeProto_desc, OC_NEW(a, TypeProto), visit_fn, &v), NULL);
    CHECK_EQ(v.n, 0);

    /* The visitor may modify the tensors. */
    memset(&v, 0, sizeof v);
    CHECK_OK(oc_msg_visit_tensors(&onnx_ModelProto_desc, m, visit_fn, &v), NULL);
    CHECK_EQ(v.n, RICH_NTENSORS);
    oc_arena_free(a);
}

int main(void) {
    RUN(test_scalar_fields);
    RUN(test_varints);
    RUN(test_malformed);
    RUN(test_error_offsets);
    RUN(test_unknown_fields);
    RUN(test_repeated);
    RUN(test_presence);
    RUN(test_merging);
    RUN(test_oneof);
    RUN(test_closed_enums);
    RUN(test_float_bits);
    RUN(test_depth);
    RUN(test_every_prefix);
    RUN(test_corruption);
    RUN(test_no_copy);
    RUN(test_threaded_decode);
    RUN(test_sinks);
    RUN(test_copy);
    RUN(test_visit);
    return check_report("test_codec");
}
