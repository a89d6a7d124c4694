/*
 * onnxcore/tensor.h - operations on the tensors of a message tree.
 */
#ifndef ONNXCORE_TENSOR_H
#define ONNXCORE_TENSOR_H

#include <stdint.h>

#include "codec.h"

#ifdef __cplusplus
extern "C" {
#endif

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
oc_status oc_consolidate_tensors(const oc_msgdesc *desc, void *msg,
                                 const oc_tensor_buffer_options *opts, oc_owner **buffer_out,
                                 const uint8_t **base_out, uint64_t *size_out, oc_error *err);

#ifdef __cplusplus
}
#endif

#endif
