/*
 * sigv4.c - AWS Signature Version 4 for S3 requests (internal/s3.h), on the cryptographic
 * backend's HMAC-SHA256 and SHA-256 (crypto/backend.h): without OpenSSL it refuses.
 *
 * Why our own code rather than libcurl's CURLOPT_AWS_SIGV4: the algorithm is short and
 * fully specified, and the libcurl of Debian 12 (7.88) falls short for S3: it sends no
 * x-amz-content-sha256 header (S3 requires one on every signed request) and signs a query
 * such as the multipart upload's "?uploads" wrongly (a canonical query needs "uploads=",
 * with its keys sorted). Signing here also lets every request, each range, retry and
 * parallel part, carry a signature of its own with a fresh x-amz-date, and keeps the
 * secret out of libcurl's options.
 *
 * The steps (AWS's "Create a signed AWS API request"):
 *   canonical request = METHOD \n URI \n QUERY \n HEADERS \n SIGNED \n PAYLOAD-HASH
 *     URI: the path, each byte but unreserved ones and '/' as %XY (once: S3 does not
 *          normalize or encode twice);
 *     QUERY: k=v pairs, each side encoded with '/' encoded too, sorted by encoded key
 *          (then value), joined by '&'; an empty value gives "k=";
 *     HEADERS: "name:value\n" for each header signed, names lower-case and sorted,
 *          values trimmed with inner runs of blanks made one;
 *     SIGNED: the names joined by ';'.
 *   string to sign = "AWS4-HMAC-SHA256\n" DATE "\n" SCOPE "\n" hex(SHA256(canonical))
 *     SCOPE: YYYYMMDD/REGION/SERVICE/aws4_request
 *   signing key = HMAC(HMAC(HMAC(HMAC("AWS4" SECRET, YYYYMMDD), REGION), SERVICE),
 *                      "aws4_request")
 *   signature = hex(HMAC(signing key, string to sign))
 */
#define _DEFAULT_SOURCE /* strcasecmp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "crypto/backend.h"
#include "internal/error.h"
#include "internal/s3.h"
#include "internal/text.h"
#include "internal/url.h"

void oc__s3_amz_date(int64_t t, char out[17]) {
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* ---- a growing text (internal/text.h) ---- */

typedef oc__text text;

static void put(text *t, const char *s, size_t n) { oc__text_put(t, s, n); }

static void puts_(text *t, const char *s) { put(t, s, strlen(s)); }

static void put_encoded(text *t, const char *s, int keep_slash) {
    size_t n = strlen(s);
    char *e = malloc(3 * n + 1);
    if (!e) {
        t->failed = 1;
        return;
    }
    puts_(t, oc__uri_encode(s, n, keep_slash, e));
    free(e);
}

static void hex(const uint8_t *b, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

/* ---- the canonical query and headers ---- */

typedef struct enc_pair {
    char *k, *v; /* encoded (query) or lower-cased and trimmed (headers) */
} enc_pair;

static int cmp_pair(const void *a, const void *b) {
    const enc_pair *x = a, *y = b;
    int c = strcmp(x->k, y->k);
    return c ? c : strcmp(x->v, y->v);
}

static char *encoded(const char *s) {
    size_t n = strlen(s);
    char *e = malloc(3 * n + 1);
    return e ? oc__uri_encode(s, n, 0, e) : NULL;
}

/* A header's value as signed: no blanks at either end, each inner run of blanks one
 * space. */
static char *header_value(const char *v) {
    char *out = malloc(strlen(v) + 1);
    if (!out) return NULL;
    size_t o = 0;
    int blank = 0;
    for (const char *s = v; *s; s++) {
        if (*s == ' ' || *s == '\t') {
            blank = o > 0;
            continue;
        }
        if (blank) out[o++] = ' ';
        blank = 0;
        out[o++] = *s;
    }
    out[o] = '\0';
    return out;
}

static char *lower(const char *s) {
    char *out = strdup(s);
    if (out)
        for (char *p = out; *p; p++)
            if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
    return out;
}

static void free_pairs(enc_pair *v, size_t n) {
    for (size_t i = 0; v && i < n; i++) free(v[i].k), free(v[i].v);
    free(v);
}

static oc_status nomem(oc_error *err) {
    return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

oc_status oc__sigv4_authorization(const oc__sigv4_request *r, char **out, oc_error *err) {
    *out = NULL;
    OC_FORWARD(oc__cb_require(err));
    if (strlen(r->amz_date) != 16)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "SigV4: bad x-amz-date '%.32s'",
                        r->amz_date);
    size_t nq = r->nquery, nh = r->nheaders;
    enc_pair *q = calloc(nq ? nq : 1, sizeof *q), *h = calloc(nh ? nh : 1, sizeof *h);
    text creq = {0}, sts = {0}, signed_names = {0}, auth = {0};
    oc_status st = OC_OK;
    if (!q || !h) goto oom;
    for (size_t i = 0; i < nq; i++)
        if (!(q[i].k = encoded(r->query[i].name)) ||
            !(q[i].v = encoded(r->query[i].value ? r->query[i].value : "")))
            goto oom;
    for (size_t i = 0; i < nh; i++)
        if (!(h[i].k = lower(r->headers[i].name)) || !(h[i].v = header_value(r->headers[i].value)))
            goto oom;
    qsort(q, nq, sizeof *q, cmp_pair);
    qsort(h, nh, sizeof *h, cmp_pair);

    puts_(&creq, r->method);
    puts_(&creq, "\n");
    put_encoded(&creq, r->path, 1);
    puts_(&creq, "\n");
    for (size_t i = 0; i < nq; i++) {
        if (i) puts_(&creq, "&");
        puts_(&creq, q[i].k);
        puts_(&creq, "=");
        puts_(&creq, q[i].v);
    }
    puts_(&creq, "\n");
    for (size_t i = 0; i < nh; i++) {
        puts_(&creq, h[i].k);
        puts_(&creq, ":");
        puts_(&creq, h[i].v);
        puts_(&creq, "\n");
        if (i) puts_(&signed_names, ";");
        puts_(&signed_names, h[i].k);
    }
    puts_(&creq, "\n");
    puts_(&creq, signed_names.p ? signed_names.p : "");
    puts_(&creq, "\n");
    puts_(&creq, r->payload_hash);
    if (creq.failed || signed_names.failed) goto oom;

    uint8_t md[OC__CB_SHA256_SIZE], key[OC__CB_SHA256_SIZE];
    char md_hex[2 * OC__CB_SHA256_SIZE + 1], date[9], scope[256];
    memcpy(date, r->amz_date, 8);
    date[8] = '\0';
    snprintf(scope, sizeof scope, "%s/%s/%s/aws4_request", date, r->region, r->service);
    if ((st = oc__cb_sha256(creq.p, creq.n, md, err)) != OC_OK) goto done;
    hex(md, sizeof md, md_hex);
    puts_(&sts, "AWS4-HMAC-SHA256\n");
    puts_(&sts, r->amz_date);
    puts_(&sts, "\n");
    puts_(&sts, scope);
    puts_(&sts, "\n");
    puts_(&sts, md_hex);
    if (sts.failed) goto oom;

    /* The signing key, from "AWS4" + the secret. */
    size_t sn = strlen(r->secret_access_key);
    char *k0 = malloc(sn + 5);
    if (!k0) goto oom;
    memcpy(k0, "AWS4", 4);
    memcpy(k0 + 4, r->secret_access_key, sn + 1);
    st = oc__cb_hmac_sha256((const uint8_t *)k0, sn + 4, date, 8, key, err);
    oc__cb_cleanse(k0, sn + 4);
    free(k0);
    if (st == OC_OK)
        st = oc__cb_hmac_sha256(key, sizeof key, r->region, strlen(r->region), key, err);
    if (st == OC_OK)
        st = oc__cb_hmac_sha256(key, sizeof key, r->service, strlen(r->service), key, err);
    if (st == OC_OK) st = oc__cb_hmac_sha256(key, sizeof key, "aws4_request", 12, key, err);
    if (st == OC_OK) st = oc__cb_hmac_sha256(key, sizeof key, sts.p, sts.n, md, err);
    oc__cb_cleanse(key, sizeof key);
    if (st != OC_OK) goto done;
    hex(md, sizeof md, md_hex);

    puts_(&auth, "AWS4-HMAC-SHA256 Credential=");
    puts_(&auth, r->access_key_id);
    puts_(&auth, "/");
    puts_(&auth, scope);
    puts_(&auth, ", SignedHeaders=");
    puts_(&auth, signed_names.p ? signed_names.p : "");
    puts_(&auth, ", Signature=");
    puts_(&auth, md_hex);
    if (auth.failed) goto oom;
    *out = auth.p;
    auth.p = NULL;
    goto done;
oom:
    st = nomem(err);
done:
    free_pairs(q, nq);
    free_pairs(h, nh);
    free(creq.p);
    free(sts.p);
    free(signed_names.p);
    free(auth.p);
    return st;
}
