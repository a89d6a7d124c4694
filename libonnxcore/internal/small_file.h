/*
 * internal/small_file.h - a small file read whole and safely (small_file.c): the files a
 * program's settings name (AWS's credentials and config, the hub's token) and those of a
 * signature (keys, bundles). Nothing that can block (a FIFO, a device), nothing but a
 * regular file, nothing large. libonnxz reaches it under ONNXCORE_PRIVATE.
 */
#ifndef ONNXCORE_INTERNAL_SMALL_FILE_H
#define ONNXCORE_INTERNAL_SMALL_FILE_H

#include <stddef.h>

#include "onnxcore_private.h"
#include "onnxcore/status.h"

/* A missing file (ENOENT, ENOTDIR) is no error: OC_OK with *out NULL (a setting's file
 * that is not there). Without it, a missing file fails with OC_ERR_NOT_FOUND. */
#define OC__SMALL_FILE_MISSING_OK 1u

/* The file at path, NUL-terminated, in *out (its length in *n; free it with
 * oc__small_file_free, which wipes it: it may hold a secret). It is opened without
 * blocking (O_NONBLOCK) and read to its end; it is refused unless it is a regular file of
 * at most max bytes, then or while it is read. Errors name the file and what it is
 * ("PATH: cannot read the AWS config file: WHY"): the system's reason (and its errno),
 * "not a regular file" (OC_ERR_INVALID_ARG), "over the N-byte limit" (OC_ERR_LIMIT). */
OC_PRIVATE oc_status oc__small_file_read(const char *path, const char *what, size_t max,
                                         unsigned flags, char **out, size_t *n, oc_error *err);

/* Wipes the n bytes at s and frees s; NULL is accepted. */
OC_PRIVATE void oc__small_file_free(char *s, size_t n);

#endif
