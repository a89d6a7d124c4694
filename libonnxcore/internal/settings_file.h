/*
 * internal/settings_file.h - the small files a program's settings name (AWS's shared
 * credentials and config files, the hub's token file), read safely (settings_file.c):
 * nothing that can block (a FIFO, a device), nothing but a regular file, nothing large.
 */
#ifndef ONNXCORE_INTERNAL_SETTINGS_FILE_H
#define ONNXCORE_INTERNAL_SETTINGS_FILE_H

#include <stddef.h>

#include "onnxcore/status.h"

/* The file at path, NUL-terminated, in *out (its length in *n; wipe it before freeing
 * when it may hold a secret: oc__settings_file_free); *out NULL and OC_OK when the file
 * does not exist. It is opened without blocking (O_NONBLOCK) and refused unless it is a
 * regular file of at most max bytes: the error names the file, `what` it is ("the AWS
 * config file") and why (the system's reason, "not a regular file", "over N bytes"). */
oc_status oc__settings_file_read(const char *path, const char *what, size_t max, char **out,
                                 size_t *n, oc_error *err);
/* Wipes the n bytes at s and frees s; NULL is accepted. */
void oc__settings_file_free(char *s, size_t n);

/* A setting's value (an endpoint's URL) as a message may show it whatever its scheme:
 * everything up to its last '@' (what may be "user:password@") replaced by "...@", the
 * scheme kept; the rest as oc_path_shown shows it. Into out (cap bytes); returns out. */
const char *oc__setting_shown(const char *value, char *out, size_t cap);

#endif
