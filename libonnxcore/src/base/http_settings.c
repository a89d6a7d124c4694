/*
 * http_settings.c - onnxz's HTTP settings by name (oc_http_options_parse): the one table
 * of their names, ranges and meanings, for every program that reads them from its user.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "onnxcore/http.h"
#include "internal/error.h"

/* The numeric settings: a whole number from lo to hi, or unset. */
typedef struct number_setting {
    const char *name;
    long lo, hi;
} number_setting;

static const number_setting insecure = {"ONNXZ_HTTP_INSECURE", 0, 1};
static const number_setting timeout = {"ONNXZ_HTTP_TIMEOUT", 1, 86400}; /* seconds */
static const number_setting retries = {"ONNXZ_HTTP_RETRIES", 0, 100};
static const number_setting parallel = {"ONNXZ_HTTP_PARALLEL", 1, 16};

/* The setting's text, or NULL when it is unset or empty. */
static const char *text(oc_http_lookup get, void *ctx, const char *name) {
    const char *v = get(ctx, name);
    return v && *v ? v : NULL;
}

/* *given tells whether the setting is set; *out its value then. A value that is not a
 * whole number in range fails, naming the setting. */
static oc_status number(const number_setting *s, oc_http_lookup get, void *ctx, bool *given,
                        long *out, oc_error *err) {
    const char *v = text(get, ctx, s->name);
    char *end;
    *given = v != NULL;
    if (!v) return OC_OK;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno || *end || x < s->lo || x > s->hi || *v == ' ' || *v == '+')
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "%s: '%.64s' is not a whole number from %ld to %ld", s->name, v, s->lo,
                        s->hi);
    *out = x;
    return OC_OK;
}

oc_status oc_http_options_parse(oc_http_options *opts, oc_http_lookup get, void *ctx,
                                oc_error *err) {
    if (!opts || !get)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_http_options_parse: missing argument");
    if (opts->size < offsetof(oc_http_options, min_rate) || opts->size > sizeof *opts)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_http_options: size %zu is not one this library knows", opts->size);
    bool has[4];
    long n[4] = {0, 0, 0, 0};
    OC_FORWARD(number(&insecure, get, ctx, &has[0], &n[0], err));
    OC_FORWARD(number(&timeout, get, ctx, &has[1], &n[1], err));
    OC_FORWARD(number(&retries, get, ctx, &has[2], &n[2], err));
    OC_FORWARD(number(&parallel, get, ctx, &has[3], &n[3], err));
    /* Checked whole before anything is set: a refused environment changes nothing. */
    const char *v;
    if ((v = text(get, ctx, "ONNXZ_HTTP_AUTH")) != NULL) opts->auth = v;
    if ((v = text(get, ctx, "ONNXZ_CA_FILE")) != NULL) opts->ca_file = v;
    if (has[0]) opts->insecure = (int)n[0];
    if (has[1]) opts->timeout_ms = (uint32_t)n[1] * 1000u;
    if (has[2]) opts->retries = n[2] ? (int)n[2] : -1; /* 0: none, which the options spell -1 */
    if (has[3]) opts->parallel = (int)n[3];
    return OC_OK;
}
