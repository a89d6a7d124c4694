/*
 * fault.c - SIGBUS in the package's own mappings (fault.h; spec/security.md S-42).
 *
 * An array from onnxz.open(p)[name] points into a read-only private mapping of p (or of
 * one of its data files). When another process cuts that file (truncate, `cp new p`,
 * onnx.save over it), touching a page past its new end raises SIGBUS, which by default
 * kills the interpreter. Here a handler takes the faults that land in a mapping of ours:
 * it maps zero-filled memory over the rest of that mapping, so the touch completes
 * (reading zeros), and reports the cut: to the scope of the library call running in the
 * faulting thread (a load, an open, a tensor read: the call fails), to the owner of a
 * watched mapping (the Python layer's parse of a plain .onnx), else to the main thread,
 * which raises onnxz.Error at its next bytecode. Any other fault goes to the handler that
 * was there before (or the default action: the process dies as it would have). A file
 * replaced by a rename (as onnxz and most tools save) never faults: the mapping keeps the
 * old file.
 *
 * The table. Which mappings are ours the handler finds in a table of slots: the libraries
 * report each file mapping they make and drop (oc__map_observe), so a mapping is watched
 * exactly as long as it lives, however many there are. Handlers of any thread read the
 * table while other threads claim and free slots, and nothing in it is locked: a handler
 * may interrupt a thread in the middle of a change, and a fork copies the table as it is
 * at that instant, so a lock could stay taken forever. Each slot is a seqlock with one
 * writer at a time, the thread that claimed it (a compare-and-swap from free): its state
 * word holds a generation and a phase (free, being written, live). A handler trusts a
 * slot's fields only when the slot was live and its state the same before and after it
 * read them, so it never mixes the fields of two mappings that shared a slot; names are
 * copied into the slot, so a handler never reads a freed one. The fields are atomics read
 * and written relaxed; the order comes from the fences. A writer fences (release) after
 * it claims the slot (free to being written) and before it changes a field; a handler fences
 * (acquire) after reading the fields and before reading the state again. If the handler
 * read any field a writer changed, the fences synchronize, so its second read of the
 * state sees that writer's change and the fields are dropped (Boehm, "Can seqlocks get
 * along with programming language memory models?", MSPC 2012). A writer publishes a slot
 * with a release store of the live state; a handler that reads it with acquire sees every
 * field written before. Slots live in chunks, each twice the size of the one before, that
 * are never freed: a handler never reads freed memory, and the table has no fixed size. A
 * fork in the middle of a write leaves that one slot unusable in the child, nothing more.
 *
 * The main thread. Py_AddPendingCall takes a lock, so a handler must not call it (CPython
 * stopped doing so in its own handler for that reason: python/cpython#74888). CPython's
 * handler only sets flags (atomics) that its eval loop checks at the next bytecode of the
 * main thread, which then runs the Python handler of the signal. PyErr_SetInterruptEx,
 * documented as async-signal-safe, does exactly that: so at import the package makes a
 * function of its own the Python handler of SIGBUS, puts its C handler back in front, and
 * for a cut outside any scope fills one static record and calls PyErr_SetInterruptEx
 * (SIGBUS); in the main thread the Python handler raises the cut.
 *
 * Cuts stay seen. A mended mapping reads zeros from then on, so its slot keeps a mark of
 * the cut until the mapping is dropped, and a count of every cut lets the common path
 * skip the table: onnxz_fault_cut asks, for one owner (the reader whose calls made the
 * mappings), whether any of its mappings was cut, and scans only when the count moved.
 *
 * In the handler: atomics, gettid, getpid, mmap, sigaction and PyErr_SetInterruptEx only
 * (no allocation, no lock, no file).
 */
#define _GNU_SOURCE
#include <Python.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "onnxcore_private.h" /* oc__map_observe */

#include "fault.h"

/* ---- the table ---------------------------------------------------------------------- */

/* A slot's state: its generation (one more each time it is claimed) times 4 plus its
 * phase. */
enum { FREE, WRITING, LIVE };
#define PHASE(state) ((state)&3u)

/* What a live slot is. */
enum { SLOT_MAPPING, SLOT_WATCHED, SLOT_SCOPE };

typedef struct slot {
    atomic_ulong state;      /* generation and phase (above) */
    atomic_int kind;         /* SLOT_* */
    atomic_uintptr_t lo, hi; /* a mapping: its pages */
    atomic_long pid, tid;    /* a scope: its thread, in this process (not a parent's) */
    atomic_int cut;          /* a fault was mended in this mapping, or this scope's (handlers) */
    atomic_uintptr_t owner;  /* a mapping: the owner of the scope it was made in (0: none) */
    _Atomic(char *) path;    /* a scope: the caller's buffer for the cut file */
    _Atomic(char) name[ONNXZ_FAULT_PATH_MAX]; /* a mapping: its file */
    size_t index;                             /* where it is in the table (set once) */
} slot;

/* Chunk k holds FIRST_SLOTS << k slots, from index FIRST_SLOTS * (2^k - 1) on. */
#define FIRST_SLOTS 64
#define CHUNKS      40 /* 64 * (2^40 - 1) slots: far more than a process can map */

static _Atomic(slot *) chunks[CHUNKS];
static atomic_size_t hint;  /* where claim starts: as a rule, no free slot lies below it */
static uintptr_t page_mask; /* the page size less one, known before the handler runs */
static atomic_ulong cuts;   /* the mappings mended, ever: onnxz_fault_cut's fast path */
static _Thread_local uintptr_t owner_now; /* the owner of this thread's scope (0: none) */

static size_t chunk_base(int k) { return FIRST_SLOTS * (((size_t)1 << k) - 1); }
static size_t chunk_size(int k) { return (size_t)FIRST_SLOTS << k; }

/* The slot of index i, its chunk made if it is the first to need it; NULL when out of
 * memory. */
static slot *slot_at(size_t i) {
    int k = 0;
    while (k + 1 < CHUNKS && i >= chunk_base(k + 1)) k++;
    if (i - chunk_base(k) >= chunk_size(k)) return NULL;
    slot *c = atomic_load_explicit(&chunks[k], memory_order_acquire);
    if (!c) {
        slot *made = calloc(chunk_size(k), sizeof *made); /* all free, generation 0 */
        if (!made) return NULL;
        for (size_t j = 0; j < chunk_size(k); j++) made[j].index = chunk_base(k) + j;
        if (atomic_compare_exchange_strong_explicit(&chunks[k], &c, made, memory_order_acq_rel,
                                                    memory_order_acquire))
            c = made; /* published with release: whoever sees it sees it whole */
        else
            free(made); /* another thread's came first; c is it */
    }
    return &c[i - chunk_base(k)];
}

/* A free slot, claimed: in the writing phase of a new generation, this thread its only
 * writer. NULL when out of memory. */
static slot *claim(void) {
    size_t start = atomic_load_explicit(&hint, memory_order_relaxed);
    for (size_t i = start;; i++) {
        slot *s = slot_at(i);
        if (!s) return NULL;
        unsigned long st = atomic_load_explicit(&s->state, memory_order_relaxed);
        if (PHASE(st) != FREE ||
            !atomic_compare_exchange_strong(&s->state, &st, (st & ~3ul) + 4 + WRITING))
            continue;
        atomic_thread_fence(memory_order_release); /* the fields change after the state */
        atomic_compare_exchange_strong(&hint, &start, i + 1);
        return s;
    }
}

/* Makes a claimed slot live: a handler that sees the state sees the fields. */
static void publish(slot *s, int kind) {
    atomic_store_explicit(&s->kind, kind, memory_order_relaxed);
    atomic_store_explicit(&s->cut, 0, memory_order_relaxed);
    unsigned long st = atomic_load_explicit(&s->state, memory_order_relaxed);
    atomic_store_explicit(&s->state, st - WRITING + LIVE, memory_order_release);
}

/* Frees a live slot of this caller's; returns whether a fault was mended in it. Its
 * fields stay as they were: a handler reading them meanwhile sees the state change. */
static int drop(slot *s) {
    int cut = atomic_load(&s->cut);
    unsigned long st = atomic_load_explicit(&s->state, memory_order_relaxed);
    atomic_store_explicit(&s->state, st - LIVE + FREE, memory_order_release);
    size_t h = atomic_load_explicit(&hint, memory_order_relaxed);
    while (s->index < h && !atomic_compare_exchange_weak(&hint, &h, s->index)) {
    }
    return cut;
}

/* A mapping's slot, from addr for len bytes, over whole pages; NULL when out of memory. */
static slot *add_mapping(int kind, const void *addr, size_t len, const char *name) {
    slot *s = claim();
    if (!s) return NULL;
    uintptr_t lo = (uintptr_t)addr;
    atomic_store_explicit(&s->lo, lo, memory_order_relaxed);
    atomic_store_explicit(&s->hi, (lo + len + page_mask) & ~page_mask, memory_order_relaxed);
    size_t i = 0;
    for (; name && name[i] && i + 1 < ONNXZ_FAULT_PATH_MAX; i++)
        atomic_store_explicit(&s->name[i], name[i], memory_order_relaxed);
    atomic_store_explicit(&s->name[i], 0, memory_order_relaxed);
    atomic_store_explicit(&s->owner, owner_now, memory_order_relaxed);
    publish(s, kind);
    return s;
}

static void *on_map(const void *addr, size_t len, const char *name) {
    return add_mapping(SLOT_MAPPING, addr, len, name);
}

static void on_unmap(void *token) {
    if (token) drop(token);
}

static const oc_map_observer observer = {on_map, on_unmap};

/* ---- the handler -------------------------------------------------------------------- */

/* A live slot's fields as one handler read them, consistent. */
typedef struct view {
    unsigned long state;
    int kind;
    uintptr_t lo, hi;
    long pid, tid;
    uintptr_t owner;
    char *path;
} view;

/* The seqlock's read: 1 when s was live and unchanged while its fields were read. */
static int read_slot(slot *s, view *v) {
    v->state = atomic_load_explicit(&s->state, memory_order_acquire);
    if (PHASE(v->state) != LIVE) return 0;
    v->kind = atomic_load_explicit(&s->kind, memory_order_relaxed);
    v->lo = atomic_load_explicit(&s->lo, memory_order_relaxed);
    v->hi = atomic_load_explicit(&s->hi, memory_order_relaxed);
    v->pid = atomic_load_explicit(&s->pid, memory_order_relaxed);
    v->tid = atomic_load_explicit(&s->tid, memory_order_relaxed);
    v->path = atomic_load_explicit(&s->path, memory_order_relaxed);
    v->owner = atomic_load_explicit(&s->owner, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&s->state, memory_order_relaxed) == v->state;
}

/* The first live slot whose consistent view v the test accepts, given what is wanted. */
static slot *find(int (*test)(const view *v, const view *want), const view *want, view *v) {
    for (int k = 0; k < CHUNKS; k++) {
        slot *c = atomic_load_explicit(&chunks[k], memory_order_acquire);
        for (size_t i = 0; c && i < chunk_size(k); i++)
            if (read_slot(&c[i], v) && test(v, want)) return &c[i];
    }
    return NULL;
}

/* A mapping holding the address want->lo. */
static int maps(const view *v, const view *want) {
    return (v->kind == SLOT_MAPPING || v->kind == SLOT_WATCHED) && want->lo >= v->lo &&
           want->lo < v->hi;
}

/* The scope of the thread want->pid, want->tid. */
static int scope_of(const view *v, const view *want) {
    return v->kind == SLOT_SCOPE && v->tid == want->tid && v->pid == want->pid;
}

/* Copies the name of the mapping m (as read in v) to dst: empty if the slot changed
 * meanwhile (which a live mapping's cannot: it is dropped only once no one reads it). */
static void copy_name(char *dst, slot *m, const view *v) {
    size_t i = 0;
    for (; i + 1 < ONNXZ_FAULT_PATH_MAX; i++)
        if (!(dst[i] = atomic_load_explicit(&m->name[i], memory_order_relaxed))) break;
    dst[i] = 0;
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&m->state, memory_order_relaxed) != v->state) dst[0] = 0;
}

/* The cut waiting for the main thread, one at a time. */
enum { PENDING_NONE, PENDING_FILLING, PENDING_READY };
static atomic_int pending;
static char cut_path[ONNXZ_FAULT_PATH_MAX];
static atomic_int python_handler; /* 1: the Python handler of SIGBUS is ours (main thread) */

/* The action before ours, for faults that are not ours: an immutable copy, replaced (the
 * old one leaked) only when someone replaces our handler, so a handler never reads a
 * half-written one. */
static _Atomic(const struct sigaction *) previous;

/* A fault that is not ours: to the handler that was there, or the default action (the
 * faulting access runs again and kills the process, as without this handler). */
static void pass_on(int sig, siginfo_t *info, void *uc) {
    const struct sigaction *p = atomic_load(&previous);
    if (p && (p->sa_flags & SA_SIGINFO)) {
        if (p->sa_sigaction) {
            p->sa_sigaction(sig, info, uc);
            return;
        }
    } else if (p && p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
        p->sa_handler(sig);
        return;
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGBUS, &dfl, NULL);
}

/* Zeros from the faulting page to the mapping's end, in one mapping of their own. */
static int mend(const view *m, uintptr_t addr) {
    uintptr_t from = addr & ~page_mask;
    return mmap((void *)from, m->hi - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                0) != MAP_FAILED;
}

/* Tells whoever fails for the cut of m: its owner, the scope of this thread, or the main
 * thread at its next bytecode (one cut at a time: a cut while one waits signals again,
 * which the waiting one answers). */
static void report(slot *m, const view *mv) {
    view want = {.pid = (long)getpid(), .tid = (long)gettid()}, sv;
    slot *scope = mv->kind == SLOT_WATCHED ? m : find(scope_of, &want, &sv);
    int none = PENDING_NONE;
    atomic_store(&m->cut, 1); /* before the count: who sees the count sees the mark */
    atomic_fetch_add(&cuts, 1);
    if (scope) {
        if (scope != m) copy_name(sv.path, m, mv);
        atomic_store(&scope->cut, 1);
        return;
    }
    if (atomic_compare_exchange_strong(&pending, &none, PENDING_FILLING)) {
        copy_name(cut_path, m, mv);
        atomic_store_explicit(&pending, PENDING_READY, memory_order_release);
    }
    if (atomic_load(&python_handler)) PyErr_SetInterruptEx(SIGBUS);
}

static void on_sigbus(int sig, siginfo_t *info, void *uc) {
    int saved = errno;
    uintptr_t addr = (uintptr_t)info->si_addr;
    view want = {.lo = addr}, v;
    slot *m = info->si_code == BUS_ADRERR ? find(maps, &want, &v) : NULL;
    if (m && mend(&v, addr))
        report(m, &v);
    else
        pass_on(sig, info, uc);
    errno = saved;
}

/* ---- the main thread's side --------------------------------------------------------- */

static onnxz_fault_raise_fn raise_cut;

/* The Python handler of SIGBUS, run by the main thread at its next bytecode after a
 * handler's PyErr_SetInterruptEx: raises the waiting cut. */
static PyObject *signalled(PyObject *self, PyObject *args) {
    char path[ONNXZ_FAULT_PATH_MAX];
    (void)self;
    (void)args;
    if (atomic_load_explicit(&pending, memory_order_acquire) != PENDING_READY) Py_RETURN_NONE;
    memcpy(path, cut_path, sizeof path);
    atomic_store(&pending, PENDING_NONE);
    raise_cut(path);
    return NULL;
}

static PyMethodDef signalled_def = {"_cut_signalled", signalled, METH_VARARGS,
                                    "Raises a cut file's onnxz.Error (S-42)."};

/* signal.signal(SIGBUS, signalled), which works in the main thread only (then 1; else 0,
 * to try again later). CPython puts its own C handler in place: the caller puts ours back
 * in front. */
static int take_python_handler(void) {
    if (PyErr_Occurred()) return 0; /* the caller's exception stands */
    PyObject *mod = PyImport_ImportModule("signal");
    PyObject *fn = mod ? PyCFunction_New(&signalled_def, NULL) : NULL;
    PyObject *r = fn ? PyObject_CallMethod(mod, "signal", "iO", SIGBUS, fn) : NULL;
    Py_XDECREF(mod);
    Py_XDECREF(fn);
    Py_XDECREF(r);
    if (!r) PyErr_Clear();
    return r != NULL;
}

static int is_ours(const struct sigaction *a) {
    return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == on_sigbus;
}

/* With the GIL: our handler in front, whatever was there before kept for the faults that
 * are not ours (again, if someone replaced ours since: faulthandler.enable, say). */
static void install(void) {
    struct sigaction now, sa;
    if (sigaction(SIGBUS, NULL, &now) != 0) return;
    if (!is_ours(&now)) {
        struct sigaction *copy = malloc(sizeof *copy);
        if (!copy) return;
        *copy = now;
        atomic_store(&previous, copy);
    }
    int took = !atomic_load(&python_handler) && take_python_handler();
    if (took) atomic_store(&python_handler, 1);
    if (is_ours(&now) && !took) return;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
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
    install();
    oc__map_observe(&observer);
    return 0;
}

/* A cut mapping of owner's (a live one, made in one of its scopes). */
static int cut_of(const view *v, const view *want) {
    return v->kind == SLOT_MAPPING && v->owner == want->owner;
}

int onnxz_fault_cut(const void *owner, unsigned long *seen, char *path) {
    unsigned long now = atomic_load(&cuts);
    if (now == *seen) return 0;
    view want = {.owner = (uintptr_t)owner}, v;
    for (int k = 0; k < CHUNKS; k++) {
        slot *c = atomic_load_explicit(&chunks[k], memory_order_acquire);
        for (size_t i = 0; c && i < chunk_size(k); i++)
            if (read_slot(&c[i], &v) && cut_of(&v, &want) && atomic_load(&c[i].cut)) {
                copy_name(path, &c[i], &v);
                return 1;
            }
    }
    *seen = now;
    return 0;
}

void onnxz_fault_own(const void *owner) { owner_now = (uintptr_t)owner; }

void onnxz_fault_enter(onnxz_fault_scope *s) {
    install();
    s->path[0] = 0;
    s->slot = claim();
    if (!s->slot) return;
    slot *scope = s->slot;
    atomic_store_explicit(&scope->pid, (long)getpid(), memory_order_relaxed);
    atomic_store_explicit(&scope->tid, (long)gettid(), memory_order_relaxed);
    atomic_store_explicit(&scope->path, s->path, memory_order_relaxed);
    publish(scope, SLOT_SCOPE);
}

int onnxz_fault_leave(onnxz_fault_scope *s) {
    owner_now = 0;
    return s->slot ? drop(s->slot) : 0;
}

void *onnxz_fault_watch(const void *addr, size_t len, const char *name) {
    install();
    return add_mapping(SLOT_WATCHED, addr, len, name);
}

int onnxz_fault_unwatch(void *token) { return token ? drop(token) : 0; }
