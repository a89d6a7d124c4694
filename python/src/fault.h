/*
 * fault.h - SIGBUS from the package's own file mappings turned into onnxz.Error
 * (spec/security.md S-42; fault.c). Part of the Python extension, never of the libraries:
 * a library installs no signal handler.
 */
#ifndef ONNXZ_PY_FAULT_H
#define ONNXZ_PY_FAULT_H

/* Called in the main thread, with the GIL, after a fault in the mapping of path was
 * mended: sets the exception to raise and returns -1. */
typedef int (*onnxz_fault_raise_fn)(const char *path);

/* Watches the file at path (a local file a _Reader opened and maps): a SIGBUS in a
 * mapping of it (the file cut or rewritten in place by another process) is mended and
 * raised through raise_fn instead of killing the process. Installs the handler on first
 * use, and again when someone replaced it since (faulthandler.enable, say), chaining to
 * whatever was there for faults that are not ours. With the GIL. Best effort: a file that
 * cannot be looked at is not watched. */
void onnxz_fault_watch(const char *path, onnxz_fault_raise_fn raise_fn);

#endif
