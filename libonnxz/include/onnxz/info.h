/*
 * onnxz/info.h - the report of `onnxz info`: what a file is (its path as shown, size,
 * format, encryption), its model's header fields and figures (onnxcore/stats.h) and, for
 * an archive, where its bytes are (onnxz/listing.h), gathered in one call. The report is
 * written as the JSON document `onnxz info --json` prints and File.info() in Python
 * returns; callers that show it otherwise format the struct.
 *
 * The struct may grow at its end; it is allocated by the library (callers never declare
 * one).
 */
#ifndef ONNXZ_INFO_H
#define ONNXZ_INFO_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <onnxcore/crypto.h>
#include <onnxcore/stats.h>

#include "archive.h"
#include "listing.h"
#include "reader.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */

/* What the caller opened, as it opened it (spec/security.md L-2: the report is of these,
 * the path is not opened again). Grows at its end: fill it with OZ_INFO_SOURCE_INIT
 * (onnxcore/options.h, "Extending"); path and model are required. */
typedef struct oz_info_source {
    size_t size;               /* sizeof(oz_info_source), set by OZ_INFO_SOURCE_INIT */
    const char *path;          /* as given (a URL is shown without its user:password@, N-2) */
    uint64_t file_size;        /* bytes of the file, or of the object at the URL */
    bool payload_archive;      /* the model came from an archive (an encrypted one too) */
    oc_crypt_format crypt;     /* the file's encryption; OC_CRYPT_NONE: none */
    onnx_ModelProto *model;    /* as the file holds it: tensors as references */
    const oz_archive *archive; /* the unencrypted archive model came from, else NULL */
} oz_info_source;

#define OZ_INFO_SOURCE_INIT \
    { .size = sizeof(oz_info_source) }

typedef struct oz_info_opset {
    oc_str domain; /* the default (empty) domain as "ai.onnx" */
    int64_t version;
} oz_info_opset;

/* The oc_str strings point into the source's model, which must outlive the report. */
typedef struct oz_info {
    char *file; /* the path as it may be shown (oc_path_shown) */
    uint64_t file_size;
    bool archive;          /* the format: an .onnxz archive, else .onnx */
    oc_crypt_format crypt; /* OC_CRYPT_NONE unless encrypted */

    /* The model's header fields; has_*: the field is set (a model may have no graph). */
    bool has_ir_version, has_model_version;
    int64_t ir_version, model_version;
    bool has_producer_name, has_producer_version, has_domain, has_graph_name;
    oc_str producer_name, producer_version, domain, graph_name;
    oz_info_opset *opsets;
    uint64_t nopsets;

    oc_model_stats *stats;
    /* An unencrypted archive's entries and totals, else NULL. */
    oz_archive_listing *listing;
    /* listing's min_tensor_alignment is that of every stored tensor entry: false while
     * some data offsets are not known yet (a URL's local headers are read later, R-10). */
    bool alignment_known;
    /* The model's signature as its bundle states it, not verified (an archive's is its
     * listing's); NULL: not signed. */
    oz_signature_summary *signature;
} oz_info;

/* Gathers the report of src into a new *out (NULL after a failure), which oz_info_free
 * releases. Fails with OC_ERR_INVALID_ARG for a src without its size, path or model,
 * else only when out of memory. */
OZ_API oc_status oz_info_collect(const oz_info_source *src, oz_info **out, oc_error *err);

/* oz_info_collect of what r opened (onnxz/reader.h): its path as given, size, format,
 * encryption and model, and an unencrypted archive's entries (an encrypted archive's are
 * not listed). A reader opened with skip_data_files reports a .onnx whose data files are
 * missing. r must outlive *out. Errors as oz_info_collect's. */
OZ_API oc_status oz_info_collect_reader(const oz_reader *r, oz_info **out, oc_error *err);

/* Writes info to out as `onnxz info --json` prints it: one object, two-space indented,
 * ending with a newline; absent model fields are null (the keys: `onnxz info --help`).
 * The caller checks ferror(out). */
OZ_API void oz_info_write_json(const oz_info *info, FILE *out);

/* Frees what oz_info_collect returned. NULL is accepted. */
OZ_API void oz_info_free(oz_info *info);
#endif

#ifdef __cplusplus
}
#endif

#endif
