/*
 * internal/atomic_url.h - an output that may be an object in a store: oc_atomic_open_url
 * (the http layer, s3_output.c), for the writers of both libraries that take an s3://
 * path (spec/remote.md R-21). Apart from onnxcore_private.h, which the layers below http
 * include.
 */
#ifndef ONNXCORE_ATOMIC_URL_H
#define ONNXCORE_ATOMIC_URL_H

#include "onnxcore_private.h"

struct oc_http_options;

/* oc_atomic_open_for, and for an s3://BUCKET/KEY path with http given (its s3 settings
 * and credentials), a multipart upload to the store instead of a temporary file
 * (spec/remote.md "S3, write"): the object appears at commit, whole, and abort (or any
 * failure, or http's cancel) aborts the upload. Without overwrite the key is looked at
 * (HEAD) at open and again before the upload completes. Any other URL is refused. */
OC_PRIVATE oc_status oc_atomic_open_url(oc_atomic_file *af, const char *path, bool no_overwrite,
                                        oc_atomic_use use, const struct oc_http_options *http,
                                        oc_error *err);
#endif
