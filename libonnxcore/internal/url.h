/*
 * internal/url.h - URLs relative to a model's (http.c, any build): the external-data
 * loader resolves a data file's location beside a model read from a URL with these.
 */
#ifndef ONNXCORE_INTERNAL_URL_H
#define ONNXCORE_INTERNAL_URL_H

#include <stdbool.h>
#include <stddef.h>

/* The n bytes at s percent-encoded into out (room for 3n + 1): every byte outside RFC
 * 3986's unreserved set (A-Z a-z 0-9 - . _ ~) as %XY, upper-case hex (S3's UriEncode);
 * '/' kept when keep_slash. Returns out, NUL-terminated. */
char *oc__uri_encode(const char *s, size_t n, int keep_slash, char *out);

/* dir + '/' + the rel_len bytes of rel (its empty and "." components left out),
 * percent-encoded but for unreserved bytes and
 * '/' (rel is a location already checked by oc__location_problem). Caller frees. */
char *oc__url_join(const char *dir, const char *rel, size_t rel_len);

/* True when path is an s3:// URL (the scheme in any case): its key is taken as its bytes,
 * with no query, fragment or percent-decoding (internal/s3.h maps it onto its store). */
int oc__is_s3_url(const char *path);

/* True when url holds an '@' past the user:password@ that RFC 3986 splits from it, after
 * a ':' that may begin a password (oc_path_shown hides up to that '@', spec/security.md
 * N-2): a password holding a '/', '?', '#', '@' or blank not percent-encoded, which the
 * URL byte source refuses rather than send a part of it as a host, port or path. */
bool oc__url_ambiguous(const char *url);

#endif
