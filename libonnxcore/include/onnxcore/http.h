/*
 * onnxcore/http.h - models on HTTP(S) servers and S3 object stores, read with range
 * requests.
 *
 * Wherever a load takes a path (oc_model_load_file, oz_open, oz_archive_open, ...), an
 * http://, https:// or s3://BUCKET/KEY URL opens the object on the server instead: an .onnxz archive costs
 * a request for its tail (its directory), one for its model and one per tensor read; a
 * model's external data is read by ranges from locations relative to the model's URL,
 * under the rules files have (spec/remote.md). A build without libcurl refuses URLs with
 * OC_ERR_UNSUPPORTED ("built without HTTP support").
 *
 * The settings are an oc_http_options (oc_parse_options.http, oz_zip_reader_options.http;
 * NULL: every default). The libraries never read the environment: the same call behaves
 * the same in any process. The onnxz tool and the Python package fill these settings from
 * their user's environment (ONNXZ_HTTP_AUTH, ONNXZ_CA_FILE, ONNXZ_HTTP_INSECURE,
 * ONNXZ_HTTP_TIMEOUT, ONNXZ_HTTP_RETRIES, ONNXZ_HTTP_PARALLEL: see their documentation;
 * for s3:// AWS's own variables and files, oc_s3_options_load), so that secrets never
 * need to be on a command line.
 */
#ifndef ONNXCORE_HTTP_H
#define ONNXCORE_HTTP_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oc_http_options {
    size_t size;         /* sizeof(oc_http_options), set by OC_HTTP_OPTIONS_INIT */
    const char *auth;    /* the value of an Authorization header ("Bearer <token>"), sent to
                            the URL's own scheme, host and port only (never after a
                            redirect to another); NULL: none */
    const char *ca_file; /* PEM certificates to verify servers against; NULL: the
                            system's store */
    int insecure;        /* 1: no certificate check */
    uint32_t timeout_ms; /* stall timeout: no byte for this long abandons a request;
                            0: 30 s */
    uint32_t connect_ms; /* connect timeout; 0: 15 s */
    int retries;         /* retries of a request that failed in a way worth retrying (a
                            5xx, a reset connection, a body cut short), each resuming where
                            the bytes stopped; < 0: none; 0: 3 */
    int parallel;        /* connections a large read (16 MiB or more) is split across, in
                            4 MiB ranges passed on in order (1..16); 0: 4 */
    /* Never read: the tail padding of this struct when it ended at `parallel` (48 bytes),
     * which a caller built against that header passes holding anything (onnxcore/options.h,
     * "Extending"). */
    uint32_t padding_48;
    /* Bounds no server can defeat by dripping bytes (spec/remote.md R-15): each response's
     * headers must arrive within the stall timeout, and its body at min_rate bytes per
     * second averaged over each window of that timeout (or what was left of it); slower
     * is abandoned, not retried. */
    uint32_t min_rate;         /* bytes per second; 0: OC_HTTP_MIN_RATE_DEFAULT */
    uint32_t max_header_bytes; /* of one response; 0: OC_HTTP_MAX_HEADERS_DEFAULT */
    uint32_t deadline_ms;      /* the longest one request may take, retries apart; 0: none */
    /* Polled every 100 ms or so while a request runs, on the thread that called the
     * library (never on the threads of a parallel read): nonzero abandons the read with
     * OC_ERR_CANCELLED. For a binding whose user may interrupt a long read (Python's
     * Ctrl-C). NULL: never cancelled. */
    int (*cancel)(void *ctx);
    void *cancel_ctx;
    /* How s3://BUCKET/KEY URLs reach their store and sign their requests (experimental:
     * oc_s3_options below); NULL: AWS itself, unsigned (public buckets only). */
    const struct oc_s3_options *s3;
    /* Where hf:// URLs are read and with which token (experimental: oc_hf_options
     * below); NULL: the public hub (https://huggingface.co), no token. */
    const struct oc_hf_options *hf;
} oc_http_options;

#define OC_HTTP_MIN_RATE_DEFAULT    1024u       /* 1 KiB/s */
#define OC_HTTP_MAX_HEADERS_DEFAULT (64u << 10) /* 64 KiB */

#define OC_HTTP_OPTIONS_INIT \
    { .size = sizeof(oc_http_options) }

/* A setting's value by its name, or NULL when it has none (a program's getenv, or its own
 * table). The string must stay valid as long as the options that borrow it. */
typedef const char *(*oc_http_lookup)(void *ctx, const char *name);

/* Fills *opts from the settings `get` gives by name, the one definition of onnxz's
 * environment for programs that read it from their user (the library itself never does):
 *   ONNXZ_HTTP_AUTH      auth (borrowed)
 *   ONNXZ_CA_FILE        ca_file (borrowed)
 *   ONNXZ_HTTP_INSECURE  insecure, 0 or 1
 *   ONNXZ_HTTP_TIMEOUT   timeout_ms, in seconds from 1 to 86400
 *   ONNXZ_HTTP_RETRIES   retries, from 0 (none) to 100
 *   ONNXZ_HTTP_PARALLEL  parallel, from 1 to 16
 * A setting that is unset or empty leaves its field as it was, and so does every field
 * not named here: initialise *opts first (OC_HTTP_OPTIONS_INIT). A value that is not a
 * whole number in its range fails with OC_ERR_INVALID_ARG, the message naming the
 * setting ("ONNXZ_HTTP_TIMEOUT: 'x' is not a whole number from 1 to 86400"), and *opts is
 * left unchanged. Thread-safe when get is. */
OC_API oc_status oc_http_options_parse(oc_http_options *opts, oc_http_lookup get, void *ctx,
                                       oc_error *err);

/* True when path is an http://, https://, s3:// or hf:// URL (the scheme in any case). */
OC_API bool oc_is_url(const char *path);

/* path as it may be shown (spec/security.md N-2): every http:// or https:// URL in it
 * (a path, or a line of text naming some) without what may be the user:password@ of its
 * authority, found as RFC 3986 splits a URL; anything else as it is. Writes at most cap
 * bytes with the terminating NUL into out (cut when longer; out may be path) and returns
 * out. Every message of the libraries passes through it; a program shows a path it was
 * given, or a line it made, through it too. */
OC_API const char *oc_path_shown(const char *path, char *out, size_t cap);

/* True when this build reads URLs (it was built with libcurl). */
OC_API bool oc_http_supported(void);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */

/* S3 and the stores that speak its API (spec/remote.md, "S3"). An s3://BUCKET/KEY URL is
 * read as an https:// one is (the same requests, one per range), at the endpoint these
 * settings name, every request signed with AWS Signature Version 4 when a key is given
 * (the library's own signer, on OpenSSL: a build without OpenSSL reads public buckets
 * only). The strings are borrowed: they must outlive every load that uses them. */
typedef struct oc_s3_options {
    size_t size;                   /* sizeof(oc_s3_options), set by OC_S3_OPTIONS_INIT */
    const char *access_key_id;     /* NULL: requests are not signed */
    const char *secret_access_key; /* with access_key_id; never shown, never sent */
    const char *session_token;     /* temporary credentials' token (x-amz-security-token,
                                      signed); NULL: none */
    const char *region;            /* the bucket's region; NULL: us-east-1 */
    const char *endpoint;          /* "http(s)://HOST[:PORT][/PREFIX]" of an S3-compatible
                                      store; NULL: AWS (https://s3.REGION.amazonaws.com) */
    int path_style;                /* 1: ENDPOINT/BUCKET/KEY; -1: BUCKET.HOST/KEY
                                      (virtual-hosted); 0: path-style with an endpoint,
                                      virtual-hosted on AWS (path-style there too for a
                                      bucket name a host name cannot carry) */
    const char *problem;           /* why these settings cannot be used (set by
                                      oc_s3_options_load: the profile AWS_PROFILE names
                                      is in neither file): every s3:// open fails with
                                      it, other URLs and files are read; NULL: none */
} oc_s3_options;

#define OC_S3_OPTIONS_INIT \
    { .size = sizeof(oc_s3_options) }

/* Fills a new oc_s3_options (*out, freed with oc_s3_options_free) as AWS's own tools find
 * their settings, from the settings `get` gives by name (a program's getenv) and the files
 * they name; the library itself never reads the environment:
 *   credentials: AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN);
 *     else the profile (AWS_PROFILE, else "default") of the shared credentials file
 *     (AWS_SHARED_CREDENTIALS_FILE, else $HOME/.aws/credentials: section "[NAME]"), else
 *     of the config file (AWS_CONFIG_FILE, else $HOME/.aws/config: "[profile NAME]", or
 *     "[default]"): aws_access_key_id, aws_secret_access_key, aws_session_token;
 *     none found: NULL (unsigned requests); a profile that AWS_PROFILE names and neither
 *     file holds sets `problem` instead (as AWS's tools refuse it);
 *   region: AWS_REGION, else AWS_DEFAULT_REGION, else the profile's `region` (config);
 *   endpoint: AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, else the profile's
 *     `endpoint_url` (config); path_style 0 (path-style with an endpoint).
 * A file is read only for what the settings leave unsaid (the credentials file when no
 * keys are set; the config file when keys, region or endpoint are missing; both when
 * AWS_PROFILE is set); call this only for an s3:// URL, so that a broken file never
 * touches other work. A file that does not exist is no error; one that is not a regular
 * file of at most 1 MiB (it is opened without blocking), or cannot be read, or an
 * endpoint that is not an http(s) URL, fails with a message naming the file or setting and
 * why (never a secret's value). The strings are copies: *out outlives get's. Thread-safe
 * when get is. */
OC_API oc_status oc_s3_options_load(oc_s3_options **out, oc_http_lookup get, void *ctx,
                                    oc_error *err);
/* Wipes the secret and the token and frees o (made by oc_s3_options_load); NULL is
 * accepted. */
OC_API void oc_s3_options_free(oc_s3_options *o);
/* The Hugging Face hub (spec/remote.md, "The Hugging Face hub"). hf://ORG/NAME/PATH and
 * hf://ORG/NAME@REVISION/PATH are read from ENDPOINT/ORG/NAME/resolve/REVISION/PATH
 * (REVISION "main" when none is given), the revision pinned at open to the commit the hub
 * reports, so that every later request of that open (each tensor's range, the data files
 * beside the model) reads the same commit. The token goes as "Authorization: Bearer
 * TOKEN" to the endpoint's scheme, host and port only, never to the storage host the hub
 * redirects to. The strings are borrowed: they must outlive every load that uses them. */
typedef struct oc_hf_options {
    size_t size;          /* sizeof(oc_hf_options), set by OC_HF_OPTIONS_INIT */
    const char *endpoint; /* "http(s)://HOST[:PORT][/PREFIX]"; NULL: https://huggingface.co */
    const char *token;    /* an access token; NULL: none (public repositories only) */
} oc_hf_options;

#define OC_HF_OPTIONS_INIT \
    { .size = sizeof(oc_hf_options) }

/* Fills a new oc_hf_options (*out, freed with oc_hf_options_free) as the hub's own tools
 * find their settings, from the settings `get` gives by name (a program's getenv) and the
 * file they name; the library itself never reads the environment:
 *   endpoint: HF_ENDPOINT (an http:// or https:// URL);
 *   token: HF_TOKEN, else HUGGING_FACE_HUB_TOKEN, else the file `hf auth login` writes:
 *     HF_TOKEN_PATH, else $HF_HOME/token, else $XDG_CACHE_HOME/huggingface/token, else
 *     $HOME/.cache/huggingface/token (a token's line breaks dropped, blanks around
 *     stripped, from the file as from the variables).
 * Call this only for an hf:// URL. A file that does not exist, or holds nothing, is no
 * token and no error; one that is not a regular file of at most 4 KiB or cannot be read
 * (why: the system's reason), a token holding a blank, control or non-ASCII byte, or an endpoint that is not
 * http(s), fails with a message naming the setting or file (never the token). The strings
 * are copies. Thread-safe when get is. */
OC_API oc_status oc_hf_options_load(oc_hf_options **out, oc_http_lookup get, void *ctx,
                                    oc_error *err);
/* Wipes the token and frees o (made by oc_hf_options_load); NULL is accepted. */
OC_API void oc_hf_options_free(oc_hf_options *o);

/* The scheme of a URL, by the same test oc_is_url makes (the scheme in any case). */
typedef enum oc_url_scheme {
    OC_URL_NONE = 0, /* not a URL: a path */
    OC_URL_HTTP = 1, /* http:// or https:// */
    OC_URL_S3 = 2,   /* s3://: oc_http_options.s3 applies */
    OC_URL_HF = 3    /* hf://: oc_http_options.hf applies */
} oc_url_scheme;
/* path's scheme: what a program asks to know which settings a call needs (it loads AWS's
 * or the hub's only for a call that names such a URL, spec/remote.md R-20). */
OC_API oc_url_scheme oc_url_scheme_of(const char *path);

#endif

#ifdef __cplusplus
}
#endif

#endif
