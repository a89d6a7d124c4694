/*
 * text.c - a growing NUL-terminated text (internal/text.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal/text.h"

void oc__text_put(oc__text *t, const void *data, size_t n) {
    if (t->failed) return;
    if (n > SIZE_MAX / 2 - t->n) { /* past any text that can be held */
        t->failed = 1;
        return;
    }
    if (t->cap - t->n < n + 1) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap - t->n < n + 1) cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->failed = 1;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->n, data, n);
    t->n += n;
    t->p[t->n] = '\0';
}
