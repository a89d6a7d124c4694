/*
 * sign.c - oz_sign (onnxz/sign.h, spec/signing.md): a .onnx model's bundle is written
 * beside it; an archive's is stored as its entry __ONNXZ_SIGNATURE by an in-place edit
 * (G-20), its entries hashed through the edit's own reader, under the edit's locks, so
 * that what is signed is what the edit keeps.
 */
#include "onnxz/sign.h"

#include <stdlib.h>

#include "internal/edit.h"
#include "internal/error.h"
#include "internal/options.h"
#include "internal/signing.h"
#include "onnxz/archive.h"
#include "onnxz/zip.h"

static oc_status sign_archive(const oz__signer *sg, const char *path, oz_signature_report **out,
                              oc_error *err) {
    oz_archive_options ao;
    oz_archive_options_init(&ao);
    oz_archive_edit *ed = NULL;
    OC_FORWARD(oz_archive_edit_begin(path, &ao, &ed, err));
    const oz_zip_reader *zip = oz_archive_zip(oz_archive_edit_archive(ed));
    oc_bytes model = {0};
    char *bundle = NULL;
    size_t bundle_n = 0;
    uint64_t mi = 0;
    oz_zip_entry me;
    oc_status st = oz__signer_archive(sg, zip, path, NULL, 0, &bundle, &bundle_n, out, err);
    if (st == OC_OK) st = oz_zip_reader_find(zip, OZ_MODEL_ENTRY, &mi, err);
    if (st == OC_OK) st = oz_zip_reader_entry(zip, mi, &me, err);
    if (st == OC_OK) st = oz_zip_reader_read(zip, mi, &model, err);
    /* __MODEL_PROTO written again as it is (same bytes, same method) after the bundle */
    if (st == OC_OK)
        st = oz__archive_edit_commit_entry(ed, model.data, model.size, me.method == OZ_ZIP_DEFLATED,
                                           OZ_SIGNATURE_ENTRY, (const uint8_t *)bundle, bundle_n,
                                           err);
    if (st != OC_OK && out) {
        oz_signature_report_free(*out);
        *out = NULL;
    }
    oc_bytes_release(&model);
    oz_archive_edit_end(ed);
    free(bundle);
    return st;
}

oc_status oz_sign(const char *path, const char *key_path, const oz_sign_options *opts,
                  oz_signature_report **out, oc_error *err) {
    if (out) *out = NULL;
    OC_RETURN_ERROR_IF(!key_path || !*key_path, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz_sign: no key");
    OC_OPTS_ENTRY(oz_sign_options, oz__sign_opts, opts, err);
    bool archive = false;
    OC_FORWARD(oz__sign_form(path, &archive, err));
    OC_RETURN_ERROR_IF(archive && opts->signature_path, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "%s is an archive: its signature is stored inside it, not in a file", path);
    oz__signer *sg = NULL;
    OC_FORWARD(oz__signer_open(key_path, opts, &sg, err));
    oc_status st =
        archive ? sign_archive(sg, path, out, err) : oz__signer_model(sg, path, opts, out, err);
    oz__signer_close(sg);
    return st;
}
