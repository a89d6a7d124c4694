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
 */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
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

/* Whether fd is the file path names now. */
static int is_at(int fd, const char *path) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
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
static int lock_model(const char *path, int write) {
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
        close(fd); /* also releases the locks */
        if (held < 0) return -1;
        if (held == 1 && pause_or_give_up(&waited, &pause) != 0) return OC__PAIR_BUSY;
    }
    return OC__PAIR_BUSY;
}

int oc__pair_read_lock(const char *model_path) { return lock_model(model_path, 0); }

int oc__pair_write_lock(const char *model_path) { return lock_model(model_path, 1); }

int oc__pair_dir_lock(const char *model_path) {
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
        if (pause_or_give_up(&waited, &pause) != 0) {
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
