/*
 * error.c - making archive contents fit for error messages (filling oc_error records
 * itself is libonnxcore's oc_error_set).
 */
#include <string.h>

#include "internal/error.h"

const char *oz__quote(const uint8_t *name, size_t len, char out[OZ_QUOTE_MAX]) {
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (o > 80) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        uint8_t c = name[i];
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return out;
}
