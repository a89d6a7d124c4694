/*
 * internal/encode.h - encoding with some messages replaced by others, and tensors whose
 * bytes are fetched while they are written.
 *
 * Writers that move tensor bytes out of the model (external data, archives) encode the
 * model with each moved TensorProto replaced by a reference tensor, without touching the
 * model. Substitutions are listed in encoding order (the order oc_msg_visit_tensors visits);
 * both encoding passes consume them in that order, matching by address.
 *
 * A fetch supplies the bytes of tensors that are still references to data elsewhere (a
 * model loaded with skip_external_data, whose data the writer streams from its input one
 * tensor at a time: a converter's bounded-memory path). Given one, a writer treats every
 * external tensor as if its bytes were its raw_data: moved out by the rules that move
 * raw_data, or written inline through a substitution whose raw_data has only a size and
 * whose bytes the encoder streams from the fetch.
 */
#ifndef ONNXCORE_INTERNAL_ENCODE_H
#define ONNXCORE_INTERNAL_ENCODE_H

#include "onnxcore/codec.h"
#include "onnxcore/external.h"
#include "onnxcore/messages.h"
#include "onnxcore/options.h"

/* A tensor the encoder writes as another. The replacement is built when the encoder reaches
 * the tensor (in each pass) by the substituter's build function, into memory the substituter
 * reuses: a save holds a small record per moved tensor, not a second TensorProto. */
typedef struct oc__subst {
    const void *original;
    /* the replacement's raw_data holds only a size: its bytes are the original's, streamed
     * from the fetch */
    int fetched;
} oc__subst;

/* Substitution `index`'s replacement, valid until the next call; NULL when out of memory. */
typedef const void *(*oc__subst_build_fn)(void *ctx, uint64_t index);

typedef struct oc__subst_list {
    const oc__subst *subs;
    uint64_t count;
    oc__subst_build_fn build;
    void *ctx;
} oc__subst_list;

typedef struct oc__subst_cursor {
    const oc__subst_list *list; /* NULL: none */
    uint64_t next;
} oc__subst_cursor;

/* The index of the substitution for msg, consumed, or -1. */
static inline int64_t oc__subst_next(oc__subst_cursor *c, const oc_msgdesc *d, const void *msg) {
    if (c->list && c->next < c->list->count && c->list->subs[c->next].original == msg &&
        d == &onnx_TensorProto_desc)
        return (int64_t)c->next++;
    return -1;
}

/* Told the encoded size before the first byte goes to the writer: for a writer whose
 * header holds the size (an archive entry streamed as it is encoded). A failure ends the
 * encoding. */
typedef oc_status (*oc__sized_fn)(void *ctx, uint64_t total, oc_error *err);

/* Encodes msg to fn with the substitutions of list (NULL: none); sized (may be NULL) gets
 * ctx and the total first. */
oc_status oc__encode_subst(const oc_msgdesc *desc, const void *msg, const oc__subst_list *list,
                           const oc_tensor_fetch *fetch, oc__sized_fn sized, oc_write_fn fn,
                           void *ctx, oc_error *err);

#endif
