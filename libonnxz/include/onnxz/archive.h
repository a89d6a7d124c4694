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

#include "export.h"

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <onnxcore/external.h>
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
#define OZ_VERSION_ENTRY   "__ONNXZ_VERSION"

/* Extendable as onnxcore/options.h says ("Extending"): initialise with
 * OZ_ARCHIVE_OPTIONS_INIT or oz_archive_options_init. */
typedef struct oz_archive_options {
    size_t size; /* sizeof(oz_archive_options) */
    /* serialize.buffer.raw_data_threshold (default 1024): tensors whose raw_data has at
     * least this many bytes (and at least one) become entries; smaller ones stay inside
     * the model (spec/onnxz.md A-11).
     * serialize.buffer.alignment: 0 for 64, else a power of two from 64 to 32768.
     * serialize.no_overwrite: refuse an existing file (default 0: replace it). */
    oc_serialize_options serialize;
    int deflate_model; /* store __MODEL_PROTO deflated (the tensors stay STORED) */
    /* oz_archive_replace_model: only append, never overwrite or shorten the file, so
     * that processes which have the archive open keep valid bytes (such an edit does not
     * wait for them to close it, A-58); the old model stays behind as unused bytes. */
    int append_only;
    /* The most memory the save may hold (spec/security.md M-5): its tables (an entry
     * record, name-table slots, the tensor's reference), estimated from the entries it will
     * make before anything is written, plus what the model's arena holds (oz_archive_save);
     * over it, OC_ERR_LIMIT and no file. 0: no cap. */
    uint64_t max_memory;
} oz_archive_options;

#define OZ_ARCHIVE_OPTIONS_INIT \
    { .size = sizeof(oz_archive_options), .serialize = OC_SERIALIZE_OPTIONS_INIT }
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Sets *opts to the defaults (as OZ_ARCHIVE_OPTIONS_INIT), size included. */
OZ_API void oz_archive_options_init(oz_archive_options *opts);

/* Writes msg (any message type; normally a ModelProto) as an archive at path, replacing
 * it atomically. Tensor bytes go from their spans to the file as they are met: nothing of
 * the weights is copied into memory, and the model is streamed into its entry as it is
 * encoded (with deflate_model it is gathered in memory first). The model is not modified. */
OZ_API oc_status oz_archive_save_message(const oc_msgdesc *desc, const void *msg, const char *path,
                                         const oz_archive_options *opts, oc_error *err);
OZ_API oc_status oz_archive_save(const oc_model *model, const char *path,
                                 const oz_archive_options *opts, oc_error *err);
#endif

/* An open archive: its ZIP reader and the location of its model. */
typedef struct oz_archive oz_archive;

/* Opens and validates an archive (every ZIP check of oz_zip_reader_open, plus: a
 * `__MODEL_PROTO` entry exists, and no __ONNXZ_VERSION entry names a later format:
 * OC_ERR_UNSUPPORTED). zip_opts may be NULL (map the file). */
OZ_API oc_status oz_archive_open(const char *path, const oz_zip_reader_options *zip_opts,
                                 oz_archive **out, oc_error *err);
OZ_API void oz_archive_close(oz_archive *ar);
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* The ZIP reader under the archive (valid until oz_archive_close). */
OZ_API const oz_zip_reader *oz_archive_zip(const oz_archive *ar);
#endif

/* Decodes the archive's model. Unless opts->skip_external_data, every tensor that points at
 * an entry gets its bytes: shared in place with no_copy (STORED entries of a mapped
 * archive), copied otherwise; each entry must exist and hold exactly the tensor's length
 * (spec A-21: a missing entry or __MODEL_PROTO: OC_ERR_NOT_FOUND; a directory entry, a
 * length or an offset that does not fit the entry: OC_ERR_INCONSISTENT; an offset or length
 * that is no number: OC_ERR_MALFORMED, as E-12). The model stays valid after
 * oz_archive_close. */
OZ_API oc_status oz_archive_load_model(const oz_archive *ar, const oc_parse_options *opts,
                                       oc_model **out, oc_error *err);

/* Opens, loads and closes: the model alone. */
OZ_API oc_status oz_archive_load(const char *path, const oc_parse_options *opts, oc_model **out,
                                 oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* A fetch (onnxcore/external.h) that streams the bytes of the entry an EXTERNAL tensor of
 * ar's model names (checked as oz_archive_load_model checks it, A-21), through
 * oz_zip_reader_read_to: set as oc_serialize_options.fetch, a save of the model loaded
 * with skip_external_data writes every tensor from the archive, one at a time, holding a
 * few MiB (a remote archive: one request per tensor). Valid while ar is open. */
OZ_API void oz_archive_fetch(const oz_archive *ar, oc_tensor_fetch *out);
#endif

/* Random access: the bytes of the tensor named `tensor_name` (the TensorProto's name, not
 * the entry's), found through the model without reading any other tensor. The span shares
 * the mapping (or is an owned copy for pread and deflated entries); a tensor the model
 * keeps in typed fields gives the bytes raw_data would hold (oc_tensor_typed_bytes: W-40
 * and W-42 checked; STRING values have none). The first call decodes
 * __MODEL_PROTO (without weights) and indexes its tensors by name, once for the archive:
 * later calls only look the name up and read the one entry. Safe to call from several
 * threads on one archive. Several tensors of one name: the first in the model's order. */
OZ_API oc_status oz_archive_read_tensor(const oz_archive *ar, const char *tensor_name,
                                        oc_bytes *out, oc_error *err)
    OZ_DEPRECATED("use oz_archive_read_tensor_n");
/* As oz_archive_read_tensor, with a name of name_len bytes that may hold NUL bytes (a
 * TensorProto's name is a byte string: pass its data and size). */
OZ_API oc_status oz_archive_read_tensor_n(const oz_archive *ar, const char *tensor_name,
                                          size_t name_len, oc_bytes *out, oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* The layout rules of spec/onnxz.md that a reader does not enforce (it takes any ZIP,
 * A-23), for verifiers: __MODEL_PROTO is the last entry in the central directory and in
 * the file; every entry a tensor of model points at is STORED; every STORED
 * entry's data starts on a 64-byte boundary. model: ar's model with its tensors'
 * references to entries (oz_archive_load_model with skip_external_data); it is not
 * modified. OC_OK, or OC_ERR_MALFORMED for the first breach (entries in directory order)
 * with a message naming the entry, a tensor and the rule; OC_ERR_NOMEM. */
OZ_API oc_status oz_archive_check_layout(const oz_archive *ar, const onnx_ModelProto *model,
                                         oc_error *err);

/* The entry of zip that tensor t's bytes live in: true and *index when t is external
 * (data_location EXTERNAL) and its "location" is exactly an entry's name; false when it is
 * not external, has no location, or names no entry (which loading refuses, A-21). For
 * tools that list or check entries against the model's tensors. */
OZ_API bool oz_archive_tensor_entry(const oz_zip_reader *zip, const onnx_TensorProto *t,
                                    uint64_t *index);
#endif

/* ---- editing in place (spec/onnxz.md A-50..A-59) ---- */

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Replaces the archive's model by msg (a message of type desc, normally a ModelProto),
 * rewriting only __MODEL_PROTO and the central directory after the tensor entries, which
 * neither move nor change: no copy of the weights is made, however large they are.
 * oz_archive_edit_begin + oz_archive_edit_commit + oz_archive_edit_end; to change the
 * model the archive holds (read, modify, write), use those, so that the model is read
 * under the edit's locks and no concurrent edit is lost.
 *
 * msg is written as it is: its EXTERNAL tensors must name entries of the archive
 * with their exact length (as a model loaded from it with skip_external_data does), else
 * OC_ERR_INCONSISTENT; tensors that hold their bytes stay inside the model (they are not
 * made entries: load with skip_external_data, or the weights end up inside the model).
 * Entries no tensor names any more stay in the archive. opts may be NULL:
 * deflate_model as for saving; serialize.buffer.alignment 0 keeps the archive's own
 * alignment; append_only (see oz_archive_options); nothing else applies.
 *
 * Crash safety (A-54..A-56): at every moment the file holds the old archive or the new
 * one, except while a new tail is being appended: a crash then leaves the old archive
 * followed by a torn tail, which every ZIP reader (this one included) refuses until the
 * next edit rolls it back, guided by a journal `<path>-journal` that readers never look
 * at. Then the new tail is written again right after the last tensor entry and the file
 * cut there, so the result is compact (unless append_only). Every refusal (model not the
 * last entry in the file: OC_ERR_UNSUPPORTED; a tensor naming no entry:
 * OC_ERR_INCONSISTENT; busy, or something other than a journal at the journal's name:
 * OC_ERR_IO; the archive's own faults as oz_archive_open reports them) leaves the file
 * byte-identical. Once the new model is in place the call succeeds, even if compacting
 * fails (oz_archive_get_space shows the unused bytes left).
 *
 * Locks: one edit per archive at a time; unless append_only, no reader may have
 * the archive open (in this process or another: an oz_archive, a zip reader, a model
 * loaded with no_copy that still shares its mapping), since compaction overwrites the old
 * model's bytes and shortens the file. Nobody waits: a conflict is OC_ERR_IO, "busy".
 * Needs write access to the file and its directory (for the journal). Any number of
 * archives may be edited from different threads. */
OZ_API oc_status oz_archive_replace_model(const char *path, const oc_msgdesc *desc, const void *msg,
                                          const oz_archive_options *opts, oc_error *err);
#endif

/* An edit in progress: the archive open for writing under the locks of A-58. */
typedef struct oz_archive_edit oz_archive_edit;

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Begins an edit of the archive at path (opts as for oz_archive_replace_model; NULL for
 * defaults): opens the file for writing, takes the locks (busy: OC_ERR_IO), rolls back an
 * edit that was interrupted while it appended, and opens the archive, which must
 * pass every check of oz_archive_open. *out: free it with oz_archive_edit_end. */
OZ_API oc_status oz_archive_edit_begin(const char *path, const oz_archive_options *opts,
                                       oz_archive_edit **out, oc_error *err);
/* When oz_archive_edit_begin rolled back an interrupted edit: true, and the bytes it
 * cut from the end of the file were [*from, *to) (either pointer may be NULL). Else false.
 * Callers that talk to a user should say so: those bytes are gone. */
OZ_API bool oz_archive_edit_rolled_back(const oz_archive_edit *ed, uint64_t *from, uint64_t *to);
/* The archive being edited, as it is before the commit (read with pread, so loaded
 * models hold copies); NULL once oz_archive_edit_commit has been called. Owned by ed. */
OZ_API const oz_archive *oz_archive_edit_archive(const oz_archive_edit *ed);
/* Replaces the model by msg, as oz_archive_replace_model says. At most once per edit. */
OZ_API oc_status oz_archive_edit_commit(oz_archive_edit *ed, const oc_msgdesc *desc,
                                        const void *msg, oc_error *err);
/* Ends the edit (committed or not) and releases the locks. NULL is accepted. */
OZ_API void oz_archive_edit_end(oz_archive_edit *ed);
#endif

/* Where an archive's bytes go. */
typedef struct oz_archive_space {
    uint64_t file_size;    /* bytes in the file */
    uint64_t archive_size; /* equal to file_size: readers take the whole file as the archive,
                            * whatever journal lies beside it */
    uint64_t unused_bytes; /* bytes of the archive before its central directory that no
                            * entry holds: old models left by in-place edits, data
                            * descriptors of other writers; UINT64_MAX when not known: an
                            * archive read from a URL, some of whose local headers were
                            * not read) */
} oz_archive_space;

/* Fills *out for an open archive (zeros for NULL). */
OZ_API void oz_archive_get_space(const oz_archive *ar, oz_archive_space *out);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* True when the file at path starts like a ZIP archive (local header or end record
 * signature), as a quick test of the form of an input. A file of 1 to 3 bytes that is the
 * start of one of those signatures counts too: it is an archive cut short (which
 * oz_archive_open reports as `truncated`), not a model, since no model is that short. */
OZ_API bool oz_is_archive_file(const char *path);
#endif

#ifdef __cplusplus
}
#endif

#endif
