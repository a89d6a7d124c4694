/*
 * crypt/backend.h - the cryptographic primitives under the encrypted formats (crypt/) and
 * the external-data checksums (digest.c).
 *
 * One backend file implements them, chosen by CMake as libzip chooses its zip_crypto_*.c:
 * backend_openssl.c (ONNXZ_WITH_OPENSSL=ON: OpenSSL's EVP, PKCS5_PBKDF2_HMAC, HMAC,
 * RAND_bytes) or backend_none.c (OFF). Nothing above this header knows which one was
 * built: the formats are compiled once, with no #if.
 *
 * A call that fails fills err with its own message and returns its status (first error
 * wins, as everywhere). In backend_none.c every call that computes something fails with
 * OC_ERR_UNSUPPORTED and a message that says the build has no OpenSSL; oc__cb_cleanse and
 * oc__cb_equal work in both backends. No call keeps state between calls but the cipher and
 * SHA-1 objects it hands out: distinct objects may be used from distinct threads.
 */
#ifndef ONNXCORE_CRYPT_BACKEND_H
#define ONNXCORE_CRYPT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "onnxcore/status.h"

#define OC__CB_SHA256_SIZE     32u
#define OC__CB_SHA1_SIZE       20u
#define OC__CB_AES256_KEY_SIZE 32u
#define OC__CB_GCM_NONCE_SIZE  12u
#define OC__CB_GCM_TAG_SIZE    16u
#define OC__CB_CBC_BLOCK       16u

/* 1 when this backend can compute (it is OpenSSL's), else 0. */
int oc__cb_available(void);
/* OC_OK when the backend can compute; otherwise OC_ERR_UNSUPPORTED "encryption is not
 * available: onnxz was built without OpenSSL". The encryption API calls it first. */
oc_status oc__cb_require(oc_error *err);

/* Overwrites n bytes at p with zeros in a way the compiler may not drop. */
void oc__cb_cleanse(void *p, size_t n);
/* 1 when the n bytes at a and b are equal; the time taken does not depend on where they
 * differ. */
int oc__cb_equal(const void *a, const void *b, size_t n);

/* n bytes from the system's cryptographically secure generator. */
oc_status oc__cb_random(void *buf, size_t n, oc_error *err);
/* PBKDF2-HMAC-SHA256 (RFC 8018) of the passphrase (pass_len <= INT_MAX) and the salt,
 * out_len bytes. */
oc_status oc__cb_pbkdf2_sha256(const void *pass, size_t pass_len, const uint8_t *salt,
                               size_t salt_len, uint32_t iterations, uint8_t *out, size_t out_len,
                               oc_error *err);
/* HMAC-SHA256 of msg under key. */
oc_status oc__cb_hmac_sha256(const uint8_t *key, size_t key_len, const void *msg, size_t msg_len,
                             uint8_t out[OC__CB_SHA256_SIZE], oc_error *err);
/* SHA-256 of size bytes. */
oc_status oc__cb_sha256(const void *data, size_t size, uint8_t out[OC__CB_SHA256_SIZE],
                        oc_error *err);

/* ---- SHA-1, piece by piece (external-data checksums); the messages say "SHA-1" ---- */

typedef struct oc__cb_sha1 oc__cb_sha1;

/* A new digest in *out (NULL on failure). */
oc_status oc__cb_sha1_new(oc__cb_sha1 **out, oc_error *err);
oc_status oc__cb_sha1_update(oc__cb_sha1 *h, const void *data, uint64_t size, oc_error *err);
/* The digest of everything added; h may only be freed afterwards. */
oc_status oc__cb_sha1_final(oc__cb_sha1 *h, uint8_t out[OC__CB_SHA1_SIZE], oc_error *err);
/* NULL is accepted. */
void oc__cb_sha1_free(oc__cb_sha1 *h);

/* ---- AES-256 ciphers: one object, set up for GCM or CBC in one direction ---- */

typedef struct oc__cb_cipher oc__cb_cipher;

/* A new cipher object in *out (NULL on failure: OC_ERR_NOMEM "out of memory"). */
oc_status oc__cb_cipher_new(oc__cb_cipher **out, oc_error *err);
/* Frees c and wipes its key schedule. NULL is accepted. */
void oc__cb_cipher_free(oc__cb_cipher *c);

/* AES-256-GCM with 12-byte nonces and 16-byte tags: c is keyed once (encrypt != 0 to
 * seal, 0 to open), then seals or opens any number of messages, each with its own nonce. */
oc_status oc__cb_gcm_init(oc__cb_cipher *c, int encrypt, const uint8_t key[OC__CB_AES256_KEY_SIZE],
                          oc_error *err);
/* Encrypts len bytes of in to out (len bytes; len <= INT_MAX) and computes the tag over
 * aad and the ciphertext. */
oc_status oc__cb_gcm_seal(oc__cb_cipher *c, const uint8_t nonce[OC__CB_GCM_NONCE_SIZE],
                          const void *aad, size_t aad_len, const void *in, size_t len, void *out,
                          uint8_t tag[OC__CB_GCM_TAG_SIZE], oc_error *err);
/* Decrypts len bytes of in to out and checks tag: *authentic is 1 when it verifies, else 0
 * (out must then be discarded). Any failure of the cipher itself counts as a failed check:
 * OC_OK with *authentic 0. */
oc_status oc__cb_gcm_open(oc__cb_cipher *c, const uint8_t nonce[OC__CB_GCM_NONCE_SIZE],
                          const void *aad, size_t aad_len, const void *in, size_t len,
                          const uint8_t tag[OC__CB_GCM_TAG_SIZE], void *out, int *authentic,
                          oc_error *err);

/* AES-256-CBC with PKCS#7 padding, streamed: c is keyed with the IV (encrypt != 0 to
 * encrypt), then fed with update and closed with final. */
oc_status oc__cb_cbc_init(oc__cb_cipher *c, int encrypt, const uint8_t key[OC__CB_AES256_KEY_SIZE],
                          const uint8_t iv[OC__CB_CBC_BLOCK], oc_error *err);
/* Feeds len bytes (len <= INT_MAX); *out_len bytes come out at out, which has room for
 * len + OC__CB_CBC_BLOCK. */
oc_status oc__cb_cbc_update(oc__cb_cipher *c, const void *in, size_t len, void *out,
                            size_t *out_len, oc_error *err);
/* The last block (room for OC__CB_CBC_BLOCK bytes at out). Decrypting, *padding_ok is 0
 * when the padding does not check (a wrong key, or damaged or cut data) and nothing comes
 * out; encrypting it is always 1. */
oc_status oc__cb_cbc_final(oc__cb_cipher *c, void *out, size_t *out_len, int *padding_ok,
                           oc_error *err);

#endif
