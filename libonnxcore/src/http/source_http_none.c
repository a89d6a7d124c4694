/*
 * source_http_none.c - the HTTP source of a build without libcurl: every URL is refused
 * (internal/source_http.h).
 */
#include "internal/error.h"
#include "internal/source_http.h"

void oc__source_http_identity(const oc_source *s, char *out, size_t cap) {
    (void)s;
    if (cap) out[0] = '\0';
}

oc_status oc__source_http(const char *url, const oc_http_options *opts, oc_source **out,
                          oc_error *err) {
    (void)opts;
    *out = NULL;
    return oc_error_file(err, url,
                         oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                                  "%s: built without HTTP support (libcurl): cannot read a URL",
                                  url));
}

const char *oc__source_http_pinned(const oc_source *s) {
    (void)s;
    return NULL;
}

oc_status oc__hf_pin(const char *path, const oc_http_options *http, char **pinned, oc_error *err) {
    (void)path, (void)http, (void)err;
    *pinned = NULL; /* the open that follows says this build reads no URL */
    return OC_OK;
}
