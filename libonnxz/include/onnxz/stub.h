/*
 * onnxz/stub.h - a stub of an archive (spec/onnxz.md A-60..A-63): a small .onnx whose
 * external tensors point into the .onnxz file itself (location = the archive's file name,
 * offset = the entry's data offset, length = its size), so that any runtime reading
 * classic external data (spec/external-data.md) uses the archive's weights in place.
 *
 * The stub also records, in its metadata_props under OZ_STUB_RECORD_KEY, one line per
 * entry it uses, "OFFSET LENGTH CRC32 NAME": runtimes ignore metadata, and
 * oz_verify_model (onnxz/verify.h) checks every reference against them, so that a
 * stub of an archive rebuilt since cannot go stale silently.
 */
#ifndef ONNXZ_STUB_H
#define ONNXZ_STUB_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <onnxcore/model.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The metadata_props key of a stub's entry records. */
#define OZ_STUB_RECORD_KEY "onnxz.stub"

/* Extendable as onnxcore/options.h says ("Extending"): initialise with
 * OZ_STUB_OPTIONS_INIT or oz_stub_options_init; the struct grows at its end. */
typedef struct oz_stub_options {
    size_t size;         /* sizeof(oz_stub_options), set by the initialisers */
    int no_overwrite;    /* refuse an existing OUT (OC_ERR_EXISTS); 0 replaces it */
    int no_sync;         /* rename into place without waiting for the disk (no fsync) */
    uint64_t max_memory; /* the archive's model decoded within this budget; 0: the default */
} oz_stub_options;

#define OZ_STUB_OPTIONS_INIT \
    { .size = sizeof(oz_stub_options) }
/* Sets *opts to the defaults (as OZ_STUB_OPTIONS_INIT). */
OZ_API void oz_stub_options_init(oz_stub_options *opts);

/* What oz_stub_file wrote, or which argument its failure is about; grows at its end as
 * oz_convert_info does. */
typedef struct oz_stub_info {
    size_t size;        /* sizeof(oz_stub_info), set by the initialisers */
    bool input_failed;  /* the failure is the archive's (reading it, a tensor it holds) */
    bool out_misnamed;  /* OUT is named as another form (*.onnxz, *.onnxc): a caller's
                         * mistake, before anything was read */
    uint64_t tensors;   /* tensors pointing into the archive */
    uint64_t bytes;     /* the bytes of their entries */
    uint64_t file_size; /* bytes of the stub written */
} oz_stub_info;

#define OZ_STUB_INFO_INIT \
    { .size = sizeof(oz_stub_info) }

/* Writes the stub of `archive` (an .onnxz file, told by content) to `out`, a .onnx file
 * in the same directory (locations are relative to the model's directory; A-60) that is
 * not the archive itself. Every EXTERNAL tensor must name a STORED entry whose name has
 * no line break; tensors held inside the model stay there. OUT goes to a
 * temporary beside it, renamed into place whole (S-41); OUT "-" or a FIFO is written
 * through. Errors: OC_ERR_INVALID_ARG for a misnamed OUT (info->out_misnamed), OUT in
 * another directory or OUT the archive; an encrypted or non-archive input is
 * OC_ERR_UNSUPPORTED; a deflated entry OC_ERR_UNSUPPORTED; a location naming no entry
 * OC_ERR_NOT_FOUND; an existing OUT with no_overwrite OC_ERR_EXISTS; and the errors of
 * oz_archive_open and of the save. opts and info may be NULL. Thread-safe on distinct
 * files. */
OZ_API oc_status oz_stub_file(const char *archive, const char *out, const oz_stub_options *opts,
                              oz_stub_info *info, oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Checks every EXTERNAL tensor of model whose location is an .onnxz archive (by content)
 * against that archive's entries: the entry recorded for its offset (or, in a
 * stub without records, the entry whose data starts there) holds exactly the bytes the
 * tensor reads, stored, with the recorded CRC-32, and those bytes match it. model: loaded
 * with its references kept (skip_external_data); locations are relative to data_dir.
 * *checked (may be NULL) receives the number of tensors checked. The first problem ends
 * the check, its message naming the tensor. model is not changed. oz_verify_model makes
 * this check. */
OZ_API oc_status oz_stub_check(oc_model *model, const char *data_dir, uint64_t *checked,
                               oc_error *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
