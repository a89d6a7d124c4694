/*
 * crypt/backend_none.c - crypt/backend.h for builds without OpenSSL
 * (ONNXZ_WITH_OPENSSL=OFF): every call that computes something fails with
 * OC_ERR_UNSUPPORTED and says so; the formats above stay the same code. Wiping and
 * comparing need no library and work.
 */
#include <stdlib.h>

#include "crypto/backend.h"
#include "internal/error.h"
#include "internal/signature.h"

static oc_status no_crypto(oc_error *err) {
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                    "encryption is not available: onnxz was built without OpenSSL");
}

static oc_status no_sha1(oc_error *err) {
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                    "checksums need SHA-1, but onnxz was built without OpenSSL");
}

int oc__cb_available(void) { return 0; }

oc_status oc__cb_require(oc_error *err) { return no_crypto(err); }

void oc__cb_cleanse(void *p, size_t n) {
    volatile unsigned char *v = p;
    while (n--) *v++ = 0;
}

int oc__cb_equal(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++) d = (unsigned char)(d | (x[i] ^ y[i]));
    return d == 0;
}

oc_status oc__cb_random(void *buf, size_t n, oc_error *err) {
    (void)buf, (void)n;
    return no_crypto(err);
}

oc_status oc__cb_pbkdf2_sha256(const void *pass, size_t pass_len, const uint8_t *salt,
                               size_t salt_len, uint32_t iterations, uint8_t *out, size_t out_len,
                               oc_error *err) {
    (void)pass, (void)pass_len, (void)salt, (void)salt_len, (void)iterations, (void)out,
        (void)out_len;
    return no_crypto(err);
}

oc_status oc__cb_hmac_sha256(const uint8_t *key, size_t key_len, const void *msg, size_t msg_len,
                             uint8_t out[OC__CB_SHA256_SIZE], oc_error *err) {
    (void)key, (void)key_len, (void)msg, (void)msg_len, (void)out;
    return no_crypto(err);
}

oc_status oc__cb_sha256(const void *data, size_t size, uint8_t out[OC__CB_SHA256_SIZE],
                        oc_error *err) {
    (void)data, (void)size, (void)out;
    return no_crypto(err);
}

oc_status oc__cb_sha1_new(oc__cb_sha1 **out, oc_error *err) {
    *out = NULL;
    return no_sha1(err);
}

oc_status oc__cb_sha1_update(oc__cb_sha1 *h, const void *data, uint64_t size, oc_error *err) {
    (void)h, (void)data, (void)size;
    return no_sha1(err);
}

oc_status oc__cb_sha1_final(oc__cb_sha1 *h, uint8_t out[OC__CB_SHA1_SIZE], oc_error *err) {
    (void)h, (void)out;
    return no_sha1(err);
}

void oc__cb_sha1_free(oc__cb_sha1 *h) { (void)h; }

oc_status oc__cb_cipher_new(oc__cb_cipher **out, oc_error *err) {
    *out = NULL;
    return no_crypto(err);
}

void oc__cb_cipher_free(oc__cb_cipher *c) { (void)c; }

oc_status oc__cb_gcm_init(oc__cb_cipher *c, int encrypt, const uint8_t key[OC__CB_AES256_KEY_SIZE],
                          oc_error *err) {
    (void)c, (void)encrypt, (void)key;
    return no_crypto(err);
}

oc_status oc__cb_gcm_seal(oc__cb_cipher *c, const uint8_t nonce[OC__CB_GCM_NONCE_SIZE],
                          const void *aad, size_t aad_len, const void *in, size_t len, void *out,
                          uint8_t tag[OC__CB_GCM_TAG_SIZE], oc_error *err) {
    (void)c, (void)nonce, (void)aad, (void)aad_len, (void)in, (void)len, (void)out, (void)tag;
    return no_crypto(err);
}

oc_status oc__cb_gcm_open(oc__cb_cipher *c, const uint8_t nonce[OC__CB_GCM_NONCE_SIZE],
                          const void *aad, size_t aad_len, const void *in, size_t len,
                          const uint8_t tag[OC__CB_GCM_TAG_SIZE], void *out, int *authentic,
                          oc_error *err) {
    (void)c, (void)nonce, (void)aad, (void)aad_len, (void)in, (void)len, (void)tag, (void)out;
    *authentic = 0;
    return no_crypto(err);
}

oc_status oc__cb_cbc_init(oc__cb_cipher *c, int encrypt, const uint8_t key[OC__CB_AES256_KEY_SIZE],
                          const uint8_t iv[OC__CB_CBC_BLOCK], oc_error *err) {
    (void)c, (void)encrypt, (void)key, (void)iv;
    return no_crypto(err);
}

oc_status oc__cb_cbc_update(oc__cb_cipher *c, const void *in, size_t len, void *out,
                            size_t *out_len, oc_error *err) {
    (void)c, (void)in, (void)len, (void)out;
    *out_len = 0;
    return no_crypto(err);
}

oc_status oc__cb_cbc_final(oc__cb_cipher *c, void *out, size_t *out_len, int *padding_ok,
                           oc_error *err) {
    (void)c, (void)out;
    *out_len = 0;
    *padding_ok = 0;
    return no_crypto(err);
}

/* ---- internal/signature.h: nothing computes ---- */

static oc_status no_signing(oc_error *err) {
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                    "signing and verifying signatures need OpenSSL, but onnxz was built "
                    "without it");
}

oc_status oc__sha256_new(oc__sha256 **out, oc_error *err) {
    *out = NULL;
    return no_signing(err);
}

oc_status oc__sha256_update(void *h, const void *data, uint64_t size, oc_error *err) {
    (void)h, (void)data, (void)size;
    return no_signing(err);
}

oc_status oc__sha256_final(oc__sha256 *h, uint8_t out[OC__SHA256_SIZE], oc_error *err) {
    (void)h, (void)out;
    return no_signing(err);
}

oc_status oc__sha256_reset(oc__sha256 *h, oc_error *err) {
    (void)h;
    return no_signing(err);
}

void oc__sha256_free(oc__sha256 *h) { (void)h; }

oc_status oc__sig_key_private(const void *pem, size_t len, const void *pass, size_t pass_len,
                              oc__sig_key **out, bool *needs_pass, oc_error *err) {
    (void)pem, (void)len, (void)pass, (void)pass_len;
    *out = NULL;
    if (needs_pass) *needs_pass = false;
    return no_signing(err);
}

oc_status oc__sig_key_public(const void *pem, size_t len, oc__sig_key **out, oc_error *err) {
    (void)pem, (void)len;
    *out = NULL;
    return no_signing(err);
}

void oc__sig_key_free(oc__sig_key *key) { (void)key; }

oc__sig_kind oc__sig_key_kind(const oc__sig_key *key) {
    (void)key;
    return OC__SIG_ED25519;
}

oc_status oc__sig_key_public_pem(const oc__sig_key *key, char **pem, size_t *len, oc_error *err) {
    (void)key;
    *pem = NULL;
    *len = 0;
    return no_signing(err);
}

oc_status oc__sig_sign(const oc__sig_key *key, const void *msg, size_t len, uint8_t **sig,
                       size_t *sig_len, oc_error *err) {
    (void)key, (void)msg, (void)len;
    *sig = NULL;
    *sig_len = 0;
    return no_signing(err);
}

oc_status oc__sig_verify(const oc__sig_key *key, const void *msg, size_t len, const uint8_t *sig,
                         size_t sig_len, bool *ok, oc_error *err) {
    (void)key, (void)msg, (void)len, (void)sig, (void)sig_len;
    *ok = false;
    return no_signing(err);
}
