/*
 * tests/fuzz/fuzz_decode_any.c - any of the 31 ONNX message types.
 *
 * The first byte picks the type (modulo the number of messages in schema.def, in
 * ONNX_MESSAGES order); the rest is decoded as that message with the default options and
 * checked as in fuzz_decode_model. When the last byte is odd, a second decode with
 * no_copy, raw_data_threshold 0 and 2 threads must agree with the first. Decoding the
 * body in two parts into one message (split where a hash of the input says) must equal
 * decoding it whole, as protobuf's concatenation rule says (W-11).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_X_DESC_(M, N) &onnx_##M##_desc,
#define FUZZ_X_NAME_(M, N) N,
static const oc_msgdesc *const descs[] = {ONNX_MESSAGES(FUZZ_X_DESC_)};
static const char *const names[] = {ONNX_MESSAGES(FUZZ_X_NAME_)};
#define NDESCS (sizeof descs / sizeof descs[0])

/* The descriptor table and the name lookup agree (checked once). */
static void check_names(void) {
    static int done;
    if (done) return;
    done = 1;
    FUZZ_CHECK(NDESCS == 31, "schema.def lists %zu messages", (size_t)NDESCS);
    for (size_t i = 0; i < NDESCS; i++) {
        FUZZ_CHECK(oc_msgdesc_find(names[i]) == descs[i], "oc_msgdesc_find(\"%s\")", names[i]);
        FUZZ_CHECK(strcmp(oc_msgdesc_name(descs[i]), names[i]) == 0, "oc_msgdesc_name: %s",
                   oc_msgdesc_name(descs[i]));
    }
    FUZZ_CHECK(oc_msgdesc_find("NoSuchProto") == NULL, "unknown name found");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    check_names();
    if (size < 1) return 0;
    const oc_msgdesc *desc = descs[data[0] % NDESCS];
    const uint8_t *body = data + 1;
    size_t n = size - 1;

    fuzz_buf enc;
    oc_error err;
    oc_status st = fuzz_decode_and_check(desc, body, n, NULL, &enc, &err);
    if (n && (body[n - 1] & 1)) {
        oc_parse_options po = OC_PARSE_OPTIONS_INIT;
        po.no_copy = 1;
        po.buffer.raw_data_threshold = 0;
        po.num_threads = 2;
        fuzz_buf enc2;
        oc_error err2;
        oc_status st2 = fuzz_decode_and_check(desc, body, n, &po, &enc2, &err2);
        FUZZ_CHECK(st2 == st, "%s: default decode %s, no_copy decode %s", oc_msgdesc_name(desc),
                   oc_status_name(st), oc_status_name(st2));
        if (st == OC_OK)
            fuzz_check_same("no_copy decode == default decode", &enc, &enc2);
        else
            FUZZ_CHECK(err.offset == err2.offset, "error offsets differ: %llu vs %llu",
                       (unsigned long long)err.offset, (unsigned long long)err2.offset);
        free(enc2.data);
    }
    /* concatenation is merging: split at a point chosen by a hash of the input */
    fuzz_check_merge(desc, body, n, n ? (size_t)(fuzz_hash(data, size) % (n + 1)) : 0, st, &enc);
    free(enc.data);
    return 0;
}
