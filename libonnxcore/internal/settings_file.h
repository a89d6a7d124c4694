/*
 * internal/settings_file.h - a setting's value shown in a message (settings_file.c); the
 * files settings name are read with oc__small_file_read (internal/small_file.h).
 */
#ifndef ONNXCORE_INTERNAL_SETTINGS_FILE_H
#define ONNXCORE_INTERNAL_SETTINGS_FILE_H

#include <stddef.h>

#include "onnxcore/status.h"

/* A setting's value (an endpoint's URL) as a message may show it whatever its scheme:
 * everything up to its last '@' (what may be "user:password@") replaced by "...@", the
 * scheme kept; the rest as oc_path_shown shows it. Into out (cap bytes); returns out. */
const char *oc__setting_shown(const char *value, char *out, size_t cap);

#endif
