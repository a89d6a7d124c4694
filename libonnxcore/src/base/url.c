/*
 * http.c - onnxcore/http.h: what is a URL, and whether this build reads them; URLs
 * relative to a model's (internal/url.h). Built with or without libcurl.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnxcore/http.h"
#include "internal/url.h"

bool oc_is_url(const char *path) {
    return path && (strncasecmp(path, "http://", 7) == 0 || strncasecmp(path, "https://", 8) == 0);
}

const char *oc_path_shown(const char *path, char *out, size_t cap) {
    if (!out || !cap) return out;
    const char *host = path, *at = NULL;
    if (oc_is_url(path)) {
        host = strstr(path, "://") + 3;
        const char *end = host + strcspn(host, "/?#");
        for (const char *q = host; q < end; q++) /* the last '@': a password may hold '@' */
            if (*q == '@') at = q;
    }
    size_t head = at ? (size_t)(host - path) : 0;
    const char *rest = at ? at + 1 : path;
    if (head >= cap) head = cap - 1;
    memcpy(out, path, head);
    size_t n = strlen(rest);
    if (n > cap - 1 - head) n = cap - 1 - head;
    memcpy(out + head, rest, n);
    out[head + n] = '\0';
    return out;
}

bool oc_http_supported(void) {
#ifdef ONNXZ_HAVE_CURL
    return true;
#else
    return false;
#endif
}

/* dir + "/" + rel, with every byte of rel outside RFC 3986's unreserved set and '/'
 * percent-encoded: a location can never add a query, a fragment, a host or a scheme. */
char *oc__url_join(const char *dir, const char *rel, size_t rel_len) {
    static const char hex[] = "0123456789ABCDEF";
    size_t dn = strlen(dir);
    if (rel_len > (SIZE_MAX - dn - 2) / 3) return NULL;
    char *out = malloc(dn + 2 + 3 * rel_len);
    if (!out) return NULL;
    memcpy(out, dir, dn);
    size_t o = dn;
    out[o++] = '/';
    for (size_t i = 0; i < rel_len; i++) {
        unsigned char c = (unsigned char)rel[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return out;
}
