/*
 * arena.c - bump allocation in blocks, freed in one call, with cleanup callbacks.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MADV_HUGEPAGE */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

#include "onnxcore/arena.h"
#include "internal/arena.h"
#include "internal/error.h"

static void free_block(oc_block *b);

oc_arena *oc_arena_new(void) {
    oc_arena *a = calloc(1, sizeof *a);
    if (a) a->next_block = OC_ARENA_FIRST_BLOCK;
    return a;
}

void oc_arena_free(oc_arena *a) {
    if (!a) return;
    for (oc_cleanup *c = a->cleanups; c; c = c->next) c->fn(c->ptr);
    oc_block *b = a->head;
    while (b) {
        oc_block *next = b->next;
        free_block(b);
        b = next;
    }
    free(a);
}

/* A zeroed block 2 MiB-aligned in its own mapping, with huge pages asked for.
 *
 * The advice is unconditional. With transparent huge pages in madvise mode, a large arena
 * otherwise takes one 4 KiB fault per page, and those faults are most of the first decode
 * of a large graph in a fresh process (bench_graph.py --fresh). The compaction stall that
 * defrag=madvise could cause did not occur in those measurements (compact_stall stayed 0);
 * what remains slow is the first touch of memory the hypervisor took back, which
 * protobuf and a plain read() pay alike. The block sizes grow to huge blocks in steps:
 * skipping the small steps saved a few faults and no measurable time. */
/* Mapped blocks of freed arenas kept for the next arena of the process (see
 * oc_arena_trim in onnxcore/arena.h): a second model then reuses pages already faulted
 * in instead of having the kernel zero and map fresh ones. At most OC_ARENA_CACHE_MAX
 * bytes, enough for the arena of a 100,000-node graph (138 MB). A reused block is not
 * zeroed when it is taken: its `dirty` mark, the end of what was ever written in it,
 * makes each allocation below it zero its own bytes as it is handed out (raw ones, which
 * their caller fills, not at all), so those bytes are written once, in cache, instead of
 * zeroed in one pass and written again. (Zeroing in one pass, then writing, was about a
 * quarter of decoding a large graph.) A cached block stays resident until it is reused
 * or trimmed: no MADV_FREE, under which the kernel takes such pages back whenever memory
 * runs low (a busy page cache is enough) and the next decode pays for faulting, zeroing
 * and compacting them again; and a range given MADV_FREE that covers part of a huge page
 * (as one sparing the header would) splits it into 4 KiB pages, into which decoding
 * takes a fifth longer. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static oc_block *cache_head;
static uint64_t cache_bytes;

static oc_block *cache_take(uint64_t len) {
    oc_block *b = NULL;
    pthread_mutex_lock(&cache_lock);
    for (oc_block **p = &cache_head; *p; p = &(*p)->next) {
        if ((*p)->mapped == len) { /* same length: the arena's accounting stays exact */
            b = *p;
            *p = b->next;
            cache_bytes -= len;
            break;
        }
    }
    pthread_mutex_unlock(&cache_lock);
    if (!b) return NULL;
    b->next = NULL;
    b->used = 0; /* (dirty was set when it was cached) */
    return b;
}

static bool cache_put(oc_block *b) {
    bool kept = false;
    if (b->used > b->dirty) b->dirty = b->used;
    pthread_mutex_lock(&cache_lock);
    if (b->mapped <= OC_ARENA_CACHE_MAX - cache_bytes) {
        b->next = cache_head;
        cache_head = b;
        cache_bytes += b->mapped;
        kept = true;
    }
    pthread_mutex_unlock(&cache_lock);
    return kept;
}

void oc_arena_trim(void) {
    pthread_mutex_lock(&cache_lock);
    oc_block *b = cache_head;
    cache_head = NULL;
    cache_bytes = 0;
    pthread_mutex_unlock(&cache_lock);
    while (b) {
        oc_block *next = b->next;
        munmap(b, (size_t)b->mapped);
        b = next;
    }
}

static oc_block *map_block(uint64_t size) {
    uint64_t want = sizeof(oc_block) + size, align = OC_ARENA_HUGE_BLOCK;
    uint64_t len = (want + align - 1) & ~(align - 1);
    if (len + align > (uint64_t)SIZE_MAX) return NULL;
    oc_block *cached = cache_take(len);
    if (cached) return cached;
    uint8_t *raw = mmap(NULL, (size_t)(len + align), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uint8_t *start = (uint8_t *)(((uintptr_t)raw + align - 1) & ~(uintptr_t)(align - 1));
    if (start > raw) munmap(raw, (size_t)(start - raw)); /* trim to the aligned range */
    if (raw + len + align > start + len)
        munmap(start + len, (size_t)(raw + len + align - (start + len)));
#ifdef MADV_HUGEPAGE
    madvise(start, (size_t)len, MADV_HUGEPAGE); /* advice only: fine if refused */
#endif
    oc_block *b = (oc_block *)(void *)start;
    b->mapped = len;
    b->size = len - sizeof(oc_block);
    return b;
}

static oc_block *new_block(oc_arena *a, uint64_t size) {
    if (size > (uint64_t)SIZE_MAX - sizeof(oc_block) - OC_ARENA_HUGE_BLOCK) return NULL;
    if (a->cap && (a->total > a->cap || size > a->cap - a->total)) {
        a->hit_cap = 1;
        return NULL;
    }
    oc_block *b = size >= OC_ARENA_HUGE_BLOCK ? map_block(size) : NULL;
    if (!b) {
        b = calloc(1, sizeof *b + (size_t)size); /* calloc: fresh pages come zeroed */
        if (!b) return NULL;
        b->size = size;
    }
    a->total += b->size;
    return b;
}

static void free_block(oc_block *b) {
    if (b->mapped) {
        if (!cache_put(b)) munmap(b, (size_t)b->mapped);
    } else {
        free(b);
    }
}

void *oc_arena_alloc(oc_arena *a, uint64_t size) { return a ? oc__arena_alloc(a, size) : NULL; }

static void *alloc_slow(oc_arena *a, uint64_t size, bool zero);

void *oc__arena_alloc_slow(oc_arena *a, uint64_t size) { return alloc_slow(a, size, true); }

void *oc__arena_alloc_slow_raw(oc_arena *a, uint64_t size) { return alloc_slow(a, size, false); }

/* p's n bytes of block b, zeroed where an earlier arena may have written them. */
static void *handed_out(const oc_block *b, void *p, uint64_t n, bool zero) {
    uint64_t at = (uint64_t)((unsigned char *)p - b->data);
    if (zero && at < b->dirty) memset(p, 0, (size_t)(n < b->dirty - at ? n : b->dirty - at));
    return p;
}

static void *alloc_slow(oc_arena *a, uint64_t size, bool zero) {
    if (size > UINT64_MAX / 2) return NULL;
    size = (size + OC_ARENA_ALIGN - 1) & ~(uint64_t)(OC_ARENA_ALIGN - 1);
    if (size == 0) size = OC_ARENA_ALIGN;
    oc_block *h = a->head;
    if (h && h->size - h->used >= size) {
        void *p = h->data + h->used;
        h->used += size;
        return handed_out(h, p, size, zero);
    }
    if (size > OC_ARENA_MAX_BLOCK / 4) {
        /* A big allocation gets a block of its own, linked behind the head so the head's
         * free space stays in use for small ones. */
        oc_block *b = new_block(a, size);
        if (!b) return NULL;
        b->used = size;
        if (h) {
            b->next = h->next;
            h->next = b;
        } else {
            a->head = b;
        }
        return handed_out(b, b->data, size, zero);
    }
    uint64_t bsize = a->next_block;
    while (bsize < size) bsize *= 2;
    if (a->next_block < OC_ARENA_MAX_BLOCK) a->next_block *= 2;
    oc_block *b = new_block(a, bsize);
    if (!b) return NULL;
    b->next = h;
    a->head = b;
    b->used = size;
    return handed_out(b, b->data, size, zero);
}

oc_status oc_arena_add_cleanup(oc_arena *a, void (*fn)(void *ptr), void *ptr) {
    oc_cleanup *c = oc_arena_alloc(a, sizeof *c);
    if (!c) return OC_ERR_NOMEM;
    c->fn = fn;
    c->ptr = ptr;
    c->next = a->cleanups;
    a->cleanups = c;
    return OC_OK;
}

uint64_t oc_arena_bytes_used(const oc_arena *a) { return a ? a->total : 0; }

uint64_t oc__arena_cap(oc_arena *a, uint64_t more) {
    uint64_t previous = a->cap;
    a->cap = more >= UINT64_MAX - a->total ? 0 : a->total + more;
    a->hit_cap = 0;
    return previous;
}

void oc__arena_uncap(oc_arena *a, uint64_t previous) { a->cap = previous; }

oc_status oc_str_set(oc_arena *a, oc_str *dst, const void *src, uint64_t size) {
    if (size == 0) {
        dst->data = "";
        dst->size = 0;
        return OC_OK;
    }
    char *p = oc__arena_alloc(a, size);
    if (!p) return OC_ERR_NOMEM;
    memcpy(p, src, (size_t)size);
    dst->data = p;
    dst->size = size;
    return OC_OK;
}

oc_status oc_str_set_cstr(oc_arena *a, oc_str *dst, const char *src) {
    return oc_str_set(a, dst, src, strlen(src));
}

bool oc_str_eq(oc_str s, const char *cstr) {
    size_t n = strlen(cstr);
    return s.size == n && (n == 0 || memcmp(s.data, cstr, n) == 0);
}
