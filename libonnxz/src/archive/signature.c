/*
 * signature.c - signed models (onnxz/sign.h, spec/signing.md): the parts of a model and
 * their SHA-256, the in-toto statement over them, its DSSE signature, the Sigstore bundle
 * that carries both, where the bundle lives, and verifying it (oz_signature_verify).
 * Storing an archive's bundle is an in-place edit, one floor up: src/sign/sign.c.
 */
#include "onnxz/sign.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxcore/codec.h"
#include "onnxcore/external.h"
#include "onnxcore/http.h"
#include "onnxcore/messages.h"
#include "onnxcore/model.h"
#include "onnxcore_private.h"
#include "internal/error.h"
#include "internal/archive.h"
#include "internal/jsonread.h"
#include "internal/options.h"
#include "internal/path_safety.h"
#include "internal/signature.h"
#include "internal/signing.h"
#include "internal/small_file.h"
#include "internal/text.h"
#include "internal/zipread.h"
#include "onnxz/archive.h"
#include "onnxz/open.h"
#include "onnxz/zip.h"

/* Limits of what is read (spec/signing.md G-30). */
#define KEY_MAX         (64u * 1024u)
#define BUNDLE_MAX      (32u * 1024u * 1024u)
#define JSON_MAX_TOKENS (2u * 1024u * 1024u)
#define JSON_MAX_DEPTH  32u
#define MAX_SIGNATURES  16u

#define BUNDLE_MEDIA_TYPE "application/vnd.dev.sigstore.bundle.v0.3+json"
#define PAYLOAD_TYPE      "application/vnd.in-toto+json"
#define STATEMENT_TYPE    "https://in-toto.io/Statement/v1"
#define PREDICATE_TYPE    "https://model_signing/signature/v1.0"
#define METHOD_FILES      "files"
#define METHOD_ARCHIVE    "onnxz-archive"

static oc_status nomem(oc_error *err) {
    return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

/* ---- text ---- */

typedef oc__text sbuf; /* internal/text.h */

static void sb_put(sbuf *b, const void *data, size_t n) { oc__text_put(b, data, n); }

static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static const char hexdig[] = "0123456789abcdef";

static void to_hex(const uint8_t *d, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdig[d[i] >> 4];
        out[2 * i + 1] = hexdig[d[i] & 15];
    }
    out[2 * n] = '\0';
}

/* 64 lowercase hex digits into 32 bytes; false for anything else. */
static bool from_hex64(const char *s, size_t n, uint8_t out[OC__SHA256_SIZE]) {
    if (n != 2 * OC__SHA256_SIZE) return false;
    for (size_t i = 0; i < n; i++) {
        const char *h = memchr(hexdig, s[i], 16);
        if (!h || !s[i]) return false;
        if (i % 2 == 0)
            out[i / 2] = (uint8_t)((h - hexdig) << 4);
        else
            out[i / 2] = (uint8_t)(out[i / 2] | (h - hexdig));
    }
    return true;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void sb_base64(sbuf *b, const uint8_t *d, size_t n) {
    char q[4];
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16;
        if (i + 1 < n) v |= (uint32_t)d[i + 1] << 8;
        if (i + 2 < n) v |= d[i + 2];
        q[0] = b64[v >> 18];
        q[1] = b64[(v >> 12) & 63];
        q[2] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        q[3] = i + 2 < n ? b64[v & 63] : '=';
        sb_put(b, q, 4);
    }
}

/* Standard base64 with padding (RFC 4648 section 4), strictly: a new buffer. */
static bool base64_decode(const char *s, size_t n, uint8_t **out, size_t *out_n) {
    *out = NULL;
    *out_n = 0;
    if (n % 4) return false;
    uint8_t *d = malloc(n / 4 * 3 + 1);
    if (!d) return false;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            char c = s[i + (size_t)j];
            const char *h = c ? memchr(b64, c, 64) : NULL;
            if (c == '=' && i + 4 == n && j >= 2 && (j == 3 || s[i + 3] == '=')) {
                pad++;
                v <<= 6;
                continue;
            }
            if (!h || pad) {
                free(d);
                return false;
            }
            v = (v << 6) | (uint32_t)(h - b64);
        }
        d[k++] = (uint8_t)(v >> 16);
        if (pad < 2) d[k++] = (uint8_t)(v >> 8);
        if (pad < 1) d[k++] = (uint8_t)v;
    }
    *out = d;
    *out_n = k;
    return true;
}

/* A JSON string of n bytes of UTF-8; false when they are not UTF-8 (a name the manifest
 * cannot hold exactly). */
static bool utf8_ok(const uint8_t *s, size_t n) {
    for (size_t i = 0, k; i < n; i += k)
        if (!(k = oc_utf8_len(s + i, n - i))) return false;
    return true;
}

static void sb_json(sbuf *b, const char *s, size_t n) {
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_put(b, e, 2);
        } else if (c < 0x20) {
            char e[7] = {'\\', 'u', '0', '0', hexdig[c >> 4], hexdig[c & 15], 0};
            sb_put(b, e, 6);
        } else {
            sb_put(b, s + i, 1);
        }
    }
    sb_put(b, "\"", 1);
}

/* ---- files ---- */

/* SHA-256 of everything fd holds from its start, through h (reset first). */
static oc_status hash_fd(int fd, oc__sha256 *h, const char *path, uint8_t out[OC__SHA256_SIZE],
                         uint64_t *size, oc_error *err) {
    enum { CHUNK = 1 << 20 };
    uint8_t *buf = malloc(CHUNK);
    if (!buf) return nomem(err);
    oc_status st = oc__sha256_reset(h, err);
    uint64_t at = 0;
    while (st == OC_OK) {
        ssize_t r = pread(fd, buf, CHUNK, (off_t)at);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = oc_error_file(err, path, oc__fail_errno(err, errno, "cannot read %s", path));
            break;
        }
        if (r == 0) break;
        st = oc__sha256_update(h, buf, (uint64_t)r, err);
        at += (uint64_t)r;
    }
    free(buf);
    if (st == OC_OK) st = oc__sha256_final(h, out, err);
    *size = at;
    return st;
}

/* ---- the parts of a model ---- */

typedef struct part {
    char *name;
    size_t name_len;
    uint8_t digest[OC__SHA256_SIZE];
    uint64_t size;
} part;

typedef struct parts {
    part *v;
    size_t n, cap;
    uint64_t bytes;
} parts;

static void parts_free(parts *p) {
    for (size_t i = 0; i < p->n; i++) free(p->v[i].name);
    free(p->v);
    memset(p, 0, sizeof *p);
}

/* Adds a part named by n bytes at name (no digest yet); false when out of memory. */
static part *parts_add(parts *p, const char *name, size_t n) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        part *v = realloc(p->v, cap * sizeof *v);
        if (!v) return NULL;
        p->v = v;
        p->cap = cap;
    }
    part *x = &p->v[p->n];
    memset(x, 0, sizeof *x);
    if (!(x->name = malloc(n + 1))) return NULL;
    memcpy(x->name, name, n);
    x->name[n] = '\0';
    x->name_len = n;
    p->n++;
    return x;
}

/* Byte order of names: the manifest's order (spec/signing.md G-12). */
static int part_cmp(const void *a, const void *b) {
    const part *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    if (c) return c;
    return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

/* Every entry of an archive but the signature's, each hashed as its data reads
 * (uncompressed, CRC-checked where the reader checks it); model (model_n bytes), when not
 * NULL, stands for __MODEL_PROTO's data: the model an edit is about to write. */
static oc_status archive_parts(const oz_zip_reader *zip, const char *path, const uint8_t *model,
                               uint64_t model_n, oc__sha256 *h, parts *out, oc_error *err) {
    uint64_t count = oz_zip_reader_count(zip);
    for (uint64_t i = 0; i < count; i++) {
        oz_zip_entry e;
        OC_FORWARD(oz_zip_reader_entry(zip, i, &e, err));
        if (strcmp(e.name, OZ_SIGNATURE_ENTRY) == 0) continue;
        char q[OC_QUOTE_SIZE];
        OC_RETURN_ERROR_IF(!utf8_ok((const uint8_t *)e.name, e.name_len), err, OC_ERR_UNSUPPORTED,
                           e.local_header_offset,
                           "%s: entry '%s' has a name that is not UTF-8: a manifest cannot "
                           "name it",
                           path, oc_quote(e.name, e.name_len, q, OC_QUOTE_SIZE));
        part *x = parts_add(out, e.name, e.name_len);
        if (!x) return nomem(err);
        bool ours = model && strcmp(e.name, OZ_MODEL_ENTRY) == 0;
        OC_FORWARD(oc__sha256_reset(h, err));
        if (ours)
            OC_FORWARD(oc__sha256_update(h, model, (size_t)model_n, err));
        else
            OC_FORWARD(oz_zip_reader_read_to(zip, i, oc__sha256_update, h, err));
        OC_FORWARD(oc__sha256_final(h, x->digest, err));
        x->size = ours ? model_n : e.uncompressed_size;
        out->bytes += x->size;
    }
    return OC_OK;
}

typedef struct loc_ctx {
    parts *p;
    const char *path;
    oc_error *err;
} loc_ctx;

static oc_status add_location(void *ctx, onnx_TensorProto *t) {
    loc_ctx *c = ctx;
    if (!oc_tensor_is_external(t)) return OC_OK;
    const oc_str *loc = oc_tensor_external_value(t, "location");
    char q[OC_QUOTE_SIZE];
    OC_RETURN_RULE_IF(!loc, c->err, OC_ERR_MALFORMED, OC_NO_OFFSET, "E-1",
                      "%s: tensor '%s' is EXTERNAL but has no location", c->path,
                      oc_quote(t->name.data, t->name.size, q, OC_QUOTE_SIZE));
    const char *why = oc__location_problem(loc);
    OC_RETURN_RULE_IF(why, c->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET, "E-10",
                      "%s: the data file '%s' %s", c->path,
                      oc_quote(loc->data, loc->size, q, OC_QUOTE_SIZE), why);
    OC_RETURN_ERROR_IF(!utf8_ok((const uint8_t *)loc->data, (size_t)loc->size), c->err,
                       OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                       "%s: the data file '%s' has a name that is not UTF-8", c->path,
                       oc_quote(loc->data, loc->size, q, OC_QUOTE_SIZE));
    for (size_t i = 0; i < c->p->n; i++)
        if (c->p->v[i].name_len == loc->size && memcmp(c->p->v[i].name, loc->data, loc->size) == 0)
            return OC_OK;
    return parts_add(c->p, loc->data, (size_t)loc->size) ? OC_OK : nomem(c->err);
}

/* The model file at path and every data file it names, hashed (paths relative to the
 * model's directory). The model is hashed through the descriptor it is identified by, and
 * refused when it changed while it was read. */
static const part *find_part(const parts *p, const char *name, size_t n) {
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i].name_len == n && memcmp(p->v[i].name, name, n) == 0) return &p->v[i];
    return NULL;
}

static oc_status differs(const char *path, const char *kind, const part *want, const part *have,
                         oc_error *err);

/* expect (NULL when signing): the manifest, against which the model file is checked
 * before it is decoded. */
static oc_status model_parts(const char *path, const parts *expect, oc__sha256 *h, parts *out,
                             oc_error *err) {
    const char *base = oc__path_base(path);
    part *m = parts_add(out, base, strlen(base));
    if (!m) return nomem(err);
    OC_RETURN_ERROR_IF(!utf8_ok((const uint8_t *)base, strlen(base)), err, OC_ERR_UNSUPPORTED,
                       OC_NO_OFFSET, "%s: the model's file name is not UTF-8", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return oc_error_file(err, path, oc__fail_errno(err, errno, "cannot open %s", path));
    struct stat before, after;
    oc_status st = OC_OK;
    if (fstat(fd, &before) != 0 || !S_ISREG(before.st_mode))
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "%s is not a regular file", path);
    if (st == OC_OK) st = hash_fd(fd, h, path, m->digest, &m->size, err);
    out->bytes += m->size;
    if (st == OC_OK && expect) {
        const part *want = find_part(expect, m->name, m->name_len);
        if (!want || memcmp(want->digest, m->digest, OC__SHA256_SIZE) != 0)
            st = differs(path, "file", want, m, err);
    }
    /* the model's data files, as the hashed bytes name them */
    oc_model *model = NULL;
    if (st == OC_OK) {
        oc_parse_options po = OC_PARSE_OPTIONS_INIT;
        po.skip_external_data = 1;
        st = oc_model_load_file(path, &po, &model, err);
    }
    if (st == OC_OK &&
        (fstat(fd, &after) != 0 || after.st_ino != before.st_ino || after.st_dev != before.st_dev ||
         after.st_size != before.st_size || after.st_mtim.tv_sec != before.st_mtim.tv_sec ||
         after.st_mtim.tv_nsec != before.st_mtim.tv_nsec))
        st = oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "%s changed while it was read", path);
    close(fd);
    if (st == OC_OK) {
        loc_ctx c = {out, path, err};
        st = oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(model), add_location, &c);
    }
    oc_model_free(model);
    if (st != OC_OK) return oc_error_file(err, path, st);
    /* each data file, beneath the model's directory, following no link (E-11, E-18) */
    char *dir = oc__path_dir(path);
    if (!dir) return nomem(err);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        st = oc_error_file(err, dir,
                           oc__fail_errno(err, errno, "cannot open the directory %s", dir));
        free(dir);
        return st;
    }
    for (size_t i = 1; st == OC_OK && i < out->n; i++) {
        part *x = &out->v[i];
        struct stat fs;
        const char *why = NULL;
        char q[OC_QUOTE_SIZE];
        int f = oc__open_location(dfd, x->name, NULL, &fs, &why);
        if (f < 0) {
            oc_quote(x->name, x->name_len, q, OC_QUOTE_SIZE);
            st = why ? oc__fail(err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET, "%s: the data file '%s' %s",
                                path, q, why)
                     : oc__fail_errno(err, errno, "%s: cannot open the data file '%s'", path, q);
            break;
        }
        st = hash_fd(f, h, x->name, x->digest, &x->size, err);
        out->bytes += x->size;
        close(f);
    }
    close(dfd);
    free(dir);
    return st;
}

/* ---- the statement and the bundle ---- */

/* The statement (spec/signing.md G-10..G-14) over parts sorted by name; the subject
 * digest (SHA-256 of the digests in that order) into subject. */
static oc_status build_statement(const parts *p, const char *model_name, const char *method,
                                 oc__sha256 *h, sbuf *out, uint8_t subject[OC__SHA256_SIZE],
                                 oc_error *err) {
    OC_FORWARD(oc__sha256_reset(h, err));
    for (size_t i = 0; i < p->n; i++)
        OC_FORWARD(oc__sha256_update(h, p->v[i].digest, OC__SHA256_SIZE, err));
    OC_FORWARD(oc__sha256_final(h, subject, err));
    char hex[2 * OC__SHA256_SIZE + 1];
    to_hex(subject, OC__SHA256_SIZE, hex);
    sb_str(out, "{\"_type\":\"" STATEMENT_TYPE "\",\"subject\":[{\"name\":");
    sb_json(out, model_name, strlen(model_name));
    sb_str(out, ",\"digest\":{\"sha256\":\"");
    sb_str(out, hex);
    sb_str(out, "\"}}],\"predicateType\":\"" PREDICATE_TYPE "\",\"predicate\":{\"serialization\":"
                "{\"method\":\"");
    sb_str(out, method);
    sb_str(out, "\",\"hash_type\":\"sha256\",\"allow_symlinks\":false,\"ignore_paths\":[]},"
                "\"resources\":[");
    for (size_t i = 0; i < p->n; i++) {
        to_hex(p->v[i].digest, OC__SHA256_SIZE, hex);
        sb_str(out, i ? ",{\"name\":" : "{\"name\":");
        sb_json(out, p->v[i].name, p->v[i].name_len);
        sb_str(out, ",\"algorithm\":\"sha256\",\"digest\":\"");
        sb_str(out, hex);
        sb_str(out, "\"}");
    }
    sb_str(out, "]}}");
    return out->failed ? nomem(err) : OC_OK;
}

/* DSSE's pre-authentication encoding of a payload (DSSE v1 protocol). */
static void pae(sbuf *b, const void *payload, size_t n) {
    char head[96];
    snprintf(head, sizeof head, "DSSEv1 %zu " PAYLOAD_TYPE " %zu ", strlen(PAYLOAD_TYPE), n);
    sb_str(b, head);
    sb_put(b, payload, n);
}

/* The public key's fingerprint: SHA-256 of its PEM text (model_signing's key hint). */
static oc_status key_fingerprint(const oc__sig_key *key, oc__sha256 *h, char out[65],
                                 oc_error *err) {
    char *pem = NULL;
    size_t n = 0;
    uint8_t d[OC__SHA256_SIZE];
    OC_FORWARD(oc__sig_key_public_pem(key, &pem, &n, err));
    oc_status st = oc__sha256_reset(h, err);
    if (st == OC_OK) st = oc__sha256_update(h, pem, n, err);
    if (st == OC_OK) st = oc__sha256_final(h, d, err);
    free(pem);
    if (st == OC_OK) to_hex(d, OC__SHA256_SIZE, out);
    return st;
}

static const char *kind_name(const oc__sig_key *key) {
    return oc__sig_key_kind(key) == OC__SIG_ECDSA_P256 ? "ecdsa-p256" : "ed25519";
}

/* ---- the model's form ---- */

typedef enum form { FORM_ARCHIVE, FORM_MODEL } form;

static oc_status model_form(const char *path, form *out, oc_error *err) {
    OC_RETURN_ERROR_IF(!path || !*path, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no model path");
    if (oc_is_url(path))
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                                      "%s is a URL: onnxz signs and verifies local files only",
                                      path));
    oz_kind kind;
    OC_FORWARD(oz_detect_path(path, NULL, &kind, err));
    if (oz_kind_is_archive(kind)) {
        *out = FORM_ARCHIVE;
        return OC_OK;
    }
    if (kind == OZ_KIND_MODEL) {
        *out = FORM_MODEL;
        return OC_OK;
    }
    return oc_error_file(err, path,
                         oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                                  "%s is %s: onnxz signs archives and .onnx models, not "
                                  "encrypted or empty files",
                                  path, oz_kind_name(kind)));
}

/* The subject's name: the model file's name without its last extension. */
static char *subject_name(const char *path) {
    const char *base = oc__path_base(path);
    const char *dot = strrchr(base, '.');
    size_t n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, base, n);
        s[n] = '\0';
    }
    return s;
}

static char *bundle_path_of(const char *path, const oz_sign_options *o) {
    if (o && o->signature_path) return strdup(o->signature_path);
    size_t n = strlen(path);
    char *s = malloc(n + sizeof OZ_SIGNATURE_SUFFIX);
    if (s) {
        memcpy(s, path, n);
        memcpy(s + n, OZ_SIGNATURE_SUFFIX, sizeof OZ_SIGNATURE_SUFFIX);
    }
    return s;
}

static oc_status new_report(oz_signature_report **out, bool in_archive, const char *location,
                            const oc__sig_key *key, const char *fp, const parts *p,
                            const uint8_t subject[OC__SHA256_SIZE], oc_error *err) {
    if (!out) return OC_OK;
    oz_signature_report *r = calloc(1, sizeof *r);
    if (!r || !(r->location = strdup(location))) {
        free(r);
        return nomem(err);
    }
    r->in_archive = in_archive;
    r->key_type = kind_name(key);
    memcpy(r->key_fingerprint, fp, 65);
    r->parts = p->n;
    r->bytes = p->bytes;
    to_hex(subject, OC__SHA256_SIZE, r->model_digest);
    *out = r;
    return OC_OK;
}

void oz_signature_report_free(oz_signature_report *report) {
    if (!report) return;
    free(report->location);
    free(report);
}

int oz_sign_available(void) {
    oc__sha256 *h = NULL;
    if (oc__sha256_new(&h, NULL) != OC_OK) return 0;
    oc__sha256_free(h);
    return 1;
}

oc_status oz_sign_key_encrypted(const char *key_path, bool *needs, oc_error *err) {
    OC_RETURN_ERROR_IF(!key_path || !needs, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz_sign_key_encrypted: missing argument");
    *needs = false;
    char *pem = NULL;
    size_t n = 0;
    OC_FORWARD(oc__small_file_read(key_path, "the private key", KEY_MAX, 0, &pem, &n, err));
    oc__sig_key *key = NULL;
    oc_error tmp;
    oc_status st = oc__sig_key_private(pem, n, NULL, 0, &key, needs, &tmp);
    oc__sig_key_free(key);
    oc__small_file_free(pem, n); /* wiped: an unencrypted key is the secret */
    if (st == OC_ERR_UNSUPPORTED && !oz_sign_available()) {
        if (err) *err = tmp;
        return st;
    }
    return OC_OK;
}

static oc_status load_private(const char *key_path, const oz_sign_options *o, oc__sig_key **key,
                              oc_error *err) {
    char *pem = NULL;
    size_t n = 0;
    OC_FORWARD(oc__small_file_read(key_path, "the private key", KEY_MAX, 0, &pem, &n, err));
    oc_status st = oc__sig_key_private(pem, n, o ? o->passphrase : NULL, o ? o->passphrase_len : 0,
                                       key, NULL, err);
    oc__small_file_free(pem, n); /* wiped: an unencrypted key is the secret */
    if (st != OC_OK && oz_sign_available() && err) {
        char msg[OC_ERROR_MESSAGE_MAX];
        snprintf(msg, sizeof msg, "%s", err->message);
        oc__fail(err, st, OC_NO_OFFSET, "%s: %s", key_path, msg);
        oc_error_file(err, key_path, st);
    }
    return st;
}

/* The bundle for a signed statement (spec/signing.md G-20). */
static oc_status build_bundle(const oc__sig_key *key, const char *fp, const sbuf *statement,
                              sbuf *out, oc_error *err) {
    sbuf msg = {0};
    pae(&msg, statement->p, statement->n);
    if (msg.failed) {
        free(msg.p);
        return nomem(err);
    }
    uint8_t *sig = NULL;
    size_t sig_n = 0;
    oc_status st = oc__sig_sign(key, msg.p, msg.n, &sig, &sig_n, err);
    free(msg.p);
    if (st != OC_OK) return st;
    sb_str(out, "{\"mediaType\":\"" BUNDLE_MEDIA_TYPE "\",\"verificationMaterial\":{\"publicKey\":"
                "{\"hint\":\"");
    sb_str(out, fp);
    sb_str(out, "\"},\"tlogEntries\":[]},\"dsseEnvelope\":{\"payload\":\"");
    sb_base64(out, (const uint8_t *)statement->p, statement->n);
    sb_str(out, "\",\"payloadType\":\"" PAYLOAD_TYPE "\",\"signatures\":[{\"sig\":\"");
    sb_base64(out, sig, sig_n);
    sb_str(out, "\",\"keyid\":\"\"}]}}\n");
    free(sig);
    return out->failed ? nomem(err) : OC_OK;
}

oc_status oz__signer_archive(const oz__signer *sg, const oz_zip_reader *zip, const char *path,
                             const uint8_t *model, uint64_t model_n, char **bundle_out,
                             size_t *bundle_n, oz_signature_report **out, oc_error *err) {
    parts p = {0};
    sbuf statement = {0}, bundle = {0};
    uint8_t subject[OC__SHA256_SIZE];
    *bundle_out = NULL;
    *bundle_n = 0;
    char *name = subject_name(path);
    oc_status st = name ? archive_parts(zip, path, model, model_n, sg->h, &p, err) : nomem(err);
    if (st == OC_OK) {
        qsort(p.v, p.n, sizeof *p.v, part_cmp);
        st = build_statement(&p, name, METHOD_ARCHIVE, sg->h, &statement, subject, err);
    }
    if (st == OC_OK) st = build_bundle(sg->key, sg->fp, &statement, &bundle, err);
    if (st == OC_OK)
        st = new_report(out, true, OZ_SIGNATURE_ENTRY, sg->key, sg->fp, &p, subject, err);
    if (st == OC_OK) {
        *bundle_out = bundle.p;
        *bundle_n = bundle.n;
        bundle.p = NULL;
    }
    free(statement.p);
    free(bundle.p);
    free(name);
    parts_free(&p);
    return st;
}

oc_status oz__signer_model(const oz__signer *sg, const char *path, const oz_sign_options *o,
                           oz_signature_report **out, oc_error *err) {
    const oc__sig_key *key = sg->key;
    const char *fp = sg->fp;
    oc__sha256 *h = sg->h;
    parts p = {0};
    sbuf statement = {0}, bundle = {0};
    uint8_t subject[OC__SHA256_SIZE];
    char *name = subject_name(path), *bpath = bundle_path_of(path, o);
    oc_status st = name && bpath ? model_parts(path, NULL, h, &p, err) : nomem(err);
    if (st == OC_OK) {
        qsort(p.v, p.n, sizeof *p.v, part_cmp);
        st = build_statement(&p, name, METHOD_FILES, h, &statement, subject, err);
    }
    if (st == OC_OK) st = build_bundle(key, fp, &statement, &bundle, err);
    if (st == OC_OK) {
        oc_atomic_file af;
        st = oc_atomic_open_for(&af, bpath, false, OC_ATOMIC_NAMED, err);
        if (st == OC_OK) {
            st = oc_atomic_write(&af, bundle.p, bundle.n, err);
            if (st == OC_OK) st = oc_atomic_commit(&af, err);
            oc_atomic_abort(&af);
        }
    }
    if (st == OC_OK) st = new_report(out, false, bpath, key, fp, &p, subject, err);
    free(statement.p);
    free(bundle.p);
    free(name);
    free(bpath);
    parts_free(&p);
    return st;
}

oc_status oz__signer_open(const char *key_path, const oz_sign_options *o, oz__signer **out,
                          oc_error *err) {
    oz__signer *sg = calloc(1, sizeof *sg);
    *out = NULL;
    if (!sg) return nomem(err);
    oc_status st = oc__sha256_new(&sg->h, err);
    if (st == OC_OK) st = load_private(key_path, o, &sg->key, err);
    if (st == OC_OK) st = key_fingerprint(sg->key, sg->h, sg->fp, err);
    if (st != OC_OK) {
        oz__signer_close(sg);
        return st;
    }
    *out = sg;
    return OC_OK;
}

void oz__signer_close(oz__signer *sg) {
    if (!sg) return;
    oc__sig_key_free(sg->key);
    oc__sha256_free(sg->h);
    free(sg);
}

oc_status oz__sign_form(const char *path, bool *is_archive, oc_error *err) {
    form f = FORM_MODEL;
    OC_FORWARD(model_form(path, &f, err));
    *is_archive = f == FORM_ARCHIVE;
    return OC_OK;
}

/* ---- verifying ---- */

/* A string member of obj that must be there, once; else a malformed-bundle error. */
static oc_status member(const oz__json *d, uint32_t obj, const char *key, oz__jtype type,
                        const char *where, const char *what, uint32_t *out, oc_error *err) {
    bool dup = false;
    uint32_t v = oz__json_get(d, obj, key, &dup);
    OC_RETURN_ERROR_IF(!v, err, OC_ERR_MALFORMED, OC_NO_OFFSET, "%s: %s has no \"%s\"", where, what,
                       key);
    OC_RETURN_ERROR_IF(dup, err, OC_ERR_MALFORMED, OC_NO_OFFSET, "%s: %s has \"%s\" more than once",
                       where, what, key);
    static const char *const names[] = {"an object", "an array", "a string", "a number",
                                        "a literal"};
    OC_RETURN_ERROR_IF(d->t[v].type != (uint32_t)type, err, OC_ERR_MALFORMED, d->t[v].start,
                       "%s: \"%s\" in %s is not %s", where, key, what, names[type]);
    *out = v;
    return OC_OK;
}

/* A member that must be the string want. */
static oc_status member_is(const oz__json *d, uint32_t obj, const char *key, const char *want,
                           const char *where, const char *what, oc_error *err) {
    uint32_t v = 0;
    OC_FORWARD(member(d, obj, key, OZ_J_STRING, where, what, &v, err));
    OC_RETURN_ERROR_IF(!oz__json_str_eq(d, v, want), err, OC_ERR_UNSUPPORTED, d->t[v].start,
                       "%s: \"%s\" in %s is not \"%s\"", where, key, what, want);
    return OC_OK;
}

/* Checks the bundle and its signature with key; *payload: the signed statement's bytes. */
static oc_status check_bundle(const char *bundle, size_t n, const char *where,
                              const oc__sig_key *key, const char *fp, uint8_t **payload,
                              size_t *payload_n, oc_error *err) {
    oz__json d;
    *payload = NULL;
    *payload_n = 0;
    char what[OC_ERROR_MESSAGE_MAX];
    snprintf(what, sizeof what, "%s: the signature bundle", where);
    OC_FORWARD(oz__json_parse(&d, bundle, n, JSON_MAX_TOKENS, JSON_MAX_DEPTH, what, err));
    uint32_t vm = 0, pk = 0, env = 0, sigs = 0, v = 0;
    oc_status st = OC_OK;
    if (d.t[0].type != OZ_J_OBJECT)
        st = oc__fail(err, OC_ERR_MALFORMED, 0, "%s: the signature bundle is not a JSON object",
                      where);
    if (st == OC_OK)
        st = member_is(&d, 0, "mediaType", BUNDLE_MEDIA_TYPE, where, "the bundle", err);
    if (st == OC_OK)
        st = member(&d, 0, "verificationMaterial", OZ_J_OBJECT, where, "the bundle", &vm, err);
    if (st == OC_OK)
        st = member(&d, vm, "publicKey", OZ_J_OBJECT, where, "verificationMaterial", &pk, err);
    if (st == OC_OK && oz__json_get(&d, pk, "hint", NULL)) {
        st = member(&d, pk, "hint", OZ_J_STRING, where, "publicKey", &v, err);
        if (st == OC_OK && !oz__json_str_eq(&d, v, fp)) {
            char q[OC_QUOTE_SIZE];
            st = oc__fail(
                err, OC_ERR_BAD_KEY, OC_NO_OFFSET,
                "%s: signed by another key (fingerprint %s), not the trusted one (%s)", where,
                oc_quote(d.text + d.t[v].start, d.t[v].end - d.t[v].start, q, OC_QUOTE_SIZE), fp);
        }
    }
    if (st == OC_OK)
        st = member(&d, 0, "dsseEnvelope", OZ_J_OBJECT, where, "the bundle", &env, err);
    if (st == OC_OK)
        st = member_is(&d, env, "payloadType", PAYLOAD_TYPE, where, "dsseEnvelope", err);
    if (st == OC_OK) st = member(&d, env, "payload", OZ_J_STRING, where, "dsseEnvelope", &v, err);
    if (st == OC_OK &&
        !base64_decode(d.text + d.t[v].start, d.t[v].end - d.t[v].start, payload, payload_n))
        st = oc__fail(err, OC_ERR_MALFORMED, d.t[v].start, "%s: the bundle's payload is not base64",
                      where);
    if (st == OC_OK)
        st = member(&d, env, "signatures", OZ_J_ARRAY, where, "dsseEnvelope", &sigs, err);
    if (st == OC_OK && (d.t[sigs].kids == 0 || d.t[sigs].kids > MAX_SIGNATURES))
        st = oc__fail(err, OC_ERR_MALFORMED, d.t[sigs].start,
                      "%s: the bundle holds %u signatures (1 to %u expected)", where,
                      d.t[sigs].kids, MAX_SIGNATURES);
    /* the statement is authentic when one signature verifies with the trusted key */
    bool ok = false;
    sbuf msg = {0};
    if (st == OC_OK) {
        pae(&msg, *payload, *payload_n);
        if (msg.failed) st = nomem(err);
    }
    for (uint32_t i = 0, s = st == OC_OK ? oz__json_first(&d, sigs) : 0;
         st == OC_OK && !ok && i < d.t[sigs].kids; i++, s = d.t[s].next) {
        uint32_t sv = 0;
        uint8_t *sig = NULL;
        size_t sig_n = 0;
        if (d.t[s].type != OZ_J_OBJECT) {
            st = oc__fail(err, OC_ERR_MALFORMED, d.t[s].start,
                          "%s: a signature of the bundle is not an object", where);
            break;
        }
        st = member(&d, s, "sig", OZ_J_STRING, where, "a signature", &sv, err);
        if (st == OC_OK &&
            !base64_decode(d.text + d.t[sv].start, d.t[sv].end - d.t[sv].start, &sig, &sig_n))
            st = oc__fail(err, OC_ERR_MALFORMED, d.t[sv].start,
                          "%s: a signature of the bundle is not base64", where);
        if (st == OC_OK) st = oc__sig_verify(key, msg.p, msg.n, sig, sig_n, &ok, err);
        free(sig);
    }
    free(msg.p);
    oz__json_free(&d);
    if (st == OC_OK && !ok)
        st = oc__fail(err, OC_ERR_BAD_KEY, OC_NO_OFFSET,
                      "%s: the signature does not verify with the trusted key (fingerprint %s): "
                      "the statement was changed, or signed by another key",
                      where, fp);
    if (st != OC_OK) {
        free(*payload);
        *payload = NULL;
        *payload_n = 0;
    }
    return st;
}

/* The signed statement's manifest into *expect (sorted by name), its subject digest
 * checked against the resources. */
static oc_status read_statement(const uint8_t *payload, size_t n, const char *where,
                                const char *method, parts *expect, uint8_t subject[OC__SHA256_SIZE],
                                oc__sha256 *h, oc_error *err) {
    oz__json d;
    char what[OC_ERROR_MESSAGE_MAX];
    snprintf(what, sizeof what, "%s: the signed statement", where);
    OC_FORWARD(
        oz__json_parse(&d, (const char *)payload, n, JSON_MAX_TOKENS, JSON_MAX_DEPTH, what, err));
    uint32_t subj = 0, s0 = 0, dg = 0, v = 0, pred = 0, ser = 0, res = 0;
    oc_status st = OC_OK;
    if (d.t[0].type != OZ_J_OBJECT)
        st = oc__fail(err, OC_ERR_MALFORMED, 0, "%s: the statement is not a JSON object", where);
    if (st == OC_OK) st = member_is(&d, 0, "_type", STATEMENT_TYPE, where, "the statement", err);
    if (st == OC_OK)
        st = member_is(&d, 0, "predicateType", PREDICATE_TYPE, where, "the statement", err);
    if (st == OC_OK) st = member(&d, 0, "subject", OZ_J_ARRAY, where, "the statement", &subj, err);
    if (st == OC_OK && d.t[subj].kids != 1)
        st = oc__fail(err, OC_ERR_MALFORMED, d.t[subj].start,
                      "%s: the statement has %u subjects, not 1", where, d.t[subj].kids);
    if (st == OC_OK && d.t[s0 = subj + 1].type != OZ_J_OBJECT)
        st = oc__fail(err, OC_ERR_MALFORMED, d.t[s0].start,
                      "%s: the statement's subject is not an object", where);
    if (st == OC_OK) st = member(&d, s0, "digest", OZ_J_OBJECT, where, "the subject", &dg, err);
    if (st == OC_OK)
        st = member(&d, dg, "sha256", OZ_J_STRING, where, "the subject's digest", &v, err);
    if (st == OC_OK && !from_hex64(d.text + d.t[v].start, d.t[v].end - d.t[v].start, subject))
        st = oc__fail(err, OC_ERR_MALFORMED, d.t[v].start,
                      "%s: the subject's digest is not 64 lowercase hex digits", where);
    if (st == OC_OK)
        st = member(&d, 0, "predicate", OZ_J_OBJECT, where, "the statement", &pred, err);
    if (st == OC_OK)
        st = member(&d, pred, "serialization", OZ_J_OBJECT, where, "the predicate", &ser, err);
    if (st == OC_OK) st = member(&d, ser, "method", OZ_J_STRING, where, "serialization", &v, err);
    if (st == OC_OK && !oz__json_str_eq(&d, v, method))
        st = oc__fail(err, OC_ERR_INCONSISTENT, d.t[v].start,
                      "%s: the signature is for %s, not for %s", where,
                      strcmp(method, METHOD_ARCHIVE) ? "an .onnxz archive"
                                                     : "a .onnx model and its files",
                      strcmp(method, METHOD_ARCHIVE) ? "a .onnx model" : "an archive");
    if (st == OC_OK)
        st = member(&d, pred, "resources", OZ_J_ARRAY, where, "the predicate", &res, err);
    if (st == OC_OK) st = oc__sha256_reset(h, err);
    for (uint32_t i = 0, r = st == OC_OK ? oz__json_first(&d, res) : 0;
         st == OC_OK && i < d.t[res].kids; i++, r = d.t[r].next) {
        uint32_t nv = 0, av = 0, dv = 0;
        if (d.t[r].type != OZ_J_OBJECT) {
            st = oc__fail(err, OC_ERR_MALFORMED, d.t[r].start,
                          "%s: resource %u of the manifest is not an object", where, i);
            break;
        }
        st = member(&d, r, "name", OZ_J_STRING, where, "a resource", &nv, err);
        if (st == OC_OK)
            st = member(&d, r, "algorithm", OZ_J_STRING, where, "a resource", &av, err);
        if (st == OC_OK) st = member(&d, r, "digest", OZ_J_STRING, where, "a resource", &dv, err);
        if (st == OC_OK && !oz__json_str_eq(&d, av, "sha256"))
            st = oc__fail(err, OC_ERR_UNSUPPORTED, d.t[av].start,
                          "%s: resource %u of the manifest is not hashed with sha256", where, i);
        char *name = NULL;
        size_t name_n = 0;
        if (st == OC_OK) st = oz__json_str(&d, nv, &name, &name_n, err);
        part *x = st == OC_OK ? parts_add(expect, name, name_n) : NULL;
        free(name);
        if (st == OC_OK && !x) st = nomem(err);
        if (st == OC_OK &&
            !from_hex64(d.text + d.t[dv].start, d.t[dv].end - d.t[dv].start, x->digest))
            st = oc__fail(err, OC_ERR_MALFORMED, d.t[dv].start,
                          "%s: resource %u of the manifest has a digest that is not 64 lowercase "
                          "hex digits",
                          where, i);
        if (st == OC_OK) st = oc__sha256_update(h, x->digest, OC__SHA256_SIZE, err);
    }
    uint8_t root[OC__SHA256_SIZE];
    if (st == OC_OK) st = oc__sha256_final(h, root, err);
    if (st == OC_OK && memcmp(root, subject, OC__SHA256_SIZE) != 0)
        st = oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                      "%s: the statement's subject digest is not that of its resources", where);
    oz__json_free(&d);
    if (st != OC_OK) return st;
    qsort(expect->v, expect->n, sizeof *expect->v, part_cmp);
    for (size_t i = 1; i < expect->n; i++) {
        char q[OC_QUOTE_SIZE];
        OC_RETURN_ERROR_IF(part_cmp(&expect->v[i - 1], &expect->v[i]) == 0, err, OC_ERR_MALFORMED,
                           OC_NO_OFFSET, "%s: the manifest lists '%s' more than once", where,
                           oc_quote(expect->v[i].name, expect->v[i].name_len, q, OC_QUOTE_SIZE));
    }
    return OC_OK;
}

/* The error for a part whose digest is not the manifest's (want NULL: not listed). */
static oc_status differs(const char *path, const char *kind, const part *want, const part *have,
                         oc_error *err) {
    char q[OC_QUOTE_SIZE], w[65], hv[65];
    oc_quote(have->name, have->name_len, q, OC_QUOTE_SIZE);
    if (!want)
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                                      "%s: %s '%s' is not listed by the signed manifest", path,
                                      kind, q));
    to_hex(want->digest, OC__SHA256_SIZE, w);
    to_hex(have->digest, OC__SHA256_SIZE, hv);
    return oc_error_file(err, path,
                         oc__fail(err, OC_ERR_CHECKSUM, OC_NO_OFFSET,
                                  "%s: %s '%s' has changed since it was signed: SHA-256 "
                                  "%.16s..., the signed manifest says %.16s...",
                                  path, kind, q, hv, w));
}

/* Every part of the model against the manifest, by name. */
static oc_status compare(const parts *expect, const parts *got, const char *path, bool archive,
                         oc_error *err) {
    const char *kind = archive ? "entry" : "file";
    size_t i = 0, j = 0;
    char q[OC_QUOTE_SIZE];
    while (i < expect->n || j < got->n) {
        int c = i == expect->n ? 1 : j == got->n ? -1 : part_cmp(&expect->v[i], &got->v[j]);
        if (c == 0 && memcmp(expect->v[i].digest, got->v[j].digest, OC__SHA256_SIZE) != 0)
            return differs(path, kind, &expect->v[i], &got->v[j], err);
        if (c < 0)
            return oc_error_file(
                err, path,
                oc__fail(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET,
                         "%s: %s '%s' is listed by the signed manifest but is missing", path, kind,
                         oc_quote(expect->v[i].name, expect->v[i].name_len, q, OC_QUOTE_SIZE)));
        if (c > 0)
            return oc_error_file(
                err, path,
                oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                         "%s: %s '%s' is not listed by the signed manifest", path, kind,
                         oc_quote(got->v[j].name, got->v[j].name_len, q, OC_QUOTE_SIZE)));
        i++, j++;
    }
    return OC_OK;
}

/* The trusted public key at trust_path and its fingerprint. */
static oc_status trusted_key(const char *trust_path, oc__sha256 *h, oc__sig_key **key, char fp[65],
                             oc_error *err) {
    char *tpem = NULL;
    size_t tn = 0;
    oc_status st = oc__small_file_read(trust_path, "the trusted key", KEY_MAX, 0, &tpem, &tn, err);
    if (st == OC_OK) {
        st = oc__sig_key_public(tpem, tn, key, err);
        if (st != OC_OK && oz_sign_available()) {
            char msg[OC_ERROR_MESSAGE_MAX];
            snprintf(msg, sizeof msg, "%s", err ? err->message : "");
            oc_error_file(err, trust_path,
                          oc__fail(err, st, OC_NO_OFFSET, "%s: %s", trust_path, msg));
        }
    }
    free(tpem);
    if (st == OC_OK) st = key_fingerprint(*key, h, fp, err);
    return st;
}

/* The bundle an archive (read through zip, named path) holds, and where it is for the
 * errors ("PATH: entry __ONNXZ_SIGNATURE"). */
static oc_status archive_bundle(const oz_zip_reader *zip, const char *path, char **bundle,
                                size_t *bundle_n, char **where, oc_error *err) {
    uint64_t si = 0;
    oz_zip_entry e;
    oc_bytes b = {0};
    oc_status st = OC_OK;
    if (!oz__zip_reader_find_n(zip, OZ_SIGNATURE_ENTRY, strlen(OZ_SIGNATURE_ENTRY), &si))
        st = oc_error_file(err, path,
                           oc__fail(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET,
                                    "%s is not signed: it has no " OZ_SIGNATURE_ENTRY
                                    " entry (onnxz sign)",
                                    path));
    if (st == OC_OK) st = oz_zip_reader_entry(zip, si, &e, err);
    if (st == OC_OK && e.uncompressed_size > BUNDLE_MAX)
        st = oc_error_file(err, path,
                           oc__fail(err, OC_ERR_LIMIT, e.local_header_offset,
                                    "%s: its signature entry holds %llu bytes, over the "
                                    "%u-byte limit of a bundle",
                                    path, (unsigned long long)e.uncompressed_size, BUNDLE_MAX));
    if (st == OC_OK) st = oz_zip_reader_read(zip, si, &b, err);
    if (st == OC_OK && !(*bundle = malloc((size_t)b.size + 1))) st = nomem(err);
    if (st == OC_OK) {
        memcpy(*bundle, b.data, (size_t)b.size);
        *bundle_n = (size_t)b.size;
    }
    oc_bytes_release(&b);
    if (st == OC_OK) {
        size_t wn = strlen(path) + sizeof(": entry " OZ_SIGNATURE_ENTRY);
        if ((*where = malloc(wn)))
            snprintf(*where, wn, "%s: entry " OZ_SIGNATURE_ENTRY, path);
        else
            st = nomem(err);
    }
    return st;
}

oc_status oz_signature_verify(const char *path, const char *trust_path, const oz_sign_options *opts,
                              oz_signature_report **out, oc_error *err) {
    if (out) *out = NULL;
    OC_RETURN_ERROR_IF(!trust_path || !*trust_path, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz_signature_verify: no trusted key");
    OC_OPTS_ENTRY(oz_sign_options, oz__sign_opts, opts, err);
    form f = FORM_MODEL;
    OC_FORWARD(model_form(path, &f, err));
    oc__sig_key *key = NULL;
    oc__sha256 *h = NULL;
    oz_archive *ar = NULL;
    char *bundle = NULL, *where = NULL;
    size_t bundle_n = 0, payload_n = 0;
    uint8_t *payload = NULL;
    uint8_t subject[OC__SHA256_SIZE];
    parts expect = {0}, got = {0};
    char fp[65];
    oc_status st = oc__sha256_new(&h, err);
    if (st == OC_OK) st = trusted_key(trust_path, h, &key, fp, err);
    /* the bundle */
    if (st == OC_OK && f == FORM_ARCHIVE) {
        st = oz_archive_open(path, NULL, &ar, err);
        if (st == OC_OK)
            st = archive_bundle(oz_archive_zip(ar), path, &bundle, &bundle_n, &where, err);
    } else if (st == OC_OK) {
        where = bundle_path_of(path, opts);
        if (!where) st = nomem(err);
        if (st == OC_OK) {
            struct stat bs;
            if (stat(where, &bs) != 0 && errno == ENOENT)
                st = oc_error_file(err, path,
                                   oc__fail(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET,
                                            "%s is not signed: there is no %s beside it "
                                            "(onnxz sign)",
                                            path, where));
        }
        if (st == OC_OK)
            st = oc__small_file_read(where, "the signature bundle", BUNDLE_MAX, 0, &bundle,
                                     &bundle_n, err);
    }
    if (st == OC_OK) {
        st = check_bundle(bundle, bundle_n, where, key, fp, &payload, &payload_n, err);
        if (st == OC_OK)
            st = read_statement(payload, payload_n, where,
                                f == FORM_ARCHIVE ? METHOD_ARCHIVE : METHOD_FILES, &expect, subject,
                                h, err);
        if (st != OC_OK) oc_error_file(err, f == FORM_ARCHIVE ? path : where, st);
    }
    /* the model's parts, hashed now */
    if (st == OC_OK)
        st = f == FORM_ARCHIVE ? archive_parts(oz_archive_zip(ar), path, NULL, 0, h, &got, err)
                               : model_parts(path, &expect, h, &got, err);
    if (st == OC_OK) {
        qsort(got.v, got.n, sizeof *got.v, part_cmp);
        st = compare(&expect, &got, path, f == FORM_ARCHIVE, err);
    }
    if (st == OC_OK)
        st = new_report(out, f == FORM_ARCHIVE, f == FORM_ARCHIVE ? OZ_SIGNATURE_ENTRY : where, key,
                        fp, &got, subject, err);
    oz_archive_close(ar);
    oc__sig_key_free(key);
    oc__sha256_free(h);
    free(bundle);
    free(where);
    free(payload);
    parts_free(&expect);
    parts_free(&got);
    return st;
}

/* ---- verify on read (internal/signing.h) ---- */

struct oz__manifest {
    parts expect; /* sorted by name */
};

void oz__manifest_free(oz__manifest *m) {
    if (!m) return;
    parts_free(&m->expect);
    free(m);
}

/* The resource named by n bytes at name, by bisection (expect is sorted). */
static const part *manifest_find(const oz__manifest *m, const char *name, size_t n) {
    part key = {(char *)(uintptr_t)name, n, {0}, 0};
    return bsearch(&key, m->expect.v, m->expect.n, sizeof key, part_cmp);
}

/* Every entry of zip but the signature's is listed, and every listed one is an entry. */
static oc_status same_entries(const oz__manifest *m, const oz_zip_reader *zip, const char *path,
                              oc_error *err) {
    uint64_t count = oz_zip_reader_count(zip), listed = 0;
    char q[OC_QUOTE_SIZE];
    for (uint64_t i = 0; i < count; i++) {
        oz_zip_entry e;
        OC_FORWARD(oz_zip_reader_entry(zip, i, &e, err));
        if (strcmp(e.name, OZ_SIGNATURE_ENTRY) == 0) continue;
        if (!manifest_find(m, e.name, e.name_len))
            return oc_error_file(err, path,
                                 oc__fail(err, OC_ERR_INCONSISTENT, e.local_header_offset,
                                          "%s: entry '%s' is not listed by the signed manifest",
                                          path, oc_quote(e.name, e.name_len, q, OC_QUOTE_SIZE)));
        listed++;
    }
    for (size_t i = 0; listed != m->expect.n && i < m->expect.n; i++) {
        uint64_t at = 0;
        const part *x = &m->expect.v[i];
        if (!oz__zip_reader_find_n(zip, x->name, x->name_len, &at))
            return oc_error_file(
                err, path,
                oc__fail(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET,
                         "%s: entry '%s' is listed by the signed manifest but is missing", path,
                         oc_quote(x->name, x->name_len, q, OC_QUOTE_SIZE)));
    }
    return OC_OK;
}

oc_status oz__manifest_archive(const oz_zip_reader *zip, const char *path, const char *trust_path,
                               oz__manifest **out, oc_error *err) {
    *out = NULL;
    oz__manifest *m = calloc(1, sizeof *m);
    oc__sig_key *key = NULL;
    oc__sha256 *h = NULL;
    char *bundle = NULL, *where = NULL;
    size_t bundle_n = 0, payload_n = 0;
    uint8_t *payload = NULL;
    uint8_t subject[OC__SHA256_SIZE];
    char fp[65];
    if (!m) return nomem(err);
    oc_status st = oc__sha256_new(&h, err);
    if (st == OC_OK) st = trusted_key(trust_path, h, &key, fp, err);
    if (st == OC_OK) st = archive_bundle(zip, path, &bundle, &bundle_n, &where, err);
    if (st == OC_OK) {
        st = check_bundle(bundle, bundle_n, where, key, fp, &payload, &payload_n, err);
        if (st == OC_OK)
            st = read_statement(payload, payload_n, where, METHOD_ARCHIVE, &m->expect, subject, h,
                                err);
        if (st != OC_OK) oc_error_file(err, path, st);
    }
    if (st == OC_OK) st = same_entries(m, zip, path, err);
    oc__sig_key_free(key);
    oc__sha256_free(h);
    free(bundle);
    free(where);
    free(payload);
    if (st != OC_OK) {
        oz__manifest_free(m);
        return st;
    }
    *out = m;
    return OC_OK;
}

oc_status oz__manifest_check(const oz__manifest *m, const char *path, const char *entry, size_t n,
                             const onnx_TensorProto *t, const uint8_t digest[OC__SHA256_SIZE],
                             oc_error *err) {
    const part *want = manifest_find(m, entry, n);
    char q[OC_QUOTE_SIZE], tq[OC_QUOTE_SIZE], w[65], hv[65];
    if (want && memcmp(want->digest, digest, OC__SHA256_SIZE) == 0) return OC_OK;
    oc_quote(entry, n, q, OC_QUOTE_SIZE);
    if (!want)
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                                      "%s: entry '%s' is not listed by the signed manifest", path,
                                      q));
    to_hex(want->digest, OC__SHA256_SIZE, w);
    to_hex(digest, OC__SHA256_SIZE, hv);
    if (t)
        return oc_error_file(
            err, path,
            oc__fail(err, OC_ERR_CHECKSUM, OC_NO_OFFSET,
                     "%s: tensor '%s' (entry '%s') has changed since it was signed: SHA-256 "
                     "%.16s..., the signed manifest says %.16s...",
                     path, oc_quote(t->name.data, t->name.size, tq, OC_QUOTE_SIZE), q, hv, w));
    return oc_error_file(err, path,
                         oc__fail(err, OC_ERR_CHECKSUM, OC_NO_OFFSET,
                                  "%s: entry '%s' has changed since it was signed: SHA-256 "
                                  "%.16s..., the signed manifest says %.16s...",
                                  path, q, hv, w));
}

/* ---- what info and ls show: the bundle as it states itself, unverified (G-41) ---- */

void oz__signature_summary_free(oz_signature_summary *s) {
    if (!s) return;
    free(s->location);
    free(s->problem);
    free(s);
}

/* The hint and the count of resources of a bundle; a failure is the bundle's problem. */
static oc_status peek_bundle(const char *bundle, size_t n, oz_signature_summary *s, oc_error *err) {
    oz__json d, st_doc;
    uint32_t vm = 0, pk = 0, v = 0, env = 0, pred = 0, res = 0;
    uint8_t *payload = NULL;
    size_t payload_n = 0;
    const char *where = "the bundle";
    OC_FORWARD(oz__json_parse(&d, bundle, n, JSON_MAX_TOKENS, JSON_MAX_DEPTH, where, err));
    oc_status st = d.t[0].type == OZ_J_OBJECT
                       ? OC_OK
                       : oc__fail(err, OC_ERR_MALFORMED, 0, "it is not a JSON object");
    if (st == OC_OK)
        st = member(&d, 0, "verificationMaterial", OZ_J_OBJECT, where, "the bundle", &vm, err);
    if (st == OC_OK)
        st = member(&d, vm, "publicKey", OZ_J_OBJECT, where, "verificationMaterial", &pk, err);
    if (st == OC_OK && oz__json_get(&d, pk, "hint", NULL)) {
        st = member(&d, pk, "hint", OZ_J_STRING, where, "publicKey", &v, err);
        uint8_t fp[OC__SHA256_SIZE];
        if (st == OC_OK && from_hex64(d.text + d.t[v].start, d.t[v].end - d.t[v].start, fp))
            to_hex(fp, OC__SHA256_SIZE, s->key_fingerprint);
    }
    if (st == OC_OK)
        st = member(&d, 0, "dsseEnvelope", OZ_J_OBJECT, where, "the bundle", &env, err);
    if (st == OC_OK) st = member(&d, env, "payload", OZ_J_STRING, where, "dsseEnvelope", &v, err);
    if (st == OC_OK &&
        !base64_decode(d.text + d.t[v].start, d.t[v].end - d.t[v].start, &payload, &payload_n))
        st = oc__fail(err, OC_ERR_MALFORMED, d.t[v].start, "its payload is not base64");
    oz__json_free(&d);
    if (st == OC_OK)
        st = oz__json_parse(&st_doc, (const char *)payload, payload_n, JSON_MAX_TOKENS,
                            JSON_MAX_DEPTH, "the statement", err);
    if (st != OC_OK) {
        free(payload);
        return st;
    }
    where = "the statement";
    st = st_doc.t[0].type == OZ_J_OBJECT
             ? OC_OK
             : oc__fail(err, OC_ERR_MALFORMED, 0, "its statement is not a JSON object");
    if (st == OC_OK)
        st = member(&st_doc, 0, "predicate", OZ_J_OBJECT, where, "the statement", &pred, err);
    if (st == OC_OK)
        st = member(&st_doc, pred, "resources", OZ_J_ARRAY, where, "the predicate", &res, err);
    if (st == OC_OK) s->parts = st_doc.t[res].kids;
    oz__json_free(&st_doc);
    free(payload); /* after the document, whose tokens point into it */
    return st;
}

/* A new summary at location, its bundle (n bytes, or NULL: problem says why) peeked. */
static oc_status new_summary(const char *location, const char *bundle, size_t n,
                             const char *problem, oz_signature_summary **out, oc_error *err) {
    oz_signature_summary *s = calloc(1, sizeof *s);
    if (!s || !(s->location = strdup(location))) {
        free(s);
        return nomem(err);
    }
    oc_error e;
    oc_error_clear(&e);
    if (bundle && peek_bundle(bundle, n, s, &e) != OC_OK) {
        if (e.code == OC_ERR_NOMEM) {
            oz__signature_summary_free(s);
            return nomem(err);
        }
        problem = e.message;
    }
    if (problem) {
        s->key_fingerprint[0] = '\0';
        s->parts = 0;
        if (!(s->problem = strdup(problem))) {
            oz__signature_summary_free(s);
            return nomem(err);
        }
    }
    *out = s;
    return OC_OK;
}

oc_status oz__signature_summary_archive(const oz_archive *ar, oz_signature_summary **out,
                                        oc_error *err) {
    const oz_zip_reader *zip = oz_archive_zip(ar);
    const char *path = oz__archive_path(ar);
    uint64_t si = 0;
    oz_zip_entry e;
    oc_bytes b = {0};
    oc_error e2;
    *out = NULL;
    if (!oz__zip_reader_find_n(zip, OZ_SIGNATURE_ENTRY, strlen(OZ_SIGNATURE_ENTRY), &si))
        return OC_OK;
    if (path && oc_is_url(path)) /* no request more than the listing's own */
        return new_summary(
            OZ_SIGNATURE_ENTRY, NULL, 0,
            "not read: the archive is at a URL, and a listing fetches no more than its directory",
            out, err);
    oc_error_clear(&e2);
    if (oz_zip_reader_entry(zip, si, &e, &e2) != OC_OK)
        return new_summary(OZ_SIGNATURE_ENTRY, NULL, 0, e2.message, out, err);
    if (e.uncompressed_size > BUNDLE_MAX)
        return new_summary(OZ_SIGNATURE_ENTRY, NULL, 0, "over the size limit of a bundle", out,
                           err);
    if (oz_zip_reader_read(zip, si, &b, &e2) != OC_OK)
        return new_summary(OZ_SIGNATURE_ENTRY, NULL, 0, e2.message, out, err);
    oc_status st =
        new_summary(OZ_SIGNATURE_ENTRY, (const char *)b.data, (size_t)b.size, NULL, out, err);
    oc_bytes_release(&b);
    return st;
}

oc_status oz__signature_summary_model(const char *path, oz_signature_summary **out, oc_error *err) {
    struct stat bs;
    char *bundle = NULL;
    size_t n = 0;
    oc_error e;
    *out = NULL;
    if (!path || oc_is_url(path)) return OC_OK;
    char *where = bundle_path_of(path, NULL);
    if (!where) return nomem(err);
    oc_status st = OC_OK;
    oc_error_clear(&e);
    if (lstat(where, &bs) == 0) {
        if (oc__small_file_read(where, "the signature bundle", BUNDLE_MAX, 0, &bundle, &n, &e) !=
            OC_OK)
            st = new_summary(where, NULL, 0, e.message, out, err);
        else
            st = new_summary(where, bundle, n, NULL, out, err);
    }
    free(bundle);
    free(where);
    return st;
}

oc_status oz__manifest_check_bytes(const oz__manifest *m, const char *path, const char *entry,
                                   size_t n, const onnx_TensorProto *t, const void *data,
                                   uint64_t size, oc_error *err) {
    uint8_t digest[OC__SHA256_SIZE];
    oc__sha256 *h = NULL;
    oc_status st = oc__sha256_new(&h, err);
    if (st == OC_OK) st = oc__sha256_update(h, data, size, err);
    if (st == OC_OK) st = oc__sha256_final(h, digest, err);
    oc__sha256_free(h);
    return st == OC_OK ? oz__manifest_check(m, path, entry, n, t, digest, err) : st;
}

bool oz__path_signed(const char *path, oz_kind kind) {
    struct stat bs;
    if (!path || oc_is_url(path)) return false;
    if (kind == OZ_KIND_MODEL) {
        char *sig = bundle_path_of(path, NULL);
        bool found = sig && lstat(sig, &bs) == 0;
        free(sig);
        return found;
    }
    if (!oz_kind_is_archive(kind)) return false; /* encrypted: never signed (G-1) */
    oz_archive *ar = NULL;
    uint64_t si = 0;
    oc_error e;
    oc_error_clear(&e);
    bool found = oz_archive_open(path, NULL, &ar, &e) == OC_OK &&
                 oz__zip_reader_find_n(oz_archive_zip(ar), OZ_SIGNATURE_ENTRY,
                                       strlen(OZ_SIGNATURE_ENTRY), &si);
    oz_archive_close(ar);
    return found;
}
