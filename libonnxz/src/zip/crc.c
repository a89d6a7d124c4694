/*
 * crc.c - CRC-32 of the ZIP format, fast.
 *
 * Every STORED entry's bytes are checksummed when an archive is written, so the CRC runs
 * over every byte of every model we pack; zlib's table-driven crc32 (~3 GB/s here) then
 * costs as much as the copy itself. With PCLMULQDQ the message is folded 64 bytes per
 * step: four 128-bit lanes are each multiplied (carry-less) by x^(512+64) and x^512
 * modulo P and XORed into the next 64 bytes, then the lanes are folded into one, that to
 * 64 and 32 bits, and a Barrett reduction gives the remainder. The constants are powers of
 * x modulo the CRC-32 polynomial in the bit-reflected form the ZIP CRC uses:
 *   k1 = x^(4*128+32) mod P, k2 = x^(4*128-32) mod P   (fold by 64 bytes)
 *   k3 = x^(128+32) mod P,   k4 = x^(128-32) mod P     (fold by 16 bytes)
 *   k5 = x^64 mod P                                    (64 -> 32 bits)
 *   P' = P (33 bits), u = floor(x^64 / P)              (Barrett)
 * (each reflected and shifted left by one, as the reflected multiplication needs).
 * Lengths under 64 bytes, and the tail under 16, go to zlib.
 */
#include <stdatomic.h>
#include <zlib.h>

#include "internal/crc.h"

static uint32_t crc_zlib(uint32_t crc, const uint8_t *data, uint64_t n) {
    uLong c = crc;
    while (n) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        c = crc32(c, data, chunk);
        data += chunk;
        n -= chunk;
    }
    return (uint32_t)c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define OZ_CRC_TARGET __attribute__((target("pclmul,sse4.1")))

/* The raw (not inverted) CRC register after n bytes, n >= 64 and a multiple of 16. */
OZ_CRC_TARGET static uint32_t crc_fold(uint32_t raw, const uint8_t *p, uint64_t n) {
    const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);
    const __m128i poly = _mm_set_epi64x(0x1f7011641, 0x1db710641); /* u, P' */
    const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i x0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)p), _mm_cvtsi32_si128((int)raw));
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    n -= 64;
#define OZ_FOLD(x, k, next) \
    x = _mm_xor_si128(      \
        _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next)
    for (; n >= 64; p += 64, n -= 64) {
        OZ_FOLD(x0, k1k2, _mm_loadu_si128((const __m128i *)p));
        OZ_FOLD(x1, k1k2, _mm_loadu_si128((const __m128i *)(p + 16)));
        OZ_FOLD(x2, k1k2, _mm_loadu_si128((const __m128i *)(p + 32)));
        OZ_FOLD(x3, k1k2, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    OZ_FOLD(x0, k3k4, x1); /* four lanes into one */
    OZ_FOLD(x0, k3k4, x2);
    OZ_FOLD(x0, k3k4, x3);
    for (; n >= 16; p += 16, n -= 16) OZ_FOLD(x0, k3k4, _mm_loadu_si128((const __m128i *)p));
#undef OZ_FOLD
    /* 128 -> 64 bits (appending 32 zero bits), then -> 32 + the 32 to reduce. */
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(k3k4, x0, 0x01), _mm_srli_si128(x0, 8));
    x1 = _mm_srli_si128(x0, 4);
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x0, mask32), k5, 0x00), x1);
    /* Barrett reduction to the 32-bit remainder. */
    x1 = x0;
    x0 = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(x0, mask32), poly, 0x10), mask32);
    x0 = _mm_xor_si128(_mm_clmulepi64_si128(x0, poly, 0x00), x1);
    return (uint32_t)_mm_extract_epi32(x0, 1);
}

static int have_pclmul(void) {
    static atomic_int known; /* 0: not asked yet, 1: no, 2: yes (threads may race: all agree) */
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (!k) {
        __builtin_cpu_init();
        k = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1") ? 2 : 1;
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 2;
}

uint32_t oz__crc32(uint32_t crc, const uint8_t *data, uint64_t n) {
    if (n < 64 || !have_pclmul()) return crc_zlib(crc, data, n);
    uint64_t bulk = n & ~(uint64_t)15;
    /* zlib's value is the inverted register before and after. */
    crc = ~crc_fold(~crc, data, bulk);
    return crc_zlib(crc, data + bulk, n - bulk);
}
#else
uint32_t oz__crc32(uint32_t crc, const uint8_t *data, uint64_t n) { return crc_zlib(crc, data, n); }
#endif
