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
#define OC_ARENA_CACHE_MAX ((uint64_t)64 << 20)

typedef struct oc_block {
    struct oc_block *next;
    uint64_t size;
    uint64_t used;
    uint64_t mapped; /* bytes mapped with mmap (0: from calloc) */
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

/* oc_arena_alloc without the call: a bump of the head block's pointer when it fits. */
static inline void *oc__arena_alloc(oc_arena *a, uint64_t size) {
    oc_block *h = a->head;
    uint64_t n = (size + OC_ARENA_ALIGN - 1) & ~(uint64_t)(OC_ARENA_ALIGN - 1);
    if (h && size - 1 < (1u << 20) && n <= h->size - h->used) { /* size 0 takes the slow path */
        void *p = h->data + h->used;
        h->used += n;
        return p;
    }
    return oc__arena_alloc_slow(a, size);
}

#endif
