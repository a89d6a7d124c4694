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

/* An http(s) URL as RFC 3986 (section 3) splits it: after "scheme://" the authority runs
 * to the first '/', '?' or '#'; in it, the userinfo ends at its last '@', and a port
 * follows the host's last ':' (after the ']' of an IPv6 literal). The URL ends at a NUL
 * or a blank (a URL in a message), the authority at a blank only where no '@' follows
 * before its end: a password holding a blank, which libcurl refuses, still ends at its
 * '@'. Offsets from the URL's first byte. */
typedef struct url_parts {
    size_t authority; /* after "://" */
    size_t host;      /* after the userinfo's '@', or = authority */
    size_t rest;      /* the path, query or fragment: the authority's end */
    size_t end;       /* the URL's end */
    int has_port;     /* a ':' after the host */
} url_parts;

static int url_end(char c) { return c == '\0' || c == ' ' || c == '\t' || c == '\n'; }

static int authority_end(const char *s) {
    if (*s == '/' || *s == '?' || *s == '#' || *s == '\0') return 1;
    return url_end(*s) && s[strcspn(s, "/?#@")] != '@';
}

static void url_split(const char *url, url_parts *p) {
    size_t i = (size_t)(strstr(url, "://") - url) + 3;
    p->authority = p->host = i;
    for (; !authority_end(url + i); i++)
        if (url[i] == '@') p->host = i + 1;
    p->rest = i;
    while (!url_end(url[i])) i++;
    p->end = i;
    size_t h = p->host;
    if (url[h] == '[') /* [IPv6]:port */
        while (h < p->rest && url[h] != ']') h++;
    p->has_port = 0;
    for (; h < p->rest; h++) p->has_port |= url[h] == ':';
}

/* Where the bytes of a URL that may hold a password end (spec/security.md N-2): after the
 * last '@' of its authority; or, when an '@' follows in the path, query or fragment of a
 * URL with userinfo or a port, after the URL's last '@': a password holding a '/', '?' or
 * '#' that is not percent-encoded ends the authority early, leaving the user's name as
 * the host and the password's start as the port ("http://alice:pa/ss@host/m"). */
static size_t credentials_end(const char *url, const url_parts *p) {
    size_t last_at = 0;
    for (size_t i = p->rest; i < p->end; i++)
        if (url[i] == '@') last_at = i + 1;
    if (last_at && (p->host > p->authority || p->has_port)) return last_at;
    return p->host;
}

const char *oc_path_shown(const char *path, char *out, size_t cap) {
    if (!out || !cap) return out;
    size_t o = 0; /* never past s: out may be path */
    for (const char *s = path; *s && o + 1 < cap;) {
        size_t keep = 1, skip = 1;
        if (oc_is_url(s)) { /* "scheme://", then on after what may hold a password */
            url_parts p;
            url_split(s, &p);
            keep = p.authority;
            skip = credentials_end(s, &p);
        }
        for (size_t i = 0; i < keep && o + 1 < cap; i++) out[o++] = s[i];
        s += skip;
    }
    out[o] = '\0';
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
