/*
 * settings_file.c - the files a program's settings name, read without blocking and only
 * when regular and small (internal/settings_file.h; spec/remote.md R-20): a FIFO or a
 * device put where ~/.aws/credentials is expected must not hang a read of an s3:// URL,
 * nor a directory or a huge file break it obscurely.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxcore/http.h"
#include "internal/error.h"
#include "internal/settings_file.h"

void oc__settings_file_free(char *s, size_t n) {
    if (!s) return;
    volatile char *v = s; /* it may hold a secret */
    for (size_t i = 0; i < n; i++) v[i] = 0;
    free(s);
}

oc_status oc__settings_file_read(const char *path, const char *what, size_t max, char **out,
                                 size_t *n, oc_error *err) {
    *out = NULL;
    *n = 0;
    /* O_NONBLOCK: opening a FIFO with no writer returns at once instead of waiting. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT || errno == ENOTDIR) return OC_OK;
        return oc_error_file(err, path,
                             oc__fail_errno(err, errno, "%s: cannot read %s", path, what));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return oc_error_file(err, path, oc__fail_errno(err, e, "%s: cannot read %s", path, what));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                      "%s: cannot read %s: not a regular file", path, what));
    }
    if ((uint64_t)sb.st_size > max) {
        close(fd);
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                      "%s: cannot read %s: over %zu bytes", path, what, max));
    }
    char *buf = malloc(max + 1);
    if (!buf) {
        close(fd);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    size_t got = 0;
    int e = 0;
    for (;;) { /* the file may grow after fstat: never past max + 1 bytes */
        ssize_t r = read(fd, buf + got, max + 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) e = errno;
        if (r <= 0) break;
        got += (size_t)r;
        if (got > max) break;
    }
    close(fd);
    if (e || got > max) {
        oc__settings_file_free(buf, got);
        if (e)
            return oc_error_file(err, path,
                                 oc__fail_errno(err, e, "%s: cannot read %s", path, what));
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                      "%s: cannot read %s: over %zu bytes", path, what, max));
    }
    buf[got] = '\0';
    *out = buf;
    *n = got;
    return OC_OK;
}

const char *oc__setting_shown(const char *value, char *out, size_t cap) {
    const char *at = strrchr(value, '@');
    if (!at) return oc_path_shown(value, out, cap);
    const char *sch = strstr(value, "://");
    int keep = sch && sch < at ? (int)(sch + 3 - value) : 0;
    snprintf(out, cap, "%.*s...@%s", keep, value, at + 1);
    return oc_path_shown(out, out, cap);
}
