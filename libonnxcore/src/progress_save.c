/*
 * progress_save.c - starting the byte counter of a save (internal/onnxcore_progress.h):
 * the total is the message's encoded size. Compiled into libonnxcore and, under a hidden
 * oz__ name, into libonnxz, as progress.c.
 */
#include "onnxcore_progress.h"
#include "onnxcore_shared.h"

oc_status oc_progress_start_save(oc_progress *p, const oc_msgdesc *desc, const void *msg,
                                 const oc_serialize_options *opts, oc_error *err) {
    uint64_t total = 0;
    OC_SERIALIZE_OPTS(opts, err);
    if (opts && opts->progress) {
        oc_status st = oc_encoded_size(desc, msg, &total, err);
        if (st != OC_OK) return st;
    }
    oc_progress_start(p, opts ? opts->progress : NULL, opts ? opts->progress_ctx : NULL, total);
    return OC_OK;
}
