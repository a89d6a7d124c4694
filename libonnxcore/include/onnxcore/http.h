/*
 * onnxcore/http.h - models on HTTP(S) servers, read with range requests.
 *
 * Wherever a load takes a path (oc_model_load_file, oz_open, oz_archive_open, ...), an
 * http:// or https:// URL opens the object on the server instead: an .onnxz archive costs
 * a request for its tail (its directory), one for its model and one per tensor read; a
 * model's external data is read by ranges from locations relative to the model's URL,
 * under the rules files have (spec/remote.md). A build without libcurl refuses URLs with
 * OC_ERR_UNSUPPORTED ("built without HTTP support").
 *
 * The settings (oc_parse_options.http; NULL: all defaults). Each one left unset here is
 * taken from the environment, so a program gets them from its user without plumbing, and
 * secrets never need to be on a command line:
 *   ONNXZ_HTTP_AUTH      the value of an Authorization header ("Bearer <token>"), sent to
 *                        the URL's own scheme, host and port only (never after a redirect
 *                        to another)
 *   ONNXZ_CA_FILE        PEM certificates to verify servers against (default: the
 *                        system's)
 *   ONNXZ_HTTP_INSECURE  1: do not verify servers' certificates
 *   ONNXZ_HTTP_TIMEOUT   seconds without a byte before a request is abandoned (30)
 *   ONNXZ_HTTP_RETRIES   retries of a request that failed in a way worth retrying: a 5xx,
 *                        a reset connection, a body cut short (3); each resumes where the
 *                        bytes stopped
 *   ONNXZ_HTTP_PARALLEL  connections a large read (16 MiB or more) is split across, in
 *                        4 MiB ranges passed on in order (4; 1: one connection, 16 at
 *                        most)
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
    const char *auth;    /* Authorization header value; NULL: $ONNXZ_HTTP_AUTH */
    const char *ca_file; /* NULL: $ONNXZ_CA_FILE, else the system's store */
    int insecure;        /* 1: no certificate check; 0: $ONNXZ_HTTP_INSECURE */
    uint32_t timeout_ms; /* stall timeout; 0: $ONNXZ_HTTP_TIMEOUT seconds, else 30 s */
    uint32_t connect_ms; /* connect timeout; 0: 15 s */
    int retries;         /* < 0: none; 0: $ONNXZ_HTTP_RETRIES, else 3 */
    int parallel;        /* connections per large read (1..16); 0: $ONNXZ_HTTP_PARALLEL,
                            else 4 */
} oc_http_options;

#define OC_HTTP_OPTIONS_INIT \
    { .size = sizeof(oc_http_options) }

/* True when path is an http:// or https:// URL (the scheme in any case). */
OC_API bool oc_is_url(const char *path);

/* True when this build reads URLs (it was built with libcurl). */
OC_API bool oc_http_supported(void);

#ifdef __cplusplus
}
#endif

#endif
