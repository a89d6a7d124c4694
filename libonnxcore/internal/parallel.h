/*
 * internal/parallel.h - copying many byte ranges, and running many jobs, with several threads.
 */
#ifndef ONNXCORE_INTERNAL_PARALLEL_H
#define ONNXCORE_INTERNAL_PARALLEL_H

#include "onnxcore_private.h"

#include <pthread.h>
#include <stdint.h>

#include "onnxcore/arena.h"
#include "onnxcore/bytes.h"

/* A copy of size bytes from src to dst. When src lies in a source that reads around its
 * mapping (OC_SOURCE_BYPASS, internal/source.h: a mapped file whose descriptor was kept),
 * large copies read the source at source_offset instead: the same bytes, without faulting
 * the mapping's pages into the process (which costs more than the copy when the page
 * cache holds small pages, and serialises threads on the mapping's page tables). */
struct oc_source;
typedef struct oc__copy_job {
    void *dst;
    const void *src;
    uint64_t size;
    struct oc_source *source; /* or NULL: memcpy */
    uint64_t source_offset;
} oc__copy_job;

/* A growable list of copies, allocated in an arena. */
typedef struct oc__copy_list {
    oc__copy_job *jobs;
    uint64_t count, cap, bytes;
} oc__copy_list;

/* Appends a copy of src, which lies in storage kept by `from` (NULL: plain memory);
 * returns 0 when out of memory. */
int oc__copy_list_add(oc_arena *arena, oc__copy_list *list, void *dst, const void *src,
                      uint64_t size, const oc_owner *from);

/* Makes one such copy now, in the calling thread. */
void oc__copy_one(void *dst, const void *src, uint64_t size, const oc_owner *from);

/* Runs every copy of the list using up to `threads` threads (the caller's included); large
 * copies are split so that the threads share the bytes evenly. Falls back to the calling
 * thread alone when threads cannot be started. */
void oc__copy_run(const oc__copy_list *list, int threads);

/* Calls fn(ctx, i) once for every i in [0, n), in no set order, using up to `threads`
 * threads (the caller's included; never more than n). Falls back to fewer threads, down
 * to the calling thread alone, when threads cannot be started. */
OC_PRIVATE void oc__parallel_for(uint64_t n, int threads, void (*fn)(void *ctx, uint64_t i),
                                 void *ctx);

/* Every thread the library creates starts here: pthread_create(thread, NULL, fn, arg) with
 * every signal blocked in the new thread but the faults (SIGBUS, SIGSEGV, SIGILL, SIGFPE),
 * which a mask cannot hold back. A program's handler (which may call
 * oc_cleanup_run, or end the process) then runs on one of the program's threads, never on
 * ours; and a thread that holds signals back (a commit between its renames) holds them
 * back for the whole process. Returns pthread_create's result. */
int oc__thread_start(pthread_t *thread, void *(*fn)(void *), void *arg);

/* The thread count an option value asks for: <= 1 -> 1, negative -> online cores. */
OC_PRIVATE int oc__resolve_threads(int requested);

#endif
