/*
 * onnxz/convert.h - a model from any form to any form, in one call.
 *
 * The forms: a single .onnx file; a .onnx file with its tensors in data files beside it
 * (two-file, or N-file when split by size); and an .onnxz archive. The input's form is
 * told by its content, the output's by the options (or OUT's name). Tensor bytes stream
 * from the input's mapping to the output, a piece at a time, and each piece's pages are
 * dropped once written (oc_bytes_write): converting a model of any size takes memory for
 * its graph and a bounded amount more, never the weights.
 */
#ifndef ONNXZ_CONVERT_H
#define ONNXZ_CONVERT_H

#include "export.h"

#include <stdbool.h>

#include <onnxcore/crypto.h>
#include <onnxcore/model.h>

#include "archive.h"
#include "open.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The forms a model is written in: the one enum of the library, the tool and the Python
 * package (fixed numbers, append-only). */
typedef enum oz_form {
    OZ_FORM_AUTO = 0,  /* output: by the name (oz_form_named); from oz_form_named and
                        * oz_form_parse: no form */
    OZ_FORM_ONNX = 1,  /* a .onnx file; with save.serialize.external_data, data files too */
    OZ_FORM_ONNXZ = 2, /* an .onnxz archive */
    OZ_FORM_ONNXC = 3  /* an encrypted model (spec/encryption.md) */
} oz_form;

/* The form a file's name asks for, by its extension in any case: "*.onnxz" OZ_FORM_ONNXZ,
 * "*.onnxc" OZ_FORM_ONNXC, "*.onnx" OZ_FORM_ONNX; any other name (or NULL) OZ_FORM_AUTO,
 * no form. The one place a form is told by a name. */
OZ_API oz_form oz_form_named(const char *path);

/* The form whose name (oz_form_name) is `name`: "onnx", "onnxz" or "onnxc"; OZ_FORM_AUTO
 * for any other string or NULL. */
OZ_API oz_form oz_form_parse(const char *name);

/* "onnx", "onnxz", "onnxc"; "auto" for OZ_FORM_AUTO and any unknown value. */
OZ_API const char *oz_form_name(oz_form form);

/* What oz_save_any and oz_convert write for OZ_FORM_AUTO: the form oz_form_named tells
 * (a .onnxc name: an encrypted model, which these calls refuse for want of a key), else
 * OZ_FORM_ONNX (where oz_save refuses a name of no form). */
OZ_API oz_form oz_form_of_name(const char *path) OZ_DEPRECATED("use oz_form_named");

/* Loads a model in any unencrypted form, told by content: an .onnxz archive, or a .onnx
 * file with its external data (resolved, or kept as references with
 * opts->skip_external_data). oz_open (onnxz/open.h) with no key: an encrypted file fails
 * with OC_ERR_INVALID_ARG, an empty one with OC_ERR_MALFORMED. */
OZ_API oc_status oz_load_any(const char *path, const oc_parse_options *opts, oc_model **out,
                             oc_error *err) OZ_DEPRECATED("use oz_open");

/* Saves model in the given form (AUTO: by path's name). For OZ_FORM_ONNX, opts->serialize
 * is used as oc_model_save_file uses it (external_data and the rest); for OZ_FORM_ONNXZ,
 * opts as oz_archive_save uses them. opts may be NULL (defaults). */
OZ_API oc_status oz_save_any(const oc_model *model, const char *path, oz_form form,
                             const oz_archive_options *opts, oc_error *err)
    OZ_DEPRECATED("use oz_save");

/* Extendable as onnxcore/options.h says ("Extending"): initialise with
 * OZ_CONVERT_OPTIONS_INIT or oz_convert_options_init. */
typedef struct oz_convert_options {
    size_t size;    /* sizeof(oz_convert_options) */
    oz_form output; /* OUT's form; AUTO: by its name */
    /* How IN is read: data_dir, location, verify_checksums, the size caps. no_copy is
     * always on (tensor bytes go from IN's mapping to OUT) and skip_external_data off. */
    oc_parse_options load;
    /* How OUT is written: serialize.no_overwrite (default 0: replace an existing OUT; a
     * conversion onto its own input is safe, the old bytes stay mapped until the end),
     * buffer.alignment and raw_data_threshold, external_data, max_external_file_size,
     * checksum, progress; deflate_model for archives. */
    oz_archive_options save;
} oz_convert_options;

#define OZ_CONVERT_OPTIONS_INIT                                                                    \
    {                                                                                              \
        .size = sizeof(oz_convert_options), .output = OZ_FORM_AUTO, .load = OC_PARSE_OPTIONS_INIT, \
        .save = OZ_ARCHIVE_OPTIONS_INIT                                                            \
    }
/* Sets *opts to the defaults (as OZ_CONVERT_OPTIONS_INIT), size included. */
OZ_API void oz_convert_options_init(oz_convert_options *opts) OZ_DEPRECATED("use oz_convert_file");

/* Converts the model at `in` into `out`. After any chain of conversions the graph and
 * every tensor are those of the source, and converting back to a single .onnx gives the
 * bytes of saving the source directly. opts may be NULL. Errors are those of the load
 * (naming IN) and of the save (naming OUT). */
OZ_API oc_status oz_convert(const char *in, const char *out, const oz_convert_options *opts,
                            oc_error *err) OZ_DEPRECATED("use oz_convert_file");

/* ---- the save and the conversion of the tool and the Python package ---------------- */

/* The options of a save (oz_save) and of the output of a conversion (oz_convert_file):
 * every option of `onnxz convert`, with its rules (oz_save_check). Options that do not
 * apply to the output's form are refused, not ignored. Initialise with
 * OZ_SAVE_OPTIONS_INIT or oz_save_options_init; the struct grows at its end. */
typedef struct oz_save_options {
    size_t size;      /* sizeof(oz_save_options), set by the initialisers */
    oz_form form;     /* AUTO: by OUT's name (oz_form_named); a name of no form is refused */
    int no_overwrite; /* refuse an existing OUT or data file; 0 replaces them */
    int no_sync;      /* rename into place without waiting for the disk (no fsync) */
    /* .onnx output: tensors of at least `threshold` bytes go to the data file
     * external_data, relative to OUT's directory (an absolute path keeps its base name);
     * not empty. NULL: one .onnx file holding every tensor. */
    const char *external_data;
    bool has_max_file_size; /* with external_data: start LOC.1, LOC.2... past */
    uint64_t max_file_size; /* this many bytes (more than 0) */
    bool has_align;         /* .onnxz output or with external_data: each tensor's bytes on */
    uint64_t align;         /* a multiple of align, a power of two (archives 64 to 32768,
                             * data files at most 1 MiB); default 64 */
    bool has_threshold;     /* .onnxz output or with external_data: tensors of fewer bytes */
    uint64_t threshold;     /* stay inside the model; default 1024 */
    int checksum;           /* with external_data: record each tensor's SHA-1 */
    int deflate_model;      /* .onnxz output: store the model entry deflated */
    /* .onnxc output: the passphrase (needed) and the format (NULL: the defaults). Either
     * given for another form is refused: a model meant encrypted is never written plain. */
    const void *key;
    size_t key_len;
    const oc_crypt_options *crypt;
    oc_progress_fn progress; /* may be NULL: bytes written of the total, as they go */
    void *progress_ctx;
    /* Asked before each tensor that streams from a fetch (a deferred input, the caller's
     * fetch) and before the first file is written: nonzero ends the save with
     * OC_ERR_CANCELLED, leaving no file (neither IN nor OUT is at fault: the message names
     * no file). NULL: never. */
    int (*cancel)(void *ctx);
    void *cancel_ctx;
    /* Where the model's EXTERNAL tensors' bytes come from (oz_weights_fetch, or the
     * caller's own), each streamed as it is written; NULL: none (references are written
     * as they are). */
    const struct oc_tensor_fetch *fetch;
    /* .onnxz output, and .onnx output with external_data: the most memory the model and
     * the writer's tables may take together (oz_archive_options.max_memory, spec/security.md
     * M-5); over it, OC_ERR_LIMIT before any file is made. 0: no cap. The tool and the
     * Python package pass their budget (OC_RECOMMENDED_MAX_MEMORY unless raised). */
    uint64_t max_memory;
    /* Experimental (docs/api.md): the settings of an s3://BUCKET/KEY output (onnxcore/http.h:
     * its s3 settings, credentials needed; parallel, retries, timeouts, cancel), written with
     * S3's multipart upload (spec/remote.md "S3, write"). NULL: an s3:// OUT is refused as
     * any URL is. */
    const struct oc_http_options *http;
} oz_save_options;

#define OZ_SAVE_OPTIONS_INIT \
    { .size = sizeof(oz_save_options), .form = OZ_FORM_AUTO }
/* Sets *opts to the defaults (as OZ_SAVE_OPTIONS_INIT). */
OZ_API void oz_save_options_init(oz_save_options *opts);

/* The options of oz_save_options a check can find at fault. */
typedef enum oz_save_option {
    OZ_SAVE_OPT_NONE = 0,
    OZ_SAVE_OPT_FORM,          /* "form": OUT's name tells none, or an unknown value */
    OZ_SAVE_OPT_EXTERNAL_DATA, /* "external_data" */
    OZ_SAVE_OPT_MAX_FILE_SIZE, /* "max_file_size" */
    OZ_SAVE_OPT_ALIGN,         /* "align" */
    OZ_SAVE_OPT_THRESHOLD,     /* "threshold" */
    OZ_SAVE_OPT_CHECKSUM,      /* "checksum" */
    OZ_SAVE_OPT_DEFLATE_MODEL, /* "deflate_model" */
    OZ_SAVE_OPT_KEY,           /* "key" */
    OZ_SAVE_OPT_CRYPT          /* "crypt" */
} oz_save_option;

/* The option's name as above ("external_data", ...); "" for OZ_SAVE_OPT_NONE. */
OZ_API const char *oz_save_option_name(oz_save_option opt);

/* Checks opts for a save to `out` as oz_save and oz_convert_file check them first, before
 * anything is read or written: OC_OK, or OC_ERR_INVALID_ARG with *bad (may be NULL) the
 * option at fault and err's message "NAME WHY", NAME being oz_save_option_name(*bad)
 * (a client that spells its options otherwise prints its own name before the message
 * past NAME). *form (may be NULL) receives the output's form. First of all, OUT or
 * external_data that is a URL is refused (an s3:// OUT given oz_save_options.http
 * excepted: R-21) (spec/remote.md R-14: a URL is read,
 * never written), *bad OZ_SAVE_OPT_NONE, err's message "URL is a URL: onnxz writes local
 * files only" naming the URL as its file (err->file_at, file_len). */
OZ_API oc_status oz_save_check(const char *out, const oz_save_options *opts, oz_form *form,
                               oz_save_option *bad, oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* As oz_save_check, for a caller that asks for a .onnxc output's passphrase only once the
 * other options are known good (so that a bad option is told before a prompt): a .onnxc
 * output without a key passes, every other rule checked as for one with a key; *form
 * says whether a key is still to be given (OZ_FORM_ONNXC). */
OZ_API oc_status oz_save_check_before_key(const char *out, const oz_save_options *opts,
                                          oz_form *form, oz_save_option *bad, oc_error *err);
#endif

/* Writes model to out in the form opts say (oz_save_check first): one .onnx, with data
 * files, an archive (whose tensors must be the size their shape makes, A-13), or an
 * encrypted model. Each file goes to a temporary beside it, renamed into place whole;
 * without no_overwrite, the cached pages of the files it replaces (OUT; the data file named
 * external_data beside it) are dropped first, so the new files do not take their memory
 * again beside them. opts may be NULL (the defaults: the form by the name). */
OZ_API oc_status oz_save(const oc_model *model, const char *out, const oz_save_options *opts,
                         oc_error *err);

/* What oz_convert_file found; grows at its end as oz_open_info does. */
typedef struct oz_convert_info {
    size_t size;       /* sizeof(oz_convert_info), set by the initialisers */
    bool input_failed; /* the failure was IN's (reading it, or a tensor it holds), not OUT's */
    oz_kind in_kind;   /* IN's kind (oz_detect_file) */
    bool in_archive;   /* IN held an archive, encrypted or not */
    uint64_t in_size;  /* bytes of IN (a file or a URL's object) before the conversion */
    /* Experimental (docs/api.md): IN, a local unencrypted file, was signed (its
     * __ONNXZ_SIGNATURE entry, or MODEL.sig beside it): OUT is not, unless signed after
     * (oz_sign; spec/signing.md G-42). Not looked for at a URL. */
    bool in_signed;
} oz_convert_info;

#define OZ_CONVERT_INFO_INIT \
    { .size = sizeof(oz_convert_info), .in_kind = OZ_KIND_MODEL }

/* Converts the model at `in` (a path or an http(s) URL, any form: oz_open with in_opts,
 * whose parse.no_copy is forced on and skip_external_data off) into `out` as oz_save
 * writes it with out_opts (out_opts->fetch is the conversion's own). The save options are
 * checked before IN is read; a URL's tensors are fetched as they are written, one at a
 * time (oz_open_deferred), so the conversion holds a few MiB, never the weights. Writing
 * OUT over IN is safe without no_overwrite (the old bytes stay mapped until the end). in_opts,
 * out_opts and info may be NULL. */
OZ_API oc_status oz_convert_file(const char *in, const char *out, const oz_open_options *in_opts,
                                 const oz_save_options *out_opts, oz_convert_info *info,
                                 oc_error *err);

#ifdef __cplusplus
}
#endif

#endif
