/*
 * onnxz/read_many.h - many tensors (or slices of them) of an open reader read into buffers
 * the caller owns, in parallel, without going through a mapping: what a loader into pinned
 * or device-staging memory needs (experimental: docs/api.md).
 *
 *   oz_read_request q[2] = {
 *       {.tensor = oz_reader_find(r, "w1", 2), .dst = buf1, .size = n1},
 *       {.slice = s, .dst = buf2, .size = oz_slice_size(s)},
 *   };
 *   oz_read_many_options o = OZ_READ_MANY_OPTIONS_INIT;
 *   o.num_threads = 2;
 *   if (oz_reader_read_many(r, q, 2, &o, &err) != OC_OK) ... err.message ...
 *
 * Where the bytes come from, by the form r was opened in:
 *   a local archive, .onnx, data files   pread from the descriptors the reader opened (the
 *                                        files it opened, L-2, whatever is at their paths
 *                                        now), in chunks of 4 MiB shared by the threads: two
 *                                        threads share one large tensor. Files under 1 MiB,
 *                                        or past the 64 descriptors the library keeps, are
 *                                        copied from their mapping instead;
 *   typed fields, an encrypted file      the bytes oz_reader_read gives (converted,
 *                                        decrypted), copied by the threads;
 *   a DEFLATED entry                     inflated as a stream straight into the buffers,
 *                                        on the calling thread, up to the last byte a
 *                                        request takes (spec/onnxz-zip.md Z-79): memory
 *                                        in proportion to the slice, not the tensor; the
 *                                        requests of one entry share one pass, unless it
 *                                        would take all of the entry (whose CRC it would
 *                                        check) where none of them does;
 *   a URL                                every run of every request read at once: runs
 *                                        that touch in the object or data file one range
 *                                        request, cut into 4 MiB ones fetched on the
 *                                        oc_http_options.parallel connections; an archive
 *                                        entry's local header read first (one small
 *                                        request each, once); a whole STORED entry checked
 *                                        against its CRC-32 (spec/remote.md R-12), a part
 *                                        of one not (spec/onnxz-zip.md Z-79).
 */
#ifndef ONNXZ_READ_MANY_H
#define ONNXZ_READ_MANY_H

#include <stddef.h>
#include <stdint.h>

#include <onnxz/export.h>
#include <onnxz/reader.h>
#include <onnxz/slice.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */

/* One read: the whole tensor `tensor` (one of the reader's, oz_reader_find), or the slice
 * `slice` of one of them (exactly one of the two is set), into dst, a buffer of exactly
 * size bytes: the tensor's (oz_reader_size) or the slice's (oz_slice_size). The buffers of
 * a call must not overlap. */
typedef struct oz_read_request {
    const onnx_TensorProto *tensor;
    const oz_slice *slice;
    void *dst;
    uint64_t size;
} oz_read_request;

/* Options grow at their end: fill them with OZ_READ_MANY_OPTIONS_INIT or
 * oz_read_many_options_init (onnxcore/options.h, "Extending"). */
typedef struct oz_read_many_options {
    size_t size; /* sizeof(oz_read_many_options), set by the initialisers */
    /* Threads that read, the calling thread included: 0 or 1 the calling thread alone;
     * < 0 one per online core (at most 64). A URL's reads use the connections of its
     * oc_http_options.parallel instead. */
    int num_threads;
    /* Polled on the calling thread about every 100 ms while the reads run (never on the
     * other threads): nonzero stops them (those running finish their chunk) and the call
     * fails with OC_ERR_CANCELLED; the buffers then hold a part of the bytes. A URL's reads
     * poll the reader's oc_http_options.cancel instead. NULL: never cancelled. */
    int (*cancel)(void *ctx);
    void *cancel_ctx;
} oz_read_many_options;

#define OZ_READ_MANY_OPTIONS_INIT \
    { .size = sizeof(oz_read_many_options), .num_threads = 1, .cancel = NULL, .cancel_ctx = NULL }

/* Fills *opts with the defaults (as OZ_READ_MANY_OPTIONS_INIT). */
OZ_API void oz_read_many_options_init(oz_read_many_options *opts);

/* Reads each of the n requests into its buffer: afterwards each holds the bytes
 * oz_reader_read (or oz_reader_read_slice) gives. Every request is checked before a byte
 * is read into any buffer: a missing tensor or buffer, both or neither of tensor and slice,
 * a size other than the bytes it reads (OC_ERR_INVALID_ARG), a tensor whose bytes break
 * W-40, one in a data file skip_data_files left unopened. A failure (a read, a file cut
 * short since it was opened: OC_ERR_TRUNCATED, a cancel) names the tensor and the file;
 * the buffers then hold a part of the bytes. opts may be NULL (the defaults). Threads: as
 * oz_reader_read; the call starts and joins its own. */
OZ_API oc_status oz_reader_read_many(oz_reader *r, const oz_read_request *reqs, size_t n,
                                     const oz_read_many_options *opts, oc_error *err);

#endif

#ifdef __cplusplus
}
#endif

#endif
