/*
 * internal/bytes.h - span operations only the library needs.
 */
#ifndef ONNXCORE_INTERNAL_BYTES_H
#define ONNXCORE_INTERNAL_BYTES_H

#include "onnxcore/bytes.h"

/* Makes the span own a new buffer of size bytes whose contents the caller fills before
 * anyone reads them (the decoder copies into it, possibly from other threads). */
oc_status oc__bytes_set_uninit(oc_bytes *span, uint64_t size, uint8_t **out);

/* Makes the span own buffer (from posix_memalign or oc_bytes_alloc_buffer), size bytes. */
void oc__bytes_adopt(oc_bytes *span, uint8_t *buffer, uint64_t size);

/* Marks the owner's storage as a read-only mapping of a file, whose pages may be dropped
 * from the process once consumed (oc_bytes_write). base is where the file's offset 0 is
 * mapped; fd >= 0 is a descriptor of the file that the storage keeps open (closed by the
 * owner's release), from which the kernel can copy its bytes (oc_atomic_write_bytes), or
 * -1. Only fileio.c sets it, before the owner is shared. */
void oc__owner_set_file_backed(oc_owner *owner, const void *base, uint64_t size, int fd);

/* For [p, p + n) inside a file mapping whose descriptor its owner kept, while that
 * descriptor still names the mapped file: sets *fd and *offset (the file offset of p) and
 * returns true; else (owner NULL, not such a mapping, a range outside it) false. */
bool oc__owner_file_offset(const oc_owner *owner, const void *p, uint64_t n, int *fd,
                           uint64_t *offset);

/* The same for the first byte of a span that shares such a mapping. */
bool oc__bytes_file_source(const oc_bytes *span, int *fd, uint64_t *offset);

/* Drops the whole pages inside [data, data + size) of a read-only file mapping from the
 * process (they are read again from the page cache if touched). Lives in fileio.c. */
void oc__file_pages_done(const void *data, uint64_t size);

#endif
