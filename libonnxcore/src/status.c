/*
 * status.c - status names and error recording.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "onnxcore/onnxcore.h"
#include "internal/error.h"

const char *oc_version(void) { return ONNXCORE_VERSION_STRING; }

const char *oc_status_name(oc_status s) {
    switch (s) {
    case OC_OK: return "ok";
    case OC_ERR_NOMEM: return "out of memory";
    case OC_ERR_IO: return "i/o error";
    case OC_ERR_TRUNCATED: return "truncated";
    case OC_ERR_MALFORMED: return "malformed";
    case OC_ERR_DEPTH: return "nested too deeply";
    case OC_ERR_LIMIT: return "limit exceeded";
    case OC_ERR_INVALID_ARG: return "invalid argument";
    case OC_ERR_NOT_FOUND: return "not found";
    case OC_ERR_UNSUPPORTED: return "unsupported";
    case OC_ERR_UNSAFE_PATH: return "unsafe path";
    case OC_ERR_CHECKSUM: return "checksum mismatch";
    case OC_ERR_CRYPTO: return "crypto failure";
    case OC_ERR_BAD_KEY: return "wrong key or tampered data";
    case OC_ERR_EXISTS: return "already exists";
    case OC_ERR_INCONSISTENT: return "inconsistent";
    }
    return "unknown status";
}

void oc_error_clear(oc_error *err) {
    if (!err) return;
    err->code = OC_OK;
    err->sys_errno = 0;
    err->offset = OC_NO_OFFSET;
    err->message[0] = '\0';
}

static void set_message(oc_error *err, const char *fmt, va_list ap) {
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    /* One line: a message built from file contents must not smuggle in newlines. */
    for (char *p = err->message; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

oc_status oc_error_set(oc_error *err, oc_status code, uint64_t offset, const char *fmt, ...) {
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

oc_status oc_error_set_errno(oc_error *err, int errnum, const char *fmt, ...) {
    oc_status code = errnum == ENOENT ? OC_ERR_NOT_FOUND : (errnum == EEXIST ? OC_ERR_EXISTS : (errnum == ENOMEM ? OC_ERR_NOMEM : OC_ERR_IO));
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
