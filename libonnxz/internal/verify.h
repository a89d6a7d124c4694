/*
 * internal/verify.h - what oz_reader_verify (reader.c) needs from verify.c.
 */
#ifndef ONNXZ_INTERNAL_VERIFY_H
#define ONNXZ_INTERNAL_VERIFY_H

#include "onnxz/archive.h"
#include "onnxz/open.h"
#include "onnxz/verify.h"

/* oz_verify_path's work once the file's kind is known: the one choice of checks by form
 * (an unencrypted archive's, opened from path unless ar is given; every other file's),
 * for checked options. info may be NULL. */
oc_status oz__verify(const char *path, oz_kind kind, const oz_archive *ar,
                     const oz_open_options *opts, oz_verify_report **out, oz_open_info *info,
                     oc_error *err);

#endif
