/*
 * open_signed.c - oz_open and oz_open_deferred (onnxz/open.h): with a trusted key, the
 * model's whole signature verified first (spec/signing.md G-55), then the load of open.c.
 * A floor above both open.c and signature.c, which itself detects forms through open.c.
 */
#include <string.h>
#include <sys/stat.h>

#include "onnxz/open.h"
#include "onnxz/sign.h"
#include "internal/error.h"
#include "internal/open_unsigned.h"
#include "internal/options.h"
#include "onnxcore_private.h"

/* The signature of the local file at path checked with opts->trust; *before its identity
 * then (known: it could be taken). */
static oc_status check_signature(const char *path, const oz_open_options *opts, struct stat *before,
                                 bool *known, oc_error *err) {
    if (!path) return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_open: missing argument");
    if (oc_is_url(path))
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                                      "%s: oz_open checks a signature for a local file; read a "
                                      "URL with oz_reader_open, which checks each tensor as it "
                                      "reads it (spec/signing.md G-55)",
                                      path));
    *known = stat(path, before) == 0;
    return oz_signature_verify(path, opts->trust, NULL, NULL, err);
}

/* OC_OK when the file at path is still the one whose signature was checked. */
static oc_status unchanged(const char *path, const struct stat *before, bool known, oc_error *err) {
    struct stat after;
    if (known && stat(path, &after) == 0 && after.st_ino == before->st_ino &&
        after.st_dev == before->st_dev && after.st_size == before->st_size &&
        after.st_mtim.tv_sec == before->st_mtim.tv_sec &&
        after.st_mtim.tv_nsec == before->st_mtim.tv_nsec)
        return OC_OK;
    return oc_error_file(err, path,
                         oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                                  "%s changed while its signature was checked: open it again",
                                  path));
}

oc_status oz_open(const char *path, const oz_open_options *opts, oc_model **out, oz_open_info *info,
                  oc_error *err) {
    struct stat before;
    bool known = false;
    if (out) *out = NULL;
    OZ_OPEN_OPTS(opts, err);
    if (!opts->trust) return oz__open_unsigned(path, opts, out, info, err);
    OC_FORWARD(check_signature(path, opts, &before, &known, err));
    oz_open_options o = *opts;
    o.trust = NULL;
    OC_FORWARD(oz__open_unsigned(path, &o, out, info, err));
    oc_status st = unchanged(path, &before, known, err);
    if (st != OC_OK) {
        oc_model_free(*out);
        *out = NULL;
    }
    return st;
}

oc_status oz_open_deferred(const char *path, const oz_open_options *opts, oc_model **out,
                           oz_weights **weights, oz_open_info *info, oc_error *err) {
    struct stat before;
    bool known = false;
    if (out) *out = NULL;
    OZ_OPEN_OPTS(opts, err);
    if (!opts->trust) return oz__open_deferred_unsigned(path, opts, out, weights, info, err);
    if (weights) *weights = NULL;
    OC_FORWARD(check_signature(path, opts, &before, &known, err));
    oz_open_options o = *opts;
    o.trust = NULL;
    OC_FORWARD(oz__open_deferred_unsigned(path, &o, out, weights, info, err));
    oc_status st = unchanged(path, &before, known, err);
    if (st != OC_OK) {
        oc_model_free(*out);
        *out = NULL;
        oz_weights_close(*weights);
        *weights = NULL;
    }
    return st;
}
