/*
 * json.c - JSON string quoting (onnxcore/json.h).
 */
#include <string.h>

#include "onnxcore/json.h"
#include "onnxcore/status.h"
static void put_ascii(FILE *out, unsigned char c) {
    switch (c) {
    case '"':
        fputs("\\\"", out);
        break;
    case '\\':
        fputs("\\\\", out);
        break;
    case '\b':
        fputs("\\b", out);
        break;
    case '\f':
        fputs("\\f", out);
        break;
    case '\n':
        fputs("\\n", out);
        break;
    case '\r':
        fputs("\\r", out);
        break;
    case '\t':
        fputs("\\t", out);
        break;
    default:
        if (c < 0x20)
            fprintf(out, "\\u%04x", (unsigned)c);
        else
            fputc(c, out);
    }
}

void oc_json_put_string(FILE *out, const void *data, uint64_t size) {
    const unsigned char *p = (const unsigned char *)data;
    fputc('"', out);
    for (uint64_t i = 0; i < size;) {
        size_t len = oc_utf8_len(p + i, size - i);
        if (len == 0) {
            fputs("\\ufffd", out);
            i++;
        } else if (len == 1) {
            put_ascii(out, p[i]);
            i++;
        } else if (oc_utf8_printable_len(p + i, size - i)) {
            fwrite(p + i, 1, len, out);
            i += len;
        } else { /* a C1, bidirectional or separator control (all below U+0800 or 3 bytes) */
            unsigned cp = len == 2
                              ? (p[i] & 0x1Fu) << 6 | (p[i + 1] & 0x3Fu)
                              : (p[i] & 0x0Fu) << 12 | (p[i + 1] & 0x3Fu) << 6 | (p[i + 2] & 0x3Fu);
            fprintf(out, "\\u%04x", cp);
            i += len;
        }
    }
    fputc('"', out);
}

void oc_json_put_cstring(FILE *out, const char *s) { oc_json_put_string(out, s, strlen(s)); }
