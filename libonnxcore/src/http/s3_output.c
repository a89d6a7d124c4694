/*
 * s3_output.c - an s3://BUCKET/KEY output of the crash-safe writer (oc_atomic_open_url,
 * internal/atomic_url.h): the file's calls turned into a multipart upload's
 * (s3_upload.c, or its refusal in a build without libcurl).
 */
#define _DEFAULT_SOURCE /* strcasecmp */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnxcore/http.h"
#include "internal/atomic_url.h"
#include "internal/error.h"
#include "internal/onnxcore_atomic.h"
#include "internal/s3.h"

static oc_status up_write(void *ctx, const void *data, uint64_t n, oc_error *err) {
    return oc__s3_upload_write(ctx, data, n, err);
}
static oc_status up_patch(void *ctx, const void *data, uint64_t n, uint64_t at, oc_error *err) {
    return oc__s3_upload_patch(ctx, data, n, at, err);
}
static void up_hold(void *ctx, uint64_t at, uint64_t n) { oc__s3_upload_hold(ctx, at, n); }
static oc_status up_commit(void *ctx, bool no_overwrite, oc_error *err) {
    return oc__s3_upload_commit(ctx, no_overwrite, err);
}
static void up_abort(void *ctx) { oc__s3_upload_abort(ctx); }

static const oc__atomic_remote s3_upload_sink = {up_write, up_patch, up_hold, up_commit, up_abort};

oc_status oc_atomic_open_url(oc_atomic_file *af, const char *path, bool no_overwrite,
                             oc_atomic_use use, const struct oc_http_options *http, oc_error *err) {
    if (!http || !path || strncasecmp(path, "s3://", 5) != 0)
        return oc_atomic_open_for(af, path, no_overwrite, use, err);
    memset(af, 0, sizeof *af);
    af->fd = -1;
    af->no_overwrite = no_overwrite;
    af->through = 1; /* no temporary file, no writeback */
    af->path = strdup(path);
    if (!af->path) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc__s3_upload *u = NULL;
    oc_status st = oc__s3_upload_open(path, http, no_overwrite, &u, err);
    if (st != OC_OK) {
        oc_atomic_abort(af);
        return oc_error_file(err, path, st);
    }
    af->remote = &s3_upload_sink;
    af->remote_ctx = u;
    return OC_OK;
}
