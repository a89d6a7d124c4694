/*
 * internal/stream.h - loading with pread instead of a mapping.
 */
#ifndef ONNXCORE_INTERNAL_STREAM_H
#define ONNXCORE_INTERNAL_STREAM_H

#include "onnxcore/codec.h"

/* Decodes the file at path into msg reading it with pread (no mapping, no whole-file
 * buffer; tensor bytes read straight into their own buffers). no_copy does not apply. */
oc_status oc__load_pread(const char *path, const oc_msgdesc *desc, void *msg, oc_arena *arena,
                         const oc_parse_options *opts, oc_error *err);

#endif
