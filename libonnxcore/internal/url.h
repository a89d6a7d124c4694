/*
 * internal/url.h - URLs relative to a model's (http.c, any build): the external-data
 * loader resolves a data file's location beside a model read from a URL with these.
 */
#ifndef ONNXCORE_INTERNAL_URL_H
#define ONNXCORE_INTERNAL_URL_H

#include <stddef.h>

/* dir + '/' + the rel_len bytes of rel, percent-encoded but for unreserved bytes and
 * '/' (rel is a location already checked by oc__location_problem). Caller frees. */
char *oc__url_join(const char *dir, const char *rel, size_t rel_len);

#endif
