/*
 * internal/crc.h - CRC-32 (the ZIP one, as zlib's crc32) over 64-bit lengths.
 */
#ifndef ONNXZ_INTERNAL_CRC_H
#define ONNXZ_INTERNAL_CRC_H

#include <stdint.h>

/* CRC-32 of n bytes, continuing from crc (0 to start). Folds 64 bytes at a time with
 * carry-less multiplication where the CPU has it (x86-64 PCLMULQDQ), zlib otherwise;
 * both give zlib's crc32 exactly. */
uint32_t oz__crc32(uint32_t crc, const uint8_t *data, uint64_t n);

#endif
