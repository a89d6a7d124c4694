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
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/error.h"
#include "internal/external.h"
#include "internal/poll_lock.h"
#include "onnxcore_private.h"

/* The byte of the model file that carries the pair lock. Bytes 0 and 1 are an archive's
 * edit and content locks (spec/onnxz.md A-58): a save that replaces an archive by a pair
 * does not wait for the archive's readers. */
#define PAIR_LOCK_BYTE 2

/* How often a reader tries again when the model was replaced between its open and its
 * lock, before it fails busy (each time, a save committed meanwhile). */
#define PAIR_MAX_REPLACED 64

/* How a reader and a save wait for the pair lock (spec/security.md, "Locks"). */
static const oc__lock_wait pair_wait = {10, 250, OC__PAIR_LOCK_WAIT_MS, "pair-busy"};

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
 * an edit that read the old model never renames it over the new pair. A save goes on with
 * the write lock alone where there is no flock. */
static oc__lock_try take(int fd, int write) {
    oc__lock_try r = oc__lock_ofd(fd, PAIR_LOCK_BYTE, 1, write ? F_WRLCK : F_RDLCK);
    if (r != OC__LOCK_TAKEN || !write) return r;
    return oc__lock_flock(fd) == OC__LOCK_HELD ? OC__LOCK_HELD : OC__LOCK_TAKEN;
}

/* One try of the pair lock of the file at path (lock_model). */
typedef struct model_try {
    const char *path;
    int write;
    oc__lock_holder *holder;
    int fd;       /* the file opened and locked, once TAKEN */
    int held_fd;  /* the file opened whose lock was HELD, to name the holder of */
    int replaced; /* how often the name was replaced between open and lock */
    int denied;   /* a save may not open the model for writing */
} model_try;

static oc__lock_try try_model(void *ctx) {
    model_try *m = ctx;
    if (m->held_fd >= 0) close(m->held_fd); /* also releases its locks */
    m->held_fd = -1;
    struct stat st;
    /* Not even opened unless a regular file: opening a FIFO or a device has effects. */
    if (stat(m->path, &st) != 0 || !S_ISREG(st.st_mode)) return OC__LOCK_NONE;
    int fd = open(m->path, (m->write ? O_WRONLY : O_RDONLY) | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        m->denied = m->write && (errno == EACCES || errno == EPERM);
        return OC__LOCK_ERROR;
    }
    oc__lock_try r = take(fd, m->write);
    if (r == OC__LOCK_TAKEN && is_at(fd, m->path)) {
        m->fd = fd;
        return r;
    }
    if (r != OC__LOCK_HELD) { /* NONE, or replaced meanwhile: then lock the file named now */
        close(fd);
        if (r == OC__LOCK_NONE) return r;
        return ++m->replaced < PAIR_MAX_REPLACED ? OC__LOCK_AGAIN : OC__LOCK_REFUSED;
    }
    (void)oc__lock_ofd(fd, PAIR_LOCK_BYTE, 1, F_UNLCK); /* not seen as a holder itself */
    m->held_fd = fd;
    return oc__lock_foreign(fd, PAIR_LOCK_BYTE, m->holder) ? OC__LOCK_REFUSED : OC__LOCK_HELD;
}

/* Opens the regular file at path (write: for writing, to take the write lock) and takes its
 * pair lock, once it is still the file path names (a save that committed between the
 * open and the lock replaced it: then the file that has the name now is locked). */
static int lock_model(const char *path, int write, oc__lock_holder *holder) {
    model_try m = {path, write, holder, -1, -1, 0, 0};
    oc__lock_try r = oc__lock_poll(&pair_wait, try_model, &m);
    if (r == OC__LOCK_TAKEN) return m.fd;
    if (m.held_fd >= 0) {
        if (holder) oc__lock_name_holder(m.held_fd, holder);
        close(m.held_fd);
    }
    if (r == OC__LOCK_HELD || r == OC__LOCK_REFUSED) return OC__PAIR_BUSY;
    return m.denied ? OC__PAIR_DENIED : -1;
}

int oc__pair_read_lock(const char *model_path) { return lock_model(model_path, 0, NULL); }

int oc__pair_write_lock(const char *model_path, oc__lock_holder *holder) {
    return lock_model(model_path, 1, holder);
}

/* One try of the directory's flock (oc__pair_dir_lock). */
typedef struct dir_try {
    int fd;
    oc__lock_holder *holder;
} dir_try;

static oc__lock_try try_dir(void *ctx) {
    dir_try *d = ctx;
    oc__lock_try r = oc__lock_flock(d->fd);
    return r == OC__LOCK_HELD && oc__lock_foreign(d->fd, -1, d->holder) ? OC__LOCK_REFUSED : r;
}

int oc__pair_dir_lock(const char *model_path, oc__lock_holder *holder) {
    char *dir = oc__path_dir(model_path);
    if (!dir) return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0) return -1;
    /* Polled, never a blocking flock: a stopped save, or any process that holds an flock
     * on the directory, delays a save by at most OC__PAIR_LOCK_WAIT_MS. NONE: no flock
     * here, saves are not serialized. */
    dir_try d = {fd, holder};
    oc__lock_try r = oc__lock_poll(&pair_wait, try_dir, &d);
    if (r == OC__LOCK_TAKEN) return fd;
    bool busy = r == OC__LOCK_HELD || r == OC__LOCK_REFUSED;
    if (busy && holder) oc__lock_name_holder(fd, holder);
    close(fd);
    return busy ? OC__PAIR_BUSY : -1;
}

void oc__pair_unlock(int fd) {
    if (fd < 0) return;
    /* Released explicitly: a mapping of the model may keep a duplicate of fd, and with it
     * the open file description that holds the lock. */
    (void)oc__lock_ofd(fd, PAIR_LOCK_BYTE, 1, F_UNLCK);
    close(fd);
}

oc_status oc__pair_busy(const char *model_path, oc_error *err) {
    return oc__fail_rule(err, OC_ERR_BUSY, OC_NO_OFFSET, "E-25",
                         "busy: a save of '%s' is in progress; try again", model_path);
}
