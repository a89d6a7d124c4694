/*
 * internal/crypt_url.h - oc_crypt_save_model_url (model_crypt.c): an encrypted save to a
 * path that may be an s3:// object, for libonnxz's oz_save (spec/remote.md R-21).
 */
#ifndef ONNXCORE_CRYPT_URL_H
#define ONNXCORE_CRYPT_URL_H

#include "onnxcore_private.h"

#include "onnxcore/crypto_model.h"

struct oc_http_options;

/* oc_crypt_save_model_file (onnxcore/crypto_model.h) with the output opened by
 * oc_atomic_open_url: with http, an s3:// path is written as a multipart upload. */
OC_PRIVATE oc_status oc_crypt_save_model_url(const oc_model *model, const char *path,
                                             const void *key, size_t key_len,
                                             const oc_crypt_options *copts,
                                             const oc_serialize_options *sopts,
                                             const struct oc_http_options *http, oc_error *err);

#endif
