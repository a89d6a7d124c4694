/*
 * crypt/backend_openssl.c - the primitives of crypt/backend.h through OpenSSL (built with
 * ONNXZ_WITH_OPENSSL=ON): EVP ciphers and digests, PKCS5_PBKDF2_HMAC, HMAC, RAND_bytes,
 * OPENSSL_cleanse, CRYPTO_memcmp; and internal/signature.h's SHA-256 and signatures (PEM
 * keys, EVP_DigestSign). The only file of libonnxcore that includes OpenSSL.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

#include "crypto/backend.h"
#include "internal/error.h"
#include "internal/signature.h"

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

/* ---- SHA-256 piece by piece, signatures (internal/signature.h) ---- */

static oc_status sha256_failed(oc_error *err) {
    return oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "SHA-256 computation failed");
}

oc_status oc__sha256_new(oc__sha256 **out, oc_error *err) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    *out = NULL;
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        return sha256_failed(err);
    }
    *out = (oc__sha256 *)ctx;
    return OC_OK;
}

oc_status oc__sha256_update(void *h, const void *data, uint64_t size, oc_error *err) {
    const unsigned char *p = data;
    while (size) {
        size_t chunk = size > (1u << 30) ? (1u << 30) : (size_t)size;
        if (EVP_DigestUpdate((EVP_MD_CTX *)h, p, chunk) != 1) return sha256_failed(err);
        p += chunk;
        size -= chunk;
    }
    return OC_OK;
}

oc_status oc__sha256_final(oc__sha256 *h, uint8_t out[OC__SHA256_SIZE], oc_error *err) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_DigestFinal_ex((EVP_MD_CTX *)h, md, &n) != 1 || n != OC__SHA256_SIZE)
        return sha256_failed(err);
    memcpy(out, md, OC__SHA256_SIZE);
    return OC_OK;
}

oc_status oc__sha256_reset(oc__sha256 *h, oc_error *err) {
    if (EVP_DigestInit_ex((EVP_MD_CTX *)h, EVP_sha256(), NULL) != 1) return sha256_failed(err);
    return OC_OK;
}

void oc__sha256_free(oc__sha256 *h) { EVP_MD_CTX_free((EVP_MD_CTX *)h); }

struct oc__sig_key {
    EVP_PKEY *pkey;
    oc__sig_kind kind;
};

/* The passphrase callback: hands over the caller's passphrase, notes that one was asked. */
typedef struct pass_ctx {
    const void *pass;
    size_t len;
    bool asked;
} pass_ctx;

static int pass_cb(char *buf, int size, int rwflag, void *u) {
    pass_ctx *c = u;
    (void)rwflag;
    c->asked = true;
    if (!c->pass || c->len > (size_t)size) return -1;
    memcpy(buf, c->pass, c->len);
    return (int)c->len;
}

static oc_status key_kind(EVP_PKEY *pkey, oc__sig_kind *kind, oc_error *err) {
    int id = EVP_PKEY_get_base_id(pkey);
    if (id == EVP_PKEY_ED25519) {
        *kind = OC__SIG_ED25519;
        return OC_OK;
    }
    if (id == EVP_PKEY_EC) {
        char group[64] = "";
        size_t glen = 0;
        if (EVP_PKEY_get_utf8_string_param(pkey, "group", group, sizeof group, &glen) == 1 &&
            (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0)) {
            *kind = OC__SIG_ECDSA_P256;
            return OC_OK;
        }
        return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                        "an elliptic-curve key on curve '%s': only P-256 (prime256v1) is "
                        "supported, or Ed25519",
                        group[0] ? group : "?");
    }
    const char *type = EVP_PKEY_get0_type_name(pkey);
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                    "an %s key: only ECDSA P-256 and Ed25519 keys are supported",
                    type ? type : "unknown");
}

static oc_status key_new(EVP_PKEY *pkey, oc__sig_key **out, oc_error *err) {
    oc__sig_kind kind = OC__SIG_ED25519;
    oc_status st = key_kind(pkey, &kind, err);
    oc__sig_key *k = st == OC_OK ? calloc(1, sizeof *k) : NULL;
    if (st == OC_OK && !k) st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (st != OC_OK) {
        EVP_PKEY_free(pkey);
        return st;
    }
    k->pkey = pkey;
    k->kind = kind;
    *out = k;
    return OC_OK;
}

oc_status oc__sig_key_private(const void *pem, size_t len, const void *pass, size_t pass_len,
                              oc__sig_key **out, bool *needs_pass, oc_error *err) {
    *out = NULL;
    if (needs_pass) *needs_pass = false;
    OC_RETURN_ERROR_IF(len > INT_MAX, err, OC_ERR_LIMIT, OC_NO_OFFSET, "the key is too large");
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    OC_RETURN_ERROR_IF(!bio, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    pass_ctx c = {pass, pass_len, false};
    EVP_PKEY *pkey = PEM_read_bio_PrivateKey(bio, NULL, pass_cb, &c);
    BIO_free(bio);
    ERR_clear_error();
    if (!pkey) {
        if (c.asked && !pass) {
            if (needs_pass) *needs_pass = true;
            return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "the private key is encrypted and no passphrase was given");
        }
        if (c.asked)
            return oc__fail(err, OC_ERR_BAD_KEY, OC_NO_OFFSET,
                            "cannot decrypt the private key: wrong passphrase");
        return oc__fail(err, OC_ERR_MALFORMED, OC_NO_OFFSET,
                        "no PEM private key (such as `openssl genpkey` writes)");
    }
    return key_new(pkey, out, err);
}

oc_status oc__sig_key_public(const void *pem, size_t len, oc__sig_key **out, oc_error *err) {
    *out = NULL;
    OC_RETURN_ERROR_IF(len > INT_MAX, err, OC_ERR_LIMIT, OC_NO_OFFSET, "the key is too large");
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    OC_RETURN_ERROR_IF(!bio, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    EVP_PKEY *pkey = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ERR_clear_error();
    OC_RETURN_ERROR_IF(!pkey, err, OC_ERR_MALFORMED, OC_NO_OFFSET,
                       "no PEM public key (`-----BEGIN PUBLIC KEY-----`, such as `openssl pkey "
                       "-pubout` writes)");
    return key_new(pkey, out, err);
}

void oc__sig_key_free(oc__sig_key *key) {
    if (!key) return;
    EVP_PKEY_free(key->pkey);
    free(key);
}

oc__sig_kind oc__sig_key_kind(const oc__sig_key *key) { return key->kind; }

oc_status oc__sig_key_public_pem(const oc__sig_key *key, char **pem, size_t *len, oc_error *err) {
    *pem = NULL;
    *len = 0;
    BIO *bio = BIO_new(BIO_s_mem());
    OC_RETURN_ERROR_IF(!bio, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    char *data = NULL;
    long n = 0;
    int ok = PEM_write_bio_PUBKEY(bio, key->pkey) == 1 && (n = BIO_get_mem_data(bio, &data)) > 0;
    char *copy = ok ? malloc((size_t)n + 1) : NULL;
    if (copy) {
        memcpy(copy, data, (size_t)n);
        copy[n] = '\0';
    }
    BIO_free(bio);
    OC_RETURN_ERROR_IF(!copy, err, ok ? OC_ERR_NOMEM : OC_ERR_CRYPTO, OC_NO_OFFSET,
                       ok ? "out of memory" : "cannot write the public key");
    *pem = copy;
    *len = (size_t)n;
    return OC_OK;
}

/* ECDSA P-256 hashes with SHA-256; Ed25519 takes the message itself (no digest). */
static const EVP_MD *sig_md(const oc__sig_key *key) {
    return key->kind == OC__SIG_ECDSA_P256 ? EVP_sha256() : NULL;
}

oc_status oc__sig_sign(const oc__sig_key *key, const void *msg, size_t len, uint8_t **sig,
                       size_t *sig_len, oc_error *err) {
    *sig = NULL;
    *sig_len = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t n = 0;
    uint8_t *out = NULL;
    int ok = ctx && EVP_DigestSignInit(ctx, NULL, sig_md(key), NULL, key->pkey) == 1 &&
             EVP_DigestSign(ctx, NULL, &n, msg, len) == 1 && (out = malloc(n ? n : 1)) &&
             EVP_DigestSign(ctx, out, &n, msg, len) == 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    if (!ok) {
        free(out);
        return oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "signing failed");
    }
    *sig = out;
    *sig_len = n;
    return OC_OK;
}

oc_status oc__sig_verify(const oc__sig_key *key, const void *msg, size_t len, const uint8_t *sig,
                         size_t sig_len, bool *ok, oc_error *err) {
    *ok = false;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    OC_RETURN_ERROR_IF(!ctx, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (EVP_DigestVerifyInit(ctx, NULL, sig_md(key), NULL, key->pkey) == 1)
        *ok = EVP_DigestVerify(ctx, sig, sig_len, msg, len) == 1;
    EVP_MD_CTX_free(ctx);
    ERR_clear_error();
    return OC_OK;
}
