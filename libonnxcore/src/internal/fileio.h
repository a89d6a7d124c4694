/*
 * internal/fileio.h - mapping files for reading, and atomic replacement for writing.
 */
#ifndef ONNXCORE_INTERNAL_FILEIO_H
#define ONNXCORE_INTERNAL_FILEIO_H

#include <stdint.h>

#include "onnxcore/bytes.h"
#include "onnxcore/status.h"

/* A whole file, read-only, kept alive by `owner` (one reference belongs to the caller). */
typedef struct oc__mapped {
    const uint8_t *data;
    uint64_t size;
    oc_owner *owner;
} oc__mapped;

/* Maps path read-only (or reads it, where mapping is impossible). */
oc_status oc__map_file(const char *path, oc__mapped *out, oc_error *err);

/* A file written under a temporary name beside its target and renamed into place. */
typedef struct oc__atomic_file {
    int fd;
    int overwrite;
    char *path;
    char *tmp_path;
    uint64_t written;
} oc__atomic_file;

oc_status oc__atomic_open(oc__atomic_file *af, const char *path, int overwrite, oc_error *err);
/* An oc_write_fn appending to the temporary file; ctx is the oc__atomic_file. */
oc_status oc__atomic_write(void *ctx, const void *data, uint64_t size, oc_error *err);
/* fsync, rename over the target (or fail with OC_ERR_EXISTS without overwrite), fsync the
 * directory. On failure the temporary file is removed. */
oc_status oc__atomic_commit(oc__atomic_file *af, oc_error *err);
/* Removes the temporary file. Safe after a failed commit. */
void oc__atomic_abort(oc__atomic_file *af);

#endif
