/*
 * sigv4_sign.c - signs requests read from stdin with libonnxcore's SigV4
 * (internal/s3.h), one Authorization header per line on stdout: the C side of the
 * randomized comparison with the AWS SDK's own signer (tests/remote/s3/sigv4_random.js).
 *
 * Each input line is tab-separated fields, each the hex of its bytes (so that any byte can
 * be given): METHOD PATH NQ (KEY VALUE)*NQ NH (NAME VALUE)*NH PAYLOAD-HASH DATE REGION
 * SERVICE KEY-ID SECRET. A line that does not parse prints "error" and the run goes on.
 */
#define _DEFAULT_SOURCE /* strsep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal/s3.h"

#define MAXF 256

static char *unhex(const char *s) {
    size_t n = strlen(s) / 2;
    char *out = malloc(n + 1);
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1) {
            free(out);
            return NULL;
        }
        out[i] = (char)v;
    }
    out[n] = '\0';
    return out;
}

int main(void) {
    static char line[1 << 20];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        char *f[MAXF];
        size_t nf = 0;
        for (char *rest = line, *tok; (tok = strsep(&rest, "\t")) && nf < MAXF;)
            f[nf++] = unhex(tok); /* an empty field (an empty value) is one too */
        int ok = nf >= 3;
        for (size_t i = 0; i < nf; i++) ok = ok && f[i];
        oc__sigv4_pair q[32], h[32];
        size_t at = 2, nq = 0, nh = 0;
        if (ok) nq = (size_t)atoi(f[at++]);
        ok = ok && nq <= 32 && at + 2 * nq < nf;
        for (size_t i = 0; ok && i < nq; i++, at += 2) q[i] = (oc__sigv4_pair){f[at], f[at + 1]};
        if (ok) nh = (size_t)atoi(f[at++]);
        ok = ok && nh <= 32 && at + 2 * nh + 6 == nf;
        for (size_t i = 0; ok && i < nh; i++, at += 2) h[i] = (oc__sigv4_pair){f[at], f[at + 1]};
        char *auth = NULL;
        oc_error err;
        if (ok) {
            oc__sigv4_request r = {.method = f[0],
                                   .path = f[1],
                                   .query = q,
                                   .nquery = nq,
                                   .headers = h,
                                   .nheaders = nh,
                                   .payload_hash = f[at],
                                   .amz_date = f[at + 1],
                                   .region = f[at + 2],
                                   .service = f[at + 3],
                                   .access_key_id = f[at + 4],
                                   .secret_access_key = f[at + 5]};
            if (oc__sigv4_authorization(&r, &auth, &err) != OC_OK) {
                fprintf(stderr, "sigv4_sign: %s\n", err.message);
                ok = 0;
            }
        }
        puts(ok ? auth : "error");
        free(auth);
        for (size_t i = 0; i < nf; i++) free(f[i]);
    }
    return 0;
}
