/*
 * internal/source_file.h - the file sources (source_file.c): a file mapped whole, or
 * read with pread; the interface is internal/source.h.
 */
#ifndef ONNXCORE_INTERNAL_SOURCE_FILE_H
#define ONNXCORE_INTERNAL_SOURCE_FILE_H

#include "onnxcore_private.h"

#include <stdbool.h>

#include "internal/source.h"
#include "onnxcore/file.h"
#include "onnxcore/options.h"

/* How a file source is opened. */
typedef enum oc_file_source_kind {
    OC_FILE_MAPPED = 0,         /* mapped read-only (read where mapping is impossible) */
    OC_FILE_PREAD = 1,          /* read with pread; nothing is mapped */
    OC_FILE_MAPPED_PREFETCH = 2 /* mapped, and the kernel asked to read it all ahead */
} oc_file_source_kind;

/* How a load given opts (NULL: the defaults) opens its files: use_pread, or mapped, with
 * prefetch only where the tensors stay in the mapping (no_copy). */
oc_file_source_kind oc__file_kind(const struct oc_parse_options *opts);

/* The regular file at path (opened O_NONBLOCK: a FIFO never hangs), or the open
 * descriptor fd (path NULL; fd is not closed and name is used in messages). Not a
 * regular file: OC_ERR_IO; missing: OC_ERR_NOT_FOUND. A mapped source of 1 MiB or more
 * keeps a duplicate of the descriptor (at most 64 sources at once) and gains
 * OC_SOURCE_BYPASS; keep_fd keeps one whatever the size (locks on the open file
 * description last as long as the source). A pread source always keeps one. */
OC_PRIVATE oc_status oc_source_file(const char *path, int fd, const char *name,
                                    oc_file_source_kind kind, int keep_fd, oc_source **out,
                                    oc_error *err);

/* For a span sharing a mapped file source (internal/source.h) whose descriptor was kept,
 * while that descriptor still names the mapped file: sets *fd and *offset (the file
 * offset of the span's first byte) and returns true; else false. Implemented by the file
 * source (source_file.c). */
OC_PRIVATE bool oc__bytes_file_source(const oc_bytes *span, int *fd, uint64_t *offset);

/* Reads the first bytes of the file open at fd, from where it stands: n, or fewer (*got)
 * when it ends first; an interrupted read is retried. A failure names path. For the
 * tests of what a file is by its first bytes (encrypted, an archive, a model). */
OC_PRIVATE oc_status oc__read_head(int fd, const char *path, void *buf, size_t n, size_t *got,
                                   oc_error *err);

/* As oc_map_fd, and the mapping keeps a duplicate of fd until it goes, whatever its size:
 * locks held on fd's open file description last exactly as long as the mapping (the
 * ZIP reader's shared lock, spec/onnxz.md A-58). */
OC_PRIVATE oc_status oc_map_fd_keep(int fd, const char *name, oc_mapped *out, oc_error *err);

#endif
