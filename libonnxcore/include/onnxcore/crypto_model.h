/*
 * onnxcore/crypto_model.h - encrypted models: serialize and encrypt a model, decrypt and
 * decode one (spec/encryption.md). The byte- and file-level encryption these build on,
 * the formats, options and errors are described in crypto.h.
 *
 * Built without OpenSSL (cmake -DONNXZ_WITH_OPENSSL=OFF), the calls that encrypt or
 * decrypt return OC_ERR_UNSUPPORTED; oc_crypt_is_zip and oc_crypt_decode_model still work.
 */
#ifndef ONNXCORE_CRYPTO_MODEL_H
#define ONNXCORE_CRYPTO_MODEL_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bytes.h"
#include "crypto.h"
#include "model.h"
#include "options.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* 1 when data starts with a ZIP signature (local header "PK\3\4", or "PK\5\6" of an empty
 * archive): decrypted bytes that are an .onnxz archive rather than a serialized model. */
OC_API bool oc_crypt_is_zip(const void *data, uint64_t size);
#endif

/* ---- models ---- */

/* Serializes the model and encrypts it to path (atomically, streaming: the plaintext is
 * never whole in memory nor on disk) or into a new buffer (free()). sopts may be NULL;
 * external data is refused (OC_ERR_INVALID_ARG: it would be written in the clear);
 * sopts->no_overwrite or copts->no_overwrite refuses an existing path. */
OC_API oc_status oc_crypt_save_model_file(const oc_model *model, const char *path, const void *key,
                                          size_t key_len, const oc_crypt_options *copts,
                                          const oc_serialize_options *sopts, oc_error *err);
OC_API oc_status oc_crypt_save_model_memory(const oc_model *model, const void *key, size_t key_len,
                                            const oc_crypt_options *copts, void **out,
                                            uint64_t *out_size, oc_error *err);

/* Decrypts (either format) and decodes a model. With popts->no_copy the tensors borrow
 * from the decrypted buffer through its owner token (zero copy; the buffer lives as long as
 * any tensor uses it). External data is resolved as oc_model_load_memory /
 * oc_model_load_file do (popts->data_dir; for a file, its directory). A plaintext that is
 * an .onnxz archive (oc_crypt_is_zip) gives OC_ERR_UNSUPPORTED: decrypt it with
 * oc_crypt_decrypt_memory / oc_crypt_decrypt_file_to_memory and open the span with
 * oz_zip_reader_open_memory(span.data, span.size, span.owner, ...) in libonnxz. For
 * ONNXCRY1, a plaintext that does not decode gives OC_ERR_BAD_KEY (the padding check lets
 * ~1/256 wrong passphrases through). */
OC_API oc_status oc_crypt_load_model_memory(const void *data, uint64_t size, const void *key,
                                            size_t key_len, const oc_crypt_options *copts,
                                            const oc_parse_options *popts, oc_model **out,
                                            oc_error *err);
OC_API oc_status oc_crypt_load_model_file(const char *path, const void *key, size_t key_len,
                                          const oc_crypt_options *copts,
                                          const oc_parse_options *popts, oc_model **out,
                                          oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* The second half of the loaders, for a caller that has decrypted already (to look at the
 * plaintext first, e.g. to send archives to libonnxz and models here without decrypting
 * twice): decodes plain (from oc_crypt_decrypt_*) as a model; with popts->no_copy the
 * tensors share plain->owner. format is the one it was decrypted from (ONNXCRY1 turns a
 * decoding failure into OC_ERR_BAD_KEY, C-53). External data is resolved beneath base_dir,
 * or popts->data_dir when base_dir is NULL, or not at all when both are NULL. An archive:
 * OC_ERR_UNSUPPORTED. Works without OpenSSL (it only decodes). plain is not released. */
OC_API oc_status oc_crypt_decode_model(const oc_bytes *plain, oc_crypt_format format,
                                       const char *base_dir, const oc_parse_options *popts,
                                       oc_model **out, oc_error *err);

/* oc_crypt_decode_model for a plaintext decrypted from the file at path: what
 * oc_crypt_load_model_file does after decrypting. External data is resolved beside path
 * (its directory), or beneath popts->data_dir when set. plain is not released. */
OC_API oc_status oc_crypt_decode_model_file(const oc_bytes *plain, oc_crypt_format format,
                                            const char *path, const oc_parse_options *popts,
                                            oc_model **out, oc_error *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
