/*
 * crypt/backend_openssl.c - the primitives of crypt/backend.h through OpenSSL (built with
 * ONNXZ_WITH_OPENSSL=ON): EVP ciphers and digests, PKCS5_PBKDF2_HMAC, HMAC, RAND_bytes,
 * OPENSSL_cleanse, CRYPTO_memcmp. The only file of libonnxcore that includes OpenSSL.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "crypto/backend.h"
#include "internal/error.h"

int oc__cb_available(void) { return 1; }

oc_status oc__cb_require(oc_error *err) {
    (void)err;
    return OC_OK;
}

void oc__cb_cleanse(void *p, size_t n) { OPENSSL_cleanse(p, n); }

int oc__cb_equal(const void *a, const void *b, size_t n) { return CRYPTO_memcmp(a, b, n) == 0; }

oc_status oc__cb_random(void *buf, size_t n, oc_error *err) {
    OC_RETURN_ERROR_IF(n > INT_MAX || RAND_bytes(buf, (int)n) != 1, err, OC_ERR_CRYPTO,
                       OC_NO_OFFSET, "the random number generator failed");
    return OC_OK;
}

oc_status oc__cb_pbkdf2_sha256(const void *pass, size_t pass_len, const uint8_t *salt,
                               size_t salt_len, uint32_t iterations, uint8_t *out, size_t out_len,
                               oc_error *err) {
    OC_RETURN_ERROR_IF(pass_len > INT_MAX || salt_len > INT_MAX || iterations > INT_MAX ||
                           out_len > INT_MAX ||
                           PKCS5_PBKDF2_HMAC((const char *)pass, (int)pass_len, salt, (int)salt_len,
                                             (int)iterations, EVP_sha256(), (int)out_len, out) != 1,
                       err, OC_ERR_CRYPTO, OC_NO_OFFSET, "PBKDF2 key derivation failed");
    return OC_OK;
}

oc_status oc__cb_hmac_sha256(const uint8_t *key, size_t key_len, const void *msg, size_t msg_len,
                             uint8_t out[OC__CB_SHA256_SIZE], oc_error *err) {
    unsigned int n = 0;
    OC_RETURN_ERROR_IF(key_len > INT_MAX ||
                           HMAC(EVP_sha256(), key, (int)key_len, msg, msg_len, out, &n) == NULL ||
                           n != OC__CB_SHA256_SIZE,
                       err, OC_ERR_CRYPTO, OC_NO_OFFSET, "HMAC-SHA256 failed");
    return OC_OK;
}

oc_status oc__cb_sha256(const void *data, size_t size, uint8_t out[OC__CB_SHA256_SIZE],
                        oc_error *err) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    int ok = EVP_Digest(data, size, md, &n, EVP_sha256(), NULL) == 1 && n == OC__CB_SHA256_SIZE;
    if (ok) memcpy(out, md, OC__CB_SHA256_SIZE);
    OC_RETURN_ERROR_IF(!ok, err, OC_ERR_CRYPTO, OC_NO_OFFSET, "SHA-256 failed");
    return OC_OK;
}

/* ---- SHA-1: the handle is OpenSSL's EVP_MD_CTX ---- */

static oc_status sha1_failed(oc_error *err) {
    return oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "SHA-1 computation failed");
}

oc_status oc__cb_sha1_new(oc__cb_sha1 **out, oc_error *err) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    *out = NULL;
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return sha1_failed(err);
    }
    *out = (oc__cb_sha1 *)ctx;
    return OC_OK;
}

oc_status oc__cb_sha1_update(oc__cb_sha1 *h, const void *data, uint64_t size, oc_error *err) {
    const unsigned char *p = data;
    while (size) { /* EVP takes size_t: feed huge pieces in parts */
        size_t chunk = size > (1u << 30) ? (1u << 30) : (size_t)size;
        if (EVP_DigestUpdate((EVP_MD_CTX *)h, p, chunk) != 1) return sha1_failed(err);
        p += chunk;
        size -= chunk;
    }
    return OC_OK;
}

oc_status oc__cb_sha1_final(oc__cb_sha1 *h, uint8_t out[OC__CB_SHA1_SIZE], oc_error *err) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_DigestFinal_ex((EVP_MD_CTX *)h, md, &n) != 1 || n != OC__CB_SHA1_SIZE)
        return sha1_failed(err);
    memcpy(out, md, OC__CB_SHA1_SIZE);
    return OC_OK;
}

void oc__cb_sha1_free(oc__cb_sha1 *h) { EVP_MD_CTX_free((EVP_MD_CTX *)h); }

/* ---- AES-256 ---- */

struct oc__cb_cipher {
    EVP_CIPHER_CTX *evp;
    int encrypt; /* the direction of the last init */
};

oc_status oc__cb_cipher_new(oc__cb_cipher **out, oc_error *err) {
    oc__cb_cipher *c = calloc(1, sizeof *c);
    *out = NULL;
    if (c) c->evp = EVP_CIPHER_CTX_new();
    if (!c || !c->evp) {
        free(c);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    *out = c;
    return OC_OK;
}

void oc__cb_cipher_free(oc__cb_cipher *c) {
    if (!c) return;
    EVP_CIPHER_CTX_free(c->evp); /* wipes the key schedule */
    free(c);
}

oc_status oc__cb_gcm_init(oc__cb_cipher *c, int encrypt, const uint8_t key[OC__CB_AES256_KEY_SIZE],
                          oc_error *err) {
    c->encrypt = encrypt != 0;
    OC_RETURN_ERROR_IF(
        EVP_CipherInit_ex(c->evp, EVP_aes_256_gcm(), NULL, NULL, NULL, c->encrypt) != 1 ||
            EVP_CIPHER_CTX_ctrl(c->evp, EVP_CTRL_GCM_SET_IVLEN, OC__CB_GCM_NONCE_SIZE, NULL) != 1 ||
            EVP_CipherInit_ex(c->evp, NULL, NULL, key, NULL, c->encrypt) != 1,
        err, OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-GCM setup failed");
    return OC_OK;
}

oc_status oc__cb_gcm_seal(oc__cb_cipher *c, const uint8_t nonce[OC__CB_GCM_NONCE_SIZE],
                          const void *aad, size_t aad_len, const void *in, size_t len, void *out,
                          uint8_t tag[OC__CB_GCM_TAG_SIZE], oc_error *err) {
    unsigned char scratch[16];
    int n = 0;
    int ok = aad_len <= INT_MAX && len <= INT_MAX &&
             EVP_EncryptInit_ex(c->evp, NULL, NULL, NULL, nonce) == 1 &&
             EVP_EncryptUpdate(c->evp, NULL, &n, aad, (int)aad_len) == 1;
    if (ok && len) ok = EVP_EncryptUpdate(c->evp, out, &n, in, (int)len) == 1 && (size_t)n == len;
    ok = ok && EVP_EncryptFinal_ex(c->evp, scratch, &n) == 1 && n == 0 &&
         EVP_CIPHER_CTX_ctrl(c->evp, EVP_CTRL_GCM_GET_TAG, OC__CB_GCM_TAG_SIZE, tag) == 1;
    OC_RETURN_ERROR_IF(!ok, err, OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-GCM encryption failed");
    return OC_OK;
}

oc_status oc__cb_gcm_open(oc__cb_cipher *c, const uint8_t nonce[OC__CB_GCM_NONCE_SIZE],
                          const void *aad, size_t aad_len, const void *in, size_t len,
                          const uint8_t tag[OC__CB_GCM_TAG_SIZE], void *out, int *authentic,
                          oc_error *err) {
    (void)err;
    unsigned char scratch[16];
    int n = 0;
    int ok = aad_len <= INT_MAX && len <= INT_MAX &&
             EVP_DecryptInit_ex(c->evp, NULL, NULL, NULL, nonce) == 1 &&
             EVP_DecryptUpdate(c->evp, NULL, &n, aad, (int)aad_len) == 1;
    if (ok && len) ok = EVP_DecryptUpdate(c->evp, out, &n, in, (int)len) == 1 && (size_t)n == len;
    ok = ok && EVP_CIPHER_CTX_ctrl(c->evp, EVP_CTRL_GCM_SET_TAG, OC__CB_GCM_TAG_SIZE,
                                   (void *)(uintptr_t)tag) == 1;
    *authentic = ok && EVP_DecryptFinal_ex(c->evp, scratch, &n) == 1;
    return OC_OK;
}

oc_status oc__cb_cbc_init(oc__cb_cipher *c, int encrypt, const uint8_t key[OC__CB_AES256_KEY_SIZE],
                          const uint8_t iv[OC__CB_CBC_BLOCK], oc_error *err) {
    c->encrypt = encrypt != 0;
    OC_RETURN_ERROR_IF(EVP_CipherInit_ex(c->evp, EVP_aes_256_cbc(), NULL, key, iv, c->encrypt) != 1,
                       err, OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-CBC setup failed");
    return OC_OK;
}

static oc_status cbc_failed(const oc__cb_cipher *c, oc_error *err) {
    return oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-CBC %s failed",
                    c->encrypt ? "encryption" : "decryption");
}

oc_status oc__cb_cbc_update(oc__cb_cipher *c, const void *in, size_t len, void *out,
                            size_t *out_len, oc_error *err) {
    int n = 0;
    *out_len = 0;
    if (len > INT_MAX) return cbc_failed(c, err);
    int ok = c->encrypt ? EVP_EncryptUpdate(c->evp, out, &n, in, (int)len)
                        : EVP_DecryptUpdate(c->evp, out, &n, in, (int)len);
    if (ok != 1 || n < 0) return cbc_failed(c, err);
    *out_len = (size_t)n;
    return OC_OK;
}

oc_status oc__cb_cbc_final(oc__cb_cipher *c, void *out, size_t *out_len, int *padding_ok,
                           oc_error *err) {
    int n = 0;
    *out_len = 0;
    *padding_ok = 1;
    if (c->encrypt) {
        if (EVP_EncryptFinal_ex(c->evp, out, &n) != 1 || n < 0) return cbc_failed(c, err);
    } else if (EVP_DecryptFinal_ex(c->evp, out, &n) != 1 || n < 0) {
        *padding_ok = 0;
        return OC_OK;
    }
    *out_len = (size_t)n;
    return OC_OK;
}
