/*
 * crypt/cry1.c - ONNXCRY1, onnx_light's format (spec/encryption.md C-50..C-56): "ONNXCRY1",
 * a 16-byte salt, a 16-byte IV, then AES-256-CBC with PKCS#7 padding under a key from
 * PBKDF2-HMAC-SHA256 with 100,000 iterations. Streamed OC__CRYPT_PIECE_SIZE at a time.
 */
#include <stdlib.h>
#include <string.h>

#include "crypto/format.h"
#include "internal/error.h"

#define SALT_SIZE  OC__CRYPT_SALT_SIZE
#define KEY_SIZE   OC__CRYPT_KEY_SIZE
#define IV_SIZE    16u
#define CBC_BLOCK  OC__CB_CBC_BLOCK
#define PIECE_SIZE OC__CRYPT_PIECE_SIZE

static oc_status cry1_resolve(const oc_crypt_options *o, oc__crypt_params *r, oc_error *err) {
    OC_RETURN_RULE_IF(o && o->iterations && o->iterations != OC_CRYPT_CRY1_ITERATIONS, err,
                      OC_ERR_INVALID_ARG, OC_NO_OFFSET, "C-51",
                      "ONNXCRY1 always uses %u PBKDF2 iterations, not %u", OC_CRYPT_CRY1_ITERATIONS,
                      o->iterations);
    r->iterations = OC_CRYPT_CRY1_ITERATIONS;
    r->chunk_size = 0;
    return OC_OK;
}

/* C-50: the header, then the payload padded to the next whole block (a full block of
 * padding when it is whole already). */
static oc_status cry1_encrypted_size(uint64_t size, const oc__crypt_params *r, uint64_t *out,
                                     oc_error *err) {
    (void)r;
    uint64_t blocks = size / CBC_BLOCK + 1;
    OC_RETURN_ERROR_IF(blocks > (UINT64_MAX - OC_CRYPT_CRY1_HEADER_SIZE) / CBC_BLOCK, err,
                       OC_ERR_LIMIT, OC_NO_OFFSET, "input too large");
    *out = OC_CRYPT_CRY1_HEADER_SIZE + blocks * CBC_BLOCK;
    return OC_OK;
}

/* ---- encryption ---- */

static oc_status cry1_writer_start(oc_crypt_writer *w, const void *key, size_t key_len,
                                   const oc__crypt_params *r, oc_error *err) {
    (void)r;
    w->out_cap = PIECE_SIZE + CBC_BLOCK;
    w->out = malloc((size_t)w->out_cap);
    if (!w->out) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    uint8_t *h = w->header;
    memcpy(h, OC_CRYPT_CRY1_MAGIC, OC_CRYPT_MAGIC_LEN);
    OC_FORWARD(oc__cb_random(h + 8, SALT_SIZE, err));
    OC_FORWARD(oc__cb_random(h + 8 + SALT_SIZE, IV_SIZE, err));
    uint8_t k[KEY_SIZE];
    oc_status st = oc__cb_pbkdf2_sha256(key, key_len, h + 8, SALT_SIZE, OC_CRYPT_CRY1_ITERATIONS, k,
                                        KEY_SIZE, err);
    if (st == OC_OK) st = oc__cb_cbc_init(w->cipher, 1, k, h + 8 + SALT_SIZE, err);
    oc__cb_cleanse(k, sizeof k);
    return st;
}

static oc_status cry1_writer_write(oc_crypt_writer *w, const uint8_t *p, uint64_t size,
                                   oc_error *err) {
    while (size) {
        uint64_t n = size < PIECE_SIZE ? size : PIECE_SIZE;
        size_t len = 0;
        OC_FORWARD(oc__cb_cbc_update(w->cipher, p, (size_t)n, w->out, &len, err));
        if (len) OC_FORWARD(w->write(w->write_ctx, w->out, (uint64_t)len, err));
        p += n;
        size -= n;
    }
    return OC_OK;
}

static oc_status cry1_writer_finish(oc_crypt_writer *w, oc_error *err) {
    size_t len = 0;
    int ok = 1;
    OC_FORWARD(oc__cb_cbc_final(w->cipher, w->out, &len, &ok, err));
    return w->write(w->write_ctx, w->out, (uint64_t)len, err);
}

/* ---- decryption ---- */

static oc_status cry1_stream(oc__cb_cipher *c, oc__crypt_source *s, uint8_t *in, uint8_t *out,
                             oc_write_fn write, void *write_ctx, oc_error *err) {
    uint64_t total = 0, got = 0;
    size_t len = 0;
    for (;;) {
        OC_FORWARD(oc__crypt_fill(s, in, PIECE_SIZE, &got, err));
        if (got == 0) break;
        total += got;
        OC_FORWARD(oc__cb_cbc_update(c, in, (size_t)got, out, &len, err));
        if (len) OC_FORWARD(write(write_ctx, out, (uint64_t)len, err));
        if (got < PIECE_SIZE) break;
    }
    OC_RETURN_RULE_IF(total == 0, err, OC_ERR_TRUNCATED, s->offset, "C-52",
                      "truncated: the ONNXCRY1 input has no ciphertext after its header");
    OC_RETURN_RULE_IF(total % CBC_BLOCK, err, OC_ERR_TRUNCATED, s->offset, "C-52",
                      "truncated: the ONNXCRY1 ciphertext (%llu bytes) is not a whole number of "
                      "16-byte blocks",
                      (unsigned long long)total);
    int padding_ok = 0;
    OC_FORWARD(oc__cb_cbc_final(c, out, &len, &padding_ok, err));
    OC_RETURN_RULE_IF(!padding_ok, err, OC_ERR_BAD_KEY, OC_NO_OFFSET, "C-53",
                      "wrong passphrase, or damaged data: the ONNXCRY1 padding check failed "
                      "(the format has no other check)");
    if (len) OC_FORWARD(write(write_ctx, out, (uint64_t)len, err));
    return OC_OK;
}

static oc_status cry1_decrypt(oc__crypt_source *s, const uint8_t magic[OC_CRYPT_MAGIC_LEN],
                              oc_write_fn write, void *write_ctx, const void *key, size_t key_len,
                              const oc__crypt_params *r, oc_error *err) {
    (void)magic, (void)r; /* no header field to check against the reader's limits */
    uint8_t h[SALT_SIZE + IV_SIZE];
    uint64_t got;
    OC_FORWARD(oc__crypt_fill(s, h, sizeof h, &got, err));
    OC_RETURN_RULE_IF(got < sizeof h, err, OC_ERR_TRUNCATED, s->offset, "C-50",
                      "truncated: the input ends inside the ONNXCRY1 header (%llu of its %u bytes)",
                      (unsigned long long)(got + OC_CRYPT_MAGIC_LEN), OC_CRYPT_CRY1_HEADER_SIZE);
    uint8_t k[KEY_SIZE];
    OC_FORWARD(oc__cb_pbkdf2_sha256(key, key_len, h, SALT_SIZE, OC_CRYPT_CRY1_ITERATIONS, k,
                                    KEY_SIZE, err));
    oc__cb_cipher *c = NULL;
    uint8_t *in = NULL, *out = NULL;
    oc_status st = oc__cb_cipher_new(&c, err);
    if (st == OC_OK) {
        in = malloc(PIECE_SIZE);
        out = malloc(PIECE_SIZE + CBC_BLOCK);
        if (!in || !out) st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    if (st == OC_OK) st = oc__cb_cbc_init(c, 0, k, h + SALT_SIZE, err);
    oc__cb_cleanse(k, sizeof k);
    if (st == OC_OK) st = cry1_stream(c, s, in, out, write, write_ctx, err);
    oc__cb_cipher_free(c);
    if (out) oc__cb_cleanse(out, PIECE_SIZE + CBC_BLOCK);
    free(in);
    free(out);
    return st;
}

const oc__crypt_format_ops oc__crypt_cry1 = {
    .format = OC_CRYPT_ONNXCRY1,
    .header_size = OC_CRYPT_CRY1_HEADER_SIZE,
    .resolve = cry1_resolve,
    .encrypted_size = cry1_encrypted_size,
    .writer_start = cry1_writer_start,
    .writer_write = cry1_writer_write,
    .writer_finish = cry1_writer_finish,
    .decrypt = cry1_decrypt,
};
