/*
 * onnxcore_atomic.h - the crash-safe file writer (onnxcore_private.h, where the tool finds
 * it) and what only the libraries use of it: patching what was written, and the count of
 * bytes appended that fileio.c and fileio_bytes.c share.
 */
#ifndef ONNXCORE_ATOMIC_H
#define ONNXCORE_ATOMIC_H

#include "onnxcore_private.h"

#include <stdbool.h>
#include <stdint.h>

#include <onnxcore/status.h>

#include "internal/onnxcore_progress.h"

/* Writes size bytes at offset `at` of the temporary file (to patch what was written). */
OC_PRIVATE oc_status oc_atomic_pwrite(oc_atomic_file *af, const void *data, uint64_t size,
                                      uint64_t at, oc_error *err);

/* The sink of an output that is an object in a store (oc_atomic_open_url, in the http
 * layer above this one, fills oc_atomic_file.remote): what oc_atomic_write, _pwrite,
 * _hold, _commit and _abort do instead of touching a file. commit and abort end ctx. */
typedef struct oc__atomic_remote {
    oc_status (*write)(void *ctx, const void *data, uint64_t n, oc_error *err);
    oc_status (*patch)(void *ctx, const void *data, uint64_t n, uint64_t at, oc_error *err);
    void (*hold)(void *ctx, uint64_t at, uint64_t n);
    oc_status (*commit)(void *ctx, bool no_overwrite, oc_error *err);
    void (*abort)(void *ctx);
} oc__atomic_remote;

/* Called by fileio.c and fileio_bytes.c only: counts n bytes appended by either. */
void oc__atomic_appended(oc_atomic_file *af, uint64_t n);

#endif
