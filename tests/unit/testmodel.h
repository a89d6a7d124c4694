/*
 * tests/unit/testmodel.h - the small models the tests build in memory.
 *
 * tm_model_new()                     a model of IR version 10 with an empty main graph
 *                                    (NULL when memory ran out)
 * tm_add_bytes(a, g, name, n, seed)  a UINT8 tensor [n] in g, byte i = tm_byte(i, seed)
 *                                    (NULL when memory ran out)
 * tm_add_node(a, g, op)              a node of type op in g
 * SETS(M, msg, field, a, s)          msg's string field set to s, marked present
 * SETV(M, msg, field, v)             msg's scalar field set to v, marked present
 * tm_encrypt_file(in, out, pass, f)  the file in encrypted as out in format f, with few
 *                                    KDF iterations (the KDF's strength is not tested)
 *
 * The byte pattern depends on the seed, so tensors of one model differ and a test can
 * check any byte it reads without keeping the source.
 */
#ifndef ONNXZ_TESTS_TESTMODEL_H
#define ONNXZ_TESTS_TESTMODEL_H

#include <stdint.h>
#include <string.h>

#include <onnxcore/onnxcore.h>

/* M names msg's type (ModelProto, TensorProto...); a is the model's arena. */
#define SETS(M, msg, field, a, s)                 \
    do {                                          \
        oc_str_set_cstr((a), &(msg)->field, (s)); \
        OC_SET_HAS(M, msg, field);                \
    } while (0)
#define SETV(M, msg, field, v)     \
    do {                           \
        (msg)->field = (v);        \
        OC_SET_HAS(M, msg, field); \
    } while (0)

static inline uint8_t tm_byte(uint64_t i, uint64_t seed) { return (uint8_t)(i * 7 + seed); }

static inline oc_model *tm_model_new(void) {
    oc_model *m = oc_model_new();
    if (!m) return NULL;
    onnx_ModelProto *mp = oc_model_proto(m);
    mp->ir_version = 10;
    OC_SET_HAS(ModelProto, mp, ir_version);
    mp->graph = OC_NEW(oc_model_arena(m), GraphProto);
    if (mp->graph) return m;
    oc_model_free(m);
    return NULL;
}

/* The tensor named by name_len bytes (a NUL among them is part of the name). */
static inline onnx_TensorProto *tm_add_bytes_n(oc_arena *a, onnx_GraphProto *g, const char *name,
                                               size_t name_len, uint64_t n, uint64_t seed) {
    onnx_TensorProto *t = OC_ADD(a, TensorProto, g->initializer);
    char *s = oc_arena_alloc(a, name_len + 1);
    uint8_t *p;
    if (!t || !s) return NULL;
    memcpy(s, name, name_len);
    s[name_len] = '\0';
    t->name = (oc_str){s, name_len};
    OC_SET_HAS(TensorProto, t, name);
    t->data_type = 2; /* UINT8 */
    OC_SET_HAS(TensorProto, t, data_type);
    int64_t *d = oc_array_push(a, &t->dims, sizeof(int64_t));
    if (!d || oc_bytes_set_alloc(&t->raw_data, n, &p, NULL) != OC_OK) return NULL;
    *d = (int64_t)n;
    for (uint64_t i = 0; i < n; i++) p[i] = tm_byte(i, seed);
    OC_SET_HAS(TensorProto, t, raw_data);
    return t;
}

static inline onnx_TensorProto *tm_add_bytes(oc_arena *a, onnx_GraphProto *g, const char *name,
                                             uint64_t n, uint64_t seed) {
    return tm_add_bytes_n(a, g, name, strlen(name), n, seed);
}

static inline onnx_NodeProto *tm_add_node(oc_arena *a, onnx_GraphProto *g, const char *op) {
    onnx_NodeProto *nd = OC_ADD(a, NodeProto, g->node);
    if (nd && op) {
        oc_str_set_cstr(a, &nd->op_type, op);
        OC_SET_HAS(NodeProto, nd, op_type);
    }
    return nd;
}

static inline oc_status tm_encrypt_file(const char *in, const char *out, const char *pass,
                                        oc_crypt_format format, oc_error *err) {
    oc_crypt_options co;
    oc_crypt_options_init(&co);
    co.format = format;
    if (format != OC_CRYPT_ONNXCRY1) co.iterations = 1000;
    return oc_crypt_encrypt_file(in, out, pass, strlen(pass), &co, err);
}

#endif
