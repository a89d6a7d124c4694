/*
 * internal/cursor.h - little-endian reading with bounds checks, and writing helpers.
 *
 * A cursor reads a run of fields from untrusted bytes; reading past its end yields zeros
 * and sets a sticky `bad` flag, so a header is read in one go and checked once. Lengths
 * are compared with what is left before any pointer is formed.
 */
#ifndef ONNXZ_INTERNAL_CURSOR_H
#define ONNXZ_INTERNAL_CURSOR_H

#include <stdint.h>
#include <string.h>

typedef struct oz__cursor {
    const uint8_t *p;
    uint64_t left;
    int bad;
} oz__cursor;

static inline oz__cursor oz__cursor_make(const uint8_t *p, uint64_t size) {
    oz__cursor c;
    c.p = p;
    c.left = p ? size : 0;
    c.bad = 0;
    return c;
}

/* n bytes at the cursor (advancing past them), or NULL (and bad) when fewer are left. */
static inline const uint8_t *oz__take(oz__cursor *c, uint64_t n) {
    if (c->bad || n > c->left) {
        c->bad = 1;
        return NULL;
    }
    const uint8_t *at = c->p;
    c->p += n;
    c->left -= n;
    return at;
}

static inline uint16_t oz__get16(oz__cursor *c) {
    const uint8_t *b = oz__take(c, 2);
    if (!b) return 0;
    return (uint16_t)(b[0] | (b[1] << 8));
}

static inline uint32_t oz__get32(oz__cursor *c) {
    const uint8_t *b = oz__take(c, 4);
    if (!b) return 0;
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
}

static inline uint64_t oz__get64(oz__cursor *c) {
    uint64_t lo = oz__get32(c);
    uint64_t hi = oz__get32(c);
    return lo | (hi << 32);
}

/* Plain little-endian loads from bytes already known to be in bounds. */
static inline uint16_t oz__le16(const uint8_t *b) { return (uint16_t)(b[0] | (b[1] << 8)); }
static inline uint32_t oz__le32(const uint8_t *b) {
    return (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
}
static inline uint64_t oz__le64(const uint8_t *b) {
    return (uint64_t)oz__le32(b) | ((uint64_t)oz__le32(b + 4) << 32);
}

/* Writing: the caller has sized the buffer; each put returns the position after it. */
static inline uint8_t *oz__put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}

static inline uint8_t *oz__put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
    return p + 4;
}

static inline uint8_t *oz__put64(uint8_t *p, uint64_t v) {
    p = oz__put32(p, (uint32_t)v);
    return oz__put32(p, (uint32_t)(v >> 32));
}

static inline uint8_t *oz__put_bytes(uint8_t *p, const void *src, size_t n) {
    if (n) memcpy(p, src, n);
    return p + n;
}

#endif
