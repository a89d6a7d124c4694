/*
 * internal/fetch.h - tensors whose bytes come from a fetch (fetch.c; oc_tensor_fetch,
 * onnxcore/external.h): the savers' one test of "fetched or raw_data".
 */
#ifndef ONNXCORE_INTERNAL_FETCH_H
#define ONNXCORE_INTERNAL_FETCH_H

#include "onnxcore/external.h"

/* Whether t's bytes come from fetch (given, and t an external reference). */
int oc__fetched(const oc_tensor_fetch *fetch, const onnx_TensorProto *t);

#endif
