/*
 * json_read.c - the bounded JSON reader of internal/jsonread.h. Recursive descent with a
 * depth cap; every token is checked while it is read, so a caller only meets well-formed
 * values.
 */
#include <stdlib.h>
#include <string.h>

#include "onnxcore/status.h"
#include "internal/error.h"
#include "internal/jsonread.h"

typedef struct jp {
    oz__json *doc;
    const char *s;
    size_t len, pos;
    uint32_t cap, max_tokens, max_depth;
    const char *what;
    oc_error *err;
} jp;

static oc_status bad(jp *p, const char *why) {
    return oc__fail(p->err, OC_ERR_MALFORMED, p->pos, "%s is not valid JSON at byte %llu: %s",
                    p->what, (unsigned long long)p->pos, why);
}

static void skip_ws(jp *p) {
    while (p->pos < p->len) {
        char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

static oc_status new_tok(jp *p, oz__jtype type, uint32_t *out) {
    oz__json *d = p->doc;
    OC_RETURN_ERROR_IF(d->n >= p->max_tokens, p->err, OC_ERR_LIMIT, p->pos,
                       "%s holds more than %u JSON values", p->what, p->max_tokens);
    if (d->n == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 64;
        if (cap > p->max_tokens) cap = p->max_tokens;
        oz__jtok *t = realloc(d->t, (size_t)cap * sizeof *t);
        OC_RETURN_ERROR_IF(!t, p->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        d->t = t;
        p->cap = cap;
    }
    oz__jtok *t = &d->t[d->n];
    memset(t, 0, sizeof *t);
    t->type = (uint32_t)type;
    t->start = p->pos;
    *out = d->n++;
    return OC_OK;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static oc_status parse_string(jp *p) {
    uint32_t i;
    p->pos++; /* the opening quote */
    OC_FORWARD(new_tok(p, OZ_J_STRING, &i));
    while (p->pos < p->len) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (c == '"') {
            p->doc->t[i].end = p->pos++;
            p->doc->t[i].next = p->doc->n;
            return OC_OK;
        }
        if (c < 0x20) return bad(p, "a control character in a string");
        if (c == '\\') {
            if (p->pos + 1 >= p->len) break;
            char e = p->s[p->pos + 1];
            if (e == 'u') {
                if (p->len - p->pos < 6) break;
                for (int k = 2; k < 6; k++)
                    if (hexval(p->s[p->pos + (size_t)k]) < 0) return bad(p, "a bad \\u escape");
                p->pos += 6;
            } else if (strchr("\"\\/bfnrt", e) && e) {
                p->pos += 2;
            } else {
                return bad(p, "an unknown escape");
            }
            continue;
        }
        size_t k = oc_utf8_len(p->s + p->pos, p->len - p->pos);
        if (!k) return bad(p, "bytes that are not UTF-8");
        p->pos += k;
    }
    return bad(p, "a string that does not end");
}

static oc_status parse_value(jp *p, uint32_t depth);

static oc_status parse_container(jp *p, uint32_t depth, int object) {
    uint32_t i;
    OC_RETURN_ERROR_IF(depth >= p->max_depth, p->err, OC_ERR_DEPTH, p->pos,
                       "%s nests JSON deeper than %u levels", p->what, p->max_depth);
    OC_FORWARD(new_tok(p, object ? OZ_J_OBJECT : OZ_J_ARRAY, &i));
    p->pos++;
    skip_ws(p);
    uint32_t kids = 0;
    char close = object ? '}' : ']';
    if (p->pos < p->len && p->s[p->pos] == close) {
        p->pos++;
    } else {
        for (;;) {
            skip_ws(p);
            if (object) {
                if (p->pos >= p->len || p->s[p->pos] != '"')
                    return bad(p, "a key must be a string");
                OC_FORWARD(parse_string(p));
                kids++;
                skip_ws(p);
                if (p->pos >= p->len || p->s[p->pos] != ':') return bad(p, "':' expected");
                p->pos++;
            }
            OC_FORWARD(parse_value(p, depth + 1));
            kids++;
            skip_ws(p);
            if (p->pos < p->len && p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->pos < p->len && p->s[p->pos] == close) {
                p->pos++;
                break;
            }
            return bad(p, object ? "',' or '}' expected" : "',' or ']' expected");
        }
    }
    p->doc->t[i].kids = kids;
    p->doc->t[i].end = p->pos;
    p->doc->t[i].next = p->doc->n;
    return OC_OK;
}

static oc_status parse_number(jp *p) {
    uint32_t i;
    OC_FORWARD(new_tok(p, OZ_J_NUMBER, &i));
    size_t q = p->pos;
    if (q < p->len && p->s[q] == '-') q++;
    if (q < p->len && p->s[q] == '0') {
        q++;
    } else if (q < p->len && p->s[q] >= '1' && p->s[q] <= '9') {
        while (q < p->len && p->s[q] >= '0' && p->s[q] <= '9') q++;
    } else {
        return bad(p, "a value expected");
    }
    if (q < p->len && p->s[q] == '.') {
        size_t f = ++q;
        while (q < p->len && p->s[q] >= '0' && p->s[q] <= '9') q++;
        if (q == f) return bad(p, "a digit expected after '.'");
    }
    if (q < p->len && (p->s[q] == 'e' || p->s[q] == 'E')) {
        q++;
        if (q < p->len && (p->s[q] == '+' || p->s[q] == '-')) q++;
        size_t f = q;
        while (q < p->len && p->s[q] >= '0' && p->s[q] <= '9') q++;
        if (q == f) return bad(p, "a digit expected in the exponent");
    }
    p->pos = q;
    p->doc->t[i].end = q;
    p->doc->t[i].next = p->doc->n;
    return OC_OK;
}

static oc_status parse_value(jp *p, uint32_t depth) {
    skip_ws(p);
    if (p->pos >= p->len) return bad(p, "a value expected");
    char c = p->s[p->pos];
    if (c == '{' || c == '[') return parse_container(p, depth, c == '{');
    if (c == '"') return parse_string(p);
    static const char *const lits[] = {"true", "false", "null"};
    for (int k = 0; k < 3; k++) {
        size_t n = strlen(lits[k]);
        if (p->len - p->pos >= n && memcmp(p->s + p->pos, lits[k], n) == 0) {
            uint32_t i;
            OC_FORWARD(new_tok(p, OZ_J_LITERAL, &i));
            p->pos += n;
            p->doc->t[i].end = p->pos;
            p->doc->t[i].next = p->doc->n;
            return OC_OK;
        }
    }
    return parse_number(p);
}

oc_status oz__json_parse(oz__json *doc, const char *text, size_t len, uint32_t max_tokens,
                         uint32_t max_depth, const char *what, oc_error *err) {
    memset(doc, 0, sizeof *doc);
    doc->text = text;
    doc->len = len;
    jp p = {doc, text, len, 0, 0, max_tokens, max_depth, what, err};
    oc_status st = parse_value(&p, 0);
    if (st == OC_OK) {
        skip_ws(&p);
        if (p.pos != len) st = bad(&p, "bytes after the value");
    }
    if (st != OC_OK) oz__json_free(doc);
    return st;
}

void oz__json_free(oz__json *doc) {
    free(doc->t);
    doc->t = NULL;
    doc->n = 0;
}

/* Decodes string token i into out (room for its raw length + 1; decoding never grows a
 * string), returning the decoded length; a \u0000 gives a NUL. */
static size_t decode(const oz__json *doc, uint32_t i, char *out) {
    const char *s = doc->text;
    size_t q = doc->t[i].start, end = doc->t[i].end, n = 0;
    while (q < end) {
        if (s[q] != '\\') {
            out[n++] = s[q++];
            continue;
        }
        char e = s[q + 1];
        q += 2;
        if (e != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            out[n++] = to[strchr(from, e) - from];
            continue;
        }
        uint32_t cp = 0;
        for (int k = 0; k < 4; k++) cp = (cp << 4) | (uint32_t)hexval(s[q + (size_t)k]);
        q += 4;
        /* a surrogate pair written as two escapes */
        if (cp >= 0xD800 && cp <= 0xDBFF && end - q >= 6 && s[q] == '\\' && s[q + 1] == 'u') {
            uint32_t lo = 0;
            for (int k = 0; k < 4; k++) lo = (lo << 4) | (uint32_t)hexval(s[q + 2 + (size_t)k]);
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                q += 6;
            }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD; /* a lone surrogate */
        if (cp < 0x80) {
            out[n++] = (char)cp;
        } else if (cp < 0x800) {
            out[n++] = (char)(0xC0 | (cp >> 6));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out[n++] = (char)(0xE0 | (cp >> 12));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        } else {
            out[n++] = (char)(0xF0 | (cp >> 18));
            out[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
            out[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    return n;
}

bool oz__json_str_eq(const oz__json *doc, uint32_t i, const char *str) {
    if (i >= doc->n || doc->t[i].type != OZ_J_STRING) return false;
    size_t raw = doc->t[i].end - doc->t[i].start, want = strlen(str);
    if (!memchr(doc->text + doc->t[i].start, '\\', raw))
        return raw == want && memcmp(doc->text + doc->t[i].start, str, raw) == 0;
    char buf[256];
    if (raw >= sizeof buf) return false; /* the keys and values compared are short */
    size_t n = decode(doc, i, buf);
    return n == want && memcmp(buf, str, n) == 0;
}

uint32_t oz__json_get(const oz__json *doc, uint32_t obj, const char *key, bool *dup) {
    uint32_t found = 0;
    if (dup) *dup = false;
    if (obj >= doc->n || doc->t[obj].type != OZ_J_OBJECT) return 0;
    uint32_t k = obj + 1;
    for (uint32_t pair = 0; pair < doc->t[obj].kids / 2; pair++) {
        uint32_t v = k + 1;
        if (oz__json_str_eq(doc, k, key)) {
            if (found && dup) *dup = true;
            if (!found) found = v;
        }
        k = doc->t[v].next;
    }
    return found;
}

uint32_t oz__json_first(const oz__json *doc, uint32_t arr) {
    return arr + 1 < doc->n && doc->t[arr].kids ? arr + 1 : 0;
}

oc_status oz__json_str(const oz__json *doc, uint32_t i, char **out, size_t *len, oc_error *err) {
    *out = NULL;
    *len = 0;
    size_t raw = doc->t[i].end - doc->t[i].start;
    char *buf = malloc(raw + 1);
    OC_RETURN_ERROR_IF(!buf, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    size_t n = decode(doc, i, buf);
    buf[n] = '\0';
    if (memchr(buf, '\0', n)) {
        free(buf);
        return oc__fail(err, OC_ERR_MALFORMED, doc->t[i].start, "a string holds a NUL character");
    }
    *out = buf;
    *len = n;
    return OC_OK;
}
