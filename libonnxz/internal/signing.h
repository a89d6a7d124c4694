/*
 * internal/signing.h - the parts of signing (src/archive/signature.c) that oz_sign
 * (src/sign/sign.c, a floor up, where an archive's bundle is stored by an in-place edit)
 * puts together: a signer holding the private key, the bundle of an archive's entries,
 * and the whole signing of a .onnx model.
 */
#ifndef ONNXZ_INTERNAL_SIGNING_H
#define ONNXZ_INTERNAL_SIGNING_H

#include <stdbool.h>
#include <stddef.h>

#include <onnxcore/status.h>

#include "internal/signature.h"
#include "onnxz/archive.h"
#include "onnxz/listing.h"
#include "onnxz/open.h"
#include "onnxz/sign.h"
#include "onnxz/zip.h"

typedef struct oz__signer {
    oc__sig_key *key;
    oc__sha256 *h;
    char fp[65]; /* the public key's fingerprint (hex) */
} oz__signer;

/* The private key at key_path (o's passphrase), ready to sign. */
oc_status oz__signer_open(const char *key_path, const oz_sign_options *o, oz__signer **out,
                          oc_error *err);
/* NULL is accepted. */
void oz__signer_close(oz__signer *sg);
/* Whether path is an archive (true) or a .onnx model (false); anything else fails. */
oc_status oz__sign_form(const char *path, bool *is_archive, oc_error *err);
/* The bundle (a new buffer, free()) signing every entry of the archive read through zip
 * but __ONNXZ_SIGNATURE, with model (model_n bytes; NULL: the archive's own) as the data of
 * __MODEL_PROTO; out (may be NULL) the report. */
oc_status oz__signer_archive(const oz__signer *sg, const oz_zip_reader *zip, const char *path,
                             const uint8_t *model, uint64_t model_n, char **bundle,
                             size_t *bundle_n, oz_signature_report **out, oc_error *err);
/* Signs the .onnx model at path and writes its bundle (o->signature_path, else MODEL.sig). */
oc_status oz__signer_model(const oz__signer *sg, const char *path, const oz_sign_options *o,
                           oz_signature_report **out, oc_error *err);

/* ---- verify on read (spec/signing.md G-50..) ---- */

/* An archive's signed manifest, checked with a trusted key: the names and digests of its
 * parts. */
typedef struct oz__manifest oz__manifest;
struct onnx_TensorProto;
/* The manifest of the archive read through zip (path names it in errors), verified with the
 * trusted key at trust_path (G-31 steps 1 to 3), and its entries the manifest's parts
 * exactly (by name): what an open checks (G-50) before the model's bytes
 * (oz__manifest_check_bytes, as the load reads them). */
oc_status oz__manifest_archive(const oz_zip_reader *zip, const char *path, const char *trust_path,
                               oz__manifest **out, oc_error *err);
/* OC_OK when the entry named by n bytes at entry has this SHA-256 in m; else the error
 * naming path, the entry and t (may be NULL), the tensor read from it. */
oc_status oz__manifest_check(const oz__manifest *m, const char *path, const char *entry, size_t n,
                             const struct onnx_TensorProto *t, const uint8_t digest[32],
                             oc_error *err);
/* As oz__manifest_check, with the SHA-256 of the size bytes at data. */
oc_status oz__manifest_check_bytes(const oz__manifest *m, const char *path, const char *entry,
                                   size_t n, const struct onnx_TensorProto *t, const void *data,
                                   uint64_t size, oc_error *err);
/* NULL is accepted. */
void oz__manifest_free(oz__manifest *m);

/* What info and ls show of a signature (onnxz/listing.h, spec/signing.md G-41): the
 * bundle as it states itself, not verified. *out NULL: not signed. Only running out of
 * memory fails; a bundle that cannot be read is the summary's problem. */
oc_status oz__signature_summary_archive(const oz_archive *ar, oz_signature_summary **out,
                                        oc_error *err);
/* A .onnx model's: MODEL.sig beside path (a URL: none looked for). */
oc_status oz__signature_summary_model(const char *path, oz_signature_summary **out, oc_error *err);
/* NULL is accepted. */
void oz__signature_summary_free(oz_signature_summary *s);
/* Whether the local unencrypted file at path, of this kind, carries a signature (an
 * archive's entry, a .onnx's MODEL.sig); false for a URL or anything unreadable. */
bool oz__path_signed(const char *path, oz_kind kind);

#endif
