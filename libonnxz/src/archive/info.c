/*
 * info.c - the report of `onnxz info` and its JSON document (onnxz/info.h).
 */
#include "onnxz/info.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <onnxcore/http.h>
#include <onnxcore/json.h>

#include "internal/open.h"
#include "internal/options.h"
#include "internal/signing.h"

/* ---- gathering ------------------------------------------------------------------- */

static oc_status nomem(oc_error *err) {
    return oc_error_set(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory while reporting");
}

/* The ONNX default operator set has the empty domain; it is shown by its name. */
static oc_status fill_opsets(oz_info *r, const onnx_ModelProto *m, oc_error *err) {
    static const char default_domain[] = "ai.onnx";
    r->opsets =
        calloc(m->opset_import.count ? (size_t)m->opset_import.count : 1, sizeof *r->opsets);
    if (!r->opsets) return nomem(err);
    for (uint64_t i = 0; i < m->opset_import.count; i++) {
        const onnx_OperatorSetIdProto *op = m->opset_import.items[i];
        oz_info_opset *o = &r->opsets[r->nopsets];
        if (!op) continue;
        o->domain = op->domain;
        if (!op->domain.size) o->domain = (oc_str){default_domain, sizeof default_domain - 1};
        o->version = op->version;
        r->nopsets++;
    }
    return OC_OK;
}

static void fill_header(oz_info *r, const onnx_ModelProto *m) {
    r->has_ir_version = OC_HAS(ModelProto, m, ir_version);
    r->ir_version = m->ir_version;
    r->has_model_version = OC_HAS(ModelProto, m, model_version);
    r->model_version = m->model_version;
    r->has_producer_name = OC_HAS(ModelProto, m, producer_name);
    r->producer_name = m->producer_name;
    r->has_producer_version = OC_HAS(ModelProto, m, producer_version);
    r->producer_version = m->producer_version;
    r->has_domain = OC_HAS(ModelProto, m, domain);
    r->domain = m->domain;
    r->has_graph_name = m->graph && OC_HAS(GraphProto, m->graph, name);
    if (r->has_graph_name) r->graph_name = m->graph->name;
}

/* Every stored tensor entry's data offset is known (R-10: a URL's are once read), or
 * there is none: min_tensor_alignment is theirs. */
static bool alignment_known(const oz_archive_listing *l) {
    return l->min_tensor_alignment || l->deflated_tensor_entries == l->tensor_entries;
}

/* The caller's source by its size (internal/options.h), with what it must name. */
static oc_status source_of(const oz_info_source **src, oz_info_source *local, oc_error *err) {
    oc_status st = oz__info_source_read(src, local, err);
    if (st == OC_OK && (!(*src)->path || !(*src)->model))
        st = oc_error_set(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                          "oz_info_source: the path and the model are required");
    return st;
}

oc_status oz_info_collect(const oz_info_source *src, oz_info **out, oc_error *err) {
    oz_info_source local;
    oc_status st = source_of(&src, &local, err);
    oz_info *r;
    size_t len;
    *out = NULL;
    if (st != OC_OK) return st;
    len = strlen(src->path);
    r = calloc(1, sizeof *r);
    if (!r || !(r->file = malloc(len + 1))) {
        free(r);
        return nomem(err);
    }
    oc_path_shown(src->path, r->file, len + 1); /* never longer than the path */
    r->file_size = src->file_size;
    r->archive = src->payload_archive;
    r->crypt = src->crypt;
    fill_header(r, src->model);
    st = fill_opsets(r, src->model, err);
    if (st == OC_OK) st = oc_model_stats_collect(src->model, &r->stats, err);
    if (st == OC_OK && src->archive)
        st = oz_archive_list(src->archive, src->model, &r->listing, err);
    if (st == OC_OK && r->listing) r->alignment_known = alignment_known(r->listing);
    /* the signature: an archive's is its listing's; an unencrypted .onnx's is beside it */
    if (st == OC_OK && r->listing)
        r->signature = r->listing->signature;
    else if (st == OC_OK && !src->payload_archive && src->crypt == OC_CRYPT_NONE)
        st = oz__signature_summary_model(src->path, &r->signature, err);
    if (st != OC_OK) {
        oz_info_free(r);
        return st;
    }
    *out = r;
    return OC_OK;
}

oc_status oz_info_collect_reader(const oz_reader *r, oz_info **out, oc_error *err) {
    oz_open_info found = OZ_OPEN_INFO_INIT;
    oz_info_source src = OZ_INFO_SOURCE_INIT;
    if (out) *out = NULL;
    if (!r || !out)
        return oc_error_set(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "oz_info_collect_reader: missing argument");
    oz_reader_info(r, &found);
    src.path = oz__reader_name(r);
    src.file_size = found.file_size;
    src.payload_archive = found.is_archive;
    src.model = oc_model_proto(oz_reader_model(r));
    if (!oz_kind_is_encrypted(found.kind, &src.crypt)) src.archive = oz_reader_archive(r);
    return oz_info_collect(&src, out, err);
}

void oz_info_free(oz_info *r) {
    if (!r) return;
    if (!r->listing) oz__signature_summary_free(r->signature); /* else the listing's */
    oz_archive_listing_free(r->listing);
    oc_model_stats_free(r->stats);
    free(r->opsets);
    free(r->file);
    free(r);
}

/* ---- JSON: one object, keys documented in `onnxz info --help` -------------------- */

/* Starts the next member of an object: the separator, indentation and "key": . */
static void json_key(FILE *out, int *first, const char *key) {
    fputs(*first ? "\n  " : ",\n  ", out);
    *first = 0;
    oc_json_put_cstring(out, key);
    fputs(": ", out);
}

static void json_str(FILE *out, int *first, const char *key, bool present, oc_str value) {
    json_key(out, first, key);
    if (present)
        oc_json_put_string(out, value.data, value.size);
    else
        fputs("null", out);
}

static void json_int(FILE *out, int *first, const char *key, bool present, int64_t value) {
    json_key(out, first, key);
    if (present)
        fprintf(out, "%" PRId64, value);
    else
        fputs("null", out);
}

static void json_count(FILE *out, int *first, const char *key, uint64_t value) {
    json_key(out, first, key);
    fprintf(out, "%" PRIu64, value);
}

static void json_share(FILE *out, int *first, const char *key, const oc_tensor_share *share) {
    json_key(out, first, key);
    fprintf(out, "{\"tensors\": %" PRIu64 ", \"bytes\": %" PRIu64 "}", share->tensors,
            share->bytes);
}

static void json_opsets(FILE *out, int *first, const oz_info *r) {
    json_key(out, first, "opset_import");
    fputc('[', out);
    for (uint64_t i = 0; i < r->nopsets; i++) {
        fputs(i ? ", {\"domain\": " : "{\"domain\": ", out);
        oc_json_put_string(out, r->opsets[i].domain.data, r->opsets[i].domain.size);
        fprintf(out, ", \"version\": %" PRId64 "}", r->opsets[i].version);
    }
    fputc(']', out);
}

static void json_external(FILE *out, int *first, const oc_model_stats *s) {
    json_key(out, first, "external_data");
    fprintf(out,
            "{\"tensors\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"unknown_length\": %" PRIu64
            ", \"locations\": [",
            s->external.tensors, s->external.bytes, s->external_unknown_length);
    for (uint64_t i = 0; i < s->nlocations; i++) {
        const oc_external_location *loc = &s->locations[i];
        fputs(i ? ",\n    {\"location\": " : "\n    {\"location\": ", out);
        oc_json_put_string(out, loc->location.data, loc->location.size);
        fprintf(out, ", \"tensors\": %" PRIu64 ", \"bytes\": %" PRIu64 "}", loc->tensors,
                loc->bytes);
    }
    fputs(s->nlocations ? "\n  ]}" : "]}", out);
}

static void json_archive(FILE *out, int *first, const oz_info *r) {
    const oz_archive_listing *a = r->listing;
    const oz_listed_entry *model;
    char buf[32];
    json_key(out, first, "archive");
    if (!a) {
        fputs("null", out);
        return;
    }
    model = &a->entries[a->model_index];
    fprintf(out,
            "{\"entries\": %" PRIu64 ", \"stored\": {\"entries\": %" PRIu64 ", \"bytes\": %" PRIu64
            "}, \"deflated\": {\"entries\": %" PRIu64 ", \"bytes\": %" PRIu64
            ", \"compressed_bytes\": %" PRIu64 "},\n    \"tensor_entries\": %" PRIu64
            ", \"deflated_tensor_entries\": %" PRIu64 ", \"min_tensor_alignment\": ",
            a->count, a->stored_entries, a->stored_bytes, a->deflated_entries, a->deflated_bytes,
            a->deflated_compressed, a->tensor_entries, a->deflated_tensor_entries);
    if (r->alignment_known)
        fprintf(out, "%" PRIu64, a->min_tensor_alignment);
    else
        fputs("null", out);
    fprintf(out, ", \"zero_copy\": %s,\n    \"model_entry\": {\"method\": ",
            a->deflated_tensor_entries ? "false" : "true");
    oc_json_put_cstring(out, oz_zip_method_name(model->zip.method, buf, sizeof buf));
    fprintf(out, ", \"size\": %" PRIu64 ", \"compressed_size\": %" PRIu64 ", \"last\": %s}}",
            model->zip.uncompressed_size, model->zip.compressed_size,
            oz_archive_listing_model_last(a) ? "true" : "false");
}

void oz_info_write_json(const oz_info *r, FILE *out) {
    const oc_model_stats *s = r->stats;
    int first = 1;
    fputc('{', out);
    json_key(out, &first, "file");
    oc_json_put_cstring(out, r->file);
    json_count(out, &first, "file_size", r->file_size);
    json_key(out, &first, "format");
    oc_json_put_cstring(out, r->archive ? "onnxz" : "onnx");
    if (r->crypt != OC_CRYPT_NONE) {
        json_key(out, &first, "encrypted");
        oc_json_put_cstring(out, oc_crypt_format_name(r->crypt));
    }
    json_int(out, &first, "ir_version", r->has_ir_version, r->ir_version);
    json_str(out, &first, "producer_name", r->has_producer_name, r->producer_name);
    json_str(out, &first, "producer_version", r->has_producer_version, r->producer_version);
    json_str(out, &first, "domain", r->has_domain, r->domain);
    json_int(out, &first, "model_version", r->has_model_version, r->model_version);
    json_opsets(out, &first, r);
    json_str(out, &first, "graph_name", r->has_graph_name, r->graph_name);
    json_count(out, &first, "nodes", s->nodes);
    json_count(out, &first, "nodes_total", s->nodes_total);
    json_count(out, &first, "initializers", s->initializers);
    json_count(out, &first, "sparse_initializers", s->sparse_initializers);
    json_count(out, &first, "inputs", s->inputs);
    json_count(out, &first, "outputs", s->outputs);
    json_count(out, &first, "value_infos", s->value_infos);
    json_count(out, &first, "functions", s->functions);
    json_count(out, &first, "training_infos", s->training_infos);
    json_count(out, &first, "metadata_props", s->metadata_props);
    json_count(out, &first, "tensors", s->tensors);
    json_count(out, &first, "tensor_bytes", s->tensor_bytes);
    json_share(out, &first, "raw_data", &s->raw);
    json_share(out, &first, "typed_data", &s->typed);
    json_external(out, &first, s);
    json_archive(out, &first, r);
    if (r->signature) { /* absent when unsigned: the document stays as it was */
        json_key(out, &first, "signature");
        oz_signature_summary_write_json(out, r->signature);
    }
    fputs("\n}\n", out);
}
