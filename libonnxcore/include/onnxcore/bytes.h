/*
 * onnxcore/bytes.h - byte spans with explicit ownership, and shared owner tokens.
 *
 * A tensor's raw_data lives in an oc_bytes. A span is in one of three modes:
 *
 *   OC_BYTES_OWNED     the span owns its buffer (allocated by the library, 64-byte aligned);
 *                      releasing the span frees it; copying the span copies the bytes.
 *   OC_BYTES_BORROWED  the span points into memory it does not own and carries no owner
 *                      token: the caller keeps the bytes alive (no_copy parse from memory).
 *   OC_BYTES_SHARED    the span points into memory kept alive by a reference-counted owner
 *                      token (a file mapping, a consolidated buffer); copying the span takes
 *                      another reference; the storage goes when the last reference goes.
 *
 * A zero-initialised oc_bytes is a valid empty owned span. Spans are plain values; they are
 * not thread-safe themselves, but owner tokens are: references may be taken and dropped from
 * any thread.
 */
#ifndef ONNXCORE_BYTES_H
#define ONNXCORE_BYTES_H

#include "export.h"

#include <stdbool.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum oc_bytes_mode {
    OC_BYTES_OWNED = 0,
    OC_BYTES_BORROWED = 1,
    OC_BYTES_SHARED = 2
} oc_bytes_mode;

/* A reference-counted token whose release function runs when the last reference goes. */
typedef struct oc_owner oc_owner;

typedef struct oc_bytes {
    const uint8_t *data; /* NULL only when size is 0 */
    uint64_t size;
    oc_owner *owner; /* set only in OC_BYTES_SHARED mode */
    oc_bytes_mode mode;
} oc_bytes;

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Creates a token with one reference; release(ctx) runs when the count reaches zero.
 * Returns NULL when out of memory (release is then not called). */
OC_API oc_owner *oc_owner_new(void (*release)(void *ctx), void *ctx);
/* Takes another reference and returns the token. NULL is accepted and returned. */
OC_API oc_owner *oc_owner_ref(oc_owner *owner);
/* Drops a reference. NULL is accepted. */
OC_API void oc_owner_unref(oc_owner *owner);
/* The current reference count (for tests and diagnostics; racy by nature). */
OC_API uint64_t oc_owner_refcount(const oc_owner *owner);

/* True when the span does not own its bytes (BORROWED or SHARED). */
OC_API bool oc_bytes_is_borrowed(const oc_bytes *span);
#endif

/* Releases what the span holds and leaves it empty and owned. NULL is accepted. */
OC_API void oc_bytes_release(oc_bytes *span);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Makes the span an owned copy of size bytes at data. On failure the span is unchanged. */
OC_API oc_status oc_bytes_set_copy(oc_bytes *span, const void *data, uint64_t size, oc_error *err);
/* Makes the span own a fresh zero-filled buffer of size bytes; *out receives a writable
 * pointer to it. On failure the span is unchanged. */
OC_API oc_status oc_bytes_set_alloc(oc_bytes *span, uint64_t size, uint8_t **out, oc_error *err);
/* Makes the span borrow size bytes at data without an owner (caller keeps them alive). */
OC_API void oc_bytes_set_borrowed(oc_bytes *span, const void *data, uint64_t size);
/* Makes the span borrow size bytes at data kept alive by owner; takes its own reference. */
OC_API void oc_bytes_set_shared(oc_bytes *span, const void *data, uint64_t size, oc_owner *owner);
#endif

/* Copies src into dst (dst is released first) following the mode table: owned bytes are
 * duplicated, borrowed pointers stay borrowed, shared tokens gain a reference. dst and src
 * may not be the same span. On failure dst is left empty. */
OC_API oc_status oc_bytes_copy(oc_bytes *dst, const oc_bytes *src, oc_error *err);
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Moves src into dst (dst is released first); src is left empty. Never fails. */
OC_API void oc_bytes_move(oc_bytes *dst, oc_bytes *src);
#endif

/* A destination for bytes (an encoder's output, a file being written): write(ctx, data,
 * size) returns OC_OK or an error it has filled in err. Calls arrive in order; data is
 * only valid during the call. */
typedef oc_status (*oc_write_fn)(void *ctx, const void *data, uint64_t size, oc_error *err);

/* Passes the span's bytes to write, in order, in pieces of at most OC_BYTES_WRITE_CHUNK.
 * When the span lives in a read-only file mapping (oc_map_file), streaming it costs a
 * bounded amount of the process's memory whatever its size, in one of two ways:
 *  - the mapping's owner kept a descriptor of its file (oc_map_file keeps one for files
 *    of 1 MiB or more, up to 64 at once): spans of OC_BYTES_READ_PIECE bytes or more are
 *    read from the file with pread, in pieces of that size, through one buffer small
 *    enough to stay in the CPU's cache while write reads it; the mapping's pages are never
 *    faulted in (which costs more than the copy when the page cache holds small pages).
 *    A file cut short under its mapping gives OC_ERR_TRUNCATED;
 *  - otherwise the pages of each piece are handed back to the kernel once written: they
 *    stay in the page cache and are read again if touched, but they stop counting in the
 *    process's memory.
 * The bytes never change. */
#define OC_BYTES_WRITE_CHUNK (16u * 1024u * 1024u)
#define OC_BYTES_READ_PIECE  (256u * 1024u)
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
OC_API oc_status oc_bytes_write(const oc_bytes *span, oc_write_fn write, void *ctx, oc_error *err);
#endif

/* A pool of tensor storage for loads that repeat. Storage of OC_STORAGE_POOL_MIN_BLOCK
 * bytes or more that a copying load takes from a pool (oc_parse_options.storage_pool)
 * goes back to the pool when its last span is released, and the next load asking for a
 * block of the same size gets it back: memory already faulted in, so a reload costs a
 * copy instead of the first-touch page faults of fresh memory (on many machines the
 * larger part of a copying load). Spans from a pool are OC_BYTES_SHARED, each block with
 * its own owner token. Thread-safe: blocks may be taken and returned from any thread. */
typedef struct oc_storage_pool oc_storage_pool;
#define OC_STORAGE_POOL_MIN_BLOCK (64u * 1024u)

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* A pool keeping at most max_free_bytes of free storage (more is given back to the
 * system as it returns). NULL when out of memory. */
OC_API oc_storage_pool *oc_storage_pool_new(uint64_t max_free_bytes);
/* Frees the pool: its free storage goes back to the system now, blocks still in use when
 * their spans are released. NULL is accepted. */
OC_API void oc_storage_pool_free(oc_storage_pool *pool);
OC_API void oc_storage_pool_unref(oc_storage_pool *pool) OC_DEPRECATED("use oc_storage_pool_free");
/* The bytes of free storage the pool holds now. */
OC_API uint64_t oc_storage_pool_free_bytes(oc_storage_pool *pool);
/* Makes the span hold size bytes of uninitialised storage aligned to `alignment` (a power
 * of two; at least 64 is used) from the pool, or (pool NULL, or a small size) freshly
 * allocated and owned; *out receives a writable pointer. On failure (OC_ERR_NOMEM) the
 * span is unchanged. */
OC_API oc_status oc_bytes_set_storage(oc_bytes *span, uint64_t size, uint64_t alignment,
                                      oc_storage_pool *pool, uint8_t **out, oc_error *err);

/* Allocation of owned tensor storage: 64-byte aligned, freed with oc_bytes_free_buffer. */
OC_API void *oc_bytes_alloc_buffer(uint64_t size);
OC_API void oc_bytes_free_buffer(void *buffer);
#endif

#ifdef __cplusplus
}
#endif

#endif
