/*
 * onnxz/slice.h - a part of a tensor read without the rest of it, as numpy and
 * safetensors index one: per dimension a range start:stop:step or one index
 * (experimental: docs/api.md).
 *
 *   oz_slice_range rs[2] = {{0, 128, 1, false}, OZ_SLICE_ALL};  // t[0:128, :]
 *   oz_slice *s = NULL;
 *   if (oz_slice_new(t, rs, 2, &s, &err) != OC_OK) ... err.message ...
 *   oc_bytes b = {0};
 *   if (oz_reader_read_slice(r, s, &b, &err) == OC_OK) ... oz_slice_dims(s), b.data ...
 *   oc_bytes_release(&b);
 *   oz_slice_free(s);
 *
 * A slice is planned as runs of contiguous bytes of the row-major tensor: the innermost
 * dimensions taken whole, and the first one outside them taken with step 1, make one run
 * long; each combination of the other dimensions' positions is one run. A slice along the
 * leading dimension is one run.
 */
#ifndef ONNXZ_SLICE_H
#define ONNXZ_SLICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <onnxz/export.h>
#include <onnxz/reader.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */

/* One dimension's part, as Python's slice(start, stop, step) with step > 0: start and
 * stop count from the end when negative, and are clamped to the dimension (stop INT64_MAX:
 * to its end); or, with `index`, the one position start (from the end when negative; it
 * must lie in the dimension), and the dimension is dropped from the result. */
typedef struct oz_slice_range {
    int64_t start, stop, step;
    bool index;
} oz_slice_range;

/* The whole dimension (Python's `:`). */
#define OZ_SLICE_ALL \
    { 0, INT64_MAX, 1, false }

/* A slice of one tensor, planned. */
typedef struct oz_slice oz_slice;

/* Plans the slice of t that ranges[0..count) give its first count dimensions (the others
 * are taken whole). t is checked first as oc_tensor_check_size checks its dims (W-40:
 * none negative, their product and byte size within 64 bits); the plan costs time in
 * t's rank only. Refused (OC_ERR_INVALID_ARG, naming the tensor and the dimension): more
 * ranges than dimensions, a step of 0 or less, an index outside its dimension.
 * OC_ERR_UNSUPPORTED: a type without a fixed size (STRING, UNDEFINED), and a sub-byte
 * type (INT4, UINT4, FLOAT4E2M1, INT2, UINT2) sliced where its runs do not start and end
 * on byte boundaries. t is kept by reference: it must outlive *out (a reader's, while the
 * reader is open). On failure *out is NULL. */
OZ_API oc_status oz_slice_new(const onnx_TensorProto *t, const oz_slice_range *ranges, size_t count,
                              oz_slice **out, oc_error *err);

/* Frees s; NULL is accepted. */
OZ_API void oz_slice_free(oz_slice *s);

/* The result's dimensions (the tensor's rank less one for each index; 0 for one
 * element): their count, and the array of them (borrowed from s). */
OZ_API size_t oz_slice_rank(const oz_slice *s);
OZ_API const int64_t *oz_slice_dims(const oz_slice *s);

/* The result's size in bytes, and the count of runs it is read as (0 for an empty
 * slice; 1 when it is one contiguous part of the tensor). */
OZ_API uint64_t oz_slice_size(const oz_slice *s);
OZ_API uint64_t oz_slice_runs(const oz_slice *s);

/* Run i of s (i < oz_slice_runs(s)), in the order of the result: its offset in the
 * tensor's bytes and its size. Costs time in the rank. */
OZ_API void oz_slice_run(const oz_slice *s, uint64_t i, uint64_t *at, uint64_t *size);

/* The slice s of its tensor (one of r's) into *out (released first): the tensor's byte
 * count checked first as oz_reader_size checks it; then, where the tensor's bytes lie in
 * an archive's STORED entry or in a URL's data file, each run read on its own (from a
 * URL one range request, adjacent runs together, the requests on the parallel connections
 * of oc_http_options.parallel: never the whole tensor); in a DEFLATED
 * entry, the entry inflated as a stream from its start to the slice's last byte, the
 * bytes outside the runs thrown away (memory: the slice and a few chunks, whatever the
 * tensor's size; from a URL in windows of 1 MiB doubling to 16 MiB, one request each,
 * none past the window that holds the slice's last byte); else the tensor read as
 * oz_reader_read reads it and the runs taken from it. One run of a mapping (a mapped
 * .onnx or archive) is a span of it, no copy; every other result is an owned buffer.
 * Checks (spec/onnxz-zip.md Z-79): a slice that is the whole tensor is checked as
 * oz_reader_read checks it (a DEFLATED entry's or a downloaded STORED entry's CRC-32); a
 * smaller one is not checked against its entry's CRC, which needs all of it (verify
 * does, once). Threads: as oz_reader_read. */
OZ_API oc_status oz_reader_read_slice(oz_reader *r, const oz_slice *s, oc_bytes *out,
                                      oc_error *err);

/* As oz_reader_read_slice, into the caller's buffer of cap bytes: a buffer smaller than
 * oz_slice_size(s) is refused (OC_ERR_INVALID_ARG) before anything is read. A slice of a
 * whole tensor reads the tensor into buf. */
OZ_API oc_status oz_reader_read_slice_into(oz_reader *r, const oz_slice *s, void *buf, uint64_t cap,
                                           oc_error *err);

#endif

#ifdef __cplusplus
}
#endif

#endif
