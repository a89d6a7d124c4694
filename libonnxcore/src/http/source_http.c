/*
 * source_http.c - an object on an HTTP(S) server as a byte source (internal/source.h),
 * read with ranged GETs on libcurl.
 *
 * Every read is `Range: bytes=A-B` and must come back `206` with exactly
 * `Content-Range: bytes A-B/SIZE`; anything else stops the transfer at its first body
 * byte (a server that ignores ranges and sends the whole object costs nothing more than
 * its headers). The first request, at open, is the suffix `bytes=-65536`: it gives the
 * size and the identity (ETag, Last-Modified), which every later response must repeat,
 * and the tail, kept for reads that fall in it. Transfers that break (a reset, a 5xx, a
 * body cut short) are retried with backoff, resuming after the bytes already received;
 * a stall or a 4xx is not. Handles are pooled and keep their connections alive.
 *
 * Reads announced with will_read (a converter that will read every entry of an archive)
 * go through a read-ahead window: a read smaller than the window that lies in an announced
 * range fetches the window from there in one request, and the reads after it that fall
 * inside are served from memory: 70,000 small tensors cost a few requests, not 70,000.
 * Reads not announced (a `get` of one tensor) fetch exactly their bytes.
 *
 * A large read (PAR_MIN or more, once the window has served what it holds) is split into
 * PAR_CHUNK ranges fetched by up to `parallel` threads at once, each running request() on
 * a pooled handle of its own, so every check and retry above applies to every range; the
 * ranges are passed on strictly in order, with at most `parallel` of them in memory
 * (spec/remote.md R-13).
 *
 * The last few objects opened are remembered for a few seconds (URL, size, identity and
 * tail): opening it again, as a caller that first asks what a URL holds and then opens it
 * does, costs no request. Nothing stale can mix in: every byte fetched afterwards is
 * checked against that identity.
 */
#define _DEFAULT_SOURCE /* strcasecmp, strncasecmp */
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
#include <unistd.h>

#include "onnxcore/http.h"
#include "internal/error.h"
#include "internal/hf.h"
#include "internal/parallel.h"
#include "internal/onnxcore_shared.h"
#include "internal/s3.h"
#include "internal/settings_file.h"
#include "internal/source.h"
#include "internal/source_http.h"
#include "internal/url.h"
#include "crypto/backend.h"

#define POOL_MAX     16          /* idle handles kept (each with its connection) */
#define AHEAD_WINDOW (8u << 20)  /* the read-ahead window (announced reads only) */
#define AHEAD_GAP    (64u << 10) /* announced ranges this close are read as one */
#define PAR_MIN      (16u << 20) /* reads this large are split across connections */
#define PAR_CHUNK    (4u << 20)  /* into ranges of this size */
#define PAR_MAX      16          /* connections per read, at most */
#define PAR_DEFAULT  4

/* Bytes [at, at + len) of the object, read ahead. Readers that serve from a window hold a
 * reference, so that a refill by another thread replaces it without pulling it from under
 * them; the source holds one for its current window. */
typedef struct window {
    uint64_t at, len;
    int refs;
    uint8_t data[];
} window;

typedef struct http_source {
    oc_source head;
    char *key;  /* url as it was at open, before a pin: what recall and remember match */
    char *url;  /* requested (redirects are followed again on every request): the URL as
                   given, an s3:// URL's store URL, or an hf:// URL's resolve URL (at the
                   commit once pinned) */
    char *auth; /* "Authorization: ..." or NULL */
    /* An hf:// URL (internal/hf.h): its parts, the commit the hub reported at open (every
     * later request asks for it) and the hf:// URL naming that commit. */
    int hf;
    oc_hf_ref ref;
    char commit[41];
    char *pinned;
    /* An s3:// URL (internal/s3.h): url is the store's; every request carries these
     * headers, signed afresh when a key is given (s3_key_id non-NULL). */
    int s3;
    char *s3_host, *s3_path, *s3_region;
    char *s3_key_id, *s3_secret, *s3_token;
    char *recall_key; /* who asks, for the recent opens: auth, or the S3 key's identity */
    char *ca_file;    /* or NULL */
    int insecure;
    long timeout_s;       /* stall: no byte for this long; headers within it; the rate's window */
    uint64_t min_rate;    /* bytes per second of body, averaged over each window */
    double deadline_s;    /* a request's longest time, or 0 */
    uint64_t max_headers; /* bytes of one response's headers */
    int (*cancel)(void *ctx); /* the caller's, polled on its thread (oc_http_options) */
    void *cancel_ctx;
    long connect_ms;
    int retries;
    int parallel;   /* connections per large read (1: one, as small reads) */
    char etag[256]; /* identity at open ("" when the server sends none) */
    char modified[64];
    uint8_t *tail; /* the object's last tail_len bytes */
    uint64_t tail_len;
    pthread_mutex_t lock; /* the pool */
    CURL *idle[POOL_MAX];
    int nidle;
    pid_t pid; /* the process whose connections the pool holds (after a fork: the parent's) */
    /* Read-ahead (will_read): the announced ranges, sorted and merged, and the current
     * window; ahead_lock guards the three and the windows' reference counts (never held
     * while a request runs or a caller's writer is called). */
    pthread_mutex_t ahead_lock;
    oc_source_range *ahead;
    size_t nahead;
    struct window *win;
} http_source;

/* Why a transfer was ended by the bounds of spec/remote.md R-15 (xfer.gave_up). */
enum { GAVE_NONE, GAVE_STALL, GAVE_HEADERS, GAVE_SLOW, GAVE_DEADLINE, GAVE_CANCEL };

/* One request's state, filled by the header and body callbacks. */
typedef struct xfer {
    http_source *h;
    uint8_t *dst;
    uint64_t at, want; /* asked: [at, at + want); want 0 at open (a suffix range) */
    uint64_t got;
    long status;   /* of the last response (redirects reset it) */
    int has_range; /* Content-Range parsed */
    uint64_t r_first, r_last, r_total;
    int unsatisfiable_total; /* 416: "bytes * / SIZE" seen */
    char etag[256], modified[64];
    char commit[64];        /* the first X-Repo-Commit of the request (the hub's) */
    char error_code[64];    /* the response's X-Error-Code (the hub says why it refused) */
    int checked;            /* the response was checked at its first body byte */
    char why[512];          /* why the body was refused, for the error */
    struct timespec last;   /* when a byte (of headers or body) last arrived */
    struct timespec start;  /* when this attempt started */
    struct timespec phase;  /* when this request's headers began, or its body's window */
    struct timespec headed; /* the first byte of the request's first response */
    int in_body;            /* the headers ended: phase is the rate's window */
    uint64_t window_got;    /* got when the window began */
    uint64_t header_bytes;  /* of the request's responses so far */
    int gave_up;            /* why the progress callback ended the transfer (enum below) */
    struct timespec polled; /* when the caller's cancel was last asked */
    uint64_t ignored;       /* body bytes of an empty object's 416, thrown away */
    uint8_t *open_buf;      /* at open: the tail, allocated once the size is known */
    oc_write_fn sink;       /* read_to: the body goes here, not into dst */
    void *sink_ctx;
    oc_error *sink_err;
    oc_status sink_st;        /* what the sink said when it refused (not retried) */
    const atomic_int *cancel; /* a parallel read: set when another range failed, or NULL */
    char errbody[4096];       /* an S3 error response's first bytes (its XML) */
    size_t errlen;
    char bucket_region[64]; /* x-amz-bucket-region */
} xfer;

/* The objects opened last (see the top of this file): a model and its data files. */
#define RECENT_SECONDS 10
#define RECENT_MAX     4
typedef struct recent_open {
    char *url, *auth, *ca_file;
    char *fetch_url, *pinned; /* h->url and h->pinned then (an hf:// URL's), or NULL */
    char commit[41];
    uint64_t size;
    char etag[256], modified[64];
    uint8_t *tail;
    uint64_t tail_len;
    struct timespec at;
} recent_open;
static pthread_mutex_t recent_lock = PTHREAD_MUTEX_INITIALIZER;
static recent_open recent[RECENT_MAX];

static int same_text(const char *a, const char *b) {
    return a == b || (a && b && strcmp(a, b) == 0);
}

static double seconds_since(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

/* Fills h from the remembered open of the same URL and credentials; 1 when it did. */
static int recall(struct http_source *h);
/* Remembers h's open (best effort: nothing happens when out of memory). */
static void remember(const struct http_source *h, const char *key);

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;
static void global_init(void) { global_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

/* ---- responses ---- */

static void copy_value(char *dst, size_t cap, const char *v, size_t n) {
    while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' ')) n--;
    while (n && *v == ' ') v++, n--;
    if (n >= cap) n = cap - 1;
    memcpy(dst, v, n);
    dst[n] = '\0';
}

/* "bytes A-B/SIZE" (or "bytes * /SIZE" of a 416) */
static void parse_content_range(xfer *x, const char *v, size_t n) {
    char buf[128];
    copy_value(buf, sizeof buf, v, n);
    uint64_t a, b, t;
    char tail;
    if (sscanf(buf, "bytes %" SCNu64 "-%" SCNu64 "/%" SCNu64 "%c", &a, &b, &t, &tail) == 3 &&
        a <= b && b < t) {
        x->has_range = 1;
        x->r_first = a, x->r_last = b, x->r_total = t;
    } else if (sscanf(buf, "bytes */%" SCNu64 "%c", &t, &tail) == 1) {
        x->unsatisfiable_total = 1;
        x->r_total = t;
    }
}

/* An interim response (1xx: 100 Continue, 102 Processing, 103 Early Hints) precedes the
 * final one of the same request: its headers are part of the final response's. */
static int interim(long status) { return status >= 100 && status < 200; }

static size_t on_header(char *line, size_t size, size_t n, void *ctx) {
    xfer *x = ctx;
    size_t len = size * n;
    clock_gettime(CLOCK_MONOTONIC, &x->last);
    /* The responses of one request (interim ones, redirects) share one header window,
     * from the first byte of the first, and one byte count: else a server sending 102
     * after 102, or redirecting to itself with each response just under the window,
     * would hold a read far past its bounds. */
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0 && !interim(x->status)) {
        if (x->status == 0) x->headed = x->last;
        x->phase = x->headed;
        x->in_body = 0;
    }
    if ((x->header_bytes += len) > x->h->max_headers) {
        snprintf(x->why, sizeof x->why, "the response's headers exceed %" PRIu64 " bytes",
                 x->h->max_headers);
        return 0; /* CURLE_WRITE_ERROR */
    }
    if (len <= 2 && (len == 0 || line[0] == '\r' || line[0] == '\n')) { /* the headers end */
        if (interim(x->status)) return len; /* only the interim response's: more to come */
        x->phase = x->last;
        x->in_body = 1;
        x->window_got = x->got;
        return len;
    }
    if (len >= 5 && memcmp(line, "HTTP/", 5) == 0) {
        const char *sp = memchr(line, ' ', len);
        x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        x->has_range = x->unsatisfiable_total = 0;
        x->etag[0] = x->modified[0] = x->bucket_region[0] = x->error_code[0] = '\0';
        x->errlen = 0;
        return len;
    }
    const char *colon = memchr(line, ':', len);
    if (!colon) return len;
    size_t klen = (size_t)(colon - line);
    const char *v = colon + 1;
    size_t vlen = len - klen - 1;
    if (klen == 13 && strncasecmp(line, "Content-Range", 13) == 0)
        parse_content_range(x, v, vlen);
    else if (klen == 4 && strncasecmp(line, "ETag", 4) == 0)
        copy_value(x->etag, sizeof x->etag, v, vlen);
    else if (klen == 13 && strncasecmp(line, "Last-Modified", 13) == 0)
        copy_value(x->modified, sizeof x->modified, v, vlen);
    else if (klen == 19 && strncasecmp(line, "x-amz-bucket-region", 19) == 0)
        copy_value(x->bucket_region, sizeof x->bucket_region, v, vlen);
    else if (x->h->hf && klen == 13 && strncasecmp(line, "X-Repo-Commit", 13) == 0 &&
             !x->commit[0]) /* the hub's: a storage host after it has no say */
        copy_value(x->commit, sizeof x->commit, v, vlen);
    else if (x->h->hf && klen == 12 && strncasecmp(line, "X-Error-Code", 12) == 0)
        copy_value(x->error_code, sizeof x->error_code, v, vlen);
    return len;
}

/* A header's value as messages show it: quoted (oc_quote), or "none". */
static const char *shown_value(const char *v, char out[OC_QUOTE_SIZE]) {
    return v[0] ? oc_quote(v, strlen(v), out, OC_QUOTE_SIZE) : "none";
}

/* x->why for a response that is no 206: "HTTP N", and from the hub what it said
 * (X-Error-Code, quoted: the server's text) and, for 401 and 403, what it wants. */
static void hub_refusal(xfer *x) {
    char code[OC_QUOTE_SIZE + 4] = "";
    if (x->error_code[0]) {
        char q[OC_QUOTE_SIZE];
        snprintf(code, sizeof code, " (%s)",
                 oc_quote(x->error_code, strlen(x->error_code), q, sizeof q));
    }
    const char *want = "";
    if (x->h->hf && (x->status == 401 || x->status == 403))
        want = x->h->auth ? ": the hub refused the token given (oc_hf_options.token; HF_TOKEN "
                            "or the token file for the tool and Python)"
                          : ": the hub wants a token for this repository (oc_hf_options.token; "
                            "HF_TOKEN or `hf auth login` for the tool and Python)";
    snprintf(x->why, sizeof x->why, "HTTP %ld%s%s", x->status, code, want);
}

/* The response, judged at its first body byte: 206 for exactly the range asked, from
 * the object opened. Returns 0 (and fills x->why) to refuse it. */
static int response_ok(xfer *x) {
    http_source *h = x->h;
    if (x->status != 206) {
        if (x->status == 200)
            snprintf(x->why, sizeof x->why,
                     "the server ignored the range request (HTTP 200 with the whole object "
                     "instead of 206)");
        else
            hub_refusal(x);
        return 0;
    }
    if (!x->has_range) {
        snprintf(x->why, sizeof x->why, "a 206 response without a valid Content-Range");
        return 0;
    }
    if (h->hf && h->commit[0] && x->commit[0] && strcmp(x->commit, h->commit) != 0) {
        char c[OC_QUOTE_SIZE];
        snprintf(x->why, sizeof x->why,
                 "the revision changed on the hub since it was opened (commit %s, not %s)",
                 oc_quote(x->commit, strlen(x->commit), c, sizeof c), h->commit);
        return 0;
    }
    if (x->want == 0) return 1; /* open: the suffix range, checked by open_request */
    if (x->r_total != h->head.size || (h->etag[0] && strcmp(x->etag, h->etag) != 0) ||
        (h->modified[0] && strcmp(x->modified, h->modified) != 0)) {
        /* The server's text, quoted (spec/security.md N-3): it may hold anything. */
        char e0[OC_QUOTE_SIZE], e1[OC_QUOTE_SIZE], m0[OC_QUOTE_SIZE], m1[OC_QUOTE_SIZE];
        snprintf(x->why, sizeof x->why,
                 "the object changed on the server since it was opened (size %" PRIu64
                 " then %" PRIu64 ", ETag %s then %s, Last-Modified %s then %s)",
                 h->head.size, x->r_total, shown_value(h->etag, e0), shown_value(x->etag, e1),
                 shown_value(h->modified, m0), shown_value(x->modified, m1));
        return 0;
    }
    if (x->r_first != x->at + x->got || x->r_last != x->at + x->want - 1) {
        snprintf(x->why, sizeof x->why,
                 "bad Content-Range: bytes %" PRIu64 "-%" PRIu64 " for bytes %" PRIu64 "-%" PRIu64
                 " asked",
                 x->r_first, x->r_last, x->at + x->got, x->at + x->want - 1);
        return 0;
    }
    return 1;
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx) {
    xfer *x = ctx;
    size_t len = size * n;
    clock_gettime(CLOCK_MONOTONIC, &x->last);
    if (!x->checked && x->want == 0 && x->status == 416 && x->unsatisfiable_total &&
        x->r_total == 0) {
        if ((x->ignored += len) <= 4096) return len; /* its text, not the object's */
        snprintf(x->why, sizeof x->why, "HTTP 416 with a body of more than 4096 bytes");
        return 0;
    }
    if (!x->checked && x->h->s3 && x->status >= 300) { /* the store's XML error */
        size_t k = len < sizeof x->errbody - x->errlen ? len : sizeof x->errbody - x->errlen;
        memcpy(x->errbody + x->errlen, data, k);
        x->errlen += k;
        return k == len ? len : 0; /* its first 4 KiB are enough */
    }
    if (!x->checked) {
        if (!response_ok(x)) return 0; /* CURLE_WRITE_ERROR: stops the transfer */
        x->checked = 1;
        if (x->want == 0) { /* open: the tail, whose size the Content-Range says */
            uint64_t tl = x->r_last - x->r_first + 1;
            if (tl > OC_HTTP_TAIL) {
                snprintf(x->why, sizeof x->why,
                         "bad Content-Range: %" PRIu64 " bytes for a suffix of %u", tl,
                         OC_HTTP_TAIL);
                return 0;
            }
            x->open_buf = malloc(tl ? (size_t)tl : 1);
            if (!x->open_buf) {
                snprintf(x->why, sizeof x->why, "out of memory");
                return 0;
            }
            x->dst = x->open_buf;
            x->at = x->r_first;
            x->want = tl;
            /* The identity every later response must repeat (a retry of this one too). */
            x->h->head.size = x->r_total;
            snprintf(x->h->etag, sizeof x->h->etag, "%s", x->etag);
            snprintf(x->h->modified, sizeof x->h->modified, "%s", x->modified);
        }
    }
    if (len > x->want - x->got) {
        snprintf(x->why, sizeof x->why, "the server sent more bytes than the range it announced");
        return 0;
    }
    if (x->sink) {
        x->sink_st = x->sink(x->sink_ctx, data, len, x->sink_err);
        if (x->sink_st != OC_OK) return 0;
    } else {
        memcpy(x->dst + x->got, data, len);
    }
    x->got += len;
    return len;
}

/* Whether the caller's cancel says to stop, asked at most every 100 ms (*polled: when it
 * was last asked). */
static int asked_to_stop(const http_source *h, struct timespec *polled) {
    if (!h->cancel || seconds_since(polled) < 0.1) return 0;
    clock_gettime(CLOCK_MONOTONIC, polled);
    return h->cancel(h->cancel_ctx) != 0;
}

/* Whether the body fell below min_rate in the window that just ended (starting the next
 * one when it did not): at least min_rate x timeout_s bytes, or what was left to come. */
static int too_slow(xfer *x) {
    const http_source *h = x->h;
    if (seconds_since(&x->phase) < (double)h->timeout_s) return 0;
    uint64_t need = h->min_rate * (uint64_t)h->timeout_s;
    uint64_t left = x->want > x->window_got ? x->want - x->window_got : need;
    if (x->got - x->window_got < (need < left ? need : left)) return 1;
    clock_gettime(CLOCK_MONOTONIC, &x->phase);
    x->window_got = x->got;
    return 0;
}

/* The bounds of a transfer (spec/remote.md R-15), checked by libcurl's progress callback
 * at least once a second: no byte for timeout_s (libcurl's own low-speed limit averages
 * over seconds of history, so a server that stops mid-body after a fast start was given
 * several times the timeout); the headers of each response within timeout_s; the body
 * at min_rate over each window of timeout_s; the whole request within deadline_s. A
 * server dripping bytes can defeat none of them. */
static int on_progress(void *ctx, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow) {
    xfer *x = ctx;
    const http_source *h = x->h;
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    if (x->cancel && atomic_load(x->cancel)) return 1; /* another range failed */
    if (!x->cancel && asked_to_stop(h, &x->polled))    /* the caller's thread only */
        x->gave_up = GAVE_CANCEL;
    else if (seconds_since(&x->last) >= (double)h->timeout_s)
        x->gave_up = GAVE_STALL;
    else if (h->deadline_s > 0 && seconds_since(&x->start) >= h->deadline_s)
        x->gave_up = GAVE_DEADLINE;
    else if (!x->in_body && seconds_since(&x->phase) >= (double)h->timeout_s)
        x->gave_up = GAVE_HEADERS;
    else if (x->in_body && too_slow(x))
        x->gave_up = GAVE_SLOW;
    return x->gave_up != GAVE_NONE; /* 1: CURLE_ABORTED_BY_CALLBACK */
}

/* ---- handles ---- */

/* A forked child never uses the connections it inherited: they are the parent's, and two
 * processes reading one connection mix their responses (spec/remote.md R-6). The child
 * abandons them (closing them could send a TLS close_notify on the parent's behalf) and
 * opens its own. Under h->lock. */
static void drop_inherited(http_source *h) {
    pid_t me = getpid();
    if (h->pid == me) return;
    h->nidle = 0;
    h->pid = me;
}

static CURL *handle_take(http_source *h) {
    CURL *c = NULL;
    pthread_mutex_lock(&h->lock);
    drop_inherited(h);
    if (h->nidle) c = h->idle[--h->nidle];
    pthread_mutex_unlock(&h->lock);
    return c ? c : curl_easy_init();
}

static void handle_give(http_source *h, CURL *c) {
    pthread_mutex_lock(&h->lock);
    drop_inherited(h);
    if (h->nidle < POOL_MAX) {
        h->idle[h->nidle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&h->lock);
    if (c) curl_easy_cleanup(c);
}

/* Sets up c for one ranged GET of h's URL; range NULL-terminated text. */
static void setup(http_source *h, CURL *c, struct curl_slist *hdrs, const char *range, xfer *x,
                  char *errbuf) {
    curl_easy_reset(c); /* keeps the connection cache */
    curl_easy_setopt(c, CURLOPT_URL, h->url);
    /* A path we built (an S3 key, a hub file) goes as it is: libcurl would otherwise fold
     * its "." and ".." segments (an S3 key may hold them), sending another path than the
     * one signed, and another object. */
    if (h->s3 || h->hf) curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(c, CURLOPT_RANGE, range);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    /* never from https down to http, where anyone on the way could answer */
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR,
                     strncasecmp(h->url, "https:", 6) == 0 ? "https" : "http,https");
    /* An S3 store's redirect is a bucket in another region (reported as such, never
     * followed): the signed headers and the session token go to the store's host only. */
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, h->s3 ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    /* libcurl sends a custom Authorization header to the first host only (and port and
     * scheme: CVE-2022-27776); never unrestricted. */
    curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, h->connect_ms);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "onnxz");
    if (h->ca_file) curl_easy_setopt(c, CURLOPT_CAINFO, h->ca_file);
    if (h->insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

/* Whether a failed attempt is worth another: the connection broke or the server failed,
 * not the request or the object. */
static int transient(CURLcode rc, long status, const xfer *x) {
    if (rc == CURLE_OK) return status >= 500 || x->got < x->want; /* 5xx, or a short body */
    if (rc == CURLE_WRITE_ERROR) return x->status >= 500;         /* refused by on_body */
    return rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR || rc == CURLE_PARTIAL_FILE ||
           rc == CURLE_GOT_NOTHING || rc == CURLE_COULDNT_CONNECT || rc == CURLE_HTTP2 ||
           rc == CURLE_HTTP2_STREAM;
}

static void backoff(int attempt) {
    long ms = 100L << (attempt < 6 ? attempt : 6); /* 100 ms, 200, 400 ... 6.4 s */
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The error of a transfer its bounds ended (on_progress); those of R-15 say so in their
 * own words and carry the rule. */
static oc_status gave_up(const http_source *h, const xfer *x, oc_error *err) {
    char got[96];
    const char *name = h->head.name;
    oc_status st;
    snprintf(got, sizeof got, "%" PRIu64 " of %" PRIu64 " bytes received", x->got, x->want);
    switch (x->gave_up) {
    case GAVE_HEADERS:
        st = oc__error_rule(err, "R-15",
                            oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                                     "%s: timed out (the response's headers took more than %ld "
                                     "s, R-15)",
                                     name, h->timeout_s));
        break;
    case GAVE_SLOW:
        st = oc__error_rule(err, "R-15",
                            oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                                     "%s: too slow (less than %" PRIu64
                                     " bytes/s over %ld s, R-15; %s)",
                                     name, h->min_rate, h->timeout_s, got));
        break;
    case GAVE_CANCEL:
        st = oc__fail(err, OC_ERR_CANCELLED, OC_NO_OFFSET, "%s: cancelled (%s)", name, got);
        break;
    case GAVE_DEADLINE:
        st = oc__error_rule(err, "R-15",
                            oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                                     "%s: timed out (the request took more than %.1f s, R-15; %s)",
                                     name, h->deadline_s, got));
        break;
    default:
        st = oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s: timed out (no data for %ld s, %s)", name,
                      h->timeout_s, got);
        break;
    }
    return oc_error_file(err, name, st);
}

/* The headers of one request to an S3 store (range: the Range header's value without its
 * "bytes=", as CURLOPT_RANGE takes it): Host (the one signed, sent as it is), x-amz-date,
 * x-amz-content-sha256 (the empty body's hash: every request here is a GET), the session
 * token, and with a key the Authorization that signs them all and the Range too (so the
 * bytes asked for cannot be changed on the way). */
static oc_status s3_headers(const http_source *h, const char *range, struct curl_slist **out,
                            oc_error *err) {
    char date[17], bytes[80];
    oc__s3_amz_date((int64_t)time(NULL), date);
    snprintf(bytes, sizeof bytes, "bytes=%s", range);
    oc__sigv4_pair hd[5] = {{"host", h->s3_host},
                            {"range", bytes},
                            {"x-amz-content-sha256", OC__S3_EMPTY_SHA256},
                            {"x-amz-date", date},
                            {"x-amz-security-token", h->s3_token}};
    size_t nh = h->s3_token ? 5 : 4;
    char *auth = NULL;
    if (h->s3_key_id) {
        oc__sigv4_request r = {.method = "GET",
                               .path = h->s3_path,
                               .headers = hd,
                               .nheaders = nh,
                               .payload_hash = OC__S3_EMPTY_SHA256,
                               .amz_date = date,
                               .region = h->s3_region,
                               .service = "s3",
                               .access_key_id = h->s3_key_id,
                               .secret_access_key = h->s3_secret};
        OC_FORWARD(oc__sigv4_authorization(&r, &auth, err));
    }
    struct curl_slist *l = NULL;
    int ok = 1;
    /* Each line sized to its value: a session token runs to kilobytes (STS's do), and a
     * line cut short would send less than was signed. */
    for (size_t i = 0; i < nh + (auth != NULL) && ok; i++) {
        if (i == 1) continue; /* Range: CURLOPT_RANGE sends it */
        const char *name = i < nh ? hd[i].name : "Authorization",
                   *value = i < nh ? hd[i].value : auth;
        size_t n = strlen(name) + 2 + strlen(value) + 1;
        char *line = malloc(n);
        struct curl_slist *m = NULL;
        if (line) {
            snprintf(line, n, "%s: %s", name, value);
            m = curl_slist_append(l, line);
            oc__cb_cleanse(line, n); /* the token's line: curl holds its own copy */
            free(line);
        }
        ok = m != NULL;
        if (m) l = m;
    }
    free(auth);
    if (!ok) {
        curl_slist_free_all(l);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    *out = l;
    return OC_OK;
}

/* Runs x's request (resuming after x->got on a retry) until it has every byte or fails. */
static oc_status request(http_source *h, xfer *x, oc_error *err) {
    CURL *c = handle_take(h);
    if (!c) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    struct curl_slist *hdrs = NULL; /* (an S3 request's: made again at each attempt) */
    if (h->auth && !(hdrs = curl_slist_append(NULL, h->auth))) {
        curl_easy_cleanup(c);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    char errbuf[CURL_ERROR_SIZE], quoted[4 * CURL_ERROR_SIZE];
    oc_status st = OC_OK;
    for (int attempt = 0;; attempt++) {
        char range[64];
        if (x->want == 0)
            snprintf(range, sizeof range, "-%u", OC_HTTP_TAIL);
        else
            snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, x->at + x->got,
                     x->at + x->want - 1);
        errbuf[0] = '\0';
        x->checked = 0;
        x->why[0] = '\0';
        x->status = 0;
        x->gave_up = GAVE_NONE;
        x->in_body = 0;
        x->header_bytes = 0;
        x->errlen = 0;
        if (h->s3) { /* a signature per request: each attempt is signed afresh */
            curl_slist_free_all(hdrs);
            hdrs = NULL;
            if ((st = s3_headers(h, range, &hdrs, err)) != OC_OK) break;
        }
        clock_gettime(CLOCK_MONOTONIC, &x->last); /* connecting counts as waiting */
        x->start = x->phase = x->last;
        setup(h, c, hdrs, range, x, errbuf);
        CURLcode rc = curl_easy_perform(c);
        long status = x->status;
        if (rc == CURLE_OK && x->want == 0 && !x->checked &&
            ((status == 416 && x->unsatisfiable_total && x->r_total == 0) || status == 200))
            break; /* an empty object (no body came, or on_body refuses a 200): no range of
                    * it exists, and servers answer 416 or a 200 without a body */
        oc_status s3_st = OC_ERR_IO;
        if (h->s3 && !x->checked && status >= 300 && (rc == CURLE_OK || rc == CURLE_WRITE_ERROR)) {
            /* what the request carried that the server's text must not show */
            const char *secrets[3] = {h->s3_secret, h->s3_token, NULL};
            for (const struct curl_slist *l = hdrs; l; l = l->next)
                if (strncasecmp(l->data, "Authorization: ", 15) == 0) secrets[2] = l->data + 15;
            s3_st = oc__s3_explain(status, x->errbody, x->errlen, x->bucket_region, secrets, 3,
                                   x->why, sizeof x->why);
            rc = CURLE_WRITE_ERROR;
        }
        if (rc == CURLE_OK && !x->checked && !response_ok(x)) /* no body: judged now */
            rc = CURLE_WRITE_ERROR;
        if (rc == CURLE_OK && x->want && x->got == x->want) break;
        if (x->sink_st != OC_OK) { /* the sink refused: its error stands, no retry */
            st = x->sink_st;
            break;
        }
        if (attempt < h->retries && !(x->cancel && atomic_load(x->cancel)) &&
            transient(rc, status, x)) {
            backoff(attempt);
            continue;
        }
        /* libcurl's text, quoted: it may hold the server's (a status line, a certificate's
         * names, a Location) */
        const char *why = errbuf[0] ? oc_quote(errbuf, strlen(errbuf), quoted, sizeof quoted)
                                    : curl_easy_strerror(rc);
        if (rc == CURLE_WRITE_ERROR && x->why[0])
            st = oc_error_file(err, h->head.name,
                               oc__fail(err,
                                        h->s3 && !x->checked && status >= 300 ? s3_st
                                        : strstr(x->why, "changed")           ? OC_ERR_INCONSISTENT
                                        : status == 404 || status == 410      ? OC_ERR_NOT_FOUND
                                                                              : OC_ERR_IO,
                                        OC_NO_OFFSET, "%s: %s", h->head.name, x->why));
        else if (rc == CURLE_OK)
            st = oc_error_file(err, h->head.name,
                               oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                                        "%s: the body ended after %" PRIu64 " of %" PRIu64 " bytes",
                                        h->head.name, x->got, x->want));
        else if (rc == CURLE_ABORTED_BY_CALLBACK && x->gave_up != GAVE_NONE)
            st = gave_up(h, x, err);
        else if (rc == CURLE_OPERATION_TIMEDOUT)
            st = oc_error_file(err, h->head.name,
                               oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                                        "%s: timed out (no data for %ld s): %s", h->head.name,
                                        h->timeout_s, why));
        else if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
                 rc == CURLE_SSL_CERTPROBLEM)
            st = oc_error_file(
                err, h->head.name,
                oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                         "%s: the server's certificate was not verified (%s); give the CA "
                         "that signed it (ca_file; ONNXZ_CA_FILE for the tool and Python)",
                         h->head.name, why));
        else
            st = oc_error_file(err, h->head.name,
                               oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s: %s", h->head.name, why));
        break;
    }
    curl_slist_free_all(hdrs);
    if (st == OC_OK)
        handle_give(h, c);
    else
        curl_easy_cleanup(c); /* its connection may be in any state */
    return st;
}

/* ---- the object opened last ---- */

static int recall(http_source *h) {
    int hit = 0;
    pthread_mutex_lock(&recent_lock);
    for (int i = 0; i < RECENT_MAX && !hit; i++) {
        recent_open *r = &recent[i];
        if (!r->url || strcmp(r->url, h->key) != 0 || !same_text(r->auth, h->recall_key) ||
            !same_text(r->ca_file, h->ca_file) || seconds_since(&r->at) >= RECENT_SECONDS)
            continue;
        char *fetch_url = r->fetch_url ? strdup(r->fetch_url) : NULL;
        char *pinned = r->pinned ? strdup(r->pinned) : NULL;
        if ((r->fetch_url && !fetch_url) || (r->pinned && !pinned) ||
            !(h->tail = malloc(r->tail_len ? (size_t)r->tail_len : 1))) {
            free(fetch_url);
            free(pinned);
            break;
        }
        if (fetch_url) {
            free(h->url);
            h->url = fetch_url;
        }
        free(h->pinned);
        h->pinned = pinned;
        memcpy(h->commit, r->commit, sizeof h->commit);
        if (r->tail_len) memcpy(h->tail, r->tail, (size_t)r->tail_len);
        h->tail_len = r->tail_len;
        h->head.size = r->size;
        memcpy(h->etag, r->etag, sizeof h->etag);
        memcpy(h->modified, r->modified, sizeof h->modified);
        hit = 1;
    }
    pthread_mutex_unlock(&recent_lock);
    return hit;
}

/* Takes the slot of the same URL, else an empty one, else the oldest. */
/* key: the URL this open is remembered by (as requested at open, or an hf:// URL's
 * resolve URL at the commit it was pinned to). */
static void remember(const http_source *h, const char *key) {
    char *url = strdup(key), *auth = h->recall_key ? strdup(h->recall_key) : NULL;
    char *ca = h->ca_file ? strdup(h->ca_file) : NULL;
    char *fetch_url = h->hf ? strdup(h->url) : NULL;
    char *pinned = h->pinned ? strdup(h->pinned) : NULL;
    uint8_t *tail = malloc(h->tail_len ? (size_t)h->tail_len : 1);
    if (!url || (h->recall_key && !auth) || (h->ca_file && !ca) || !tail || (h->hf && !fetch_url) ||
        (h->pinned && !pinned)) {
        free(ca);
        free(url);
        free(auth);
        free(tail);
        free(fetch_url);
        free(pinned);
        return;
    }
    if (h->tail_len) memcpy(tail, h->tail, (size_t)h->tail_len);
    pthread_mutex_lock(&recent_lock);
    recent_open *r = &recent[0];
    for (int i = 0; i < RECENT_MAX; i++) {
        recent_open *c = &recent[i];
        if (c->url && strcmp(c->url, key) == 0) {
            r = c;
            break;
        }
        if (!c->url || (r->url && (c->at.tv_sec < r->at.tv_sec || (c->at.tv_sec == r->at.tv_sec &&
                                                                   c->at.tv_nsec < r->at.tv_nsec))))
            r = c;
    }
    free(r->url);
    free(r->auth);
    free(r->ca_file);
    free(r->tail);
    free(r->fetch_url);
    free(r->pinned);
    r->fetch_url = fetch_url;
    r->pinned = pinned;
    memcpy(r->commit, h->commit, sizeof r->commit);
    r->url = url;
    r->auth = auth;
    r->ca_file = ca;
    r->tail = tail;
    r->tail_len = h->tail_len;
    r->size = h->head.size;
    memcpy(r->etag, h->etag, sizeof r->etag);
    memcpy(r->modified, h->modified, sizeof r->modified);
    clock_gettime(CLOCK_MONOTONIC, &r->at);
    pthread_mutex_unlock(&recent_lock);
}

/* ---- the source ---- */

/* [at, at + n) from the server: into dst, or streamed into sink. */
static oc_status fetch(http_source *h, uint64_t at, uint64_t n, uint8_t *dst, oc_write_fn sink,
                       void *ctx, oc_error *err) {
    xfer x;
    memset(&x, 0, sizeof x);
    x.h = h;
    x.dst = dst;
    x.at = at;
    x.want = n;
    x.sink = sink;
    x.sink_ctx = ctx;
    x.sink_err = err;
    return request(h, &x, err);
}

/* ---- parallel ranges ---- */

/* One large read split into nchunks ranges of PAR_CHUNK bytes (the last shorter), fetched
 * by nslots workers. Range i goes to slot i % nslots (into dst in place, or into the
 * slot's buffer when the bytes go to write); a worker takes range i only once range
 * i - nslots was passed on, so at most nslots ranges are held at a time. The fields
 * below mu are guarded by it. */
typedef struct par {
    http_source *h;
    uint64_t at, n;
    uint8_t *dst;
    uint8_t *buf[PAR_MAX]; /* without dst: one range each */
    size_t nchunks, nslots;
    atomic_int cancel; /* set on the first failure: the requests in flight give up */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t next;          /* the next range a worker takes */
    size_t delivered;     /* ranges passed on, in order */
    size_t done[PAR_MAX]; /* slot s holds range done[s] - 1 (0: none yet) */
    int failed;           /* a worker's request or the caller's write failed */
    int worker_failed;    /* it was a worker's: st and err say what */
    oc_status st;
    oc_error err;
    /* A read of many pieces (http_read_pieces): request i is chunks[i], its body scattered
     * over the pieces it covers; the requests are taken in any order, none held back. */
    const struct par_chunk *chunks;
    const oc_source_piece *pieces;
    const size_t *order; /* the pieces by offset */
    size_t npieces;
    size_t finished;     /* requests done */
    size_t failed_chunk; /* the worker's failure: its request */
} par;

/* One request of a read of many pieces: [at, at + n) of the object, whose bytes go to the
 * pieces order[first], order[first + 1] ... (they touch in the object). */
typedef struct par_chunk {
    uint64_t at, n;
    size_t first;
} par_chunk;

/* Where a request's body goes: the pieces it covers, in order. */
typedef struct scatter {
    const oc_source_piece *pieces;
    const size_t *order;
    size_t npieces, k; /* order[k]: the piece of the next byte */
    uint64_t pos;      /* the object's offset of the next byte */
} scatter;

static oc_status scatter_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    scatter *sc = ctx;
    const uint8_t *from = data;
    while (size) {
        if (sc->k >= sc->npieces) /* request() checked the body's length: never */
            return oc__fail(err, OC_ERR_INCONSISTENT, sc->pos, "a body longer than its range");
        const oc_source_piece *pc = &sc->pieces[sc->order[sc->k]];
        uint64_t off = sc->pos - pc->at, take = pc->size - off < size ? pc->size - off : size;
        memcpy((uint8_t *)pc->dst + off, from, (size_t)take);
        from += take;
        size -= take;
        sc->pos += take;
        if (sc->pos == pc->at + pc->size) sc->k++;
    }
    return OC_OK;
}

static uint64_t par_len(const par *p, size_t i) {
    uint64_t off = (uint64_t)i * PAR_CHUNK;
    return p->n - off < PAR_CHUNK ? p->n - off : PAR_CHUNK;
}

static void par_fail(par *p) { /* under mu */
    p->failed = 1;
    atomic_store(&p->cancel, 1);
    pthread_cond_broadcast(&p->cv);
}

static void *par_worker(void *arg) {
    par *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->failed && p->next < p->nchunks && !p->chunks &&
               p->next >= p->delivered + p->nslots)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->failed || p->next >= p->nchunks) break;
        size_t i = p->next++, slot = i % p->nslots;
        pthread_mutex_unlock(&p->mu);
        uint64_t off = (uint64_t)i * PAR_CHUNK;
        xfer x;
        oc_error e;
        scatter sc;
        memset(&x, 0, sizeof x);
        memset(&e, 0, sizeof e);
        x.h = p->h;
        x.cancel = &p->cancel;
        if (p->chunks) {
            const par_chunk *c = &p->chunks[i];
            sc = (scatter){p->pieces, p->order, p->npieces, c->first, c->at};
            x.at = c->at;
            x.want = c->n;
            x.sink = scatter_write;
            x.sink_ctx = &sc;
            x.sink_err = &e;
        } else {
            x.dst = p->dst ? p->dst + off : p->buf[slot];
            x.at = p->at + off;
            x.want = par_len(p, i);
        }
        oc_status st = request(p->h, &x, &e);
        pthread_mutex_lock(&p->mu);
        if (st != OC_OK) {
            if (!p->failed) { /* the first failure is the read's; the others follow from it */
                p->worker_failed = 1;
                p->st = st;
                p->err = e;
                p->failed_chunk = i;
                par_fail(p);
            }
            break;
        }
        if (p->chunks) { /* nobody waits for one request: the caller for the last */
            if (++p->finished == p->nchunks) pthread_cond_broadcast(&p->cv);
            continue;
        }
        p->done[slot] = i + 1;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Waits (under mu) for a worker, at most 100 ms; then asks the caller's cancel, which
 * fails the read as a worker's failure would. */
static void par_wait(par *p, struct timespec *polled) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 100000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&p->cv, &p->mu, &until);
    if (p->failed || !asked_to_stop(p->h, polled)) return;
    p->worker_failed = 1;
    p->st =
        oc_error_file(&p->err, p->h->head.name,
                      oc__fail(&p->err, OC_ERR_IO, OC_NO_OFFSET, "%s: cancelled", p->h->head.name));
    par_fail(p);
}

/* Ends what par_start started, the caller holding p->mu: a worker's failure into *st and
 * err, the lock released, the workers joined. */
static void par_end(par *p, pthread_t *tid, size_t nthreads, oc_status *st, oc_error *err) {
    if (p->worker_failed) {
        *st = p->st;
        if (err) *err = p->err;
    }
    pthread_mutex_unlock(&p->mu);
    for (size_t t = 0; t < nthreads; t++) pthread_join(tid[t], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
}

/* Starts p's workers (p->nslots of them, at least 2, else none): their count. */
static size_t par_start(par *p, pthread_t *tid) {
    size_t nthreads = 0;
    if (p->nslots >= 2 && pthread_mutex_init(&p->mu, NULL) == 0) {
        if (pthread_cond_init(&p->cv, NULL) == 0) {
            for (size_t t = 0; t < p->nslots; t++)
                if (oc__thread_start(&tid[nthreads], par_worker, p) == 0) nthreads++;
            if (nthreads == 0) pthread_cond_destroy(&p->cv);
        }
        if (nthreads == 0) pthread_mutex_destroy(&p->mu);
    }
    return nthreads;
}

/* [at, at + n) from the server by parallel ranges, into dst or passed to write in order;
 * false (nothing fetched) when no worker or buffer could be had: the caller fetches it in
 * one request. The first failure, a request's or write's, is the read's: the requests in
 * flight are abandoned, every worker has ended before this returns, and write is not
 * called again. */
static int par_fetch(http_source *h, uint64_t at, uint64_t n, uint8_t *dst, oc_write_fn write,
                     void *ctx, oc_status *st_out, oc_error *err) {
    par *p = calloc(1, sizeof *p);
    if (!p) return 0;
    p->h = h;
    p->at = at;
    p->n = n;
    p->dst = dst;
    p->nchunks = (size_t)((n + PAR_CHUNK - 1) / PAR_CHUNK);
    p->nslots = (size_t)h->parallel < p->nchunks ? (size_t)h->parallel : p->nchunks;
    atomic_init(&p->cancel, 0);
    pthread_t tid[PAR_MAX];
    for (size_t s = 0; !dst && s < p->nslots; s++)
        if (!(p->buf[s] = malloc(PAR_CHUNK))) p->nslots = s; /* fewer at once */
    size_t nthreads = par_start(p, tid);
    if (nthreads == 0) { /* not one worker: one request, as a small read */
        for (size_t s = 0; s < PAR_MAX; s++) free(p->buf[s]);
        free(p);
        return 0;
    }
    oc_status st = OC_OK;
    struct timespec polled = {0, 0};
    pthread_mutex_lock(&p->mu);
    for (size_t d = 0; d < p->nchunks; d++) {
        size_t slot = d % p->nslots;
        while (!p->failed && p->done[slot] != d + 1) par_wait(p, &polled);
        if (p->failed) break;
        if (write) {
            pthread_mutex_unlock(&p->mu); /* the workers go on while the caller writes */
            st = write(ctx, p->buf[slot], par_len(p, d), err);
            pthread_mutex_lock(&p->mu);
            if (st != OC_OK) {
                par_fail(p);
                break;
            }
        }
        p->delivered = d + 1;
        pthread_cond_broadcast(&p->cv);
    }
    par_end(p, tid, nthreads, &st, err);
    for (size_t s = 0; s < PAR_MAX; s++) free(p->buf[s]);
    free(p);
    *st_out = st;
    return 1;
}

/* [at, at + n) from the server: a large range by parallel ranges where it is set, else
 * one request. */
static oc_status fetch_bulk(http_source *h, uint64_t at, uint64_t n, uint8_t *dst,
                            oc_write_fn write, void *ctx, oc_error *err) {
    oc_status st;
    if (h->parallel > 1 && n >= PAR_MIN && par_fetch(h, at, n, dst, write, ctx, &st, err))
        return st;
    return fetch(h, at, n, dst, write, ctx, err);
}

/* ---- many pieces (read_pieces) ---- */

typedef struct piece_key {
    uint64_t at;
    size_t i;
} piece_key;

static int cmp_piece(const void *a, const void *b) {
    const piece_key *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at ? 1 : (x->i > y->i) - (x->i < y->i);
}

/* The requests of a read of pieces v (none empty) taken by offset (order): each run of
 * pieces that touch in the object is one range, cut into requests of PAR_CHUNK bytes at
 * most (a large one is shared by the connections). NULL when out of memory. */
static par_chunk *plan_chunks(const oc_source_piece *v, const size_t *order, size_t m,
                              size_t *count) {
    size_t n = 0, cap = m + 16;
    par_chunk *c = malloc(cap * sizeof *c);
    for (size_t a = 0; c && a < m;) {
        size_t b = a + 1, k = a;
        uint64_t end = v[order[a]].at + v[order[a]].size, pos = v[order[a]].at;
        while (b < m && v[order[b]].at == end) end += v[order[b++]].size;
        while (c && pos < end) {
            while (v[order[k]].at + v[order[k]].size <= pos) k++;
            if (n == cap) {
                par_chunk *more = realloc(c, (cap *= 2) * sizeof *c);
                if (!more) free(c);
                c = more;
                if (!c) break;
            }
            uint64_t len = end - pos < PAR_CHUNK ? end - pos : PAR_CHUNK;
            c[n++] = (par_chunk){pos, len, k};
            pos += len;
        }
        a = b;
    }
    *count = n;
    return c;
}

/* The requests c[0..n) on the caller's thread, one after the other (the caller's cancel
 * asked as any request asks it). */
static oc_status chunks_in_turn(http_source *h, const par_chunk *c, size_t n,
                                const oc_source_piece *v, const size_t *order, size_t m,
                                size_t *failed, oc_error *err) {
    for (size_t i = 0; i < n; i++) {
        scatter sc = {v, order, m, c[i].first, c[i].at};
        *failed = order[c[i].first];
        OC_FORWARD(fetch(h, c[i].at, c[i].n, NULL, scatter_write, &sc, err));
    }
    return OC_OK;
}

/* Every piece: those in the kept tail from memory, the rest by the requests of
 * plan_chunks, fetched by up to `parallel` connections at once while the caller's thread
 * waits and asks its cancel (as par_fetch). */
static oc_status http_read_pieces(oc_source *s, const oc_source_piece *pieces, size_t n,
                                  size_t *failed, oc_error *err) {
    http_source *h = (http_source *)s;
    uint64_t tail_at = s->size - h->tail_len;
    oc_source_piece *v = malloc((n ? n : 1) * sizeof *v);
    piece_key *keys = malloc((n ? n : 1) * sizeof *keys);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    size_t m = 0, nchunks = 0;
    par_chunk *chunks = NULL;
    oc_status st = OC_OK;
    if (!v || !keys || !order) {
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        v[i] = pieces[i];
        if (v[i].at + v[i].size > tail_at) { /* the part in the kept tail costs nothing */
            uint64_t first = v[i].at > tail_at ? v[i].at : tail_at;
            memcpy((uint8_t *)v[i].dst + (first - v[i].at), h->tail + (first - tail_at),
                   (size_t)(v[i].at + v[i].size - first));
            v[i].size = first - v[i].at;
        }
        if (v[i].size) keys[m++] = (piece_key){v[i].at, i};
    }
    qsort(keys, m, sizeof *keys, cmp_piece);
    for (size_t k = 0; k < m; k++) order[k] = keys[k].i;
    if (m && !(chunks = plan_chunks(v, order, m, &nchunks))) {
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        goto done;
    }
    par *p = nchunks >= 2 && h->parallel > 1 ? calloc(1, sizeof *p) : NULL;
    pthread_t tid[PAR_MAX];
    size_t nthreads = 0;
    if (p) {
        p->h = h;
        p->chunks = chunks;
        p->pieces = v;
        p->order = order;
        p->npieces = m;
        p->nchunks = nchunks;
        p->nslots = (size_t)h->parallel < nchunks ? (size_t)h->parallel : nchunks;
        atomic_init(&p->cancel, 0);
        nthreads = par_start(p, tid);
    }
    if (nthreads == 0) { /* one request, or no worker: all on this thread */
        free(p);
        st = chunks_in_turn(h, chunks, nchunks, v, order, m, failed, err);
        goto done;
    }
    struct timespec polled = {0, 0};
    pthread_mutex_lock(&p->mu);
    while (!p->failed && p->finished < p->nchunks) par_wait(p, &polled);
    par_end(p, tid, nthreads, &st, err);
    if (p->worker_failed) *failed = order[chunks[p->failed_chunk].first];
    free(p);
done:
    free(chunks);
    free(order);
    free(keys);
    free(v);
    return st;
}

/* ---- read-ahead ---- */

static int cmp_range(const void *a, const void *b) {
    const oc_source_range *x = a, *y = b;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* Replaces the announced ranges with these (copied, sorted, and merged where they touch
 * or lie within AHEAD_GAP of each other: one request is cheaper than the gap). Advice:
 * without memory, nothing is announced. */
static void http_will_read(oc_source *s, const oc_source_range *ranges, size_t count) {
    http_source *h = (http_source *)s;
    oc_source_range *v = count ? malloc(count * sizeof *v) : NULL;
    size_t n = 0;
    if (v) {
        memcpy(v, ranges, count * sizeof *v);
        qsort(v, count, sizeof *v, cmp_range);
        for (size_t i = 0; i < count; i++) {
            if (v[i].size == 0 || v[i].at >= s->size) continue;
            if (v[i].size > s->size - v[i].at) v[i].size = s->size - v[i].at;
            if (n && v[i].at <= v[n - 1].at + v[n - 1].size + AHEAD_GAP) {
                uint64_t end = v[i].at + v[i].size;
                if (end > v[n - 1].at + v[n - 1].size) v[n - 1].size = end - v[n - 1].at;
            } else {
                v[n++] = v[i];
            }
        }
    }
    pthread_mutex_lock(&h->ahead_lock);
    free(h->ahead);
    h->ahead = v;
    h->nahead = n;
    pthread_mutex_unlock(&h->ahead_lock);
}

/* The end of the announced range holding [at, at + n), or 0. Under ahead_lock. */
static uint64_t announced_end(const http_source *h, uint64_t at, uint64_t n) {
    size_t lo = 0, hi = h->nahead;
    while (lo < hi) { /* the last range starting at or before at */
        size_t mid = lo + (hi - lo) / 2;
        if (h->ahead[mid].at <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return 0;
    const oc_source_range *r = &h->ahead[lo - 1];
    return at + n <= r->at + r->size ? r->at + r->size : 0;
}

static void window_unref(http_source *h, window *w) {
    pthread_mutex_lock(&h->ahead_lock);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&h->ahead_lock);
    if (last) free(w);
}

/* The first *served bytes of [at, at + n) from read-ahead windows, into dst or through
 * write: what the current window holds from `at`, then, while the rest is announced and
 * smaller than a window, a new window fetched from where the read has got to. A larger
 * rest, or one nobody announced, is left to the caller (which fetches exactly it). A
 * failed refill is the read's error. The lock is never held across a request or a call of
 * write: one reader's slow sink or stalled server does not hold up the others. */
static oc_status from_window(http_source *h, uint64_t at, uint64_t n, uint8_t *dst,
                             oc_write_fn write, void *ctx, uint64_t *served, oc_error *err) {
    oc_status st = OC_OK;
    uint64_t done = 0;
    while (done < n && st == OC_OK) {
        uint64_t pos = at + done, left = n - done, k = 0, end = 0;
        window *old = NULL;
        pthread_mutex_lock(&h->ahead_lock);
        window *w = h->win;
        if (w && pos >= w->at && pos - w->at < w->len) {
            k = left < w->len - (pos - w->at) ? left : w->len - (pos - w->at);
            w->refs++;
        } else {
            w = NULL;
            if (left < AHEAD_WINDOW) end = announced_end(h, pos, left);
            /* A successor comes: the window goes first, so that a reader going forward
             * never holds two (readers still in it keep their references). Without one
             * it stays: a read out of file order may come back to it. */
            if (end) {
                old = h->win;
                h->win = NULL;
            }
        }
        pthread_mutex_unlock(&h->ahead_lock);
        if (old) window_unref(h, old);
        if (w) {
            const uint8_t *p = w->data + (pos - w->at);
            if (dst)
                memcpy(dst + done, p, (size_t)k);
            else
                st = write(ctx, p, k, err);
            window_unref(h, w);
            if (st == OC_OK) done += k;
            continue;
        }
        if (!end) break;
        uint64_t len = end - pos < AHEAD_WINDOW ? end - pos : AHEAD_WINDOW;
        window *nw = malloc(sizeof *nw + (size_t)len);
        if (!nw) break; /* advice: read directly */
        nw->at = pos;
        nw->len = len;
        nw->refs = 1; /* the source's */
        st = fetch(h, pos, len, nw->data, NULL, NULL, err);
        if (st != OC_OK) {
            free(nw);
            break;
        }
        pthread_mutex_lock(&h->ahead_lock);
        old = h->win; /* another reader's refill meanwhile */
        h->win = nw;
        pthread_mutex_unlock(&h->ahead_lock);
        if (old) window_unref(h, old);
    }
    *served = done;
    return st;
}

/* Frees what h holds (not h: source_release frees the object). */

static oc_status http_read(oc_source *s, uint64_t at, void *dst, uint64_t n, uint64_t *got,
                           oc_error *err) {
    http_source *h = (http_source *)s;
    *got = 0;
    if (at >= s->size || n == 0) return OC_OK;
    if (n > s->size - at) n = s->size - at;
    uint64_t tail_at = s->size - h->tail_len, from_net = n;
    if (at + n > tail_at) { /* the part in the kept tail costs nothing */
        uint64_t first = at > tail_at ? at : tail_at;
        memcpy((uint8_t *)dst + (first - at), h->tail + (first - tail_at),
               (size_t)(at + n - first));
        from_net = first - at;
    }
    uint64_t k = 0;
    if (from_net) OC_FORWARD(from_window(h, at, from_net, dst, NULL, NULL, &k, err));
    if (k < from_net)
        OC_FORWARD(fetch_bulk(h, at + k, from_net - k, (uint8_t *)dst + k, NULL, NULL, err));
    *got = n;
    return OC_OK;
}

/* One request whose body streams into write (resumed after the bytes passed on, when a
 * transfer breaks), or for a large range parallel ranges passed on in order; the part in
 * the kept tail follows from memory. */
static oc_status http_read_to(oc_source *s, uint64_t at, uint64_t n, oc_write_fn write, void *ctx,
                              oc_error *err) {
    http_source *h = (http_source *)s;
    uint64_t tail_at = s->size - h->tail_len;
    uint64_t from_net = at + n <= tail_at ? n : at < tail_at ? tail_at - at : 0;
    uint64_t k = 0;
    if (from_net) OC_FORWARD(from_window(h, at, from_net, NULL, write, ctx, &k, err));
    if (k < from_net) OC_FORWARD(fetch_bulk(h, at + k, from_net - k, NULL, write, ctx, err));
    if (from_net < n)
        OC_FORWARD(write(ctx, h->tail + (at + from_net - tail_at), n - from_net, err));
    return OC_OK;
}

static void http_destroy(oc_source *s) {
    http_source *h = (http_source *)s;
    drop_inherited(h); /* no lock: the last reference is gone */
    for (int i = 0; i < h->nidle; i++) curl_easy_cleanup(h->idle[i]);
    pthread_mutex_destroy(&h->lock);
    pthread_mutex_destroy(&h->ahead_lock);
    free(h->ahead);
    free(h->win); /* no reader is left to hold a reference */
    free(h->key);
    free(h->pinned);
    oc__hf_ref_free(&h->ref);
    free(h->url);
    if (h->auth) oc__cb_cleanse(h->auth, strlen(h->auth)); /* a hub token, a user's auth */
    free(h->auth);
    free(h->ca_file);
    free(h->tail);
    free(h->s3_host);
    free(h->s3_path);
    free(h->s3_region);
    free(h->s3_key_id);
    if (h->s3_secret) oc__cb_cleanse(h->s3_secret, strlen(h->s3_secret));
    if (h->s3_token) oc__cb_cleanse(h->s3_token, strlen(h->s3_token));
    free(h->s3_secret);
    free(h->s3_token);
    if (h->recall_key != h->auth) free(h->recall_key);
}

static const oc_source_vtable http_vtable = {
    .kind = "http",
    .read = http_read,
    .read_to = http_read_to,
    .read_pieces = http_read_pieces,
    .will_read = http_will_read,
    .destroy = http_destroy,
};

const char *oc__source_http_pinned(const oc_source *s) {
    if (!s || s->vt != &http_vtable) return NULL;
    return ((const http_source *)(const void *)s)->pinned;
}

oc_status oc__hf_pin(const char *path, const oc_http_options *http, char **pinned, oc_error *err) {
    *pinned = NULL;
    if (!oc__is_hf_url(path)) return OC_OK;
    oc_source *src;
    OC_FORWARD(oc__source_http(path, http, &src, err));
    const char *p = oc__source_http_pinned(src);
    oc_status st = OC_OK;
    if (p && strcmp(p, path) != 0 && !(*pinned = strdup(p)))
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_source_unref(src);
    return st;
}

void oc__source_http_identity(const oc_source *s, char *out, size_t cap) {
    if (!cap) return;
    out[0] = '\0';
    if (s && s->vt == &http_vtable) {
        const http_source *h = (const http_source *)(const void *)s;
        snprintf(out, cap, "etag %s, last-modified %s", h->etag, h->modified);
    }
}

/* The URL for messages (oc_path_shown): without user:password@. */
static char *display_name(const char *url) {
    size_t n = strlen(url) + 1;
    char *out = malloc(n);
    return out ? (char *)oc_path_shown(url, out, n) : NULL;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* An hf:// URL's revision pinned to the commit the hub reported at open (x: the open's
 * request): every later request of h asks for that commit, and h->pinned names it. */
static oc_status pin(http_source *h, const xfer *x, const char *endpoint, const char *name,
                     oc_error *err) {
    if (!oc__hf_is_commit(x->commit)) {
        char q[OC_QUOTE_SIZE], e[OC_QUOTE_SIZE];
        return oc_error_file(
            err, name,
            oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                     "%s: the server at %s sent %s for X-Repo-Commit, not a commit (is it a "
                     "Hugging Face hub?)",
                     name, oc_quote(endpoint, strlen(endpoint), e, sizeof e),
                     x->commit[0] ? oc_quote(x->commit, strlen(x->commit), q, sizeof q)
                                  : "nothing"));
    }
    char *url = oc__hf_resolve_url(endpoint, &h->ref, x->commit);
    char *pinned = oc__hf_url(&h->ref, x->commit);
    if (!url || !pinned) {
        free(url);
        free(pinned);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    memcpy(h->commit, x->commit, sizeof h->commit);
    free(h->url);
    h->url = url;
    h->pinned = pinned;
    return OC_OK;
}

/* An hf:// URL's parts, request URL and token (internal/hf.h); *endpoint: where. */
static oc_status hf_setup(http_source *h, const char *url, const oc_hf_options *opts,
                          const char **endpoint, oc_error *err) {
    oc_hf_options local;
    char shown[256];
    OC_FORWARD(oc__hf_opts(&opts, &local, err)); /* by the caller's size (sized.h) */
    const oc_hf_options hf = *opts;
    *endpoint = hf.endpoint ? hf.endpoint : OC_HF_ENDPOINT_DEFAULT;
    if (strncasecmp(*endpoint, "http://", 7) != 0 && strncasecmp(*endpoint, "https://", 8) != 0)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_hf_options.endpoint: '%.200s' is not an http:// or https:// URL",
                        oc__setting_shown(*endpoint, shown, sizeof shown)); /* N-2 */
    if (hf.token && oc__hf_token_problem(hf.token)) /* never the token itself */
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_hf_options.token: it %s",
                        oc__hf_token_problem(hf.token));
    OC_FORWARD(oc__hf_parse(url, &h->ref, err));
    h->hf = 1;
    if (h->ref.rev && oc__hf_is_commit(h->ref.rev)) { /* pinned by the caller */
        memcpy(h->commit, h->ref.rev, sizeof h->commit);
        if (!(h->pinned = oc__hf_url(&h->ref, h->commit)))
            return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    h->url = oc__hf_resolve_url(*endpoint, &h->ref, h->ref.rev ? h->ref.rev : "main");
    if (hf.token) {
        size_t n = strlen("Authorization: Bearer ") + strlen(hf.token) + 1;
        if ((h->auth = malloc(n))) snprintf(h->auth, n, "Authorization: Bearer %s", hf.token);
    }
    return h->url && (!hf.token || h->auth)
               ? OC_OK
               : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

/* h for an s3:// URL: the store's URL and the signing settings (copies). The recent opens
 * are keyed by the key id and a hash of the secret and token, never by the secret. */
static oc_status s3_setup(http_source *h, const char *url, const oc_s3_options *s3in,
                          oc_error *err) {
    oc_s3_options local;
    OC_FORWARD(oc__s3_opts(&s3in, &local, err)); /* by the caller's size (sized.h) */
    const oc_s3_options s3 = *s3in;
    if (s3.problem && *s3.problem)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "%s: %s", url, s3.problem);
    int keyed = s3.access_key_id && *s3.access_key_id;
    if (keyed && !(s3.secret_access_key && *s3.secret_access_key))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "%s: the S3 settings give an access key id without its secret", url);
    if (keyed && !oc__cb_available())
        return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                        "%s: signed S3 requests need OpenSSL, and onnxz was built without it "
                        "(without credentials, public buckets can be read)",
                        url);
    oc__s3_target t;
    OC_FORWARD(oc__s3_target_make(url, &s3, &t, err));
    h->s3 = 1;
    h->url = t.url;
    h->s3_host = t.host;
    h->s3_path = t.path;
    t.url = t.host = t.path = NULL;
    oc__s3_target_free(&t);
    h->s3_region = strdup(oc__s3_region(&s3));
    int ok = h->url && h->s3_host && h->s3_path && h->s3_region;
    if (keyed && ok) {
        h->s3_key_id = strdup(s3.access_key_id);
        h->s3_secret = strdup(s3.secret_access_key);
        h->s3_token = s3.session_token && *s3.session_token ? strdup(s3.session_token) : NULL;
        ok = h->s3_key_id && h->s3_secret &&
             (h->s3_token || !(s3.session_token && *s3.session_token));
        uint8_t md[OC__CB_SHA256_SIZE];
        size_t sn = ok ? strlen(h->s3_secret) : 0, tn = h->s3_token ? strlen(h->s3_token) : 0;
        char *both = ok ? malloc(sn + tn + 2) : NULL;
        ok = both != NULL;
        if (ok) {
            memcpy(both, h->s3_secret, sn);
            both[sn] = '\n';
            memcpy(both + sn + 1, h->s3_token ? h->s3_token : "", tn + 1);
            oc_status st = oc__cb_sha256(both, sn + tn + 1, md, err);
            oc__cb_cleanse(both, sn + tn + 1);
            free(both);
            if (st != OC_OK) return st;
            size_t kn = strlen(h->s3_key_id) + 2 * sizeof md + 8;
            if ((h->recall_key = malloc(kn))) {
                int o = snprintf(h->recall_key, kn, "s3 %s ", h->s3_key_id);
                for (size_t i = 0; i < sizeof md; i++)
                    o += snprintf(h->recall_key + o, kn - (size_t)o, "%02x", md[i]);
            }
            ok = h->recall_key != NULL;
        }
    }
    return ok ? OC_OK : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

oc_status oc__source_http(const char *url, const oc_http_options *opts, oc_source **out,
                          oc_error *err) {
    *out = NULL;
    /* A password that RFC 3986 would cut short is never sent in parts: libcurl would
     * take its tail for a host or a path, and name it ("Could not resolve host: ..."). */
    if (oc__url_ambiguous(url))
        return oc_error_file(
            err, url,
            oc__fail_rule(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "R-8",
                          "%s: a user:password in a URL is percent-encoded where it "
                          "holds an at sign (%%40), '/', '?', '#' or a blank, and so is an "
                          "at sign in the path of a URL with a port",
                          url));
    pthread_once(&global_once, global_init);
    if (global_rc != CURLE_OK)
        return oc_error_file(err, url,
                             oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s: libcurl did not start: %s",
                                      url, curl_easy_strerror(global_rc)));
    oc_http_options local;
    OC_FORWARD(oc__http_opts(&opts, &local, err)); /* by the caller's size (sized.h) */
    const oc_http_options o = *opts;
    http_source *h = calloc(1, sizeof *h);
    if (!h) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    pthread_mutex_init(&h->lock, NULL);
    pthread_mutex_init(&h->ahead_lock, NULL);
    h->pid = getpid();
    const char *auth = o.auth, *endpoint = NULL;
    if (oc__is_hf_url(url)) {
        oc_status hst = hf_setup(h, url, o.hf, &endpoint, err);
        if (hst != OC_OK) {
            http_destroy(&h->head);
            free(h);
            return hst;
        }
        auth = NULL; /* the hub's token, never another server's credentials */
    } else if (oc__is_s3_url(url)) {
        oc_status s3st = s3_setup(h, url, o.s3, err);
        if (s3st != OC_OK) {
            http_destroy(&h->head);
            free(h);
            return oc_error_file(err, url, s3st);
        }
        auth = NULL; /* a bearer token is for http(s) servers, never a store */
    } else {
        h->url = strdup(url);
    }
    h->ca_file = dup_or_null(o.ca_file);
    h->insecure = o.insecure != 0;
    h->timeout_s = o.timeout_ms ? (long)((o.timeout_ms + 999) / 1000) : 30L;
    h->connect_ms = o.connect_ms ? (long)o.connect_ms : 15000L;
    h->min_rate = o.min_rate ? o.min_rate : OC_HTTP_MIN_RATE_DEFAULT;
    h->deadline_s = (double)o.deadline_ms / 1000.0;
    h->max_headers = o.max_header_bytes ? o.max_header_bytes : OC_HTTP_MAX_HEADERS_DEFAULT;
    h->cancel = o.cancel;
    h->cancel_ctx = o.cancel_ctx;
    h->retries = o.retries < 0 ? 0 : o.retries > 0 ? o.retries : 3;
    h->parallel = o.parallel > 0 ? (o.parallel < PAR_MAX ? o.parallel : PAR_MAX) : PAR_DEFAULT;
    if (auth) {
        size_t n = strlen("Authorization: ") + strlen(auth) + 1;
        if ((h->auth = malloc(n))) snprintf(h->auth, n, "Authorization: %s", auth);
    }
    if (!h->s3) h->recall_key = h->auth;
    char *name = display_name(url);
    h->key = h->url ? strdup(h->url) : NULL;
    oc_status st =
        !h->url || !h->key || !name || (auth && !h->auth) || (h->ca_file == NULL && o.ca_file)
            ? OC_ERR_NOMEM
            : OC_OK;
    if (st != OC_OK) {
        free(name);
        http_destroy(&h->head);
        free(h);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    /* The first request: the tail, the size and the identity (or what the last open of
     * the same URL found a moment ago). */
    if (!recall(h)) {
        h->head.name = name; /* for request()'s messages; oc__source_new sets its own copy */
        xfer x;
        memset(&x, 0, sizeof x);
        x.h = h;
        st = request(h, &x, err);
        h->head.name = NULL;
        if (st == OC_OK) {
            h->tail = x.open_buf;
            h->tail_len = x.got;
            x.open_buf = NULL;
            if (h->tail_len && x.r_last != h->head.size - 1)
                st = oc_error_file(err, name,
                                   oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                                            "%s: bad Content-Range: bytes %" PRIu64 "-%" PRIu64
                                            "/%" PRIu64 " for the last %u bytes",
                                            name, x.r_first, x.r_last, h->head.size, OC_HTTP_TAIL));
        }
        free(x.open_buf);
        if (st == OC_OK && h->hf && !h->commit[0]) st = pin(h, &x, endpoint, name, err);
        if (st != OC_OK) {
            free(name);
            http_destroy(&h->head);
            free(h);
            return st;
        }
        if (!h->insecure) { /* what an unverified server said is not reused */
            remember(h, h->key);
            if (strcmp(h->url, h->key) != 0) remember(h, h->url); /* an hf:// URL, pinned */
        }
    }
    uint64_t size = h->head.size;
    st = oc__source_new(&h->head, &http_vtable, size, OC_SOURCE_REMOTE, NULL, name, err);
    free(name);
    if (st == OC_OK) *out = &h->head;
    return st;
}
