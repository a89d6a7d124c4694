/*
 * internal/digest.h - message digests, through OpenSSL when the build has it.
 */
#ifndef ONNXCORE_INTERNAL_DIGEST_H
#define ONNXCORE_INTERNAL_DIGEST_H

#include <stdint.h>

#include "onnxcore/status.h"

/* The SHA-1 of size bytes at data as 40 lowercase hex digits and a NUL.
 * OC_ERR_UNSUPPORTED when built without OpenSSL. */
oc_status oc__sha1_hex(const void *data, uint64_t size, char out[41], oc_error *err);

#endif
