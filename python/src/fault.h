/*
 * fault.h - SIGBUS from the package's own file mappings turned into onnxz.Error
 * (spec/security.md S-42; fault.c). Part of the Python extension, never of the libraries:
 * a library installs no signal handler.
 */
#ifndef ONNXZ_PY_FAULT_H
#define ONNXZ_PY_FAULT_H

#include <stddef.h>

#define ONNXZ_FAULT_PATH_MAX 1024 /* of a cut file's name, kept for the message */

/* Called in the main thread, with the GIL, after a fault in a mapping of path was mended
 * outside any scope: sets the exception to raise and returns -1. */
typedef int (*onnxz_fault_raise_fn)(const char *path);

/* At the module's import, before anything is mapped: every mapping the libraries make from
 * now on is watched until it goes, whatever their number (a fault in one is mended: zeros
 * over the rest of it), and a fault mended outside any scope is raised through raise_fn.
 * Imported in the main thread, this also makes a function of the package the Python
 * handler of SIGBUS (signal.getsignal shows it), through which the main thread is told;
 * else that is done at the first scope the main thread enters. Returns -1 (MemoryError
 * set) when the page size cannot be known. */
int onnxz_fault_init(onnxz_fault_raise_fn raise_fn);

/* A library call that maps files or reads mapped bytes (a load, an open, a convert, a
 * tensor read, info, verify), in the thread that runs it: a fault mended in that thread
 * meanwhile is reported to the scope, which fails the call, instead of raised at a later
 * bytecode. */
typedef struct onnxz_fault_scope {
    void *slot;                      /* NULL: not watched (out of memory) */
    char path[ONNXZ_FAULT_PATH_MAX]; /* the cut file */
} onnxz_fault_scope;

/* Before the call, with the GIL: installs the handler (again, if someone replaced it since:
 * faulthandler.enable, say; faults that are not ours go to whatever was there) and opens
 * the scope. Out of memory: the scope reports nothing, faults are raised later. */
void onnxz_fault_enter(onnxz_fault_scope *s);
/* After the call, in the same thread: 1 when a fault was mended in the scope (s->path names
 * the file), else 0. */
int onnxz_fault_leave(onnxz_fault_scope *s);

/* Within a scope, before the call: the mappings the libraries make until the scope is
 * left are owner's (a reader's), for onnxz_fault_cut. */
void onnxz_fault_own(const void *owner);
/* 1 when a fault was mended in a live mapping of owner's (path names its file), else 0.
 * *seen: the count of cuts the caller last saw none of its own in (start at 0); unless it
 * moved, nothing is scanned. A mapping once cut stays cut until it is dropped. */
int onnxz_fault_cut(const void *owner, unsigned long *seen, char *path);

/* A mapping made outside the libraries (the Python layer's mmap of a plain .onnx) watched
 * from addr for len bytes: a fault in it is mended and reported to onnxz_fault_unwatch
 * only, whatever the thread. Installs the handler as onnxz_fault_enter. NULL when out of
 * memory (not watched). */
void *onnxz_fault_watch(const void *addr, size_t len, const char *name);
/* Before that mapping goes: 1 when a fault in it was mended, else 0. NULL: 0. */
int onnxz_fault_unwatch(void *token);

#endif
