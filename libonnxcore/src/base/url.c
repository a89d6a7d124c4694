/*
 * url.c - onnxcore/http.h: what is a URL, and whether this build reads them; URLs
 * relative to a model's and percent-encoding (internal/url.h). Built with or without libcurl.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnxcore/http.h"
#include "internal/url.h"

/* http:// or https://: the URLs that RFC 3986 splits (and that may hold a password). */
static bool is_http(const char *path) {
    return path && (strncasecmp(path, "http://", 7) == 0 || strncasecmp(path, "https://", 8) == 0);
}

int oc__is_s3_url(const char *path) { return path && strncasecmp(path, "s3://", 5) == 0; }

oc_url_scheme oc_url_scheme_of(const char *path) {
    if (is_http(path)) return OC_URL_HTTP;
    if (oc__is_s3_url(path)) return OC_URL_S3;
    if (path && strncasecmp(path, "hf://", 5) == 0) return OC_URL_HF;
    return OC_URL_NONE;
}

bool oc_is_url(const char *path) { return oc_url_scheme_of(path) != OC_URL_NONE; }

/* An http(s) URL as RFC 3986 (section 3) splits it: after "scheme://" the authority runs
 * to the first '/', '?' or '#'; in it, the userinfo ends at its last '@'. The URL ends at
 * a NUL or a blank (a URL in a message), the authority at a blank only where no '@'
 * follows before its end. Offsets from the URL's first byte. */
typedef struct url_parts {
    size_t authority; /* after "://" */
    size_t host;      /* after the userinfo's '@', or = authority */
    size_t rest;      /* the path, query or fragment: the authority's end */
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
}

/* Whether a password may lie where the split did not find it: the authority holds a ':'
 * outside an IPv6 literal (a port, or a password that a '/', '?', '#' or blank cut short: "http://alice:pa/ss@h"
 * reads as host "alice", port "pa"), or a ':' not followed by a blank comes before the
 * URL's first blank (a user's name holding a '/': "http://al/ice:pw@h"). A ':' that ends
 * a URL in a message ("URL: why") is neither. */
static int may_hide_password(const char *url, const url_parts *p) {
    size_t h = p->host;
    if (url[h] == '[') /* an IPv6 literal's ':' are its own */
        while (h < p->rest && url[h] != ']') h++;
    if (memchr(url + p->authority, ':', p->host - p->authority) ||
        memchr(url + h, ':', p->rest - h))
        return 1;
    for (size_t i = p->authority; !url_end(url[i]); i++)
        if (url[i] == ':' && !url_end(url[i + 1]) && (i < p->host || i >= h)) return 1;
    return 0;
}

/* Where the bytes of a URL that may hold a password end (spec/security.md N-2): after the
 * last '@' of its authority; or, for a URL where a password may lie unsplit, after the
 * last '@' of its line (the text up to a newline or its end). A user who typed a password
 * holding '@', '/', '?', '#', blanks or several of them never sees any of it: the URL's
 * end in a message cannot be told from a blank in its password, so everything up to the
 * line's last '@' may be the password. */
static size_t credentials_end(const char *url, const url_parts *p) {
    if (!may_hide_password(url, p)) return p->host;
    size_t last_at = p->host;
    for (size_t i = p->authority; url[i] && url[i] != '\n'; i++)
        if (url[i] == '@') last_at = i + 1;
    return last_at;
}

bool oc__url_ambiguous(const char *url) {
    if (!is_http(url)) return false;
    url_parts p;
    url_split(url, &p);
    return credentials_end(url, &p) != p.host;
}

const char *oc_path_shown(const char *path, char *out, size_t cap) {
    if (!out || !cap) return out;
    size_t o = 0; /* never past s: out may be path */
    for (const char *s = path; *s && o + 1 < cap;) {
        size_t keep = 1, skip = 1;
        if (is_http(s)) { /* "scheme://", then on after what may hold a password */
            url_parts p;
            url_split(s, &p);
            keep = p.authority;
            skip = credentials_end(s, &p);
        } else if (oc__is_s3_url(s) || strncasecmp(s, "hf://", 5) == 0) {
            /* A bucket name, or a hub repository's owner, holds no '@' and no ':': one
             * before the first '/' or blank ends what a user may have typed as
             * "key:secret@" or "token@" (refused: s3.c, hf.c), which is not shown; after
             * a ':' there (a secret may hold a '/'), up to the line's last '@'. */
            size_t a = strcspn(s + 5, "/ \t\n"), at = 0;
            if (memchr(s + 5, ':', a)) a = strcspn(s + 5, "\n");
            for (size_t i = 0; i < a; i++)
                if (s[5 + i] == '@') at = i + 1;
            keep = 5;
            skip = 5 + at;
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
 * percent-encoded: a location can never add a query, a fragment, a host or a scheme. An
 * s3:// URL's key is its bytes, encoded only when the request is made: rel is joined as
 * it is (it holds no "..", no leading '/': oc__location_problem). */
char *oc__uri_encode(const char *s, size_t n, int keep_slash, char *out) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
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

char *oc__url_join(const char *dir, const char *rel, size_t rel_len) {
    size_t dn = strlen(dir);
    if (rel_len > (SIZE_MAX - dn - 2) / 3) return NULL;
    char *out = malloc(dn + 2 + 3 * rel_len);
    if (!out) return NULL;
    memcpy(out, dir, dn);
    out[dn] = '/';
    /* An empty or "." component names nothing on disk ("a/./b", "a//b" are "a/b"): it is
     * left out, so that a URL names the same file the path would (an S3 key keeps every
     * byte, a hub path refuses such components, and a path we built is sent as it is,
     * CURLOPT_PATH_AS_IS, never folded). Written first at the end of out, then moved. */
    char *tmp = out + dn + 1 + 2 * rel_len;
    size_t n = 0;
    for (size_t i = 0; i < rel_len;) {
        size_t l = 0;
        while (i + l < rel_len && rel[i + l] != '/') l++;
        if (l && !(l == 1 && rel[i] == '.')) {
            if (n) tmp[n++] = '/';
            memcpy(tmp + n, rel + i, l);
            n += l;
        }
        i += l + 1;
    }
    if (oc__is_s3_url(dir)) {
        memmove(out + dn + 1, tmp, n);
        out[dn + 1 + n] = '\0';
    } else {
        char *plain = malloc(n + 1);
        if (!plain) {
            free(out);
            return NULL;
        }
        memcpy(plain, tmp, n);
        oc__uri_encode(plain, n, 1, out + dn + 1);
        free(plain);
    }
    return out;
}
