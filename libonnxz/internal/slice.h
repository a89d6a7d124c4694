/*
 * internal/slice.h - what oz_reader (reader.c) needs of a slice (slice.c).
 */
#ifndef ONNXZ_INTERNAL_SLICE_H
#define ONNXZ_INTERNAL_SLICE_H

#include "onnxz/slice.h"

/* The tensor s is a slice of. */
const onnx_TensorProto *oz__slice_tensor(const oz_slice *s);
/* The bytes of that whole tensor, as its dims make them (W-40). */
uint64_t oz__slice_whole(const oz_slice *s);

#endif
