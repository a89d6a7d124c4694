/*
 * internal/arena.h - the arena's layout, for an inline fast path in the library's hot
 * loops (the decoder allocates hundreds of thousands of small objects per model).
 */
#ifndef ONNXCORE_INTERNAL_ARENA_H
#define ONNXCORE_INTERNAL_ARENA_H

#include <stdint.h>

#include "onnxcore/arena.h"

#define OC_ARENA_ALIGN       16u
#define OC_ARENA_FIRST_BLOCK 4096u
#define OC_ARENA_MAX_BLOCK   (8u << 20)
/* Blocks this large are mapped 2 MiB-aligned and offered transparent huge pages: a
 * graph of 100,000 nodes then costs dozens of page faults instead of twelve thousand. */
#define OC_ARENA_HUGE_BLOCK (2u << 20)
/* Bytes of freed mapped blocks kept for reuse by later arenas (arena.c, oc_arena_trim). */
#define OC_ARENA_CACHE_MAX ((uint64_t)256 << 20)

typedef struct oc_block {
    struct oc_block *next;
    uint64_t size;
    uint64_t used;
    uint64_t mapped; /* bytes mapped with mmap (0: from calloc) */
    uint64_t dirty;  /* data[0, dirty) may hold an earlier arena's bytes (a reused block):
                      * zeroed as it is handed out, not before */
    _Alignas(16) unsigned char data[];
} oc_block;

typedef struct oc_cleanup {
    struct oc_cleanup *next;
    void (*fn)(void *ptr);
    void *ptr;
} oc_cleanup;

struct oc_arena {
    oc_block *head;       /* the block small allocations bump from */
    oc_cleanup *cleanups; /* newest first */
    uint64_t next_block;  /* size of the next block, doubling up to OC_ARENA_MAX_BLOCK */
    uint64_t total;       /* bytes obtained from the system */
    uint64_t cap;         /* total may not pass this (0: no cap); see oc__arena_cap */
    int hit_cap;          /* an allocation failed because of cap */
};

/* Caps what the arena takes from the system at `more` bytes beyond what it holds now
 * (UINT64_MAX: no cap) and clears hit_cap; returns the previous cap, for
 * oc__arena_uncap. A decode runs under the cap of its max_memory (M-1). */
uint64_t oc__arena_cap(oc_arena *a, uint64_t more);
void oc__arena_uncap(oc_arena *a, uint64_t previous);

/* Allocations that do not fit the head block (and absurd sizes). */
void *oc__arena_alloc_slow(oc_arena *a, uint64_t size);

/* Allocations that do not fit the head block, raw (nothing zeroed) or zeroed. */
void *oc__arena_alloc_slow_raw(oc_arena *a, uint64_t size);

/* A bump of the head block's pointer when size fits; in a reused block the bytes are
 * zeroed here (zero: a constant where it is inlined), while the caller is about to write
 * them anyway (in cache), rather than all at once when the block is reused. */
static inline void *oc__arena_bump(oc_arena *a, uint64_t size, int zero) {
    oc_block *h = a->head;
    uint64_t n = (size + OC_ARENA_ALIGN - 1) & ~(uint64_t)(OC_ARENA_ALIGN - 1);
    if (h && size - 1 < (1u << 20) && n <= h->size - h->used) { /* size 0 takes the slow path */
        void *p = h->data + h->used;
        if (zero && h->used < h->dirty) __builtin_memset(p, 0, (size_t)n);
        h->used += n;
        return p;
    }
    return zero ? oc__arena_alloc_slow(a, size) : oc__arena_alloc_slow_raw(a, size);
}

/* oc_arena_alloc without the call. */
static inline void *oc__arena_alloc(oc_arena *a, uint64_t size) {
    return oc__arena_bump(a, size, 1);
}

/* As oc__arena_alloc, for storage the caller fills whole before anything reads it (a
 * copied string, an array's room whose slots are written as they are taken): it may
 * hold an earlier arena's bytes. */
static inline void *oc__arena_alloc_raw(oc_arena *a, uint64_t size) {
    return oc__arena_bump(a, size, 0);
}

#endif
