/*
 * onnxcore/file.h - mapping files for reading, and crash-safe replacement for writing.
 *
 * Every file onnxz writes goes through oc_atomic_file: the bytes go to a temporary file
 * in the target's directory (`.<name>.tmp-<hex>`), which is fsynced and renamed over the
 * target; a failure at any point leaves the previous target untouched (spec W-30).
 * While it exists, the temporary file is registered for oc_cleanup_run (cleanup.h).
 * Not thread-safe per object; distinct objects may be used from distinct threads.
 */
#ifndef ONNXCORE_FILE_H
#define ONNXCORE_FILE_H

#include "export.h"

#include <stdint.h>

#include "bytes.h"
#include "codec.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A whole file, read-only, kept alive by `owner`: the caller holds one reference and drops
 * it with oc_owner_unref; spans that share the mapping take their own. */
typedef struct oc_mapped {
    const uint8_t *data;
    uint64_t size;
    oc_owner *owner;
} oc_mapped;

/* Maps path read-only (or reads it, where mapping is impossible). Not a regular file:
 * OC_ERR_IO; missing: OC_ERR_NOT_FOUND. An empty file gives data NULL, size 0.
 * A mapping of 1 MiB or more also keeps a duplicate of its descriptor (at most 64
 * mappings at once), closed with the mapping, so that bytes copied out of it can be read
 * from the file instead of the pages (spec W-31). A duplicate shares the open file
 * description: locks taken on the caller's descriptor (flock) last until the mapping
 * goes. */
OC_API oc_status oc_map_file(const char *path, oc_mapped *out, oc_error *err);
/* The same for an open descriptor (not closed; name is used in messages). */
OC_API oc_status oc_map_fd(int fd, const char *name, oc_mapped *out, oc_error *err);
/* As oc_map_fd, and the mapping keeps a duplicate of fd until it goes, whatever its size:
 * locks held on fd's open file description last exactly as long as the mapping (the
 * archive reader's shared lock, spec/onnxz.md A-58). */
OC_API oc_status oc_map_fd_keep(int fd, const char *name, oc_mapped *out, oc_error *err);

/* A file written under a temporary name beside its target and renamed into place. */
/* The byte counter of a save (oc_serialize_options.progress), internal to the libraries:
 * callers leave oc_atomic_file.progress NULL. */
typedef struct oc_progress oc_progress;

typedef struct oc_atomic_file {
    int fd;
    int overwrite;
    char *path;
    char *tmp_path;
    uint64_t written;                 /* bytes appended so far */
    uint64_t flushed;                 /* bytes whose writeback to disk has been started */
    oc_progress *progress;            /* NULL after oc_atomic_open (the libraries set it) */
    struct oc_cleanup_entry *cleanup; /* tmp_path in the signal cleanup (cleanup.h) */
} oc_atomic_file;

/* Creates the temporary file for path. Without overwrite, an existing path fails now with
 * OC_ERR_EXISTS (and again at commit if one appeared meanwhile). */
OC_API oc_status oc_atomic_open(oc_atomic_file *af, const char *path, int overwrite, oc_error *err);
/* An oc_write_fn appending to the temporary file; ctx is the oc_atomic_file. */
OC_API oc_status oc_atomic_write(void *ctx, const void *data, uint64_t size, oc_error *err);
/* Appends a span's bytes. A span in a file mapping whose descriptor its owner kept
 * (oc_map_file keeps one for mappings of 1 MiB or more, up to 64 at once) is copied file
 * to file by the kernel (copy_file_range): none of its pages enter this process, which
 * matters when the mapping's page cache is made of small pages. Any other span, or a
 * file pair the kernel cannot copy between, goes through oc_bytes_write. Progress and
 * writeback are counted as for oc_atomic_write. */
OC_API oc_status oc_atomic_write_bytes(oc_atomic_file *af, const oc_bytes *span, oc_error *err);
/* fsync, rename over the target (or fail with OC_ERR_EXISTS without overwrite), fsync the
 * directory. On failure the temporary file is removed. */
OC_API oc_status oc_atomic_commit(oc_atomic_file *af, oc_error *err);
/* Removes the temporary file and frees the object's memory. Safe after a commit (then it
 * does nothing) and more than once. */
OC_API void oc_atomic_abort(oc_atomic_file *af);

/* Writes size bytes at offset `at` of the temporary file (to patch what was written). */
OC_API oc_status oc_atomic_pwrite(oc_atomic_file *af, const void *data, uint64_t size, uint64_t at,
                                  oc_error *err);

#ifdef __cplusplus
}
#endif

#endif
