/*
 * onnxcore/json.h - the one quoting rule of JSON output (`onnxz ... --json`, the report
 * of onnxz/info.h): strings escaped so that any bytes (model strings are not guaranteed
 * UTF-8) still give valid UTF-8 JSON that shows nothing acting on the line around it.
 */
#ifndef ONNXCORE_JSON_H
#define ONNXCORE_JSON_H

#include "export.h"

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Writes size bytes at data to out as a quoted JSON string. Quotes, backslashes and
 * control characters are escaped, and so are (as \uXXXX) the code points that act on the
 * line around them (oc_utf8_printable_len: C1, bidirectional controls, U+2028, U+2029);
 * bytes that are not valid UTF-8 become U+FFFD. The caller checks ferror(out). */
OC_API void oc_json_put_string(FILE *out, const void *data, uint64_t size);
/* The same for a NUL-terminated string. */
OC_API void oc_json_put_cstring(FILE *out, const char *s);
#endif

#ifdef __cplusplus
}
#endif

#endif
