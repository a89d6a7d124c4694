/*
 * internal/zipread.h - reader entry points for the library itself (not installed).
 */
#ifndef ONNXZ_INTERNAL_ZIPREAD_H
#define ONNXZ_INTERNAL_ZIPREAD_H

#include <stdint.h>

#include "onnxz/zip.h"

/* As oz_zip_reader_open_fd (fd is duplicated, not taken; no lock is taken), taking only
 * the first `size` bytes of the file as the archive (what follows is not looked at): the
 * editor uses it to check that an interrupted edit's old archive is whole before it rolls
 * back to it (spec/onnxz.md A-56). A file shorter than size: OC_ERR_TRUNCATED. */
oc_status oz__zip_reader_open_fd_prefix(int fd, uint64_t size, const oz_zip_reader_options *options,
                                        oz_zip_reader **out, oc_error *err);

#endif
