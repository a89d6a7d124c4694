/*
 * internal/cleanup.h - registering paths with the cleanup registry (onnxcore/cleanup.h,
 * whose oc_cleanup_run removes them from a signal handler). The libraries register their
 * temporary files; libonnxz reaches these under ONNXCORE_PRIVATE (private.h).
 *
 * Paths are kept as given, so relative ones are relative to the working directory at
 * the time of the signal: do not chdir while paths are registered.
 */
#ifndef ONNXCORE_INTERNAL_CLEANUP_H
#define ONNXCORE_INTERNAL_CLEANUP_H

#include "onnxcore_private.h"
#include "onnxcore/cleanup.h"

typedef struct oc_cleanup_entry oc_cleanup_entry;

/* Registers path (a file, or with is_dir a directory) for removal by oc_cleanup_run.
 * Returns the entry, or NULL when out of memory (then nothing is registered). The path
 * is copied. Thread-safe; not async-signal-safe. */
OC_PRIVATE oc_cleanup_entry *oc_cleanup_register(const char *path, int is_dir);
/* Forgets an entry (the path was committed, or removed by its owner). NULL is accepted.
 * Thread-safe; not async-signal-safe. */
OC_PRIVATE void oc_cleanup_forget(oc_cleanup_entry *entry);

#endif
