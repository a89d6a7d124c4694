/*
 * fileio_bytes.c - oc_atomic_write_bytes (onnxcore_private.h): a span appended to an atomic
 * file, file to file by the kernel where the span's source allows. Apart from fileio.c
 * because it reads the byte sources, which libonnxz's copy of fileio.c does not have.
 */
#include "internal/bytes.h"
#include "internal/error.h"
#include "internal/source.h"
#include "internal/onnxcore_atomic.h"

oc_status oc_atomic_write_bytes(oc_atomic_file *af, const oc_bytes *span, oc_error *err) {
    uint64_t at, done = 0;
    oc_source *src = af->remote ? NULL : oc__bytes_source(span, &at);
    while (src && done < span->size) {
        uint64_t left = span->size - done, n;
        uint64_t want = left > OC_BYTES_WRITE_CHUNK ? OC_BYTES_WRITE_CHUNK : left;
        OC_FORWARD(oc_source_copy_to_fd(src, at + done, want, af->fd, &n, err));
        if (n == 0) break; /* not between these files: the rest goes through the pages */
        done += n;
        oc__atomic_appended(af, n);
    }
    if (done == span->size) return OC_OK;
    oc_bytes rest = *span; /* a view of what is left: no reference taken or dropped */
    rest.data += done;
    rest.size -= done;
    return oc_bytes_write(&rest, oc_atomic_write, af, err);
}
