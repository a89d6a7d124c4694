/*
 * onnxz/sign.h - signing a model and verifying its signature, in the OpenSSF model-signing
 * format (spec/signing.md): a manifest of the SHA-256 of every part of the model (an
 * archive's entries, `__MODEL_PROTO` included; a .onnx file and every data file it names)
 * in an in-toto statement, signed in a DSSE envelope inside a Sigstore bundle with a
 * public-key hint. Keys are PEM files as `openssl genpkey` writes them: ECDSA P-256 or
 * Ed25519. An archive carries its bundle as the entry `__ONNXZ_SIGNATURE`; a .onnx model
 * has it beside it, as `MODEL.onnx.sig`. Experimental; a build without OpenSSL fails
 * every call with OC_ERR_UNSUPPORTED.
 */
#ifndef ONNXZ_SIGN_H
#define ONNXZ_SIGN_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <onnxcore/status.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */

/* The archive entry that holds an archive's signature bundle. */
#define OZ_SIGNATURE_ENTRY "__ONNXZ_SIGNATURE"
/* What a .onnx model's bundle is named after: the model's path and this. */
#define OZ_SIGNATURE_SUFFIX ".sig"

/* Options grow at their end: start from OZ_SIGN_OPTIONS_INIT. */
typedef struct oz_sign_options {
    size_t size; /* sizeof(oz_sign_options) */
    /* The passphrase of an encrypted private key (passphrase_len bytes); NULL: none. */
    const void *passphrase;
    size_t passphrase_len;
    /* A .onnx model's bundle: here instead of beside the model (NULL: MODEL.sig). Not for
     * an archive, whose bundle is inside it. */
    const char *signature_path;
} oz_sign_options;

#define OZ_SIGN_OPTIONS_INIT \
    { .size = sizeof(oz_sign_options) }

/* What a signature covers and who made it. Allocated by the library; grows at its end. */
typedef struct oz_signature_report {
    bool in_archive;          /* the bundle is the archive's entry, else a file */
    char *location;           /* that entry's name, or the bundle's path */
    const char *key_type;     /* "ecdsa-p256" or "ed25519" */
    char key_fingerprint[65]; /* SHA-256 (hex) of the public key's PEM: the bundle's hint */
    uint64_t parts;           /* entries or files the manifest lists */
    uint64_t bytes;           /* their bytes */
    char model_digest[65];    /* the statement's subject digest (hex) */
} oz_signature_report;

/* 1 when this build can sign and verify (it has OpenSSL). */
OZ_API int oz_sign_available(void);

/* true in *needs when the private key at key_path is encrypted: a passphrase is needed. */
OZ_API oc_status oz_sign_key_encrypted(const char *key_path, bool *needs, oc_error *err);

/* Signs the model at path (an .onnxz archive, or a .onnx with its data files) with the
 * private key at key_path: every part is hashed (streaming), the statement signed, and
 * the bundle written: into the archive, in place and crash-safe as an edit is
 * (spec/onnxz.md A-54; a signature already there is replaced, no tensor moves), or beside
 * the model through a temporary file renamed over it. out (may be NULL): a new report
 * (oz_signature_report_free). Errors name the file and what is wrong. */
OZ_API oc_status oz_sign(const char *path, const char *key_path, const oz_sign_options *opts,
                         oz_signature_report **out, oc_error *err);

/* Verifies the signature of the model at path with the trusted public key at trust_path:
 * the bundle's form, the signature over the statement (DSSE PAE), the statement's subject
 * digest, and every part against the manifest. Fails, naming what differs: OC_ERR_NOT_FOUND
 * (no signature; a part the manifest lists is missing), OC_ERR_BAD_KEY (signed by another
 * key, or the signature does not verify), OC_ERR_CHECKSUM (a part's bytes changed),
 * OC_ERR_INCONSISTENT (a part the manifest does not list), OC_ERR_MALFORMED or
 * OC_ERR_LIMIT (a bundle that is no bundle). opts: signature_path only. out as for
 * oz_sign. */
OZ_API oc_status oz_signature_verify(const char *path, const char *trust_path,
                                     const oz_sign_options *opts, oz_signature_report **out,
                                     oc_error *err);

/* Frees a report; NULL is accepted. */
OZ_API void oz_signature_report_free(oz_signature_report *report);

#endif

#ifdef __cplusplus
}
#endif

#endif
