/*
 * internal/crypt.h - what the encryption component (src/crypto/) offers the rest of
 * libonnxcore beyond onnxcore/crypto.h: resolved options and a writer opened from them,
 * so that a caller (model_crypt.c) can check everything before it creates its output, and
 * a file decryption that also says which format it read.
 */
#ifndef ONNXCORE_INTERNAL_CRYPT_H
#define ONNXCORE_INTERNAL_CRYPT_H

#include <stddef.h>
#include <stdint.h>

#include "onnxcore/bytes.h"
#include "onnxcore/crypto.h"
#include "onnxcore/status.h"
#include "internal/onnxcore_shared.h"

/* Encryption options with every default filled in and checked. */
typedef struct oc__crypt_params {
    oc_crypt_format format;  /* ONNXZEC1 or ONNXCRY1 */
    uint32_t iterations;     /* PBKDF2 */
    uint32_t chunk_size;     /* ONNXZEC1; 0 for ONNXCRY1 */
    uint32_t max_iterations; /* the reader's limit */
} oc__crypt_params;

/* Everything an encryption checks before it starts, in this order: the build can encrypt
 * (OC_ERR_UNSUPPORTED), the options (OC_ERR_INVALID_ARG), the passphrase. */
oc_status oc__crypt_prepare(const oc_crypt_options *opts, const void *key, size_t key_len,
                            oc__crypt_params *out, oc_error *err);
/* oc_crypt_writer_open with prepared options. */
oc_status oc__crypt_writer_open(oc_write_fn write, void *write_ctx, const void *key, size_t key_len,
                                const oc__crypt_params *p, oc_crypt_writer **out, oc_error *err);
/* The exact size of the encryption of size bytes (C-35, C-50); OC_ERR_LIMIT when it does
 * not fit in 64 bits. */
oc_status oc__crypt_encrypted_size(uint64_t size, const oc__crypt_params *p, uint64_t *out,
                                   oc_error *err);
/* oc_crypt_decrypt_file_to_memory (without releasing *out first); *format (if not NULL)
 * receives the format the file's magic names, also when decryption fails. */
oc_status oc__crypt_decrypt_file_span(const char *path, const void *key, size_t key_len,
                                      const oc_crypt_options *opts, oc_bytes *out,
                                      oc_crypt_format *format, oc_error *err);

/* A sink into a buffer allocated for the exact (or largest possible) output size: more
 * than cap bytes is an internal error. */
typedef struct oc__crypt_buffer {
    uint8_t *buf;
    uint64_t cap, len;
} oc__crypt_buffer;

oc_status oc__crypt_buffer_write(void *buffer, const void *data, uint64_t size, oc_error *err);
/* Allocates the sink's buffer for cap bytes (cap at most SIZE_MAX: the caller checks). */
oc_status oc__crypt_buffer_open(oc__crypt_buffer *sink, uint64_t cap, oc_error *err);
/* Ends a write into sink whose status is st: when it succeeded and filled exactly cap
 * bytes, *out and *out_size receive the buffer; otherwise the buffer is freed. Returns the
 * write's status, or OC_ERR_CRYPTO for a size that differs from cap. */
oc_status oc__crypt_buffer_finish(oc__crypt_buffer *sink, oc_status st, void **out,
                                  uint64_t *out_size, oc_error *err);

#endif
