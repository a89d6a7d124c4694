/*
 * tests/fuzz/fuzz_common.h - invariants shared by the libFuzzer targets of libonnxcore and
 * libonnxz.
 *
 * Every target is one file with LLVMFuzzerTestOneInput; it is linked either with libFuzzer
 * (clang, -fsanitize=fuzzer) or with replay.c (any compiler), which feeds it files. A
 * violated invariant prints what went wrong and calls abort(), so libFuzzer saves the input
 * and a replay test fails.
 *
 * The invariants (the library's contracts in codec.h, status.h and spec/onnx-wire.md):
 *  - a failed call fills the error record with the same status, a one-line message, and
 *    for decoding the offset of a byte inside the input (W-17);
 *  - a decoded message encodes to exactly oc_encoded_size bytes, the same through a sink
 *    as into memory; decoding that encoding succeeds and re-encodes to the same bytes
 *    (encoding is a fixed point after one pass); a deep copy encodes the same;
 *  - the tensor walk visits spans that are well formed: data set iff size > 0, owned
 *    buffers 64-byte aligned, shared spans with a live owner, borrowed spans only where
 *    the options allow them and inside the buffer they borrow from.
 */
#ifndef ONNXZ_FUZZ_COMMON_H
#define ONNXZ_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <onnxcore/onnxcore.h>

#if defined(__GNUC__)
#define FUZZ_NORETURN     __attribute__((noreturn))
#define FUZZ_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FUZZ_NORETURN
#define FUZZ_PRINTF(f, a)
#endif

/* Called by fuzz_fail before it aborts (a target's cleanup), when set. */
extern void (*fuzz_on_fail)(void);

/* Prints "fuzz invariant violated at FILE:LINE: COND: message" and aborts. */
FUZZ_NORETURN void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
    FUZZ_PRINTF(4, 5);

#define FUZZ_CHECK(cond, ...)                                           \
    do {                                                                \
        if (!(cond)) fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
    } while (0)

/* An encoding (free data with free()). */
typedef struct fuzz_buf {
    uint8_t *data;
    uint64_t size;
} fuzz_buf;

/* Checks the error record of a call that returned st != OC_OK: same code, a non-empty
 * one-line message. With input_size != UINT64_MAX (decoding) the offset must lie inside
 * the input and sys_errno must be 0. */
void fuzz_check_error(oc_status st, const oc_error *err, uint64_t input_size);

/* The statuses decoding may return for bad bytes (W-17), and for memory. */
int fuzz_is_decode_status(oc_status st);

/* What the tensor walk accepts. */
typedef struct fuzz_span_rules {
    int allow_borrowed;     /* BORROWED spans may appear ... */
    const uint8_t *lo, *hi; /* ... but only inside [lo, hi) when lo is set */
    int allow_shared;       /* SHARED spans may appear */
    uint64_t tensors;       /* out: tensors visited */
    uint64_t checksum;      /* out: a sum over every payload byte (reads them all) */
} fuzz_span_rules;

/* Walks msg with oc_msg_visit_tensors and checks every raw_data span against the rules. */
void fuzz_check_tensors(const oc_msgdesc *desc, void *msg, fuzz_span_rules *rules);

/* Encodes msg into memory and checks it against oc_encoded_size and against a streaming
 * oc_encode (whole, and with a sink that fails part-way, which must stop the encode with
 * the sink's error). Must succeed for any decoded message. */
fuzz_buf fuzz_encode(const oc_msgdesc *desc, const void *msg);

/* The round trip of a successfully decoded msg (see the top of this file): decodes its
 * encoding again with opts, re-encodes, deep-copies, walks the tensors. Returns the
 * encoding (caller frees), which every other view of the same input must reproduce. */
fuzz_buf fuzz_check_roundtrip(const oc_msgdesc *desc, void *msg, const oc_parse_options *opts,
                              const fuzz_span_rules *rules);

/* Decodes data as desc with opts into a fresh arena and, when that succeeds, checks the
 * round trip; when it fails, checks the error record and that the partial message can be
 * walked and encoded. Returns the status; on success *enc receives the encoding (else
 * zeroed), and *err_out the error record. */
oc_status fuzz_decode_and_check(const oc_msgdesc *desc, const uint8_t *data, size_t size,
                                const oc_parse_options *opts, fuzz_buf *enc, oc_error *err_out);

/* Protobuf's concatenation rule (W-11): decoding data[0, split) and then data[split, size)
 * into the same message equals decoding the whole. When both parts decode, the whole must
 * decode too (whole_st) and encode to whole_enc. */
void fuzz_check_merge(const oc_msgdesc *desc, const uint8_t *data, size_t size, size_t split,
                      oc_status whole_st, const fuzz_buf *whole_enc);

/* Both buffers hold the same bytes; otherwise reports the first difference and aborts. */
void fuzz_check_same(const char *what, const fuzz_buf *a, const fuzz_buf *b);

/* FNV-1a over the input: a stable way to pick option variants without spending bytes. */
uint64_t fuzz_hash(const uint8_t *data, size_t size);

/* CRC-32 (ISO-HDLC, zlib's crc32), our own: continue from crc (0 to start). */
uint32_t fuzz_crc32(uint32_t crc, const uint8_t *data, uint64_t size);

/* A directory of this process's own, for targets whose API takes paths: made on the first
 * call as DIR/onnxz-fuzz-TAG-PID-XXXXXX, DIR being $TMPDIR, else /dev/shm (no disk
 * flushes) when it is a writable directory, else /tmp. It holds files only; it is removed
 * at exit and by fuzz_fail (fuzz_on_fail, unless a target set its own), and directories of
 * this tag left by processes that died are removed on the way. */
const char *fuzz_scratch_dir(const char *tag);

/* Writes size bytes to path (created or truncated), or fails the run. */
void fuzz_write_file(const char *path, const uint8_t *data, size_t size);

/* Removes a tensor's external-data keys that E-1 defines (location, offset, length,
 * checksum, basepath), keeping any others in their order: what a load leaves of them. */
void fuzz_drop_external_keys(onnx_TensorProto *t);

/* The first tensor of msg, in oc_msg_visit_tensors order, named exactly name[0..size), or NULL. */
const onnx_TensorProto *fuzz_first_named(const oc_msgdesc *desc, void *msg, const void *name,
                                         uint64_t size);

#endif
