/*
 * internal/crc.h - CRC-32 (the ZIP one) through zlib, over 64-bit lengths.
 */
#ifndef ONNXZ_INTERNAL_CRC_H
#define ONNXZ_INTERNAL_CRC_H

#include <stdint.h>
#include <zlib.h>

/* CRC-32 of n bytes, continuing from crc (0 to start). */
static inline uint32_t oz__crc32(uint32_t crc, const uint8_t *data, uint64_t n) {
    uLong c = crc;
    while (n) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
        c = crc32(c, data, chunk);
        data += chunk;
        n -= chunk;
    }
    return (uint32_t)c;
}

#endif
