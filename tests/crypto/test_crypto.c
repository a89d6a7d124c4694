/*
 * test_crypto.c - the C API of onnxcore/crypto.h (spec/encryption.md), in-process:
 * round trips of both formats through memory, files, the streaming writer and reader;
 * exact sizes; every single-bit flip and every truncation of small ONNXZEC1 files, each
 * with the status its rule gives; reordered, duplicated, missing and spliced chunks;
 * appended bytes; crafted headers; option checks; encrypted models with zero-copy
 * tensors; an encrypted .onnxz archive opened in memory through its owner token; atomic
 * file output. Built without OpenSSL it checks that every call says so.
 *
 * Usage: test_crypto <scratch-dir>
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <onnxcore/crypto.h>
#include <onnxcore/crypto_model.h>
#include <onnxcore/onnxcore.h>
#include <onnxz/archive.h>
#include <onnxz/zip.h>

#include <onnxz/encrypted.h> /* the proposed libonnxz glue */
#include "check.h"
#include "testdir.h"
#include "testmodel.h"
#include "internal/onnxcore_atomic.h" /* internal: the static library's */

#ifdef ONNXZ_HAVE_OPENSSL
#include <openssl/evp.h>
#endif

static char dir[4096];
/* ONNXZ_TEST_REDUCED=1 (tests/CMakeLists.txt, under valgrind): every ONNXCRY1 key derivation
 * (100,000 PBKDF2 rounds, fixed by the format) takes seconds and one at the default 600,000
 * a quarter of a minute, so test_roundtrip_cry1 runs three of its sizes, test_default_options
 * skips its wrong-passphrase decryption, and test_cry1_hostile truncates at each block
 * boundary and one byte past the header and before the end only (the other lengths are
 * "not a whole block" as well). */
static int reduced;

static void pathof(char *out, size_t cap, const char *name) {
    snprintf(out, cap, "%s/%s", dir, name);
}

static const char PASS[] = "correct horse battery staple";
#define PASSLEN (sizeof PASS - 1)
#ifdef ONNXZ_HAVE_OPENSSL
static const char WRONG[] = "correct horse battery stapler";
#define WRONGLEN (sizeof WRONG - 1)

static uint8_t pattern(uint64_t i, unsigned seed) { return (uint8_t)(i * 131u + seed + (i >> 9)); }

static uint8_t *make_plain(uint64_t n, unsigned seed) {
    uint8_t *p = malloc(n ? (size_t)n : 1);
    for (uint64_t i = 0; p && i < n; i++) p[i] = pattern(i, seed);
    return p;
}

/* Fast options for tests: 1 PBKDF2 iteration, 64-byte chunks. */
static oc_crypt_options fast(uint32_t chunk) {
    oc_crypt_options o = OC_CRYPT_OPTIONS_INIT;
    o.iterations = 1;
    o.chunk_size = chunk;
    return o;
}

static oc_crypt_options cry1(void) {
    oc_crypt_options o = OC_CRYPT_OPTIONS_INIT;
    o.format = OC_CRYPT_ONNXCRY1;
    return o;
}

static uint64_t zec1_size(uint64_t n, uint64_t cs) {
    uint64_t chunks = n ? (n + cs - 1) / cs : 1;
    return 72 + chunks * 32 + n;
}

static uint64_t cry1_size(uint64_t n) { return 40 + (n / 16 + 1) * 16; }

/* Decrypts data and compares with want; returns the status. */
static oc_status dec_status(const void *data, uint64_t size, const void *key, size_t klen,
                            const oc_crypt_options *o, oc_error *err) {
    oc_bytes b = {0};
    oc_error_clear(err);
    oc_status st = oc_crypt_decrypt_memory(data, size, key, klen, o, &b, err);
    oc_bytes_release(&b);
    return st;
}

static void check_plain(const oc_bytes *b, const uint8_t *want, uint64_t n) {
    CHECK_EQ(b->size, n);
    if (b->size == n) CHECK_MEM_EQ(b->data, want, n);
    if (n) {
        CHECK_EQ(b->mode, OC_BYTES_SHARED);
        CHECK(b->owner != NULL);
        CHECK(((uintptr_t)b->data % 64) == 0);
    }
}

#endif /* ONNXZ_HAVE_OPENSSL */

/* ---- without OpenSSL ---- */

static void test_unavailable(void) {
    oc_error err;
    oc_error_clear(&err);
    void *out = NULL;
    uint64_t n = 0;
    oc_bytes b = {0};
    oc_crypt_writer *w = NULL;
    CHECK_STATUS(oc_crypt_encrypt_memory("x", 1, PASS, PASSLEN, NULL, &out, &n, &err),
                 OC_ERR_UNSUPPORTED, &err);
    CHECK(strstr(err.message, "built without OpenSSL") != NULL);
    CHECK_STATUS(oc_crypt_decrypt_memory("ONNXZEC1", 8, PASS, PASSLEN, NULL, &b, &err),
                 OC_ERR_UNSUPPORTED, &err);
    CHECK_STATUS(oc_crypt_writer_open(oc_atomic_write, NULL, PASS, PASSLEN, NULL, &w, &err),
                 OC_ERR_UNSUPPORTED, &err);
    CHECK(w == NULL);
    char p[4200], q[4200];
    pathof(p, sizeof p, "plain.bin");
    pathof(q, sizeof q, "enc.bin");
    CHECK(td_write(p, "hello", 5) == 0);
    CHECK_STATUS(oc_crypt_encrypt_file(p, q, PASS, PASSLEN, NULL, &err), OC_ERR_UNSUPPORTED, &err);
    CHECK_STATUS(oc_crypt_decrypt_file(p, q, PASS, PASSLEN, NULL, &err), OC_ERR_UNSUPPORTED, &err);
    CHECK_STATUS(oc_crypt_decrypt_file_to_memory(p, PASS, PASSLEN, NULL, &b, &err),
                 OC_ERR_UNSUPPORTED, &err);
    oc_model *m = oc_model_new(), *l = NULL;
    CHECK_STATUS(oc_crypt_save_model_file(m, q, PASS, PASSLEN, NULL, NULL, &err),
                 OC_ERR_UNSUPPORTED, &err);
    CHECK_STATUS(oc_crypt_save_model_memory(m, PASS, PASSLEN, NULL, &out, &n, &err),
                 OC_ERR_UNSUPPORTED, &err);
    CHECK_STATUS(oc_crypt_load_model_file(p, PASS, PASSLEN, NULL, NULL, &l, &err),
                 OC_ERR_UNSUPPORTED, &err);
    CHECK_STATUS(oc_crypt_load_model_memory("ONNXZEC1", 8, PASS, PASSLEN, NULL, NULL, &l, &err),
                 OC_ERR_UNSUPPORTED, &err);
    CHECK(strstr(err.message, "built without OpenSSL") != NULL);
    oc_model_free(m);
    CHECK_EQ(td_count(dir, 0), 1); /* nothing written but plain.bin */
    /* Detection works all the same. */
    CHECK_EQ(oc_crypt_detect("ONNXZEC1....", 12), OC_CRYPT_ONNXZEC1);
    CHECK_EQ(oc_crypt_detect("ONNXCRY1", 8), OC_CRYPT_ONNXCRY1);
    oc_crypt_writer_free(NULL);
}

/* ---- detection ---- */

static void test_detect(void) {
    CHECK_EQ(oc_crypt_detect(NULL, 0), OC_CRYPT_NONE);
    CHECK_EQ(oc_crypt_detect("ONNXZEC", 7), OC_CRYPT_NONE);
    CHECK_EQ(oc_crypt_detect("ONNXZEC1", 8), OC_CRYPT_ONNXZEC1);
    CHECK_EQ(oc_crypt_detect("ONNXCRY1xyz", 11), OC_CRYPT_ONNXCRY1);
    CHECK_EQ(oc_crypt_detect("ONNXCRY2", 8), OC_CRYPT_NONE);
    CHECK_EQ(oc_crypt_detect("PK\3\4....", 8), OC_CRYPT_NONE);
    CHECK(oc_crypt_is_zip("PK\3\4", 4));
    CHECK(oc_crypt_is_zip("PK\5\6", 4));
    CHECK(!oc_crypt_is_zip("PK\1\2", 4));
    CHECK(!oc_crypt_is_zip("PK", 2));
    CHECK(!strcmp(oc_crypt_format_name(OC_CRYPT_ONNXZEC1), "ONNXZEC1"));
    CHECK(!strcmp(oc_crypt_format_name(OC_CRYPT_ONNXCRY1), "ONNXCRY1"));
    CHECK(!strcmp(oc_crypt_format_name(OC_CRYPT_NONE), "none"));
    char p[4200];
    oc_error err;
    oc_crypt_format f = OC_CRYPT_ONNXZEC1;
    pathof(p, sizeof p, "detect.bin");
    CHECK(td_write(p, "ONNXCRY1 and more", 17) == 0);
    CHECK_OK(oc_crypt_detect_file(p, &f, &err), &err);
    CHECK_EQ(f, OC_CRYPT_ONNXCRY1);
    CHECK(td_write(p, "ONNX", 4) == 0); /* a cut magic (C-1) */
    CHECK_STATUS(oc_crypt_detect_file(p, &f, &err), OC_ERR_TRUNCATED, &err);
    CHECK_EQ(f, OC_CRYPT_NONE);
    CHECK(td_write(p, "PK", 2) == 0); /* short, but no magic */
    CHECK_OK(oc_crypt_detect_file(p, &f, &err), &err);
    CHECK_EQ(f, OC_CRYPT_NONE);
    remove(p);
    pathof(p, sizeof p, "missing.bin");
    CHECK_STATUS(oc_crypt_detect_file(p, &f, &err), OC_ERR_NOT_FOUND, &err);
}

#ifdef ONNXZ_HAVE_OPENSSL

/* ---- round trips ---- */

static void roundtrip(const oc_crypt_options *o, uint64_t n, uint64_t want_size) {
    uint8_t *plain = make_plain(n, (unsigned)n);
    void *enc = NULL;
    uint64_t size = 0;
    oc_error err;
    oc_error_clear(&err);
    if (!CHECK_OK(oc_crypt_encrypt_memory(plain, n, PASS, PASSLEN, o, &enc, &size, &err), &err)) {
        free(plain);
        return;
    }
    CHECK_EQ(size, want_size);
    CHECK_EQ(oc_crypt_detect(enc, size), o->format ? o->format : OC_CRYPT_ONNXZEC1);
    oc_bytes b = {0};
    CHECK_OK(oc_crypt_decrypt_memory(enc, size, PASS, PASSLEN, NULL, &b, &err), &err);
    check_plain(&b, plain, n);
    oc_bytes_release(&b);
    /* A second encryption of the same bytes differs (fresh salt, IV / nonce prefix). */
    void *enc2 = NULL;
    uint64_t size2 = 0;
    CHECK_OK(oc_crypt_encrypt_memory(plain, n, PASS, PASSLEN, o, &enc2, &size2, &err), &err);
    CHECK(size2 == size && enc2 && memcmp(enc, enc2, (size_t)size) != 0);
    free(enc2);
    free(enc);
    free(plain);
}

static void test_roundtrip_zec1(void) {
    static const uint64_t sizes[] = {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 192, 1000, 4099};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        oc_crypt_options o = fast(64);
        roundtrip(&o, sizes[i], zec1_size(sizes[i], 64));
        o = fast(1000);
        roundtrip(&o, sizes[i], zec1_size(sizes[i], 1000));
    }
    /* Empty payload: one empty final chunk; an exact multiple: a full final chunk. */
    oc_crypt_options o = fast(64);
    CHECK_EQ(zec1_size(0, 64), 104);
    CHECK_EQ(zec1_size(128, 64), 72 + 2 * 32 + 128);
    roundtrip(&o, 64 * 3, 72 + 3 * 32 + 192);
}

static void test_roundtrip_cry1(void) {
    static const uint64_t sizes[] = {0, 16, 1000, 1, 15, 17, 31, 32, 33}; /* reduced: 3 */
    oc_crypt_options o = cry1();
    for (size_t i = 0; i < (reduced ? 3 : sizeof sizes / sizeof *sizes); i++)
        roundtrip(&o, sizes[i], cry1_size(sizes[i]));
    CHECK_EQ(cry1_size(0), 56);
    /* ONNXCRY1's iteration count is fixed; the chunk size does not apply. */
    oc_error err;
    void *enc = NULL;
    uint64_t n = 0;
    o.iterations = 1000;
    CHECK_STATUS(oc_crypt_encrypt_memory("x", 1, PASS, PASSLEN, &o, &enc, &n, &err),
                 OC_ERR_INVALID_ARG, &err);
    o.iterations = OC_CRYPT_CRY1_ITERATIONS;
    o.chunk_size = 12345;
    CHECK_OK(oc_crypt_encrypt_memory("x", 1, PASS, PASSLEN, &o, &enc, &n, &err), &err);
    CHECK_EQ(n, 56);
    free(enc);
}

static void test_default_options(void) {
    /* The defaults: ONNXZEC1, 600,000 iterations, 1 MiB chunks. */
    uint64_t n = (1u << 20) * 2 + 5;
    uint8_t *plain = make_plain(n, 9);
    void *enc = NULL;
    uint64_t size = 0;
    oc_error err;
    clock_t t0 = clock();
    REQUIRE(
        CHECK_OK(oc_crypt_encrypt_memory(plain, n, PASS, PASSLEN, NULL, &enc, &size, &err), &err));
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    const uint8_t *h = enc;
    CHECK_EQ(size, zec1_size(n, 1u << 20));
    CHECK_EQ(h[8], 1);  /* version */
    CHECK_EQ(h[9], 1);  /* AES-256-GCM */
    CHECK_EQ(h[10], 1); /* PBKDF2-HMAC-SHA256 */
    CHECK_EQ((uint32_t)h[12] | (uint32_t)h[13] << 8 | (uint32_t)h[14] << 16 | (uint32_t)h[15] << 24,
             600000u);
    CHECK_EQ((uint32_t)h[16] | (uint32_t)h[17] << 8 | (uint32_t)h[18] << 16 | (uint32_t)h[19] << 24,
             1u << 20);
    oc_bytes b = {0};
    CHECK_OK(oc_crypt_decrypt_memory(enc, size, PASS, PASSLEN, NULL, &b, &err), &err);
    check_plain(&b, plain, n);
    oc_bytes_release(&b);
    if (!reduced)
        CHECK_STATUS(dec_status(enc, size, WRONG, WRONGLEN, NULL, &err), OC_ERR_BAD_KEY, &err);
    printf("    (600,000-iteration PBKDF2 + 2 MiB: %.2f s to encrypt)\n", secs);
    free(enc);
    free(plain);
}

/* The writer with awkward write sizes, and the reader with a 1-byte-at-a-time source. */
typedef struct trickle {
    const uint8_t *p;
    uint64_t n, pos, step;
} trickle;

static oc_status trickle_read(void *ctx, void *buf, uint64_t cap, uint64_t *got, oc_error *err) {
    (void)err;
    trickle *t = ctx;
    uint64_t k = t->n - t->pos;
    if (k > t->step) k = t->step;
    if (k > cap) k = cap;
    memcpy(buf, t->p + t->pos, (size_t)k);
    t->pos += k;
    *got = k;
    return OC_OK;
}

typedef struct growbuf {
    uint8_t *p;
    uint64_t n, cap;
} growbuf;

static oc_status grow_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    (void)err;
    growbuf *g = ctx;
    if (g->n + size > g->cap) {
        uint64_t cap = (g->n + size) * 2 + 64;
        uint8_t *q = realloc(g->p, (size_t)cap);
        if (!q) return OC_ERR_NOMEM;
        g->p = q;
        g->cap = cap;
    }
    if (size) memcpy(g->p + g->n, data, (size_t)size);
    g->n += size;
    return OC_OK;
}

static void stream_case(oc_crypt_options o, uint64_t n, uint64_t step) {
    uint8_t *plain = make_plain(n, 3);
    growbuf enc = {0}, dec = {0};
    oc_error err;
    oc_crypt_writer *w = NULL;
    REQUIRE(CHECK_OK(oc_crypt_writer_open(grow_write, &enc, PASS, PASSLEN, &o, &w, &err), &err));
    for (uint64_t i = 0; i < n;) {
        uint64_t k = n - i < step ? n - i : step;
        CHECK_OK(oc_crypt_writer_write(w, plain + i, k, &err), &err);
        CHECK_OK(oc_crypt_writer_write(w, NULL, 0, &err), &err); /* empty writes are fine */
        i += k;
    }
    CHECK_OK(oc_crypt_writer_finish(w, &err), &err);
    CHECK_STATUS(oc_crypt_writer_write(w, "x", 1, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oc_crypt_writer_finish(w, &err), OC_ERR_INVALID_ARG, &err);
    oc_crypt_writer_free(w);
    CHECK_EQ(enc.n, o.format == OC_CRYPT_ONNXCRY1 ? cry1_size(n) : zec1_size(n, o.chunk_size));
    trickle t = {enc.p, enc.n, 0, step};
    CHECK_OK(oc_crypt_decrypt_stream(trickle_read, &t, grow_write, &dec, PASS, PASSLEN, NULL, &err),
             &err);
    CHECK_EQ(dec.n, n);
    if (dec.n == n) CHECK_MEM_EQ(dec.p, plain, n);
    free(enc.p);
    free(dec.p);
    free(plain);
}

static void test_streaming(void) {
    static const uint64_t steps[] = {1, 3, 63, 64, 65, 200};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        stream_case(fast(64), 0, steps[i]);
        stream_case(fast(64), 64, steps[i]);
        stream_case(fast(64), 301, steps[i]);
    }
    stream_case(cry1(), 301, 7);
    stream_case(cry1(), 0, 7);
    /* An unfinished writer leaves an incomplete stream that readers refuse. */
    growbuf enc = {0};
    oc_error err;
    oc_crypt_options o = fast(64);
    oc_crypt_writer *w = NULL;
    REQUIRE(CHECK_OK(oc_crypt_writer_open(grow_write, &enc, PASS, PASSLEN, &o, &w, &err), &err));
    uint8_t *plain = make_plain(200, 1);
    CHECK_OK(oc_crypt_writer_write(w, plain, 200, &err), &err);
    oc_crypt_writer_free(w);
    CHECK_STATUS(dec_status(enc.p, enc.n, PASS, PASSLEN, NULL, &err), OC_ERR_TRUNCATED, &err);
    CHECK(strstr(err.message, "before the final chunk") != NULL);
    free(enc.p);
    free(plain);
}

/* ---- hostile input: ONNXZEC1 ---- */

/* A small file: 150 bytes in 64-byte chunks (64, 64, 22), 1 iteration. */
static uint8_t *small_file(uint64_t *size, uint8_t **plain_out) {
    uint8_t *plain = make_plain(150, 5);
    oc_crypt_options o = fast(64);
    void *enc = NULL;
    oc_error err;
    CHECK_OK(oc_crypt_encrypt_memory(plain, 150, PASS, PASSLEN, &o, &enc, size, &err), &err);
    if (plain_out)
        *plain_out = plain;
    else
        free(plain);
    return enc;
}

enum { HDR = 72, FRAME = 16, TAG = 16, CHUNK = 64 + 32 };

static void test_wrong_key(void) {
    uint64_t size;
    uint8_t *f = small_file(&size, NULL);
    oc_error err;
    REQUIRE(f);
    CHECK_STATUS(dec_status(f, size, WRONG, WRONGLEN, NULL, &err), OC_ERR_BAD_KEY, &err);
    CHECK(strstr(err.message, "wrong passphrase") != NULL);
    CHECK_STATUS(dec_status(f, size, PASS, PASSLEN - 1, NULL, &err), OC_ERR_BAD_KEY, &err);
    /* Passphrases are bytes: NULs inside count. */
    static const char nul1[] = "a\0b", nul2[] = "a\0c";
    void *enc = NULL;
    uint64_t n;
    oc_crypt_options o = fast(64);
    CHECK_OK(oc_crypt_encrypt_memory("data", 4, nul1, 3, &o, &enc, &n, &err), &err);
    CHECK_OK(dec_status(enc, n, nul1, 3, NULL, &err), &err);
    CHECK_STATUS(dec_status(enc, n, nul2, 3, NULL, &err), OC_ERR_BAD_KEY, &err);
    CHECK_STATUS(dec_status(enc, n, nul1, 1, NULL, &err), OC_ERR_BAD_KEY, &err);
    CHECK_STATUS(dec_status(enc, n, "", 0, NULL, &err), OC_ERR_INVALID_ARG, &err);
    free(enc);
    free(f);
}

static void test_bit_flips(void) {
    uint64_t size;
    uint8_t *f = small_file(&size, NULL);
    REQUIRE(f && size == zec1_size(150, 64));
    uint8_t *g = malloc((size_t)size);
    long counts[16] = {0};
    oc_error err;
    for (uint64_t pos = 0; pos < size; pos++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(g, f, (size_t)size);
            g[pos] ^= (uint8_t)(1u << bit);
            oc_status st = dec_status(g, size, PASS, PASSLEN, NULL, &err);
            counts[st]++;
            oc_status want;
            if (pos < 8)
                want = OC_ERR_MALFORMED; /* the magic: not an encrypted file */
            else if (pos == 8)
                want = OC_ERR_UNSUPPORTED; /* the version */
            else if (pos < HDR)
                want = OC_ERR_CHECKSUM; /* the header digest (C-12) */
            else {
                uint64_t in_chunk = (pos - HDR) % CHUNK;
                int length_field = in_chunk >= 8 && in_chunk < 12;
                /* A flipped length reads the wrong bytes: authentication fails, or the
                 * input is too short for it (truncated), or it is beyond the chunk size. */
                if (length_field) {
                    CHECK(st == OC_ERR_CHECKSUM || st == OC_ERR_TRUNCATED ||
                          st == OC_ERR_MALFORMED);
                    continue;
                }
                want = OC_ERR_CHECKSUM; /* frame, ciphertext, tag (C-43) */
            }
            if (!CHECK_EQ(st, want))
                fprintf(stderr, "  flip at byte %llu bit %d: %s\n", (unsigned long long)pos, bit,
                        err.message);
        }
    }
    CHECK_EQ(counts[OC_OK], 0);
    printf("    %llu flips: checksum %ld, malformed %ld, truncated %ld, unsupported %ld\n",
           (unsigned long long)size * 8, counts[OC_ERR_CHECKSUM], counts[OC_ERR_MALFORMED],
           counts[OC_ERR_TRUNCATED], counts[OC_ERR_UNSUPPORTED]);
    free(g);
    free(f);
}

static void test_truncation(void) {
    uint64_t size;
    uint8_t *f = small_file(&size, NULL);
    REQUIRE(f);
    oc_error err;
    CHECK_STATUS(dec_status(f, 0, PASS, PASSLEN, NULL, &err), OC_ERR_MALFORMED, &err);
    for (uint64_t n = 1; n < size; n++) {
        oc_status st = dec_status(f, n, PASS, PASSLEN, NULL, &err);
        if (!CHECK_EQ(st, OC_ERR_TRUNCATED))
            fprintf(stderr, "  truncated to %llu bytes: %s\n", (unsigned long long)n, err.message);
        if (n >= HDR && (n - HDR) % CHUNK == 0) /* exactly at a chunk boundary */
            CHECK(strstr(err.message, "before the final chunk") ||
                  strstr(err.message, "before the first chunk"));
    }
    CHECK_OK(dec_status(f, size, PASS, PASSLEN, NULL, &err), &err);
    free(f);
}

/* Builds a file from chunks of f (a list of chunk numbers; 2 is the final one). */
static uint64_t splice(const uint8_t *f, const int *order, int count, uint8_t *out) {
    static const uint64_t off[] = {HDR, HDR + CHUNK, HDR + 2 * CHUNK};
    static const uint64_t len[] = {CHUNK, CHUNK, 22 + 32};
    memcpy(out, f, HDR);
    uint64_t n = HDR;
    for (int i = 0; i < count; i++) {
        memcpy(out + n, f + off[order[i]], (size_t)len[order[i]]);
        n += len[order[i]];
    }
    return n;
}

static void test_chunk_order(void) {
    uint64_t size;
    uint8_t *plain = NULL;
    uint8_t *f = small_file(&size, &plain);
    REQUIRE(f);
    uint8_t g[1024];
    oc_error err;
    struct {
        int order[5];
        int count;
        oc_status want;
        const char *says;
    } cases[] = {
        {{0, 1, 2}, 3, OC_OK, ""},
        {{1, 0, 2}, 3, OC_ERR_INCONSISTENT, "out of order"},  /* swapped */
        {{0, 0, 1, 2}, 4, OC_ERR_INCONSISTENT, "duplicated"}, /* duplicated */
        {{0, 1, 1, 2}, 4, OC_ERR_INCONSISTENT, "duplicated"},
        {{0, 2}, 2, OC_ERR_INCONSISTENT, "missing or out of order"}, /* one dropped */
        {{1, 2}, 2, OC_ERR_INCONSISTENT, "missing or out of order"},
        {{2}, 1, OC_ERR_INCONSISTENT, "missing or out of order"},
        {{0, 1}, 2, OC_ERR_TRUNCATED, "before the final chunk"}, /* final dropped */
        {{0}, 1, OC_ERR_TRUNCATED, "before the final chunk"},
        {{0, 1, 2, 2}, 4, OC_ERR_MALFORMED, "appended"}, /* final repeated */
        {{0, 1, 2, 0}, 4, OC_ERR_MALFORMED, "appended"},
        {{0, 2, 1}, 3, OC_ERR_INCONSISTENT, "missing or out of order"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint64_t n = splice(f, cases[i].order, cases[i].count, g);
        oc_status st = dec_status(g, n, PASS, PASSLEN, NULL, &err);
        if (!CHECK_EQ(st, cases[i].want) || !CHECK(strstr(err.message, cases[i].says)))
            fprintf(stderr, "  case %zu: %s\n", i, err.message);
    }
    /* Appended bytes, one or many. */
    memcpy(g, f, (size_t)size);
    g[size] = 0;
    CHECK_STATUS(dec_status(g, size + 1, PASS, PASSLEN, NULL, &err), OC_ERR_MALFORMED, &err);
    CHECK(strstr(err.message, "appended") != NULL);
    CHECK_EQ(err.offset, size);
    memset(g + size, 'A', 100);
    CHECK_STATUS(dec_status(g, size + 100, PASS, PASSLEN, NULL, &err), OC_ERR_MALFORMED, &err);
    /* A chunk from another file with the same passphrase and position. */
    uint64_t size2;
    uint8_t *f2 = small_file(&size2, NULL);
    memcpy(g, f, (size_t)size);
    memcpy(g + HDR + CHUNK, f2 + HDR + CHUNK, CHUNK);
    CHECK_STATUS(dec_status(g, size, PASS, PASSLEN, NULL, &err), OC_ERR_CHECKSUM, &err);
    CHECK(strstr(err.message, "chunk 1 fails authentication") != NULL);
    CHECK_EQ(err.offset, HDR + CHUNK);
    /* Another file's header in front of these chunks: its key check passes (same
     * passphrase) but every chunk is bound to the header it was written under. */
    memcpy(g, f2, HDR);
    memcpy(g + HDR, f + HDR, (size_t)(size - HDR));
    CHECK_STATUS(dec_status(g, size, PASS, PASSLEN, NULL, &err), OC_ERR_CHECKSUM, &err);
    free(f2);
    free(plain);
    free(f);
}

/* Rewrites the header digest after an edit, as an attacker could. */
static void fix_digest(uint8_t *h) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(h, 56, md, &n, EVP_sha256(), NULL);
    memcpy(h + 56, md, 16);
}

static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void test_crafted_headers(void) {
    uint64_t size;
    uint8_t *f = small_file(&size, NULL);
    REQUIRE(f);
    uint8_t *g = malloc((size_t)size);
    oc_error err;
    struct {
        int pos;
        uint32_t value;
        int width;
        oc_status want;
        const char *rule;
    } cases[] = {
        {8, 2, 1, OC_ERR_UNSUPPORTED, "C-11"},
        {9, 2, 1, OC_ERR_UNSUPPORTED, "C-13"},
        {10, 7, 1, OC_ERR_UNSUPPORTED, "C-13"},
        {11, 1, 1, OC_ERR_MALFORMED, "C-14"},
        {12, 0, 4, OC_ERR_MALFORMED, "C-15"},
        {12, OC_CRYPT_DEFAULT_MAX_ITERATIONS + 1, 4, OC_ERR_LIMIT, "C-15"},
        {16, 63, 4, OC_ERR_MALFORMED, "C-16"},
        {16, OC_CRYPT_MAX_CHUNK_SIZE + 1, 4, OC_ERR_MALFORMED, "C-16"},
        /* Edited fields with the digest fixed, as an attacker could: the chunk size is
         * bound to every chunk; the iteration count to the key check. */
        {16, 128, 4, OC_ERR_CHECKSUM, "C-43"},
        {12, 2, 4, OC_ERR_BAD_KEY, "C-22"},
        {20, 0xdeadbeef, 4, OC_ERR_CHECKSUM, "C-43"}, /* the nonce prefix: chunks fail */
        {40, 0, 4, OC_ERR_BAD_KEY, "C-22"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        memcpy(g, f, (size_t)size);
        if (cases[i].width == 1)
            g[cases[i].pos] = (uint8_t)cases[i].value;
        else
            put32(g + cases[i].pos, cases[i].value);
        fix_digest(g);
        oc_status st = dec_status(g, size, PASS, PASSLEN, NULL, &err);
        if (!CHECK_EQ(st, cases[i].want) || !CHECK(strstr(err.message, cases[i].rule)))
            fprintf(stderr, "  case %zu: %s\n", i, err.message);
    }
    /* The reader's iteration limit. */
    oc_crypt_options o = fast(64);
    void *enc = NULL;
    uint64_t n = 0;
    o.iterations = 1000;
    CHECK_OK(oc_crypt_encrypt_memory("abc", 3, PASS, PASSLEN, &o, &enc, &n, &err), &err);
    oc_crypt_options r = OC_CRYPT_OPTIONS_INIT;
    r.max_iterations = 999;
    CHECK_STATUS(dec_status(enc, n, PASS, PASSLEN, &r, &err), OC_ERR_LIMIT, &err);
    CHECK_EQ(err.offset, 12);
    r.max_iterations = 1000;
    CHECK_OK(dec_status(enc, n, PASS, PASSLEN, &r, &err), &err);
    /* A required format. */
    r.format = OC_CRYPT_ONNXCRY1;
    CHECK_STATUS(dec_status(enc, n, PASS, PASSLEN, &r, &err), OC_ERR_MALFORMED, &err);
    r.format = OC_CRYPT_ONNXZEC1;
    CHECK_OK(dec_status(enc, n, PASS, PASSLEN, &r, &err), &err);
    free(enc);
    /* Not encrypted at all. */
    CHECK_STATUS(dec_status("hello world", 11, PASS, PASSLEN, NULL, &err), OC_ERR_MALFORMED, &err);
    CHECK(strstr(err.message, "not an encrypted file") != NULL);
    CHECK_STATUS(dec_status("ONNXZ", 5, PASS, PASSLEN, NULL, &err), OC_ERR_TRUNCATED, &err);
    free(g);
    free(f);
}

static void test_options(void) {
    oc_error err;
    void *enc = NULL;
    uint64_t n = 0;
    oc_crypt_options o = fast(63);
    CHECK_STATUS(oc_crypt_encrypt_memory("x", 1, PASS, PASSLEN, &o, &enc, &n, &err),
                 OC_ERR_INVALID_ARG, &err);
    o = fast(OC_CRYPT_MAX_CHUNK_SIZE + 1);
    CHECK_STATUS(oc_crypt_encrypt_memory("x", 1, PASS, PASSLEN, &o, &enc, &n, &err),
                 OC_ERR_INVALID_ARG, &err);
    o = fast(OC_CRYPT_MAX_CHUNK_SIZE);
    CHECK_OK(oc_crypt_encrypt_memory("x", 1, PASS, PASSLEN, &o, &enc, &n, &err), &err);
    free(enc);
    o = fast(64);
    o.iterations = OC_CRYPT_DEFAULT_MAX_ITERATIONS + 1;
    CHECK_STATUS(oc_crypt_encrypt_memory("x", 1, PASS, PASSLEN, &o, &enc, &n, &err),
                 OC_ERR_INVALID_ARG, &err);
    o = fast(64);
    o.format = (oc_crypt_format)7;
    CHECK_STATUS(oc_crypt_encrypt_memory("x", 1, PASS, PASSLEN, &o, &enc, &n, &err),
                 OC_ERR_INVALID_ARG, &err);
    o = fast(64);
    CHECK_STATUS(oc_crypt_encrypt_memory("x", 1, PASS, 0, &o, &enc, &n, &err), OC_ERR_INVALID_ARG,
                 &err);
    CHECK_STATUS(oc_crypt_encrypt_memory("x", 1, NULL, 5, &o, &enc, &n, &err), OC_ERR_INVALID_ARG,
                 &err);
    CHECK_STATUS(oc_crypt_encrypt_memory(NULL, 1, PASS, PASSLEN, &o, &enc, &n, &err),
                 OC_ERR_INVALID_ARG, &err);
    CHECK(enc == NULL);
}

/* ---- hostile input: ONNXCRY1 ---- */

static void test_cry1_hostile(void) {
    uint8_t *plain = make_plain(100, 4);
    oc_crypt_options o = cry1();
    void *encv = NULL;
    uint64_t size = 0;
    oc_error err;
    REQUIRE(
        CHECK_OK(oc_crypt_encrypt_memory(plain, 100, PASS, PASSLEN, &o, &encv, &size, &err), &err));
    uint8_t *enc = encv;
    CHECK_EQ(size, 40 + 112);
    /* A wrong passphrase: the padding check catches it, except about once in 256. */
    oc_status st = dec_status(enc, size, WRONG, WRONGLEN, NULL, &err);
    CHECK(st == OC_ERR_BAD_KEY || st == OC_OK);
    if (st == OC_ERR_BAD_KEY) CHECK(strstr(err.message, "padding") != NULL);
    /* Truncation: inside the header, or not a whole block: always caught; at a block
     * boundary it is the padding check again. */
    for (uint64_t n = 1; n < size; n++) {
        if (reduced && n > 41 && n < size - 1 && (n - 40) % 16) continue;
        st = dec_status(enc, n, PASS, PASSLEN, NULL, &err);
        if (n < 8 || n <= 40 || (n - 40) % 16)
            CHECK_EQ(st, OC_ERR_TRUNCATED);
        else
            CHECK(st == OC_ERR_BAD_KEY || st == OC_OK);
    }
    /* A flipped bit in the last block breaks the padding or (rarely) just the data;
     * elsewhere ONNXCRY1 cannot notice: C-54. */
    enc[size - 1] ^= 0x80;
    CHECK_STATUS(dec_status(enc, size, PASS, PASSLEN, NULL, &err), OC_ERR_BAD_KEY, &err);
    enc[size - 1] ^= 0x80;
    enc[60] ^= 1;
    CHECK_OK(dec_status(enc, size, PASS, PASSLEN, NULL, &err), &err);
    free(enc);
    free(plain);
}

/* ---- files ---- */

static void test_files(void) {
    char in[4200], out[4200], back[4200];
    pathof(in, sizeof in, "in.bin");
    pathof(out, sizeof out, "out.onnxze");
    pathof(back, sizeof back, "back.bin");
    uint64_t n = 5000;
    uint8_t *plain = make_plain(n, 6);
    CHECK(td_write(in, plain, (size_t)n) == 0);
    oc_error err;
    for (int fmt = 0; fmt < 2; fmt++) {
        oc_crypt_options o = fmt ? cry1() : fast(256);
        REQUIRE(CHECK_OK(oc_crypt_encrypt_file(in, out, PASS, PASSLEN, &o, &err), &err));
        size_t esize = 0;
        uint8_t *enc = td_read(out, &esize);
        CHECK_EQ(esize, fmt ? cry1_size(n) : zec1_size(n, 256));
        oc_crypt_format f = OC_CRYPT_NONE;
        CHECK_OK(oc_crypt_detect_file(out, &f, &err), &err);
        CHECK_EQ(f, fmt ? OC_CRYPT_ONNXCRY1 : OC_CRYPT_ONNXZEC1);
        /* The file form and the memory form are the same bytes. */
        oc_bytes b = {0};
        CHECK_OK(oc_crypt_decrypt_memory(enc, esize, PASS, PASSLEN, NULL, &b, &err), &err);
        check_plain(&b, plain, n);
        CHECK_OK(oc_crypt_decrypt_file_to_memory(out, PASS, PASSLEN, NULL, &b, &err), &err);
        check_plain(&b, plain, n);
        oc_bytes_release(&b);
        CHECK_OK(oc_crypt_decrypt_file(out, back, PASS, PASSLEN, NULL, &err), &err);
        size_t bsize = 0;
        uint8_t *dec = td_read(back, &bsize);
        CHECK_EQ(bsize, n);
        if (dec && bsize == n) CHECK_MEM_EQ(dec, plain, n);
        free(dec);
        /* Memory-encrypted bytes written to a file decrypt through the file API. */
        void *menc = NULL;
        uint64_t msize = 0;
        CHECK_OK(oc_crypt_encrypt_memory(plain, n, PASS, PASSLEN, &o, &menc, &msize, &err), &err);
        CHECK(td_write(out, menc, (size_t)msize) == 0);
        CHECK_OK(oc_crypt_decrypt_file(out, back, PASS, PASSLEN, NULL, &err), &err);
        dec = td_read(back, &bsize);
        CHECK(dec && bsize == n && memcmp(dec, plain, (size_t)n) == 0);
        free(dec);
        free(menc);
        free(enc);
    }
    /* A failed decryption leaves the target as it was and no temporary file. */
    CHECK(td_write(back, "previous", 8) == 0);
    CHECK_STATUS(oc_crypt_decrypt_file(out, back, WRONG, WRONGLEN, NULL, &err), OC_ERR_BAD_KEY,
                 &err);
    oc_crypt_options o = fast(256);
    CHECK_OK(oc_crypt_encrypt_file(in, out, PASS, PASSLEN, &o, &err), &err);
    size_t esize = 0;
    uint8_t *enc = td_read(out, &esize);
    REQUIRE(enc);
    enc[esize - 20] ^= 4; /* the last chunk's ciphertext: the earlier chunks were written */
    CHECK(td_write(out, enc, esize) == 0);
    CHECK_STATUS(oc_crypt_decrypt_file(out, back, PASS, PASSLEN, NULL, &err), OC_ERR_CHECKSUM,
                 &err);
    size_t bsize = 0;
    uint8_t *prev = td_read(back, &bsize);
    CHECK(prev && bsize == 8 && memcmp(prev, "previous", 8) == 0);
    free(prev);
    free(enc);
    CHECK_EQ(td_count(dir, 0), 3); /* in, out, back */
    /* no_overwrite */
    o.no_overwrite = 1;
    CHECK_STATUS(oc_crypt_encrypt_file(in, out, PASS, PASSLEN, &o, &err), OC_ERR_EXISTS, &err);
    CHECK_STATUS(oc_crypt_decrypt_file(out, back, PASS, PASSLEN, &o, &err), OC_ERR_EXISTS, &err);
    /* In place: encrypt a file over itself, then decrypt it back over itself. */
    o.no_overwrite = 0;
    CHECK_OK(oc_crypt_encrypt_file(in, in, PASS, PASSLEN, &o, &err), &err);
    CHECK_OK(oc_crypt_decrypt_file(in, in, PASS, PASSLEN, NULL, &err), &err);
    uint8_t *again = td_read(in, &bsize);
    CHECK(again && bsize == n && memcmp(again, plain, (size_t)n) == 0);
    free(again);
    /* Missing input. */
    char missing[4200];
    pathof(missing, sizeof missing, "missing.bin");
    CHECK_STATUS(oc_crypt_encrypt_file(missing, out, PASS, PASSLEN, &o, &err), OC_ERR_NOT_FOUND,
                 &err);
    CHECK_STATUS(oc_crypt_decrypt_file(missing, out, PASS, PASSLEN, &o, &err), OC_ERR_NOT_FOUND,
                 &err);
    CHECK_EQ(td_count(dir, 0), 3);
    remove(in);
    remove(out);
    remove(back);
    free(plain);
}

/* ---- models ---- */

static oc_model *make_model(void) {
    oc_model *model = tm_model_new();
    oc_arena *a = oc_model_arena(model);
    onnx_ModelProto *m = oc_model_proto(model);
    SETS(ModelProto, m, producer_name, a, "test_crypto");
    onnx_GraphProto *g = m->graph;
    SETS(GraphProto, g, name, a, "encrypted graph");
    onnx_TensorProto *t = OC_ADD(a, TensorProto, g->initializer);
    SETS(TensorProto, t, name, a, "W");
    t->data_type = 2;
    OC_SET_HAS(TensorProto, t, data_type);
    uint8_t *w = NULL;
    oc_bytes_set_alloc(&t->raw_data, 100000, &w, NULL);
    for (int i = 0; w && i < 100000; i++) w[i] = pattern((uint64_t)i, 8);
    OC_SET_HAS(TensorProto, t, raw_data);
    return model;
}

static void test_models(void) {
    oc_model *model = make_model();
    oc_error err;
    void *ref = NULL;
    uint64_t ref_size = 0;
    REQUIRE(CHECK_OK(oc_model_save_memory(model, NULL, &ref, &ref_size, &err), &err));
    char path[4200];
    pathof(path, sizeof path, "model.onnxze");
    for (int fmt = 0; fmt < 2; fmt++) {
        oc_crypt_options o = fmt ? cry1() : fast(4096);
        /* Memory and file saves. */
        void *enc = NULL;
        uint64_t esize = 0;
        CHECK_OK(oc_crypt_save_model_memory(model, PASS, PASSLEN, &o, &enc, &esize, &err), &err);
        CHECK_EQ(esize, fmt ? cry1_size(ref_size) : zec1_size(ref_size, 4096));
        CHECK_OK(oc_crypt_save_model_file(model, path, PASS, PASSLEN, &o, NULL, &err), &err);
        oc_parse_options po = OC_PARSE_OPTIONS_INIT;
        po.no_copy = 1;
        for (int src = 0; src < 2; src++) {
            oc_model *l = NULL;
            oc_status st =
                src ? oc_crypt_load_model_file(path, PASS, PASSLEN, NULL, &po, &l, &err)
                    : oc_crypt_load_model_memory(enc, esize, PASS, PASSLEN, NULL, &po, &l, &err);
            if (!CHECK_OK(st, &err)) continue;
            onnx_TensorProto *t = oc_model_proto(l)->graph->initializer.items[0];
            /* Zero copy: the tensor shares the decrypted buffer, which outlives the load. */
            CHECK_EQ(t->raw_data.mode, OC_BYTES_SHARED);
            CHECK(oc_owner_refcount(t->raw_data.owner) >= 1); /* held by the model alone */
            void *again = NULL;
            uint64_t again_size = 0;
            CHECK_OK(oc_model_save_memory(l, NULL, &again, &again_size, &err), &err);
            CHECK(again_size == ref_size && memcmp(again, ref, (size_t)ref_size) == 0);
            free(again);
            oc_model_free(l);
            /* Without no_copy, owned copies. */
            st = src ? oc_crypt_load_model_file(path, PASS, PASSLEN, NULL, NULL, &l, &err)
                     : oc_crypt_load_model_memory(enc, esize, PASS, PASSLEN, NULL, NULL, &l, &err);
            if (CHECK_OK(st, &err))
                CHECK_EQ(oc_model_proto(l)->graph->initializer.items[0]->raw_data.mode,
                         OC_BYTES_OWNED);
            oc_model_free(l);
            l = NULL;
            st =
                src ? oc_crypt_load_model_file(path, WRONG, WRONGLEN, NULL, NULL, &l, &err)
                    : oc_crypt_load_model_memory(enc, esize, WRONG, WRONGLEN, NULL, NULL, &l, &err);
            CHECK_EQ(st, OC_ERR_BAD_KEY); /* ONNXCRY1: padding, or (1/256) not a model */
            CHECK(l == NULL);
        }
        free(enc);
    }
    /* A ZEC1 payload that is not a model is the decoder's error (it authenticated). */
    void *enc = NULL;
    uint64_t esize = 0;
    oc_crypt_options o = fast(64);
    CHECK_OK(oc_crypt_encrypt_memory("\xff\xff\xff", 3, PASS, PASSLEN, &o, &enc, &esize, &err),
             &err);
    oc_model *l = NULL;
    oc_status st = oc_crypt_load_model_memory(enc, esize, PASS, PASSLEN, NULL, NULL, &l, &err);
    CHECK(st != OC_OK && st != OC_ERR_BAD_KEY);
    free(enc);
    /* The same through ONNXCRY1: a payload that is not a model reads as a wrong key. */
    o = cry1();
    CHECK_OK(oc_crypt_encrypt_memory("\xff\xff\xff", 3, PASS, PASSLEN, &o, &enc, &esize, &err),
             &err);
    CHECK_STATUS(oc_crypt_load_model_memory(enc, esize, PASS, PASSLEN, NULL, NULL, &l, &err),
                 OC_ERR_BAD_KEY, &err);
    CHECK(strstr(err.message, "not a model") != NULL);
    free(enc);
    /* External data would be written in the clear: refused. */
    oc_serialize_options so = OC_SERIALIZE_OPTIONS_INIT;
    so.external_data = "w.bin";
    CHECK_STATUS(oc_crypt_save_model_file(model, path, PASS, PASSLEN, NULL, &so, &err),
                 OC_ERR_INVALID_ARG, &err);
    so.external_data = NULL;
    so.no_overwrite = 1;
    CHECK_STATUS(oc_crypt_save_model_file(model, path, PASS, PASSLEN, NULL, &so, &err),
                 OC_ERR_EXISTS, &err);
    remove(path);
    free(ref);
    oc_model_free(model);
}

/* An encrypted .onnxz: decrypt to memory, then libonnxz reads entries in place. */
static void test_archive(void) {
    oc_model *model = make_model();
    char plain_path[4200], enc_path[4200];
    pathof(plain_path, sizeof plain_path, "model.onnxz");
    pathof(enc_path, sizeof enc_path, "model.onnxz.enc");
    oc_error err;
    REQUIRE(CHECK_OK(oz_archive_save(model, plain_path, NULL, &err), &err));
    oc_crypt_options o = fast(1000);
    REQUIRE(CHECK_OK(oc_crypt_encrypt_file(plain_path, enc_path, PASS, PASSLEN, &o, &err), &err));
    oc_model *l = NULL;
    CHECK_STATUS(oc_crypt_load_model_file(enc_path, PASS, PASSLEN, NULL, NULL, &l, &err),
                 OC_ERR_UNSUPPORTED, &err);
    CHECK(strstr(err.message, "archive") != NULL);
    oc_bytes span = {0};
    REQUIRE(CHECK_OK(oc_crypt_decrypt_file_to_memory(enc_path, PASS, PASSLEN, NULL, &span, &err),
                     &err));
    CHECK(oc_crypt_is_zip(span.data, span.size));
    oz_zip_reader *r = NULL;
    REQUIRE(CHECK_OK(oz_zip_reader_open_memory(span.data, span.size, span.owner, NULL, &r, &err),
                     &err));
    const uint8_t *base = span.data;
    uint64_t total = span.size;
    oc_bytes_release(&span); /* the reader holds its own reference */
    uint64_t index = 0;
    oc_bytes w = {0};
    if (CHECK_OK(oz_zip_reader_find(r, "W", &index, &err), &err) &&
        CHECK_OK(oz_zip_reader_read(r, index, &w, &err), &err)) {
        CHECK_EQ(w.mode, OC_BYTES_SHARED);
        CHECK(w.data >= base && w.data + w.size <= base + total);
        CHECK(((uintptr_t)w.data % 64) == 0);
        CHECK_EQ(w.size, 100000);
        CHECK_OK(oz_zip_reader_verify_all(r, &err), &err);
    }
    oz_zip_reader_close(r);
    /* The entry still holds the decrypted buffer. */
    CHECK(w.size == 100000 && w.data[99999] == pattern(99999, 8));
    oc_bytes_release(&w);
    /* The proposed libonnxz glue: the archive opened in the decrypted buffer. */
    oz_archive *ar = NULL;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.no_copy = 1;
    if (CHECK_OK(oz_archive_open_encrypted(enc_path, PASS, PASSLEN, NULL, NULL, &ar, &err), &err)) {
        l = NULL;
        if (CHECK_OK(oz_archive_load_model(ar, &po, &l, &err), &err)) {
            onnx_TensorProto *t = oc_model_proto(l)->graph->initializer.items[0];
            CHECK_EQ(t->raw_data.mode, OC_BYTES_SHARED);
            CHECK(((uintptr_t)t->raw_data.data % 64) == 0); /* aligned entry, aligned buffer */
            oz_archive_close(ar);
            ar = NULL;
            CHECK(t->raw_data.size == 100000 && t->raw_data.data[99999] == pattern(99999, 8));
            oc_model_free(l);
        }
        oz_archive_close(ar);
    }
    bool is_archive = false;
    l = NULL;
    if (CHECK_OK(oz_encrypted_load(enc_path, PASS, PASSLEN, NULL, &po, &l, &is_archive, &err),
                 &err)) {
        CHECK(is_archive);
        CHECK_EQ(oc_model_proto(l)->graph->initializer.items[0]->raw_data.mode, OC_BYTES_SHARED);
    }
    oc_model_free(l);
    l = NULL;
    CHECK_STATUS(oz_encrypted_load(enc_path, WRONG, WRONGLEN, NULL, &po, &l, &is_archive, &err),
                 OC_ERR_BAD_KEY, &err);
    /* An encrypted plain model through the same calls. */
    CHECK_OK(oc_crypt_save_model_file(model, enc_path, PASS, PASSLEN, &o, NULL, &err), &err);
    CHECK_STATUS(oz_archive_open_encrypted(enc_path, PASS, PASSLEN, NULL, NULL, &ar, &err),
                 OC_ERR_MALFORMED, &err);
    if (CHECK_OK(oz_encrypted_load(enc_path, PASS, PASSLEN, NULL, &po, &l, &is_archive, &err),
                 &err)) {
        CHECK(!is_archive);
        CHECK_EQ(oc_model_proto(l)->graph->initializer.items[0]->raw_data.mode, OC_BYTES_SHARED);
    }
    oc_model_free(l);
    remove(plain_path);
    remove(enc_path);
    oc_model_free(model);
}

#endif /* ONNXZ_HAVE_OPENSSL */

int main(int argc, char **argv) {
    const char *r = getenv("ONNXZ_TEST_REDUCED");
    reduced = r && !strcmp(r, "1");
    if (td_make(argc > 1 ? argv[1] : NULL, "crypto", dir, sizeof dir) != 0) {
        perror("scratch directory");
        return 2;
    }
    RUN(test_detect);
    if (!oc_crypt_available()) {
        RUN(test_unavailable);
    } else {
#ifdef ONNXZ_HAVE_OPENSSL
        RUN(test_roundtrip_zec1);
        RUN(test_roundtrip_cry1);
        RUN(test_default_options);
        RUN(test_streaming);
        RUN(test_wrong_key);
        RUN(test_bit_flips);
        RUN(test_truncation);
        RUN(test_chunk_order);
        RUN(test_crafted_headers);
        RUN(test_options);
        RUN(test_cry1_hostile);
        RUN(test_files);
        RUN(test_models);
        RUN(test_archive);
#else
        CHECK(!"the library has OpenSSL but the test was built without it");
#endif
    }
    int rc = check_report("test_crypto");
    if (rc == 0) td_remove(dir);
    return rc;
}
