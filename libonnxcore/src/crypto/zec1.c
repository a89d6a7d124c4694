/*
 * crypt/zec1.c - ONNXZEC1, our chunked AES-256-GCM format (spec/encryption.md C-10..C-45):
 * the header and its checks, the key schedule, sealing chunks as they fill and opening
 * them one at a time (bounded memory whatever the total).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/format.h"
#include "internal/error.h"

/* Header fields (C-10). */
enum {
    H_VERSION = 8,
    H_CIPHER = 9,
    H_KDF = 10,
    H_RESERVED = 11,
    H_ITERATIONS = 12,
    H_CHUNK_SIZE = 16,
    H_NONCE_PREFIX = 20,
    H_SALT = 24,
    H_KEY_CHECK = 40,
    H_DIGEST = 56,
    H_DIGESTED = 56 /* the digest covers bytes 0..55 */
};
#define ZEC1_VERSION           1u
#define ZEC1_CIPHER_AES256GCM  1u
#define ZEC1_KDF_PBKDF2_SHA256 1u
#define ZEC1_FINAL             1u
#define SALT_SIZE              OC__CRYPT_SALT_SIZE
#define KEY_SIZE               OC__CRYPT_KEY_SIZE
#define PREFIX_SIZE            4u
#define NONCE_SIZE             OC__CB_GCM_NONCE_SIZE
#define CHECK_SIZE             16u
#define FRAME_SIZE             OC_CRYPT_ZEC1_FRAME_SIZE
#define TAG_SIZE               OC_CRYPT_ZEC1_TAG_SIZE
/* A chunk authenticates the file header and its own frame (C-32). */
#define AAD_SIZE (OC_CRYPT_ZEC1_HEADER_SIZE + FRAME_SIZE)
/* Labels of the two keys derived from the PBKDF2 output (C-21, C-22). */
#define LABEL_CHUNK_KEY "ONNXZEC1 chunk key"
#define LABEL_KEY_CHECK "ONNXZEC1 key check"

static void put_u32le(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64le(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64le(const uint8_t *p) {
    return (uint64_t)get_u32le(p) | (uint64_t)get_u32le(p + 4) << 32;
}

/* ======================================================================================
 * Options and sizes
 * ====================================================================================== */

static oc_status zec1_resolve(const oc_crypt_options *o, oc__crypt_params *r, oc_error *err) {
    r->iterations = o && o->iterations ? o->iterations : OC_CRYPT_DEFAULT_ITERATIONS;
    r->chunk_size = o && o->chunk_size ? o->chunk_size : OC_CRYPT_DEFAULT_CHUNK_SIZE;
    OC_RETURN_RULE_IF(r->iterations > r->max_iterations, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                      "C-15", "%u PBKDF2 iterations: above the reader limit %u", r->iterations,
                      r->max_iterations);
    OC_RETURN_RULE_IF(
        r->chunk_size < OC_CRYPT_MIN_CHUNK_SIZE || r->chunk_size > OC_CRYPT_MAX_CHUNK_SIZE, err,
        OC_ERR_INVALID_ARG, OC_NO_OFFSET, "C-16", "chunk size %u is outside %u..%u", r->chunk_size,
        OC_CRYPT_MIN_CHUNK_SIZE, OC_CRYPT_MAX_CHUNK_SIZE);
    return OC_OK;
}

/* C-35: the header, then per chunk its frame, its bytes and its tag; at least one chunk. */
static oc_status zec1_encrypted_size(uint64_t size, const oc__crypt_params *r, uint64_t *out,
                                     oc_error *err) {
    uint64_t chunks = size ? (size - 1) / r->chunk_size + 1 : 1;
    uint64_t per = FRAME_SIZE + TAG_SIZE;
    OC_RETURN_ERROR_IF(chunks > (UINT64_MAX - OC_CRYPT_ZEC1_HEADER_SIZE) / per ||
                           size > UINT64_MAX - OC_CRYPT_ZEC1_HEADER_SIZE - chunks * per,
                       err, OC_ERR_LIMIT, OC_NO_OFFSET, "input too large");
    *out = OC_CRYPT_ZEC1_HEADER_SIZE + chunks * per + size;
    return OC_OK;
}

/* ======================================================================================
 * Keys
 * ====================================================================================== */

/* The chunk key and the key check from a passphrase and a header's salt and iteration
 * count: PBKDF2, then HMAC-SHA256(master, label) (C-20..C-22). */
static oc_status zec1_keys(const void *key, size_t key_len, const uint8_t *header,
                           uint8_t chunk_key[KEY_SIZE], uint8_t check[CHECK_SIZE], oc_error *err) {
    uint8_t master[KEY_SIZE], mac[OC__CB_SHA256_SIZE] = {0};
    oc_status st = oc__cb_pbkdf2_sha256(key, key_len, header + H_SALT, SALT_SIZE,
                                        get_u32le(header + H_ITERATIONS), master, KEY_SIZE, err);
    if (st == OC_OK)
        st = oc__cb_hmac_sha256(master, KEY_SIZE, LABEL_CHUNK_KEY, strlen(LABEL_CHUNK_KEY),
                                chunk_key, err);
    if (st == OC_OK)
        st = oc__cb_hmac_sha256(master, KEY_SIZE, LABEL_KEY_CHECK, strlen(LABEL_KEY_CHECK), mac,
                                err);
    memcpy(check, mac, CHECK_SIZE);
    oc__cb_cleanse(master, sizeof master);
    oc__cb_cleanse(mac, sizeof mac);
    return st;
}

/* The first 16 bytes of SHA-256 over the header's first 56 (C-12). */
static oc_status header_digest(const uint8_t *header, uint8_t out[CHECK_SIZE], oc_error *err) {
    uint8_t md[OC__CB_SHA256_SIZE];
    OC_FORWARD(oc__cb_sha256(header, H_DIGESTED, md, err));
    memcpy(out, md, CHECK_SIZE);
    return OC_OK;
}

/* The nonce of chunk `index`: the header's prefix, then the index (C-33). */
static void zec1_nonce(const uint8_t *header, uint64_t index, uint8_t nonce[NONCE_SIZE]) {
    memcpy(nonce, header + H_NONCE_PREFIX, PREFIX_SIZE);
    put_u64le(nonce + PREFIX_SIZE, index);
}

static void zec1_aad(const uint8_t *header, const uint8_t *frame, uint8_t aad[AAD_SIZE]) {
    memcpy(aad, header, OC_CRYPT_ZEC1_HEADER_SIZE);
    memcpy(aad + OC_CRYPT_ZEC1_HEADER_SIZE, frame, FRAME_SIZE);
}

/* ======================================================================================
 * Encryption
 * ====================================================================================== */

/* Encrypts the pending plaintext as chunk `index` and writes it (C-30..C-35). */
static oc_status zec1_seal(oc_crypt_writer *w, int final, oc_error *err) {
    uint8_t *f = w->out, nonce[NONCE_SIZE], aad[AAD_SIZE];
    put_u64le(f, w->index);
    put_u32le(f + 8, (uint32_t)w->fill);
    f[12] = final ? ZEC1_FINAL : 0;
    f[13] = f[14] = f[15] = 0;
    zec1_nonce(w->header, w->index, nonce);
    zec1_aad(w->header, f, aad);
    uint8_t *ct = f + FRAME_SIZE, *tag = ct + w->fill;
    OC_FORWARD(oc__cb_gcm_seal(w->cipher, nonce, aad, sizeof aad, w->plain, (size_t)w->fill, ct,
                               tag, err));
    OC_RETURN_RULE_IF(w->index == UINT64_MAX, err, OC_ERR_LIMIT, OC_NO_OFFSET, "C-37",
                      "too many chunks");
    w->index++;
    OC_FORWARD(w->write(w->write_ctx, f, FRAME_SIZE + w->fill + TAG_SIZE, err));
    w->fill = 0;
    return OC_OK;
}

static oc_status zec1_writer_start(oc_crypt_writer *w, const void *key, size_t key_len,
                                   const oc__crypt_params *r, oc_error *err) {
    w->chunk_size = r->chunk_size;
    w->plain = malloc(r->chunk_size);
    w->out_cap = FRAME_SIZE + (uint64_t)r->chunk_size + TAG_SIZE;
    w->out = malloc((size_t)w->out_cap);
    if (!w->plain || !w->out) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    uint8_t *h = w->header;
    memset(h, 0, sizeof w->header);
    memcpy(h, OC_CRYPT_ZEC1_MAGIC, OC_CRYPT_MAGIC_LEN);
    h[H_VERSION] = ZEC1_VERSION;
    h[H_CIPHER] = ZEC1_CIPHER_AES256GCM;
    h[H_KDF] = ZEC1_KDF_PBKDF2_SHA256;
    put_u32le(h + H_ITERATIONS, r->iterations);
    put_u32le(h + H_CHUNK_SIZE, r->chunk_size);
    OC_FORWARD(oc__cb_random(h + H_NONCE_PREFIX, PREFIX_SIZE, err));
    OC_FORWARD(oc__cb_random(h + H_SALT, SALT_SIZE, err));
    uint8_t chunk_key[KEY_SIZE];
    oc_status st = zec1_keys(key, key_len, h, chunk_key, h + H_KEY_CHECK, err);
    if (st == OC_OK) st = header_digest(h, h + H_DIGEST, err);
    if (st == OC_OK) st = oc__cb_gcm_init(w->cipher, 1, chunk_key, err);
    oc__cb_cleanse(chunk_key, sizeof chunk_key);
    return st;
}

static oc_status zec1_writer_write(oc_crypt_writer *w, const uint8_t *p, uint64_t size,
                                   oc_error *err) {
    while (size) {
        /* A full chunk is sealed only when more data comes: until then it may be the last. */
        if (w->fill == w->chunk_size) OC_FORWARD(zec1_seal(w, 0, err));
        uint64_t n = w->chunk_size - w->fill;
        if (n > size) n = size;
        memcpy(w->plain + w->fill, p, (size_t)n);
        w->fill += n;
        p += n;
        size -= n;
    }
    return OC_OK;
}

static oc_status zec1_writer_finish(oc_crypt_writer *w, oc_error *err) {
    return zec1_seal(w, 1, err);
}

/* ======================================================================================
 * Decryption
 * ====================================================================================== */

/* The header checks of C-40, in order; h holds the 72 header bytes. */
static oc_status zec1_check_header(const uint8_t *h, const oc__crypt_params *r, oc_error *err) {
    OC_RETURN_RULE_IF(h[H_VERSION] != ZEC1_VERSION, err, OC_ERR_UNSUPPORTED, H_VERSION, "C-11",
                      "ONNXZEC1 format version %u is not supported: this build reads version %u",
                      h[H_VERSION], ZEC1_VERSION);
    uint8_t digest[CHECK_SIZE];
    OC_FORWARD(header_digest(h, digest, err));
    OC_RETURN_RULE_IF(!oc__cb_equal(digest, h + H_DIGEST, CHECK_SIZE), err, OC_ERR_CHECKSUM, 0,
                      "C-12", "the ONNXZEC1 header is damaged: its digest does not match");
    OC_RETURN_RULE_IF(h[H_CIPHER] != ZEC1_CIPHER_AES256GCM, err, OC_ERR_UNSUPPORTED, H_CIPHER,
                      "C-13", "ONNXZEC1 cipher %u is not supported", h[H_CIPHER]);
    OC_RETURN_RULE_IF(h[H_KDF] != ZEC1_KDF_PBKDF2_SHA256, err, OC_ERR_UNSUPPORTED, H_KDF, "C-13",
                      "ONNXZEC1 key derivation %u is not supported", h[H_KDF]);
    OC_RETURN_RULE_IF(h[H_RESERVED] != 0, err, OC_ERR_MALFORMED, H_RESERVED, "C-14",
                      "ONNXZEC1 header: reserved byte is %u, not 0", h[H_RESERVED]);
    uint32_t iterations = get_u32le(h + H_ITERATIONS);
    uint32_t chunk_size = get_u32le(h + H_CHUNK_SIZE);
    OC_RETURN_RULE_IF(iterations == 0, err, OC_ERR_MALFORMED, H_ITERATIONS, "C-15",
                      "ONNXZEC1 header: zero PBKDF2 iterations");
    OC_RETURN_RULE_IF(iterations > r->max_iterations, err, OC_ERR_LIMIT, H_ITERATIONS, "C-15",
                      "ONNXZEC1 header asks for %u PBKDF2 iterations, more than the limit %u "
                      "(raise max_iterations to accept it)",
                      iterations, r->max_iterations);
    OC_RETURN_RULE_IF(chunk_size < OC_CRYPT_MIN_CHUNK_SIZE || chunk_size > OC_CRYPT_MAX_CHUNK_SIZE,
                      err, OC_ERR_MALFORMED, H_CHUNK_SIZE, "C-16",
                      "ONNXZEC1 header: chunk size %u is outside %u..%u", chunk_size,
                      OC_CRYPT_MIN_CHUNK_SIZE, OC_CRYPT_MAX_CHUNK_SIZE);
    return OC_OK;
}

typedef struct zec1_reader {
    oc__cb_cipher *cipher;
    uint8_t *in;    /* frame + ciphertext + tag of one chunk */
    uint8_t *plain; /* its plaintext */
    uint32_t chunk_size;
} zec1_reader;

static oc_status zec1_chunks(zec1_reader *z, oc__crypt_source *s, const uint8_t *h,
                             oc_write_fn write, void *write_ctx, oc_error *err) {
    const uint32_t cs = z->chunk_size;
    for (uint64_t i = 0;; i++) {
        uint64_t at = s->offset, got = 0;
        uint8_t *frame = z->in, *ct = z->in + FRAME_SIZE;
        OC_FORWARD(oc__crypt_fill(s, frame, FRAME_SIZE, &got, err));
        if (got == 0) {
            if (i == 0)
                return oc__fail_rule(err, OC_ERR_TRUNCATED, at, "C-41",
                                     "truncated: the input ends after the header, before the first "
                                     "chunk");
            return oc__fail_rule(err, OC_ERR_TRUNCATED, at, "C-41",
                                 "truncated: the input ends after chunk %llu, before the final "
                                 "chunk",
                                 (unsigned long long)(i - 1));
        }
        OC_RETURN_RULE_IF(got < FRAME_SIZE, err, OC_ERR_TRUNCATED, at, "C-41",
                          "truncated: the input ends inside the frame of chunk %llu",
                          (unsigned long long)i);
        uint64_t index = get_u64le(frame);
        uint32_t len = get_u32le(frame + 8);
        uint8_t flags = frame[12];
        OC_RETURN_RULE_IF(len > cs, err, OC_ERR_MALFORMED, at + 8, "C-31",
                          "chunk %llu declares %u bytes, more than the chunk size %u",
                          (unsigned long long)i, len, cs);
        uint64_t body = (uint64_t)len + TAG_SIZE;
        OC_FORWARD(oc__crypt_fill(s, ct, body, &got, err));
        OC_RETURN_RULE_IF(got < body, err, OC_ERR_TRUNCATED, at, "C-41",
                          "truncated: the input ends inside chunk %llu (%llu of its %llu bytes)",
                          (unsigned long long)i, (unsigned long long)(got + FRAME_SIZE),
                          (unsigned long long)(body + FRAME_SIZE));
        /* Authenticated as chunk `index` first: a genuine chunk in the wrong place is told
         * from a damaged one (C-42, C-43). */
        uint8_t nonce[NONCE_SIZE], aad[AAD_SIZE];
        int ok = 0;
        zec1_nonce(h, index, nonce);
        zec1_aad(h, frame, aad);
        OC_FORWARD(oc__cb_gcm_open(z->cipher, nonce, aad, sizeof aad, ct, len, ct + len, z->plain,
                                   &ok, err));
        if (index != i && ok) {
            if (index < i)
                return oc__fail_rule(
                    err, OC_ERR_INCONSISTENT, at, "C-42",
                    "chunk %llu appears again at position %llu: a duplicated chunk",
                    (unsigned long long)index, (unsigned long long)i);
            return oc__fail_rule(err, OC_ERR_INCONSISTENT, at, "C-42",
                                 "chunk %llu found at position %llu: chunks are missing or out of "
                                 "order",
                                 (unsigned long long)index, (unsigned long long)i);
        }
        OC_RETURN_RULE_IF(!ok, err, OC_ERR_CHECKSUM, at, "C-43",
                          "chunk %llu fails authentication: the data is damaged or was "
                          "tampered with",
                          (unsigned long long)i);
        int final = (flags & ZEC1_FINAL) != 0;
        OC_RETURN_RULE_IF((flags & ~ZEC1_FINAL) || frame[13] || frame[14] || frame[15], err,
                          OC_ERR_MALFORMED, at + 12, "C-44",
                          "chunk %llu: reserved frame bits are set", (unsigned long long)i);
        OC_RETURN_RULE_IF(!final && len != cs, err, OC_ERR_MALFORMED, at + 8, "C-44",
                          "chunk %llu is not the final chunk but holds %u bytes, not the chunk "
                          "size %u",
                          (unsigned long long)i, len, cs);
        OC_RETURN_RULE_IF(final && len == 0 && i > 0, err, OC_ERR_MALFORMED, at + 8, "C-44",
                          "chunk %llu is an empty final chunk after full ones",
                          (unsigned long long)i);
        if (len) OC_FORWARD(write(write_ctx, z->plain, len, err));
        if (final) {
            uint8_t extra;
            OC_FORWARD(oc__crypt_fill(s, &extra, 1, &got, err));
            OC_RETURN_RULE_IF(got != 0, err, OC_ERR_MALFORMED, s->offset - 1, "C-45",
                              "bytes follow the final chunk (chunk %llu): appended data",
                              (unsigned long long)i);
            return OC_OK;
        }
    }
}

static oc_status zec1_decrypt(oc__crypt_source *s, const uint8_t magic[OC_CRYPT_MAGIC_LEN],
                              oc_write_fn write, void *write_ctx, const void *key, size_t key_len,
                              const oc__crypt_params *r, oc_error *err) {
    uint8_t h[OC_CRYPT_ZEC1_HEADER_SIZE];
    memcpy(h, magic, OC_CRYPT_MAGIC_LEN);
    uint64_t got;
    OC_FORWARD(oc__crypt_fill(s, h + OC_CRYPT_MAGIC_LEN, sizeof h - OC_CRYPT_MAGIC_LEN, &got, err));
    OC_RETURN_RULE_IF(got < sizeof h - OC_CRYPT_MAGIC_LEN, err, OC_ERR_TRUNCATED, s->offset, "C-10",
                      "truncated: the input ends inside the ONNXZEC1 header (%llu of its %u bytes)",
                      (unsigned long long)(got + OC_CRYPT_MAGIC_LEN), OC_CRYPT_ZEC1_HEADER_SIZE);
    OC_FORWARD(zec1_check_header(h, r, err));
    uint8_t chunk_key[KEY_SIZE], check[CHECK_SIZE];
    OC_FORWARD(zec1_keys(key, key_len, h, chunk_key, check, err));
    int right = oc__cb_equal(check, h + H_KEY_CHECK, CHECK_SIZE);
    oc__cb_cleanse(check, sizeof check);
    if (!right) {
        oc__cb_cleanse(chunk_key, sizeof chunk_key);
        return oc__fail_rule(err, OC_ERR_BAD_KEY, OC_NO_OFFSET, "C-22",
                             "wrong passphrase: it does not match the key check of this ONNXZEC1 "
                             "file");
    }
    zec1_reader z = {0};
    z.chunk_size = get_u32le(h + H_CHUNK_SIZE);
    oc_status st = oc__cb_cipher_new(&z.cipher, err);
    if (st == OC_OK) {
        z.in = malloc(FRAME_SIZE + (size_t)z.chunk_size + TAG_SIZE);
        z.plain = malloc(z.chunk_size);
        if (!z.in || !z.plain) st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    if (st == OC_OK) st = oc__cb_gcm_init(z.cipher, 0, chunk_key, err);
    oc__cb_cleanse(chunk_key, sizeof chunk_key);
    if (st == OC_OK) st = zec1_chunks(&z, s, h, write, write_ctx, err);
    oc__cb_cipher_free(z.cipher);
    if (z.plain) oc__cb_cleanse(z.plain, z.chunk_size);
    free(z.plain);
    free(z.in);
    return st;
}

const oc__crypt_format_ops oc__crypt_zec1 = {
    .format = OC_CRYPT_ONNXZEC1,
    .header_size = OC_CRYPT_ZEC1_HEADER_SIZE,
    .resolve = zec1_resolve,
    .encrypted_size = zec1_encrypted_size,
    .writer_start = zec1_writer_start,
    .writer_write = zec1_writer_write,
    .writer_finish = zec1_writer_finish,
    .decrypt = zec1_decrypt,
};
