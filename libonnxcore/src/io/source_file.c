/*
 * source_file.c - file sources (internal/source.h): a file mapped read-only, and a file
 * read with pread (network filesystems, where a mapping can fault unpredictably); and
 * oc_map_file / oc_map_fd (onnxcore/file.h), which are mapped sources seen whole.
 */
#define _GNU_SOURCE /* copy_file_range */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxcore/file.h"
#include "internal/bytes.h"
#include "internal/error.h"
#include "internal/source.h"
#include "internal/source_file.h"

/* ---- mapped ---- */

typedef struct mapped_source {
    oc_source head;
    void *addr;
    size_t len;
    int mapped;  /* 1: munmap, 0: free (a filesystem that cannot map: read whole) */
    int fd;      /* a descriptor of the file kept for pread and kernel copies, or -1 */
    int counted; /* fd counts towards OC_KEEP_FD_MAX */
    dev_t dev;   /* the file fd named when the source was made */
    ino_t ino;
    const oc_map_observer *observer; /* told of the mapping (oc__map_observe), or NULL */
    void *token;                     /* what observer->on_map returned */
} mapped_source;

static _Atomic(const oc_map_observer *) map_observer;

void oc__map_observe(const oc_map_observer *observer) { atomic_store(&map_observer, observer); }

static void observe_map(mapped_source *m, const char *name) {
    m->observer = atomic_load(&map_observer);
    if (m->observer) m->token = m->observer->on_map(m->addr, m->len, name);
}

/* A mapping of at least OC_KEEP_FD_MIN bytes keeps a descriptor of its file, so that its
 * bytes can be copied file to file by the kernel instead of through the mapping's pages.
 * At most OC_KEEP_FD_MAX mappings do at once (a model of thousands of tensor files must
 * not run the process out of descriptors); the others are copied through their pages. */
#define OC_KEEP_FD_MIN (1u << 20)
#define OC_KEEP_FD_MAX 64
static atomic_int kept_fds;

static void keep_fd(mapped_source *m, int fd, uint64_t size) {
    if (size < OC_KEEP_FD_MIN) return;
    if (atomic_fetch_add(&kept_fds, 1) >= OC_KEEP_FD_MAX) {
        atomic_fetch_sub(&kept_fds, 1);
        return;
    }
    m->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3); /* never 0-2, even when those are closed */
    m->counted = m->fd >= 0;
    if (m->fd < 0) atomic_fetch_sub(&kept_fds, 1);
}

/* The kept descriptor while it still names the mapped file, else -1. The descriptor is
 * ours, but a process may close descriptors it does not own (a daemon's closefrom) and
 * the number be reused: use it only while it is the file. */
static int live_fd(const mapped_source *m) {
    struct stat st;
    if (m->fd < 0 || fstat(m->fd, &st) != 0 || st.st_dev != m->dev || st.st_ino != m->ino)
        return -1;
    return m->fd;
}

static oc_status mapped_read(oc_source *s, uint64_t at, void *dst, uint64_t n, uint64_t *got,
                             oc_error *err) {
    mapped_source *m = (mapped_source *)s;
    uint8_t *out = dst;
    uint64_t done = 0;
    int fd = (s->caps & OC_SOURCE_BYPASS) ? live_fd(m) : -1;
    (void)err;
    while (fd >= 0 && done < n) {
        uint64_t want = n - done;
        ssize_t r = pread(fd, out + done, want > (1u << 30) ? (1u << 30) : (size_t)want,
                          (off_t)(at + done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) break; /* refused (EINVAL for O_DIRECT ...): the pages have the bytes */
        if (r == 0) {     /* the file was cut short under its mapping */
            *got = done;
            return OC_OK;
        }
        done += (uint64_t)r;
    }
    if (done < n) memcpy(out + done, s->data + at + done, (size_t)(n - done));
    *got = n;
    return OC_OK;
}

static oc_status mapped_map(oc_source *s, uint64_t at, uint64_t n, oc_bytes *out, oc_error *err) {
    (void)err;
    oc_bytes_set_shared(out, n ? s->data + at : NULL, n, s->owner);
    return OC_OK;
}

static void mapped_drop(oc_source *s, uint64_t at, uint64_t n) {
    long page = sysconf(_SC_PAGESIZE); /* once per piece of OC_BYTES_WRITE_CHUNK bytes */
    uintptr_t mask = (uintptr_t)(page > 0 ? page : 4096) - 1u;
    uintptr_t p = (uintptr_t)s->data + (uintptr_t)at;
    uintptr_t lo = (p + mask) & ~mask, hi = (p + (uintptr_t)n) & ~mask;
    /* Read-only and backed by the file: dropping loses nothing, a later touch re-reads the
     * page cache. Advice only, so a failure changes nothing either. */
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

static void advise_willneed(void *addr, size_t len);

/* Advice: the ranges will be read soon (an archive's tensor entries, prefetch). */
static void mapped_will_read(oc_source *s, const oc_source_range *ranges, size_t count) {
    mapped_source *m = (mapped_source *)s;
    if (!m->mapped) return; /* read whole into memory already */
    for (size_t i = 0; i < count; i++) {
        if (ranges[i].at >= m->len || ranges[i].size == 0) continue;
        uint64_t n =
            ranges[i].size < m->len - ranges[i].at ? ranges[i].size : m->len - ranges[i].at;
        advise_willneed((uint8_t *)m->addr + ranges[i].at, (size_t)n);
    }
}

static void mapped_random(oc_source *s, int on) {
    mapped_source *m = (mapped_source *)s;
    if (m->mapped) (void)madvise(m->addr, m->len, on ? MADV_RANDOM : MADV_NORMAL); /* advice */
}

static oc_status mapped_copy_to_fd(oc_source *s, uint64_t at, uint64_t n, int out_fd,
                                   uint64_t *done, oc_error *err) {
    int fd = (s->caps & OC_SOURCE_BYPASS) ? live_fd((mapped_source *)s) : -1;
    *done = 0;
    while (fd >= 0 && *done < n) {
        uint64_t left = n - *done;
        loff_t in = (loff_t)(at + *done);
        ssize_t r = copy_file_range(fd, &in, out_fd, NULL,
                                    left > (1u << 30) ? (1u << 30) : (size_t)left, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
                      errno == EBADF || errno == EPERM))
            break; /* not between these files: the rest goes through the pages */
        if (r < 0)
            return oc_error_file(err, s->name,
                                 oc__fail_errno(err, errno, "cannot copy %s", s->name));
        if (r == 0) break; /* a cut file, or a filesystem that copies nothing: pread tells */
        *done += (uint64_t)r;
    }
    return OC_OK;
}

static void mapped_destroy(oc_source *s) {
    mapped_source *m = (mapped_source *)s;
    if (m->observer) m->observer->on_unmap(m->token); /* before the range can be reused */
    if (m->mapped)
        munmap(m->addr, m->len);
    else
        free(m->addr);
    if (m->fd >= 0) close(m->fd);
    if (m->counted) atomic_fetch_sub(&kept_fds, 1);
}

static const oc_source_vtable mapped_vtable = {
    .kind = "mapped file",
    .read = mapped_read,
    .map = mapped_map,
    .drop = mapped_drop,
    .will_read = mapped_will_read,
    .copy_to_fd = mapped_copy_to_fd,
    .destroy = mapped_destroy,
    .random = mapped_random,
};

static oc_status read_whole(int fd, const char *name, uint64_t size, void **out, oc_error *err) {
    uint8_t *buf = malloc(size ? (size_t)size : 1);
    if (!buf)
        return oc_error_file(err, name,
                             oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "%s: out of memory", name));
    uint64_t done = 0;
    while (done < size) {
        ssize_t r = pread(fd, buf + done, (size_t)(size - done), (off_t)done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            free(buf);
            return oc_error_file(err, name, oc__fail_errno(err, e, "cannot read %s", name));
        }
        done += (uint64_t)r;
    }
    *out = buf;
    return OC_OK;
}

/* Tells the kernel [addr, addr + len) of a file mapping will be read (MADV_WILLNEED), in
 * pieces of WILLNEED_PIECE: Linux reads at most one readahead window (read_ahead_kb) for
 * each call, so one call for a whole 1 GB mapping asked for its first 8 MiB alone, and
 * the rest came by page faults. The reads are the kernel's, not waited for, but queueing
 * them can hold the caller while the disk's queue is full (0.5 s for 1 GB here). Chosen
 * by measurement over MAP_POPULATE and MADV_POPULATE_READ, which read everything before
 * they return (docs/performance.md, "Prefetch"). Advice only: a refusal changes nothing. */
#define WILLNEED_PIECE ((size_t)2 << 20)

static void advise_willneed(void *addr, size_t len) {
#ifdef MADV_WILLNEED
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t mask = (uintptr_t)(page > 0 ? page : 4096) - 1u;
    uintptr_t lo = (uintptr_t)addr & ~mask, hi = (uintptr_t)addr + len;
    for (uintptr_t a = lo; a < hi; a += hi - a < WILLNEED_PIECE ? hi - a : WILLNEED_PIECE)
        (void)madvise((void *)a, hi - a < WILLNEED_PIECE ? hi - a : WILLNEED_PIECE, MADV_WILLNEED);
#else
    (void)addr, (void)len;
#endif
}

oc_file_source_kind oc__file_kind(const oc_parse_options *opts) {
    if (opts && opts->use_pread) return OC_FILE_PREAD;
    return opts && opts->prefetch && opts->no_copy ? OC_FILE_MAPPED_PREFETCH : OC_FILE_MAPPED;
}

static oc_status open_mapped(int fd, const char *name, const struct stat *st, int always_keep,
                             int ahead, oc_source **out, oc_error *err) {
    uint64_t size = (uint64_t)st->st_size;
    if (size > (uint64_t)SIZE_MAX)
        return oc_error_file(
            err, name, oc__fail(err, OC_ERR_LIMIT, OC_NO_OFFSET, "%s is too large to map", name));
    mapped_source *m = calloc(1, sizeof *m);
    if (!m) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    m->fd = -1;
    m->dev = st->st_dev;
    m->ino = st->st_ino;
    if (size) {
        void *addr = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (addr != MAP_FAILED) {
            m->addr = addr;
            m->len = (size_t)size;
            m->mapped = 1;
            if (ahead) advise_willneed(addr, m->len);
            observe_map(m, name);
            /* where test_sigbus.py cuts the file, before anything reads it */
            oc__test_point("file-mapped");
        } else { /* some filesystems cannot map: read instead */
            oc_status s = read_whole(fd, name, size, &m->addr, err);
            if (s != OC_OK) {
                free(m);
                return s;
            }
        }
    }
    if (m->mapped) keep_fd(m, fd, size);
    if (always_keep && m->fd < 0 && (m->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0) {
        int e = errno;
        mapped_destroy(&m->head);
        free(m);
        return oc__fail_errno(err, e, "cannot duplicate the descriptor of %s", name);
    }
    unsigned caps = OC_SOURCE_MAP;
    if (m->mapped) caps |= OC_SOURCE_DROP;
    if (m->mapped && m->fd >= 0) caps |= OC_SOURCE_BYPASS;
    OC_FORWARD(oc__source_new(&m->head, &mapped_vtable, size, caps, m->addr, name, err));
    *out = &m->head;
    return OC_OK;
}

bool oc__bytes_file_source(const oc_bytes *span, int *fd, uint64_t *offset) {
    uint64_t at;
    oc_source *s = oc__bytes_source(span, &at);
    if (!s || s->vt != &mapped_vtable || !(s->caps & OC_SOURCE_BYPASS)) return false;
    int live = live_fd((const mapped_source *)s);
    if (live < 0) return false;
    *fd = live;
    *offset = at;
    return true;
}

/* ---- pread ---- */

typedef struct pread_source {
    oc_source head;
    int fd;
} pread_source;

static oc_status pread_read(oc_source *s, uint64_t at, void *dst, uint64_t n, uint64_t *got,
                            oc_error *err) {
    int fd = ((pread_source *)s)->fd;
    uint8_t *p = dst;
    *got = 0;
    while (*got < n) {
        uint64_t want = n - *got;
        ssize_t r =
            pread(fd, p + *got, want > (1u << 30) ? (1u << 30) : (size_t)want, (off_t)(at + *got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return oc_error_file(err, s->name,
                                 oc__fail_errno(err, errno, "cannot read %s", s->name));
        if (r == 0) break; /* the file shrank since it was measured */
        *got += (uint64_t)r;
    }
    return OC_OK;
}

static void pread_will_read(oc_source *s, const oc_source_range *r, size_t count) {
#ifdef POSIX_FADV_WILLNEED
    for (size_t i = 0; i < count; i++)
        (void)posix_fadvise(((pread_source *)s)->fd, (off_t)r[i].at, (off_t)r[i].size,
                            POSIX_FADV_WILLNEED);
#else
    (void)s, (void)r, (void)count;
#endif
}

static void pread_destroy(oc_source *s) { close(((pread_source *)s)->fd); }

static const oc_source_vtable pread_vtable = {
    .kind = "file",
    .read = pread_read,
    .will_read = pread_will_read,
    .destroy = pread_destroy,
};

static oc_status open_pread(int fd, const char *name, const struct stat *st, oc_source **out,
                            oc_error *err) {
    pread_source *p = calloc(1, sizeof *p);
    if (!p) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (p->fd < 0) {
        int e = errno;
        free(p);
        return oc__fail_errno(err, e, "cannot duplicate the descriptor of %s", name);
    }
    OC_FORWARD(oc__source_new(&p->head, &pread_vtable, (uint64_t)st->st_size, 0, NULL, name, err));
    *out = &p->head;
    return OC_OK;
}

oc_status oc_source_file(const char *path, int fd, const char *name, oc_file_source_kind kind,
                         int keep, oc_source **out, oc_error *err) {
    *out = NULL;
    int own = -1;
    if (path) {
        name = path;
        /* O_NONBLOCK: never hang on a FIFO */
        own = fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            return oc_error_file(err, path, oc__fail_errno(err, errno, "cannot open %s", path));
    }
    struct stat st;
    oc_status r = OC_OK;
    if (fstat(fd, &st) != 0)
        r = oc_error_file(err, name, oc__fail_errno(err, errno, "cannot stat %s", name));
    else if (!S_ISREG(st.st_mode))
        r = oc_error_file(err, name,
                          oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s is not a regular file", name));
    else if (kind == OC_FILE_PREAD)
        r = open_pread(fd, name, &st, out, err);
    else
        r = open_mapped(fd, name, &st, keep, kind == OC_FILE_MAPPED_PREFETCH, out, err);
    if (own >= 0) close(own); /* a source keeps its own duplicate when it needs one */
    return r;
}

/* ---- onnxcore/file.h: a mapped source seen whole ---- */

static oc_status map_whole(const char *path, int fd, const char *name, int keep, oc_mapped *out,
                           oc_error *err) {
    memset(out, 0, sizeof *out);
    oc_source *s;
    OC_FORWARD(oc_source_file(path, fd, name, OC_FILE_MAPPED, keep, &s, err));
    out->data = s->data;
    out->size = s->size;
    out->owner = s->owner; /* the source's reference passes to the caller */
    return OC_OK;
}

oc_status oc_map_fd(int fd, const char *name, oc_mapped *out, oc_error *err) {
    return map_whole(NULL, fd, name, 0, out, err);
}

oc_status oc_map_fd_keep(int fd, const char *name, oc_mapped *out, oc_error *err) {
    return map_whole(NULL, fd, name, 1, out, err);
}

oc_status oc_map_file(const char *path, oc_mapped *out, oc_error *err) {
    return map_whole(path, -1, path, 0, out, err);
}

oc_status oc__read_head(int fd, const char *path, void *buf, size_t n, size_t *got, oc_error *err) {
    uint8_t *p = buf;
    *got = 0;
    while (*got < n) {
        ssize_t r = read(fd, p + *got, n - *got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0)
            return oc_error_file(err, path, oc__fail_errno(err, errno, "cannot read %s", path));
        if (r == 0) break;
        *got += (size_t)r;
    }
    return OC_OK;
}
