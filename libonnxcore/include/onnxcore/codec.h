/*
 * onnxcore/codec.h - the protobuf wire codec for any ONNX message, and generic operations.
 *
 * One table-driven loop decodes, sizes and encodes every message type of schema.def.
 * Decoding accepts any valid protobuf encoding (packed or unpacked repeated scalars,
 * fields in any order, repeated occurrences merged as protobuf merges them) and keeps
 * unknown fields verbatim. Encoding writes exactly what protobuf writes for the proto2
 * schema: known fields in field-number order, packed only where the schema says so,
 * optional fields whenever present (even if empty or zero), then the unknown fields.
 * All sizes are 64-bit: no 2 GiB limit.
 */
#ifndef ONNXCORE_CODEC_H
#define ONNXCORE_CODEC_H

#include "export.h"

#include <stdint.h>

#include "messages.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Decodes size bytes at data as a message of type desc, merging into msg (normally fresh
 * from oc_msg_new). Strings and arrays are allocated in arena. With opts->no_copy, strings
 * and raw_data of at least opts->buffer.raw_data_threshold bytes point into data instead
 * of being copied: the caller keeps data alive, unless `owner` is given, in which case the
 * spans and the arena each hold a reference to it. Without no_copy, an owner from
 * oc_map_file lets large payloads be read from the mapped file (pread) rather than copied
 * out of the mapping: the same bytes, without faulting the mapping's pages in.
 * On error msg holds what was decoded so far (still safe to free with the arena) and err
 * names the problem and its offset in data. */
OC_API oc_status oc_decode(const oc_msgdesc *desc, void *msg, const void *data, uint64_t size,
                           oc_arena *arena, const oc_parse_options *opts, oc_owner *owner,
                           oc_error *err);

/* The number of bytes oc_encode writes for msg. */
OC_API oc_status oc_encoded_size(const oc_msgdesc *desc, const void *msg, uint64_t *size,
                                 oc_error *err);

/* Encodes msg to a sink. Large raw_data spans are passed to the sink directly, without
 * copying them through a buffer; with the sink oc_atomic_write (file.h), spans in a file
 * mapping are copied file to file by the kernel (oc_atomic_write_bytes). */
OC_API oc_status oc_encode(const oc_msgdesc *desc, const void *msg, oc_write_fn write, void *ctx,
                           oc_error *err);

/* Encodes msg into a new buffer of *size bytes (free it with free()). */
OC_API oc_status oc_encode_to_memory(const oc_msgdesc *desc, const void *msg, void **out,
                                     uint64_t *size, oc_error *err);

/* Deep-copies src into a fresh message in arena (*out). raw_data spans follow the byte-span
 * mode table: owned bytes are duplicated, borrowed stay borrowed, shared gain a reference. */
OC_API oc_status oc_msg_copy(const oc_msgdesc *desc, const void *src, oc_arena *arena, void **out,
                             oc_error *err);
#endif

/* Calls fn for every TensorProto reachable from msg, at any depth (initializers, sparse
 * tensors, attributes, subgraphs, functions, training info, sequences...), in encoding
 * order. fn returns OC_OK to go on; anything else stops the walk and is returned. */
typedef oc_status (*oc_tensor_fn)(void *ctx, onnx_TensorProto *tensor);
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
OC_API oc_status oc_msg_visit_tensors(const oc_msgdesc *desc, void *msg, oc_tensor_fn fn,
                                      void *ctx);
#endif

#ifdef __cplusplus
}
#endif

#endif
