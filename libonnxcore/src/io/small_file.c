/*
 * small_file.c - a small file read whole, without blocking and only when regular and
 * small (internal/small_file.h; spec/remote.md R-20): a FIFO or a device put where
 * ~/.aws/credentials or a signature bundle is expected must not hang the read, nor a
 * directory or a huge file break it obscurely.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/error.h"
#include "internal/small_file.h"

void oc__small_file_free(char *s, size_t n) {
    if (!s) return;
    volatile char *v = s; /* it may hold a secret */
    for (size_t i = 0; i < n; i++) v[i] = 0;
    free(s);
}

static oc_status too_large(const char *path, const char *what, size_t max, oc_error *err) {
    return oc_error_file(err, path,
                         oc__fail(err, OC_ERR_LIMIT, OC_NO_OFFSET,
                                  "%s: cannot read %s: over the %zu-byte limit", path, what, max));
}

static oc_status failed(const char *path, const char *what, int e, oc_error *err) {
    return oc_error_file(err, path, oc__fail_errno(err, e, "%s: cannot read %s", path, what));
}

/* Reads fd to its end into *buf (*cap bytes, *got read so far), one byte always left for
 * the NUL; grows it (a copy, the old one wiped) to hold up to max + 1 bytes: past max is
 * over the limit. */
static oc_status read_all(int fd, const char *path, const char *what, size_t max, char **buf,
                          size_t *cap, size_t *got, oc_error *err) {
    for (;;) {
        if (*got == *cap - 1) {
            if (*got > max) return too_large(path, what, max, err);
            size_t grown = *got > max / 2 ? max + 2 : *cap * 2;
            char *b = malloc(grown);
            if (!b) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
            memcpy(b, *buf, *got);
            oc__small_file_free(*buf, *got);
            *buf = b;
            *cap = grown;
        }
        ssize_t r = read(fd, *buf + *got, *cap - 1 - *got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return failed(path, what, errno, err);
        if (r == 0) break;
        *got += (size_t)r;
    }
    return *got > max ? too_large(path, what, max, err) : OC_OK;
}

oc_status oc__small_file_read(const char *path, const char *what, size_t max, unsigned flags,
                              char **out, size_t *n, oc_error *err) {
    *out = NULL;
    *n = 0;
    /* O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if ((flags & OC__SMALL_FILE_MISSING_OK) && (errno == ENOENT || errno == ENOTDIR))
            return OC_OK;
        return failed(path, what, errno, err);
    }
    struct stat sb;
    oc_status st = OC_OK;
    if (fstat(fd, &sb) != 0)
        st = failed(path, what, errno, err);
    else if (!S_ISREG(sb.st_mode))
        st = oc_error_file(err, path,
                           oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                    "%s: cannot read %s: not a regular file", path, what));
    else if ((uint64_t)sb.st_size > max)
        st = too_large(path, what, max, err);
    /* its size now, one byte to see its end and the NUL: a file that grew meanwhile (or
     * whose size of 0 is not its length) makes the buffer grow */
    size_t cap = st == OC_OK ? (size_t)sb.st_size + 2 : 0, got = 0;
    char *buf = cap ? malloc(cap) : NULL;
    if (st == OC_OK && !buf) st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (st == OC_OK) st = read_all(fd, path, what, max, &buf, &cap, &got, err);
    close(fd);
    if (st != OC_OK) {
        oc__small_file_free(buf, got);
        return st;
    }
    buf[got] = '\0';
    *out = buf;
    *n = got;
    return OC_OK;
}
