/*
 * parallel.c - copies of tensor payloads shared among threads.
 *
 * Loading a large model is dominated by copying payloads into fresh memory, and on many
 * machines by the page faults of first touching that memory; both scale with threads.
 * The copies are cut into chunks of at most OC_COPY_CHUNK bytes, numbered in order, and
 * handed out through one atomic counter: a huge tensor is split, small ones are spread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal/bytes.h"
#include "internal/parallel.h"

#define OC_COPY_CHUNK (4u << 20)
#define OC_MAX_THREADS 64
/* Copies from a file mapping at least this large read the file instead (pread). */
#define OC_PREAD_MIN (256u << 10)

static oc__copy_job make_job(void *dst, const void *src, uint64_t size, const oc_owner *from) {
    oc__copy_job j = {dst, src, size, -1, 0};
    if (size >= OC_PREAD_MIN && !oc__owner_file_offset(from, src, size, &j.fd, &j.file_offset))
        j.fd = -1;
    return j;
}

/* Bytes [begin, begin + n) of a job. A failed or short read (the file changed under its
 * mapping) leaves the rest to memcpy from the mapping, as without a descriptor. */
static void copy_range(const oc__copy_job *j, uint64_t begin, uint64_t n) {
    uint8_t *dst = (uint8_t *)j->dst + begin;
    const uint8_t *src = (const uint8_t *)j->src + begin;
    if (j->fd >= 0) {
        uint64_t at = j->file_offset + begin;
        while (n) {
            ssize_t r = pread(j->fd, dst, n > (1u << 30) ? (1u << 30) : (size_t)n, (off_t)at);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            dst += r;
            src += r;
            at += (uint64_t)r;
            n -= (uint64_t)r;
        }
    }
    if (n) memcpy(dst, src, (size_t)n);
}

void oc__copy_one(void *dst, const void *src, uint64_t size, const oc_owner *from) {
    oc__copy_job j = make_job(dst, src, size, from);
    copy_range(&j, 0, size);
}

int oc__copy_list_add(oc_arena *arena, oc__copy_list *l, void *dst, const void *src,
                      uint64_t size, const oc_owner *from) {
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

typedef struct shared {
    const oc__copy_list *list;
    const uint64_t *first_chunk; /* chunk number where each job starts; [count] = total */
    atomic_uint_fast64_t next;   /* next unclaimed chunk */
} shared;

static void *worker(void *arg) {
    shared *s = arg;
    const oc__copy_list *l = s->list;
    uint64_t total = s->first_chunk[l->count], job = 0;
    for (;;) {
        uint64_t k = atomic_fetch_add_explicit(&s->next, 1, memory_order_relaxed);
        if (k >= total) return NULL;
        /* One thread's claims only rise, so its job cursor only moves forward. */
        while (s->first_chunk[job + 1] <= k) job++;
        const oc__copy_job *j = &l->jobs[job];
        uint64_t begin = (k - s->first_chunk[job]) * OC_COPY_CHUNK;
        uint64_t n = j->size - begin < OC_COPY_CHUNK ? j->size - begin : OC_COPY_CHUNK;
        copy_range(j, begin, n);
    }
}

static void copy_serial(const oc__copy_list *l) {
    for (uint64_t i = 0; i < l->count; i++)
        if (l->jobs[i].size) copy_range(&l->jobs[i], 0, l->jobs[i].size);
}

void oc__copy_run(const oc__copy_list *l, int threads) {
    if (l->count == 0) return;
    uint64_t *first = threads > 1 && l->bytes >= 2u * OC_COPY_CHUNK
                          ? malloc((size_t)(l->count + 1) * sizeof *first) : NULL;
    if (!first) {
        copy_serial(l);
        return;
    }
    first[0] = 0;
    for (uint64_t i = 0; i < l->count; i++)
        first[i + 1] = first[i] + (l->jobs[i].size + OC_COPY_CHUNK - 1) / OC_COPY_CHUNK;
    shared s = {l, first, 0};
    atomic_init(&s.next, 0);
    pthread_t tids[OC_MAX_THREADS];
    int started = 0;
    for (int i = 1; i < threads && i < OC_MAX_THREADS; i++, started++)
        if (pthread_create(&tids[started], NULL, worker, &s) != 0) break;
    worker(&s); /* the calling thread works too; chunks left by failed starts get done */
    for (int i = 0; i < started; i++) pthread_join(tids[i], NULL);
    free(first);
}
