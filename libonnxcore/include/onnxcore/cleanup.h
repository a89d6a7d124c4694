/*
 * onnxcore/cleanup.h - what an interrupted process must remove, for its signal handler.
 *
 * The libraries install no signal handler. Instead they keep a registry of the paths a
 * save has created and not yet committed: the temporary file of every save in progress
 * (`.<name>.tmp-<hex>`, registered when it is created, forgotten when it is renamed into
 * place or removed), and an archive edit's temporary journal. A program that wants
 * nothing left behind when it is interrupted calls oc_cleanup_run() from its own handler
 * for SIGINT, SIGTERM, SIGHUP, then dies of the signal (spec/security.md, "Signals"). SIGKILL cannot be handled: the temporaries
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
