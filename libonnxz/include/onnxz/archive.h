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
    /* serialize.buffer.raw_data_threshold (default 1024): tensors whose raw_data has at
     * least this many bytes (and at least one) become entries; smaller ones stay inside
     * the model (spec/onnxz.md A-11).
     * serialize.buffer.alignment: 0 for 64, else a power of two from 64 to 32768.
     * serialize.overwrite: replace an existing file (default 1). */
    oc_serialize_options serialize;
    int deflate_model;  /* store __MODEL_PROTO deflated (the tensors stay STORED) */
    /* oz_archive_replace_model: only append, never overwrite or shorten the file, so
     * that processes which have the archive mapped keep valid bytes; the old model stays
     * behind as unused bytes. */
    int append_only;
} oz_archive_options;

#define OZ_ARCHIVE_OPTIONS_INIT { OC_SERIALIZE_OPTIONS_INIT, 0, 0 }

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
 * archive), copied otherwise; each entry must exist and hold exactly the tensor's length
 * (spec A-21: a missing entry or __MODEL_PROTO: OC_ERR_NOT_FOUND; a directory entry, a
 * length or an offset that does not fit the entry: OC_ERR_INCONSISTENT; an offset or length
 * that is no number: OC_ERR_MALFORMED, as E-12). The model stays valid after
 * oz_archive_close. */
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

/* ---- editing in place (spec/onnxz.md A-50..A-59) ---- */

/* Replaces the archive's model by msg (a message of type desc, normally a ModelProto),
 * rewriting only __MODEL_PROTO and the central directory after the tensor entries, which
 * neither move nor change: no copy of the weights is made, however large they are.
 *
 * msg is written as it is: its EXTERNAL tensors must name entries of the archive
 * with their exact length (as a model loaded from it with skip_external_data does), else
 * OC_ERR_INCONSISTENT; tensors that hold their bytes stay inside the model (they are not
 * made entries: load with skip_external_data, or the weights end up inside the model).
 * Entries no tensor names any more stay in the archive. opts may be NULL:
 * deflate_model as for saving; serialize.buffer.alignment 0 keeps the archive's own
 * alignment; append_only (see oz_archive_options); nothing else applies.
 *
 * Crash safety (A-54..A-56): at every moment the file holds the old model or the new one.
 * The new tail is appended first; meanwhile a journal `<path>-journal` marks the old end,
 * which oz_archive_open honours, and the next edit rolls an interrupted edit back. Then the
 * new tail is written again right after the last tensor entry and the file cut there, so
 * the result is compact (unless append_only). Every refusal (model not the last entry in
 * the file: OC_ERR_UNSUPPORTED; a tensor naming no entry: OC_ERR_INCONSISTENT; another edit
 * running: OC_ERR_IO; the archive's own faults as oz_archive_open reports them) leaves the
 * file byte-identical. Once the new model is in place the call succeeds, even if
 * compacting fails (oz_archive_get_space shows the unused bytes left).
 *
 * Not for archives that are open elsewhere: compaction overwrites the old model's
 * bytes and shortens the file, so mappings of those bytes would change or fault; use
 * append_only, or save a new archive and rename it. The same holds for msg itself when it
 * was loaded from this archive with no_copy: it is encoded before anything is written, but
 * free it afterwards rather than read its inline tensors. Needs write access to the file
 * and its directory (for the journal). One edit per archive at a time (a flock); any
 * number of archives may be edited from different threads. */
oc_status oz_archive_replace_model(const char *path, const oc_msgdesc *desc, const void *msg,
                                   const oz_archive_options *opts, oc_error *err);

/* Where an archive's bytes go. */
typedef struct oz_archive_space {
    uint64_t file_size;    /* bytes in the file */
    uint64_t archive_size; /* the archive is the file's first archive_size bytes: less than
                            * file_size only while an interrupted edit's journal applies
                            * (A-56) */
    uint64_t unused_bytes; /* bytes of the archive before its central directory that no
                            * entry holds: old models left by in-place edits, data
                            * descriptors of other writers */
} oz_archive_space;

/* Fills *out for an open archive (zeros for NULL). */
void oz_archive_get_space(const oz_archive *ar, oz_archive_space *out);

/* True when the file at path starts like a ZIP archive (local header or end record
 * signature), as a quick test of the form of an input. A file of 1 to 3 bytes that is the
 * start of one of those signatures counts too: it is an archive cut short (which
 * oz_archive_open reports as `truncated`), not a model, since no model is that short. */
int oz_is_archive_file(const char *path);

#ifdef __cplusplus
}
#endif

#endif
