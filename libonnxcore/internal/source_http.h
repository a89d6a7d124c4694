/*
 * internal/source_http.h - an object on an HTTP(S) server read with range requests
 * (source_http.c on libcurl; source_http_none.c in a build without it). The interface is
 * internal/source.h; what is asked of the server and what each read costs is spec/remote.md.
 */
#ifndef ONNXCORE_INTERNAL_SOURCE_HTTP_H
#define ONNXCORE_INTERNAL_SOURCE_HTTP_H

#include "onnxcore_private.h"

#include "onnxcore/http.h"
#include "internal/source.h"

/* Bytes the first request asks for: the object's last 65 KiB (a suffix range), which
 * tells its size and identity and holds whatever a ZIP reader looks for at the end (the
 * end record with the longest comment, the zip64 locator and record: 65,633 bytes at
 * most) and, most often, the central directory. They are kept, and reads that fall in
 * them cost no request. */
#define OC_HTTP_TAIL (65u << 10)

/* Opens url (http:// or https://) with one request: the tail above. The object's size,
 * ETag and Last-Modified are fixed then; a later response that disagrees is an error,
 * never mixed bytes. opts may be NULL (the defaults, onnxcore/http.h). The source has
 * OC_SOURCE_REMOTE: every read outside the kept tail is one ranged GET (or more, when a
 * transfer breaks and is resumed). Built without libcurl: OC_ERR_UNSUPPORTED. */
OC_PRIVATE oc_status oc__source_http(const char *url, const oc_http_options *opts, oc_source **out,
                                     oc_error *err);
/* The identity fixed at the open of source s (made by oc__source_http): its ETag and
 * Last-Modified as one text ("" for a source of another kind), so that an object opened
 * again can be told to be the same one. */
void oc__source_http_identity(const oc_source *s, char *out, size_t cap);

/* The hf:// URL naming the commit source s (an hf:// URL's) was pinned to at open
 * ("hf://ORG/NAME@COMMIT/PATH"), or NULL for a source of another kind. */
OC_PRIVATE const char *oc__source_http_pinned(const oc_source *s);

/* path pinned (spec/remote.md H-4): for an hf:// URL whose revision is not a commit, a new
 * string naming the commit the hub reports for it now (*pinned, caller frees), found by
 * opening it (its first request, remembered: the open of *pinned that follows costs no
 * other); else *pinned NULL (path is used as it is). A loader that reads several objects
 * relative to one URL (a model and its data files) pins it first, so that all are read at
 * one commit. */
OC_PRIVATE oc_status oc__hf_pin(const char *path, const oc_http_options *http, char **pinned,
                                oc_error *err);

#endif
