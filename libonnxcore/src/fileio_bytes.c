/*
 * fileio_bytes.c - oc_atomic_write_bytes (onnxcore_atomic.h): a span appended to an atomic
 * file. Apart from fileio.c because it reads the byte sources, which libonnxz's copy of
 * fileio.c does not have.
 *
 * There is no file-to-file copy in the kernel (copy_file_range) here any more: on ext4 it
 * splices the bytes through pipe-sized pieces, which leaves the output's page cache in
 * small folios that every reader mapping the file pays for (touching a GiB written that
 * way took 0.075 s against 0.009 s for 2 MiB blocks), and it was no faster than pread
 * and whole-block writes (Linux 6.18, 2-core VM). On filesystems that could share extents
 * instead, tensors at 64-byte offsets rarely line up with their blocks.
 */
#include "internal/bytes.h"
#include "onnxcore_atomic.h"

oc_status oc_atomic_write_bytes(oc_atomic_file *af, const oc_bytes *span, oc_error *err) {
    return oc_bytes_write(span, oc_atomic_write, af, err);
}
