/*
 * progress_save.c - starting the byte counter of a save (internal/onnxcore_progress.h):
 * the total is the message's encoded size, plus the bytes of fetched tensors. Compiled
 * into libonnxcore and, under a hidden oz__ name, into libonnxz, as progress.c.
 */
#include "internal/onnxcore_progress.h"
#include "onnxcore/external.h"
#include "internal/onnxcore_shared.h"

typedef struct fetched_sum {
    const oc_tensor_fetch *fetch;
    uint64_t n;
    oc_error *err;
} fetched_sum;

static oc_status add_fetched(void *ctx, onnx_TensorProto *t) {
    fetched_sum *s = ctx;
    uint64_t n;
    if (!oc_tensor_is_external(t)) return OC_OK;
    oc_status st = s->fetch->size(s->fetch->ctx, t, &n, s->err);
    s->n += st == OC_OK ? n : 0;
    return st;
}

oc_status oc_progress_start_save(oc_progress *p, const oc_msgdesc *desc, const void *msg,
                                 const oc_serialize_options *opts, oc_error *err) {
    uint64_t total = 0;
    OC_SERIALIZE_OPTS(opts, err);
    if (opts && opts->progress) {
        oc_status st = oc_encoded_size(desc, msg, &total, err);
        if (st != OC_OK) return st;
        if (opts->fetch) { /* fetched tensors: the bytes the references stand for */
            fetched_sum s = {opts->fetch, 0, err};
            st = oc_msg_visit_tensors(desc, (void *)(uintptr_t)msg, add_fetched, &s);
            if (st != OC_OK) return st;
            total += s.n;
        }
    }
    oc_progress_start(p, opts ? opts->progress : NULL, opts ? opts->progress_ctx : NULL, total);
    return OC_OK;
}
