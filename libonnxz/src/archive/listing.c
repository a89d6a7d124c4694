/*
 * listing.c - an archive's entries and the tensors that point at them (onnxz/listing.h).
 */
#include "onnxz/listing.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <onnxcore/json.h>

#include "internal/archive.h"
#include "internal/error.h"
#include "internal/onnxcore_shared.h"
#include "internal/signing.h"

/* Every listing: what oz_list_path opened for it, released with it (NULL for
 * oz_archive_list's, whose caller holds them). */
typedef struct listing_box {
    oz_archive_listing pub; /* first: a listing's address is its box's */
    oz_archive *archive;    /* the entries' strings belong to its reader */
    oc_model *model;        /* the names point into it */
} listing_box;

/* One (entry, tensor) pair met while walking the model. */
typedef struct tensor_ref {
    uint64_t entry;
    uint64_t seq; /* encoding order, so the sort keeps it within an entry */
    oc_str name;
} tensor_ref;

typedef struct ref_walk {
    const oz_zip_reader *zip;
    tensor_ref *refs;
    uint64_t count, cap;
} ref_walk;

static oc_status collect_ref(void *ctx, onnx_TensorProto *t) {
    ref_walk *w = ctx;
    uint64_t index;
    /* A location that names no entry is verify's business; ls just shows no tensor. */
    if (!oz_archive_tensor_entry(w->zip, t, &index)) return OC_OK;
    if (w->count == w->cap) {
        uint64_t cap = w->cap ? w->cap * 2 : 64;
        tensor_ref *refs = realloc(w->refs, (size_t)cap * sizeof *refs);
        if (!refs) return OC_ERR_NOMEM;
        w->refs = refs;
        w->cap = cap;
    }
    w->refs[w->count].entry = index;
    w->refs[w->count].seq = w->count;
    w->refs[w->count].name = t->name;
    w->count++;
    return OC_OK;
}

static int compare_refs(const void *a, const void *b) {
    const tensor_ref *x = a, *y = b;
    if (x->entry != y->entry) return x->entry < y->entry ? -1 : 1;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

static int compare_offsets(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

uint64_t oz_offset_alignment(uint64_t offset) {
    uint64_t a = 1;
    if (offset == 0) return OZ_ALIGNMENT_CAP;
    while (a < OZ_ALIGNMENT_CAP && offset % (a * 2) == 0) a *= 2;
    return a;
}

const char *oz_zip_method_name(uint16_t method, char *buf, size_t size) {
    if (method == OZ_ZIP_STORED) return "stored";
    if (method == OZ_ZIP_DEFLATED) return "deflated";
    snprintf(buf, size, "method %u", (unsigned)method);
    return buf;
}

static oc_status nomem(oc_error *err) {
    return oc_error_set(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory while listing the archive");
}

/* Fills entries, names and the totals from the reader and the walk. */
static oc_status fill(oz_archive_listing *l, const oz_zip_reader *zip, ref_walk *w, oc_error *err) {
    uint64_t *offsets;
    oc_status st;
    l->count = oz_zip_reader_count(zip);
    l->file_size = oz_zip_reader_size(zip);
    l->entries = calloc(l->count ? (size_t)l->count : 1, sizeof *l->entries);
    l->names = malloc(w->count ? (size_t)w->count * sizeof *l->names : 1);
    offsets = malloc(l->count ? (size_t)l->count * sizeof *offsets : 1);
    if (!l->entries || !l->names || !offsets) {
        free(offsets);
        return nomem(err);
    }
    st = oz_zip_reader_find(zip, OZ_MODEL_ENTRY, &l->model_index, err);
    if (st != OC_OK) {
        free(offsets);
        return st;
    }
    if (w->count) qsort(w->refs, (size_t)w->count, sizeof *w->refs, compare_refs);
    for (uint64_t i = 0; i < w->count; i++) l->names[i] = w->refs[i].name;
    for (uint64_t i = 0, r = 0; i < l->count; i++) {
        oz_listed_entry *e = &l->entries[i];
        st = oz_zip_reader_entry(zip, i, &e->zip, err);
        if (st != OC_OK) {
            free(offsets);
            return st;
        }
        e->is_model = i == l->model_index;
        e->first_name = r;
        while (r < w->count && w->refs[r].entry == i) {
            e->ntensors++;
            r++;
        }
        offsets[i] = e->zip.local_header_offset;
        if (e->zip.method == OZ_ZIP_DEFLATED) {
            l->deflated_entries++;
            l->deflated_bytes += e->zip.uncompressed_size;
            l->deflated_compressed += e->zip.compressed_size;
        } else if (e->zip.method == OZ_ZIP_STORED) {
            l->stored_entries++;
            l->stored_bytes += e->zip.uncompressed_size;
        }
        if (e->ntensors && !e->is_model) {
            l->tensor_entries++;
            if (e->zip.method == OZ_ZIP_DEFLATED) l->deflated_tensor_entries++;
            if (e->zip.method == OZ_ZIP_STORED && e->zip.data_offset) { /* 0: not read */
                uint64_t a = oz_offset_alignment(e->zip.data_offset);
                if (l->min_tensor_alignment == 0 || a < l->min_tensor_alignment)
                    l->min_tensor_alignment = a;
            }
        }
    }
    /* Where __MODEL_PROTO sits in the file, counted by local header offsets. */
    if (l->count) qsort(offsets, (size_t)l->count, sizeof *offsets, compare_offsets);
    for (uint64_t i = 0; i < l->count; i++)
        if (offsets[i] < l->entries[l->model_index].zip.local_header_offset) l->model_file_rank++;
    free(offsets);
    return OC_OK;
}

bool oz_archive_listing_model_last(const oz_archive_listing *l) {
    return l->model_index + 1 == l->count && l->model_file_rank + 1 == l->count;
}

oc_status oz_archive_list(const oz_archive *ar, onnx_ModelProto *model, oz_archive_listing **out,
                          oc_error *err) {
    ref_walk walk;
    oc_status st;
    listing_box *box = calloc(1, sizeof *box);
    oz_archive_listing *l = box ? &box->pub : NULL;
    *out = NULL;
    if (!l) return nomem(err);
    memset(&walk, 0, sizeof walk);
    walk.zip = oz_archive_zip(ar);
    st = oc_msg_visit_tensors(&onnx_ModelProto_desc, model, collect_ref, &walk);
    st = st == OC_OK ? fill(l, walk.zip, &walk, err) : nomem(err);
    free(walk.refs);
    if (st == OC_OK) st = oz__signature_summary_archive(ar, &l->signature, err);
    if (st != OC_OK) {
        oz_archive_listing_free(l);
        return st;
    }
    *out = l;
    return OC_OK;
}

void oz_archive_listing_free(oz_archive_listing *l) {
    if (!l) return;
    listing_box *box = (listing_box *)l;
    free(l->entries);
    free(l->names);
    oz__signature_summary_free(l->signature);
    oc_model_free(box->model);
    oz_archive_close(box->archive);
    free(box);
}

oc_status oz_list_path(const char *path, const oc_parse_options *opts, oz_archive_listing **out,
                       oc_error *err) {
    oz_archive *ar = NULL;
    oc_model *model = NULL;
    if (out) *out = NULL;
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_list_path: missing argument");
    OC_PARSE_OPTS(opts, err);
    oz_zip_reader_options zo = oz__zip_options_for(opts);
    oc_parse_options po = *opts;
    po.no_copy = 1;
    po.skip_external_data = 1;
    oc_status st = oz_archive_open(path, &zo, &ar, err);
    if (st == OC_OK) st = oz_archive_load_model(ar, &po, &model, err);
    if (st == OC_OK) st = oz_archive_list(ar, oc_model_proto(model), out, err);
    if (st != OC_OK) {
        oc_model_free(model);
        oz_archive_close(ar);
        return st;
    }
    listing_box *box = (listing_box *)*out;
    box->archive = ar;
    box->model = model;
    return OC_OK;
}

void oz_signature_summary_write_json(FILE *out, const oz_signature_summary *g) {
    fputs("{\"location\": ", out);
    oc_json_put_cstring(out, g->location);
    fputs(", \"key_fingerprint\": ", out);
    if (g->key_fingerprint[0])
        oc_json_put_cstring(out, g->key_fingerprint);
    else
        fputs("null", out);
    fprintf(out, ", \"parts\": %" PRIu64 ", \"verified\": false, \"problem\": ", g->parts);
    if (g->problem)
        oc_json_put_cstring(out, g->problem);
    else
        fputs("null", out);
    fputc('}', out);
}
