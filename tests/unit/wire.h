/*
 * tests/unit/wire.h - builds protobuf wire bytes by hand (independently of the library).
 *
 *   wbuf b = {0};
 *   wb_vint(&b, 1, 7);            field 1, varint 7
 *   wb_str(&b, 2, "name");        field 2, length-delimited
 *   wb_msg(&b, 7, &sub);          field 7, length-delimited bytes of another wbuf
 *   wb_free(&b);
 */
#ifndef ONNXZ_TESTS_WIRE_H
#define ONNXZ_TESTS_WIRE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
} wbuf;

static inline void wb_raw(wbuf *b, const void *data, size_t size) {
    if (b->n + size > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + size) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "wire.h: out of memory\n");
            abort();
        }
        b->p = p;
        b->cap = cap;
    }
    if (size) memcpy(b->p + b->n, data, size);
    b->n += size;
}

static inline void wb_byte(wbuf *b, uint8_t v) { wb_raw(b, &v, 1); }

static inline void wb_bytes(wbuf *b, const char *s) { wb_raw(b, s, strlen(s)); }

static inline void wb_varint(wbuf *b, uint64_t v) {
    while (v >= 0x80) {
        wb_byte(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    wb_byte(b, (uint8_t)v);
}

static inline void wb_tag(wbuf *b, uint32_t field, unsigned wt) {
    wb_varint(b, ((uint64_t)field << 3) | wt);
}

static inline void wb_le32(wbuf *b, uint32_t v) {
    uint8_t x[4];
    for (int i = 0; i < 4; i++) x[i] = (uint8_t)(v >> (8 * i));
    wb_raw(b, x, 4);
}

static inline void wb_le64(wbuf *b, uint64_t v) {
    uint8_t x[8];
    for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> (8 * i));
    wb_raw(b, x, 8);
}

/* Whole fields. */
static inline void wb_vint(wbuf *b, uint32_t field, uint64_t v) {
    wb_tag(b, field, WT_VARINT);
    wb_varint(b, v);
}
static inline void wb_f32(wbuf *b, uint32_t field, uint32_t bits) {
    wb_tag(b, field, WT_I32);
    wb_le32(b, bits);
}
static inline void wb_f64(wbuf *b, uint32_t field, uint64_t bits) {
    wb_tag(b, field, WT_I64);
    wb_le64(b, bits);
}
static inline void wb_len(wbuf *b, uint32_t field, const void *data, size_t size) {
    wb_tag(b, field, WT_LEN);
    wb_varint(b, size);
    wb_raw(b, data, size);
}
static inline void wb_str(wbuf *b, uint32_t field, const char *s) {
    wb_len(b, field, s, strlen(s));
}
static inline void wb_msg(wbuf *b, uint32_t field, const wbuf *sub) {
    wb_len(b, field, sub->p, sub->n);
}
static inline void wb_cat(wbuf *b, const wbuf *other) { wb_raw(b, other->p, other->n); }

/* True when b holds exactly the n bytes at p (n may be 0, p NULL). */
static inline int wb_same(const wbuf *b, const void *p, size_t n) {
    return b->n == n && (n == 0 || memcmp(b->p, p, n) == 0);
}

static inline void wb_reset(wbuf *b) { b->n = 0; }
static inline void wb_free(wbuf *b) {
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

#endif
