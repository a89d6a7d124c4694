/*
 * names.c - entry names: the safety rules (spec Z-30..Z-35). Entries are found by name
 * through onnxcore's keyed table (libonnxcore/internal/nametab.h).
 */
#include <string.h>

#include <onnxcore/status.h>

#include "internal/zipfmt.h"

/* ---- the rules ---- */

oz__name_fault oz__name_check(const uint8_t *name, size_t len, int allow_dir) {
    if (len == 0) return OZ_NAME_EMPTY;
    for (size_t i = 0; i < len;) {
        if (name[i] == 0) return OZ_NAME_NUL;
        size_t k = oc_utf8_len(name + i, len - i);
        if (!k) return OZ_NAME_NOT_UTF8;
        i += k;
    }
    if (memchr(name, '\\', len)) return OZ_NAME_BACKSLASH;
    if (name[0] == '/') return OZ_NAME_ABSOLUTE;
    if (len >= 2 && name[1] == ':' &&
        ((name[0] >= 'A' && name[0] <= 'Z') || (name[0] >= 'a' && name[0] <= 'z')))
        return OZ_NAME_DRIVE;
    size_t end = len;
    if (name[len - 1] == '/') {
        if (!allow_dir) return OZ_NAME_DIRECTORY;
        end = len - 1; /* one trailing '/' marks a directory entry */
    }
    size_t start = 0;
    for (size_t i = 0; i <= end; i++) {
        if (i < end && name[i] != '/') continue;
        size_t clen = i - start;
        if (clen == 0) return OZ_NAME_EMPTY_COMPONENT;
        if (clen == 1 && name[start] == '.') return OZ_NAME_DOT;
        if (clen == 2 && name[start] == '.' && name[start + 1] == '.') return OZ_NAME_DOTDOT;
        start = i + 1;
    }
    return OZ_NAME_OK;
}

const char *oz__name_fault_text(oz__name_fault f) {
    switch (f) {
    case OZ_NAME_OK:
        return "is fine";
    case OZ_NAME_EMPTY:
        return "is empty";
    case OZ_NAME_NOT_UTF8:
        return "is not valid UTF-8";
    case OZ_NAME_NUL:
        return "contains a NUL byte";
    case OZ_NAME_BACKSLASH:
        return "contains a backslash";
    case OZ_NAME_ABSOLUTE:
        return "is absolute";
    case OZ_NAME_DRIVE:
        return "starts with a drive letter";
    case OZ_NAME_EMPTY_COMPONENT:
        return "has an empty component";
    case OZ_NAME_DOT:
        return "has a '.' component";
    case OZ_NAME_DOTDOT:
        return "has a '..' component";
    case OZ_NAME_DIRECTORY:
        return "ends with '/'";
    }
    return "is invalid";
}

const char *oz__name_fault_rule(oz__name_fault f) {
    switch (f) {
    case OZ_NAME_EMPTY:
        return "Z-30";
    case OZ_NAME_NOT_UTF8:
    case OZ_NAME_NUL:
        return "Z-31";
    case OZ_NAME_BACKSLASH:
        return "Z-32";
    case OZ_NAME_ABSOLUTE:
    case OZ_NAME_DRIVE:
        return "Z-33";
    default:
        return "Z-34";
    }
}

int oz__name_fault_unsafe(oz__name_fault f) {
    return f != OZ_NAME_OK && f != OZ_NAME_EMPTY && f != OZ_NAME_NOT_UTF8 && f != OZ_NAME_DIRECTORY;
}
