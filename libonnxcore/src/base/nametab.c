/*
 * nametab.c - the one table that finds things by name (onnxcore/nametab.h): open
 * addressing over caller indices, hashed with SipHash-1-3 under a per-process random key.
 */
#define _GNU_SOURCE /* getrandom */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "internal/nametab.h"

struct oc_nametab {
    uint64_t *hashes; /* per slot; meaningful where idx != 0 */
    uint32_t *idx;    /* index + 1; 0: empty */
    uint64_t cap;     /* a power of two; at most half full */
    uint64_t count;
    oc_nametab_name_fn name_of;
    const void *ctx;
};

/* ---- the key ---- */

static uint64_t key[2];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static uint64_t mix64(uint64_t x) { /* splitmix64's finaliser */
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* From the kernel's random source; where that fails (no getrandom, a seccomp filter),
 * from the clock, the process id and an address: weaker, still unknown to the file. */
static void make_key(void) {
    if (getrandom(key, sizeof key, GRND_NONBLOCK) == (ssize_t)sizeof key) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 20) ^
                 (uint64_t)(uintptr_t)&ts;
    key[0] = mix64(s);
    key[1] = mix64(key[0] ^ (uint64_t)(uintptr_t)&key_once);
}

/* ---- SipHash-1-3 ---- */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND           \
    do {                   \
        v0 += v1;          \
        v1 = ROTL(v1, 13); \
        v1 ^= v0;          \
        v0 = ROTL(v0, 32); \
        v2 += v3;          \
        v3 = ROTL(v3, 16); \
        v3 ^= v2;          \
        v0 += v3;          \
        v3 = ROTL(v3, 21); \
        v3 ^= v0;          \
        v2 += v1;          \
        v1 = ROTL(v1, 17); \
        v1 ^= v2;          \
        v2 = ROTL(v2, 32); \
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

uint64_t oc_nametab_hash(const void *name, size_t len) {
    static const uint8_t empty[1];
    pthread_once(&key_once, make_key);
    return siphash13(key[0], key[1], len ? name : empty, len); /* no arithmetic on NULL */
}

/* ---- the table ---- */

static int alloc_slots(uint64_t cap, uint64_t **hashes, uint32_t **idx) {
    *hashes = malloc((size_t)cap * sizeof **hashes);
    *idx = calloc((size_t)cap, sizeof **idx);
    if (*hashes && *idx) return 0;
    free(*hashes);
    free(*idx);
    return -1;
}

oc_nametab *oc_nametab_new(uint64_t expected, oc_nametab_name_fn name_of, const void *ctx) {
    if (!name_of || expected > OC_NAMETAB_MAX) return NULL;
    oc_nametab *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    uint64_t cap = 16;
    while (cap < expected * 2) cap <<= 1; /* load factor <= 1/2 */
    if (alloc_slots(cap, &t->hashes, &t->idx) != 0) {
        free(t);
        return NULL;
    }
    t->cap = cap;
    t->name_of = name_of;
    t->ctx = ctx;
    return t;
}

void oc_nametab_free(oc_nametab *t) {
    if (!t) return;
    free(t->hashes);
    free(t->idx);
    free(t);
}

uint64_t oc_nametab_count(const oc_nametab *t) { return t ? t->count : 0; }

static void place(uint64_t *hashes, uint32_t *idx, uint64_t cap, uint32_t i1, uint64_t h) {
    uint64_t s = h & (cap - 1);
    while (idx[s]) s = (s + 1) & (cap - 1);
    idx[s] = i1;
    hashes[s] = h;
}

oc_status oc_nametab_reserve(oc_nametab *t) {
    if (t->count >= OC_NAMETAB_MAX) return OC_ERR_LIMIT;
    if ((t->count + 1) * 2 <= t->cap) return OC_OK;
    uint64_t cap = t->cap * 2, *hashes;
    uint32_t *idx;
    if (alloc_slots(cap, &hashes, &idx) != 0) return OC_ERR_NOMEM;
    for (uint64_t s = 0; s < t->cap; s++)
        if (t->idx[s]) place(hashes, idx, cap, t->idx[s], t->hashes[s]);
    free(t->hashes);
    free(t->idx);
    t->hashes = hashes;
    t->idx = idx;
    t->cap = cap;
    return OC_OK;
}

int64_t oc_nametab_find(const oc_nametab *t, const void *name, size_t len, uint64_t hash) {
    for (uint64_t s = hash & (t->cap - 1); t->idx[s]; s = (s + 1) & (t->cap - 1)) {
        if (t->hashes[s] != hash) continue;
        const void *other;
        size_t olen;
        t->name_of(t->ctx, t->idx[s] - 1u, &other, &olen);
        if (olen == len && (len == 0 || memcmp(other, name, len) == 0))
            return (int64_t)(t->idx[s] - 1u);
    }
    return -1;
}

void oc_nametab_insert(oc_nametab *t, uint64_t index, uint64_t hash) {
    place(t->hashes, t->idx, t->cap, (uint32_t)(index + 1u), hash);
    t->count++;
}

int64_t oc_nametab_add(oc_nametab *t, const void *name, size_t len, uint64_t index) {
    uint64_t h = oc_nametab_hash(name, len);
    int64_t found = oc_nametab_find(t, name, len, h);
    if (found >= 0) return found;
    if (index >= OC_NAMETAB_MAX || oc_nametab_reserve(t) != OC_OK) return -1;
    oc_nametab_insert(t, index, h);
    return (int64_t)index;
}
