/*
 * parallel.c - work shared among threads: copies of tensor payloads, and any list of
 * independent jobs (oc__parallel_for; checksums of external data use it).
 *
 * Loading a large model is dominated by copying payloads into fresh memory, and on many
 * machines by the page faults of first touching that memory; both scale with threads.
 * The copies are cut into chunks of at most OC_COPY_CHUNK bytes, numbered in order, and
 * handed out through one atomic counter: a huge tensor is split, small ones are spread.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/bytes.h"
#include "internal/parallel.h"
#include "internal/source.h"

#define OC_COPY_CHUNK  (4u << 20)
#define OC_MAX_THREADS 64
/* Copies from a file mapping at least this large read the file instead (pread). */
#define OC_PREAD_MIN (256u << 10)

static oc__copy_job make_job(void *dst, const void *src, uint64_t size, const oc_owner *from) {
    oc__copy_job j = {dst, src, size, NULL, 0};
    if (size >= OC_PREAD_MIN) {
        oc_bytes view = {src, size, (oc_owner *)(uintptr_t)from, OC_BYTES_SHARED};
        oc_source *s = oc__bytes_source(&view, &j.source_offset);
        if (s && (s->caps & OC_SOURCE_BYPASS)) j.source = s;
    }
    return j;
}

/* Bytes [begin, begin + n) of a job. A failed or short read (the file changed under its
 * mapping) leaves the rest to memcpy from the mapping, as without a source to read. */
static void copy_range(const oc__copy_job *j, uint64_t begin, uint64_t n) {
    uint8_t *dst = (uint8_t *)j->dst + begin;
    const uint8_t *src = (const uint8_t *)j->src + begin;
    uint64_t got = 0;
    if (j->source &&
        oc_source_read_some(j->source, j->source_offset + begin, dst, n, &got, NULL) != OC_OK)
        got = 0;
    if (got < n) memcpy(dst + got, src + got, (size_t)(n - got));
}

void oc__copy_one(void *dst, const void *src, uint64_t size, const oc_owner *from) {
    oc__copy_job j = make_job(dst, src, size, from);
    copy_range(&j, 0, size);
}

int oc__copy_list_add(oc_arena *arena, oc__copy_list *l, void *dst, const void *src, uint64_t size,
                      const oc_owner *from) {
    if (l->count == l->cap) {
        uint64_t cap = l->cap ? l->cap * 2 : 64;
        oc__copy_job *jobs = oc_arena_alloc(arena, cap * sizeof *jobs);
        if (!jobs) return 0;
        if (l->count) memcpy(jobs, l->jobs, (size_t)(l->count * sizeof *jobs));
        l->jobs = jobs;
        l->cap = cap;
    }
    l->jobs[l->count++] = make_job(dst, src, size, from);
    l->bytes += size;
    return 1;
}

int oc__resolve_threads(int requested) {
    if (requested < 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        requested = n > 0 ? (int)n : 1;
    }
    if (requested < 1) requested = 1;
    return requested > OC_MAX_THREADS ? OC_MAX_THREADS : requested;
}

int oc__thread_start(pthread_t *thread, void *(*fn)(void *), void *arg) {
    /* A new thread inherits its creator's mask: block all, create, restore. Not the
     * faults: blocking one does not hold it back (POSIX leaves a SIGBUS, SIGSEGV, SIGILL or
     * SIGFPE raised while blocked undefined; Linux kills the process), and a program's
     * handler for them (the Python package's for its mappings, spec/security.md S-42)
     * must run on our threads too. */
    sigset_t all, old;
    sigfillset(&all);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGILL);
    sigdelset(&all, SIGFPE);
    int masked = pthread_sigmask(SIG_SETMASK, &all, &old);
    if (masked != 0) return masked; /* never a thread that could take a signal */
    int rc = pthread_create(thread, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

typedef struct pfor {
    void (*fn)(void *ctx, uint64_t i);
    void *ctx;
    uint64_t n;
    atomic_uint_fast64_t next; /* next unclaimed index */
} pfor;

static void *pfor_worker(void *arg) {
    pfor *p = arg;
    for (;;) {
        uint64_t i = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (i >= p->n) return NULL;
        p->fn(p->ctx, i);
    }
}

void oc__parallel_for(uint64_t n, int threads, void (*fn)(void *ctx, uint64_t i), void *ctx) {
    pfor p = {fn, ctx, n, 0};
    atomic_init(&p.next, 0);
    pthread_t tids[OC_MAX_THREADS];
    int started = 0;
    for (int i = 1; i < threads && (uint64_t)i < n && i < OC_MAX_THREADS; i++, started++)
        if (oc__thread_start(&tids[started], pfor_worker, &p) != 0) break;
    pfor_worker(&p); /* the calling thread works too; indices left by failed starts get done */
    for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
}

typedef struct chunks {
    const oc__copy_list *list;
    const uint64_t *first_chunk; /* chunk number where each job starts; [count] = total */
} chunks;

/* Chunk k of the list: the job holding it is found by binary search over first_chunk. */
static void copy_chunk(void *ctx, uint64_t k) {
    const chunks *c = ctx;
    uint64_t lo = 0, hi = c->list->count - 1; /* the last job whose first chunk is <= k */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (c->first_chunk[mid] <= k)
            lo = mid;
        else
            hi = mid - 1;
    }
    const oc__copy_job *j = &c->list->jobs[lo];
    uint64_t begin = (k - c->first_chunk[lo]) * OC_COPY_CHUNK;
    uint64_t n = j->size - begin < OC_COPY_CHUNK ? j->size - begin : OC_COPY_CHUNK;
    copy_range(j, begin, n);
}

void oc__copy_run(const oc__copy_list *l, int threads) {
    if (l->count == 0) return;
    uint64_t *first = threads > 1 && l->bytes >= 2u * OC_COPY_CHUNK
                          ? malloc((size_t)(l->count + 1) * sizeof *first)
                          : NULL;
    if (!first) { /* one thread: whole jobs, in order */
        for (uint64_t i = 0; i < l->count; i++)
            if (l->jobs[i].size) copy_range(&l->jobs[i], 0, l->jobs[i].size);
        return;
    }
    first[0] = 0;
    for (uint64_t i = 0; i < l->count; i++)
        first[i + 1] = first[i] + (l->jobs[i].size + OC_COPY_CHUNK - 1) / OC_COPY_CHUNK;
    chunks c = {l, first};
    oc__parallel_for(first[l->count], threads, copy_chunk, &c);
    free(first);
}
