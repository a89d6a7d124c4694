/*
 * onnxz/open.h - one way to tell what a file is and to load the model in it, whatever
 * its form: a .onnx file (with its external data beside it, one data file or N), an
 * .onnxz archive, or either of them encrypted (ONNXZEC1, ONNXCRY1) given a key.
 *
 *   oz_open_options o = OZ_OPEN_OPTIONS_INIT;
 *   oc_model *m = NULL;
 *   oc_error err;
 *   if (oz_open("model.onnxz", &o, &m, NULL, &err) != OC_OK) ... err.message ...
 *
 * The form is told by the file's first bytes (oz_detect), never by its name.
 */
#ifndef ONNXZ_OPEN_H
#define ONNXZ_OPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <onnxcore/crypto.h>
#include <onnxcore/model.h>
#include <onnxz/archive.h>
#include <onnxz/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What the first bytes of a file (or buffer) say it is. */
typedef enum oz_kind {
    OZ_KIND_EMPTY = 0,  /* no bytes at all: no model, though it would decode as one */
    OZ_KIND_MODEL,      /* none of the below: read as a serialized ModelProto (only the
                         * decoder can tell a model from other bytes) */
    OZ_KIND_ZIP,        /* a ZIP local header or end record signature: an .onnxz archive */
    OZ_KIND_ZIP_SHORT,  /* 1 to 3 bytes that begin a ZIP signature: an archive cut short
                         * (no model is that short; the ZIP reader reports `truncated`) */
    OZ_KIND_ONNXZEC1,   /* the ONNXZEC1 magic (spec/encryption.md) */
    OZ_KIND_ONNXCRY1,   /* the ONNXCRY1 magic */
    OZ_KIND_CRYPT_SHORT /* 1 to 7 bytes that begin an encryption magic: an encrypted file
                         * cut short (C-1) */
} oz_kind;

/* The bytes oz_detect needs to tell every kind apart. */
#define OZ_DETECT_HEAD 8

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* The kind of data of file_size bytes whose first n bytes are at head (n may be less than
 * file_size; with n < OZ_DETECT_HEAD and n < file_size the answer is what those n bytes
 * allow). A cut-short kind is only given when the data itself (file_size) is that short. */
OZ_API oz_kind oz_detect(const void *head, size_t n, uint64_t file_size);
#endif

/* oz_detect on the first bytes of the regular file at path (read without following a
 * FIFO's writer: the file is opened non-blocking). Errors: cannot open, stat or read it,
 * or it is not a regular file (OC_ERR_IO, OC_ERR_NOT_FOUND); *kind is OZ_KIND_MODEL then. */
OZ_API oc_status oz_detect_file(const char *path, oz_kind *kind, oc_error *err)
    OZ_DEPRECATED("use oz_detect_path");
/* As oz_detect_file, and for an http:// or https:// URL, oz_detect on the object's first
 * bytes read with these settings (onnxcore/http.h; NULL: the defaults, which is what
 * oz_detect_file uses). */
OZ_API oc_status oz_detect_path(const char *path, const struct oc_http_options *http, oz_kind *kind,
                                oc_error *err);

/* "empty", "model", "zip", "zip cut short", "ONNXZEC1", "ONNXCRY1", "encrypted cut short". */
OZ_API const char *oz_kind_name(oz_kind kind);

/* true for the kinds oz_open reads as an .onnxz archive: OZ_KIND_ZIP and OZ_KIND_ZIP_SHORT
 * (whose reader then reports `truncated`). */
OZ_API bool oz_kind_is_archive(oz_kind kind);

/* true for OZ_KIND_ONNXZEC1 and OZ_KIND_ONNXCRY1 (with the format in *format, may be NULL). */
OZ_API bool oz_kind_is_encrypted(oz_kind kind, oc_crypt_format *format);

/* Options grow at their end: fill them with OZ_OPEN_OPTIONS_INIT or oz_open_options_init
 * (onnxcore/options.h, "Extending"). */
typedef struct oz_open_options {
    size_t size; /* sizeof(oz_open_options), set by the initialisers */
    /* How the model decodes: no_copy, skip_external_data, data_dir, verify_checksums,
     * num_threads, storage_pool, the caps. max_memory also bounds an archive's directory
     * (as oz_archive_load). */
    oc_parse_options parse;
    /* The passphrase of an encrypted file (key_len bytes); NULL when there is none, and an
     * encrypted input then fails with OC_ERR_INVALID_ARG before anything is decrypted. */
    const void *key;
    size_t key_len;
    const oc_crypt_options *crypt; /* may be NULL: the defaults */
    /* A trusted public key (a PEM file): oz_verify_path verifies the model's signature
     * with it first (onnxz/sign.h, spec/signing.md G-31); oz_open and oz_open_deferred
     * verify it whole (every part hashed) before loading a local file, and refuse a URL
     * (read one with oz_reader_open and oz_reader_options.trust: G-55). NULL: no signature
     * is looked at. */
    const char *trust;
} oz_open_options;

#define OZ_OPEN_OPTIONS_INIT                                                          \
    {                                                                                 \
        .size = sizeof(oz_open_options), .parse = OC_PARSE_OPTIONS_INIT, .key = NULL, \
        .key_len = 0, .crypt = NULL                                                   \
    }

/* Fills *opts with the defaults (as OZ_OPEN_OPTIONS_INIT). */
OZ_API void oz_open_options_init(oz_open_options *opts);

/* What oz_open found: an output that grows at its end as the options do. Initialise it
 * with OZ_OPEN_INFO_INIT or oz_open_info_init; oz_open writes only the fields that lie
 * within its `size` (a caller compiled against an older, shorter struct gets what it
 * knows, and nothing past its end is written). */
typedef struct oz_open_info {
    size_t size;        /* sizeof(oz_open_info), set by the initialisers */
    oz_kind kind;       /* the file's kind (oz_detect_file) */
    bool is_archive;    /* true when the model came from an .onnxz archive, encrypted or not */
    uint64_t file_size; /* bytes of the file, or of the object at a URL (0: not known) */
    /* After OC_ERR_INVALID_ARG for an option given where it does not apply: the name of
     * the oz_open_options field at fault ("data_dir"), the error's message beginning with
     * it ("data_dir applies to .onnx files, not archives"), so that a client that spells
     * its options otherwise prints its own name before the rest; NULL for any other
     * outcome. */
    const char *option;
} oz_open_info;

#define OZ_OPEN_INFO_INIT \
    { .size = sizeof(oz_open_info), .kind = OZ_KIND_MODEL, .is_archive = false, .option = NULL }

/* Fills *info with the initial values (as OZ_OPEN_INFO_INIT). */
OZ_API void oz_open_info_init(oz_open_info *info);

/* Loads the model of the file at path, in whichever form it is (oz_detect_file):
 *   a model     as oc_model_load_file: external data from opts->parse.data_dir, or the
 *               directory of path, unless skip_external_data;
 *   an archive  as oz_archive_load (a ZIP cut short: that reader's `truncated`);
 *   encrypted   decrypted once with opts->key, then either of the above (oz_encrypted_load);
 * an empty file fails with OC_ERR_MALFORMED ("PATH: empty file, not an ONNX model"), an
 * encrypted file cut inside its magic with OC_ERR_TRUNCATED (C-1). A file that cannot be
 * read is reported by the model loader, in its words. opts and info may be NULL; info is
 * filled as far as the file was recognised, also on failure (an info whose size was never
 * set: OC_ERR_INVALID_ARG, and it is left as it was). *out is NULL after a failure. */
OZ_API oc_status oz_open(const char *path, const oz_open_options *opts, oc_model **out,
                         oz_open_info *info, oc_error *err);

/* Where the weights of a model opened with oz_open_deferred stay. */
typedef struct oz_weights oz_weights;

/* As oz_open, but the weights stay where they are: *out holds the model with every
 * external tensor still an EXTERNAL reference, and *weights where they lie, open: an
 * .onnxz's entries (at a path or a URL, oz_archive_fetch), or a model's data files beside
 * it (at a path or a URL, checked as a load checks them: oc_external_data_open). A save
 * with oc_serialize_options.fetch filled by oz_weights_fetch(*weights) then streams each
 * tensor from there as it is written, so that converting a huge or remote model holds a
 * few MiB rather than its weights. An encrypted file loads as oz_open loads it (its
 * weights in memory; the fetch has nothing to do). What opts points to (data_dir,
 * location, http) must outlive *weights. Close *weights (oz_weights_close) after the last
 * save; it is NULL after a failure. */
OZ_API oc_status oz_open_deferred(const char *path, const oz_open_options *opts, oc_model **out,
                                  oz_weights **weights, oz_open_info *info, oc_error *err);
/* Fills *fetch with the fetch of w's tensors; valid until oz_weights_close(w). */
OZ_API void oz_weights_fetch(oz_weights *w, oc_tensor_fetch *fetch);
/* Closes what w holds; NULL is accepted. */
OZ_API void oz_weights_close(oz_weights *w);

/* ---- one tensor of a model in any form ------------------------------------------- */

/* The first tensor named `name` (len bytes; a NUL is a byte like any other) of model, at
 * any depth (initializers, attributes, subgraphs, functions; oc_msg_visit_tensors' order),
 * or NULL when there is none (or no memory): oc_tensor_index_find on an index built for
 * this one lookup (tensor.h), which a caller that looks up more than one name keeps
 * instead. Borrowed from model. */
OZ_API onnx_TensorProto *oz_model_find_tensor(oc_model *model, const char *name, size_t len);

/* Where the tensors a model keeps as EXTERNAL references lie: whichever it was opened
 * with. All zero: nowhere (the model holds every tensor's bytes). */
typedef struct oz_tensor_source {
    const oz_archive *archive; /* an .onnxz archive's entries (a path or a URL) */
    oz_weights *weights;       /* oz_open_deferred's (one read at a time) */
    /* Else a .onnx's data files, in this directory (or beside a URL), resolved and checked
     * as a load does (E-10..E-18) with parse's caps (NULL: the defaults). */
    const char *data_dir;
    const oc_parse_options *parse;
} oz_tensor_source;

/* The bytes of tensor t of a model opened in any form (oz_open, oz_open_deferred,
 * oz_archive_load_model), into *out (released first):
 *   held by the model (raw_data): *out is a copy of its span (a mapping's: shared, no copy
 *     of the bytes; a span the model borrows stays valid while the model lives);
 *   an EXTERNAL reference: from src: an archive's entry (a span of its mapping, or read
 *     whole from a URL), the weights' fetch (read whole), or a data file under data_dir
 *     (t itself is then resolved in place, as a load resolves it: not concurrently);
 *   values in typed fields (oc_tensor_is_typed: float_data ..., a 0-d tensor's one value
 *     too): the bytes raw_data would hold for them, in a new buffer
 *     (oc_tensor_typed_bytes); STRING values have none: OC_ERR_UNSUPPORTED.
 * First, before any byte is read, the tensor must hold the bytes its dims and data type
 * make (oc_tensor_check_size_fetched, W-40, W-42: a reference's size asked of src, an
 * archive's entry or the weights' fetch), as `onnxz verify` checks it. Fails with
 * OC_ERR_NOT_FOUND for a reference that src cannot resolve. src may be NULL (all
 * zero). */
OZ_API oc_status oz_tensor_read(onnx_TensorProto *t, const oz_tensor_source *src, oc_bytes *out,
                                oc_error *err);

#ifdef __cplusplus
}
#endif

#endif
