/*
 * verify.c - the checks of `onnxz verify` (onnxz/verify.h).
 */
#include "onnxz/verify.h"

#include "onnxz/sign.h"

#include <stdlib.h>
#include <string.h>

#include "onnxcore/http.h"
#include "internal/onnxcore_shared.h"
#include "onnxcore/stats.h"
#include "onnxz/listing.h"
#include "onnxz/stub.h"
#include "onnxcore_private.h"
#include "internal/archive.h"
#include "internal/verify.h"
#include "internal/error.h"
#include "internal/options.h"

static oc_status nomem(oc_error *err) {
    return oc_error_set(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory while verifying");
}

/* Steps 1 and 2 of oz_archive_verify: *model, decoded with its tensors as references,
 * when the archive is remote (its bytes are not read twice); else NULL. */
static oc_status check_contents(const oz_archive *ar, const oc_parse_options *opts,
                                oc_model **model, oc_error *err) {
    oc_parse_options po = *opts;
    oc_model *m = NULL;
    oc_status st;
    *model = NULL;
    st = oz_zip_reader_verify_all(oz_archive_zip(ar), err);
    if (st == OC_OK) st = oz_zip_reader_check_paths(oz_archive_zip(ar), err);
    po.no_copy = 1;
    po.skip_external_data = oc_is_url(oz__archive_path(ar));
    if (st == OC_OK) st = oz_archive_load_model(ar, &po, &m, err);
    if (st == OC_OK) st = oc_model_check(m, err);
    if (st == OC_OK && po.skip_external_data) {
        oc_tensor_fetch fetch;
        oz_archive_fetch(ar, &fetch);
        st = oc_model_check_tensor_sizes_fetched(m, &fetch, err);
    }
    if (st != OC_OK || !po.skip_external_data) {
        oc_model_free(m);
        return st;
    }
    *model = m;
    return OC_OK;
}

static void report_fill(oz_archive_report *r, const oz_archive_listing *l) {
    r->entries = l->count;
    r->tensor_entries = l->tensor_entries;
    for (uint64_t i = 0; i < l->count; i++) {
        const oz_listed_entry *e = &l->entries[i];
        if (e->is_model) {
            r->model_size = e->zip.uncompressed_size;
        } else if (e->ntensors) {
            r->entry_tensors += e->ntensors;
            r->entry_bytes += e->zip.uncompressed_size;
        }
    }
}

oc_status oz_archive_verify(const oz_archive *ar, const oc_parse_options *opts,
                            oz_archive_report **out, oc_error *err) {
    oc_model *model = NULL;
    oz_archive_listing *listing = NULL;
    oz_archive_report *r;
    oc_status st;
    OC_PARSE_OPTS(opts, err);
    *out = NULL;
    st = check_contents(ar, opts, &model, err);
    /* Step 3, on the references to the entries: the model without its weights. */
    if (st == OC_OK && !model) {
        oc_parse_options po = *opts;
        po.no_copy = 1;
        po.skip_external_data = 1;
        st = oz_archive_load_model(ar, &po, &model, err);
    }
    if (st == OC_OK) st = oz_archive_check_layout(ar, oc_model_proto(model), err);
    if (st == OC_OK) st = oz_archive_list(ar, oc_model_proto(model), &listing, err);
    r = st == OC_OK ? calloc(1, sizeof *r) : NULL;
    if (st == OC_OK && !r) st = nomem(err);
    if (r) report_fill(r, listing);
    oz_archive_listing_free(listing);
    oc_model_free(model);
    *out = r;
    return st;
}

void oz_archive_report_free(oz_archive_report *report) { free(report); }

/* The figures of model into a new *out. */
static oc_status model_report(oc_model *model, oz_model_report **out, oc_error *err) {
    oc_model_stats *s = NULL;
    oz_model_report *r;
    OC_FORWARD(oc_model_stats_collect(oc_model_proto(model), &s, err));
    r = calloc(1, sizeof *r);
    if (r) {
        r->tensors = s->tensors;
        r->external_tensors = s->external.tensors;
        r->external_files = s->nlocations;
        r->external_bytes = s->external.bytes;
        r->checksums = s->external_checksums;
    }
    oc_model_stats_free(s);
    *out = r;
    return r ? OC_OK : nomem(err);
}

/* A stub's references into archives (oz_stub_check), locations relative to data_dir or
 * else to path's directory; a model at a URL names no local archive. */
static oc_status check_stub(oc_model *model, const char *path, const char *data_dir,
                            uint64_t *checked, oc_error *err) {
    char *dir = NULL;
    *checked = 0;
    if (oc_is_url(path)) return OC_OK;
    if (!data_dir && !(dir = oc__path_dir(path))) return nomem(err);
    oc_status st = oz_stub_check(model, data_dir ? data_dir : dir, checked, err);
    free(dir);
    return st;
}

/* The figures of the model at path with its tensors as references (not read again), and
 * the check of those that point into archives. */
static oc_status reference_report(const char *path, const oz_open_options *opts,
                                  oz_model_report **out, oc_error *err) {
    oz_open_options o = *opts;
    oc_model *model = NULL;
    uint64_t references = 0;
    o.parse.no_copy = 1;
    o.parse.verify_checksums = 0;
    o.parse.skip_external_data = 1;
    o.trust = NULL; /* the signature was checked first (oz__verify) */
    oc_status st = oz_open(path, &o, &model, NULL, err);
    if (st == OC_OK) st = check_stub(model, path, o.parse.data_dir, &references, err);
    if (st == OC_OK) st = model_report(model, out, err);
    if (st == OC_OK) (*out)->archive_references = references;
    oc_model_free(model);
    return st;
}

oc_status oz_verify_model(const char *path, const oz_open_options *opts, oz_model_report **out,
                          oz_open_info *info, oc_error *err) {
    oz_open_info local_info = OZ_OPEN_INFO_INIT;
    oc_model *model = NULL;
    oc_crypt_format crypt;
    OZ_OPEN_OPTS(opts, err);
    if (info) OC_FORWARD(oc__output_check(info, info->size, "oz_open_info", err));
    oz_open_options o = *opts;
    *out = NULL;
    o.parse.no_copy = 1;
    o.parse.skip_external_data = 0;
    o.parse.verify_checksums = 1;
    o.trust = NULL; /* the signature is oz__verify's to check, first */
    if (o.parse.num_threads == 0) o.parse.num_threads = -1; /* checksums hashed on every core */
    oc_status st = oz_open(path, &o, &model, &local_info, err);
    if (info) oc__output_put(info, &local_info, sizeof local_info);
    if (st == OC_OK) st = oc_model_check(model, err);
    if (st == OC_OK && oz_kind_is_encrypted(local_info.kind, &crypt))
        st = model_report(model, out, err);
    oc_model_free(model);
    if (st == OC_OK && !*out) st = reference_report(path, opts, out, err);
    return st;
}

void oz_model_report_free(oz_model_report *report) { free(report); }

/* An archive's checks: ar, or the archive at path opened with opts' budget and HTTP
 * settings; info gets what was opened. */
static oc_status verify_archive(const char *path, const oz_archive *ar,
                                const oc_parse_options *opts, oz_verify_report *rep,
                                oz_open_info *info, oc_error *err) {
    oz_archive *opened = NULL;
    oc_status st = OC_OK;
    if (!ar) {
        oz_zip_reader_options zo = oz__zip_options_for(opts);
        st = oz_archive_open(path, &zo, &opened, err);
        ar = opened;
    }
    if (info && ar) info->file_size = oz_zip_reader_size(oz_archive_zip(ar));
    if (st == OC_OK) st = oz_archive_verify(ar, opts, &rep->archive, err);
    oz_archive_close(opened);
    return st;
}

oc_status oz__verify(const char *path, oz_kind kind, const oz_archive *ar,
                     const oz_open_options *opts, oz_verify_report **out, oz_open_info *info,
                     oc_error *err) {
    oz_open_info found = OZ_OPEN_INFO_INIT;
    oz_verify_report *rep = calloc(1, sizeof *rep);
    oc_status st;
    *out = NULL;
    found.kind = kind;
    if (!rep) {
        st = nomem(err);
    } else if (opts->parse.data_dir && oz_kind_is_archive(kind)) {
        /* before the signature: a usage error is told as one whatever the signature */
        found.option = "data_dir";
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                      "data_dir applies to .onnx files, not archives");
    } else if (opts->trust &&
               (st = oz_signature_verify(path, opts->trust, NULL, &rep->signature, err)) != OC_OK) {
        /* the signature first: nothing unauthenticated is checked further */
    } else if (oz_kind_is_archive(found.kind)) {
        found.is_archive = true;
        st = verify_archive(path, ar, &opts->parse, rep, &found, err);
    } else {
        st = oz_verify_model(path, opts, &rep->model, &found, err);
    }
    if (info) oc__output_put(info, &found, sizeof found);
    if (rep) {
        rep->kind = found.kind;
        rep->is_archive = found.is_archive;
    }
    if (st != OC_OK) {
        oz_verify_report_free(rep);
        return st;
    }
    *out = rep;
    return OC_OK;
}

oc_status oz_verify_path(const char *path, const oz_open_options *opts, oz_verify_report **out,
                         oz_open_info *info, oc_error *err) {
    oz_kind kind;
    if (out) *out = NULL;
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_verify_path: missing argument");
    OZ_OPEN_OPTS(opts, err);
    if (info) OC_FORWARD(oc__output_check(info, info->size, "oz_open_info", err));
    /* a file that cannot be looked at is handed to the model loader, which says why */
    if (oz_detect_path(path, opts->parse.http, &kind, NULL) != OC_OK) kind = OZ_KIND_MODEL;
    return oz__verify(path, kind, NULL, opts, out, info, err);
}

void oz_verify_report_free(oz_verify_report *report) {
    if (!report) return;
    oz_archive_report_free(report->archive);
    oz_model_report_free(report->model);
    oz_signature_report_free(report->signature);
    free(report);
}
