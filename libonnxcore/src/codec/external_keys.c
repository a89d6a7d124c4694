/*
 * external_keys.c - the external_data entries of a tensor (spec/external-data.md E-1..E-3,
 * E-12): which keys this library manages, their values, and offset/length parsing.
 */
#include <stdint.h>
#include <string.h>

#include "onnxcore/external.h"
#include "internal/error.h"
#include "internal/external_keys.h"

static const char *const known_keys[] = {"location", "offset", "length", "checksum", "basepath"};

bool oc_external_key_is_known(const oc_str *key) {
    for (size_t i = 0; i < sizeof known_keys / sizeof known_keys[0]; i++)
        if (oc_str_eq(*key, known_keys[i])) return true;
    return false;
}

/* Drops the entries this library manages, keeping the others in order (E-3). */
void oc__external_drop_known_keys(onnx_TensorProto *t) {
    uint64_t kept = 0;
    for (uint64_t i = 0; i < t->external_data.count; i++)
        if (!oc_external_key_is_known(&t->external_data.items[i]->key))
            t->external_data.items[kept++] = t->external_data.items[i];
    t->external_data.count = kept;
}

bool oc_tensor_is_external(const onnx_TensorProto *t) {
    return OC_HAS(TensorProto, t, data_location) && t->data_location == 1;
}

const oc_str *oc_tensor_external_value(const onnx_TensorProto *t, const char *key) {
    const oc_str *v = NULL;
    for (uint64_t i = 0; i < t->external_data.count; i++) {
        const onnx_StringStringEntryProto *e = t->external_data.items[i];
        if (oc_str_eq(e->key, key)) v = &e->value;
    }
    return v;
}

/* A decimal offset or length: digits only, at most INT64_MAX (onnx parses them with int()). */
static int parse_u63(const oc_str *s, uint64_t *out) {
    if (!s->size || s->size > 19) return 0;
    uint64_t v = 0;
    for (uint64_t i = 0; i < s->size; i++) {
        char c = s->data[i];
        if (c < '0' || c > '9') return 0;
        v = v * 10 + (uint64_t)(c - '0');
    }
    if (v > (uint64_t)INT64_MAX) return 0;
    *out = v;
    return 1;
}

oc_status oc_tensor_external_range(const onnx_TensorProto *t, uint64_t *offset, bool *has_offset,
                                   uint64_t *length, bool *has_length, oc_error *err) {
    if (!t || !offset || !length)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_tensor_external_range: missing argument");
    const oc_str *o = oc_tensor_external_value(t, "offset");
    const oc_str *n = oc_tensor_external_value(t, "length");
    char name[OC_QUOTE_SIZE], text[OC_QUOTE_SIZE];
    *offset = 0;
    *length = 0;
    if (has_offset) *has_offset = o != NULL;
    if (has_length) *has_length = n != NULL;
    if (o && !parse_u63(o, offset))
        return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "E-12",
                             "tensor '%s': external data offset '%s' is not a non-negative integer",
                             oc__qname(t, name), oc__qstr(o, text));
    if (n && !parse_u63(n, length))
        return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "E-12",
                             "tensor '%s': external data length '%s' is not a non-negative integer",
                             oc__qname(t, name), oc__qstr(n, text));
    return OC_OK;
}
