/*
 * internal/zipbuild.h - the byte layout of the records onnxz writes (spec/onnxz-zip.md
 * Z-4..Z-24), as pure functions into a caller's buffer. Shared by the streaming writer
 * (zip_write.c) and the in-place editor (edit.c), so that both write exactly the same
 * bytes for the same entry at the same offset.
 */
#ifndef ONNXZ_INTERNAL_ZIPBUILD_H
#define ONNXZ_INTERNAL_ZIPBUILD_H

#include <stddef.h>
#include <stdint.h>

#include <onnxcore/status.h>

#include "zipentry.h"
#include "zipfmt.h"

/* The most bytes a local header takes: fixed part, name, zip64 record, padding of up to
 * alignment + 5 (Z-12). */
#define OZ_LOCAL_MAX(name_len, alignment) \
    ((size_t)OZ_LOCAL_SIZE + (size_t)(name_len) + 20u + (size_t)(alignment) + OZ_EXTRA_ALIGN_MIN)

/* The most bytes the end records take (zip64 end record, locator, end record), before the
 * comment. */
#define OZ_END_MAX ((size_t)OZ_ZIP64_EOCD_SIZE + OZ_ZIP64_LOCATOR_SIZE + OZ_EOCD_SIZE)

/* Version needed to extract (Z-40). */
uint16_t oz__version_needed(const oz__entry *e);

/* Writes the local header of e at e->lho (Z-4, Z-5, Z-11, Z-12, Z-21) into out, which has
 * room for OZ_LOCAL_MAX(e->name_len, alignment) bytes; STORED data is placed on a multiple
 * of alignment. Returns the header's length: the data starts at e->lho + that. */
size_t oz__build_local(uint8_t *out, const oz__entry *e, const uint8_t *name, uint32_t alignment);

/* Bytes of e's central header (Z-13, Z-22), and the header itself at p (returns the
 * position after it). */
uint64_t oz__central_len(const oz__entry *e);
uint8_t *oz__put_central(uint8_t *p, const oz__entry *e, const uint8_t *name);

/* Writes the end records for `count` entries and a central directory of cd_size bytes at
 * cd_off (zip64 ones exactly when Z-23 requires them), followed by comment_len bytes of
 * comment, into out (room for OZ_END_MAX + comment_len). Returns the bytes written. */
size_t oz__build_end(uint8_t *out, uint64_t count, uint64_t cd_size, uint64_t cd_off,
                     const uint8_t *comment, uint16_t comment_len);

/* Compresses n bytes at src (raw deflate, RFC 1951, zlib level -1..9) into a new buffer
 * (*out, *out_n; free it with free()). Out of memory: OC_ERR_NOMEM; a level zlib refuses:
 * OC_ERR_INVALID_ARG. */
oc_status oz__deflate(const uint8_t *src, uint64_t n, int level, uint8_t **out, uint64_t *out_n,
                      oc_error *err);

/* As oz_zip_writer_begin, for an entry stored DEFLATED (zlib's default level): each
 * oz_zip_writer_write compresses its bytes on the way to the file, and
 * oz_zip_writer_end patches CRC-32 and compressed size into the local header. Memory
 * use does not depend on size. A size whose compressed bound needs zip64: OC_ERR_LIMIT. */
struct oz_zip_writer;
oc_status oz__zip_writer_begin_deflated(struct oz_zip_writer *w, const char *name, uint64_t size,
                                        oc_error *err);

/* How a save writes through the ZIP writer: every byte written is counted in progress
 * (NULL: not counted), and no_sync leaves out the fsyncs of the file and its directory
 * (oc_serialize_options.no_sync). The counter is libonnxcore's internal one
 * (onnxcore_progress.h), so this is not public API. */
struct oz_zip_writer;
struct oc_progress;
/* oz_zip_writer_open, and with http an s3:// path written as a multipart upload
 * (oc_atomic_open_url). */
struct oc_http_options;
oc_status oz__zip_writer_open_url(const char *path, uint32_t alignment, int no_overwrite,
                                  const struct oc_http_options *http, struct oz_zip_writer **out,
                                  oc_error *err);
void oz__zip_writer_set_save(struct oz_zip_writer *w, struct oc_progress *progress, int no_sync);

#endif
