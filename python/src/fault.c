/*
 * fault.c - SIGBUS in the package's own mappings (fault.h; spec/security.md S-42).
 *
 * An array from onnxz.open(p)[name] points into a read-only private mapping of p. When
 * another process cuts p (truncate, `cp new p`, onnx.save over it), touching a page past
 * its new end raises SIGBUS, which by default kills the interpreter. Here a handler takes
 * the faults that land in a mapping of a file a _Reader opened (found by address in
 * /proc/self/maps, matched by device and inode): it maps zero-filled memory over the rest
 * of that mapping, so the touch completes (reading zeros), and schedules onnxz.Error for
 * the main thread (Py_AddPendingCall), raised at its next bytecode. Any other fault goes
 * to the handler that was there before (or the default action: the process dies as it
 * would have). A file replaced by a rename (as onnxz and most tools save) never faults:
 * the mapping keeps the old file.
 *
 * Only async-signal-safe calls in the handler: open, read, close, mmap (a system call),
 * sigaction; the registry is a fixed array written before the handler can read an entry.
 */
#define _GNU_SOURCE
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fault.h"

#define WATCH_MAX      64   /* files remembered, the oldest forgotten first */
#define WATCH_PATH_MAX 1024 /* of each one's path, for the message */

typedef struct watched {
    atomic_int live;
    dev_t dev;
    ino_t ino;
    char path[WATCH_PATH_MAX];
} watched;

static watched files[WATCH_MAX];
static int next_slot; /* with the GIL */
static struct sigaction previous;
static atomic_int installed;
static onnxz_fault_raise_fn raise_cut;
static char cut_path[WATCH_PATH_MAX]; /* the file of the pending error */
static atomic_int pending;

static int raise_pending(void *unused) {
    (void)unused;
    int r = raise_cut(cut_path);
    atomic_store(&pending, 0);
    return r;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* A number in base 10 or 16 at *p, then the separator sep (0: none needed). */
static int number(const char **p, const char *end, unsigned base, char sep, uint64_t *v) {
    const char *q = *p;
    *v = 0;
    for (; q < end; q++) {
        int d = base == 16 ? hexval(*q) : (*q >= '0' && *q <= '9' ? *q - '0' : -1);
        if (d < 0) break;
        *v = *v * base + (unsigned)d;
    }
    if (q == *p || (sep && (q == end || *q != sep))) return 0;
    *p = sep ? q + 1 : q;
    return 1;
}

/* Parses "start-end perms offset maj:min inode ..." (a line of /proc/self/maps). */
static int parse_line(const char *s, size_t n, uintptr_t *lo, uintptr_t *hi, dev_t *dev,
                      ino_t *ino) {
    const char *p = s, *end = s + n;
    uint64_t a, b, off, maj, min, inode;
    if (!number(&p, end, 16, '-', &a) || !number(&p, end, 16, ' ', &b)) return 0;
    while (p < end && *p != ' ') p++; /* perms */
    if (p++ == end) return 0;
    if (!number(&p, end, 16, ' ', &off) || !number(&p, end, 16, ':', &maj) ||
        !number(&p, end, 16, ' ', &min) || !number(&p, end, 10, 0, &inode))
        return 0;
    *lo = (uintptr_t)a;
    *hi = (uintptr_t)b;
    *dev = makedev((unsigned)maj, (unsigned)min);
    *ino = (ino_t)inode;
    return 1;
}

/* The mapping holding addr: its range and file, from /proc/self/maps. */
static int find_mapping(uintptr_t addr, uintptr_t *lo, uintptr_t *hi, dev_t *dev, ino_t *ino) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[4096], line[256];
    size_t len = 0;
    int found = 0;
    ssize_t r;
    while (!found && (r = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < r && !found; i++) {
            if (buf[i] != '\n') {
                if (len < sizeof line) line[len++] = buf[i];
                continue;
            }
            if (parse_line(line, len, lo, hi, dev, ino) && addr >= *lo && addr < *hi)
                found = *ino != 0;
            len = 0;
        }
    }
    close(fd);
    return found;
}

static const watched *ours(dev_t dev, ino_t ino) {
    for (int i = 0; i < WATCH_MAX; i++)
        if (atomic_load(&files[i].live) && files[i].dev == dev && files[i].ino == ino)
            return &files[i];
    return NULL;
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
    atomic_store(&installed, 0);
}

static void on_sigbus(int sig, siginfo_t *info, void *uc) {
    int saved = errno;
    uintptr_t addr = (uintptr_t)info->si_addr, lo, hi;
    dev_t dev;
    ino_t ino;
    const watched *w;
    long page = sysconf(_SC_PAGESIZE);
    if (info->si_code != BUS_ADRERR || page <= 0 || !find_mapping(addr, &lo, &hi, &dev, &ino) ||
        !(w = ours(dev, ino))) {
        pass_on(sig, info, uc);
        errno = saved;
        return;
    }
    /* From the faulting page to the mapping's end: zeros, in one mapping of its own. */
    uintptr_t from = addr & ~(uintptr_t)(page - 1);
    if (mmap((void *)from, hi - from, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
        MAP_FAILED) {
        pass_on(sig, info, uc);
        errno = saved;
        return;
    }
    if (!atomic_exchange(&pending, 1)) {
        memcpy(cut_path, w->path, sizeof cut_path);
        if (Py_AddPendingCall(raise_pending, NULL) != 0) atomic_store(&pending, 0);
    }
    errno = saved;
}

static void install(void) {
    struct sigaction sa, now;
    if (sigaction(SIGBUS, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
        now.sa_sigaction == on_sigbus)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &now) == 0) {
        previous = now;
        atomic_store(&installed, 1);
    }
}

void onnxz_fault_watch(const char *path, onnxz_fault_raise_fn raise_fn) {
    struct stat st;
    if (!path || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return;
    raise_cut = raise_fn;
    for (int i = 0; i < WATCH_MAX; i++)
        if (atomic_load(&files[i].live) && files[i].dev == st.st_dev && files[i].ino == st.st_ino) {
            install();
            return;
        }
    watched *w = &files[next_slot];
    next_slot = (next_slot + 1) % WATCH_MAX;
    atomic_store(&w->live, 0); /* the handler skips it while it changes */
    w->dev = st.st_dev;
    w->ino = st.st_ino;
    snprintf(w->path, sizeof w->path, "%s", path);
    atomic_store(&w->live, 1);
    install();
}
