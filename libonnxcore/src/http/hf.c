/*
 * hf.c - hf:// URLs (internal/hf.h) and the hub's settings as its own tools find them
 * (oc_hf_options_load, onnxcore/http.h). No libcurl here: a build without it still parses
 * the URLs (and refuses to read them, source_http_none.c).
 */
#define _DEFAULT_SOURCE /* strncasecmp */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnxcore/http.h"
#include "internal/error.h"
#include "internal/hf.h"
#include "internal/settings_file.h"
#include "internal/small_file.h"
#include "internal/url.h"

int oc__is_hf_url(const char *path) { return path && strncasecmp(path, "hf://", 5) == 0; }

int oc__hf_is_commit(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) return 0;
    return n == 40;
}

const char *oc__hf_token_problem(const char *token) {
    if (!*token) return "is empty";
    for (const unsigned char *p = (const unsigned char *)token; *p; p++)
        if (*p <= 0x20 || *p >= 0x7f)
            return "holds a byte a header cannot carry (a blank, control byte or non-ASCII)";
    return NULL;
}

void oc__hf_ref_free(oc_hf_ref *r) {
    free(r->repo);
    free(r->rev);
    free(r->path);
    memset(r, 0, sizeof *r);
}

static int hexval(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* The n bytes of s percent-decoded (a '%' not followed by two hex digits is refused),
 * or NULL with *bad set (or out of memory, *bad 0). */
static char *decode(const char *s, size_t n, int *bad) {
    char *out = malloc(n + 1);
    size_t o = 0;
    *bad = 0;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[o++] = s[i];
            continue;
        }
        int hi = i + 1 < n ? hexval(s[i + 1]) : -1;
        int lo = i + 2 < n ? hexval(s[i + 2]) : -1;
        if (hi < 0 || lo < 0) {
            free(out);
            *bad = 1;
            return NULL;
        }
        out[o++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[o] = '\0';
    if (strlen(out) != o) { /* a %00 */
        free(out);
        *bad = 1;
        return NULL;
    }
    return out;
}

/* A repository's ORG or NAME as the hub allows them. */
static int name_ok(const char *s, size_t n) {
    if (n == 0 || n > 96 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return 0;
        if (i && (c == '-' || c == '.') && s[i - 1] == c) return 0; /* "--", ".." */
    }
    return 1;
}

/* E-10 on a decoded path (as internal/path_safety.h's oc__location_problem, which lives a
 * layer up): NULL, or why not. */
static const char *path_problem(const char *p) {
    size_t n = strlen(p);
    if (n == 0) return "names no file";
    if (p[0] == '/') return "has an empty component";
    if (p[n - 1] == '/') return "names a directory";
    for (const char *c = p; *c;) {
        size_t l = strcspn(c, "/");
        if (l == 0) return "has an empty component";
        if ((l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.'))
            return "has a '.' or '..' component";
        c += l;
        if (*c) c++;
    }
    return NULL;
}

static oc_status bad_url(oc_error *err, const char *url, const char *why) {
    return oc_error_file(err, url,
                         oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                  "%s: not a hub URL (hf://ORG/NAME/PATH or "
                                  "hf://ORG/NAME@REVISION/PATH): %s",
                                  url, why));
}

oc_status oc__hf_parse(const char *url, oc_hf_ref *out, oc_error *err) {
    memset(out, 0, sizeof *out);
    const char *org = url + 5;
    size_t on = strcspn(org, "/");
    if (!org[on]) return bad_url(err, url, "no repository and path");
    const char *name = org + on + 1;
    size_t nn = strcspn(name, "/@");
    if (!name_ok(org, on) || !name_ok(name, nn))
        return bad_url(err, url, "ORG and NAME are letters, digits, '-', '_' and '.'");
    const char *rest = name + nn;
    int bad = 0;
    if (*rest == '@') {
        size_t rn = strcspn(rest + 1, "/");
        out->rev = decode(rest + 1, rn, &bad);
        if (!out->rev) {
            oc__hf_ref_free(out);
            return bad ? bad_url(err, url, "a revision's '%' is not followed by two hex digits")
                       : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        }
        if (!out->rev[0]) {
            oc__hf_ref_free(out);
            return bad_url(err, url, "an empty revision after '@'");
        }
        /* A revision is a branch, tag or commit, as git names them: no empty, '.' or '..'
         * component (a '.' or '..' would read as a step of the resolve URL's path), no
         * control byte or blank. */
        const char *rwhy = path_problem(out->rev);
        for (const unsigned char *c = (const unsigned char *)out->rev; !rwhy && *c; c++)
            if (*c <= 0x20 || *c == 0x7f) rwhy = "holds a blank or a control byte";
        if (rwhy) {
            char msg[96];
            snprintf(msg, sizeof msg, "its revision %s",
                     strcmp(rwhy, "names a directory") == 0 ? "ends with '/'" : rwhy);
            oc__hf_ref_free(out);
            return bad_url(err, url, msg);
        }
        rest += 1 + rn;
    }
    if (*rest != '/') {
        oc__hf_ref_free(out);
        return bad_url(err, url, "no path in the repository");
    }
    out->repo = malloc(on + 1 + nn + 1);
    out->path = decode(rest + 1, strlen(rest + 1), &bad);
    if (!out->repo || !out->path) {
        oc__hf_ref_free(out);
        return bad ? bad_url(err, url, "a path's '%' is not followed by two hex digits, or is %00")
                   : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    snprintf(out->repo, on + 1 + nn + 1, "%.*s/%.*s", (int)on, org, (int)nn, name);
    const char *why = path_problem(out->path);
    if (why) {
        char msg[96];
        snprintf(msg, sizeof msg, "its path %s", why);
        oc__hf_ref_free(out);
        return bad_url(err, url, msg);
    }
    return OC_OK;
}

/* s percent-encoded (internal/url.h) at *o in out, which has room for 3 bytes a byte. */
static void encode(char *out, size_t *o, const char *s, int keep_slash) {
    *o += strlen(oc__uri_encode(s, strlen(s), keep_slash, out + *o));
}

static char *compose(const char *head, const char *repo, const char *mid, const char *rev,
                     const char *path) {
    size_t cap = strlen(head) + strlen(repo) + strlen(mid) + 3 * strlen(rev) + 3 * strlen(path) + 4;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t o = (size_t)snprintf(out, cap, "%s%s%s", head, repo, mid);
    encode(out, &o, rev, 0);
    out[o++] = '/';
    encode(out, &o, path, 1);
    return out;
}

char *oc__hf_resolve_url(const char *endpoint, const oc_hf_ref *r, const char *rev) {
    size_t n = strlen(endpoint);
    while (n && endpoint[n - 1] == '/') n--;
    char *head = malloc(n + 2);
    if (!head) return NULL;
    snprintf(head, n + 2, "%.*s/", (int)n, endpoint);
    char *out = compose(head, r->repo, "/resolve/", rev, r->path);
    free(head);
    return out;
}

char *oc__hf_url(const oc_hf_ref *r, const char *rev) {
    return compose("hf://", r->repo, "@", rev, r->path);
}

/* ---- the settings (onnxcore/http.h) ---- */

static const char *text(oc_http_lookup get, void *ctx, const char *name) {
    const char *v = get(ctx, name);
    return v && *v ? v : NULL;
}

/* token as the hub's tools clean it (huggingface_hub's _clean_token): line breaks
 * dropped, blanks around stripped, in place; returns where it now starts. */
static char *cleaned(char *buf) {
    size_t o = 0;
    for (size_t i = 0; buf[i]; i++)
        if (buf[i] != '\r' && buf[i] != '\n') buf[o++] = buf[i];
    while (o && (buf[o - 1] == ' ' || buf[o - 1] == '\t')) o--;
    buf[o] = '\0';
    size_t s = 0;
    while (s < o && (buf[s] == ' ' || buf[s] == '\t')) s++;
    return buf + s;
}

/* The token in the file at path, as the hub's tools read it (cleaned), into a new
 * string; *tok NULL when the file does not exist or holds nothing. Read only when it is
 * a regular file of at most 4 KiB (internal/small_file.h). */
static oc_status token_file(const char *path, char **tok, oc_error *err) {
    *tok = NULL;
    char *buf;
    size_t n;
    OC_FORWARD(oc__small_file_read(path, "the hub's token file", 4096, OC__SMALL_FILE_MISSING_OK,
                                   &buf, &n, err));
    if (!buf) return OC_OK;
    oc_status st = OC_OK;
    const char *t = cleaned(buf), *why = *t ? oc__hf_token_problem(t) : NULL;
    if (why) /* never the token itself */
        st = oc_error_file(
            err, path,
            oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "%s: not a token: it %s", path, why));
    else if (*t && !(*tok = strdup(t)))
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc__small_file_free(buf, n);
    return st;
}

/* a + b as a new string, or NULL */
static char *join(const char *a, const char *b) {
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s", a, b);
    return s;
}

/* What oc_hf_options_load allocates: the struct and the strings it points to. */
typedef struct hf_owned {
    oc_hf_options pub;
    char *endpoint, *token;
} hf_owned;

void oc_hf_options_free(oc_hf_options *o) {
    if (!o) return;
    hf_owned *h = (hf_owned *)o;
    if (h->token) {
        volatile char *p = h->token;
        while (*p) *p++ = 0;
        free(h->token);
    }
    free(h->endpoint);
    free(h);
}

oc_status oc_hf_options_load(oc_hf_options **out, oc_http_lookup get, void *ctx, oc_error *err) {
    if (out) *out = NULL;
    if (!out || !get)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_hf_options_load: missing argument");
    hf_owned *h = calloc(1, sizeof *h);
    if (!h) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    h->pub.size = sizeof h->pub;
    oc_status st = OC_OK;
    const char *v = text(get, ctx, "HF_ENDPOINT");
    char shown[256];
    if (v && strncasecmp(v, "http://", 7) != 0 && strncasecmp(v, "https://", 8) != 0)
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                      "HF_ENDPOINT: '%.200s' is not an http:// or https:// URL",
                      oc__setting_shown(v, shown, sizeof shown)); /* no user:password@ (N-2) */
    else if (v && !(h->endpoint = strdup(v)))
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    const char *t = text(get, ctx, "HF_TOKEN");
    const char *tname = "HF_TOKEN";
    if (!t) t = text(get, ctx, "HUGGING_FACE_HUB_TOKEN"), tname = "HUGGING_FACE_HUB_TOKEN";
    size_t tn = t ? strlen(t) + 1 : 0;
    char *copy = st == OC_OK && t ? strdup(t) : NULL;
    if (st == OC_OK && t && !copy) st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (st == OC_OK && t) {
        /* cleaned as the hub's tools do: `export HF_TOKEN=$(cat file)` keeps no newline, but
         * HF_TOKEN="$(cat file)\n" and the like must work as they do there */
        const char *c = cleaned(copy), *why = *c ? oc__hf_token_problem(c) : NULL;
        if (!*c)
            t = NULL; /* only blanks: no token, as there */
        else if (why)
            st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "%s: not a token: it %s", tname,
                          why);
        else if (!(h->token = strdup(c)))
            st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    oc__small_file_free(copy, tn);
    if (st == OC_OK && !t) { /* the file `hf auth login` writes */
        const char *p = text(get, ctx, "HF_TOKEN_PATH"), *home;
        char *path = NULL;
        int look = 1;
        if (p)
            path = strdup(p);
        else if ((home = text(get, ctx, "HF_HOME")))
            path = join(home, "/token");
        else if ((home = text(get, ctx, "XDG_CACHE_HOME")))
            path = join(home, "/huggingface/token");
        else if ((home = text(get, ctx, "HOME")))
            path = join(home, "/.cache/huggingface/token");
        else
            look = 0; /* nowhere to look */
        if (look && !path)
            st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        else if (path)
            st = token_file(path, &h->token, err);
        free(path);
    }
    if (st != OC_OK) {
        oc_hf_options_free(&h->pub);
        return st;
    }
    h->pub.endpoint = h->endpoint;
    h->pub.token = h->token;
    *out = &h->pub;
    return OC_OK;
}
