/*
 * internal/archive.h - what the in-place editor (edit.c) needs from archive.c.
 */
#ifndef ONNXZ_INTERNAL_ARCHIVE_H
#define ONNXZ_INTERNAL_ARCHIVE_H

#include <stdbool.h>
#include <stdint.h>

#include <onnxcore/crypto.h>
#include <onnxcore/http.h>

#include "onnxz/archive.h"

/* Makes an archive of an open ZIP reader (taking it over, also on failure): finds
 * __MODEL_PROTO and refuses later format versions, as oz_archive_open does.
 * path is kept for messages. */
oc_status oz__archive_wrap(oz_zip_reader *zip, const char *path, oz_archive **out, oc_error *err);

/* Reader options for the one-call loads: the parse options' memory budget bounds the
 * reader too (M-2), and use_pread reads the archive with pread instead of mapping it. */
oz_zip_reader_options oz__zip_options_for(const oc_parse_options *opts);

/* oz_archive_load_model, with check (NULL: none) given __MODEL_PROTO's bytes as they were
 * read (uncompressed), before anything decodes them: what a signed archive's model is
 * checked by (spec/signing.md G-50), the very bytes then decoded. A failure of check ends
 * the load with its status. */
typedef oc_status (*oz__model_check_fn)(void *ctx, const void *data, uint64_t size, oc_error *err);
oc_status oz__archive_load_model_checked(const oz_archive *ar, const oc_parse_options *opts,
                                         oz__model_check_fn check, void *ctx, oc_model **out,
                                         oc_error *err);

/* a URL is read, never written: "URL is a URL: ...", naming the URL as its file
 * (shown without user:password@); OC_OK when path is no URL. Every output's first check
 * (oz_save_check, oz_stub_file, oz_unpack_file). */
oc_status oz__refuse_url_output(const char *path, oc_error *err);

/* oz_archive_save, with http: an s3:// path written as a multipart upload
 * (oc_atomic_open_url). */
oc_status oz__archive_save_url(const oc_model *model, const char *path,
                               const oz_archive_options *opts, const oc_http_options *http,
                               oc_error *err);

/* The path the archive was opened from (a file or a URL). */
const char *oz__archive_path(const oz_archive *ar);

/* The index of __MODEL_PROTO in the archive's central directory. */
uint64_t oz__archive_model_index(const oz_archive *ar);
/* The bytes of tensor t of ar's model: its raw_data when inline, else its entry's (a
 * span of the mapping, or read from a URL), as oz_archive_read_tensor gives them. */
oc_status oz__archive_tensor_bytes(const oz_archive *ar, const onnx_TensorProto *t, oc_bytes *out,
                                   oc_error *err);

/* oz_encrypted_load's work, for checked arguments. With keep, an archive inside stays
 * open, decrypted in memory, in *keep (NULL for a .onnx inside), its model decoded with
 * popts (skip_external_data: its tensors as references to its entries). */
oc_status oz__encrypted_open(const char *path, const void *key, size_t key_len,
                             const oc_crypt_options *copts, const oc_parse_options *popts,
                             oz_archive **keep, oc_model **out, bool *is_archive, oc_error *err);

#endif
