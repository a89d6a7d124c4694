/*
 * tests/fuzz/fuzz_decode_model.c - the input as a serialized ModelProto.
 *
 * Always: oc_decode with the default options, then the round-trip invariants of
 * fuzz_common.h (encode -> decode -> encode is a fixed point, oc_encoded_size is exact,
 * oc_msg_copy encodes the same, oc_msg_visit_tensors sees well-formed spans).
 * When the input's last byte is odd: the same bytes again through oc_model_load_memory
 * with no_copy, raw_data_threshold 0 and 2 threads. Both loads must agree: same status
 * and error offset on failure, the same encoding on success. Decoding the input in two
 * parts into one message (split where a hash of the input says) must equal decoding it
 * whole (W-11: concatenation is merging).
 * Always: the same bytes through a source that can only read (as a remote one), decoded
 * through a window of a few bytes (a size from a hash of the input, so that fields cross
 * the window's edge everywhere), with 0 or 2 threads: the windowed decode must agree with
 * the contiguous one exactly (status, error offset, encoding).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "internal/decode.h"
#include "internal/source.h"

/* A source with nothing but read: the path of sources that cannot map. */
typedef struct read_only {
    oc_source head;
    const uint8_t *data;
} read_only;

static oc_status ro_read(oc_source *s, uint64_t at, void *dst, uint64_t n, uint64_t *got,
                         oc_error *err) {
    (void)err;
    memcpy(dst, ((read_only *)s)->data + at, (size_t)n);
    *got = n;
    return OC_OK;
}

static void ro_destroy(oc_source *s) { (void)s; }

static const oc_source_vtable ro_vtable = {
    .kind = "read-only",
    .read = ro_read,
    .destroy = ro_destroy,
};

static void check_windowed(const oc_msgdesc *desc, const uint8_t *data, size_t size, oc_status st,
                           const oc_error *err, const fuzz_buf *enc) {
    uint64_t h = fuzz_hash(data, size);
    uint64_t window = 1 + (h >> 8) % 48;
    read_only *r = calloc(1, sizeof *r);
    FUZZ_CHECK(r != NULL, "out of memory");
    r->data = data;
    oc_source *src;
    oc_error e;
    oc_error_clear(&e);
    FUZZ_CHECK(oc__source_new(&r->head, &ro_vtable, size, 0, NULL, "fuzz input", &e) == OC_OK,
               "oc__source_new: %s", e.message);
    src = &r->head;
    oc_arena *arena = oc_arena_new();
    FUZZ_CHECK(arena != NULL, "out of memory");
    void *msg = oc_msg_new(arena, desc);
    FUZZ_CHECK(msg != NULL, "out of memory");
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.num_threads = (h >> 16) & 1 ? 2 : 0;
    oc_status st2 = oc__decode_source_window(desc, msg, src, arena, &po, window, &e);
    FUZZ_CHECK(st2 == st, "contiguous decode: %s at %llu (%s); window of %llu: %s at %llu (%s)",
               oc_status_name(st), (unsigned long long)err->offset, err->message,
               (unsigned long long)window, oc_status_name(st2), (unsigned long long)e.offset,
               e.message);
    if (st2 != OC_OK) {
        FUZZ_CHECK(e.offset == err->offset, "window of %llu: error at %llu, contiguous at %llu",
                   (unsigned long long)window, (unsigned long long)e.offset,
                   (unsigned long long)err->offset);
    } else {
        fuzz_buf enc2 = fuzz_encode(desc, msg);
        fuzz_check_same("windowed decode == contiguous decode", enc, &enc2);
        free(enc2.data);
    }
    oc_arena_free(arena);
    oc_source_unref(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const oc_msgdesc *desc = &onnx_ModelProto_desc;
    fuzz_buf enc;
    oc_error err;
    oc_status st = fuzz_decode_and_check(desc, data, size, NULL, &enc, &err);
    check_windowed(desc, data, size, st, &err, &enc);

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
    fuzz_check_merge(desc, data, size, size ? (size_t)(fuzz_hash(data, size) % (size + 1)) : 0, st,
                     &enc);
    free(enc.data);
    return 0;
}
