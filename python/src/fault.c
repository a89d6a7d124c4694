/*
 * fault.c - SIGBUS in the package's own mappings (fault.h; spec/security.md S-42).
 *
 * An array from onnxz.open(p)[name] points into a read-only private mapping of p (or of
 * one of its data files). When another process cuts that file (truncate, `cp new p`,
 * onnx.save over it), touching a page past its new end raises SIGBUS, which by default
 * kills the interpreter. Here a handler takes the faults that land in a mapping of ours:
 * it maps zero-filled memory over the rest of that mapping, so the touch completes
 * (reading zeros), and reports the cut: to the scope of the library call running in the
 * faulting thread (a load, an open: the call fails), to the owner of a watched mapping
 * (the Python layer's parse of a plain .onnx), else as onnxz.Error scheduled for the main
 * thread (Py_AddPendingCall), raised at its next bytecode. Any other fault goes to the
 * handler that was there before (or the default action: the process dies as it would
 * have). A file replaced by a rename (as onnxz and most tools save) never faults: the
 * mapping keeps the old file.
 *
 * Which mappings are ours the handler finds in a table of its own: the libraries report
 * each file mapping they make and drop (oc__map_observe), so a mapping is watched exactly
 * as long as it lives, however many there are. The table grows by chunks that are never
 * freed; writers take a mutex, the handler only reads, lock-free. In the handler: atomics,
 * gettid, mmap, sigaction and Py_AddPendingCall only (no allocation, no lock, no file).
 */
#define _GNU_SOURCE
#include <Python.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "onnxcore_private.h" /* oc__map_observe */

#include "fault.h"

/* What a slot of the table holds. */
enum { SLOT_FREE, SLOT_MAPPING, SLOT_WATCHED, SLOT_SCOPE };

typedef struct slot {
    atomic_int kind;         /* SLOT_*, set last when a slot is filled, first when freed */
    atomic_uintptr_t lo, hi; /* a mapping: its pages */
    atomic_int tid;          /* a scope: its thread */
    atomic_int cut;          /* a watched mapping or a scope: a fault was mended */
    char *name;              /* a mapping: its file (ours); a scope: the caller's buffer */
    struct slot *next_free;  /* with the lock */
} slot;

#define CHUNK_SLOTS 256

typedef struct chunk {
    slot slots[CHUNK_SLOTS];
    struct chunk *_Atomic next;
} chunk;

static chunk first;
static slot *free_slots; /* with the lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t page_mask; /* the page size less one, known before the handler runs */

static struct sigaction previous;
static onnxz_fault_raise_fn raise_cut;
static char cut_path[ONNXZ_FAULT_PATH_MAX]; /* the file of the pending error */
static atomic_int pending;

/* ---- the table ---------------------------------------------------------------------- */

static void add_free(chunk *c) {
    for (int i = CHUNK_SLOTS - 1; i >= 0; i--) {
        c->slots[i].next_free = free_slots;
        free_slots = &c->slots[i];
    }
}

/* A free slot, taken out of the free list (a new chunk when none is left): with the lock.
 * NULL when out of memory. */
static slot *take_slot(void) {
    static int started;
    if (!started) {
        add_free(&first);
        started = 1;
    }
    if (!free_slots) {
        chunk *c = calloc(1, sizeof *c), *last = &first;
        if (!c) return NULL;
        add_free(c);
        while (atomic_load(&last->next)) last = atomic_load(&last->next);
        atomic_store(&last->next, c); /* the handler sees it whole */
    }
    slot *s = free_slots;
    free_slots = s->next_free;
    return s;
}

/* Fills a slot and makes it visible to the handler; NULL when out of memory. */
static slot *add(int kind, uintptr_t lo, uintptr_t hi, int tid, char *name) {
    pthread_mutex_lock(&lock);
    slot *s = take_slot();
    if (s) {
        atomic_store(&s->lo, lo);
        atomic_store(&s->hi, hi);
        atomic_store(&s->tid, tid);
        atomic_store(&s->cut, 0);
        s->name = name;
        atomic_store(&s->kind, kind);
    }
    pthread_mutex_unlock(&lock);
    return s;
}

/* Hides a slot from the handler and frees it; returns whether a fault was mended in it. */
static int drop(slot *s) {
    atomic_store(&s->kind, SLOT_FREE);
    int cut = atomic_load(&s->cut);
    pthread_mutex_lock(&lock);
    s->next_free = free_slots;
    free_slots = s;
    pthread_mutex_unlock(&lock);
    return cut;
}

/* In the handler: the first live slot the test accepts. */
static slot *find(int (*test)(const slot *, uintptr_t), uintptr_t key) {
    for (chunk *c = &first; c; c = atomic_load(&c->next))
        for (int i = 0; i < CHUNK_SLOTS; i++)
            if (test(&c->slots[i], key)) return &c->slots[i];
    return NULL;
}

static int maps(const slot *s, uintptr_t addr) {
    int kind = atomic_load(&s->kind);
    return (kind == SLOT_MAPPING || kind == SLOT_WATCHED) && addr >= atomic_load(&s->lo) &&
           addr < atomic_load(&s->hi);
}

static int scope_of(const slot *s, uintptr_t tid) {
    return atomic_load(&s->kind) == SLOT_SCOPE && (uintptr_t)atomic_load(&s->tid) == tid;
}

/* A mapping's slot, from addr for len bytes, over whole pages. */
static slot *add_mapping(int kind, const void *addr, size_t len, const char *name) {
    char *copy = strdup(name ? name : "");
    uintptr_t lo = (uintptr_t)addr, hi = (lo + len + page_mask) & ~page_mask;
    slot *s = copy ? add(kind, lo, hi, 0, copy) : NULL;
    if (!s) free(copy);
    return s;
}

/* Drops a mapping's slot (NULL: none); returns whether a fault was mended in it. */
static int drop_mapping(slot *s) {
    if (!s) return 0;
    char *name = s->name;
    int cut = drop(s);
    free(name);
    return cut;
}

static void *on_map(const void *addr, size_t len, const char *name) {
    return add_mapping(SLOT_MAPPING, addr, len, name);
}

static void on_unmap(void *token) { drop_mapping(token); }

static const oc_map_observer observer = {on_map, on_unmap};

/* ---- the handler -------------------------------------------------------------------- */

static int raise_pending(void *unused) {
    (void)unused;
    int r = raise_cut(cut_path);
    atomic_store(&pending, 0);
    return r;
}

static void copy_name(char *dst, const char *src) {
    size_t i = 0;
    for (; src[i] && i + 1 < ONNXZ_FAULT_PATH_MAX; i++) dst[i] = src[i];
    dst[i] = 0;
}

/* A fault that is not ours: to the handler that was there, or the default action (the
 * faulting access runs again and kills the process, as without this handler). */
static void pass_on(int sig, siginfo_t *info, void *uc) {
    if (previous.sa_flags & SA_SIGINFO) {
        if (previous.sa_sigaction) {
            previous.sa_sigaction(sig, info, uc);
            return;
        }
    } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
        previous.sa_handler(sig);
        return;
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGBUS, &dfl, NULL);
}

/* Zeros from the faulting page to the mapping's end, in one mapping of their own. */
static int mend(const slot *m, uintptr_t addr) {
    uintptr_t from = addr & ~page_mask, to = atomic_load(&m->hi);
    return mmap((void *)from, to - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                0) != MAP_FAILED;
}

/* Tells whoever fails for the cut of m: its owner, the scope of this thread, or the main
 * thread at its next bytecode (one error at a time). */
static void report(slot *m) {
    slot *scope = atomic_load(&m->kind) == SLOT_WATCHED ? m : find(scope_of, (uintptr_t)gettid());
    if (scope) {
        if (scope != m) copy_name(scope->name, m->name);
        atomic_store(&scope->cut, 1);
    } else if (!atomic_exchange(&pending, 1)) {
        copy_name(cut_path, m->name);
        if (Py_AddPendingCall(raise_pending, NULL) != 0) atomic_store(&pending, 0);
    }
}

static void on_sigbus(int sig, siginfo_t *info, void *uc) {
    int saved = errno;
    uintptr_t addr = (uintptr_t)info->si_addr;
    slot *m = info->si_code == BUS_ADRERR ? find(maps, addr) : NULL;
    if (m && mend(m, addr))
        report(m);
    else
        pass_on(sig, info, uc);
    errno = saved;
}

/* With the GIL. */
static void install(void) {
    struct sigaction sa, now;
    if (sigaction(SIGBUS, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
        now.sa_sigaction == on_sigbus)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &now) == 0) previous = now;
}

/* ---- fault.h ------------------------------------------------------------------------ */

int onnxz_fault_init(onnxz_fault_raise_fn raise_fn) {
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || (page & (page - 1))) {
        PyErr_SetString(PyExc_MemoryError, "onnxz: the page size is unknown");
        return -1;
    }
    page_mask = (uintptr_t)page - 1;
    raise_cut = raise_fn;
    oc__map_observe(&observer);
    return 0;
}

void onnxz_fault_enter(onnxz_fault_scope *s) {
    install();
    s->path[0] = 0;
    s->slot = add(SLOT_SCOPE, 0, 0, (int)gettid(), s->path);
}

int onnxz_fault_leave(onnxz_fault_scope *s) { return s->slot ? drop(s->slot) : 0; }

void *onnxz_fault_watch(const void *addr, size_t len, const char *name) {
    install();
    return add_mapping(SLOT_WATCHED, addr, len, name);
}

int onnxz_fault_unwatch(void *token) { return drop_mapping(token); }
