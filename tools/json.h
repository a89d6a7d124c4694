/*
 * tools/json.h - the little JSON output the tool needs: strings escaped so that any
 * bytes (model strings are not guaranteed UTF-8) still give valid UTF-8 JSON.
 */
#ifndef ONNXZ_TOOLS_JSON_H
#define ONNXZ_TOOLS_JSON_H

#include <stdint.h>
#include <stdio.h>

/* Writes size bytes at data as a quoted JSON string. Quotes, backslashes and control
 * characters are escaped, and so are (as \uXXXX) the code points that act on the line
 * around them (oc_utf8_printable_len: C1, bidirectional controls, U+2028, U+2029); bytes
 * that are not valid UTF-8 become U+FFFD. */
void json_put_string(FILE *out, const char *data, uint64_t size);
/* The same for a NUL-terminated string. */
void json_put_cstring(FILE *out, const char *s);

#endif
