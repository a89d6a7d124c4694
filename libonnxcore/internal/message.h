/*
 * internal/message.h - growing the repeated fields of a message (message.c), for the
 * decoder. The descriptor tables stay in internal/schema.h (schema.c), which this
 * file only reads: schema.c uses nothing of message.c.
 */
#ifndef ONNXCORE_INTERNAL_MESSAGE_H
#define ONNXCORE_INTERNAL_MESSAGE_H

#include "internal/schema.h"

/* oc_array_push with the common case inline: room left in the array. */
static inline void *oc__array_push(oc_arena *arena, void *array, uint64_t elem) {
    oc_array_hdr a;
    memcpy(&a, array, sizeof a);
    if (a.count < a.cap) {
        void *slot = (char *)a.items + a.count * elem;
        a.count++;
        memcpy(array, &a, sizeof a);
        return slot;
    }
    return oc_array_push(arena, array, elem);
}

/* Ensures room for `extra` more elements in a repeated field; OC_ERR_NOMEM on failure. */
oc_status oc__array_reserve(oc_arena *arena, void *msg, const oc_field *f, uint64_t extra);

#endif
