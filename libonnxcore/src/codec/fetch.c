/*
 * fetch.c - the bytes of tensors that are still external references, for savers
 * (oc_tensor_fetch, onnxcore/external.h; internal/encode.h): one place that says whether a
 * tensor's bytes come from a fetch or from its raw_data, and holds a fetch to the size it
 * announced. Below the encoder and the external-data writer, which both write through it.
 */
#include "onnxcore/external.h"
#include "internal/fetch.h"
#include "internal/error.h"

int oc__fetched(const oc_tensor_fetch *fetch, const onnx_TensorProto *t) {
    return fetch && oc_tensor_is_external(t);
}

typedef struct counted_sink {
    oc_write_fn write;
    void *ctx;
    uint64_t left;
} counted_sink;

static oc_status counted_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    counted_sink *c = ctx;
    if (size > c->left)
        return oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                        "a tensor's input gave more bytes than its reference announced");
    c->left -= size;
    return c->write(c->ctx, data, size, err);
}

oc_status oc_tensor_write(const oc_tensor_fetch *fetch, const onnx_TensorProto *t, uint64_t size,
                          oc_write_fn write, void *ctx, oc_error *err) {
    if (!oc__fetched(fetch, t)) {
        if (t->raw_data.size != size)
            return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "oc_tensor_write: the tensor has %llu bytes, not %llu",
                            (unsigned long long)t->raw_data.size, (unsigned long long)size);
        return oc_bytes_write(&t->raw_data, write, ctx, err);
    }
    counted_sink c = {write, ctx, size};
    OC_FORWARD(fetch->stream(fetch->ctx, t, counted_write, &c, err));
    if (c.left)
        return oc__fail(err, OC_ERR_TRUNCATED, OC_NO_OFFSET,
                        "a tensor's input ended %llu bytes short of its reference's length",
                        (unsigned long long)c.left);
    return OC_OK;
}

/* oc_msg_visit_tensors: the first EXTERNAL tensor stops the walk, kept in *ctx. */
static oc_status first_reference(void *ctx, onnx_TensorProto *t) {
    if (!oc_tensor_is_external(t)) return OC_OK;
    *(const onnx_TensorProto **)ctx = t;
    return OC_ERR_INVALID_ARG;
}

oc_status oc_check_references_resolved(const oc_msgdesc *desc, const void *msg,
                                       const oc_tensor_fetch *fetch, oc_error *err) {
    const onnx_TensorProto *t = NULL;
    if (!desc || !msg)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_check_references_resolved: missing argument");
    if (fetch) return OC_OK; /* each reference streams from it, or the save fails */
    /* The walk only reads: the visitor's signature is the codec's, for editors too. */
    if (oc_msg_visit_tensors(desc, (void *)(uintptr_t)msg, first_reference, &t) == OC_OK)
        return OC_OK;
    char name[OC_QUOTE_SIZE], where[OC_QUOTE_SIZE];
    const oc_str *loc = oc_tensor_external_value(t, "location");
    return oc__fail_rule(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "S-40",
                         "tensor '%s' is a reference to external data ('%s') that this save "
                         "has nothing to read from; writing it would lose the tensor's bytes: "
                         "load the model with its data, or convert the file it came from",
                         oc_quote(t->name.data, t->name.size, name, sizeof name),
                         loc ? oc_quote(loc->data, loc->size, where, sizeof where) : "");
}
