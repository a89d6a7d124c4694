/*
 * settings_file.c - a setting's value as a message shows it (internal/settings_file.h).
 * The files settings name are read by oc__small_file_read (internal/small_file.h).
 */
#include <stdio.h>
#include <string.h>

#include "onnxcore/http.h"
#include "internal/error.h"
#include "internal/settings_file.h"

const char *oc__setting_shown(const char *value, char *out, size_t cap) {
    const char *at = strrchr(value, '@');
    if (!at) return oc_path_shown(value, out, cap);
    const char *sch = strstr(value, "://");
    int keep = sch && sch < at ? (int)(sch + 3 - value) : 0;
    snprintf(out, cap, "%.*s...@%s", keep, value, at + 1);
    return oc_path_shown(out, out, cap);
}
