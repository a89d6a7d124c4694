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

#include <onnxcore/model.h>

#include "archive.h"

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

/* What oz_save_any writes for OZ_FORM_AUTO: OZ_FORM_ONNXZ when oz_form_named says so, else
 * OZ_FORM_ONNX (the form of this call's first version, which had only these two). */
OZ_API oz_form oz_form_of_name(const char *path);

/* Loads a model in any unencrypted form, told by content: an .onnxz archive, or a .onnx
 * file with its external data (resolved, or kept as references with
 * opts->skip_external_data). oz_open (onnxz/open.h) with no key: an encrypted file fails
 * with OC_ERR_INVALID_ARG, an empty one with OC_ERR_MALFORMED. */
OZ_API oc_status oz_load_any(const char *path, const oc_parse_options *opts, oc_model **out,
                             oc_error *err);

/* Saves model in the given form (AUTO: by path's name). For OZ_FORM_ONNX, opts->serialize
 * is used as oc_model_save_file uses it (external_data and the rest); for OZ_FORM_ONNXZ,
 * opts as oz_archive_save uses them. opts may be NULL (defaults). */
OZ_API oc_status oz_save_any(const oc_model *model, const char *path, oz_form form,
                             const oz_archive_options *opts, oc_error *err);

/* Extendable as onnxcore/options.h says ("Extending"): initialise with
 * OZ_CONVERT_OPTIONS_INIT or oz_convert_options_init. */
typedef struct oz_convert_options {
    size_t size;    /* sizeof(oz_convert_options) */
    oz_form output; /* OUT's form; AUTO: by its name */
    /* How IN is read: data_dir, location, verify_checksums, the size caps. no_copy is
     * always on (tensor bytes go from IN's mapping to OUT) and skip_external_data off. */
    oc_parse_options load;
    /* How OUT is written: serialize.overwrite (default 1: replace an existing OUT; a
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
OZ_API void oz_convert_options_init(oz_convert_options *opts);

/* Converts the model at `in` into `out`. After any chain of conversions the graph and
 * every tensor are those of the source, and converting back to a single .onnx gives the
 * bytes of saving the source directly. opts may be NULL. Errors are those of the load
 * (naming IN) and of the save (naming OUT). */
OZ_API oc_status oz_convert(const char *in, const char *out, const oz_convert_options *opts,
                            oc_error *err);

#ifdef __cplusplus
}
#endif

#endif
