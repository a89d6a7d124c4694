/*
 * onnxz/listing.h - an archive's entries in central-directory order, and for each the
 * tensors whose `location` names it, with the totals `onnxz ls` and `onnxz info` show
 * and File.info() in Python returns. Callers format them.
 *
 * The structs may grow at their end; they are allocated by the library
 * (callers never declare one), so a caller built against an older header keeps working.
 */
#ifndef ONNXZ_LISTING_H
#define ONNXZ_LISTING_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <onnxcore/model.h>
#include <onnxcore/options.h>

#include "archive.h"
#include "zip.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Offsets are shown with the largest power of two dividing them, up to this. */
#define OZ_ALIGNMENT_CAP 4096u

typedef struct oz_listed_entry {
    oz_zip_entry zip;    /* the central directory's view; strings belong to the reader */
    bool is_model;       /* this is __MODEL_PROTO */
    uint64_t ntensors;   /* tensors whose location names this entry */
    uint64_t first_name; /* their names: listing->names[first_name .. first_name + ntensors) */
} oz_listed_entry;

typedef struct oz_archive_listing {
    oz_listed_entry *entries; /* central-directory order */
    uint64_t count;
    oc_str *names; /* tensor names grouped by entry, in the model's encoding order */
    uint64_t model_index;
    uint64_t model_file_rank; /* __MODEL_PROTO's position by local header offset (0-based) */

    /* Totals. */
    uint64_t stored_entries, stored_bytes;
    uint64_t deflated_entries, deflated_bytes, deflated_compressed;
    uint64_t tensor_entries; /* entries at least one tensor points at */
    uint64_t deflated_tensor_entries;
    uint64_t min_tensor_alignment; /* of STORED tensor entries whose data offset is known;
                                    * 0 when there are none (a URL's: not read yet, R-10) */
    uint64_t file_size;            /* the archive's bytes (its file's, or the URL's object) */
    /* Experimental (docs/api.md): the archive's signature as its bundle states it
     * (oz_signature_summary); NULL: not signed. */
    struct oz_signature_summary *signature;
} oz_archive_listing;

/* Lists ar's entries and the tensors of model (ar's model, decoded with its tensors as
 * references: skip_external_data) that point at them, into a new *out (NULL after a
 * failure) that oz_archive_listing_free releases. The entries' strings belong to ar's
 * reader, the names point into model: both must outlive *out. A location that names no
 * entry is left out (oz_archive_verify refuses it). */
OZ_API oc_status oz_archive_list(const oz_archive *ar, onnx_ModelProto *model,
                                 oz_archive_listing **out, oc_error *err);
/* Frees what oz_archive_list returned. NULL is accepted. */
OZ_API void oz_archive_listing_free(oz_archive_listing *listing);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* A model's signature as its bundle states it, read without a trusted key and so not
 * verified (spec/signing.md G-41: `onnxz verify --trust` verifies it). */
typedef struct oz_signature_summary {
    char *location;           /* the entry __ONNXZ_SIGNATURE, or the bundle's path */
    char key_fingerprint[65]; /* the bundle's key hint (spec/signing.md G-16); "" if none */
    uint64_t parts;           /* the entries or files its manifest lists */
    /* NULL, or why the bundle could not be read (one line; key_fingerprint and parts are
     * then empty): a bundle that is no bundle, or one at a URL, which is not fetched. */
    char *problem;
} oz_signature_summary;

/* Writes g as the JSON object `onnxz info --json` and `onnxz ls --json` give under
 * "signature": {"location", "key_fingerprint" (or null), "parts", "verified": false,
 * "problem" (or null)}. */
OZ_API void oz_signature_summary_write_json(FILE *out, const oz_signature_summary *g);

/* Opens the archive at path (a file or a URL; every ZIP check of oz_archive_open, with
 * opts' memory budget and HTTP settings), decodes its model with its tensors as
 * references (no tensor byte is read) and lists it (oz_archive_list) into a new *out
 * (NULL after a failure) that holds what it points into: oz_archive_listing_free releases
 * it all. opts may be NULL; no_copy and skip_external_data are the call's own. A file
 * that is no archive (a .onnx, an encrypted file) fails as oz_archive_open fails on it. */
OZ_API oc_status oz_list_path(const char *path, const oc_parse_options *opts,
                              oz_archive_listing **out, oc_error *err);

/* True when __MODEL_PROTO is the last entry both in the central directory and in the
 * file (spec/onnxz.md A-2). */
OZ_API bool oz_archive_listing_model_last(const oz_archive_listing *listing);

/* The largest power of two dividing offset, capped at OZ_ALIGNMENT_CAP (0 gives the cap). */
OZ_API uint64_t oz_offset_alignment(uint64_t offset);

/* "stored", "deflated" or "method N" (written into buf, of size bytes) for a ZIP method. */
OZ_API const char *oz_zip_method_name(uint16_t method, char *buf, size_t size);
#endif

#ifdef __cplusplus
}
#endif

#endif
