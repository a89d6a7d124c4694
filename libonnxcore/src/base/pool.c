/*
 * pool.c - tensor storage kept for reuse by repeated loads (bytes.h, oc_storage_pool).
 *
 * Each block has a record (its size, address and the pool) that lives as long as the
 * block. A block in use is owned by an oc_owner whose release puts the record into the
 * pool's free table, a hash of chains keyed by size, so a load of the same model finds
 * each tensor's block again in O(1). The pool is reference-counted: the caller's handle
 * and every block in use hold a reference, so blocks may outlive oc_storage_pool_free.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "onnxcore/bytes.h"
#include "internal/nametab.h"
#include "internal/bytes.h"
#include "internal/error.h"

#define POOL_BUCKETS 1024u /* a power of two */

typedef struct block {
    struct block *next; /* in its free chain */
    struct oc_storage_pool *pool;
    uint8_t *data;
    uint64_t size;
} block;

struct oc_storage_pool {
    pthread_mutex_t lock;
    uint64_t refs; /* the caller's handle + each block in use */
    int closed;    /* oc_storage_pool_free was called: keep nothing */
    uint64_t max_free, free_bytes;
    block *buckets[POOL_BUCKETS];
};

/* Keyed (nametab.h's per-process key), so tensor sizes chosen by a file cannot all land
 * in one chain (spec/security.md K-2). */
static unsigned bucket_of(uint64_t size) {
    uint8_t b[8];
    for (unsigned i = 0; i < 8; i++) b[i] = (uint8_t)(size >> (8 * i));
    return (unsigned)(oc_nametab_hash(b, sizeof b) & (POOL_BUCKETS - 1u));
}

oc_storage_pool *oc_storage_pool_new(uint64_t max_free_bytes) {
    oc_storage_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p);
        return NULL;
    }
    p->refs = 1;
    p->max_free = max_free_bytes;
    return p;
}

static void free_block(block *b) {
    free(b->data);
    free(b);
}

/* Drops a reference taken with p->lock held; frees the pool (after unlocking) at zero. */
static void unref_locked(oc_storage_pool *p) {
    int last = --p->refs == 0;
    pthread_mutex_unlock(&p->lock);
    if (last) {
        pthread_mutex_destroy(&p->lock);
        free(p);
    }
}

void oc_storage_pool_free(oc_storage_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->closed = 1;
    for (unsigned i = 0; i < POOL_BUCKETS; i++)
        while (p->buckets[i]) {
            block *b = p->buckets[i];
            p->buckets[i] = b->next;
            free_block(b);
        }
    p->free_bytes = 0;
    unref_locked(p);
}

void oc_storage_pool_unref(oc_storage_pool *p) { oc_storage_pool_free(p); }

uint64_t oc_storage_pool_free_bytes(oc_storage_pool *p) {
    pthread_mutex_lock(&p->lock);
    uint64_t n = p->free_bytes;
    pthread_mutex_unlock(&p->lock);
    return n;
}

/* The owner's release: the block goes back to the free table, or to the system. */
static void block_returns(void *ctx) {
    block *b = ctx;
    oc_storage_pool *p = b->pool;
    pthread_mutex_lock(&p->lock);
    if (!p->closed && b->size <= p->max_free - p->free_bytes) {
        unsigned k = bucket_of(b->size);
        b->next = p->buckets[k];
        p->buckets[k] = b;
        p->free_bytes += b->size;
    } else {
        free_block(b);
    }
    unref_locked(p);
}

/* A free block of exactly size bytes at the alignment, taken out of the table; or NULL. */
static block *take_free(oc_storage_pool *p, uint64_t size, uint64_t align) {
    for (block **link = &p->buckets[bucket_of(size)]; *link; link = &(*link)->next) {
        block *b = *link;
        if (b->size != size || ((uintptr_t)b->data & (align - 1u)) != 0) continue;
        *link = b->next;
        p->free_bytes -= size;
        return b;
    }
    return NULL;
}

oc_status oc_bytes_set_storage(oc_bytes *s, uint64_t size, uint64_t alignment, oc_storage_pool *p,
                               uint8_t **out, oc_error *err) {
    uint64_t align = alignment > 64 ? alignment : 64;
    if (alignment & (alignment - 1u))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "alignment %llu is not a power of two", (unsigned long long)alignment);
    if (!p || size < OC_STORAGE_POOL_MIN_BLOCK) {
        void *q = NULL;
        if (size && (size > SIZE_MAX || posix_memalign(&q, (size_t)align, (size_t)size) != 0))
            return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET,
                            "out of memory for %llu bytes of tensor data",
                            (unsigned long long)size);
        oc__bytes_adopt(s, q, size);
        *out = q;
        return OC_OK;
    }
    pthread_mutex_lock(&p->lock);
    block *b = take_free(p, size, align);
    pthread_mutex_unlock(&p->lock);
    if (!b) {
        void *q = NULL;
        b = malloc(sizeof *b);
        if (!b || size > SIZE_MAX || posix_memalign(&q, (size_t)align, (size_t)size) != 0) {
            free(b);
            return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET,
                            "out of memory for %llu bytes of tensor data",
                            (unsigned long long)size);
        }
        b->pool = p;
        b->data = q;
        b->size = size;
    }
    oc_owner *owner = oc_owner_new(block_returns, b);
    if (!owner) {
        free_block(b);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    pthread_mutex_lock(&p->lock);
    p->refs++; /* the block in use holds the pool */
    pthread_mutex_unlock(&p->lock);
    oc_bytes_set_shared(s, b->data, size, owner);
    oc_owner_unref(owner); /* the span holds the only reference */
    *out = b->data;
    return OC_OK;
}
