/*
 * tests/fuzz/fuzz_decrypt.c - decryption of ONNXZEC1 / ONNXCRY1 input (onnxcore/crypto.h).
 *
 * Byte 0 picks the mode:
 *   bit 0 clear - raw: the rest is the ciphertext. Decrypted from memory and as a stream
 *             (read in pieces of 1 + byte-0-derived bytes); both must give the same status
 *             and offset, or the same plaintext. The reader accepts at most 64 PBKDF2
 *             iterations (more: OC_ERR_LIMIT, C-15) and only ONNXZEC1, except with bit 1
 *             set for inputs under 40 bytes (ONNXCRY1 costs 100,000 iterations as soon as
 *             its 40-byte header is complete).
 *   bit 0 set - structured: byte 1 picks the chunk size (64, 65, 100, 128), bytes 2..6 an
 *             edit, the rest is the plaintext. It is encrypted as ONNXZEC1 (1 iteration),
 *             edited, decrypted. No edit: the plaintext comes back. An edit must be refused
 *             with the status its rule gives: truncation TRUNCATED (C-41; MALFORMED when
 *             nothing is left), appended bytes MALFORMED (C-45), a chunk dropped, repeated
 *             or swapped INCONSISTENT (C-42) or TRUNCATED (the final one dropped), a flipped
 *             bit any error at all (never OC_OK).
 * Every failure fills its error record properly, with a status crypto.h documents.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include <onnxcore/crypto.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char key[] = "fuzz passphrase";
#define KEY_LEN (sizeof key - 1)

static int documented(oc_status st) {
    return st == OC_ERR_BAD_KEY || st == OC_ERR_CHECKSUM || st == OC_ERR_TRUNCATED ||
           st == OC_ERR_INCONSISTENT || st == OC_ERR_MALFORMED || st == OC_ERR_UNSUPPORTED ||
           st == OC_ERR_LIMIT || st == OC_ERR_NOMEM;
}

typedef struct reader {
    const uint8_t *data;
    uint64_t size, pos, piece;
} reader;

static oc_status read_piece(void *ctx, void *buf, uint64_t cap, uint64_t *got, oc_error *err) {
    (void)err;
    reader *r = ctx;
    uint64_t n = r->size - r->pos;
    if (n > cap) n = cap;
    if (n > r->piece) n = r->piece;
    if (n) memcpy(buf, r->data + r->pos, (size_t)n);
    r->pos += n;
    *got = n;
    return OC_OK;
}

typedef struct sink {
    uint8_t *data;
    uint64_t size;
} sink;

static oc_status collect(void *ctx, const void *data, uint64_t size, oc_error *err) {
    (void)err;
    sink *s = ctx;
    uint8_t *nd = realloc(s->data, (size_t)(s->size + size));
    FUZZ_CHECK(nd != NULL, "out of memory");
    memcpy(nd + s->size, data, (size_t)size);
    s->data = nd;
    s->size += size;
    return OC_OK;
}

/* Decrypts from memory and as a stream; they must agree. Returns the status; on success
 * *plain holds the plaintext (caller frees). */
static oc_status decrypt_both(const uint8_t *ct, uint64_t n, const oc_crypt_options *o,
                              uint64_t piece, sink *plain) {
    oc_bytes out;
    memset(&out, 0, sizeof out);
    oc_error err;
    oc_error_clear(&err);
    oc_status st = oc_crypt_decrypt_memory(ct, n, key, KEY_LEN, o, &out, &err);
    if (st != OC_OK) {
        fuzz_check_error(st, &err, UINT64_MAX);
        FUZZ_CHECK(documented(st), "decrypt: undocumented status %s (%s)", oc_status_name(st),
                   err.message);
        FUZZ_CHECK(err.offset == OC_NO_OFFSET || err.offset <= n,
                   "error offset %llu past the %llu-byte input (%s)",
                   (unsigned long long)err.offset, (unsigned long long)n, err.message);
        FUZZ_CHECK(out.size == 0 && out.data == NULL, "failed decryption left a span");
    } else {
        FUZZ_CHECK(out.size == 0 || (out.data && out.mode == OC_BYTES_SHARED && out.owner),
                   "decrypted span is not a shared buffer");
    }
    reader r = {ct, n, 0, piece};
    sink s = {NULL, 0};
    oc_error err2;
    oc_error_clear(&err2);
    oc_status st2 = oc_crypt_decrypt_stream(read_piece, &r, collect, &s, key, KEY_LEN, o, &err2);
    FUZZ_CHECK(st2 == st, "memory: %s (%s); stream in %llu-byte pieces: %s (%s)",
               oc_status_name(st), err.message, (unsigned long long)piece, oc_status_name(st2),
               err2.message);
    if (st == OC_OK) {
        FUZZ_CHECK(s.size == out.size &&
                       (s.size == 0 || memcmp(s.data, out.data, (size_t)s.size) == 0),
                   "memory and stream decryption give different plaintexts");
        *plain = s;
    } else {
        FUZZ_CHECK(err2.offset == err.offset, "error offsets differ: memory %llu, stream %llu",
                   (unsigned long long)err.offset, (unsigned long long)err2.offset);
        free(s.data);
    }
    oc_bytes_release(&out);
    return st;
}

enum { E_NONE, E_FLIP, E_TRUNCATE, E_APPEND, E_DROP, E_REPEAT, E_SWAP, NEDITS };

static void structured(const uint8_t *data, size_t size) {
    if (size < 7) return;
    static const uint32_t chunk_sizes[4] = {64, 65, 100, 128};
    uint32_t cs = chunk_sizes[data[1] & 3];
    int edit = data[2] % NEDITS;
    uint32_t pos = (uint32_t)data[3] | (uint32_t)data[4] << 8 | (uint32_t)data[5] << 16;
    uint8_t bit = (uint8_t)(1u << (data[6] & 7));
    const uint8_t *plain = data + 7;
    uint64_t plen = size - 7;

    oc_crypt_options o;
    oc_crypt_options_init(&o);
    o.format = OC_CRYPT_ONNXZEC1;
    o.iterations = 1;
    o.chunk_size = cs;
    o.max_iterations = 64;
    void *ctv = NULL;
    uint64_t n = 0;
    oc_error err;
    oc_error_clear(&err);
    oc_status st = oc_crypt_encrypt_memory(plain, plen, key, KEY_LEN, &o, &ctv, &n, &err);
    FUZZ_CHECK(st == OC_OK, "encrypt: %s", err.message);
    uint64_t chunks = plen ? (plen - 1) / cs + 1 : 1, per = 32u + cs;
    FUZZ_CHECK(n == 72 + chunks * 32 + plen, "ciphertext of %llu bytes for %llu plaintext bytes",
               (unsigned long long)n, (unsigned long long)plen);

    /* room for one more chunk (repeat) or byte (append) */
    uint8_t *ct = malloc((size_t)(n + per + 1));
    FUZZ_CHECK(ct != NULL, "out of memory");
    memcpy(ct, ctv, (size_t)n);
    free(ctv);
    uint64_t k = chunks > 1 ? pos % (chunks - 1) : 0; /* a full (non-final) chunk */
    oc_status want = OC_OK; /* OC_OK: success; OC_ERR_IO here means "any error" */
    switch (edit) {
    case E_FLIP:
        ct[pos % n] ^= bit;
        want = OC_ERR_IO;
        break;
    case E_TRUNCATE:
        n = pos % n;
        want = n ? OC_ERR_TRUNCATED : OC_ERR_MALFORMED;
        break;
    case E_APPEND:
        ct[n++] = bit;
        want = OC_ERR_MALFORMED;
        break;
    case E_DROP: /* a full chunk, or the final one */
        if (chunks > 1 && (pos & 1)) {
            memmove(ct + 72 + k * per, ct + 72 + (k + 1) * per, (size_t)(n - 72 - (k + 1) * per));
            n -= per;
            want = OC_ERR_INCONSISTENT;
        } else {
            n -= 32 + (plen - (chunks - 1) * cs); /* the final chunk's frame, bytes and tag */
            want = OC_ERR_TRUNCATED;
        }
        break;
    case E_REPEAT:
        if (chunks < 2) {
            free(ct);
            return;
        }
        memmove(ct + 72 + (k + 1) * per, ct + 72 + k * per, (size_t)(n - 72 - k * per));
        n += per;
        want = OC_ERR_INCONSISTENT;
        break;
    case E_SWAP:
        if (chunks < 3) {
            free(ct);
            return;
        }
        k = pos % (chunks - 2);
        {
            uint8_t *a = ct + 72 + k * per, *b = a + per, tmp[160];
            memcpy(tmp, a, (size_t)per);
            memcpy(a, b, (size_t)per);
            memcpy(b, tmp, (size_t)per);
        }
        want = OC_ERR_INCONSISTENT;
        break;
    default:
        break;
    }
    sink out = {NULL, 0};
    st = decrypt_both(ct, n, &o, 1 + (uint64_t)(data[0] >> 1) * 3, &out);
    if (want == OC_OK) {
        FUZZ_CHECK(st == OC_OK, "an untouched ciphertext does not decrypt: %s", oc_status_name(st));
        FUZZ_CHECK(out.size == plen && (plen == 0 || memcmp(out.data, plain, (size_t)plen) == 0),
                   "decryption does not give the plaintext back");
    } else if (want == OC_ERR_IO) {
        FUZZ_CHECK(st != OC_OK, "a flipped bit (byte %llu of %llu) went unnoticed",
                   (unsigned long long)(pos % n), (unsigned long long)n);
    } else {
        FUZZ_CHECK(st == want, "edit %d (chunk %llu of %llu): expected %s, got %s", edit,
                   (unsigned long long)k, (unsigned long long)chunks, oc_status_name(want),
                   oc_status_name(st));
    }
    free(out.data);
    free(ct);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || !oc_crypt_available()) return 0;
    if (data[0] & 1) {
        structured(data, size);
        return 0;
    }
    oc_crypt_options o;
    oc_crypt_options_init(&o);
    /* ONNXCRY1 always derives its key with 100,000 iterations: only inputs too short to
     * get there (magic and header checks) are let through, else fuzzing would crawl. */
    o.format = (data[0] & 2) && size - 1 < 40 ? OC_CRYPT_NONE : OC_CRYPT_ONNXZEC1;
    o.max_iterations = 64;
    sink out = {NULL, 0};
    decrypt_both(data + 1, size - 1, &o, 1 + (uint64_t)(data[0] >> 2) * 7, &out);
    free(out.data);
    return 0;
}
