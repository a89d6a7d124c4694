/*
 * internal/hf.h - hf:// URLs: models on the Hugging Face hub (hf.c, any build), mapped
 * onto the hub's resolve URLs that the HTTP source reads (spec/remote.md, "The Hugging
 * Face hub").
 */
#ifndef ONNXCORE_INTERNAL_HF_H
#define ONNXCORE_INTERNAL_HF_H

#include "onnxcore/http.h"
#include "onnxcore/status.h"

#define OC_HF_ENDPOINT_DEFAULT "https://huggingface.co"

/* True when path is an hf:// URL (the scheme in any case). */
int oc__is_hf_url(const char *path);

/* hf://ORG/NAME[@REV]/PATH taken apart: REV and PATH percent-decoded. */
typedef struct oc_hf_ref {
    char *repo; /* "ORG/NAME" */
    char *rev;  /* the revision asked for, or NULL (the default branch, "main") */
    char *path; /* the file's path in the repository */
} oc_hf_ref;

/* Parses url into *out (freed with oc__hf_ref_free, also on failure): ORG and NAME of
 * letters, digits, '-', '_' and '.' (1 to 96 bytes, no "--" or ".."), REV up to the next
 * '/', PATH a location as spec/external-data.md E-10 has it once decoded (relative, no
 * `..`, no NUL, not a directory). OC_ERR_INVALID_ARG naming url and what is wrong. */
oc_status oc__hf_parse(const char *url, oc_hf_ref *out, oc_error *err);
void oc__hf_ref_free(oc_hf_ref *r);

/* ENDPOINT/ORG/NAME/resolve/REV/PATH (REV encoded whole, '/' too; PATH but its '/'),
 * or NULL when out of memory. */
char *oc__hf_resolve_url(const char *endpoint, const oc_hf_ref *r, const char *rev);

/* hf://ORG/NAME@REV/PATH, encoded as the resolve URL's: what r names at rev. */
char *oc__hf_url(const oc_hf_ref *r, const char *rev);

/* True when s is a commit as the hub names them: 40 lowercase hex digits. */
int oc__hf_is_commit(const char *s);

/* NULL when token can be an Authorization header's credentials (visible ASCII only: no
 * blank, control byte or line break that would end the header or add another), else
 * why not. */
const char *oc__hf_token_problem(const char *token);

#endif
