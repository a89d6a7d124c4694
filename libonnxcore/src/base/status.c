/*
 * status.c - status names and error recording.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxcore/http.h"
#include "onnxcore/onnxcore.h"
#include "internal/error.h"

const char *oc_version(void) { return ONNXCORE_VERSION_STRING; }

const char *oc_status_name(oc_status s) {
    switch (s) {
    case OC_OK:
        return "ok";
    case OC_ERR_NOMEM:
        return "out of memory";
    case OC_ERR_IO:
        return "i/o error";
    case OC_ERR_TRUNCATED:
        return "truncated";
    case OC_ERR_MALFORMED:
        return "malformed";
    case OC_ERR_DEPTH:
        return "nested too deeply";
    case OC_ERR_LIMIT:
        return "limit exceeded";
    case OC_ERR_INVALID_ARG:
        return "invalid argument";
    case OC_ERR_NOT_FOUND:
        return "not found";
    case OC_ERR_UNSUPPORTED:
        return "unsupported";
    case OC_ERR_UNSAFE_PATH:
        return "unsafe path";
    case OC_ERR_CHECKSUM:
        return "checksum mismatch";
    case OC_ERR_CRYPTO:
        return "crypto failure";
    case OC_ERR_BAD_KEY:
        return "wrong key or tampered data";
    case OC_ERR_EXISTS:
        return "already exists";
    case OC_ERR_INCONSISTENT:
        return "inconsistent";
    case OC_ERR_BUSY:
        return "busy";
    case OC_ERR_CANCELLED:
        return "cancelled";
    }
    return "unknown status";
}

/* The layout every caller, old or new, allocates (status.h). */
_Static_assert(sizeof(oc_error) == 272, "oc_error keeps its size");

void oc_error_clear(oc_error *err) {
    if (!err) return;
    err->code = OC_OK;
    err->sys_errno = 0;
    err->offset = OC_NO_OFFSET;
    err->message[0] = '\0';
    err->rule[0] = '\0';
    err->file_at = err->file_len = 0;
}

const char *oc_error_detail(const oc_error *err, const char *file, char *buf, size_t size) {
    if (!err) return oc_status_name(OC_ERR_INVALID_ARG);
    const char *msg = err->message[0] ? err->message : oc_status_name(err->code);
    size_t flen = file ? strlen(file) : 0, at = err->file_at, len = err->file_len;
    if (flen == 0 || len != flen || at + len > strlen(msg) || memcmp(msg + at, file, flen) != 0)
        return msg;
    if (at == 0) { /* "FILE: why", "FILE is ...": the name and the separator after it */
        const char *rest = msg + len;
        if (rest[0] == ':' && rest[1] == ' ' && rest[2] != '\0') return rest + 2;
        return rest[0] == ' ' && rest[1] != '\0' ? rest + 1 : msg;
    }
    if (!buf || size == 0) return msg; /* "cannot open FILE: why": the space before it too */
    snprintf(buf, size, "%.*s%s", (int)(at - 1), msg, msg + at + len);
    return buf;
}

oc_status oc_error_file(oc_error *err, const char *file, oc_status status) {
    char shown[OC_ERROR_MESSAGE_MAX];
    size_t flen = file ? strlen(file) : 0;
    if (!err || flen == 0 || flen >= sizeof shown) return status; /* not in a message whole */
    file = oc_path_shown(file, shown, sizeof shown);              /* as every message names it */
    flen = strlen(file);
    for (const char *p = err->message; (p = strstr(p, file)) != NULL; p++) {
        char after = p[flen];
        if ((p == err->message || p[-1] == ' ') &&
            (after == '\0' || after == ' ' || after == ':')) {
            err->file_at = (uint16_t)(p - err->message);
            err->file_len = (uint16_t)flen;
            break;
        }
    }
    return status;
}

/* Formats into err->message, then appends " (RULE)" (rule NULL or "": none) and suffix
 * (NULL: none). A message too long for it keeps its start, the rule and the suffix:
 * "start... (X-NN): suffix", cut between UTF-8 sequences, so the rule a test or a user
 * looks for, and the system's reason, survive a long quoted path or name in the middle. */
static void set_message(oc_error *err, const char *rule, const char *suffix, const char *fmt,
                        va_list ap) {
    char local[4 * OC_ERROR_MESSAGE_MAX], *full = local, tail[OC_ERROR_MESSAGE_MAX];
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(local, sizeof local, fmt, ap);
    if (n >= (int)sizeof local) { /* rare: a very long path */
        char *big = malloc((size_t)n + 1);
        if (big && vsnprintf(big, (size_t)n + 1, fmt, again) == n)
            full = big;
        else
            free(big);
    }
    va_end(again);
    if (n < 0) local[0] = '\0';
    /* No user:password@ of a URL in any message (spec/security.md N-2), whole or cut */
    oc_path_shown(full, full, strlen(full) + 1);
    size_t len = strlen(full), cap = sizeof err->message - 1;
    size_t slen = suffix ? strlen(suffix) : 0;
    if (slen > cap / 2) slen = cap / 2; /* a suffix never crowds the message out */
    while (slen > 0 && ((unsigned char)suffix[slen] & 0xC0) == 0x80) slen--;
    snprintf(err->rule, sizeof err->rule, "%s", rule ? rule : "");
    int tlen = snprintf(tail, sizeof tail, "%s%s%s%.*s", err->rule[0] ? " (" : "", err->rule,
                        err->rule[0] ? ")" : "", (int)slen, suffix ? suffix : "");
    size_t t = tlen > 0 ? (size_t)tlen : 0;
    if (len + t <= cap) {
        memcpy(err->message, full, len);
        memcpy(err->message + len, tail, t + 1);
    } else {
        size_t head = cap - 3 - t;
        while (head > 0 && ((unsigned char)full[head] & 0xC0) == 0x80) head--;
        memcpy(err->message, full, head);
        memcpy(err->message + head, "...", 3);
        memcpy(err->message + head + 3, tail, t + 1);
    }
    if (full != local) free(full);
    err->file_at = err->file_len = 0;
    /* One line: a message built from file contents must not smuggle in newlines. */
    for (char *p = err->message; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

static void set_plain(oc_error *err, oc_status code, uint64_t offset, const char *rule,
                      const char *fmt, va_list ap) {
    err->code = code;
    err->sys_errno = 0;
    err->offset = offset;
    set_message(err, rule, NULL, fmt, ap);
}

oc_status oc_error_set(oc_error *err, oc_status code, uint64_t offset, const char *fmt, ...) {
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    set_plain(err, code, offset, NULL, fmt, ap);
    va_end(ap);
    return code;
}

oc_status oc_error_set_rule(oc_error *err, oc_status code, uint64_t offset, const char *rule,
                            const char *fmt, ...) {
    if (!err) return code;
    va_list ap;
    va_start(ap, fmt);
    set_plain(err, code, offset, rule, fmt, ap);
    va_end(ap);
    return code;
}

static oc_status errno_code(int errnum) {
    return errnum == ENOENT
               ? OC_ERR_NOT_FOUND
               : (errnum == EEXIST ? OC_ERR_EXISTS : (errnum == ENOMEM ? OC_ERR_NOMEM : OC_ERR_IO));
}

static void set_errno(oc_error *err, int errnum, const char *rule, const char *fmt, va_list ap) {
    char reason[OC_ERROR_MESSAGE_MAX];
    err->code = errno_code(errnum);
    err->sys_errno = errnum;
    err->offset = OC_NO_OFFSET;
    snprintf(reason, sizeof reason, ": %s", strerror(errnum));
    set_message(err, rule, reason, fmt, ap);
}

oc_status oc_error_set_errno(oc_error *err, int errnum, const char *fmt, ...) {
    if (!err) return errno_code(errnum);
    va_list ap;
    va_start(ap, fmt);
    set_errno(err, errnum, NULL, fmt, ap);
    va_end(ap);
    return err->code;
}

oc_status oc_error_set_errno_rule(oc_error *err, int errnum, const char *rule, const char *fmt,
                                  ...) {
    if (!err) return errno_code(errnum);
    va_list ap;
    va_start(ap, fmt);
    set_errno(err, errnum, rule, fmt, ap);
    va_end(ap);
    return err->code;
}

size_t oc_utf8_len(const void *data, uint64_t n) {
    const unsigned char *s = data;
    if (n == 0) return 0;
    unsigned char c = s[0];
    if (c < 0x80) return 1;
    size_t len;
    uint32_t cp, min;
    if ((c & 0xE0) == 0xC0) {
        len = 2, cp = c & 0x1Fu, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, cp = c & 0x0Fu, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, cp = c & 0x07u, min = 0x10000;
    } else {
        return 0;
    }
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

/* Code points that are well formed but act on the line they are in: the C1 controls, the
 * bidirectional formatting characters (which reorder what follows on screen: U+061C,
 * U+200E, U+200F, U+202A..U+202E, U+2066..U+2069) and the line and paragraph separators
 * U+2028, U+2029 (a line break to some terminals and editors). */
static int acts_on_line(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
           (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t oc_utf8_printable_len(const void *data, uint64_t n) {
    const unsigned char *s = data;
    size_t len = oc_utf8_len(s, n);
    if (len < 2) return 0;
    uint32_t cp = s[0] & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
    for (size_t i = 1; i < len; i++) cp = (cp << 6) | (s[i] & 0x3Fu);
    return acts_on_line(cp) ? 0 : len;
}

/* One unit of the rendering at s[0..n): *in input bytes become *w output bytes in unit. */
static void quote_unit(const unsigned char *s, uint64_t n, char unit[4], size_t *in, size_t *w) {
    static const char hex[] = "0123456789abcdef";
    unsigned char c = s[0];
    size_t k;
    if (c >= 0x20 && c < 0x7f && c != '\\') {
        unit[0] = (char)c;
        *in = *w = 1;
    } else if (c >= 0x80 && (k = oc_utf8_printable_len(s, n)) != 0) {
        memcpy(unit, s, k);
        *in = *w = k;
    } else {
        unit[0] = '\\';
        unit[1] = 'x';
        unit[2] = hex[c >> 4];
        unit[3] = hex[c & 15];
        *in = 1;
        *w = 4;
    }
}

const char *oc_quote(const void *data, uint64_t size, char *out, size_t out_size) {
    const unsigned char *s = data;
    char unit[4];
    size_t k, w, o = 0;
    if (!out) return NULL;
    if (out_size < 4) {
        if (out_size) out[0] = '\0';
        return out;
    }
    if (!s) size = 0;
    /* Does the whole rendering fit? Then no room is kept for "...". */
    uint64_t total = 0;
    for (uint64_t i = 0; i < size && total < out_size; i += k) {
        quote_unit(s + i, size - i, unit, &k, &w);
        total += w;
    }
    int whole = total < out_size;
    for (uint64_t i = 0; i < size; i += k) {
        quote_unit(s + i, size - i, unit, &k, &w);
        /* Cut: room for this unit and a later "..." + NUL; each earlier step left room. */
        if (!whole && o + w + 4 > out_size) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(out + o, unit, w);
        o += w;
    }
    out[o] = '\0';
    return out;
}
