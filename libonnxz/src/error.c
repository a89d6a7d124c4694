/*
 * error.c - filling oc_error records for libonnxz.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal/error.h"

static void set_message(oc_error *err, const char *fmt, va_list ap) {
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    /* One line: a message built from archive contents must not smuggle in newlines. */
    for (char *p = err->message; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

oc_status oz__fail(oc_error *err, oc_status code, uint64_t offset, const char *fmt, ...) {
    if (!err) return code;
    err->code = code;
    err->sys_errno = 0;
    err->offset = offset;
    va_list ap;
    va_start(ap, fmt);
    set_message(err, fmt, ap);
    va_end(ap);
    return code;
}

oc_status oz__fail_errno(oc_error *err, int errnum, const char *fmt, ...) {
    oc_status code = errnum == ENOENT ? OC_ERR_NOT_FOUND
                     : errnum == ENOMEM ? OC_ERR_NOMEM
                                        : OC_ERR_IO;
    if (!err) return code;
    err->code = code;
    err->sys_errno = errnum;
    err->offset = OC_NO_OFFSET;
    va_list ap;
    va_start(ap, fmt);
    set_message(err, fmt, ap);
    va_end(ap);
    size_t n = strlen(err->message);
    snprintf(err->message + n, sizeof err->message - n, ": %s", strerror(errnum));
    return code;
}

const char *oz__quote(const uint8_t *name, size_t len, char out[OZ_QUOTE_MAX]) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (o > 80) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        uint8_t c = name[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return out;
}
