/*
 * tests/archive/testarchive.h - what the tests of reading archives share (test_slice.c,
 * test_read_many.c), beside tests/unit's kit.
 *
 * ta_set_dims(a, t, dims, n)    t's shape made dims[0..n)
 * ta_deflate_copy(in, out, err) the archive in (under td_at) copied to out with every
 *                               entry but __MODEL_PROTO DEFLATED
 */
#ifndef ONNXZ_TESTS_TESTARCHIVE_H
#define ONNXZ_TESTS_TESTARCHIVE_H

#include <string.h>

#include <onnxcore/onnxcore.h>
#include <onnxz/zip.h>

#include "check.h"
#include "testdir.h"

static inline void ta_set_dims(oc_arena *a, onnx_TensorProto *t, const int64_t *dims, size_t n) {
    t->dims.count = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t *d = oc_array_push(a, &t->dims, sizeof(int64_t));
        CHECK(d != NULL);
        if (d) *d = dims[i];
    }
}

static inline void ta_deflate_copy(const char *in, const char *out, oc_error *err) {
    oz_zip_reader *zr = NULL;
    oz_zip_writer *w = NULL;
    CHECK_STATUS(oz_zip_reader_open(td_at(in), NULL, &zr, err), OC_OK, err);
    CHECK_STATUS(oz_zip_writer_open(td_at(out), 0, 0, &w, err), OC_OK, err);
    for (uint64_t i = 0; zr && w && i < oz_zip_reader_count(zr); i++) {
        oz_zip_entry e;
        oc_bytes b = {0};
        CHECK_STATUS(oz_zip_reader_entry(zr, i, &e, err), OC_OK, err);
        CHECK_STATUS(oz_zip_reader_read(zr, i, &b, err), OC_OK, err);
        if (strcmp(e.name, "__MODEL_PROTO") == 0)
            CHECK_STATUS(oz_zip_writer_add(w, e.name, b.data, b.size, NULL, err), OC_OK, err);
        else
            CHECK_STATUS(oz_zip_writer_add_deflated(w, e.name, b.data, b.size, -1, err), OC_OK,
                         err);
        oc_bytes_release(&b);
    }
    if (w) CHECK_STATUS(oz_zip_writer_finish(w, err), OC_OK, err);
    oz_zip_writer_free(w);
    oz_zip_reader_close(zr);
}

#endif
