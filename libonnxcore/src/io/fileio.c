/*
 * fileio.c - crash-safe replacement of files (onnxcore_private.h; reading files is the file
 * sources', source_file.c). Compiled into libonnxz too, under the names oz__atomic_*.
 *
 * Saving never writes the target in place: data goes to a temporary file in the target's
 * directory (same filesystem, so the rename is atomic), which is fsynced and renamed over
 * the target, and then the directory is fsynced. A failure at any point leaves the previous
 * file as it was. Temporary files are named `.<target>.tmp-<12 hex digits>` so they are
 * recognisable, and their writer holds an flock on them while it lives: the next save of
 * the same target removes those left by a writer that died (lockable, and older than a
 * minute, which also covers the instant between a writer's create and its lock).
 */
#define _GNU_SOURCE /* renameat2 / RENAME_NOREPLACE */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal/error.h"
#include "onnxcore/http.h"
#include "onnxcore_private.h"
#include "internal/cleanup.h"
#include "internal/onnxcore_atomic.h"
#include "internal/parallel.h"

/* ---- atomic writing ---- */

static uint64_t name_entropy(unsigned attempt) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40) ^
                 ((uint64_t)attempt * 0x9E3779B97F4A7C15u);
    x ^= x >> 33; /* splitmix finaliser: spread the bits over the name */
    x *= 0xff51afd7ed558ccdu;
    x ^= x >> 33;
    return x;
}

#define OC_STALE_TEMP_AGE 60 /* seconds */

/* Removes `.<base>.tmp-<12 hex>` files in dir that no living writer holds. Best effort. */
static void remove_stale_temps(const char *dir, const char *base) {
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    size_t blen = strlen(base);
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (n[0] != '.' || strncmp(n + 1, base, blen) != 0 ||
            strncmp(n + 1 + blen, ".tmp-", 5) != 0)
            continue;
        const char *hex = n + 1 + blen + 5;
        int ok = strlen(hex) == 12;
        for (int i = 0; ok && i < 12; i++)
            ok = (hex[i] >= '0' && hex[i] <= '9') || (hex[i] >= 'a' && hex[i] <= 'f');
        if (!ok) continue;
        int fd = openat(dirfd(d), n, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && now - st.st_mtime > OC_STALE_TEMP_AGE &&
            flock(fd, LOCK_EX | LOCK_NB) == 0)
            unlinkat(dirfd(d), n, 0); /* its writer is gone: nobody holds the lock */
        close(fd);
    }
    closedir(d);
}

/* The new file takes the replaced one's owner (where we may) and permissions. */
static void adopt_owner_and_mode(int fd, const struct stat *st) {
    if (!S_ISREG(st->st_mode)) return;
    /* Only a privileged process may give a file away: for others' files this fails
     * (EPERM) and the new file stays ours. The mode goes after, as chown may clear it. */
    int ignored = fchown(fd, st->st_uid, st->st_gid);
    (void)ignored;
    (void)fchmod(fd, st->st_mode & 07777);
}

/* The temporary file is in the cleanup registry while it exists under its own name: an
 * interrupted process removes it (oc_cleanup_run). Out of memory leaves it out, which
 * only costs the signal cleanup of this one file (W-30's sweep still finds it). */
static void register_temp(oc_atomic_file *af) {
    af->cleanup = oc_cleanup_register(af->tmp_path, 0);
    oc__test_point("atomic-opened");
}

static void forget_temp(oc_atomic_file *af) {
    oc_cleanup_forget(af->cleanup);
    af->cleanup = NULL;
}

/* S-41: a stream (a FIFO, a character device) is written through, never replaced. */
static int is_stream(mode_t mode) { return S_ISFIFO(mode) || S_ISCHR(mode); }

/* Whether oc_atomic_open writes path through (or refuses it) rather than replacing it
 * (S-41): "-", or a name that is not a regular file, a directory or a link to a regular
 * file, a directory or nothing (*st: what that name is, followed through a link). A link
 * to a socket or a block device is refused as the socket or the device is. */
static int through_stat(const char *path, struct stat *st) {
    memset(st, 0, sizeof *st);
    if (strcmp(path, "-") == 0) return 1;
    if (lstat(path, st) != 0 || S_ISREG(st->st_mode) || S_ISDIR(st->st_mode)) return 0;
    if (!S_ISLNK(st->st_mode)) return 1;
    return stat(path, st) == 0 && !S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode);
}

int oc_atomic_through(const char *path) {
    struct stat st;
    return through_stat(path, &st);
}

#define NOT_A_PIPE "is a pipe: an archive is patched as it is written and needs a file or a device"

/* S-41: why an output of this use cannot be written through (st: what stat saw), or NULL.
 * Looked at before opening: opening a FIFO blocks until a reader comes. */
static const char *refused_through(const char *path, const struct stat *st, oc_atomic_use use) {
    int dash = strcmp(path, "-") == 0;
    if (use == OC_ATOMIC_NAMED)
        return dash ? "is standard output, which has no name for a model to refer to: a data "
                      "file must be a regular file"
                    : "is not a regular file: a data file, which a model refers to by name, "
                      "must be one";
    if (!dash && !is_stream(st->st_mode))
        return "is not a regular file, a FIFO or a character device: onnxz neither replaces "
               "nor writes into it";
    if (use == OC_ATOMIC_SEEKABLE && !dash && S_ISFIFO(st->st_mode)) return NOT_A_PIPE;
    return NULL;
}

/* Opens the output af->path names when it is a stream (st: what stat saw), or "-":
 * a duplicate of standard output. The descriptor is checked again, as the name may have
 * changed since it was looked at: a regular file found there now is never written in
 * place. A FIFO written in order blocks in open until its reader comes, as a shell's
 * `> fifo` does (a signal still ends the process); one that must seek is opened without
 * blocking, and refused as soon as it is seen to be a pipe. */
static oc_status open_through(oc_atomic_file *af, const struct stat *st, oc_atomic_use use,
                              oc_error *err) {
    const char *path = af->path;
    int dash = strcmp(path, "-") == 0;
    const char *why = refused_through(path, st, use);
    if (why)
        return oc_error_file(
            err, path,
            oc__fail_rule(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "S-41", "%s %s", path, why));
    int nonblock = use == OC_ATOMIC_SEEKABLE ? O_NONBLOCK : 0;
    af->fd = dash ? fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)
                  : open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC | nonblock);
    if (af->fd < 0 && dash)
        return oc__fail_errno(err, errno, "cannot write standard output (%s)", path);
    if (af->fd < 0)
        return oc_error_file(err, path, oc__fail_errno(err, errno, "cannot open %s", path));
    if (nonblock) (void)fcntl(af->fd, F_SETFL, fcntl(af->fd, F_GETFL) & ~O_NONBLOCK);
    struct stat now;
    if (fstat(af->fd, &now) != 0 ||
        (!dash &&
         (!is_stream(now.st_mode) || now.st_dev != st->st_dev || now.st_ino != st->st_ino))) {
        close(af->fd);
        af->fd = -1;
        return oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s changed while it was opened", path);
    }
    /* Patched after it is written: what cannot seek (standard output on a pipe, a
     * terminal) is refused before a byte goes out. */
    if (use == OC_ATOMIC_SEEKABLE && lseek(af->fd, 0, SEEK_CUR) < 0) {
        close(af->fd);
        af->fd = -1;
        return oc_error_file(
            err, path,
            oc__fail_rule(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "S-41", "%s " NOT_A_PIPE, path));
    }
    af->through = 1;
    af->no_sync = 1; /* nothing to rename; a stream has nothing to sync */
    return OC_OK;
}

oc_status oc_atomic_open(oc_atomic_file *af, const char *path, bool no_overwrite, oc_error *err) {
    return oc_atomic_open_for(af, path, no_overwrite, OC_ATOMIC_STREAM, err);
}

oc_status oc_atomic_open_for(oc_atomic_file *af, const char *path, bool no_overwrite,
                             oc_atomic_use use, oc_error *err) {
    memset(af, 0, sizeof *af);
    af->fd = -1;
    af->no_overwrite = no_overwrite;
    /* Read from, never written to: not a local path that happens to look like one */
    if (oc_is_url(path))
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                      "%s is a URL: onnxz writes local files only", path));
    /* What is replaced is the name (W-32): a link to a file there is replaced, never
     * written through; a regular file there passes its mode and owner on. What is not a
     * regular file is never replaced (S-41): "-", a stream or a link to one is written
     * through, anything else refused. */
    struct stat st, target;
    memset(&st, 0, sizeof st);
    int exists = lstat(path, &st) == 0;
    if (through_stat(path, &target)) {
        af->path = strdup(path);
        if (!af->path) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        oc_status failed = open_through(af, &target, use, err);
        if (failed != OC_OK) oc_atomic_abort(af);
        return failed;
    }
    if (exists) {
        if (no_overwrite)
            return oc_error_file(
                err, path, oc__fail(err, OC_ERR_EXISTS, OC_NO_OFFSET, "%s already exists", path));
        if (S_ISDIR(st.st_mode))
            return oc_error_file(err, path, oc__fail_errno(err, EISDIR, "cannot replace %s", path));
    }
    af->path = strdup(path);
    char *dir = oc__path_dir(path);
    const char *base = oc__path_base(path);
    size_t n = strlen(path) + 40;
    af->tmp_path = malloc(n);
    if (!af->path || !dir || !af->tmp_path) {
        free(dir);
        oc_atomic_abort(af);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    /* O_EXCL with our own random names rather than mkstemp: the kernel then applies the
     * umask to mode 0666, so the result has the permissions of a normally created file.
     * A file that replaces another is created private and then given the other's. */
    for (unsigned attempt = 0; attempt < 100; attempt++) {
        snprintf(af->tmp_path, n, "%s%s.%s.tmp-%012llx", dir, strcmp(dir, "/") ? "/" : "", base,
                 (unsigned long long)(name_entropy(attempt) & 0xffffffffffffull));
        af->fd = open(af->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                      S_ISREG(st.st_mode) ? 0600 : 0666);
        if (af->fd >= 0 || errno != EEXIST) break;
    }
    if (af->fd >= 0) {
        flock(af->fd, LOCK_EX); /* held while we live: marks the file as in use */
        adopt_owner_and_mode(af->fd, &st);
        register_temp(af);
        remove_stale_temps(dir, base);
    }
    if (af->fd < 0) {
        oc_status failed = oc__fail_errno(err, errno, "cannot create a temporary file in %s", dir);
        free(dir);
        free(af->tmp_path); /* nothing was created */
        af->tmp_path = NULL;
        oc_atomic_abort(af);
        return failed;
    }
    free(dir);
    return OC_OK;
}

/* ---- writeback ---- */

/* Every OC_WRITEBACK_WINDOW bytes appended, writeback of the new window to disk is started
 * (sync_file_range): the disk works while the caller produces the next bytes, the commit's
 * fsync finds little left to do, and a large save never piles gigabytes of dirty pages into
 * memory. sync_file_range itself blocks while the disk's queue is full, which would make
 * producing and writing take turns; so it runs on a thread of the file's own, started at
 * the first full window (inline if the thread cannot start). Advice only: failures are the
 * fsync's to report. */
#define OC_WRITEBACK_WINDOW (64u << 20)

struct oc__writeback {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int fd;
    uint64_t want, done; /* writeback asked for up to `want`, started up to `done` */
    int quit;
};

#ifdef SYNC_FILE_RANGE_WRITE
static void *writeback_run(void *arg) {
    struct oc__writeback *wb = arg;
    pthread_mutex_lock(&wb->lock);
    for (;;) {
        if (wb->done < wb->want) {
            uint64_t from = wb->done, to = wb->want;
            pthread_mutex_unlock(&wb->lock);
            (void)sync_file_range(wb->fd, (off_t)from, (off_t)(to - from), SYNC_FILE_RANGE_WRITE);
            pthread_mutex_lock(&wb->lock);
            wb->done = to;
        } else if (wb->quit) {
            break;
        } else {
            pthread_cond_wait(&wb->wake, &wb->lock);
        }
    }
    pthread_mutex_unlock(&wb->lock);
    return NULL;
}

static struct oc__writeback *writeback_start(int fd) {
    struct oc__writeback *wb = calloc(1, sizeof *wb);
    if (!wb) return NULL;
    wb->fd = fd;
    pthread_mutex_init(&wb->lock, NULL);
    pthread_cond_init(&wb->wake, NULL);
    if (oc__thread_start(&wb->thread, writeback_run, wb) != 0) {
        pthread_cond_destroy(&wb->wake);
        pthread_mutex_destroy(&wb->lock);
        free(wb);
        return NULL;
    }
    return wb;
}
#endif

/* Lets the writeback thread finish what it was asked, and ends it. */
static void writeback_stop(oc_atomic_file *af) {
    struct oc__writeback *wb = af->writeback;
    if (!wb) return;
    pthread_mutex_lock(&wb->lock);
    wb->quit = 1;
    pthread_cond_signal(&wb->wake);
    pthread_mutex_unlock(&wb->lock);
    pthread_join(wb->thread, NULL);
    pthread_cond_destroy(&wb->wake);
    pthread_mutex_destroy(&wb->lock);
    free(wb);
    af->writeback = NULL;
}

/* Counts n bytes appended (written, progress) and starts writeback of each full window. */
void oc__atomic_appended(oc_atomic_file *af, uint64_t n) {
    af->written += n;
    oc_progress_add(af->progress, n);
#ifdef SYNC_FILE_RANGE_WRITE
    if (af->through || af->written - af->flushed < OC_WRITEBACK_WINDOW) return;
    if (!af->writeback && !af->writeback_failed) {
        af->writeback = writeback_start(af->fd);
        af->writeback_failed = af->writeback == NULL;
    }
    struct oc__writeback *wb = af->writeback;
    if (wb) {
        pthread_mutex_lock(&wb->lock);
        wb->want = af->written;
        pthread_cond_signal(&wb->wake);
        pthread_mutex_unlock(&wb->lock);
    } else {
        (void)sync_file_range(af->fd, (off_t)af->flushed, (off_t)(af->written - af->flushed),
                              SYNC_FILE_RANGE_WRITE);
    }
    af->flushed = af->written;
#endif
}

/* `at` of put_all for bytes appended where the file ends (write, counted by
 * oc__atomic_appended) rather than written at an offset (pwrite, patching). */
#define APPEND UINT64_MAX

/* Writes all size bytes, a gigabyte at most a call, retrying an interrupted one. */
static oc_status put_all(oc_atomic_file *af, const void *data, uint64_t size, uint64_t at,
                         oc_error *err) {
    const uint8_t *p = data;
    while (size) {
        size_t chunk = size > (1u << 30) ? (1u << 30) : (size_t)size;
        ssize_t w = at == APPEND ? write(af->fd, p, chunk) : pwrite(af->fd, p, chunk, (off_t)at);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            return oc_error_file(
                err, af->path,
                oc__fail_errno(err, w < 0 ? errno : EIO, "cannot write %s", af->path));
        p += w;
        size -= (uint64_t)w;
        if (at == APPEND)
            oc__atomic_appended(af, (uint64_t)w);
        else
            at += (uint64_t)w;
    }
    return OC_OK;
}

oc_status oc_atomic_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    oc_atomic_file *af = ctx;
    if (af->remote) {
        oc_status st = af->remote->write(af->remote_ctx, data, size, err);
        if (st != OC_OK) return oc_error_file(err, af->path, st);
        oc__atomic_appended(af, size);
        return OC_OK;
    }
    return put_all(af, data, size, APPEND, err);
}

oc_status oc_atomic_pwrite(oc_atomic_file *af, const void *data, uint64_t size, uint64_t at,
                           oc_error *err) {
    if (af->remote)
        return oc_error_file(err, af->path, af->remote->patch(af->remote_ctx, data, size, at, err));
    return put_all(af, data, size, at, err);
}

void oc_atomic_hold(oc_atomic_file *af, uint64_t at, uint64_t n) {
    if (af->remote) af->remote->hold(af->remote_ctx, at, n);
}

static void fsync_dir(const char *path) {
    char *dir = oc__path_dir(path);
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd); /* best effort: some filesystems refuse fsync on directories */
        close(fd);
    }
    free(dir);
}

/* A stream written through: closed (a pipe's reader sees its end), nothing to rename. */
static oc_status commit_through(oc_atomic_file *af, oc_error *err) {
    oc_status st = OC_OK;
    if (close(af->fd) != 0 && errno != EINTR)
        st = oc_error_file(err, af->path, oc__fail_errno(err, errno, "cannot write %s", af->path));
    af->fd = -1;
    oc_atomic_abort(af);
    return st;
}

oc_status oc_atomic_commit(oc_atomic_file *af, oc_error *err) {
    oc_status st = OC_OK;
    if (af->remote) {
        const oc__atomic_remote *r = af->remote;
        af->remote = NULL; /* commit ends it, success or not */
        st = r->commit(af->remote_ctx, af->no_overwrite, err);
        if (st != OC_OK) oc_error_file(err, af->path, st);
        oc_atomic_abort(af);
        return st;
    }
    if (af->through) return commit_through(af, err);
    writeback_stop(af);
    if (!af->no_sync && fsync(af->fd) != 0)
        st = oc_error_file(err, af->tmp_path,
                           oc__fail_errno(err, errno, "cannot sync %s", af->tmp_path));
    if (close(af->fd) != 0 && st == OC_OK)
        st = oc_error_file(err, af->tmp_path,
                           oc__fail_errno(err, errno, "cannot close %s", af->tmp_path));
    af->fd = -1;
    if (st == OC_OK) {
        int r;
#ifdef RENAME_NOREPLACE
        if (af->no_overwrite) {
            r = renameat2(AT_FDCWD, af->tmp_path, AT_FDCWD, af->path, RENAME_NOREPLACE);
            if (r != 0 && (errno == EINVAL || errno == ENOSYS)) { /* fs without the flag */
                r = link(af->tmp_path, af->path);
                if (r == 0) unlink(af->tmp_path);
            }
        } else
#endif
            r = rename(af->tmp_path, af->path);
        if (r != 0) {
            st = errno == EEXIST
                     ? oc_error_file(err, af->path,
                                     oc__fail(err, OC_ERR_EXISTS, OC_NO_OFFSET, "%s already exists",
                                              af->path))
                     : oc__fail_errno(err, errno, "cannot rename %s to %s", af->tmp_path, af->path);
        } else {
            forget_temp(af);
            free(af->tmp_path);
            af->tmp_path = NULL; /* renamed: nothing left to remove */
            oc__test_point("atomic-renamed");
            if (!af->no_sync) fsync_dir(af->path);
        }
    }
    oc_atomic_abort(af);
    return st;
}

void oc_atomic_abort(oc_atomic_file *af) {
    if (af->remote) af->remote->abort(af->remote_ctx);
    af->remote = NULL;
    writeback_stop(af); /* before its descriptor goes */
    if (af->fd >= 0) close(af->fd);
    af->fd = -1;
    if (af->tmp_path) unlink(af->tmp_path);
    if (af->tmp_path) forget_temp(af);
    free(af->tmp_path);
    free(af->path);
    af->tmp_path = NULL;
    af->path = NULL;
}
