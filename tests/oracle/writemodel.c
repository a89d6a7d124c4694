/*
 * writemodel - builds a model with libonnxcore's public API and saves it, for the reverse
 * oracle check: check_written.py then loads it with python3-onnx (onnx.load, the checker,
 * shape inference, numpy_helper.to_array) and checks every field and tensor value.
 *
 * Usage: writemodel OUT.onnx
 *
 * The values follow simple formulas that check_written.py recomputes; keep them in step.
 * The model targets IR 8 / opset 17, what Debian's python3-onnx 1.12 can check.
 */
#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxcore/onnxcore.h"

/* A failed build step is a test failure: say which one and stop. */
#define CHECK(cond)                                                               \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "writemodel: line %d: %s failed\n", __LINE__, #cond); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

static void set_str(oc_arena *a, oc_str *dst, const char *s) {
    CHECK(oc_str_set_cstr(a, dst, s) == OC_OK);
}

static void push_str(oc_arena *a, void *array, const char *s) {
    oc_str *item = oc_array_push(a, array, sizeof *item);
    CHECK(item != NULL);
    set_str(a, item, s);
}

static void push_bytes(oc_arena *a, void *array, const void *data, uint64_t size) {
    oc_str *item = oc_array_push(a, array, sizeof *item);
    CHECK(item != NULL);
    CHECK(oc_str_set(a, item, data, size) == OC_OK);
}

static void push_i64(oc_arena *a, void *array, int64_t v) {
    int64_t *item = oc_array_push(a, array, sizeof *item);
    CHECK(item != NULL);
    *item = v;
}

static void push_i32(oc_arena *a, void *array, int32_t v) {
    int32_t *item = oc_array_push(a, array, sizeof *item);
    CHECK(item != NULL);
    *item = v;
}

static void push_f32(oc_arena *a, void *array, float v) {
    float *item = oc_array_push(a, array, sizeof *item);
    CHECK(item != NULL);
    *item = v;
}

/* raw_data is little-endian whatever the host. */
static void put_f32_le(uint8_t *out, float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 4; i++) out[i] = (uint8_t)(bits >> (8 * i));
}

static onnx_TensorProto *new_tensor(oc_arena *a, onnx_TensorProto *t, const char *name,
                                    int32_t data_type, const int64_t *dims, int rank) {
    CHECK(t != NULL);
    set_str(a, &t->name, name);
    OC_SET_HAS(TensorProto, t, name);
    t->data_type = data_type;
    OC_SET_HAS(TensorProto, t, data_type);
    for (int i = 0; i < rank; i++) push_i64(a, &t->dims, dims[i]);
    return t;
}

/* A float tensor whose raw_data holds f(i) = (i % 1000) * 0.25 - 1 for i < count. */
static void set_float_raw(onnx_TensorProto *t, uint64_t count) {
    uint8_t *raw = NULL;
    CHECK(oc_bytes_set_alloc(&t->raw_data, count * 4, &raw, NULL) == OC_OK);
    for (uint64_t i = 0; i < count; i++) put_f32_le(raw + 4 * i, (float)(i % 1000) * 0.25f - 1.0f);
    OC_SET_HAS(TensorProto, t, raw_data);
}

/* Sets vi to a float tensor type; dims >= 0 are values, -1 is the parameter "N". */
static void set_float_type(oc_arena *a, onnx_ValueInfoProto *vi, const char *name,
                           const int64_t *dims, int rank) {
    CHECK(vi != NULL);
    set_str(a, &vi->name, name);
    OC_SET_HAS(ValueInfoProto, vi, name);
    vi->type = OC_NEW(a, TypeProto);
    CHECK(vi->type != NULL);
    onnx_TypeProto_Tensor *tt = OC_NEW(a, TypeProto_Tensor);
    CHECK(tt != NULL);
    vi->type->tensor_type = tt;
    OC_SET_HAS(TypeProto, vi->type, tensor_type);
    tt->elem_type = 1; /* FLOAT */
    OC_SET_HAS(TypeProto_Tensor, tt, elem_type);
    tt->shape = OC_NEW(a, TensorShapeProto);
    CHECK(tt->shape != NULL);
    for (int i = 0; i < rank; i++) {
        onnx_TensorShapeProto_Dimension *d = OC_ADD(a, TensorShapeProto_Dimension, tt->shape->dim);
        CHECK(d != NULL);
        if (dims[i] < 0) {
            set_str(a, &d->dim_param, "N");
            OC_SET_HAS(TensorShapeProto_Dimension, d, dim_param);
        } else {
            d->dim_value = dims[i];
            OC_SET_HAS(TensorShapeProto_Dimension, d, dim_value);
        }
    }
}

static onnx_NodeProto *add_node(oc_arena *a, onnx_GraphProto *g, const char *op, const char *name,
                                const char *in0, const char *in1, const char *out) {
    onnx_NodeProto *n = OC_ADD(a, NodeProto, g->node);
    CHECK(n != NULL);
    set_str(a, &n->op_type, op);
    OC_SET_HAS(NodeProto, n, op_type);
    set_str(a, &n->name, name);
    OC_SET_HAS(NodeProto, n, name);
    if (in0) push_str(a, &n->input, in0);
    if (in1) push_str(a, &n->input, in1);
    push_str(a, &n->output, out);
    return n;
}

static onnx_AttributeProto *add_attr(oc_arena *a, onnx_NodeProto *n, const char *name,
                                     int32_t type) {
    onnx_AttributeProto *at = OC_ADD(a, AttributeProto, n->attribute);
    CHECK(at != NULL);
    set_str(a, &at->name, name);
    OC_SET_HAS(AttributeProto, at, name);
    at->type = type;
    OC_SET_HAS(AttributeProto, at, type);
    return at;
}

static void build_initializers(oc_arena *a, onnx_GraphProto *g) {
    static const int64_t w_dims[] = {3, 2}, two[] = {2}, three[] = {3}, zero[] = {0},
                         big_dims[] = {256, 256};
    set_float_raw(new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "W", 1, w_dims, 2), 6);

    onnx_TensorProto *b = new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "B", 1, two, 1);
    push_f32(a, &b->float_data, 0.25f);
    push_f32(a, &b->float_data, -0.75f);

    onnx_TensorProto *i64 =
        new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "I64", 7, three, 1);
    push_i64(a, &i64->int64_data, INT64_MIN);
    push_i64(a, &i64->int64_data, -1);
    push_i64(a, &i64->int64_data, INT64_MAX);

    onnx_TensorProto *d = new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "D", 11, two, 1);
    double *dv = oc_array_push(a, &d->double_data, sizeof *dv);
    CHECK(dv != NULL);
    *dv = 1e300;
    dv = oc_array_push(a, &d->double_data, sizeof *dv);
    CHECK(dv != NULL);
    *dv = -DBL_MIN;

    onnx_TensorProto *u = new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "U64", 13, two, 1);
    uint64_t *uv = oc_array_push(a, &u->uint64_data, sizeof *uv);
    CHECK(uv != NULL);
    *uv = UINT64_MAX;
    uv = oc_array_push(a, &u->uint64_data, sizeof *uv);
    CHECK(uv != NULL);
    *uv = 1;

    onnx_TensorProto *s = new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "S", 8, three, 1);
    push_bytes(a, &s->string_data, "abc", 3);
    push_bytes(a, &s->string_data, "", 0);
    push_bytes(a, &s->string_data, "\0\xc3\xa9", 3); /* onnx decodes these as UTF-8 */

    onnx_TensorProto *i8 = new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "I8", 3, three, 1);
    push_i32(a, &i8->int32_data, -128);
    push_i32(a, &i8->int32_data, 0);
    push_i32(a, &i8->int32_data, 127);

    /* float16 1.0 and -2.0, as bit patterns in int32_data */
    onnx_TensorProto *h = new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "F16", 10, two, 1);
    push_i32(a, &h->int32_data, 0x3C00);
    push_i32(a, &h->int32_data, 0xC000);

    onnx_TensorProto *bl = new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "BOOL", 9, two, 1);
    push_i32(a, &bl->int32_data, 1);
    push_i32(a, &bl->int32_data, 0);

    /* An empty tensor whose raw_data is present but has no bytes. */
    onnx_TensorProto *e =
        new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "EMPTY", 1, zero, 1);
    OC_SET_HAS(TensorProto, e, raw_data);

    onnx_TensorProto *big =
        new_tensor(a, OC_ADD(a, TensorProto, g->initializer), "BIG", 1, big_dims, 2);
    set_float_raw(big, 256 * 256);
    set_str(a, &big->doc_string, "256 KiB of raw_data");
    OC_SET_HAS(TensorProto, big, doc_string);
}

/* The subgraph of the custom node's graph attribute: sy = Identity(sx). */
static onnx_GraphProto *identity_graph(oc_arena *a) {
    static const int64_t one[] = {1};
    onnx_GraphProto *g = OC_NEW(a, GraphProto);
    CHECK(g != NULL);
    set_str(a, &g->name, "body");
    OC_SET_HAS(GraphProto, g, name);
    set_float_type(a, OC_ADD(a, ValueInfoProto, g->input), "sx", one, 1);
    set_float_type(a, OC_ADD(a, ValueInfoProto, g->output), "sy", one, 1);
    add_node(a, g, "Identity", "id", "sx", NULL, "sy");
    return g;
}

static void build_graph(oc_arena *a, onnx_GraphProto *g) {
    static const int64_t x_dims[] = {-1, 3}, h_dims[] = {-1, 2}, y_dims[] = {2, -1}, one[] = {1};
    set_str(a, &g->name, "oracle_graph");
    OC_SET_HAS(GraphProto, g, name);
    set_str(a, &g->doc_string, "built by libonnxcore");
    OC_SET_HAS(GraphProto, g, doc_string);
    set_float_type(a, OC_ADD(a, ValueInfoProto, g->input), "X", x_dims, 2);
    set_float_type(a, OC_ADD(a, ValueInfoProto, g->output), "Y", y_dims, 2);
    set_float_type(a, OC_ADD(a, ValueInfoProto, g->value_info), "H", h_dims, 2);
    build_initializers(a, g);

    add_node(a, g, "MatMul", "mm", "X", "W", "H");
    add_node(a, g, "Add", "add", "H", "B", "A");
    onnx_AttributeProto *alpha =
        add_attr(a, add_node(a, g, "LeakyRelu", "lrelu", "A", NULL, "L"), "alpha", 1 /* FLOAT */);
    alpha->f = 0.125f;
    OC_SET_HAS(AttributeProto, alpha, f);
    onnx_AttributeProto *perm =
        add_attr(a, add_node(a, g, "Transpose", "tr", "L", NULL, "T"), "perm", 7 /* INTS */);
    push_i64(a, &perm->ints, 1);
    push_i64(a, &perm->ints, 0);
    onnx_AttributeProto *value =
        add_attr(a, add_node(a, g, "Constant", "c", NULL, NULL, "C"), "value", 4 /* TENSOR */);
    value->t = new_tensor(a, OC_NEW(a, TensorProto), "C", 1, one, 1);
    set_float_raw(value->t, 1);
    add_node(a, g, "Mul", "mul", "T", "C", "Y");

    /* A node of a custom domain carries the attribute types the standard ops above do not. */
    onnx_NodeProto *custom = add_node(a, g, "Custom", "custom", "X", NULL, "Q");
    set_str(a, &custom->domain, "ai.onnxz.test");
    OC_SET_HAS(NodeProto, custom, domain);
    set_str(a, &custom->doc_string, "custom node");
    OC_SET_HAS(NodeProto, custom, doc_string);
    onnx_AttributeProto *at = add_attr(a, custom, "i", 2 /* INT */);
    at->i = -1;
    OC_SET_HAS(AttributeProto, at, i);
    at = add_attr(a, custom, "s", 3 /* STRING */);
    CHECK(oc_str_set(a, &at->s, "bytes\0x", 7) == OC_OK);
    OC_SET_HAS(AttributeProto, at, s);
    at = add_attr(a, custom, "floats", 6 /* FLOATS */);
    push_f32(a, &at->floats, -0.0f);
    push_f32(a, &at->floats, 3.5f);
    at = add_attr(a, custom, "strings", 8 /* STRINGS */);
    push_bytes(a, &at->strings, "one", 3);
    push_bytes(a, &at->strings, "", 0);
    at = add_attr(a, custom, "g", 5 /* GRAPH */);
    at->g = identity_graph(a);
    at = add_attr(a, custom, "tensors", 9 /* TENSORS */);
    set_float_raw(new_tensor(a, OC_ADD(a, TensorProto, at->tensors), "t0", 1, one, 1), 1);
    new_tensor(a, OC_ADD(a, TensorProto, at->tensors), "t1", 7, one, 1);
    push_i64(a, &at->tensors.items[1]->int64_data, 42);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: writemodel OUT.onnx\n");
        return 2;
    }
    oc_model *model = oc_model_new();
    CHECK(model != NULL);
    oc_arena *a = oc_model_arena(model);
    onnx_ModelProto *m = oc_model_proto(model);
    m->ir_version = 8;
    OC_SET_HAS(ModelProto, m, ir_version);
    set_str(a, &m->producer_name, "onnxz-oracle");
    OC_SET_HAS(ModelProto, m, producer_name);
    set_str(a, &m->producer_version, ONNXCORE_VERSION_STRING);
    OC_SET_HAS(ModelProto, m, producer_version);
    set_str(a, &m->domain, "ai.onnxz.test");
    OC_SET_HAS(ModelProto, m, domain);
    m->model_version = -5;
    OC_SET_HAS(ModelProto, m, model_version);
    set_str(a, &m->doc_string, "reverse oracle model \xc3\xa9");
    OC_SET_HAS(ModelProto, m, doc_string);
    static const struct {
        const char *domain;
        int64_t version;
    } opsets[] = {{"", 17}, {"ai.onnxz.test", 1}};
    for (size_t i = 0; i < sizeof opsets / sizeof opsets[0]; i++) {
        onnx_OperatorSetIdProto *op = OC_ADD(a, OperatorSetIdProto, m->opset_import);
        CHECK(op != NULL);
        set_str(a, &op->domain, opsets[i].domain);
        OC_SET_HAS(OperatorSetIdProto, op, domain);
        op->version = opsets[i].version;
        OC_SET_HAS(OperatorSetIdProto, op, version);
    }
    onnx_StringStringEntryProto *kv = OC_ADD(a, StringStringEntryProto, m->metadata_props);
    CHECK(kv != NULL);
    set_str(a, &kv->key, "author");
    OC_SET_HAS(StringStringEntryProto, kv, key);
    set_str(a, &kv->value, "");
    OC_SET_HAS(StringStringEntryProto, kv, value);
    m->graph = OC_NEW(a, GraphProto);
    CHECK(m->graph != NULL);
    build_graph(a, m->graph);

    oc_error err;
    oc_error_clear(&err);
    oc_status st = oc_model_save_file(model, argv[1], NULL, &err);
    if (st != OC_OK) {
        fprintf(stderr, "writemodel: oc_model_save_file(%s): %s: %s\n", argv[1], oc_status_name(st),
                err.message);
        oc_model_free(model);
        return 1;
    }
    oc_model_free(model);
    printf("writemodel: wrote %s\n", argv[1]);
    return 0;
}
