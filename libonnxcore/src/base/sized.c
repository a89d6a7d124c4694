/*
 * sized.c - reading a caller's sized struct of any version (internal/sized.h): the one
 * copy-in of every options struct of both libraries.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "internal/sized.h"

static size_t size_at(const unsigned char *p) {
    size_t size;
    memcpy(&size, p, sizeof size);
    return size;
}

/* Whether the caller's struct at p and every struct it embeds are of this library's
 * size: then it is read in place. */
static bool exact(const oc__sized_type *t, const unsigned char *p) {
    if (size_at(p) != t->size) return false;
    for (size_t i = 0; i < t->n_inner; i++)
        if (!exact(t->inner[i].type(), p + t->inner[i].offset)) return false;
    return true;
}

/* dst (t->size bytes, the defaults) receives what the caller's src of src_size bytes
 * holds (src_size checked: set, at most OC_OPTIONS_MAX_SIZE). src is walked beside dst,
 * one run of plain bytes before each embedded struct and one after the last: where the
 * caller's struct ends, the rest stays the defaults; past the end of what this library
 * knows, every byte of the caller's must be zero. */
static oc_status fill(const oc__sized_type *t, unsigned char *dst, const unsigned char *src,
                      size_t src_size, const char *name, oc_error *err) {
    size_t d = 0, s = 0; /* where dst and src are */
    for (size_t i = 0;; i++) {
        const oc__sized_inner *in = i < t->n_inner ? &t->inner[i] : NULL;
        size_t run = (in ? in->offset : t->size) - d;
        if (run > src_size - s) { /* the caller's struct ends in this run */
            memcpy(dst + d, src + s, src_size - s);
            break;
        }
        memcpy(dst + d, src + s, run);
        d += run;
        s += run;
        if (!in) { /* src holds all that is known: nothing may be set past it */
            oc_status st = oc__opts_check(src, src_size, s, name, err);
            if (st != OC_OK) return st;
            break;
        }
        if (src_size - s < OC_OPTS_MIN_SIZE) break; /* the caller's ends before it */
        size_t size = size_at(src + s);
        if (size > src_size - s)
            return oc_error_set(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                "%s of %zu bytes does not fit in the %zu bytes of the options "
                                "holding it",
                                in->name, size, src_size - s);
        oc_status st = oc__opts_check(src + s, size, size, in->name, err);
        if (st == OC_OK) st = fill(in->type(), dst + d, src + s, size, in->name, err);
        if (st != OC_OK) return st;
        d += in->type()->size;
        s += size;
    }
    memcpy(dst, &t->size, sizeof t->size);
    return OC_OK;
}

oc_status oc__sized_read(const oc__sized_type *t, const void *in, void *local, const void **use,
                         oc_error *err) {
    *use = local;
    memcpy(local, t->defaults, t->size);
    if (!in) return OC_OK;
    size_t size = size_at(in);
    oc_status st = oc__opts_check(in, size, size, t->name, err); /* set, not past the cap */
    if (st != OC_OK) return st;
    if (exact(t, in)) {
        *use = in;
        return OC_OK;
    }
    st = fill(t, local, in, size, t->name, err);
    if (st != OC_OK) memcpy(local, t->defaults, t->size);
    return st;
}
