/*
 * onnxz/unpack.h - an archive unpacked into a directory as a classic external-data model
 * (spec/onnxz.md ): every entry becomes the file of the same name in DIR, and
 * __MODEL_PROTO becomes DIR/model.onnx, so each tensor's `location` names its own file
 * beside the model and any ONNX reader loads it.
 */
#ifndef ONNXZ_UNPACK_H
#define ONNXZ_UNPACK_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <onnxcore/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The name __MODEL_PROTO takes in DIR. */
#define OZ_UNPACK_MODEL_FILE "model.onnx"

/* Directories an entry name may nest (spec/security.md K-1). Making and checking the
 * parents of a name of d levels takes d system calls that each walk up to d levels, so
 * d is bounded: 64 levels cost a few thousand steps per entry, where 2,000 levels (a
 * 4 KB name) cost millions and an 8 MB archive kept unpack busy for ten minutes and
 * more. Tensor entries are never nested; this is far beyond any real archive. */
#define OZ_UNPACK_MAX_DEPTH 64

/* Extendable as onnxcore/options.h says ("Extending"): initialise with
 * OZ_UNPACK_OPTIONS_INIT or oz_unpack_options_init; the struct grows at its end. */
typedef struct oz_unpack_options {
    size_t size;         /* sizeof(oz_unpack_options), set by the initialisers */
    int no_overwrite;    /* refuse a DIR that is not empty (OC_ERR_EXISTS); 0 writes into
                          * it, replacing the files of the same names */
    int no_sync;         /* rename each file into place without waiting for the disk */
    uint64_t max_memory; /* the budget of the archive's reader and model decode; 0: none */
    /* Asked before each file is written: nonzero ends the unpack with OC_ERR_CANCELLED
     * ("cancelled"), what it wrote removed. NULL: never. */
    int (*cancel)(void *ctx);
    void *cancel_ctx;
} oz_unpack_options;

#define OZ_UNPACK_OPTIONS_INIT \
    { .size = sizeof(oz_unpack_options) }
/* Sets *opts to the defaults (as OZ_UNPACK_OPTIONS_INIT). */
OZ_API void oz_unpack_options_init(oz_unpack_options *opts);

/* What oz_unpack_file wrote, or whose its failure is; grows at its end as oz_convert_info
 * does. */
typedef struct oz_unpack_info {
    size_t size;       /* sizeof(oz_unpack_info), set by the initialisers */
    bool input_failed; /* the failure is the archive's (it is refused, or a read failed) */
    uint64_t files;    /* data files written beside model.onnx */
    uint64_t bytes;    /* their bytes */
} oz_unpack_info;

#define OZ_UNPACK_INFO_INIT \
    { .size = sizeof(oz_unpack_info) }

/* Unpacks the archive at `archive` into the directory `dir` (created when missing; its
 * parent must exist; with opts->no_overwrite, an existing one must be empty). Everything
 * is checked before anything is written: the ZIP rules, every CRC-32, no name both a
 * file and a directory (Z-36), the model decodes with every tensor resolving to its
 * entry; no entry named model.onnx or model.onnx/...; no name nested more than
 * OZ_UNPACK_MAX_DEPTH directories; in an existing DIR, no file or symbolic link on the
 * way to an entry and no directory where a file goes. Each file goes to a temporary name
 * beside it, renamed into place (synced unless no_sync), the model last; a tensor whose
 * entry is empty is written inside model.onnx. What the call creates (new files,
 * new directories) is registered with the signal cleanup (onnxcore/cleanup.h) while it
 * runs and removed again when it fails or is cancelled; files that were there before
 * are only ever replaced whole. Errors: with no_overwrite, a DIR not empty OC_ERR_EXISTS; DIR not
 * a directory OC_ERR_INVALID_ARG; the archive's as oz_archive_open and the checks report
 * them (info->input_failed); the system's. opts and info may be NULL. */
OZ_API oc_status oz_unpack_file(const char *archive, const char *dir, const oz_unpack_options *opts,
                                oz_unpack_info *info, oc_error *err);

#ifdef __cplusplus
}
#endif

#endif
