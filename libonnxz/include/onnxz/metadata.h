/*
 * onnxz/metadata.h - a model's metadata (producer_name, producer_version, doc_string,
 * metadata_props) shown or edited in one call, in whichever writable form the file is.
 *
 * An .onnxz archive is edited in place (spec/onnxz.md A-50..A-59): only __MODEL_PROTO and
 * the central directory are rewritten, the tensor entries neither move nor change. A
 * .onnx file is written anew beside itself and renamed over the old one, its external
 * data references kept as they are. Either way the model is read, changed and written
 * under the file's edit lock, so that two edits at once never lose one of them.
 */
#ifndef ONNXZ_METADATA_H
#define ONNXZ_METADATA_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <onnxcore/model.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What one edit changes (fixed numbers, append-only). */
typedef enum oz_metadata_op {
    OZ_METADATA_PRODUCER = 1,         /* producer_name = value */
    OZ_METADATA_PRODUCER_VERSION = 2, /* producer_version = value */
    OZ_METADATA_DOC_STRING = 3,       /* the model's doc_string = value */
    OZ_METADATA_SET = 4,   /* metadata_props[key] = value: the first entry of the key keeps
                             * its place, later ones go; none: one is added at the end */
    OZ_METADATA_REMOVE = 5 /* every metadata_props entry of key goes (none: no error) */
} oz_metadata_op;

typedef struct oz_metadata_edit {
    oz_metadata_op op;
    const char *key;   /* SET, REMOVE: the key, not empty; else unused */
    const char *value; /* all but REMOVE: the new value */
} oz_metadata_edit;

/* Extendable as onnxcore/options.h says ("Extending"): initialise with
 * OZ_METADATA_OPTIONS_INIT or oz_metadata_options_init; the struct grows at its end. */
typedef struct oz_metadata_options {
    size_t size;         /* sizeof(oz_metadata_options), set by the initialisers */
    int append_only;     /* archives: only append the new model, never overwrite or shorten
                          * the file, so that readers that have it open meanwhile are
                          * not disturbed and the edit does not wait for them */
    uint64_t max_memory; /* the budget of the model's decode; 0: none */
    /* Experimental (docs/api.md): what an edit does to a signed model's signature
     * (spec/signing.md G-40). Unless one is set, editing a signed model (an archive with
     * its __ONNXZ_SIGNATURE entry, a .onnx with MODEL.sig beside it) is OC_ERR_UNSUPPORTED:
     * the edit would break the signature. sign_key: the private key (PEM) that signs the
     * edited model (an archive: in the same crash-safe edit); passphrase: an encrypted
     * key's (passphrase_len bytes). unsign: the signature is dropped. Not both. */
    const char *sign_key;
    const void *passphrase;
    size_t passphrase_len;
    int unsign;
} oz_metadata_options;

#define OZ_METADATA_OPTIONS_INIT \
    { .size = sizeof(oz_metadata_options) }
/* Sets *opts to the defaults (as OZ_METADATA_OPTIONS_INIT). */
OZ_API void oz_metadata_options_init(oz_metadata_options *opts);

/* What oz_edit_metadata found; grows at its end as oz_convert_info does. */
typedef struct oz_metadata_info {
    size_t size;       /* sizeof(oz_metadata_info), set by the initialisers */
    bool is_archive;   /* the file is an .onnxz archive */
    bool rolled_back;  /* an interrupted edit's torn tail was removed first: */
    uint64_t cut_from; /* the bytes from this offset */
    uint64_t cut_to;   /* to the end, here */
    bool was_signed;   /* experimental: the model was signed before the call */
} oz_metadata_info;

#define OZ_METADATA_INFO_INIT \
    { .size = sizeof(oz_metadata_info) }

/* Applies the n edits, in their order, to the model of the file at path (an .onnxz
 * archive or a .onnx file, told by content; a symbolic link: the file it names, W-32),
 * crash-safely and under the file's lock: another edit meanwhile is OC_ERR_BUSY,
 * and so is a reader of an archive unless append_only. n = 0 only reads (path may
 * then be an http(s) URL). Edits are checked first (a SET or REMOVE without a key is
 * OC_ERR_INVALID_ARG); an encrypted file is OC_ERR_UNSUPPORTED (decrypt, edit, encrypt
 * again), and so is a signed model unless opts says what becomes of its signature
 * (sign_key, unsign: spec/signing.md G-40); a URL with edits OC_ERR_INVALID_ARG. *out (may be NULL; free it with
 * oc_model_free) receives the model as it now is, its tensors kept as references. info
 * may be NULL. */
OZ_API oc_status oz_edit_metadata(const char *path, const oz_metadata_edit *edits, size_t n,
                                  const oz_metadata_options *opts, oc_model **out,
                                  oz_metadata_info *info, oc_error *err);

#ifdef __cplusplus
}
#endif

#endif
