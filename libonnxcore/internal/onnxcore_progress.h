/*
 * onnxcore_progress.h - counting the bytes of one save for an oc_progress_fn
 * (oc_serialize_options.progress), shared by libonnxcore and libonnxz without being public
 * API: libonnxcore.so exports what libonnxz calls (marked OC_PRIVATE) under
 * ONNXCORE_PRIVATE. A counter started by either library is advanced by oc_atomic_write,
 * through the `progress` field of oc_atomic_file (onnxcore_private.h).
 */
#ifndef ONNXCORE_PROGRESS_H
#define ONNXCORE_PROGRESS_H

#include "onnxcore_private.h"

#include <stdint.h>

#include <onnxcore/codec.h>
#include <onnxcore/options.h>
#include <onnxcore/status.h>

/* Bytes written across the files of one save, reported to an oc_progress_fn. */
struct oc_progress {
    oc_progress_fn fn; /* NULL: nothing is counted or reported */
    void *ctx;
    uint64_t done, total;
};
typedef struct oc_progress oc_progress;

/* Starts counting towards total bytes for fn (which may be NULL). */
void oc_progress_start(oc_progress *p, oc_progress_fn fn, void *ctx, uint64_t total);
/* Adds n bytes and reports (done never passes total). NULL p is accepted. */
void oc_progress_add(oc_progress *p, uint64_t n);
/* Reports done == total: the work is complete. NULL p is accepted. */
OC_PRIVATE void oc_progress_finish(oc_progress *p);

/* Starts counting a save of msg for opts->progress (total: msg's encoded size, which is
 * computed only when there is a callback). opts may be NULL. */
OC_PRIVATE oc_status oc_progress_start_save(oc_progress *p, const oc_msgdesc *desc, const void *msg,
                                            const oc_serialize_options *opts, oc_error *err);

#endif
