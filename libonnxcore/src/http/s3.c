/*
 * s3.c - s3://BUCKET/KEY URLs (internal/s3.h): where each goes (the endpoint, path-style or
 * virtual-hosted addressing), what a store's error says, and the settings as AWS's own
 * tools find them (oc_s3_options_load, onnxcore/http.h). Built with or without libcurl.
 */
#define _DEFAULT_SOURCE /* strcasecmp, strncasecmp */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "onnxcore/http.h"
#include "internal/error.h"
#include "internal/s3.h"
#include "internal/settings_file.h"
#include "internal/small_file.h"
#include "internal/url.h"

#define FILE_MAX (1u << 20) /* a shared config or credentials file, at most */

const char *oc__s3_region(const oc_s3_options *s3) {
    return s3 && s3->region && *s3->region ? s3->region : "us-east-1";
}

/* S3's bucket names (and the legacy ones: upper case, '_'): nothing that could end a host
 * name or a path segment. */
static int bucket_ok(const char *b, size_t n) {
    if (n == 0 || n > 255) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_'))
            return 0;
    }
    return 1;
}

/* A bucket that may lead a host name under TLS: lower-case letters, digits and inner
 * '-' (a '.' would not match the store's wildcard certificate). */
static int bucket_hostable(const char *b) {
    size_t n = strlen(b);
    if (n < 3 || n > 63 || b[0] == '-' || b[n - 1] == '-') return 0;
    for (size_t i = 0; i < n; i++)
        if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') || b[i] == '-'))
            return 0;
    return 1;
}

/* A region's name as AWS spells them ("us-east-1", "cn-north-1", a store's own such as
 * "garage" or "auto"): lower-case letters, digits and '-'. */
static int region_ok(const char *r) {
    size_t n = strlen(r);
    if (n == 0 || n > 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((r[i] >= 'a' && r[i] <= 'z') || (r[i] >= '0' && r[i] <= '9') || r[i] == '-'))
            return 0;
    return 1;
}

/* An endpoint's host[:port] (the n bytes at h): a DNS name of labels of letters, digits
 * and inner '-' (or an IPv4 address, which is one), or an IPv6 literal in brackets; then
 * at most a ':' and a port's digits. Nothing a URL parser could read as more (a '%',
 * '\\', a blank or a control byte). */
static int host_ok(const char *h, size_t n) {
    size_t i = 0;
    if (n && h[0] == '[') {
        for (i = 1; i < n && h[i] != ']'; i++)
            if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f') ||
                  (h[i] >= 'A' && h[i] <= 'F') || h[i] == ':' || h[i] == '.'))
                return 0;
        if (i == n || i == 1) return 0;
        i++;
    } else {
        size_t label = 0;
        for (; i < n && h[i] != ':'; i++) {
            char c = h[i];
            if (c == '.') {
                if (label == 0 || h[i - 1] == '-') return 0;
                label = 0;
            } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       (c == '-' && label > 0)) {
                if (++label > 63) return 0;
            } else {
                return 0;
            }
        }
        if (i == 0 || h[i - 1] == '.' || h[i - 1] == '-') return 0;
    }
    if (i == n) return 1;
    if (h[i] != ':' || i + 1 == n || n - i - 1 > 5) return 0;
    for (i++; i < n; i++)
        if (h[i] < '0' || h[i] > '9') return 0;
    return 1;
}

static char *dupn(const char *s, size_t n) {
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static char *cat3(const char *a, const char *b, const char *c) {
    size_t na = strlen(a), nb = strlen(b), nc = strlen(c);
    char *p = malloc(na + nb + nc + 1);
    if (p) {
        memcpy(p, a, na);
        memcpy(p + na, b, nb);
        memcpy(p + na + nb, c, nc + 1);
    }
    return p;
}

void oc__s3_target_free(oc__s3_target *t) {
    free(t->url);
    free(t->host);
    free(t->path);
    free(t->bucket);
    memset(t, 0, sizeof *t);
}

oc_status oc__s3_target_make(const char *url, const oc_s3_options *s3, oc__s3_target *t,
                             oc_error *err) {
    memset(t, 0, sizeof *t);
    const char *b = url + 5; /* after "s3://" */
    const char *slash = strchr(b, '/');
    if (!slash || slash == b || !slash[1])
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "%s: an s3:// URL names a bucket and a key (s3://BUCKET/KEY)", url);
    if (!bucket_ok(b, (size_t)(slash - b)))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "%s: not a bucket name (letters, digits, '.', '-' and '_' only)", url);
    const char *key = slash + 1;
    /* The region goes into AWS's host name and every signature's scope: a region's name
     * only (a '.', '/' or '@' would name another host or scope). */
    const char *region = oc__s3_region(s3);
    if (!region_ok(region)) {
        char q[OC_QUOTE_SIZE];
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "%s: the S3 region '%s' is not a region's name (a-z, 0-9 and '-', at "
                        "most 64 bytes: AWS_REGION, or the region of the S3 settings)",
                        url, oc_quote(region, strlen(region), q, sizeof q));
    }
    /* The endpoint: scheme, host[:port], and a path prefix of unreserved bytes and '/'. */
    const char *ep = s3 && s3->endpoint && *s3->endpoint ? s3->endpoint : NULL;
    char aws[128];
    if (!ep) {
        snprintf(aws, sizeof aws, "https://s3.%s.amazonaws.com", oc__s3_region(s3));
        ep = aws;
    }
    size_t scheme = strncasecmp(ep, "https://", 8) == 0  ? 8
                    : strncasecmp(ep, "http://", 7) == 0 ? 7
                                                         : 0;
    const char *hp = ep + scheme;
    size_t hn = strcspn(hp, "/?#@ ");
    const char *prefix = hp + hn;
    size_t pn = strlen(prefix);
    while (pn && prefix[pn - 1] == '/') pn--;
    int bad = scheme == 0 || !host_ok(hp, hn) || (prefix[0] && prefix[0] != '/');
    for (size_t i = 0; i < pn && !bad; i++) {
        char c = prefix[i];
        bad = !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '.' || c == '_' || c == '~' || c == '/');
    }
    if (bad)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "%s: the S3 endpoint is not an http:// or https:// URL of a host "
                        "(with at most a plain path)",
                        url);
    t->bucket = dupn(b, (size_t)(slash - b));
    if (!t->bucket) goto oom;
    int path_style = s3 && s3->path_style ? s3->path_style > 0 : ep != aws;
    if (!path_style && !bucket_hostable(t->bucket)) path_style = 1;
    char *host = dupn(hp, hn), *pre = dupn(prefix, pn);
    if (!host || !pre) {
        free(host);
        free(pre);
        goto oom;
    }
    char *raw = path_style ? cat3(pre, "/", t->bucket) : strdup(pre);
    t->path = raw ? cat3(raw, "/", key) : NULL;
    free(raw);
    free(pre);
    t->host = path_style ? host : cat3(t->bucket, ".", host);
    if (!path_style) free(host);
    if (!t->path || !t->host) goto oom;
    size_t n = strlen(t->path);
    char *enc = malloc(3 * n + 1);
    if (!enc) goto oom;
    oc__uri_encode(t->path, n, 1, enc);
    t->url = malloc(scheme + strlen(t->host) + strlen(enc) + 1);
    if (t->url) {
        memcpy(t->url, ep, scheme);
        strcpy(t->url + scheme, t->host);
        strcat(t->url, enc);
    }
    free(enc);
    if (!t->url) goto oom;
    return OC_OK;
oom:
    oc__s3_target_free(t);
    return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

/* ---- what the store said ---- */

/* The text of the first <tag>...</tag> in body, quoted (it is the server's: N-3), or "". */
static void xml_field(const char *body, size_t n, const char *tag, char *out, size_t cap) {
    char open[48], close[48];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    out[0] = '\0';
    size_t on = strlen(open), cn = strlen(close);
    for (size_t i = 0; i + on <= n; i++) {
        if (memcmp(body + i, open, on) != 0) continue;
        size_t s = i + on;
        for (size_t j = s; j + cn <= n; j++)
            if (memcmp(body + j, close, cn) == 0) {
                oc_quote(body + s, j - s, out, cap);
                return;
            }
        return;
    }
}

/* The shortest run of a secret's bytes that is masked wherever it stands (a 12-byte piece
 * of a 40-byte secret, a token or a signature does not occur by chance). */
#define MASK_RUN 12

/* Whether the k bytes at p occur in the m bytes at s (memmem is a GNU extension). */
static int occurs(const char *s, size_t m, const char *p, size_t k) {
    for (size_t j = 0; j + k <= m; j++)
        if (s[j] == p[0] && memcmp(s + j, p, k) == 0) return 1;
    return 0;
}

/* Every byte of buf (n bytes) that lies in a run of at least MASK_RUN bytes (or in the
 * whole of a shorter secret, or in the body's last bytes, 6 or more, where a cut one
 * ends) found in the secret sec, marked in hit. A secret of fewer than 8 bytes (no
 * real one: a test's) cannot be told from text, and is not looked for. */
static void mark_secret(const char *buf, size_t n, const char *sec, unsigned char *hit) {
    size_t m = strlen(sec);
    if (m < 8) return;
    size_t w = m < MASK_RUN ? m : MASK_RUN;
    for (size_t i = 0; i < n; i++) {
        size_t k = n - i < w ? n - i : w; /* at the end: what is left, when 6 or more */
        if (k < w && k < 6) break;
        if (occurs(sec, m, buf + i, k)) memset(hit + i, 1, k);
    }
}

/* body (n bytes) into out (n + 1 bytes) with every run of bytes of one of the nsecrets
 * secrets (NULL entries skipped) replaced by "***", never longer than what it replaces (a
 * run is 6 bytes or more); hit: n bytes of scratch. Returns the new length. */
static size_t masked(const char *body, size_t n, const char *const *secrets, size_t nsecrets,
                     char *out, unsigned char *hit) {
    memset(hit, 0, n);
    for (size_t s = 0; s < nsecrets; s++)
        if (secrets[s]) mark_secret(body, n, secrets[s], hit);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (!hit[i]) {
            out[o++] = body[i++];
            continue;
        }
        while (i < n && hit[i]) i++;
        memcpy(out + o, "***", 3);
        o += 3;
    }
    out[o] = '\0';
    return o;
}

oc_status oc__s3_explain(long http_status, const char *body, size_t body_len, const char *region,
                         const char *const *secrets, size_t nsecrets, char *out, size_t cap) {
    char code[OC_QUOTE_SIZE], msg[2 * OC_QUOTE_SIZE], where[OC_QUOTE_SIZE];
    /* The server's text may echo what it was sent (a token, the Authorization header, a
     * secret a broken store copies): each run of it is masked before anything is quoted
     * or cut, so that no part of one is shown (spec/remote.md R-19). */
    size_t rn = region ? strlen(region) : 0;
    size_t big = body_len > rn ? body_len : rn;
    char *buf = malloc(big + 1);
    unsigned char *hit = malloc(big + 1);
    if (!buf || !hit) {
        free(buf);
        free(hit);
        snprintf(out, cap, "HTTP %ld", http_status);
        return OC_ERR_IO;
    }
    size_t n = masked(body, body_len, secrets, nsecrets, buf, hit);
    xml_field(buf, n, "Code", code, sizeof code);
    xml_field(buf, n, "Message", msg, sizeof msg);
    xml_field(buf, n, "Region", where, sizeof where);
    if (region && *region) {
        n = masked(region, rn, secrets, nsecrets, buf, hit);
        oc_quote(buf, n, where, sizeof where);
    }
    free(buf);
    free(hit);
    if (strcmp(code, "NoSuchKey") == 0 || (!code[0] && http_status == 404)) {
        snprintf(out, cap, "no such key");
        return OC_ERR_NOT_FOUND;
    }
    if (strcmp(code, "NoSuchBucket") == 0) {
        snprintf(out, cap, "no such bucket");
        return OC_ERR_NOT_FOUND;
    }
    if (strcmp(code, "ExpiredToken") == 0 || strcmp(code, "TokenRefreshRequired") == 0) {
        snprintf(out, cap, "the session token has expired (%ld %s)", http_status, code);
        return OC_ERR_IO;
    }
    if (where[0] && (http_status == 301 || http_status == 307 || http_status == 400 ||
                     strcmp(code, "PermanentRedirect") == 0 ||
                     strcmp(code, "AuthorizationHeaderMalformed") == 0)) {
        snprintf(out, cap,
                 "region mismatch (the bucket is in %s: set AWS_REGION, or the region of the "
                 "S3 settings)",
                 where);
        return OC_ERR_INVALID_ARG;
    }
    if (http_status == 301 || http_status == 307 || strcmp(code, "PermanentRedirect") == 0) {
        snprintf(out, cap, "region mismatch (HTTP %ld%s%s: the bucket is in another region)",
                 http_status, code[0] ? " " : "", code);
        return OC_ERR_INVALID_ARG;
    }
    if (http_status == 403 || http_status == 401) {
        snprintf(out, cap, "access denied (%ld%s%s)", http_status, code[0] ? " " : "", code);
        return OC_ERR_IO;
    }
    if (code[0] && msg[0])
        snprintf(out, cap, "HTTP %ld %s: %s", http_status, code, msg);
    else if (code[0])
        snprintf(out, cap, "HTTP %ld %s", http_status, code);
    else
        snprintf(out, cap, "HTTP %ld", http_status);
    return OC_ERR_IO;
}

/* ---- the settings (oc_s3_options_load) ---- */

/* The options and the strings they point to, in one allocation's care. */
typedef struct loaded {
    oc_s3_options o;
    char *s[6]; /* key id, secret, token, region, endpoint, problem */
} loaded;

static const char *text(oc_http_lookup get, void *ctx, const char *name) {
    const char *v = get(ctx, name);
    return v && *v ? v : NULL;
}

/* The values a profile gives: each NULL until found. */
typedef struct profile {
    char *key_id, *secret, *token, *region, *endpoint;
} profile;

static void wipe_free(char *s) {
    if (s) {
        volatile char *p = s;
        while (*p) *p++ = 0;
    }
    free(s);
}

static void profile_free(profile *p) {
    free(p->key_id);
    wipe_free(p->secret);
    wipe_free(p->token);
    free(p->region);
    free(p->endpoint);
}

static char *trimmed(const char *s, size_t n) {
    while (n && (*s == ' ' || *s == '\t')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) n--;
    return dupn(s, n);
}

/* Takes from the INI text the keys of section `section` that p does not hold yet: the
 * shared files' syntax as the AWS CLI reads it ("[name]", "key = value", '#' and ';'
 * comments; indented lines continue a nested setting such as "s3 =", which is skipped). */
static int ini_profile(const char *textp, const char *section, profile *p) {
    if (!textp) return 0;
    int in = 0, found = 0;
    size_t sn = strlen(section);
    for (const char *line = textp; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *s = line;
        line = end ? end + 1 : NULL;
        if (n && (s[0] == ' ' || s[0] == '\t')) continue; /* a nested setting's line */
        while (n && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
        if (!n || s[0] == '#' || s[0] == ';') continue;
        if (s[0] == '[') {
            const char *a = s + 1, *z = s + n - 1;
            if (*z != ']') {
                in = 0;
                continue;
            }
            while (a < z && (*a == ' ' || *a == '\t')) a++;
            while (z > a && (z[-1] == ' ' || z[-1] == '\t')) z--;
            in = (size_t)(z - a) == sn && memcmp(a, section, sn) == 0;
            found |= in;
            continue;
        }
        if (!in) continue;
        const char *eq = memchr(s, '=', n);
        if (!eq) continue;
        char *k = trimmed(s, (size_t)(eq - s));
        char *v = trimmed(eq + 1, n - (size_t)(eq + 1 - s));
        char **slot = NULL;
        if (k && v) {
            if (strcmp(k, "aws_access_key_id") == 0)
                slot = &p->key_id;
            else if (strcmp(k, "aws_secret_access_key") == 0)
                slot = &p->secret;
            else if (strcmp(k, "aws_session_token") == 0)
                slot = &p->token;
            else if (strcmp(k, "region") == 0)
                slot = &p->region;
            else if (strcmp(k, "endpoint_url") == 0)
                slot = &p->endpoint;
        }
        free(k);
        if (slot && !*slot && v && *v) {
            *slot = v;
            v = NULL;
        }
        wipe_free(v);
    }
    return found;
}

/* $HOME/.aws/NAME, or NULL without HOME. */
static char *home_file(oc_http_lookup get, void *ctx, const char *name) {
    const char *home = text(get, ctx, "HOME");
    return home ? cat3(home, "/.aws/", name) : NULL;
}

/* The profile `name` of the shared files, into *p: the credentials file's keys (when
 * want_cred) before the config file's (when want_conf). *found tells whether a file read
 * has the profile, *where names the files looked in (for the message when none has it).
 * Each file is read only when asked for (spec/remote.md R-18). */
static oc_status profile_load(oc_http_lookup get, void *ctx, const char *name, int want_cred,
                              int want_conf, profile *p, int *found, char **where, oc_error *err) {
    const char *cred_set = text(get, ctx, "AWS_SHARED_CREDENTIALS_FILE");
    const char *conf_set = text(get, ctx, "AWS_CONFIG_FILE");
    char *cred_path = !want_cred ? NULL
                      : cred_set ? strdup(cred_set)
                                 : home_file(get, ctx, "credentials");
    char *conf_path = !want_conf ? NULL
                      : conf_set ? strdup(conf_set)
                                 : home_file(get, ctx, "config");
    char *cred = NULL, *conf = NULL;
    size_t cred_n = 0, conf_n = 0;
    oc_status st = OC_OK;
    *found = 0;
    if (cred_path)
        st = oc__small_file_read(cred_path, "the AWS shared credentials file", FILE_MAX,
                                 OC__SMALL_FILE_MISSING_OK, &cred, &cred_n, err);
    if (st == OC_OK && conf_path)
        st = oc__small_file_read(conf_path, "the AWS config file", FILE_MAX,
                                 OC__SMALL_FILE_MISSING_OK, &conf, &conf_n, err);
    if (st == OC_OK) {
        /* The credentials file first: its keys win over the config file's. */
        if (cred) *found |= ini_profile(cred, name, p);
        if (conf) {
            char *section =
                strcmp(name, "default") == 0 ? strdup("default") : cat3("profile ", name, "");
            if (!section)
                st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
            else
                *found |= ini_profile(conf, section, p);
            free(section);
        }
        *where =
            cat3(cred_path ? cred_path : "(no HOME)", " nor ", conf_path ? conf_path : "(no HOME)");
    }
    oc__small_file_free(cred, cred_n);
    oc__small_file_free(conf, conf_n);
    free(cred_path);
    free(conf_path);
    return st;
}

void oc_s3_options_free(oc_s3_options *o) {
    if (!o) return;
    loaded *l = (loaded *)(void *)o;
    free(l->s[0]);
    wipe_free(l->s[1]);
    wipe_free(l->s[2]);
    free(l->s[3]);
    free(l->s[4]);
    free(l->s[5]);
    free(l);
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

oc_status oc_s3_options_load(oc_s3_options **out, oc_http_lookup get, void *ctx, oc_error *err) {
    if (!out || !get)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_s3_options_load: missing argument");
    *out = NULL;
    profile p = {0};
    const char *pname = text(get, ctx, "AWS_PROFILE");
    const char *id = text(get, ctx, "AWS_ACCESS_KEY_ID");
    const char *secret = text(get, ctx, "AWS_SECRET_ACCESS_KEY");
    const char *token = NULL;
    /* AWS's precedence: the environment's keys, region and endpoint before any file's; a
     * file is read only for what the environment leaves unsaid. */
    int env_keys = id && secret;
    int env_rest = (text(get, ctx, "AWS_REGION") || text(get, ctx, "AWS_DEFAULT_REGION")) &&
                   (text(get, ctx, "AWS_ENDPOINT_URL_S3") || text(get, ctx, "AWS_ENDPOINT_URL"));
    /* A profile named is looked for in both files (AWS's tools refuse one that neither
     * has, whatever else is set). */
    int want_cred = pname || !env_keys, want_conf = pname || !env_keys || !env_rest;
    int found = 0;
    char *where = NULL, problem[512] = "";
    oc_status pst = profile_load(get, ctx, pname ? pname : "default", want_cred, want_conf, &p,
                                 &found, &where, err);
    if (pst != OC_OK) {
        free(where);
        profile_free(&p);
        return pst;
    }
    if (pname && !found)
        snprintf(problem, sizeof problem, "AWS_PROFILE: no profile '%.64s' in %s", pname,
                 where ? where : "the AWS files");
    free(where);
    if (env_keys) {
        token = text(get, ctx, "AWS_SESSION_TOKEN");
    } else if (p.key_id && p.secret) {
        id = p.key_id, secret = p.secret, token = p.token;
    } else {
        id = secret = NULL;
    }
    const char *region = text(get, ctx, "AWS_REGION");
    if (!region) region = text(get, ctx, "AWS_DEFAULT_REGION");
    if (!region) region = p.region;
    const char *endpoint = text(get, ctx, "AWS_ENDPOINT_URL_S3");
    const char *ep_name = "AWS_ENDPOINT_URL_S3";
    if (!endpoint) endpoint = text(get, ctx, "AWS_ENDPOINT_URL"), ep_name = "AWS_ENDPOINT_URL";
    if (!endpoint) endpoint = p.endpoint, ep_name = "the profile's endpoint_url";
    oc_status st = OC_OK;
    char shown[128];
    if (endpoint && strncasecmp(endpoint, "http://", 7) != 0 &&
        strncasecmp(endpoint, "https://", 8) != 0)
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                      "%s: '%.64s' is not an http:// or https:// URL", ep_name,
                      oc__setting_shown(endpoint, shown, sizeof shown)); /* N-2 */
    loaded *l = st == OC_OK ? calloc(1, sizeof *l) : NULL;
    if (st == OC_OK && l) {
        l->o.size = sizeof l->o;
        l->s[0] = dup_or_null(id);
        l->s[1] = dup_or_null(secret);
        l->s[2] = dup_or_null(token);
        l->s[3] = dup_or_null(region);
        l->s[4] = dup_or_null(endpoint);
        l->s[5] = problem[0] ? strdup(problem) : NULL;
        if ((id && !l->s[0]) || (secret && !l->s[1]) || (token && !l->s[2]) ||
            (region && !l->s[3]) || (endpoint && !l->s[4]) || (problem[0] && !l->s[5])) {
            oc_s3_options_free(&l->o);
            l = NULL;
        }
    }
    if (st == OC_OK && !l) st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    profile_free(&p);
    if (st != OC_OK) return st;
    l->o.access_key_id = l->s[0];
    l->o.secret_access_key = l->s[1];
    l->o.session_token = l->s[2];
    l->o.region = l->s[3];
    l->o.endpoint = l->s[4];
    l->o.problem = l->s[5];
    *out = &l->o;
    return OC_OK;
}
