/*
 * digest.c - SHA-1 for external-data checksums (the `checksum` key of ONNX), over the
 * cryptographic backend (crypt/backend.h): without OpenSSL every call fails with
 * OC_ERR_UNSUPPORTED.
 */
#include <stddef.h>

#include "crypto/backend.h"
#include "internal/digest.h"
#include "internal/error.h"

oc_status oc__sha1_begin(oc__sha1 *h, oc_error *err) {
    oc__cb_sha1 *md = NULL;
    oc_status st = oc__cb_sha1_new(&md, err);
    h->md = md;
    return st;
}

oc_status oc__sha1_update(void *hp, const void *data, uint64_t size, oc_error *err) {
    oc__sha1 *h = hp;
    oc_status st = oc__cb_sha1_update(h->md, data, size, err);
    if (st != OC_OK) oc__sha1_discard(h);
    return st;
}

oc_status oc__sha1_end_hex(oc__sha1 *h, char out[41], oc_error *err) {
    uint8_t md[OC__CB_SHA1_SIZE];
    oc_status st = oc__cb_sha1_final(h->md, md, err);
    oc__sha1_discard(h);
    if (st != OC_OK) {
        out[0] = '\0';
        return st;
    }
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < OC__CB_SHA1_SIZE; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[40] = '\0';
    return OC_OK;
}

void oc__sha1_discard(oc__sha1 *h) {
    oc__cb_sha1_free(h->md);
    h->md = NULL;
}

oc_status oc__sha1_span_hex(const oc_bytes *span, char out[41], oc_error *err) {
    oc__sha1 h;
    OC_FORWARD(oc__sha1_begin(&h, err));
    oc_status st = oc_bytes_write(span, oc__sha1_update, &h, err);
    if (st != OC_OK) {
        oc__sha1_discard(&h);
        return st;
    }
    return oc__sha1_end_hex(&h, out, err);
}
