/*
 * onnxz/archive.h - ONNX models as .onnxz archives (spec/onnxz.md).
 *
 * An .onnxz file is a ZIP (onnxz/zip.h) used as a key-value store: each large tensor is a
 * STORED entry whose data starts on a 64-byte boundary (or a larger power of two), and
 * the serialized ModelProto is the last entry, `__MODEL_PROTO`. Tensors point at their
 * entries with the standard external-data fields (data_location = EXTERNAL, location =
 * entry name, length), so an unzipped archive is an ordinary external-data model.
 *
 * Loading with no_copy maps the archive once and every tensor borrows its bytes in place
 * through a shared owner token: the mapping stays alive until the last tensor goes.
 * Threads: an oz_archive is immutable once open; lookups and reads may run concurrently.
 */
#ifndef ONNXZ_ARCHIVE_H
#define ONNXZ_ARCHIVE_H

#include <stdint.h>

#include <onnxcore/model.h>

#include "zip.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The entry that holds the serialized ModelProto; the last entry of the archive. */
#define OZ_MODEL_ENTRY "__MODEL_PROTO"
/* The archive format version this library reads and writes. Later versions add an
 * entry __ONNXZ_VERSION holding their number in decimal; version 1 archives have none. */
#define OZ_ARCHIVE_VERSION 1u
#define OZ_VERSION_ENTRY "__ONNXZ_VERSION"

typedef struct oz_archive_options {
    /* serialize.buffer.raw_data_threshold (default 64): tensors whose raw_data has at least
     * this many bytes become entries; smaller ones stay inside the model.
     * serialize.buffer.alignment: 0 for 64, else a power of two from 64 to 32768.
     * serialize.overwrite: replace an existing file (default 1). */
    oc_serialize_options serialize;
    int deflate_model;  /* store __MODEL_PROTO deflated (the tensors stay STORED) */
} oz_archive_options;

#define OZ_ARCHIVE_OPTIONS_INIT { OC_SERIALIZE_OPTIONS_INIT, 0 }

/* Writes msg (any message type; normally a ModelProto) as an archive at path, replacing
 * it atomically. Tensor bytes go from their spans to the file as they are met: nothing of
 * the weights is copied into memory (the serialized model without its weights is). The
 * model is not modified. */
oc_status oz_archive_save_message(const oc_msgdesc *desc, const void *msg, const char *path,
                                  const oz_archive_options *opts, oc_error *err);
oc_status oz_archive_save(const oc_model *model, const char *path,
                          const oz_archive_options *opts, oc_error *err);

/* An open archive: its ZIP reader and the location of its model. */
typedef struct oz_archive oz_archive;

/* Opens and validates an archive (every ZIP check of oz_zip_reader_open, plus: a
 * `__MODEL_PROTO` entry exists, and no __ONNXZ_VERSION entry names a later format:
 * OC_ERR_UNSUPPORTED). zip_opts may be NULL (map the file). */
oc_status oz_archive_open(const char *path, const oz_zip_reader_options *zip_opts,
                          oz_archive **out, oc_error *err);
void oz_archive_close(oz_archive *ar);
/* The ZIP reader under the archive (valid until oz_archive_close). */
const oz_zip_reader *oz_archive_zip(const oz_archive *ar);

/* Decodes the archive's model. Unless opts->skip_external_data, every tensor that points at
 * an entry gets its bytes: shared in place with no_copy (STORED entries of a mapped
 * archive), copied otherwise; each entry must exist and hold exactly the tensor's length.
 * The model stays valid after oz_archive_close. */
oc_status oz_archive_load_model(const oz_archive *ar, const oc_parse_options *opts,
                                oc_model **out, oc_error *err);

/* Opens, loads and closes: the model alone. */
oc_status oz_archive_load(const char *path, const oc_parse_options *opts, oc_model **out,
                          oc_error *err);

/* Random access: the bytes of the tensor named `tensor_name` (the TensorProto's name, not
 * the entry's), found through the model without reading any other tensor. The span shares
 * the mapping (or is an owned copy for pread and deflated entries). */
oc_status oz_archive_read_tensor(const oz_archive *ar, const char *tensor_name, oc_bytes *out,
                                 oc_error *err);

/* True when the file at path starts like a ZIP archive (local header or end record
 * signature), as a quick test of the form of an input. */
int oz_is_archive_file(const char *path);

#ifdef __cplusplus
}
#endif

#endif
