/*
 * poll_lock.c - taking an advisory lock on a file by polling, and naming who holds one
 * (internal/poll_lock.h; spec/security.md L-4, L-5).
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
#include "internal/poll_lock.h"

#ifndef F_OFD_SETLK /* older C libraries: process-owned locks, the closest there is */
#define F_OFD_SETLK F_SETLK
#endif

oc__lock_try oc__lock_poll(const oc__lock_wait *w, oc__lock_try (*try_fn)(void *ctx), void *ctx) {
    long waited = 0, pause = w->first_ms;
    for (;;) {
        oc__lock_try r = try_fn(ctx);
        if (r == OC__LOCK_AGAIN) continue;
        if (r != OC__LOCK_HELD || waited >= w->wait_ms) return r;
        if (waited == 0 && w->test_point) oc__test_point(w->test_point);
        /* polled, never a blocking wait, so that the bound holds (L-4) */
        struct timespec ts = {pause / 1000, (pause % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        waited += pause;
        pause = pause * 2 > w->max_ms ? w->max_ms : pause * 2;
    }
}

oc__lock_try oc__lock_ofd(int fd, off_t first, off_t len, short type) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = first;
    fl.l_len = len;
    while (fcntl(fd, F_OFD_SETLK, &fl) != 0) {
        if (errno == EINTR) continue;
        /* no such locks here: EINVAL, ENOLCK, EOPNOTSUPP */
        return errno == EAGAIN || errno == EACCES ? OC__LOCK_HELD : OC__LOCK_NONE;
    }
    return OC__LOCK_TAKEN;
}

oc__lock_try oc__lock_flock(int fd) {
    while (flock(fd, LOCK_EX | LOCK_NB) != 0)
        if (errno != EINTR) return errno == EWOULDBLOCK ? OC__LOCK_HELD : OC__LOCK_NONE;
    return OC__LOCK_TAKEN;
}

/* ---- who holds a lock the caller wants (L-5) ---- */

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
    h->role = h->foreign                            ? NULL
              : shared                              ? "a reader"
              : flock_kind && !S_ISDIR(st->st_mode) ? "a save or an edit"
                                                    : "a save";
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

bool oc__lock_foreign(int fd, long byte, oc__lock_holder *h) {
    struct stat st;
    return h && fstat(fd, &st) == 0 && find_holder(&st, byte, h) && h->foreign;
}

/* An open-file-description lock's holder is looked for among the processes whose
 * descriptors this one may see. */
void oc__lock_name_holder(int fd, oc__lock_holder *h) {
    struct stat st, ps;
    char proc[32];
    if (!h || !h->what[0] || fstat(fd, &st) != 0) return;
    if (!h->pid) h->pid = ofd_owner(&st);
    snprintf(proc, sizeof proc, "/proc/%ld", h->pid);
    h->uid = h->pid && stat(proc, &ps) == 0 ? (long)ps.st_uid : -1;
}

oc_status oc__lock_busy(const char *actor, const char *what, const char *name,
                        const oc__lock_holder *h, long wait_ms, const char *rule, oc_error *err) {
    char who[48] = "another process";
    if (h->pid && h->uid >= 0)
        snprintf(who, sizeof who, "process %ld (uid %ld)", h->pid, h->uid);
    else if (h->pid)
        snprintf(who, sizeof who, "process %ld", h->pid);
    if (!h->what[0])
        return oc__fail_rule(err, OC_ERR_BUSY, OC_NO_OFFSET, rule,
                             "busy: another process reads, edits or saves %s '%s'; try again", what,
                             name);
    if (h->foreign)
        return oc__fail_rule(err, OC_ERR_BUSY, OC_NO_OFFSET, "L-5",
                             "busy: %s holds %s %s '%s', a lock onnxz never takes, so the %s "
                             "did not wait for it",
                             who, h->what, what, name, actor);
    return oc__fail_rule(err, OC_ERR_BUSY, OC_NO_OFFSET, rule,
                         "busy: %s held %s %s '%s' for %ld s, as %s does; try again", who, h->what,
                         what, name, wait_ms / 1000, h->role);
}
