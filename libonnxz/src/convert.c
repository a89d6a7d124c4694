/*
 * convert.c - any form to any form (onnxz/convert.h).
 */
#include <string.h>
#include <strings.h>

#include "onnxz/convert.h"
#include "onnxz/open.h"
#include "internal/error.h"
#include "internal/options.h"

/* The forms by name, indexed by oz_form; each name is also the form's extension. */
static const char *const form_names[] = {"auto", "onnx", "onnxz", "onnxc"};
#define FORM_COUNT (sizeof form_names / sizeof form_names[0])

oz_form oz_form_named(const char *path) {
    size_t n = path ? strlen(path) : 0;
    for (size_t f = OZ_FORM_ONNX; f < FORM_COUNT; f++) {
        size_t k = strlen(form_names[f]);
        if (n > k && path[n - k - 1] == '.' && strcasecmp(path + n - k, form_names[f]) == 0)
            return (oz_form)f;
    }
    return OZ_FORM_AUTO;
}

oz_form oz_form_parse(const char *name) {
    for (size_t f = OZ_FORM_ONNX; name && f < FORM_COUNT; f++)
        if (strcmp(name, form_names[f]) == 0) return (oz_form)f;
    return OZ_FORM_AUTO;
}

const char *oz_form_name(oz_form form) {
    return (size_t)form < FORM_COUNT ? form_names[form] : form_names[OZ_FORM_AUTO];
}

oz_form oz_form_of_name(const char *path) {
    return oz_form_named(path) == OZ_FORM_ONNXZ ? OZ_FORM_ONNXZ : OZ_FORM_ONNX;
}

oc_status oz_load_any(const char *path, const oc_parse_options *opts, oc_model **out,
                      oc_error *err) {
    if (out) *out = NULL;
    /* The caller's struct is read by its size first (it may be older and shorter): copied
     * whole, it would also be taken for a caller's struct by oz_open, which would then read
     * the key past it. */
    OC_PARSE_OPTS(opts, err);
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    o.parse = *opts;
    return oz_open(path, &o, out, NULL, err);
}

oc_status oz_save_any(const oc_model *model, const char *path, oz_form form,
                      const oz_archive_options *opts, oc_error *err) {
    OZ_ARCHIVE_OPTS(opts, err);
    if (form == OZ_FORM_AUTO) form = oz_form_of_name(path);
    if (form == OZ_FORM_ONNXZ) {
        if (opts->serialize.external_data)
            return oz__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "external_data does not apply to an archive, which holds its "
                            "tensors itself");
        return oz_archive_save(model, path, opts, err);
    }
    if (form != OZ_FORM_ONNX)
        return oz__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "unknown output form %d", (int)form);
    return oc_model_save_file(model, path, &opts->serialize, err);
}

oc_status oz_convert(const char *in, const char *out, const oz_convert_options *opts,
                     oc_error *err) {
    if (!in || !out)
        return oz__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_convert: missing argument");
    OZ_CONVERT_OPTS(opts, err);
    oc_parse_options load = opts->load;
    load.no_copy = 1;
    load.skip_external_data = 0;
    oc_model *model = NULL;
    OZ_FORWARD(oz_load_any(in, &load, &model, err));
    oc_status st = oz_save_any(model, out, opts->output, &opts->save, err);
    oc_model_free(model); /* last: the save streamed from the mapping the tensors hold */
    return st;
}
