/*
 * onnxcore_atomic.h - crash-safe replacement of files, shared by libonnxcore, libonnxz and
 * the tool without being public API. Not installed; a PRIVATE include directory, as
 * onnxcore_shared.h.
 *
 * Every file onnxz writes goes through oc_atomic_file: the bytes go to a temporary file
 * in the target's directory (`.<name>.tmp-<hex>`), which is fsynced and renamed over the
 * target; a failure at any point leaves the previous target untouched (spec W-30).
 * While it exists, the temporary file is registered for oc_cleanup_run (cleanup.h).
 * Not thread-safe per object; distinct objects may be used from distinct threads. A file
 * of more than 64 MiB gets a writeback thread of its own until commit or abort.
 *
 * libonnxcore.so does not export these: libonnxz compiles the same file (fileio.c) under
 * its own hidden names oz__atomic_* (libonnxz/CMakeLists.txt), as it does progress.c.
 * oc_atomic_write_bytes (fileio_bytes.c), which reads the byte sources, is libonnxcore's
 * only; the tool and the tests reach it through the static library.
 */
#ifndef ONNXCORE_ATOMIC_H
#define ONNXCORE_ATOMIC_H

#include "internal/private.h"

#include <stdint.h>

#include <onnxcore/bytes.h>
#include <onnxcore/status.h>

#include "internal/onnxcore_progress.h"

struct oc_cleanup_entry;

/* A file written under a temporary name beside its target and renamed into place. */
typedef struct oc_atomic_file {
    int fd;
    int overwrite;
    char *path;
    char *tmp_path;
    uint64_t written;                 /* bytes appended so far */
    uint64_t flushed;                 /* bytes whose writeback to disk has been asked for */
    struct oc__writeback *writeback;  /* the thread that starts it (fileio.c), or NULL */
    int writeback_failed;             /* no thread could start: writeback inline */
    int no_sync;                      /* set after open: no fsync of the file nor of its
                                       * directory (oc_serialize_options.no_sync) */
    oc_progress *progress;            /* NULL after oc_atomic_open (a save sets it) */
    struct oc_cleanup_entry *cleanup; /* tmp_path in the signal cleanup (cleanup.h) */
    int through;                      /* written through (S-41): fd is the output itself */
} oc_atomic_file;

/* Creates the temporary file for path. Without overwrite, an existing path fails now with
 * OC_ERR_EXISTS (and again at commit if one appeared meanwhile).
 * spec/security.md S-41: only a regular file (or a name not there yet) is replaced. The
 * path "-" is standard output; a FIFO or a character device (named, or the target of a
 * symbolic link named) is written through, opened as it is, `overwrite` or not: nothing
 * is renamed, and what was written before a failure stays written. Anything else that
 * is not a regular file (a directory, a block device, a socket) is refused. */
OC_PRIVATE oc_status oc_atomic_open(oc_atomic_file *af, const char *path, int overwrite,
                                    oc_error *err);
/* 1 when oc_atomic_open(path) would write path through (S-41: "-", or an existing name
 * that is not a regular file, a directory, nor a link to one or to nothing), which needs
 * no `overwrite`: what is there is not replaced. */
OC_PRIVATE int oc_atomic_through(const char *path);
/* An oc_write_fn appending to the temporary file; ctx is the oc_atomic_file. */
OC_PRIVATE oc_status oc_atomic_write(void *ctx, const void *data, uint64_t size, oc_error *err);
/* Appends a span's bytes. A span in a file mapping whose descriptor its owner kept
 * (oc_map_file keeps one for mappings of 1 MiB or more, up to 64 at once) is copied file
 * to file by the kernel (copy_file_range): none of its pages enter this process, which
 * matters when the mapping's page cache is made of small pages. Any other span, or a
 * file pair the kernel cannot copy between, goes through oc_bytes_write. Progress and
 * writeback are counted as for oc_atomic_write. libonnxcore only (see above). */
OC_PRIVATE oc_status oc_atomic_write_bytes(oc_atomic_file *af, const oc_bytes *span, oc_error *err);
/* fsync, rename over the target (or fail with OC_ERR_EXISTS without overwrite), fsync the
 * directory (no_sync: only the rename). On failure the temporary file is removed. */
OC_PRIVATE oc_status oc_atomic_commit(oc_atomic_file *af, oc_error *err);
/* Removes the temporary file and frees the object's memory. Safe after a commit (then it
 * does nothing) and more than once. */
OC_PRIVATE void oc_atomic_abort(oc_atomic_file *af);

/* Writes size bytes at offset `at` of the temporary file (to patch what was written). */
OC_PRIVATE oc_status oc_atomic_pwrite(oc_atomic_file *af, const void *data, uint64_t size,
                                      uint64_t at, oc_error *err);

/* Called by fileio.c and fileio_bytes.c only: counts n bytes appended by either. */
OC_PRIVATE void oc__atomic_appended(oc_atomic_file *af, uint64_t n);

#endif
