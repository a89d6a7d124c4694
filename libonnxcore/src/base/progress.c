/*
 * progress.c - the byte counter of one save (internal/onnxcore_progress.h); its start from
 * a save's options and message is progress_save.c (above the encoder, which writes
 * through fileio.c, which counts here). Compiled into
 * libonnxcore and, under hidden oz__ names, into libonnxz, so neither library exports it.
 */
#include "internal/onnxcore_progress.h"

void oc_progress_start(oc_progress *p, oc_progress_fn fn, void *ctx, uint64_t total) {
    p->fn = fn;
    p->ctx = ctx;
    p->done = 0;
    p->total = total;
    if (fn) fn(ctx, 0, total);
}

void oc_progress_add(oc_progress *p, uint64_t n) {
    if (!p || !p->fn) return;
    p->done = n < p->total - p->done ? p->done + n : p->total;
    p->fn(p->ctx, p->done, p->total);
}

void oc_progress_finish(oc_progress *p) {
    if (!p || !p->fn) return;
    p->done = p->total;
    p->fn(p->ctx, p->done, p->total);
}
