/*
 * internal/digest.h - message digests, through the cryptographic backend (crypt/backend.h:
 * OpenSSL when the build has it).
 */
#ifndef ONNXCORE_INTERNAL_DIGEST_H
#define ONNXCORE_INTERNAL_DIGEST_H

#include <stdint.h>

#include "onnxcore/bytes.h"
#include "onnxcore/status.h"

/* A SHA-1 being computed piece by piece. */
typedef struct oc__sha1 {
    struct oc__cb_sha1 *md; /* the backend's, NULL once ended */
} oc__sha1;

/* Starts a digest. OC_ERR_UNSUPPORTED when built without OpenSSL. */
oc_status oc__sha1_begin(oc__sha1 *h, oc_error *err);
/* Adds size bytes; an oc_write_fn whose ctx is the oc__sha1, so spans stream into it. */
oc_status oc__sha1_update(void *h, const void *data, uint64_t size, oc_error *err);
/* Writes the digest as 40 lowercase hex digits and a NUL, and ends h. */
oc_status oc__sha1_end_hex(oc__sha1 *h, char out[41], oc_error *err);
/* Ends h without a result (on error paths); safe after oc__sha1_end_hex. */
void oc__sha1_discard(oc__sha1 *h);

/* The SHA-1 of a span, read the way oc_bytes_write reads it (mapped pages are dropped
 * once hashed). */
oc_status oc__sha1_span_hex(const oc_bytes *span, char out[41], oc_error *err);

#endif
