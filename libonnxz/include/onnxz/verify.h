/*
 * onnxz/verify.h - every check `onnxz verify` and File.verify() in Python make, as calls
 * that return what they found (callers format it) or the first problem (oc_error).
 *
 * The report structs may grow at their end; they are allocated by the
 * library (callers never declare one), so a caller built against an older header keeps
 * working.
 */
#ifndef ONNXZ_VERIFY_H
#define ONNXZ_VERIFY_H

#include "export.h"

#include <stdbool.h>
#include <stdint.h>

#include <onnxcore/options.h>

#include "archive.h"
#include "open.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What oz_archive_verify found in an archive that passed every check. */
typedef struct oz_archive_report {
    uint64_t entries;        /* entries in the archive */
    uint64_t tensor_entries; /* entries at least one tensor points at */
    uint64_t entry_tensors;  /* tensors resolved to those entries */
    uint64_t entry_bytes;    /* those entries' uncompressed bytes */
    uint64_t model_size;     /* __MODEL_PROTO, uncompressed */
} oz_archive_report;

/* Every check `onnxz verify` makes on an archive open already (oz_archive_open has made
 * the ZIP checks Z-60..Z-76 and ), in this order, stopping at the first failure:
 *   1. the CRC-32 of every entry (oz_zip_reader_verify_all); no name is both a file and
 *      a directory (Z-36);
 *   2. the model decodes, every tensor resolves to an entry of its length and
 *      holds the bytes its dims and data type make (oc_model_check: W-41, W-40); an
 *      archive at a URL, whose every byte step 1 has just downloaded, has its tensors'
 *      sizes asked of its entries instead of reading them again;
 *   3. the layout rules (oz_archive_check_layout: A-2..A-4).
 * opts (NULL: the defaults) are those the model is decoded with (its memory budget);
 * no_copy and skip_external_data are the call's own. On success a new *out (NULL after a
 * failure) holds the figures; oz_archive_report_free releases it. */
OZ_API oc_status oz_archive_verify(const oz_archive *ar, const oc_parse_options *opts,
                                   oz_archive_report **out, oc_error *err);
/* Frees what oz_archive_verify returned. NULL is accepted. */
OZ_API void oz_archive_report_free(oz_archive_report *report);

/* What oz_verify_model found in a file that passed every check. */
typedef struct oz_model_report {
    uint64_t tensors;            /* every TensorProto at any depth */
    uint64_t external_tensors;   /* of which data_location EXTERNAL (not for encrypted files) */
    uint64_t external_files;     /* the distinct data files they name */
    uint64_t external_bytes;     /* their `length` keys */
    uint64_t checksums;          /* external tensors whose `checksum` key was verified */
    uint64_t archive_references; /* external tensors into an archive, checked */
} oz_model_report;

/* Every check `onnxz verify` makes on a file that is not an unencrypted archive (a
 * model with its external data, or an encrypted file holding a model or an archive):
 * it opens (oz_open with opts; a key is needed for an encrypted file) with every
 * external tensor resolved under spec/external-data.md and every `checksum` key
 * verified (on every core unless opts->parse.num_threads says otherwise; encrypted
 * files: every ONNXZEC1 chunk authenticates), and the model passes oc_model_check
 * (W-41, W-40); a tensor whose location is an .onnxz archive (a stub's, onnxz/stub.h)
 * reads the very entry it was made from (oz_stub_check, A-62). On success a new *out
 * (NULL after a failure; oz_model_report_free releases it) holds the figures
 * (oc_model_stats_collect's) of the model's tensors as references to their data files
 * (the model read again without its data), or, for an encrypted file, of the model it
 * decrypts to. info (may be NULL) as oz_open fills it. */
OZ_API oc_status oz_verify_model(const char *path, const oz_open_options *opts,
                                 oz_model_report **out, oz_open_info *info, oc_error *err);
/* Frees what oz_verify_model returned. NULL is accepted. */
OZ_API void oz_model_report_free(oz_model_report *report);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* What oz_verify_path (or oz_reader_verify, onnxz/reader.h) found in a file that passed
 * every check: which checks ran, and their figures. */
typedef struct oz_verify_report {
    oz_kind kind;               /* the file's kind (oz_detect_path) */
    bool is_archive;            /* the model is an archive's (an encrypted archive too) */
    oz_archive_report *archive; /* an unencrypted archive: oz_archive_verify's; else NULL */
    oz_model_report *model;     /* every other form: oz_verify_model's; else NULL */
    /* With a trusted key (oz_open_options.trust): what the verified signature covers
     * (onnxz/sign.h); else NULL. */
    struct oz_signature_report *signature;
} oz_verify_report;

/* Every check `onnxz verify` makes on the file or URL at path, whichever its form: an
 * archive (oz_detect_path: OZ_KIND_ZIP or ZIP_SHORT) is opened (opts->parse's memory
 * budget and HTTP settings) and passes oz_archive_verify; any other file passes
 * oz_verify_model with opts (data_dir, num_threads, the key of an encrypted file). An
 * archive with opts->parse.data_dir set fails with OC_ERR_INVALID_ARG before it is opened
 * (its tensors lie in its entries); an encrypted file without opts->key fails with
 * OC_ERR_INVALID_ARG before anything is decrypted (info->kind says so, for a caller that
 * asks for a key and calls again). info (may be NULL) as oz_open fills it, also on
 * failure. On success a new *out (NULL after a failure) that oz_verify_report_free
 * releases. */
/* With opts->trust, the model's signature is verified first (oz_signature_verify: the
 * bundle inside an archive or beside a .onnx as MODEL.sig), and a model that is unsigned
 * or whose signature fails fails here, before any other check. */
OZ_API oc_status oz_verify_path(const char *path, const oz_open_options *opts,
                                oz_verify_report **out, oz_open_info *info, oc_error *err);
/* Frees what oz_verify_path or oz_reader_verify returned, with its figures. NULL is
 * accepted. */
OZ_API void oz_verify_report_free(oz_verify_report *report);
#endif

#ifdef __cplusplus
}
#endif

#endif
