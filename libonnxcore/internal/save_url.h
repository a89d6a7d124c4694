/*
 * internal/save_url.h - oc_msg_save_url (model.c): a save to a path that may be an s3://
 * object, for libonnxz's oz_save (spec/remote.md R-21).
 */
#ifndef ONNXCORE_SAVE_URL_H
#define ONNXCORE_SAVE_URL_H

#include "onnxcore_private.h"

struct oc_http_options;
/* oc_msg_save_file (onnxcore/model.h) with the output opened by oc_atomic_open_url: with
 * http, an s3:// path is written as a multipart upload; with opts->external_data, the
 * data objects beside it too (oc__save_external_url). */
struct oc_msgdesc;
struct oc_serialize_options;
OC_PRIVATE oc_status oc_msg_save_url(const struct oc_msgdesc *desc, const void *msg,
                                     const char *path, const struct oc_serialize_options *opts,
                                     const struct oc_http_options *http, oc_error *err);
#endif
