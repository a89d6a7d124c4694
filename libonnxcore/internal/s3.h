/*
 * internal/s3.h - S3 object stores: AWS Signature Version 4 (sigv4.c) and s3://BUCKET/KEY
 * URLs mapped onto an endpoint (s3.c). The byte source (source_http.c) signs every
 * request with these; spec/remote.md ("S3") says what is sent and why.
 */
#ifndef ONNXCORE_INTERNAL_S3_H
#define ONNXCORE_INTERNAL_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "onnxcore/http.h"
#include "onnxcore/status.h"
#include "internal/url.h"

/* The SHA-256 of no bytes, the x-amz-content-sha256 of every GET and HEAD. */
#define OC__S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* A header or a query parameter, as its bytes (not encoded). */
typedef struct oc__sigv4_pair {
    const char *name, *value;
} oc__sigv4_pair;

/* One request to sign. */
typedef struct oc__sigv4_request {
    const char *method;          /* "GET" */
    const char *path;            /* the object's path as its bytes, from '/': each byte
                                    outside RFC 3986's unreserved set but '/' is encoded
                                    once (S3's UriEncode; no "." or ".." removed) */
    const oc__sigv4_pair *query; /* parameters as their bytes; a value "" gives "k=" */
    size_t nquery;
    const oc__sigv4_pair *headers; /* every header to sign, host included (names in any
                                      case; values trimmed, inner runs of blanks made one) */
    size_t nheaders;
    const char *payload_hash; /* hex SHA-256 of the body (OC__S3_EMPTY_SHA256) */
    const char *amz_date;     /* "YYYYMMDDTHHMMSSZ", as the x-amz-date header says */
    const char *region;       /* "us-east-1" */
    const char *service;      /* "s3" */
    const char *access_key_id;
    const char *secret_access_key;
} oc__sigv4_request;

/* The value of the Authorization header for r ("AWS4-HMAC-SHA256 Credential=KEY/DATE/
 * REGION/SERVICE/aws4_request, SignedHeaders=a;b, Signature=HEX"), malloc'd into *out.
 * Without OpenSSL: OC_ERR_UNSUPPORTED saying so. The secret is wiped from every buffer
 * that held something derived from it. */
oc_status oc__sigv4_authorization(const oc__sigv4_request *r, char **out, oc_error *err);

/* "YYYYMMDDTHHMMSSZ" of t (UTC) into out[17]. */
void oc__s3_amz_date(int64_t t, char out[17]);

/* An s3://BUCKET/KEY URL mapped onto the store the options name (s3.c). */
typedef struct oc__s3_target {
    char *url;    /* the HTTP(S) URL every request goes to (the key encoded once) */
    char *host;   /* its Host header: host, or host:port when the URL gives a port */
    char *path;   /* the path signed, as its bytes: "/KEY" (virtual-hosted) or
                     "/BUCKET/KEY" (path-style) */
    char *bucket; /* for messages */
} oc__s3_target;

/* Fills *t for url under s3 (NULL: AWS's defaults, unsigned). OC_ERR_INVALID_ARG for an
 * s3:// URL without a bucket or a key, or an endpoint that is not an http(s) URL. */
oc_status oc__s3_target_make(const char *url, const oc_s3_options *s3, oc__s3_target *t,
                             oc_error *err);
void oc__s3_target_free(oc__s3_target *t);

/* The region requests are signed for: the options', else "us-east-1". */
const char *oc__s3_region(const oc_s3_options *s3);

/* What the store's XML error body says, as a message's tail: "access denied (403
 * SignatureDoesNotMatch)", "no such key", "no such bucket", "region mismatch (the bucket
 * is in eu-west-1)", "the session token has expired (400 ExpiredToken)"... body: the
 * first bytes of the body (at most a few KiB); region: the x-amz-bucket-region header or
 * "". secrets: the nsecrets strings the request carried that no message may show (the
 * secret, the session token, the Authorization value; NULL entries skipped): every run
 * of 12 bytes or more of one (all of a shorter one) in the server's text becomes "***"
 * before it is quoted. Writes at most cap bytes into out; returns the status the error
 * should carry. */
oc_status oc__s3_explain(long http_status, const char *body, size_t body_len, const char *region,
                         const char *const *secrets, size_t nsecrets, char *out, size_t cap);

/* An object written with a multipart upload (s3_upload.c; spec/remote.md "S3, write"),
 * the sink of an oc_atomic_file on an s3:// URL. open starts the upload (needs
 * credentials; with no_overwrite, an existing key fails with OC_ERR_EXISTS); write appends
 * (each full part PUT on a thread of its own, at most http->parallel at once); hold marks
 * n bytes at `at` that patch will rewrite, whose part is kept back until then; commit
 * sends the last part and completes the upload (with no_overwrite, the key looked at
 * again first); abort, and commit when it fails, abort the upload. commit and abort free
 * u. */
typedef struct oc__s3_upload oc__s3_upload;
oc_status oc__s3_upload_open(const char *url, const oc_http_options *http, bool no_overwrite,
                             oc__s3_upload **out, oc_error *err);
oc_status oc__s3_upload_write(oc__s3_upload *u, const void *data, uint64_t n, oc_error *err);
void oc__s3_upload_hold(oc__s3_upload *u, uint64_t at, uint64_t n);
oc_status oc__s3_upload_patch(oc__s3_upload *u, const void *data, uint64_t n, uint64_t at,
                              oc_error *err);
oc_status oc__s3_upload_commit(oc__s3_upload *u, bool no_overwrite, oc_error *err);
void oc__s3_upload_abort(oc__s3_upload *u);

#endif
