/*
 * s3_upload.c - an s3://BUCKET/KEY written with S3's multipart upload (internal/s3.h,
 * spec/remote.md "S3, write"): the sink of an oc_atomic_file whose path is an s3:// URL.
 *
 * CreateMultipartUpload at open; then each part of PART_MIN bytes or more (growing past
 * 1,000 parts, so that the 10,000 parts S3 allows reach some 440 GiB) is PUT on a thread
 * of its own, at most oc_http_options.parallel at once, so that memory holds those parts,
 * the one being filled and at most two held back for a patch (oc__s3_upload_hold);
 * CompleteMultipartUpload at commit, the object appearing whole only then. Any failure,
 * and the caller's cancel, aborts the upload (AbortMultipartUpload): no part is left
 * stored (and billed) behind.
 *
 * Each part's integrity: its SHA-256 is signed as x-amz-content-sha256 and S3 recomputes
 * it, refusing the part (XAmzContentSHA256Mismatch) when the bytes it got differ; that is
 * the checksum S3 already requires of a signed request, so no Content-MD5 or
 * x-amz-checksum-* is added (those would need the upload created with a checksum
 * algorithm, and change the object's stored checksum type).
 */
#define _DEFAULT_SOURCE /* strcasecmp */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "crypto/backend.h"
#include "internal/error.h"
#include "internal/parallel.h"
#include "internal/s3.h"

#define PART_MIN  (8u << 20) /* bytes of a part (S3: at least 5 MiB but the last) */
#define PARTS_MAX 10000u     /* S3's limit */
#define BODY_MAX  (1u << 20) /* of a response kept (an error's XML, the upload's id) */

typedef struct part {
    uint32_t number; /* 1.. */
    uint64_t at;     /* offset of its first byte in the object */
    uint8_t *buf;
    size_t len;
    pthread_t tid;
    int running;             /* a thread was started for it */
    atomic_int done;         /* its thread ended */
    oc_status st;            /* its thread's result */
    oc_error err;            /* its thread's error */
    char etag[256];          /* what the store answered, taken by reap (etags) */
    struct oc__s3_upload *u; /* for its thread */
} part;

struct oc__s3_upload {
    oc__s3_target t;
    char *shown; /* the URL as messages show it */
    const oc_http_options *http;
    const oc_s3_options *s3;
    char *upload_id;
    int parallel, retries;
    long timeout_s, connect_ms;
    atomic_int stop; /* set on failure or cancel: running parts give up */
    uint64_t written;
    part *cur;     /* being filled, or NULL */
    part *fly[16]; /* started, not yet reaped */
    int nfly;
    part *held[2]; /* full, kept back for a patch */
    int nheld;
    int hold; /* a patch of [hold_at, hold_at + hold_len) is to come */
    uint64_t hold_at, hold_len;
    char **etags; /* by part number - 1 */
    uint32_t nparts;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* ---- one request ---- */

typedef struct resp {
    long status;
    char *body;
    size_t len;
    char etag[256];
    /* The Authorization value the last attempt carried (its end, where the signature is,
     * when longer), for refused() to mask in what the store echoes. */
    char auth[512];
    const atomic_int *stop;
    const oc_http_options *http; /* its cancel is polled on the caller's thread only */
    int caller;
    struct timespec polled;
} resp;

static size_t on_body(char *data, size_t size, size_t n, void *ctx) {
    resp *r = ctx;
    size_t k = size * n;
    if (r->len + k > BODY_MAX) return k; /* the rest is not needed */
    char *b = realloc(r->body, r->len + k + 1);
    if (!b) return 0;
    memcpy(b + r->len, data, k);
    r->len += k;
    b[r->len] = '\0';
    r->body = b;
    return k;
}

static size_t on_header(char *line, size_t size, size_t n, void *ctx) {
    resp *r = ctx;
    size_t k = size * n;
    if (k > 5 && strncasecmp(line, "ETag:", 5) == 0) {
        const char *v = line + 5;
        size_t m = k - 5;
        while (m && (*v == ' ' || *v == '\t')) v++, m--;
        while (m && (v[m - 1] == '\r' || v[m - 1] == '\n' || v[m - 1] == ' ')) m--;
        if (m < sizeof r->etag) {
            memcpy(r->etag, v, m);
            r->etag[m] = '\0';
        }
    }
    return k;
}

static int cancelled(resp *r) {
    if (r->stop && atomic_load(r->stop)) return 1;
    if (r->caller && r->http && r->http->cancel) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double dt = (double)(now.tv_sec - r->polled.tv_sec) +
                    (double)(now.tv_nsec - r->polled.tv_nsec) / 1e9;
        if (dt >= 0.1) {
            r->polled = now;
            if (r->http->cancel(r->http->cancel_ctx)) return 1;
        }
    }
    return 0;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d) {
    (void)a, (void)b, (void)c, (void)d;
    return cancelled(ctx);
}

static void backoff(int attempt) {
    long ms = 100L << (attempt < 6 ? attempt : 6);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Appends "name: value" to *l; 0 when out of memory. */
static int add_header(struct curl_slist **l, const char *name, const char *value) {
    size_t n = strlen(name) + strlen(value) + 3;
    char *s = malloc(n);
    if (!s) return 0;
    snprintf(s, n, "%s: %s", name, value);
    struct curl_slist *m = curl_slist_append(*l, s);
    free(s);
    if (!m) return 0;
    *l = m;
    return 1;
}

static void hex32(const uint8_t d[32], char out[65]) {
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[64] = '\0';
}

/* One signed request to the object (method; query pairs, signed and sent encoded; a body
 * of n bytes), retried as reads are (a 5xx, a broken connection; each attempt signed
 * afresh). *r gets the final status, the body's first bytes and the ETag. A status of
 * 300 or more is no error here: the caller judges it. caller: run on the caller's thread
 * (its cancel is polled). */
static oc_status call(oc__s3_upload *u, const char *method, const oc__sigv4_pair *q, size_t nq,
                      const void *body, size_t n, int caller, resp *r, oc_error *err) {
    memset(r, 0, sizeof *r);
    r->stop = &u->stop;
    r->http = u->http;
    r->caller = caller;
    clock_gettime(CLOCK_MONOTONIC, &r->polled);
    char hash[65];
    uint8_t d[OC__CB_SHA256_SIZE];
    OC_FORWARD(oc__cb_sha256(body ? body : "", n, d, err));
    hex32(d, hash);
    /* The URL: the object's, and the query with each side encoded as it is signed. */
    size_t qlen = 1;
    for (size_t i = 0; i < nq; i++) qlen += 3 * (strlen(q[i].name) + strlen(q[i].value)) + 2;
    char *url = malloc(strlen(u->t.url) + qlen + 1);
    if (!url) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    strcpy(url, u->t.url);
    for (size_t i = 0; i < nq; i++) {
        char *e = url + strlen(url);
        *e++ = i ? '&' : '?';
        oc__uri_encode(q[i].name, strlen(q[i].name), 0, e);
        if (*q[i].value) {
            strcat(e, "=");
            e += strlen(e);
            oc__uri_encode(q[i].value, strlen(q[i].value), 0, e);
        }
    }
    CURL *c = curl_easy_init();
    if (!c) {
        free(url);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    oc_status st = OC_OK;
    char errbuf[CURL_ERROR_SIZE], quoted[4 * CURL_ERROR_SIZE];
    for (int attempt = 0;; attempt++) {
        char date[17];
        oc__s3_amz_date((int64_t)time(NULL), date);
        const char *token = u->s3->session_token;
        /* Content-Length is libcurl's to send (and none on a HEAD): not signed; the body
         * is, by its SHA-256. */
        oc__sigv4_pair hd[4] = {{"host", u->t.host},
                                {"x-amz-content-sha256", hash},
                                {"x-amz-date", date},
                                {"x-amz-security-token", token ? token : ""}};
        size_t nh = token ? 4 : 3;
        oc__sigv4_request sr = {.method = method,
                                .path = u->t.path,
                                .query = q,
                                .nquery = nq,
                                .headers = hd,
                                .nheaders = nh,
                                .payload_hash = hash,
                                .amz_date = date,
                                .region = oc__s3_region(u->s3),
                                .service = "s3",
                                .access_key_id = u->s3->access_key_id,
                                .secret_access_key = u->s3->secret_access_key};
        char *auth = NULL;
        if ((st = oc__sigv4_authorization(&sr, &auth, err)) != OC_OK) break;
        struct curl_slist *l = NULL;
        int ok = 1;
        for (size_t i = 1; i < nh && ok; i++) ok = add_header(&l, hd[i].name, hd[i].value);
        /* (hd[0], Host, goes as libcurl makes it from the URL: the same text) */
        ok = ok && add_header(&l, "Authorization", auth) && add_header(&l, "Expect", "");
        ok = ok && add_header(&l, "Content-Type", "application/octet-stream");
        size_t alen = strlen(auth), keep = alen < sizeof r->auth ? alen : sizeof r->auth - 1;
        memcpy(r->auth, auth + alen - keep, keep);
        r->auth[keep] = '\0';
        free(auth);
        if (!ok) {
            curl_slist_free_all(l);
            st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
            break;
        }
        free(r->body);
        r->body = NULL;
        r->len = 0;
        r->status = 0;
        r->etag[0] = '\0';
        errbuf[0] = '\0';
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
        curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, l);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, u->connect_ms);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, u->timeout_s);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, r);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(c, CURLOPT_USERAGENT, "onnxz");
        if (u->http->ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, u->http->ca_file);
        if (u->http->insecure) {
            curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
        }
        if (strcmp(method, "HEAD") == 0) {
            curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
        } else {
            curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
            if (strcmp(method, "DELETE") != 0) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
                curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
            }
        }
        CURLcode rc = curl_easy_perform(c);
        curl_slist_free_all(l);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
        if (rc == CURLE_ABORTED_BY_CALLBACK) {
            st = oc__fail(err, OC_ERR_CANCELLED, OC_NO_OFFSET, "%s: cancelled", u->shown);
            break;
        }
        int transient = rc == CURLE_OK
                            ? r->status >= 500
                            : rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
                                  rc == CURLE_PARTIAL_FILE || rc == CURLE_GOT_NOTHING ||
                                  rc == CURLE_COULDNT_CONNECT || rc == CURLE_OPERATION_TIMEDOUT;
        if (transient && attempt < u->retries && !atomic_load(&u->stop)) {
            backoff(attempt);
            continue;
        }
        if (rc != CURLE_OK) {
            const char *why = errbuf[0] ? oc_quote(errbuf, strlen(errbuf), quoted, sizeof quoted)
                                        : curl_easy_strerror(rc);
            st = oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s: %s", u->shown, why);
        }
        break;
    }
    curl_easy_cleanup(c);
    free(url);
    if (st != OC_OK) {
        free(r->body);
        r->body = NULL;
    }
    return st;
}

/* The error for a response the store refused: "s3://b/k: WHAT: what the store said". */
static oc_status refused(oc__s3_upload *u, const char *what, resp *r, oc_error *err) {
    char why[2 * OC_QUOTE_SIZE + 64];
    const char *secrets[3] = {u->s3->secret_access_key, u->s3->session_token, r->auth};
    oc_status s =
        oc__s3_explain(r->status, r->body ? r->body : "", r->len, "", secrets, 3, why, sizeof why);
    free(r->body);
    r->body = NULL;
    return oc__fail(err, s, OC_NO_OFFSET, "%s: %s: %s", u->shown, what, why);
}

/* The text of <tag>...</tag> in s, malloc'd, or NULL. */
static char *xml_text(const char *s, const char *tag) {
    char open[40], close[40];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *a = s ? strstr(s, open) : NULL;
    const char *z = a ? strstr(a, close) : NULL;
    if (!z) return NULL;
    a += strlen(open);
    char *out = malloc((size_t)(z - a) + 1);
    if (out) {
        memcpy(out, a, (size_t)(z - a));
        out[z - a] = '\0';
    }
    return out;
}

/* ---- the upload ---- */

/* Whether the key exists: HEAD, 200 yes, 404 no; anything else (a HEAD has no body to
 * say why) leaves *head_status for the caller to judge. */
static oc_status exists(oc__s3_upload *u, int *yes, long *head_status, oc_error *err) {
    resp r;
    OC_FORWARD(call(u, "HEAD", NULL, 0, NULL, 0, 1, &r, err));
    free(r.body);
    *head_status = r.status;
    *yes = r.status >= 200 && r.status < 300;
    return OC_OK;
}

/* OC_ERR_EXISTS when the key exists; *unknown set when the store would not say (then the
 * caller's next request, with a body, tells why). */
static oc_status refuse_existing(oc__s3_upload *u, long *unknown, oc_error *err) {
    int yes = 0;
    long status = 0;
    OC_FORWARD(exists(u, &yes, &status, err));
    if (yes) return oc__fail(err, OC_ERR_EXISTS, OC_NO_OFFSET, "%s already exists", u->shown);
    if (status != 404) {
        if (unknown) {
            *unknown = status;
            return OC_OK;
        }
        resp r = {.status = status};
        return refused(u, "cannot tell whether it exists", &r, err);
    }
    return OC_OK;
}

static void upload_free(oc__s3_upload *u) {
    if (!u) return;
    oc__s3_target_free(&u->t);
    free(u->shown);
    free(u->upload_id);
    for (uint32_t i = 0; i < u->nparts; i++) free(u->etags[i]);
    free(u->etags);
    pthread_mutex_destroy(&u->mu);
    pthread_cond_destroy(&u->cv);
    free(u);
}

oc_status oc__s3_upload_open(const char *url, const oc_http_options *http, bool no_overwrite,
                             oc__s3_upload **out, oc_error *err) {
    *out = NULL;
    char shown[OC_ERROR_MESSAGE_MAX];
    oc_path_shown(url, shown, sizeof shown);
    const oc_s3_options *s3 = http ? http->s3 : NULL;
    if (!s3 || !s3->access_key_id || !s3->secret_access_key)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "%s: writing to S3 needs credentials (AWS_ACCESS_KEY_ID and "
                        "AWS_SECRET_ACCESS_KEY, or a profile of ~/.aws/credentials)",
                        shown);
    oc__s3_upload *u = calloc(1, sizeof *u);
    if (!u) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    pthread_mutex_init(&u->mu, NULL);
    pthread_cond_init(&u->cv, NULL);
    u->http = http;
    u->s3 = s3;
    u->shown = strdup(shown);
    u->parallel = http->parallel <= 0 ? 4 : http->parallel > 16 ? 16 : http->parallel;
    u->retries = http->retries < 0 ? 0 : http->retries == 0 ? 3 : http->retries;
    u->timeout_s = http->timeout_ms ? (long)((http->timeout_ms + 999) / 1000) : 30;
    u->connect_ms = http->connect_ms ? (long)http->connect_ms : 15000;
    oc_status st = u->shown ? oc__s3_target_make(url, s3, &u->t, err)
                            : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    long unknown = 0; /* the HEAD's status when it said neither yes nor no */
    if (st == OC_OK && no_overwrite) st = refuse_existing(u, &unknown, err);
    if (st == OC_OK) {
        oc__sigv4_pair q[1] = {{"uploads", ""}};
        resp r;
        st = call(u, "POST", q, 1, NULL, 0, 1, &r, err);
        if (st == OC_OK && r.status != 200) st = refused(u, "cannot start the upload", &r, err);
        if (st == OC_OK) {
            u->upload_id = xml_text(r.body, "UploadId");
            free(r.body);
            if (!u->upload_id || !*u->upload_id)
                st = oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                              "%s: the store started the upload without an UploadId", u->shown);
        }
    }
    if (st == OC_OK && unknown) { /* may write, may not look: not replaced unseen */
        resp r = {.status = unknown};
        st = refused(u, "cannot tell whether it exists", &r, err);
        oc__s3_upload_abort(u); /* frees u */
        return st;
    }
    if (st != OC_OK) {
        upload_free(u);
        return st;
    }
    *out = u;
    return OC_OK;
}

static void *part_run(void *arg) {
    part *p = arg;
    oc__s3_upload *u = p->u;
    char num[16];
    snprintf(num, sizeof num, "%u", p->number);
    oc__sigv4_pair q[2] = {{"partNumber", num}, {"uploadId", u->upload_id}};
    resp r;
    oc_error_clear(&p->err);
    p->st = call(u, "PUT", q, 2, p->buf, p->len, 0, &r, &p->err);
    if (p->st == OC_OK && r.status != 200) {
        char what[48];
        snprintf(what, sizeof what, "part %u refused", p->number);
        p->st = refused(u, what, &r, &p->err);
    } else if (p->st == OC_OK) {
        free(r.body);
        if (!r.etag[0])
            p->st = oc__fail(&p->err, OC_ERR_IO, OC_NO_OFFSET,
                             "%s: the store took part %u without an ETag", u->shown, p->number);
        else /* u->etags may move meanwhile (new_part): reap copies it in */
            memcpy(p->etag, r.etag, sizeof p->etag);
    }
    if (p->st != OC_OK) atomic_store(&u->stop, 1);
    free(p->buf);
    p->buf = NULL;
    pthread_mutex_lock(&u->mu);
    atomic_store(&p->done, 1);
    pthread_cond_broadcast(&u->cv);
    pthread_mutex_unlock(&u->mu);
    return NULL;
}

/* Joins every part started whose thread has ended (all: wait for each); the first
 * failure's error into err. A part that gave up because another failed (OC_ERR_CANCELLED:
 * part threads poll no caller's cancel) does not hide that other's error: then every
 * part is waited for, and the error that stopped them told. */
static oc_status reap(oc__s3_upload *u, int all, oc_error *err) {
    oc_status st = OC_OK;
    for (int i = 0; i < u->nfly;) {
        if (st == OC_ERR_CANCELLED) all = 1;
        part *p = u->fly[i];
        if (!all && !atomic_load(&p->done)) {
            i++;
            continue;
        }
        pthread_join(p->tid, NULL);
        if (p->st == OC_OK && !(u->etags[p->number - 1] = strdup(p->etag))) {
            p->st = OC_ERR_NOMEM;
            oc__fail(&p->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        }
        if (p->st != OC_OK && (st == OC_OK || st == OC_ERR_CANCELLED) && p->st != st) {
            st = p->st;
            if (err) *err = p->err;
        }
        free(p->buf);
        free(p);
        u->fly[i] = u->fly[--u->nfly];
    }
    if (st == OC_ERR_CANCELLED && u->nfly) { /* parts passed over while running */
        oc_error other;
        oc_error_clear(&other);
        oc_status s2 = reap(u, 1, &other);
        if (s2 != OC_OK && s2 != OC_ERR_CANCELLED) {
            st = s2;
            if (err) *err = other;
        }
    }
    return st;
}

/* Waits until fewer than `room` parts are in flight, polling the caller's cancel. */
static oc_status wait_room(oc__s3_upload *u, int room, oc_error *err) {
    for (;;) {
        oc_status st = reap(u, 0, err);
        if (st != OC_OK) return st;
        if (u->nfly < room) return OC_OK;
        if (u->http->cancel && u->http->cancel(u->http->cancel_ctx)) {
            atomic_store(&u->stop, 1);
            return oc__fail(err, OC_ERR_CANCELLED, OC_NO_OFFSET, "%s: cancelled", u->shown);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_mutex_lock(&u->mu);
        int any = 0;
        for (int i = 0; i < u->nfly; i++) any |= atomic_load(&u->fly[i]->done);
        if (!any) pthread_cond_timedwait(&u->cv, &u->mu, &ts);
        pthread_mutex_unlock(&u->mu);
    }
}

/* Starts p's PUT (waiting for room first). */
static oc_status launch(oc__s3_upload *u, part *p, oc_error *err) {
    oc_status st = wait_room(u, u->parallel, err);
    if (st == OC_OK) {
        p->u = u;
        u->fly[u->nfly++] = p;
        if (oc__thread_start(&p->tid, part_run, p) != 0) {
            u->nfly--;
            st = oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s: cannot start a thread", u->shown);
        }
    }
    if (st != OC_OK) {
        free(p->buf);
        free(p);
    }
    return st;
}

static int overlaps_hold(const oc__s3_upload *u, const part *p) {
    return u->hold && p->at < u->hold_at + u->hold_len && u->hold_at < p->at + p->len;
}

/* Sends the full part being filled, or holds it back for the patch to come. */
static oc_status ship(oc__s3_upload *u, oc_error *err) {
    part *p = u->cur;
    u->cur = NULL;
    if (overlaps_hold(u, p)) {
        if (u->nheld == 2) {
            free(p->buf);
            free(p);
            return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "%s: a patch spans more than two parts", u->shown);
        }
        u->held[u->nheld++] = p;
        return OC_OK;
    }
    return launch(u, p, err);
}

/* The size of part `number`: PART_MIN, growing by PART_MIN every 1,000 parts. */
static size_t part_size(uint32_t number) { return (size_t)PART_MIN * (1 + (number - 1) / 1000); }

static oc_status new_part(oc__s3_upload *u, oc_error *err) {
    if (u->nparts == PARTS_MAX)
        return oc__fail(err, OC_ERR_LIMIT, OC_NO_OFFSET,
                        "%s: more than %u parts: the object is too large for S3", u->shown,
                        PARTS_MAX);
    char **e = realloc(u->etags, (u->nparts + 1) * sizeof *e);
    if (!e) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    u->etags = e;
    e[u->nparts] = NULL;
    part *p = calloc(1, sizeof *p);
    uint32_t number = u->nparts + 1;
    if (p) p->buf = malloc(part_size(number));
    if (!p || !p->buf) {
        free(p);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    u->nparts = number;
    p->number = number;
    p->at = u->written;
    u->cur = p;
    return OC_OK;
}

oc_status oc__s3_upload_write(oc__s3_upload *u, const void *data, uint64_t n, oc_error *err) {
    const uint8_t *s = data;
    while (n) {
        if (!u->cur) OC_FORWARD(new_part(u, err));
        part *p = u->cur;
        size_t room = part_size(p->number) - p->len;
        size_t k = n < room ? (size_t)n : room;
        memcpy(p->buf + p->len, s, k);
        p->len += k;
        u->written += k;
        s += k;
        n -= k;
        if (p->len == part_size(p->number)) OC_FORWARD(ship(u, err));
    }
    return OC_OK;
}

void oc__s3_upload_hold(oc__s3_upload *u, uint64_t at, uint64_t n) {
    u->hold = 1;
    u->hold_at = at;
    u->hold_len = n;
}

static int patch_into(part *p, const uint8_t *data, uint64_t n, uint64_t at) {
    if (!p || at + n <= p->at || at >= p->at + p->len) return 0;
    uint64_t from = at > p->at ? at : p->at;
    uint64_t to = at + n < p->at + p->len ? at + n : p->at + p->len;
    memcpy(p->buf + (from - p->at), data + (from - at), (size_t)(to - from));
    return (int)(to - from);
}

oc_status oc__s3_upload_patch(oc__s3_upload *u, const void *data, uint64_t n, uint64_t at,
                              oc_error *err) {
    if (!u->hold || at < u->hold_at || at + n > u->hold_at + u->hold_len)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "%s: a patch at %" PRIu64 " was not held back", u->shown, at);
    uint64_t done = 0;
    for (int i = 0; i < u->nheld; i++) done += (uint64_t)patch_into(u->held[i], data, n, at);
    done += (uint64_t)patch_into(u->cur, data, n, at);
    if (done != n)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "%s: a patch at %" PRIu64 " found its part gone", u->shown, at);
    u->hold = 0;
    oc_status st = OC_OK;
    for (int i = 0; i < u->nheld; i++) {
        if (st == OC_OK)
            st = launch(u, u->held[i], err);
        else {
            free(u->held[i]->buf);
            free(u->held[i]);
        }
    }
    u->nheld = 0;
    return st;
}

void oc__s3_upload_abort(oc__s3_upload *u) {
    if (!u) return;
    atomic_store(&u->stop, 1);
    /* Every part still running is waited for and freed; their errors are not told: an
     * abort follows a failure its caller already holds (the first error wins), and a part
     * stopped by it fails only for that (OC_ERR_CANCELLED) or after it. */
    (void)reap(u, 1, NULL);
    for (int i = 0; i < u->nheld; i++) {
        free(u->held[i]->buf);
        free(u->held[i]);
    }
    if (u->cur) {
        free(u->cur->buf);
        free(u->cur);
    }
    if (u->upload_id) {
        /* The abort itself must run even when cancelled: the stop flag is lowered. */
        atomic_store(&u->stop, 0);
        const oc_http_options *keep = u->http;
        oc_http_options quiet = *keep;
        quiet.cancel = NULL;
        u->http = &quiet;
        oc__sigv4_pair q[1] = {{"uploadId", u->upload_id}};
        resp r;
        oc_error e;
        oc_error_clear(&e);
        if (call(u, "DELETE", q, 1, NULL, 0, 1, &r, &e) == OC_OK) free(r.body);
        u->http = keep;
    }
    upload_free(u);
}

oc_status oc__s3_upload_commit(oc__s3_upload *u, bool no_overwrite, oc_error *err) {
    oc_status st = OC_OK;
    if (u->hold)
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "%s: a patch held back never came",
                      u->shown);
    if (st == OC_OK && !u->cur && u->nparts == 0) st = new_part(u, err); /* an empty object */
    if (st == OC_OK && u->cur) {
        part *p = u->cur;
        u->cur = NULL;
        st = launch(u, p, err);
    }
    if (st == OC_OK) st = wait_room(u, 1, err);
    if (st == OC_OK) st = reap(u, 1, err);
    /* Without overwrite, the key is looked at again just before the object appears (the
     * gate, as s3rver, takes no If-None-Match on CompleteMultipartUpload). */
    if (st == OC_OK && no_overwrite) st = refuse_existing(u, NULL, err);
    char *xml = NULL;
    if (st == OC_OK) {
        size_t cap = 64 + (size_t)u->nparts * 320, len = 0;
        xml = malloc(cap);
        if (!xml) st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        for (uint32_t i = 0; xml && i <= u->nparts; i++) {
            if (i == 0) len += (size_t)snprintf(xml + len, cap - len, "<CompleteMultipartUpload>");
            if (i < u->nparts)
                len += (size_t)snprintf(xml + len, cap - len,
                                        "<Part><PartNumber>%u</PartNumber><ETag>%.250s</ETag>"
                                        "</Part>",
                                        i + 1, u->etags[i]);
            else
                len += (size_t)snprintf(xml + len, cap - len, "</CompleteMultipartUpload>");
        }
        if (xml) {
            oc__sigv4_pair q[1] = {{"uploadId", u->upload_id}};
            resp r;
            st = call(u, "POST", q, 1, xml, len, 1, &r, err);
            /* S3 may answer 200 and then an error in the body */
            if (st == OC_OK && (r.status != 200 || (r.body && strstr(r.body, "<Error>"))))
                st = refused(u, "the upload did not complete", &r, err);
            else if (st == OC_OK)
                free(r.body);
        }
        free(xml);
    }
    if (st != OC_OK) {
        oc__s3_upload_abort(u);
        return st;
    }
    upload_free(u);
    return OC_OK;
}
