/*
 * onnxz/encrypted.h - encrypted models and archives (spec/encryption.md, C-61): an
 * encrypted file decrypts once into one aligned buffer, and an archive inside it is
 * opened in place, so tensors loaded with no_copy borrow from the decrypted buffer.
 */
#ifndef ONNXZ_ENCRYPTED_H
#define ONNXZ_ENCRYPTED_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <onnxcore/crypto.h>
#include "archive.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens an archive held in memory (every check of oz_archive_open). With an owner token
 * the archive takes a reference and STORED entries (tensors loaded with no_copy) share
 * the bytes in place; without one the caller keeps them alive and unchanged until the
 * archive and everything read from it are gone. */
OZ_API oc_status oz_archive_open_memory(const void *data, uint64_t size, oc_owner *owner,
                                        const oz_zip_reader_options *zip_opts, oz_archive **out,
                                        oc_error *err);

/* Decrypts the file at path (ONNXZEC1 or ONNXCRY1) into one 64-byte-aligned buffer and
 * opens the archive in it; tensors loaded with no_copy share the buffer, which lives as
 * long as the archive or any such tensor. A plaintext that is not a ZIP:
 * OC_ERR_MALFORMED. Decryption errors as oc_crypt_decrypt_file_to_memory. */
OZ_API oc_status oz_archive_open_encrypted(const char *path, const void *key, size_t key_len,
                                           const oc_crypt_options *copts,
                                           const oz_zip_reader_options *zip_opts, oz_archive **out,
                                           oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Loads the model of an encrypted file, whichever it holds: an .onnxz archive (as
 * oz_archive_load_model) or a serialized model (as oc_crypt_load_model_file), decrypting
 * once. *is_archive (may be NULL) tells which it was. */
OZ_API oc_status oz_encrypted_load(const char *path, const void *key, size_t key_len,
                                   const oc_crypt_options *copts, const oc_parse_options *popts,
                                   oc_model **out, bool *is_archive, oc_error *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
