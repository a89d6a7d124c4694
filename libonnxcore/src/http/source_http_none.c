/*
 * source_http_none.c - the HTTP source of a build without libcurl: every URL is refused
 * (internal/source_http.h).
 */
#include "internal/error.h"
#include "internal/s3.h"
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

/* s3_upload.c's calls: only open is reached (an upload never starts without libcurl). */
oc_status oc__s3_upload_open(const char *url, const oc_http_options *http, bool no_overwrite,
                             oc__s3_upload **out, oc_error *err) {
    (void)http, (void)no_overwrite;
    *out = NULL;
    char shown[OC_ERROR_MESSAGE_MAX];
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                    "%s: built without HTTP support (libcurl): cannot write a URL",
                    oc_path_shown(url, shown, sizeof shown));
}
oc_status oc__s3_upload_write(oc__s3_upload *u, const void *data, uint64_t n, oc_error *err) {
    (void)u, (void)data, (void)n;
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET, "built without HTTP support");
}
void oc__s3_upload_hold(oc__s3_upload *u, uint64_t at, uint64_t n) { (void)u, (void)at, (void)n; }
oc_status oc__s3_upload_patch(oc__s3_upload *u, const void *data, uint64_t n, uint64_t at,
                              oc_error *err) {
    (void)u, (void)data, (void)n, (void)at;
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET, "built without HTTP support");
}
oc_status oc__s3_upload_commit(oc__s3_upload *u, bool no_overwrite, oc_error *err) {
    (void)u, (void)no_overwrite;
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET, "built without HTTP support");
}
void oc__s3_upload_abort(oc__s3_upload *u) { (void)u; }
