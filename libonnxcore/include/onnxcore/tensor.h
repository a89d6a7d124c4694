/*
 * onnxcore/tensor.h - operations on the tensors of a message tree.
 */
#ifndef ONNXCORE_TENSOR_H
#define ONNXCORE_TENSOR_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Moves the raw_data of every tensor in msg (at any depth) holding at least
 * opts->raw_data_threshold bytes into one new buffer: each tensor's offset in it is rounded
 * up to opts->alignment (0 = packed; otherwise a power of two) and the buffer itself starts
 * on that boundary (and on 64 bytes at least). Each of those tensors then borrows from the
 * buffer with a shared owner token; smaller tensors are left as they were. The buffer lives
 * until the last tensor using it and the caller's reference are gone.
 *
 * buffer_out (may be NULL) receives a new reference to the buffer's owner token, or NULL
 * when no tensor qualified; base_out and size_out (may be NULL) its address and length.
 * Errors: OC_ERR_INVALID_ARG for an alignment that is not a power of two, OC_ERR_NOMEM.
 * On error nothing has changed. */
OC_API oc_status oc_msg_consolidate_tensors(const oc_msgdesc *desc, void *msg,
                                            const oc_tensor_buffer_options *opts,
                                            oc_owner **buffer_out, const uint8_t **base_out,
                                            uint64_t *size_out, oc_error *err);
#endif

/* The size of one element of data_type in bits (FLOAT 32, INT4 4, BOOL 8, COMPLEX128 128,
 * ...), or 0 for types without a fixed size (STRING, UNDEFINED) and values this library
 * does not know. Covers TensorProto.DataType of IR version 14 (1..26). */
OC_API unsigned oc_tensor_element_bits(int32_t data_type);

/* The name of a TensorProto.DataType as the schema spells it ("FLOAT", "BFLOAT16",
 * "INT4" ...), or "type ?" for a value this library does not know. */
OC_API const char *oc_tensor_type_name(int32_t data_type);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* The dtype of a numpy array over a tensor's raw bytes, as numpy's array interface spells
 * it: numpy's own where it has one ("<f4", "|b1", "<c8", ...); for a type numpy lacks, the
 * unsigned integer of its width holding the bit patterns (BFLOAT16 "<u2", the FLOAT8 types
 * "|u1"); for the packed types of fewer than 8 bits (oc_tensor_element_bits 4 or 2: UINT4,
 * INT4, FLOAT4E2M1, UINT2, INT2) "|u1", an array of their bytes rather than of their
 * elements, whose one dimension is the byte count. NULL for types without a fixed size
 * (STRING, UNDEFINED) and values this library does not know. Static strings. */
OC_API const char *oc_tensor_numpy_descr(int32_t data_type);
#endif

/* Checks one tensor's payload against its dims and data_type (spec onnx-wire.md W-40):
 * every dim must be 0 or more (a negative one: OC_ERR_MALFORMED), their product must fit
 * in 64 bits, as must the byte size it gives (elements x element bits / 8, rounded up for
 * sub-byte types; otherwise OC_ERR_MALFORMED), and the payload must be exactly that many
 * bytes (otherwise OC_ERR_INCONSISTENT). The payload is raw_data; for an EXTERNAL tensor,
 * the value of its `length` key (an unreadable one is E-12's OC_ERR_MALFORMED). Tensors
 * with nothing to compare are checked for their dims only: types without a fixed size
 * (oc_tensor_element_bits 0, e.g. STRING), data in typed fields (float_data, ...), a
 * `segment`, an EXTERNAL tensor without `length`. Messages name the tensor (oc_quote).
 *
 * Loading never applies this check (onnx.load accepts such tensors, and so do we); it is
 * for validators such as `onnxz verify`. The tensor is not changed. */
OC_API oc_status oc_tensor_check_size(const onnx_TensorProto *tensor, oc_error *err);

struct oc_tensor_fetch;
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* True when the tensor keeps its values in the typed fields (float_data, int32_data,
 * int64_data, double_data, uint64_data, string_data; onnx.proto), whether they hold any or
 * not: it is neither EXTERNAL nor has raw_data. oc_tensor_check_size checks its values'
 * count (W-42, spec/onnx-wire.md); oc_tensor_typed_bytes gives them as raw bytes. */
OC_API bool oc_tensor_is_typed(const onnx_TensorProto *tensor);
/* The values of a tensor in typed fields (oc_tensor_is_typed) as the bytes raw_data would
 * hold for them (onnx.proto), into *out (released first, unchanged on failure): each element
 * little-endian; FLOAT from float_data, DOUBLE from double_data, COMPLEX64 and COMPLEX128
 * from their pairs there (real part first); INT64 from int64_data; UINT32 and UINT64 from
 * uint64_data (the low 32 bits for UINT32); every other type from int32_data, one value
 * an element (INT32, and the low bits for INT16, UINT16, INT8, UINT8, BOOL as 0 or 1, the
 * bit patterns of FLOAT16, BFLOAT16 and the FLOAT8 types) or one byte of packed elements
 * a value (INT4, UINT4, FLOAT4E2M1 two, INT2, UINT2 four: its low 8 bits). A 0-d tensor is
 * one element. First the tensor is checked as oc_tensor_check_size checks it (W-40, W-42,
 * a `segment`: its errors), so the output is exactly the bytes W-40 makes of its dims.
 * OC_ERR_INVALID_ARG for a tensor not in typed fields; OC_ERR_UNSUPPORTED for one whose
 * values have no raw bytes: UNDEFINED, STRING (oc_tensor_strings); OC_ERR_NOMEM. The
 * tensor is not changed. */
OC_API oc_status oc_tensor_typed_bytes(const onnx_TensorProto *tensor, oc_bytes *out,
                                       oc_error *err);
/* The byte count oc_tensor_typed_bytes gives for tensor, with its checks and errors, in
 * *size (0 on failure), without converting a value: the bytes W-40 makes of its dims. */
OC_API oc_status oc_tensor_typed_size(const onnx_TensorProto *tensor, uint64_t *size,
                                      oc_error *err);
/* The values of a STRING tensor in typed fields (string_data; each any bytes, which
 * onnx.proto says are UTF-8): *items, borrowed from the tensor, and *count, the elements
 * its dims make (a 0-d tensor: one), once checked as oc_tensor_typed_bytes checks
 * (W-40, W-42). OC_ERR_INVALID_ARG for a tensor not in typed fields or not STRING; on
 * failure *items is NULL and *count 0. */
OC_API oc_status oc_tensor_strings(const onnx_TensorProto *tensor, const oc_str **items,
                                   uint64_t *count, oc_error *err);
/* As oc_tensor_check_size, with an EXTERNAL tensor's payload size asked of fetch
 * (external.h; NULL, or one without a size function: as oc_tensor_check_size): every
 * reference is resolved first, whatever the tensor's type, and one the fetch cannot
 * resolve fails with the fetch's error; a reference without a `length` key is then
 * checked too, against the bytes it names. For checking a model whose weights were left where they are
 * (oz_open_deferred) without reading them. */
OC_API oc_status oc_tensor_check_size_fetched(const onnx_TensorProto *tensor,
                                              const struct oc_tensor_fetch *fetch, oc_error *err);
#endif

/* A model's tensors by name: every named TensorProto of a message tree at any depth
 * (initializers, attributes, subgraphs, functions: oc_msg_visit_tensors's order), each
 * name once (the first tensor that has it). Built by one walk into a keyed name table
 * (nametab.h, spec/security.md K-2), so that each lookup takes expected constant time
 * whatever the names, where a walk per lookup made a loop over every name quadratic
 * (K-1). The index borrows the tensors: the message must outlive it and not change
 * while it is used. Any number of threads may read it at once. */
typedef struct oc_tensor_index oc_tensor_index;
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Builds the index of msg (a message of desc). OC_ERR_NOMEM; OC_ERR_LIMIT past
 * OC_NAMETAB_MAX names. *out is NULL on failure. */
OC_API oc_status oc_tensor_index_new(const oc_msgdesc *desc, void *msg, oc_tensor_index **out,
                                     oc_error *err);
/* Frees the index (not the tensors). NULL is accepted. */
OC_API void oc_tensor_index_free(oc_tensor_index *x);
/* The number of distinct names. */
OC_API uint64_t oc_tensor_index_count(const oc_tensor_index *x);
/* The tensor of the i-th distinct name, in walk order (NULL past the count): borrowed. */
OC_API onnx_TensorProto *oc_tensor_index_at(const oc_tensor_index *x, uint64_t i);
/* The first tensor named name (len bytes, any bytes), or NULL: borrowed. */
OC_API onnx_TensorProto *oc_tensor_index_find(const oc_tensor_index *x, const void *name,
                                              size_t len);
#endif

#ifdef __cplusplus
}
#endif

#endif
