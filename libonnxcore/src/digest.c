/*
 * digest.c - SHA-1 for external-data checksums (the `checksum` key of ONNX).
 */
#include "internal/digest.h"
#include "internal/error.h"

#ifdef ONNXZ_HAVE_OPENSSL
#include <openssl/evp.h>

oc_status oc__sha1_hex(const void *data, uint64_t size, char out[41], oc_error *err) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) == 1;
    const unsigned char *p = data;
    while (ok && size) { /* EVP takes size_t: feed huge tensors in pieces */
        size_t chunk = size > (1u << 30) ? (1u << 30) : (size_t)size;
        ok = EVP_DigestUpdate(ctx, p, chunk) == 1;
        p += chunk;
        size -= chunk;
    }
    ok = ok && EVP_DigestFinal_ex(ctx, md, &n) == 1 && n == 20;
    EVP_MD_CTX_free(ctx);
    if (!ok) return oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "SHA-1 computation failed");
    static const char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < 20; i++) {
        out[2 * i] = hex[md[i] >> 4];
        out[2 * i + 1] = hex[md[i] & 15];
    }
    out[40] = '\0';
    return OC_OK;
}
#else
oc_status oc__sha1_hex(const void *data, uint64_t size, char out[41], oc_error *err) {
    (void)data;
    (void)size;
    out[0] = '\0';
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                    "checksums need SHA-1, but onnxz was built without OpenSSL");
}
#endif
