/*
 * names.c - entry names: the safety rules (spec Z-30..Z-35) and the table that finds an
 * entry by name.
 *
 * The table is keyed by SipHash-1-3 with a per-table key, so names chosen by an attacker
 * cannot be made to collide in bulk and turn lookups quadratic.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <onnxcore/status.h>

#include "internal/zipfmt.h"

/* ---- the rules ---- */


oz__name_fault oz__name_check(const uint8_t *name, size_t len, int allow_dir) {
    if (len == 0) return OZ_NAME_EMPTY;
    for (size_t i = 0; i < len;) {
        if (name[i] == 0) return OZ_NAME_NUL;
        size_t k = oc_utf8_len(name + i, len - i);
        if (!k) return OZ_NAME_NOT_UTF8;
        i += k;
    }
    if (memchr(name, '\\', len)) return OZ_NAME_BACKSLASH;
    if (name[0] == '/') return OZ_NAME_ABSOLUTE;
    if (len >= 2 && name[1] == ':' &&
        ((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z')))
        return OZ_NAME_DRIVE;
    size_t end = len;
    if (name[len - 1] == '/') {
        if (!allow_dir) return OZ_NAME_DIRECTORY;
        end = len - 1; /* one trailing '/' marks a directory entry */
    }
    size_t start = 0;
    for (size_t i = 0; i <= end; i++) {
        if (i < end && name[i] != '/') continue;
        size_t clen = i - start;
        if (clen == 0) return OZ_NAME_EMPTY_COMPONENT;
        if (clen == 1 && name[start] == '.') return OZ_NAME_DOT;
        if (clen == 2 && name[start] == '.' && name[start + 1] == '.') return OZ_NAME_DOTDOT;
        start = i + 1;
    }
    return OZ_NAME_OK;
}

const char *oz__name_fault_text(oz__name_fault f) {
    switch (f) {
    case OZ_NAME_OK: return "is fine";
    case OZ_NAME_EMPTY: return "is empty";
    case OZ_NAME_NOT_UTF8: return "is not valid UTF-8";
    case OZ_NAME_NUL: return "contains a NUL byte";
    case OZ_NAME_BACKSLASH: return "contains a backslash";
    case OZ_NAME_ABSOLUTE: return "is absolute";
    case OZ_NAME_DRIVE: return "starts with a drive letter";
    case OZ_NAME_EMPTY_COMPONENT: return "has an empty component";
    case OZ_NAME_DOT: return "has a '.' component";
    case OZ_NAME_DOTDOT: return "has a '..' component";
    case OZ_NAME_DIRECTORY: return "ends with '/'";
    }
    return "is invalid";
}

const char *oz__name_fault_rule(oz__name_fault f) {
    switch (f) {
    case OZ_NAME_EMPTY: return "Z-30";
    case OZ_NAME_NOT_UTF8:
    case OZ_NAME_NUL: return "Z-31";
    case OZ_NAME_BACKSLASH: return "Z-32";
    case OZ_NAME_ABSOLUTE:
    case OZ_NAME_DRIVE: return "Z-33";
    default: return "Z-34";
    }
}

int oz__name_fault_unsafe(oz__name_fault f) {
    return f != OZ_NAME_OK && f != OZ_NAME_EMPTY && f != OZ_NAME_NOT_UTF8 &&
           f != OZ_NAME_DIRECTORY;
}

/* ---- SipHash-1-3 ---- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                           \
    do {                                                                                   \
        v0 += v1;                                                                          \
        v1 = ROTL(v1, 13);                                                                 \
        v1 ^= v0;                                                                          \
        v0 = ROTL(v0, 32);                                                                 \
        v2 += v3;                                                                          \
        v3 = ROTL(v3, 16);                                                                 \
        v3 ^= v2;                                                                          \
        v0 += v3;                                                                          \
        v3 = ROTL(v3, 21);                                                                 \
        v3 ^= v0;                                                                          \
        v2 += v1;                                                                          \
        v1 = ROTL(v1, 17);                                                                 \
        v1 ^= v2;                                                                          \
        v2 = ROTL(v2, 32);                                                                 \
    } while (0)

static uint64_t load64(const uint8_t *p, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint64_t siphash13(uint64_t k0, uint64_t k1, const uint8_t *p, size_t len) {
    uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
    uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t m = load64(p + i, 8);
        v3 ^= m;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = ((uint64_t)len << 56) | load64(p + full, len - full);
    v3 ^= b;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static uint64_t mix64(uint64_t x) { /* splitmix64's finaliser */
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* ---- the table ---- */

int oz__nametab_init(oz__nametab *t, uint64_t expected) {
    memset(t, 0, sizeof *t);
    uint64_t cap = 16;
    while (cap < expected * 2) cap <<= 1; /* load factor <= 1/2 */
    t->hashes = malloc((size_t)cap * sizeof *t->hashes);
    t->idx = calloc((size_t)cap, sizeof *t->idx);
    if (!t->hashes || !t->idx) {
        oz__nametab_free(t);
        return -1;
    }
    t->cap = cap;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    static atomic_uint_fast64_t counter;
    uint64_t n = (uint64_t)atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    t->seed = mix64((uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
                    (uint64_t)(uintptr_t)t->idx ^ (n << 48));
    return 0;
}

void oz__nametab_free(oz__nametab *t) {
    free(t->hashes);
    free(t->idx);
    t->hashes = NULL;
    t->idx = NULL;
    t->cap = t->count = 0;
}

uint64_t oz__nametab_hash(const oz__nametab *t, const uint8_t *name, size_t len) {
    return siphash13(t->seed, mix64(t->seed), name, len);
}

static void place(uint64_t *hashes, uint32_t *idx, uint64_t cap, uint32_t i, uint64_t h) {
    uint64_t s = h & (cap - 1);
    while (idx[s]) s = (s + 1) & (cap - 1);
    idx[s] = i + 1;
    hashes[s] = h;
}

int oz__nametab_reserve(oz__nametab *t) {
    if ((t->count + 1) * 2 <= t->cap) return 0;
    uint64_t cap = t->cap * 2;
    uint64_t *hashes = malloc((size_t)cap * sizeof *hashes);
    uint32_t *idx = calloc((size_t)cap, sizeof *idx);
    if (!hashes || !idx) {
        free(hashes);
        free(idx);
        return -1;
    }
    for (uint64_t s = 0; s < t->cap; s++)
        if (t->idx[s]) place(hashes, idx, cap, t->idx[s] - 1, t->hashes[s]);
    free(t->hashes);
    free(t->idx);
    t->hashes = hashes;
    t->idx = idx;
    t->cap = cap;
    return 0;
}

int64_t oz__nametab_find(const oz__nametab *t, const uint8_t *name, size_t len, uint64_t hash,
                         oz__name_of_fn name_of, const void *ctx) {
    if (!t->cap) return -1;
    for (uint64_t s = hash & (t->cap - 1); t->idx[s]; s = (s + 1) & (t->cap - 1)) {
        if (t->hashes[s] != hash) continue;
        const uint8_t *other;
        size_t olen;
        name_of(ctx, t->idx[s] - 1, &other, &olen);
        if (olen == len && memcmp(other, name, len) == 0) return (int64_t)(t->idx[s] - 1);
    }
    return -1;
}

void oz__nametab_insert(oz__nametab *t, uint32_t i, uint64_t hash) {
    place(t->hashes, t->idx, t->cap, i, hash);
    t->count++;
}
