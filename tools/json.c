/*
 * tools/json.c - JSON string escaping.
 */
#include "json.h"

#include <string.h>

/* The length of the well-formed UTF-8 sequence starting at p (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF), or 0 when it is not one. */
static uint64_t utf8_sequence(const unsigned char *p, uint64_t avail)
{
    unsigned char c = p[0];
    uint64_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3;
    else if (c >= 0xF0 && c <= 0xF4) len = 4;
    else return 0;
    if (c == 0xE0) lo = 0xA0;
    else if (c == 0xED) hi = 0x9F;
    else if (c == 0xF0) lo = 0x90;
    else if (c == 0xF4) hi = 0x8F;
    if (avail < len || p[1] < lo || p[1] > hi) return 0;
    for (uint64_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return len;
}

static void put_ascii(FILE *out, unsigned char c)
{
    switch (c) {
    case '"': fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\b': fputs("\\b", out); break;
    case '\f': fputs("\\f", out); break;
    case '\n': fputs("\\n", out); break;
    case '\r': fputs("\\r", out); break;
    case '\t': fputs("\\t", out); break;
    default:
        if (c < 0x20) fprintf(out, "\\u%04x", (unsigned)c);
        else fputc(c, out);
    }
}

void json_put_string(FILE *out, const char *data, uint64_t size)
{
    const unsigned char *p = (const unsigned char *)data;
    fputc('"', out);
    for (uint64_t i = 0; i < size;) {
        uint64_t len = utf8_sequence(p + i, size - i);
        if (len == 0) {
            fputs("\\ufffd", out);
            i++;
        } else if (len == 1) {
            put_ascii(out, p[i]);
            i++;
        } else {
            fwrite(p + i, 1, (size_t)len, out);
            i += len;
        }
    }
    fputc('"', out);
}

void json_put_cstring(FILE *out, const char *s)
{
    json_put_string(out, s, strlen(s));
}
