/*
 * onnxcore/cleanup.h - what an interrupted process must remove, for its signal handler.
 *
 * The libraries install no signal handler. Instead they keep a registry of the paths a
 * save has created and not yet committed: the temporary file of every live
 * oc_atomic_file (`.<name>.tmp-<hex>`, registered by oc_atomic_open, forgotten by its
 * commit or abort), and whatever a caller registers itself (an unpacking tool's new files
 * and directories). A program that wants nothing left behind when it is interrupted
 * calls oc_cleanup_run() from its own handler for SIGINT, SIGTERM, SIGHUP, then dies of
 * the signal (spec/security.md, "Signals"). SIGKILL cannot be handled: the temporaries
 * it leaves are removed by the next save of the same target (W-30).
 *
 * Paths are kept as given, so relative ones are relative to the working directory at
 * the time of the signal: do not chdir while paths are registered.
 */
#ifndef ONNXCORE_CLEANUP_H
#define ONNXCORE_CLEANUP_H

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oc_cleanup_entry oc_cleanup_entry;

/* Registers path (a file, or with is_dir a directory) for removal by oc_cleanup_run.
 * Returns the entry, or NULL when out of memory (then nothing is registered). The path
 * is copied. Thread-safe; not async-signal-safe. */
OC_API oc_cleanup_entry *oc_cleanup_register(const char *path, int is_dir);

/* Forgets an entry (the path was committed, or removed by its owner). NULL is accepted.
 * Thread-safe; not async-signal-safe. */
OC_API void oc_cleanup_forget(oc_cleanup_entry *entry);

/* Removes every registered path: files first (unlink), then directories (rmdir, which
 * removes only empty ones; deepest first, whatever the order they were registered in).
 * Async-signal-safe: only atomic loads and the unlink/rmdir system calls, no allocation,
 * no lock; errno is preserved. Meant to be called once, from a handler of a signal
 * that ends the process; entries stay registered (a second call finds nothing left).
 * Threads the libraries start block every signal, so a handler never runs on them. */
OC_API void oc_cleanup_run(void);

#ifdef __cplusplus
}
#endif

#endif
