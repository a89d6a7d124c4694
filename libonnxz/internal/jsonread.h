/*
 * internal/jsonread.h - a strict, bounded JSON reader (RFC 8259) for signature bundles
 * (spec/signing.md): the text is checked whole (UTF-8, escapes, nesting up to a depth,
 * nothing after the value) into a flat array of tokens, each spanning its subtree, as
 * jsmn does; strings are decoded on demand. Memory is one token per value, bounded by the
 * text's length and by max_tokens. Nothing here allocates per value.
 */
#ifndef ONNXZ_INTERNAL_JSONREAD_H
#define ONNXZ_INTERNAL_JSONREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <onnxcore/status.h>

typedef enum oz__jtype {
    OZ_J_OBJECT,
    OZ_J_ARRAY,
    OZ_J_STRING,
    OZ_J_NUMBER,
    OZ_J_LITERAL
} oz__jtype;

typedef struct oz__jtok {
    uint32_t type; /* oz__jtype */
    uint32_t kids; /* array: values; object: keys + values (a key's token, then its value's) */
    size_t start;  /* a string: its first byte inside the quotes; others: first byte */
    size_t end;    /* a string: its closing quote; others: one past the last byte */
    uint32_t next; /* the token after this one's subtree */
} oz__jtok;

typedef struct oz__json {
    const char *text;
    size_t len;
    oz__jtok *t;
    uint32_t n;
} oz__json;

/* Parses len bytes of text (which must outlive *doc) into *doc: at most max_tokens values
 * (OC_ERR_LIMIT past that) nested at most max_depth deep (OC_ERR_DEPTH). Any other fault:
 * OC_ERR_MALFORMED with the byte offset. The message starts with what (e.g. "the
 * signature bundle"). */
oc_status oz__json_parse(oz__json *doc, const char *text, size_t len, uint32_t max_tokens,
                         uint32_t max_depth, const char *what, oc_error *err);
void oz__json_free(oz__json *doc);

/* The value of key in object token obj: its token index, or 0 when absent (0 is the root,
 * never a value). *dup is set when the key appears more than once. */
uint32_t oz__json_get(const oz__json *doc, uint32_t obj, const char *key, bool *dup);
/* The i-th value of an array token (i < kids), found by walking. */
uint32_t oz__json_first(const oz__json *doc, uint32_t arr);
/* true when string token i decodes to exactly the NUL-terminated s. */
bool oz__json_str_eq(const oz__json *doc, uint32_t i, const char *s);
/* Decodes string token i into a new NUL-terminated buffer (*out, free()), *len bytes;
 * a decoded NUL is refused (OC_ERR_MALFORMED): names never hold one. */
oc_status oz__json_str(const oz__json *doc, uint32_t i, char **out, size_t *len, oc_error *err);

#endif
