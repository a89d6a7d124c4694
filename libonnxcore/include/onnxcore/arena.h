/*
 * onnxcore/arena.h - the arena every decoded or built message tree lives in, and strings.
 *
 * An arena hands out zeroed memory that lives until the arena is freed, all of it in one
 * call. Messages, strings, repeated-field arrays and unknown-field bytes of one tree are
 * allocated from its arena. Tensor raw_data is not: it lives in oc_bytes spans, which the
 * arena releases when it is freed (every TensorProto allocated from the arena is
 * registered for that). An arena is not thread-safe: one thread at a time.
 */
#ifndef ONNXCORE_ARENA_H
#define ONNXCORE_ARENA_H

#include "export.h"

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oc_arena oc_arena;

/* A string or bytes field: size bytes at data (not NUL-terminated; may contain NULs). */
typedef struct oc_str {
    const char *data;
    uint64_t size;
} oc_str;

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Creates an empty arena; NULL when out of memory. */
OC_API oc_arena *oc_arena_new(void);
/* Runs the registered cleanups (newest first) and frees all memory. NULL is accepted. */
OC_API void oc_arena_free(oc_arena *arena);
/* size bytes of zeroed memory aligned to 16, or NULL when out of memory or size is absurd. */
OC_API void *oc_arena_alloc(oc_arena *arena, uint64_t size);
/* Registers fn(ptr) to run when the arena is freed. Returns OC_ERR_NOMEM on failure. */
OC_API oc_status oc_arena_add_cleanup(oc_arena *arena, void (*fn)(void *ptr), void *ptr);
/* Returns to the system the memory that freed arenas left for reuse. oc_arena_free (and
 * so oc_model_free) keeps up to 256 MiB of an arena's large blocks (those of 2 MiB and
 * more) in a process-wide, thread-safe cache, so that the next model decoded in the
 * process reuses pages already mapped; the rest goes back to the system at once. Call
 * this when no more models will be loaded for a while. Safe from any thread. */
OC_API void oc_arena_trim(void);
/* Bytes the arena holds from the system (for statistics). */
OC_API uint64_t oc_arena_bytes_used(const oc_arena *arena);

/* Sets *dst to a copy of size bytes at src, allocated in the arena. */
OC_API oc_status oc_str_set(oc_arena *arena, oc_str *dst, const void *src, uint64_t size);
/* Sets *dst to a copy of the NUL-terminated string src. */
OC_API oc_status oc_str_set_cstr(oc_arena *arena, oc_str *dst, const char *src);
/* True when s holds exactly the NUL-terminated string cstr. */
OC_API bool oc_str_eq(oc_str s, const char *cstr);
#endif

#ifdef __cplusplus
}
#endif

#endif
