/*
 * internal/signature.h - SHA-256 piece by piece and public-key signatures (ECDSA P-256
 * with SHA-256, Ed25519) for signed models (spec/signing.md), through the cryptographic
 * backend: OpenSSL's EVP when the build has it (crypto/backend_openssl.c); without it
 * every call that computes fails with OC_ERR_UNSUPPORTED and says why
 * (crypto/backend_none.c). Keys are read from PEM as `openssl genpkey` and `openssl pkey
 * -pubout` write them (PKCS#8, SubjectPublicKeyInfo; an encrypted PKCS#8 key with its
 * passphrase). Distinct objects may be used from distinct threads.
 */
#ifndef ONNXCORE_INTERNAL_SIGNATURE_H
#define ONNXCORE_INTERNAL_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnxcore/status.h"
#include "onnxcore_private.h"

#define OC__SHA256_SIZE 32u

typedef struct oc__sha256 oc__sha256;

/* A new SHA-256 in *out (NULL on failure). */
OC_PRIVATE oc_status oc__sha256_new(oc__sha256 **out, oc_error *err);
/* Adds size bytes; an oc_write_fn whose ctx is the oc__sha256, so spans stream into it. */
OC_PRIVATE oc_status oc__sha256_update(void *h, const void *data, uint64_t size, oc_error *err);
/* The digest of everything added; h may be freed or started again with oc__sha256_reset. */
OC_PRIVATE oc_status oc__sha256_final(oc__sha256 *h, uint8_t out[OC__SHA256_SIZE], oc_error *err);
OC_PRIVATE oc_status oc__sha256_reset(oc__sha256 *h, oc_error *err);
/* NULL is accepted. */
OC_PRIVATE void oc__sha256_free(oc__sha256 *h);

/* A signing or verifying key. */
typedef struct oc__sig_key oc__sig_key;

typedef enum oc__sig_kind {
    OC__SIG_ECDSA_P256 = 1, /* ECDSA over NIST P-256 with SHA-256, DER signatures */
    OC__SIG_ED25519 = 2     /* Ed25519 (RFC 8032), 64-byte signatures */
} oc__sig_kind;

/* The private key of the PEM text (len bytes) into *out. pass (pass_len bytes; NULL: none)
 * decrypts an encrypted key. Errors: OC_ERR_INVALID_ARG when the key is encrypted and no
 * passphrase was given (*needs_pass set, may be NULL), OC_ERR_BAD_KEY for a wrong
 * passphrase, OC_ERR_MALFORMED for text that holds no private key, OC_ERR_UNSUPPORTED for
 * a key of another type or curve. The messages name no file: the caller adds it. */
OC_PRIVATE oc_status oc__sig_key_private(const void *pem, size_t len, const void *pass,
                                         size_t pass_len, oc__sig_key **out, bool *needs_pass,
                                         oc_error *err);
/* The public key of the PEM text (a SubjectPublicKeyInfo, or a private key whose public
 * half is taken) into *out. Errors as above. */
OC_PRIVATE oc_status oc__sig_key_public(const void *pem, size_t len, oc__sig_key **out,
                                        oc_error *err);
/* Wipes and frees; NULL is accepted. */
OC_PRIVATE void oc__sig_key_free(oc__sig_key *key);
OC_PRIVATE oc__sig_kind oc__sig_key_kind(const oc__sig_key *key);
/* The public key as PEM SubjectPublicKeyInfo text (`-----BEGIN PUBLIC KEY-----`, 64-column
 * base64, each line ending in \n), as OpenSSL writes it: a new buffer in *pem (free()),
 * *len bytes, no NUL counted. */
OC_PRIVATE oc_status oc__sig_key_public_pem(const oc__sig_key *key, char **pem, size_t *len,
                                            oc_error *err);
/* The signature of len bytes at msg with a private key: a new buffer (free()) in *sig. */
OC_PRIVATE oc_status oc__sig_sign(const oc__sig_key *key, const void *msg, size_t len,
                                  uint8_t **sig, size_t *sig_len, oc_error *err);
/* *ok is true when sig is key's signature of msg; a signature that does not parse or
 * does not match leaves *ok false and returns OC_OK. */
OC_PRIVATE oc_status oc__sig_verify(const oc__sig_key *key, const void *msg, size_t len,
                                    const uint8_t *sig, size_t sig_len, bool *ok, oc_error *err);

#endif
