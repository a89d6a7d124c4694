/*
 * internal/text.h - a growing NUL-terminated text (text.c), for the texts built piece by
 * piece: a request's canonical form and signature (sigv4.c), a signed statement and its
 * bundle (libonnxz's signature.c, under ONNXCORE_PRIVATE).
 */
#ifndef ONNXCORE_INTERNAL_TEXT_H
#define ONNXCORE_INTERNAL_TEXT_H

#include <stddef.h>

#include "onnxcore_private.h"

/* Starts as {0}; p is NULL or NUL-terminated at n; free(p) when done. After an allocation
 * fails (or the size would wrap), `failed` is set and every later put is a no-op: a
 * caller checks it once at the end. */
typedef struct oc__text {
    char *p;
    size_t n, cap;
    int failed;
} oc__text;

/* Appends the n bytes at data. */
OC_PRIVATE void oc__text_put(oc__text *t, const void *data, size_t n);

#endif
