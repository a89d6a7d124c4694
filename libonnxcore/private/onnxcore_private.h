/*
 * onnxcore_private.h - what the project's own tool and Python extension use of libonnxcore
 * beyond the public API: the crash-safe file writer, the directory of a path, the
 * observer of file mappings, the test points; and OC_PRIVATE, the mark of everything
 * libonnxcore.so exports under its private symbol version ONNXCORE_PRIVATE
 * (libonnxcore/libonnxcore.map, ARCHITECTURE.md), as glibc's GLIBC_PRIVATE. No promise
 * holds for these between releases: the libraries, the tool and the extension are built
 * and shipped together. Not installed. The tool reaches this folder through the
 * onnxcore_private target and nothing of internal/ (scripts/layers.py checks); the
 * libraries' internal headers build on it. Every name marked OC_PRIVATE is listed in the
 * map's private node, and the reverse (test arch.symbols).
 */
#ifndef ONNXCORE_PRIVATE_H
#define ONNXCORE_PRIVATE_H

#ifndef OC_PRIVATE /* tests/arch defines it to find the marked declarations */
#if defined(__GNUC__) || defined(__clang__)
#define OC_PRIVATE __attribute__((visibility("default")))
#else
#define OC_PRIVATE
#endif
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <onnxcore/bytes.h>
#include <onnxcore/status.h>

/* ---- the crash-safe file writer ------------------------------------------------------
 *
 * Every file onnxz writes goes through oc_atomic_file: the bytes go to a temporary file
 * in the target's directory (`.<name>.tmp-<hex>`), which is fsynced and renamed over the
 * target; a failure at any point leaves the previous target untouched (spec W-30).
 * While it exists, the temporary file is registered for oc_cleanup_run (cleanup.h).
 * Not thread-safe per object; distinct objects may be used from distinct threads. A file
 * of more than 64 MiB gets a writeback thread of its own until commit or abort. */

struct oc_cleanup_entry;
struct oc_progress;
struct oc__writeback;
struct oc__atomic_remote;

/* A file written under a temporary name beside its target and renamed into place. */
typedef struct oc_atomic_file {
    int fd;
    bool no_overwrite;
    char *path;
    char *tmp_path;
    uint64_t written;                 /* bytes appended so far */
    uint64_t flushed;                 /* bytes whose writeback to disk has been asked for */
    struct oc__writeback *writeback;  /* the thread that starts it (fileio.c), or NULL */
    int writeback_failed;             /* no thread could start: writeback inline */
    int no_sync;                      /* set after open: no fsync of the file nor of its
                                       * directory (oc_serialize_options.no_sync) */
    struct oc_progress *progress;     /* NULL after oc_atomic_open (a save sets it) */
    struct oc_cleanup_entry *cleanup; /* tmp_path in the signal cleanup (cleanup.h) */
    int through;                      /* written through (S-41): fd is the output itself */
    /* An object written to a store instead of a file (oc_atomic_open_url): its sink's
     * calls (internal/onnxcore_atomic.h) and their context; NULL for a file. */
    const struct oc__atomic_remote *remote;
    void *remote_ctx;
} oc_atomic_file;

/* Creates the temporary file for path. With no_overwrite, an existing path fails now with
 * OC_ERR_EXISTS (and again at commit if one appeared meanwhile).
 * spec/security.md S-41: only a regular file (or a name not there yet) is replaced. The
 * path "-" is standard output; a FIFO or a character device (named, or the target of a
 * symbolic link named) is written through, opened as it is, no_overwrite or not: nothing
 * is renamed, and what was written before a failure stays written. Anything else that
 * is not a regular file (a directory, a block device, a socket) is refused. */
OC_PRIVATE oc_status oc_atomic_open(oc_atomic_file *af, const char *path, bool no_overwrite,
                                    oc_error *err);
/* What an output is, for what may stand in its place instead of a regular file (S-41). */
typedef enum oc_atomic_use {
    OC_ATOMIC_STREAM,   /* written in order (oc_atomic_open): "-", a FIFO, a character device
                         * are written through */
    OC_ATOMIC_SEEKABLE, /* patched after it is written (an archive): a FIFO is refused before
                         * it is opened (which would wait for a reader), and whatever cannot
                         * seek once opened ("-" on a pipe, a terminal) */
    OC_ATOMIC_NAMED,    /* named by another file (a data file, by its model): a regular file
                         * only; "-" and anything else refused */
} oc_atomic_use;
/* oc_atomic_open for an output of that use. */
OC_PRIVATE oc_status oc_atomic_open_for(oc_atomic_file *af, const char *path, bool no_overwrite,
                                        oc_atomic_use use, oc_error *err);
/* Tells af that the n bytes at `at`, written already or about to be, will be patched with
 * oc_atomic_pwrite: an upload keeps the part holding them back until then (a file needs
 * nothing). One range at a time. */
OC_PRIVATE void oc_atomic_hold(oc_atomic_file *af, uint64_t at, uint64_t n);
/* 1 when oc_atomic_open(path) would write path through (S-41: "-", or an existing name
 * that is not a regular file, a directory, nor a link to one or to nothing), which needs
 * no leave to replace: what is there is not replaced. */
OC_PRIVATE int oc_atomic_through(const char *path);
/* An oc_write_fn appending to the temporary file; ctx is the oc_atomic_file. */
OC_PRIVATE oc_status oc_atomic_write(void *ctx, const void *data, uint64_t size, oc_error *err);
/* Appends a span's bytes. A span in a file mapping whose descriptor its owner kept
 * (oc_map_file keeps one for mappings of 1 MiB or more, up to 64 at once) is copied file
 * to file by the kernel (copy_file_range): none of its pages enter this process, which
 * matters when the mapping's page cache is made of small pages. Any other span, or a
 * file pair the kernel cannot copy between, goes through oc_bytes_write. Progress and
 * writeback are counted as for oc_atomic_write. */
OC_PRIVATE oc_status oc_atomic_write_bytes(oc_atomic_file *af, const oc_bytes *span, oc_error *err);
/* fsync, rename over the target (or fail with OC_ERR_EXISTS without overwrite), fsync the
 * directory (no_sync: only the rename). On failure the temporary file is removed. */
OC_PRIVATE oc_status oc_atomic_commit(oc_atomic_file *af, oc_error *err);
/* Removes the temporary file and frees the object's memory. Safe after a commit (then it
 * does nothing) and more than once. */
OC_PRIVATE void oc_atomic_abort(oc_atomic_file *af);

/* ---- paths: the one definition of "the directory of a path" -------------------------- */

/* The directory part of path, malloc'd: "." when path has no '/', "/" for "/x", else
 * everything before the last '/' ("a/b/c" -> "a/b"). For an http(s) URL, the same of its
 * path, without query or fragment ("https://h/m/a.onnx?s=1" -> "https://h/m"; no path:
 * "https://h"). NULL when out of memory. */
OC_PRIVATE char *oc__path_dir(const char *path);

/* The part of path after its last '/' (path itself when there is none); points into path. */
OC_PRIVATE const char *oc__path_base(const char *path);

/* ---- file mappings ------------------------------------------------------------------- */

/* Who is told of each mapping a file source makes and drops: a client's SIGBUS handler
 * (the Python package's, spec/security.md S-42) keeps the ranges, so that it knows a fault
 * in a file cut under its mapping from any other without asking the kernel. on_map runs
 * right after a file is mapped (addr and len: the mapping; name: the file, for messages),
 * in the thread that maps it, possibly in several threads at once; what it returns is
 * handed to on_unmap, which runs right before that mapping goes. Neither may call into
 * the library. A mapping made while no observer was set is never reported; set it before
 * mapping anything, and never change it after. */
typedef struct oc_map_observer {
    void *(*on_map)(const void *addr, size_t len, const char *name);
    void (*on_unmap)(void *token);
} oc_map_observer;

/* Sets the observer of every file mapping from now on (NULL: none, the default); it must
 * outlive every mapping it saw. Thread-safe. */
OC_PRIVATE void oc__map_observe(const oc_map_observer *observer);

/* ---- test points ---------------------------------------------------------------------
 *
 * Named points where a test can stop the process, in test builds only. Built with
 * ONNXZ_TEST_POINTS (the CMake option of the same name, which the test suite turns on;
 * off by default), oc__test_point("name") raises SIGSTOP when the environment variable
 * ONNXZ_TEST_STOP is "name" (at its first pass) or "name:N" (at its Nth pass). A test
 * starts a command with it, waits for the stop (waitpid WUNTRACED), then sends signals,
 * runs another process, and continues it with SIGCONT: interleavings are forced, never
 * timed. The variable can only stop the process that has it (spec/security.md,
 * "Signals"). Without the option every call compiles to nothing: a release library
 * neither reads the variable nor holds its name. */
#ifdef ONNXZ_TEST_POINTS
OC_PRIVATE void oc__test_point(const char *name);
#else
#define oc__test_point(name) ((void)(name))
#endif

#endif
