/*
 * internal/encode.h - encoding with some messages replaced by others.
 *
 * Writers that move tensor bytes out of the model (external data, archives) encode the
 * model with each moved TensorProto replaced by a reference tensor, without touching the
 * model. Substitutions are listed in encoding order (the order oc_msg_visit_tensors visits);
 * both encoding passes consume them in that order, matching by address.
 */
#ifndef ONNXCORE_INTERNAL_ENCODE_H
#define ONNXCORE_INTERNAL_ENCODE_H

#include "onnxcore/codec.h"

typedef struct oc__subst {
    const void *original;
    const void *replacement;
} oc__subst;

typedef struct oc__subst_cursor {
    const oc__subst *subs;
    uint64_t count, next;
} oc__subst_cursor;

static inline const void *oc__subst_next(oc__subst_cursor *c, const oc_msgdesc *d,
                                         const void *msg) {
    if (c->next < c->count && c->subs[c->next].original == msg && d == &onnx_TensorProto_desc)
        return c->subs[c->next++].replacement;
    return msg;
}

oc_status oc__encode_subst(const oc_msgdesc *desc, const void *msg, const oc__subst *subs,
                           uint64_t nsubs, oc_write_fn fn, void *ctx, oc_error *err);

#endif
