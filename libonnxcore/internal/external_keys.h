/*
 * internal/external_keys.h - the external_data keys' helpers that loading and writing
 * share (external_keys.c).
 */
#ifndef ONNXCORE_INTERNAL_EXTERNAL_KEYS_H
#define ONNXCORE_INTERNAL_EXTERNAL_KEYS_H

#include "onnxcore/external.h"
#include "onnxcore/status.h"

/* Strings from a model reach messages only through oc_quote (status.h). */
static inline const char *oc__qname(const onnx_TensorProto *t, char buf[OC_QUOTE_SIZE]) {
    return oc_quote(t->name.data, t->name.size, buf, OC_QUOTE_SIZE);
}
static inline const char *oc__qstr(const oc_str *s, char buf[OC_QUOTE_SIZE]) {
    return oc_quote(s->data, s->size, buf, OC_QUOTE_SIZE);
}

/* Drops the external_data entries this library manages, keeping the others in order
 * (E-3). */
void oc__external_drop_known_keys(onnx_TensorProto *t);

#endif
