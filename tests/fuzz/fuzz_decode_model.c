/*
 * tests/fuzz/fuzz_decode_model.c - the input as a serialized ModelProto.
 *
 * Always: oc_decode with the default options, then the round-trip invariants of
 * fuzz_common.h (encode -> decode -> encode is a fixed point, oc_encoded_size is exact,
 * oc_msg_copy encodes the same, oc_visit_tensors sees well-formed spans).
 * When the input's last byte is odd: the same bytes again through oc_model_load_memory
 * with no_copy, raw_data_threshold 0 and 2 threads. Both loads must agree: same status
 * and error offset on failure, the same encoding on success. Decoding the input in two
 * parts into one message (split where a hash of the input says) must equal decoding it
 * whole (W-11: concatenation is merging).
 */
#include <stdlib.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const oc_msgdesc *desc = &onnx_ModelProto_desc;
    fuzz_buf enc;
    oc_error err;
    oc_status st = fuzz_decode_and_check(desc, data, size, NULL, &enc, &err);

    if (size && (data[size - 1] & 1)) {
        oc_parse_options po = OC_PARSE_OPTIONS_INIT;
        po.no_copy = 1;
        po.buffer.raw_data_threshold = 0;
        po.num_threads = 2;
        oc_model *m = NULL;
        oc_error err2;
        oc_error_clear(&err2);
        oc_status st2 = oc_model_load_memory(data, size, &po, &m, &err2);
        FUZZ_CHECK(st2 == st, "default decode: %s, no_copy load: %s (%s)", oc_status_name(st),
                   oc_status_name(st2), err2.message);
        if (st2 == OC_OK) {
            FUZZ_CHECK(m != NULL, "load succeeded without a model");
            fuzz_span_rules rules = {1, data, data + size, 0, 0, 0};
            fuzz_buf enc2 = fuzz_check_roundtrip(desc, oc_model_proto(m), &po, &rules);
            fuzz_check_same("no_copy load == default decode", &enc, &enc2);
            free(enc2.data);

            oc_model *c = NULL;
            st2 = oc_model_clone(m, &c, &err2);
            FUZZ_CHECK(st2 == OC_OK, "oc_model_clone: %s", err2.message);
            oc_model_free(m);
            m = NULL;
            void *out = NULL;
            uint64_t n = 0;
            st2 = oc_model_save_memory(c, NULL, &out, &n, &err2);
            FUZZ_CHECK(st2 == OC_OK, "oc_model_save_memory: %s", err2.message);
            fuzz_buf enc3 = {out, n};
            fuzz_check_same("clone saved after freeing its source == default decode", &enc, &enc3);
            free(out);
            oc_model_free(c);
        } else {
            fuzz_check_error(st2, &err2, size);
            FUZZ_CHECK(m == NULL, "failed load left a model behind");
            FUZZ_CHECK(err2.offset == err.offset, "error offsets differ: %llu vs %llu",
                       (unsigned long long)err.offset, (unsigned long long)err2.offset);
        }
        oc_model_free(m);
    }
    /* concatenation is merging: split at a point chosen by a hash of the input */
    fuzz_check_merge(desc, data, size, size ? (size_t)(fuzz_hash(data, size) % (size + 1)) : 0,
                     st, &enc);
    free(enc.data);
    return 0;
}
