/*
 * digest.c - SHA-1 for external-data checksums (the `checksum` key of ONNX).
 */
#include <stddef.h>

#include "internal/digest.h"
#include "internal/error.h"

#ifdef ONNXZ_HAVE_OPENSSL
#include <openssl/evp.h>

static oc_status sha1_failed(oc__sha1 *h, oc_error *err) {
    oc__sha1_discard(h);
    return oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "SHA-1 computation failed");
}

oc_status oc__sha1_begin(oc__sha1 *h, oc_error *err) {
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    h->md = ctx;
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) != 1) return sha1_failed(h, err);
    return OC_OK;
}

oc_status oc__sha1_update(void *hp, const void *data, uint64_t size, oc_error *err) {
    oc__sha1 *h = hp;
    const unsigned char *p = data;
    while (size) { /* EVP takes size_t: feed huge pieces in parts */
        size_t chunk = size > (1u << 30) ? (1u << 30) : (size_t)size;
        if (EVP_DigestUpdate(h->md, p, chunk) != 1) return sha1_failed(h, err);
        p += chunk;
        size -= chunk;
    }
    return OC_OK;
}

oc_status oc__sha1_end_hex(oc__sha1 *h, char out[41], oc_error *err) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_DigestFinal_ex(h->md, md, &n) != 1 || n != 20) return sha1_failed(h, err);
    oc__sha1_discard(h);
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < 20; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[40] = '\0';
    return OC_OK;
}

void oc__sha1_discard(oc__sha1 *h) {
    EVP_MD_CTX_free(h->md);
    h->md = NULL;
}
#else
oc_status oc__sha1_begin(oc__sha1 *h, oc_error *err) {
    h->md = NULL;
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                    "checksums need SHA-1, but onnxz was built without OpenSSL");
}

oc_status oc__sha1_update(void *h, const void *data, uint64_t size, oc_error *err) {
    (void)h;
    (void)data;
    (void)size;
    return oc__sha1_begin(h, err);
}

oc_status oc__sha1_end_hex(oc__sha1 *h, char out[41], oc_error *err) {
    out[0] = '\0';
    return oc__sha1_begin(h, err);
}

void oc__sha1_discard(oc__sha1 *h) { h->md = NULL; }
#endif

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
