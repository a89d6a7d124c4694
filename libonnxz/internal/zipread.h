/*
 * internal/zipread.h - reader entry points for the library itself (not installed).
 */
#ifndef ONNXZ_INTERNAL_ZIPREAD_H
#define ONNXZ_INTERNAL_ZIPREAD_H

#include <stdint.h>

#include "onnxz/zip.h"
#include <stdbool.h>

#include "internal/source.h" /* libonnxcore/src: compiled into libonnxz as oz__source_* */

/* As oz_zip_reader_open for fd, the file at path already opened (read-only, non-blocking):
 * with the same shared locks. fd is duplicated, not taken; path names it in
 * messages. */
oc_status oz__zip_reader_open_file(int fd, const char *path, const oz_zip_reader_options *options,
                                   oz_zip_reader **out, oc_error *err);

/* As oz_zip_reader_open_fd (fd is duplicated, not taken; no lock is taken), taking only
 * the first `size` bytes of the file as the archive (what follows is not looked at): the
 * editor uses it to check that an interrupted edit's old archive is whole before it rolls
 * back to it (spec/onnxz.md A-56). A file shorter than size: OC_ERR_TRUNCATED. */
oc_status oz__zip_reader_open_fd_prefix(int fd, uint64_t size, const oz_zip_reader_options *options,
                                        oz_zip_reader **out, oc_error *err);

/* Opens a reader over src, whose first `size` bytes are the archive (UINT64_MAX: all of
 * them; a source shorter than size: OC_ERR_TRUNCATED). The reader takes its own reference
 * to src; every check and limit of oz_zip_reader_open applies. A source that has all its
 * bytes in memory (src->data) is read in place, any other through reads; STORED entries
 * are handed out through the source's map where it can (OC_SOURCE_MAP), else copied. This
 * is how a new kind of source (a remote object) gets a reader: nothing else changes. */
oc_status oz__zip_reader_open_source(oc_source *src, uint64_t size,
                                     const oz_zip_reader_options *options, oz_zip_reader **out,
                                     oc_error *err);

/* oz_zip_reader_find for a name of len bytes (not NUL-terminated): true and *index where
 * an entry has exactly those bytes. */
bool oz__zip_reader_find_n(const oz_zip_reader *r, const char *name, size_t len, uint64_t *index);

/* Bytes [from, from + n) of entry `index` (n > 0; the range inside the entry, else
 * OC_ERR_INVALID_ARG) passed to write in order, in pieces, holding a few chunks of it at a
 * time whatever the entry's size: a STORED entry's read from the source (from a URL one
 * request, streamed through); a DEFLATED entry's inflated from its start as its
 * compressed bytes are read, in windows of 1 MiB doubling to 16 MiB (from a URL one
 * request each, none after the one where the range is out), the
 * bytes before `from` thrown away and nothing inflated past the range, within no
 * max_inflated (memory does not grow with the entry). A range that is the whole entry is
 * checked as oz_zip_reader_read_to checks it (a DEFLATED one: Z-77 and its CRC; a STORED
 * one read from a source that cannot map: its CRC); a part is not (spec/onnxz-zip.md
 * Z-79): its CRC covers bytes not read. */
oc_status oz__zip_reader_read_part(const oz_zip_reader *r, uint64_t index, uint64_t from,
                                   uint64_t n, oc_write_fn write, void *ctx, oc_error *err);

/* The source the reader reads (the reader holds a reference; take one to keep it). */
oc_source *oz__zip_reader_source(const oz_zip_reader *r);
/* Advice to the source: every entry will be read, in about the order of the file (a
 * remote source then reads ahead in large windows instead of one request per entry),
 * but entry `except` (UINT64_MAX: none), read already (the model). */
void oz__zip_reader_will_read_all(const oz_zip_reader *r, uint64_t except);
/* Advice to a local source (a mapped archive): the data of every STORED entry but
 * `except` (UINT64_MAX: none) will be read soon, in file order; entries close together
 * make one range (oc_parse_options.prefetch). A remote source is left alone. */
void oz__zip_reader_prefetch(const oz_zip_reader *r, uint64_t except);
/* The same for every entry's local header alone (deferred local headers: an archive at a
 * URL), as a layout check reads them. */
void oz__zip_reader_will_read_locals(const oz_zip_reader *r);

#endif
