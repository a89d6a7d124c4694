/*
 * pair_lock.c - the locks that keep a model and its data files one pair (spec/external-data.md
 * E-25, spec/security.md L-5; internal/external.h).
 *
 * Readers and the commit of a multi-file save meet on one byte of the model file: a reader
 * holds an open-file-description read lock on it from before it decodes the model until
 * its data files are open; a save holds the write lock on it while it renames its files
 * into place. A write lock can only be taken on a descriptor open for writing, so only a
 * process that may write the model can keep its readers waiting; read locks, and flocks
 * of any kind, never stop a reader. Saves wait for each other on an flock of the directory.
 * Any process that may read the model or list the directory can hold a lock a save needs:
 * a save waits only for locks onnxz takes, and names the holder when it gives up.
 */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "internal/error.h"
#include "internal/external.h"
#include "onnxcore_private.h"

#ifndef F_OFD_SETLK /* older C libraries: process-owned locks, the closest there is */
#define F_OFD_SETLK F_SETLK
#endif

/* The byte of the model file that carries the pair lock. Bytes 0 and 1 are an archive's
 * edit and content locks (spec/onnxz.md A-58): a save that replaces an archive by a pair
 * does not wait for the archive's readers. */
#define PAIR_LOCK_BYTE 2

/* How often a reader tries again when the model was replaced between its open and its
 * lock, before it fails busy (each time, a save committed meanwhile). */
#define PAIR_MAX_REPLACED 64

/* A growing pause between tries of a lock: 10 ms doubling up to 250 ms; adds it to *waited
 * and returns 0, or returns -1 once *waited has reached OC__PAIR_LOCK_WAIT_MS. */
static int pause_or_give_up(long *waited, long *pause) {
    if (*waited == 0) oc__test_point("pair-busy");
    if (*waited >= OC__PAIR_LOCK_WAIT_MS) return -1;
    struct timespec ts = {0, *pause * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    *waited += *pause;
    *pause = *pause * 2 > 250 ? 250 : *pause * 2;
    return 0;
}

/* Sets (F_RDLCK, F_WRLCK) or releases (F_UNLCK) the pair lock byte of fd. Returns 0, 1 if
 * another open file holds a conflicting lock, or -1 where there are no such locks. */
static int set_lock(int fd, short type) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = PAIR_LOCK_BYTE;
    fl.l_len = 1;
    while (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EACCES ? 1 : -1;
    }
    return 0;
}

/* ---- who holds a lock a save wants (L-5) ---- */

/* Whether the open file /proc/PID/fd/FD is st's and holds a lock: its fdinfo lists the
 * locks of that open file description. */
static int fd_holds_lock(long pid, long fd, const struct stat *st) {
    char path[64], line[256];
    struct stat s;
    snprintf(path, sizeof path, "/proc/%ld/fd/%ld", pid, fd);
    if (stat(path, &s) != 0 || s.st_dev != st->st_dev || s.st_ino != st->st_ino) return 0;
    snprintf(path, sizeof path, "/proc/%ld/fdinfo/%ld", pid, fd);
    FILE *f = fopen(path, "re");
    int held = 0;
    while (f && !held && fgets(line, sizeof line, f)) held = strncmp(line, "lock:", 5) == 0;
    if (f) fclose(f);
    return held;
}

/* A decimal name of /proc (a process, a descriptor), or -1. */
static long number(const char *name) {
    char *end;
    long n = strtol(name, &end, 10);
    return *end || end == name || n < 0 ? -1 : n;
}

/* The process holding an open-file-description lock on st's file (which /proc/locks
 * names by no process): the first whose descriptors /proc lets us see that holds one;
 * 0 when none can be seen. */
static long ofd_owner(const struct stat *st) {
    DIR *proc = opendir("/proc");
    struct dirent *p;
    long found = 0, self = (long)getpid();
    while (proc && !found && (p = readdir(proc)) != NULL) {
        long pid = number(p->d_name);
        if (pid <= 0 || pid == self) continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%ld/fd", pid);
        DIR *fds = opendir(path);
        struct dirent *e;
        while (fds && !found && (e = readdir(fds)) != NULL) {
            long fd = number(e->d_name);
            if (fd >= 0 && fd_holds_lock(pid, fd, st)) found = pid;
        }
        if (fds) closedir(fds);
    }
    if (proc) closedir(proc);
    return found;
}

/* What a line of /proc/locks says of a lock on st's file that a save's lock conflicts
 * with (an flock of the directory, byte < 0; or on the model an flock, or a record lock
 * on that byte). 0: not such a lock. */
static int describe(const char *line, const struct stat *st, long byte, oc__lock_holder *h) {
    char kind[16], mode[16], end[24];
    unsigned maj, min;
    unsigned long long ino, start;
    long pid;
    if (strstr(line, "->") || /* a waiter, not a holder */
        sscanf(line, "%*d: %15s %*s %15s %ld %x:%x:%llu %llu %23s", kind, mode, &pid, &maj, &min,
               &ino, &start, end) != 8 ||
        maj != major(st->st_dev) || min != minor(st->st_dev) ||
        ino != (unsigned long long)st->st_ino)
        return 0;
    int shared = strcmp(mode, "READ") == 0, flock_kind = strcmp(kind, "FLOCK") == 0;
    unsigned long long last = strcmp(end, "EOF") == 0 ? ~0ull : strtoull(end, NULL, 10);
    if (!flock_kind &&
        (byte < 0 || start > (unsigned long long)byte || last < (unsigned long long)byte))
        return 0;
    int ours = strcmp(kind, "OFDLCK") == 0 && start == (unsigned long long)byte && last == start;
    h->pid = pid > 0 ? pid : 0; /* an open-file-description lock's is -1 */
    h->uid = -1;
    h->foreign = flock_kind ? shared : !ours;
    h->role = h->foreign ? NULL : shared ? "a reader" : "a save";
    if (flock_kind)
        snprintf(h->what, sizeof h->what, "%s flock on", shared ? "a shared" : "an exclusive");
    else if (ours)
        snprintf(h->what, sizeof h->what, "a %s lock on byte %ld of", shared ? "read" : "write",
                 byte);
    else
        snprintf(h->what, sizeof h->what, "a%s %s lock on bytes %llu to %s of",
                 strcmp(kind, "OFDLCK") == 0 ? "n open-file-description" : " POSIX",
                 shared ? "read" : "write", start, end);
    return 1;
}

/* Fills *h with a lock on st's file that a save's lock (see describe) conflicts with, a
 * foreign one first. 0: none seen. */
static int find_holder(const struct stat *st, long byte, oc__lock_holder *h) {
    FILE *f = fopen("/proc/locks", "re");
    char line[256];
    oc__lock_holder seen;
    int found = 0;
    while (f && !(found && h->foreign) && fgets(line, sizeof line, f))
        if (describe(line, st, byte, &seen) && (!found || seen.foreign)) {
            *h = seen;
            found = 1;
        }
    if (f) fclose(f);
    return found;
}

/* After a save's try of fd's lock failed: whether to give up at once (a foreign lock),
 * with *h told what holds it. */
static int foreign_holder(int fd, long byte, oc__lock_holder *h) {
    struct stat st;
    return h && fstat(fd, &st) == 0 && find_holder(&st, byte, h) && h->foreign;
}

/* Once a save gives up on fd's lock: the holder's process and user, where /proc shows
 * them (an open-file-description lock's holder is looked for among the processes whose
 * descriptors this one may see). */
static void name_holder(int fd, oc__lock_holder *h) {
    struct stat st, ps;
    char proc[32];
    if (!h || !h->what[0] || fstat(fd, &st) != 0) return;
    if (!h->pid) h->pid = ofd_owner(&st);
    snprintf(proc, sizeof proc, "/proc/%ld", h->pid);
    h->uid = h->pid && stat(proc, &ps) == 0 ? (long)ps.st_uid : -1;
}

/* Whether fd is the file path names now. */
static int is_at(int fd, const char *path) {
    struct stat a, b;
    /* what was opened, too, is a regular file: one swapped in after lock_model's stat is
     * not taken for the model */
    return fstat(fd, &a) == 0 && S_ISREG(a.st_mode) && stat(path, &b) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Takes the pair lock of fd: the read lock, or for a save the write lock and an exclusive
 * flock, the lock `onnxz meta` holds while it edits the file (spec/onnxz.md A-58), so that
 * an edit that read the old model never renames it over the new pair. Returns as
 * set_lock does; a save goes on with the write lock alone where there is no flock. */
static int take(int fd, int write) {
    int held = set_lock(fd, write ? F_WRLCK : F_RDLCK);
    if (held != 0 || !write) return held;
    while (flock(fd, LOCK_EX | LOCK_NB) != 0)
        if (errno != EINTR) return errno == EWOULDBLOCK ? 1 : 0;
    return 0;
}

/* Opens the regular file at path (write: for writing, to take the write lock) and takes its
 * pair lock, once it is still the file path names (a save that committed between the
 * open and the lock replaced it: then the file that has the name now is locked). */
static int lock_model(const char *path, int write, oc__lock_holder *holder) {
    long waited = 0, pause = 10;
    for (int replaced = 0; replaced < PAIR_MAX_REPLACED;) {
        struct stat st;
        /* Not even opened unless a regular file: opening a FIFO or a device has effects. */
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
        int fd = open(path, (write ? O_WRONLY : O_RDONLY) | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0) return write && (errno == EACCES || errno == EPERM) ? OC__PAIR_DENIED : -1;
        int held = take(fd, write);
        if (held == 0 && is_at(fd, path)) return fd;
        if (held == 0) replaced++;
        if (held == 1) (void)set_lock(fd, F_UNLCK); /* not seen as a holder itself */
        int give_up = held == 1 && (foreign_holder(fd, PAIR_LOCK_BYTE, holder) ||
                                    pause_or_give_up(&waited, &pause) != 0);
        if (give_up) name_holder(fd, holder);
        close(fd); /* also releases the locks */
        if (held < 0) return -1;
        if (give_up) return OC__PAIR_BUSY;
    }
    return OC__PAIR_BUSY;
}

int oc__pair_read_lock(const char *model_path) { return lock_model(model_path, 0, NULL); }

int oc__pair_write_lock(const char *model_path, oc__lock_holder *holder) {
    return lock_model(model_path, 1, holder);
}

int oc__pair_dir_lock(const char *model_path, oc__lock_holder *holder) {
    char *dir = oc__path_dir(model_path);
    if (!dir) return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0) return -1;
    /* Polled, never a blocking flock: a stopped save, or any process that holds an flock
     * on the directory, delays a save by at most OC__PAIR_LOCK_WAIT_MS. */
    long waited = 0, pause = 10;
    for (;;) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK) break; /* no flock here: saves are not serialized */
        if (foreign_holder(fd, -1, holder) || pause_or_give_up(&waited, &pause) != 0) {
            name_holder(fd, holder);
            close(fd);
            return OC__PAIR_BUSY;
        }
    }
    close(fd);
    return -1;
}

void oc__pair_unlock(int fd) {
    if (fd < 0) return;
    /* Released explicitly: a mapping of the model may keep a duplicate of fd, and with it
     * the open file description that holds the lock. */
    (void)set_lock(fd, F_UNLCK);
    close(fd);
}

oc_status oc__pair_busy(const char *model_path, oc_error *err) {
    return oc__fail_rule(err, OC_ERR_BUSY, OC_NO_OFFSET, "E-25",
                         "busy: a save of '%s' is in progress; try again", model_path);
}
