/*
 * internal/open.h - what oz_reader (reader.c) needs from open.c, and what the report of
 * info.c needs from an open reader.
 */
#ifndef ONNXZ_INTERNAL_OPEN_H
#define ONNXZ_INTERNAL_OPEN_H

#include <stdbool.h>

#include <onnxcore/external.h>
#include <onnxz/open.h>

/* t's n bytes, as fetch streams them (onnxcore/external.h), to write: more or fewer than
 * n is refused (OC_ERR_INCONSISTENT, OC_ERR_TRUNCATED). */
oc_status oz__stream_exact(const oc_tensor_fetch *fetch, const onnx_TensorProto *t, uint64_t n,
                           oc_write_fn write, void *ctx, oc_error *err);

/* The bytes fetch gives for t, into a new owned span (*out released first). */
oc_status oz__read_fetched(const oc_tensor_fetch *fetch, const onnx_TensorProto *t, oc_bytes *out,
                           oc_error *err);

/* The path or URL r was opened from, as given. */
struct oz_reader;
const char *oz__reader_name(const struct oz_reader *r);

/* Whether a read of t fetches its bytes from where they lie, each time (a URL's archive
 * entry, a data file of a URL's or an encrypted .onnx, a DEFLATED entry inflated anew),
 * rather than taking them from what r holds (a mapping, memory):
 * oz_reader_read_slice_into then reads straight into the caller's buffer (a DEFLATED
 * entry inflated as a stream up to the slice's last byte, Z-79, not whole into memory). */
bool oz__reader_fetches(const struct oz_reader *r, const onnx_TensorProto *t);

/* The n slices ss, all of one tensor whose size was checked (oz_reader_size), each into
 * its dsts[i] (oz_slice_size(ss[i]) bytes) as oz_reader_read_slice_into reads it; a
 * DEFLATED entry's inflated once for all of them, as a stream up to the last byte any
 * takes (Z-79), unless that would check all of the entry where none takes all of it. */
struct oz_slice;
oc_status oz__reader_slices_into(struct oz_reader *r, const struct oz_slice *const *ss,
                                 uint8_t *const *dsts, size_t n, oc_error *err);

/* The data files of the n tensors ts (r's, each once) of a URL's or an encrypted .onnx,
 * checked and opened together (oc_external_data_open): one source per data file, which
 * reads of several tensors share. *out NULL (and OC_OK) for the other forms. */
oc_status oz__reader_data_open(const struct oz_reader *r, const onnx_TensorProto *const *ts,
                               size_t n, oc_external_data **out, oc_error *err);

/* Where t's bytes can be read at offsets without the rest (a URL's or a local archive's
 * STORED entry, a data file of a URL's or an encrypted .onnx, from data when given, as
 * oz__reader_data_open opened it for t): *src (NULL: nowhere; the tensor is read whole)
 * and the offset of t's first byte in it. *files, when set, holds src: close it with
 * oc_external_data_close once the reads are done. *entry, when set (a STORED entry of a
 * URL's archive), names the entry, and *crc is its CRC-32 from the central directory,
 * which a read of all of it must check (spec/remote.md R-12, spec/onnxz-zip.md Z-79). */
struct oc_source;
oc_status oz__reader_ranged(const struct oz_reader *r, const onnx_TensorProto *t,
                            oc_external_data *data, struct oc_source **src, uint64_t *base,
                            oc_external_data **files, const char **entry, uint32_t *crc,
                            oc_error *err);

/* With a trusted key (spec/signing.md G-51): t's entry read whole and checked against the
 * signed manifest, unless it was already; OC_OK at once for every other reader and
 * tensor. What a read of part of an entry (a slice) does first. */
oc_status oz__reader_check_entry(struct oz_reader *r, const onnx_TensorProto *t, oc_error *err);

#endif
