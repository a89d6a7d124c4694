/*
 * reader.c - oz_reader (onnxz/reader.h): a model file of any form held open, its tensors
 * looked up through one index and read one at a time.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <onnxcore/external.h>
#include <onnxcore/http.h>
#include <onnxcore/stats.h>
#include <onnxcore/tensor.h>

#include "onnxz/reader.h"
#include "onnxz/slice.h"
#include "internal/archive.h"
#include "internal/verify.h"
#include "internal/error.h"
#include "internal/external.h"
#include "internal/source_http.h"
#include "internal/open.h"
#include "internal/options.h"
#include "internal/signing.h"
#include "internal/slice.h"
#include "internal/zipread.h"
#include "internal/options.h"
#include "onnxcore_private.h"

/* Entries up to this size are read whole by oz_reader_read_to (from a URL: one request
 * with their local header); larger stored ones are streamed through. */
#define READ_WHOLE_MAX ((uint64_t)64 << 20)

/* What tells one file from another at a path: a save renames a new file over it. */
typedef struct file_identity {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
} file_identity;

/* A data file a local .onnx was read with: its path (the model's directory, then its
 * location, which starts at `location`) and its identity then. */
typedef struct data_file {
    char *path;
    size_t location;
    file_identity id;
} data_file;

struct oz_reader {
    oz_open_info info;
    char *name;             /* the path or URL as given */
    oz_archive *archive;    /* an archive (an encrypted file's: decrypted), else NULL */
    oc_model *model;        /* the tensors read: an archive's, a URL's or an encrypted
                            * .onnx's kept as references (fetched when read), the others
                            * resolved; all references with skip_data_files */
    oc_model *references;   /* a local .onnx with external data: the model as the file holds
                            * it, decoded with model under one pair lock (L-2); else NULL */
    char *data_dir;         /* a URL's or an encrypted .onnx: where its data files are
                            * (beside it); each read opens the one its tensor names. NULL
                            * with skip_data_files: none is read */
    oc_http_options http;   /* a URL's settings */
    oc_parse_options parse; /* how the model was decoded, and a URL's data files are read */
    oc_tensor_index *index;
    bool skip_data_files; /* no data file is read */
    /* a local .onnx (L-2): the files it was read from, as they were */
    char *path;
    file_identity model_id;
    data_file *data;
    size_t ndata;
    /* opened with a trusted key (spec/signing.md G-50): an archive's signed manifest, and
     * per entry (by index) whether its digest was checked, by the first whole read */
    oz__manifest *manifest;
    atomic_uchar *checked;
    uint64_t nchecked;
};

void oz_reader_options_init(oz_reader_options *opts) {
    static const oz_reader_options defaults = OZ_READER_OPTIONS_INIT;
    *opts = defaults;
}

/* ---- L-2: the files a local .onnx was read from ---- */

static int identity_of(const char *path, file_identity *id) {
    struct stat st;
    memset(id, 0, sizeof *id);
    if (stat(path, &st) != 0) return -1;
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    id->size = st.st_size;
    id->mtime = st.st_mtim;
    id->ctime = st.st_ctim;
    return 0;
}

static bool same_file(const file_identity *a, const file_identity *b) {
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
           a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

static void data_files_clear(oz_reader *r) {
    for (size_t i = 0; i < r->ndata; i++) free(r->data[i].path);
    free(r->data);
    r->data = NULL;
    r->ndata = 0;
}

/* The data files r->references names (the distinct `location`s of its EXTERNAL tensors,
 * beside the model at r->path), with their identities now: taken at once after the load
 * that opened them, each is the file it read, but for one renamed over its name in
 * between (which the check of the model file's identity around the load catches). */
static oc_status data_files_of(oz_reader *r, oc_error *err) {
    oc_model_stats *stats = NULL;
    if (!r->references) return OC_OK;
    OC_FORWARD(oc_model_stats_collect(oc_model_proto(r->references), &stats, err));
    const char *slash = strrchr(r->path, '/');
    int dir_len = slash ? (int)(slash - r->path + 1) : 0;
    r->data = calloc(stats->nlocations ? stats->nlocations : 1, sizeof *r->data);
    for (uint64_t i = 0; r->data && i < stats->nlocations; i++) {
        const oc_str *loc = &stats->locations[i].location;
        size_t n = (size_t)dir_len + (size_t)loc->size + 1;
        data_file *d = &r->data[r->ndata];
        if (!(d->path = malloc(n))) break;
        snprintf(d->path, n, "%.*s%.*s", dir_len, r->path, (int)loc->size, loc->data);
        d->location = (size_t)dir_len;
        identity_of(d->path, &d->id); /* none (all 0): no file, which a check reports */
        r->ndata++;
    }
    bool whole = r->data && r->ndata == stats->nlocations;
    oc_model_stats_free(stats);
    if (whole) return OC_OK;
    data_files_clear(r);
    return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

/* The model of a local .onnx: with its external data mapped and, decoded from the same
 * bytes under the same pair lock, the model as the file holds it (L-2), its data files'
 * identities taken after; with skip_external_data, the model alone. */
static oc_status load_model_file(oz_reader *r, const oc_parse_options *po, oc_error *err) {
    if (po->skip_external_data) return oc_model_load_file(r->path, po, &r->model, err);
    oc_status st = oc_model_load_file_with_references(r->path, po, &r->model, &r->references, err);
    return st == OC_OK ? data_files_of(r, err) : st;
}

/* A local .onnx (load_model_file), the model file's identity taken before and after: a
 * file replaced meanwhile is opened again, up to 3 times. */
static oc_status open_model_file(oz_reader *r, const oc_parse_options *po, oc_error *err) {
    for (int tries = 0; tries < 3; tries++) {
        file_identity after;
        bool known = identity_of(r->path, &r->model_id) == 0;
        oc_status st = load_model_file(r, po, err);
        if (st != OC_OK || !known ||
            (identity_of(r->path, &after) == 0 && same_file(&r->model_id, &after)))
            return st;
        data_files_clear(r);
        oc_model_free(r->model);
        oc_model_free(r->references);
        r->model = r->references = NULL;
    }
    return oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                    "busy: the file was replaced while it was opened, again and again");
}

oc_status oz_reader_unchanged(const oz_reader *r, oc_error *err) {
    file_identity now;
    char shown[OC_QUOTE_SIZE]; /* a location is the file's text */
    if (!r || !r->path) return OC_OK;
    if (identity_of(r->path, &now) != 0 || !same_file(&r->model_id, &now))
        return oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                        "replaced since it was opened: what was read from it is no longer "
                        "there; open it again to read the new one");
    for (size_t i = 0; i < r->ndata; i++) {
        const data_file *d = &r->data[i];
        const char *loc = d->path + d->location;
        if (identity_of(d->path, &now) != 0 || !same_file(&d->id, &now))
            return oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                            "its data file '%s' was replaced since it was opened: what was "
                            "read from it is no longer there; open it again to read the new one",
                            oc_quote(loc, strlen(loc), shown, sizeof shown));
    }
    return OC_OK;
}

oc_status oz_reader_verify(oz_reader *r, const oz_open_options *opts, oz_verify_report **out,
                           oc_error *err) {
    if (out) *out = NULL;
    if (!r || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_reader_verify: missing argument");
    OZ_OPEN_OPTS(opts, err);
    oz_open_options o = *opts;
    o.parse.max_memory = r->parse.max_memory;
    o.parse.http = &r->http;
    /* a file read again by its name is checked only while it is the one opened (L-2) */
    OC_FORWARD(oz_reader_unchanged(r, err));
    oc_status st = oz__verify(r->name, r->info.kind, r->archive, &o, out, NULL, err);
    if (st == OC_OK) st = oz_reader_unchanged(r, err);
    if (st != OC_OK) {
        oz_verify_report_free(*out);
        *out = NULL;
    }
    return st;
}

/* ---- open ---- */

/* oz__model_check_fn: __MODEL_PROTO's bytes against r's manifest (G-50). */
static oc_status check_model(void *ctx, const void *data, uint64_t size, oc_error *err) {
    const oz_reader *r = ctx;
    return oz__manifest_check_bytes(r->manifest, r->name, OZ_MODEL_ENTRY, strlen(OZ_MODEL_ENTRY),
                                    NULL, data, size, err);
}

/* An archive at a path or URL: its directory and model (tensors as references to their
 * entries), as `onnxz ls` reads them; nothing read ahead. */
static oc_status open_archive(oz_reader *r, const char *path, const oc_parse_options *po,
                              const char *trust, oc_error *err) {
    oz_zip_reader_options zo = oz__zip_options_for(po);
    OC_FORWARD(oz_archive_open(path, &zo, &r->archive, err));
    r->info.is_archive = true;
    const oz_zip_reader *zip = oz_archive_zip(r->archive);
    r->info.file_size = oz_zip_reader_size(zip);
    if (trust) { /* G-50: the manifest, the set of entries and the model, before decoding */
        OC_FORWARD(oz__manifest_archive(zip, path, trust, &r->manifest, err));
        r->nchecked = oz_zip_reader_count(zip);
        if (!(r->checked = calloc(r->nchecked ? r->nchecked : 1, sizeof *r->checked)))
            return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        for (uint64_t i = 0; i < r->nchecked; i++) atomic_init(&r->checked[i], 0);
    }
    oc_parse_options o = *po;
    o.skip_external_data = 1;
    if (!r->manifest) return oz_archive_load_model(r->archive, &o, &r->model, err);
    /* the model's bytes checked as read, and those very bytes decoded (from a URL the
     * server is asked once: it cannot serve one model to the check and another to the
     * decoder) */
    return oz__archive_load_model_checked(r->archive, &o, check_model, r, &r->model, err);
}

/* Where the data files of a .onnx at path are read from when a tensor is (beside it),
 * unless skip_data_files. */
static oc_status data_dir_of(oz_reader *r, const char *path, const oz_reader_options *opts,
                             oc_error *err) {
    if (opts->skip_data_files || (r->data_dir = oc__path_dir(path))) return OC_OK;
    return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

/* An encrypted file at a path, decrypted once with opts->key: an archive inside kept open
 * in memory, its model's tensors references to its entries; a .onnx's references to its
 * data files beside it (each read opens the one its tensor names). */
static oc_status open_encrypted(oz_reader *r, const char *path, const oz_reader_options *opts,
                                oc_error *err) {
    struct stat st;
    oc_parse_options po = r->parse;
    po.skip_external_data = 1;
    r->info.file_size = stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
    OC_FORWARD(oz__encrypted_open(path, opts->key, opts->key_len, opts->crypt, &po, &r->archive,
                                  &r->model, &r->info.is_archive, err));
    return r->archive ? OC_OK : data_dir_of(r, path, opts, err);
}

/* Every other form, by oz_open: a URL's .onnx with its tensors kept as references (its
 * data files are opened by the reads, each the one its tensor names: no request for the
 * others), the rest (empty, cut inside a magic, encrypted with no key or at a URL) as
 * oz_open reports it. */
static oc_status open_other(oz_reader *r, const char *path, const oz_reader_options *opts,
                            oc_error *err) {
    oz_open_options o = OZ_OPEN_OPTIONS_INIT;
    o.parse = r->parse;
    o.key = opts->key;
    o.key_len = opts->key_len;
    o.crypt = opts->crypt;
    if (oc_is_url(path) && r->info.kind == OZ_KIND_MODEL) {
        o.parse.skip_external_data = 1;
        OC_FORWARD(data_dir_of(r, path, opts, err));
    }
    return oz_open(path, &o, &r->model, &r->info, err);
}

static oc_status open_pinned(oz_reader *r, const char *path, const oz_reader_options *opts,
                             oc_error *err);

/* r opened from path, its form told by its first bytes; an hf:// URL pinned first to the
 * commit the hub reports (spec/remote.md H-4), so that the model and every data file a
 * later read opens beside it are of that commit. */
static oc_status open_any(oz_reader *r, const char *path, const oz_reader_options *opts,
                          oc_error *err) {
    char *pinned = NULL;
    if (oc_is_url(path)) OC_FORWARD(oc__hf_pin(path, &r->http, &pinned, err));
    oc_status st = open_pinned(r, pinned ? pinned : path, opts, err);
    free(pinned);
    return st;
}

static oc_status open_pinned(oz_reader *r, const char *path, const oz_reader_options *opts,
                             oc_error *err) {
    oc_parse_options_init(&r->parse);
    r->parse.no_copy = 1;
    r->parse.max_memory = opts->max_memory;
    r->parse.prefetch = opts->prefetch;
    r->parse.http = &r->http;
    /* a file that cannot be looked at is handed to the model loader, which says why */
    if (oz_detect_path(path, &r->http, &r->info.kind, NULL) != OC_OK) r->info.kind = OZ_KIND_MODEL;
    if (oz_kind_is_archive(r->info.kind)) return open_archive(r, path, &r->parse, opts->trust, err);
    if (opts->trust && (r->info.kind != OZ_KIND_MODEL || oc_is_url(path)))
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                                      "%s: a signature is checked on read for an .onnxz archive "
                                      "(a path or a URL) or a local .onnx, not for %s "
                                      "(spec/signing.md G-54)",
                                      path, oc_is_url(path) ? "a .onnx at a URL" : "this file"));
    if (oz_kind_is_encrypted(r->info.kind, NULL) && opts->key && !oc_is_url(path))
        return open_encrypted(r, path, opts, err);
    if (r->info.kind != OZ_KIND_MODEL || oc_is_url(path)) return open_other(r, path, opts, err);
    if (!(r->path = strdup(path)))
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_parse_options po = r->parse;
    po.skip_external_data = opts->skip_data_files;
    OC_FORWARD(open_model_file(r, &po, err));
    r->info.file_size = (uint64_t)r->model_id.size;
    if (!opts->trust) return OC_OK;
    /* G-53: the model file and every data file hashed whole now, and still the ones the
     * load mapped (L-2): the reads take spans of them, checked already */
    OC_FORWARD(oz_signature_verify(path, opts->trust, NULL, NULL, err));
    return oz_reader_unchanged(r, err);
}

/* A copy of the caller's HTTP settings, by their size (internal/options.h). */
static oc_status http_adopt(oz_reader *r, const oc_http_options *http, oc_error *err) {
    oc_status st = oc__http_opts(&http, &r->http, err);
    if (st == OC_OK && http != &r->http) r->http = *http;
    return st;
}

oc_status oz_reader_open(const char *path, const oz_reader_options *opts, oz_reader **out,
                         oz_open_info *info, oc_error *err) {
    oz_reader_options local;
    if (out) *out = NULL;
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_reader_open: missing argument");
    if (info && oc__output_check(info, info->size, "oz_open_info", err) != OC_OK)
        return OC_ERR_INVALID_ARG;
    OC_FORWARD(oz__reader_opts(&opts, &local, err));
    oz_reader *r = calloc(1, sizeof *r);
    if (!r) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oz_open_info_init(&r->info);
    oc_status st = http_adopt(r, opts->http, err);
    if (st == OC_OK && !(r->name = strdup(path)))
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    r->skip_data_files = opts->skip_data_files;
    if (st == OC_OK) st = open_any(r, path, opts, err);
    if (st == OC_OK)
        st = oc_tensor_index_new(&onnx_ModelProto_desc, oc_model_proto(r->model), &r->index, err);
    if (info) oc__output_put(info, &r->info, sizeof r->info);
    if (st != OC_OK) {
        oz_reader_close(r);
        return st;
    }
    *out = r;
    return OC_OK;
}

void oz_reader_close(oz_reader *r) {
    if (!r) return;
    oc_tensor_index_free(r->index);
    free(r->data_dir);
    oc_model_free(r->model);
    oc_model_free(r->references);
    oz_archive_close(r->archive);
    oz__manifest_free(r->manifest);
    free(r->checked);
    data_files_clear(r);
    free(r->path);
    free(r->name);
    free(r);
}

/* ---- what was opened ---- */

void oz_reader_info(const oz_reader *r, oz_open_info *info) {
    if (r && info) oc__output_put(info, &r->info, sizeof r->info);
}

oc_model *oz_reader_model(const oz_reader *r) {
    return !r ? NULL : r->references ? r->references : r->model;
}

const oz_archive *oz_reader_archive(const oz_reader *r) { return r ? r->archive : NULL; }

const char *oz__reader_name(const oz_reader *r) { return r->name; }

bool oz__reader_fetches(const oz_reader *r, const onnx_TensorProto *t) {
    const oz_zip_reader *zip = r->archive ? oz_archive_zip(r->archive) : NULL;
    uint64_t index;
    oz_zip_entry e;
    if (!oc_tensor_is_external(t)) return false;
    if (r->data_dir || (r->archive && oc_is_url(r->name))) return true;
    /* A DEFLATED entry (any not STORED): inflated anew at each read, as a stream. */
    return zip && oz_archive_tensor_entry(zip, t, &index) &&
           oz_zip_reader_entry(zip, index, &e, NULL) == OC_OK && e.method != OZ_ZIP_STORED;
}

uint64_t oz_reader_count(const oz_reader *r) { return r ? oc_tensor_index_count(r->index) : 0; }

const onnx_TensorProto *oz_reader_at(const oz_reader *r, uint64_t i) {
    return r && i < oc_tensor_index_count(r->index) ? oc_tensor_index_at(r->index, i) : NULL;
}

const onnx_TensorProto *oz_reader_find(const oz_reader *r, const char *name, size_t len) {
    return r && (name || !len) ? oc_tensor_index_find(r->index, name ? name : "", len) : NULL;
}

/* ---- reads ---- */

/* Where t's bytes are fetched from, while a read runs: an archive's entry, or a URL's data
 * file opened for this read (own). fetch.size is NULL for a tensor r holds (resolved, or
 * inline). */
typedef struct tensor_fetch {
    oc_tensor_fetch fetch;
    oc_external_data *own;
} tensor_fetch;

/* The one data file t names, checked as a load checks it (E-10..E-18), opened: from a URL
 * its tail, then t's range when read. Each read has its own: reads run side by side. */
static oc_status fetch_open(const oz_reader *r, const onnx_TensorProto *t, tensor_fetch *f,
                            oc_error *err) {
    f->fetch = (oc_tensor_fetch){NULL, NULL, NULL};
    f->own = NULL;
    if (!oc_tensor_is_external(t)) return OC_OK;
    if (r->archive) {
        oz_archive_fetch(r->archive, &f->fetch);
    } else if (r->data_dir) {
        OC_FORWARD(
            oc_external_data_open(&onnx_TensorProto_desc, t, r->data_dir, &r->parse, &f->own, err));
        oc_external_data_fetch(f->own, &f->fetch);
    }
    return OC_OK;
}

static void fetch_close(tensor_fetch *f) { oc_external_data_close(f->own); }

/* The arguments of a read, and a tensor it can read: not one in a data file that
 * skip_data_files left unopened. */
static oc_status check_args(const oz_reader *r, const onnx_TensorProto *t, const void *out,
                            const char *what, oc_error *err) {
    char name[OC_QUOTE_SIZE];
    if (!r || !t || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "%s: missing argument", what);
    if (r->skip_data_files && !r->archive && oc_tensor_is_external(t))
        return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                        "tensor '%s' is in a data file, which this reader was opened without "
                        "(skip_data_files)",
                        oc_quote(t->name.data, t->name.size, name, sizeof name));
    return OC_OK;
}

/* The index of the entry t's bytes are in, when r was opened with a trusted key and t's
 * entry has not been checked yet (G-51); false otherwise. */
static bool entry_unchecked(const oz_reader *r, const onnx_TensorProto *t, uint64_t *index) {
    return r->manifest && oc_tensor_is_external(t) &&
           oz_archive_tensor_entry(oz_archive_zip(r->archive), t, index) && *index < r->nchecked &&
           !atomic_load(&r->checked[*index]);
}

/* Entry index (t's) against the manifest with the SHA-256 of what was read of it, whole;
 * marked checked when it matches. */
static oc_status check_digest(const oz_reader *r, const onnx_TensorProto *t, uint64_t index,
                              const uint8_t digest[32], oc_error *err) {
    oz_zip_entry e;
    OC_FORWARD(oz_zip_reader_entry(oz_archive_zip(r->archive), index, &e, err));
    OC_FORWARD(oz__manifest_check(r->manifest, r->name, e.name, e.name_len, t, digest, err));
    atomic_store(&r->checked[index], 1);
    return OC_OK;
}

/* The n bytes at data, all of t's entry as read, checked on their first read (G-51). */
static oc_status check_read(const oz_reader *r, const onnx_TensorProto *t, const void *data,
                            uint64_t n, oc_error *err) {
    uint64_t index;
    oz_zip_entry e;
    if (!entry_unchecked(r, t, &index)) return OC_OK;
    OC_FORWARD(oz_zip_reader_entry(oz_archive_zip(r->archive), index, &e, err));
    OC_FORWARD(oz__manifest_check_bytes(r->manifest, r->name, e.name, e.name_len, t, data, n, err));
    atomic_store(&r->checked[index], 1);
    return OC_OK;
}

/* t's bytes, whole, W-40 checked first. t is r's: every tensor of r's model is resolved,
 * inline, or a reference to an archive's entry or a URL's data file, so no read changes
 * it. */
static oc_status read_bytes(const oz_reader *r, const onnx_TensorProto *t, oc_bytes *out,
                            oc_error *err) {
    if (r->data_dir && oc_tensor_is_external(t)) {
        tensor_fetch f;
        OC_FORWARD(fetch_open(r, t, &f, err));
        oc_status st = oc_tensor_check_size_fetched(t, &f.fetch, err);
        if (st == OC_OK) st = oz__read_fetched(&f.fetch, t, out, err);
        fetch_close(&f);
        return st;
    }
    oz_tensor_source src = {r->archive, NULL, NULL, NULL}; /* an entry: a span of the mapping */
    OC_FORWARD(oz_tensor_read((onnx_TensorProto *)(uintptr_t)t, &src, out, err));
    oc_status st = check_read(r, t, out->data, out->size, err);
    if (st != OC_OK) oc_bytes_release(out);
    return st;
}

oc_status oz__reader_check_entry(oz_reader *r, const onnx_TensorProto *t, oc_error *err) {
    uint64_t index;
    if (!entry_unchecked(r, t, &index)) return OC_OK;
    oc_bytes b = {0};
    oc_status st = read_bytes(r, t, &b, err);
    oc_bytes_release(&b);
    return st;
}

oc_status oz_reader_read(oz_reader *r, const onnx_TensorProto *t, oc_bytes *out, oc_error *err) {
    OC_FORWARD(check_args(r, t, out, "oz_reader_read", err));
    return read_bytes(r, t, out, err);
}

oc_status oz_reader_size(oz_reader *r, const onnx_TensorProto *t, uint64_t *size, oc_error *err) {
    tensor_fetch f;
    OC_FORWARD(check_args(r, t, size, "oz_reader_size", err));
    OC_FORWARD(fetch_open(r, t, &f, err));
    oc_status st;
    if (f.fetch.size) {
        st = oc_tensor_check_size_fetched(t, &f.fetch, err);
        if (st == OC_OK) st = f.fetch.size(f.fetch.ctx, t, size, err);
    } else if (oc_tensor_is_typed(t)) { /* float_data...: counted, not converted */
        st = oc_tensor_typed_size(t, size, err);
    } else { /* held in memory or a mapping: a span shares it */
        oc_bytes b = {0};
        st = read_bytes(r, t, &b, err);
        *size = b.size;
        oc_bytes_release(&b);
    }
    fetch_close(&f);
    return st;
}

/* Whether t's entry in r's archive is one to stream: stored and large. */
static bool entry_streams(const oz_reader *r, const onnx_TensorProto *t) {
    const oz_zip_reader *zip = oz_archive_zip(r->archive);
    uint64_t index;
    oz_zip_entry e;
    return oz_archive_tensor_entry(zip, t, &index) &&
           oz_zip_reader_entry(zip, index, &e, NULL) == OC_OK && e.method == OZ_ZIP_STORED &&
           e.uncompressed_size > READ_WHOLE_MAX;
}

/* t's bytes streamed from where f fetches them, W-40 checked first. */
/* A write that hashes what passes on its way to the caller's. */
typedef struct hashing_write {
    oc__sha256 *h;
    oc_write_fn write;
    void *ctx;
} hashing_write;

static oc_status hash_and_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    hashing_write *w = ctx;
    OC_FORWARD(oc__sha256_update(w->h, data, size, err));
    return w->write(w->ctx, data, size, err);
}

static oc_status stream_fetched(const oz_reader *r, const tensor_fetch *f,
                                const onnx_TensorProto *t, oc_write_fn write, void *ctx,
                                oc_error *err) {
    uint64_t n = 0, index;
    uint8_t digest[32];
    OC_FORWARD(oc_tensor_check_size_fetched(t, &f->fetch, err));
    OC_FORWARD(f->fetch.size(f->fetch.ctx, t, &n, err));
    if (!entry_unchecked(r, t, &index)) return oz__stream_exact(&f->fetch, t, n, write, ctx, err);
    /* G-51: hashed as it streams; a digest that differs fails the read at its end */
    hashing_write w = {NULL, write, ctx};
    oc_status st = oc__sha256_new(&w.h, err);
    if (st == OC_OK) st = oz__stream_exact(&f->fetch, t, n, hash_and_write, &w, err);
    if (st == OC_OK) st = oc__sha256_final(w.h, digest, err);
    oc__sha256_free(w.h);
    return st == OC_OK ? check_digest(r, t, index, digest, err) : st;
}

oc_status oz_reader_read_to(oz_reader *r, const onnx_TensorProto *t, oc_write_fn write, void *ctx,
                            oc_error *err) {
    tensor_fetch f;
    OC_FORWARD(check_args(r, t, (const void *)(uintptr_t)write, "oz_reader_read_to", err));
    OC_FORWARD(fetch_open(r, t, &f, err));
    oc_status st;
    if (f.fetch.stream && (f.own || entry_streams(r, t))) {
        st = stream_fetched(r, &f, t, write, ctx, err);
    } else {
        oc_bytes b = {0};
        st = read_bytes(r, t, &b, err);
        if (st == OC_OK) st = oc_bytes_write(&b, write, ctx, err);
        oc_bytes_release(&b);
    }
    fetch_close(&f);
    return st;
}

/* ---- slices (onnxz/slice.h) ---- */

/* Where a tensor's bytes can be read at offsets without the rest of them: an archive's
 * entry (its reader and index; a STORED one's data also as the archive's source at base)
 * or a URL's data file (opened for this read: ranged_close); none: the tensor is read
 * whole. */
typedef struct ranged {
    oc_source *src;
    uint64_t base;
    oc_external_data *files;
    const oz_zip_reader *zip; /* an archive's entry, STORED or DEFLATED */
    uint64_t index;
} ranged;

static oc_status ranged_of(const oz_reader *r, const onnx_TensorProto *t, ranged *out,
                           oc_error *err) {
    const oz_zip_reader *zip = r->archive ? oz_archive_zip(r->archive) : NULL;
    uint64_t index;
    oz_zip_entry e;
    *out = (ranged){NULL, 0, NULL, NULL, 0};
    if (!oc_tensor_is_external(t)) return OC_OK;
    if (r->data_dir)
        return oc_external_data_open(&onnx_TensorProto_desc, t, r->data_dir, &r->parse, &out->files,
                                     err);
    if (!zip || !oz_archive_tensor_entry(zip, t, &index)) return OC_OK;
    OC_FORWARD(oz_zip_reader_local(zip, index, err)); /* from a URL: its data_offset */
    OC_FORWARD(oz_zip_reader_entry(zip, index, &e, err));
    if (e.method == OZ_ZIP_STORED)
        *out = (ranged){oz__zip_reader_source(zip), e.data_offset, NULL, NULL, 0};
    out->zip = zip;
    out->index = index;
    return OC_OK;
}

static void ranged_close(ranged *rg) { oc_external_data_close(rg->files); }

oc_status oz__reader_data_open(const oz_reader *r, const onnx_TensorProto *const *ts, size_t n,
                               oc_external_data **out, oc_error *err) {
    *out = NULL;
    if (!r->data_dir || n == 0) return OC_OK;
    oc_arena *a = oc_arena_new();
    onnx_GraphProto *g = a ? OC_NEW(a, GraphProto) : NULL;
    for (size_t i = 0; g && i < n; i++) {
        const onnx_TensorProto **item = oc_array_push(a, &g->initializer, sizeof *item);
        if (!item)
            g = NULL;
        else
            *item = ts[i];
    }
    oc_status st =
        g ? oc_external_data_open(&onnx_GraphProto_desc, g, r->data_dir, &r->parse, out, err)
          : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_arena_free(a);
    return st;
}

oc_status oz__reader_ranged(const oz_reader *r, const onnx_TensorProto *t, oc_external_data *data,
                            oc_source **src, uint64_t *base, oc_external_data **files,
                            const char **entry, uint32_t *crc, oc_error *err) {
    ranged rg;
    oz_zip_entry e;
    *src = NULL;
    *files = NULL;
    *entry = NULL;
    if (data && r->data_dir && oc_tensor_is_external(t))
        return oc__external_data_source(data, t, src, base, err);
    OC_FORWARD(ranged_of(r, t, &rg, err));
    *src = rg.src;
    *base = rg.base;
    *files = rg.files;
    if (rg.src && rg.zip && (rg.src->caps & OC_SOURCE_REMOTE) &&
        oz_zip_reader_entry(rg.zip, rg.index, &e, NULL) == OC_OK) { /* */
        *entry = e.name;
        *crc = e.crc32;
    }
    return rg.files ? oc__external_data_source(rg.files, t, src, base, err) : OC_OK;
}

/* The tensor's byte count, as oz_reader_size checks it, is the one its dims make. */
static oc_status check_whole(oz_reader *r, const oz_slice *s, oc_error *err) {
    const onnx_TensorProto *t = oz__slice_tensor(s);
    uint64_t have = 0;
    OC_FORWARD(oz_reader_size(r, t, &have, err));
    if (have == oz__slice_whole(s)) return OC_OK;
    char name[OC_QUOTE_SIZE];
    return oc__fail_rule(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "W-40",
                         "tensor '%s': its data holds %llu bytes, its dims make %llu",
                         oc_quote(t->name.data, t->name.size, name, sizeof name),
                         (unsigned long long)have, (unsigned long long)oz__slice_whole(s));
}

/* The slice is the whole tensor: read, it is checked as a whole read is (Z-79). */
static bool slice_is_whole(const oz_slice *s) { return oz_slice_size(s) == oz__slice_whole(s); }

/* Where the runs of a slice are gathered: from rg, or from the whole tensor's bytes. */
typedef struct gather {
    const onnx_TensorProto *t;
    const ranged *rg;
    const oc_bytes *whole; /* NULL: read from rg */
    uint8_t *dst;
    uint64_t done;
} gather;

static oc_status gather_run(gather *g, uint64_t at, uint64_t n, oc_error *err) {
    uint8_t *to = g->dst + g->done;
    g->done += n;
    if (g->whole) {
        memcpy(to, g->whole->data + at, (size_t)n);
        return OC_OK;
    }
    if (g->rg->src) return oc_source_read(g->rg->src, g->rg->base + at, to, n, err);
    return oc__external_data_read_at(g->rg->files, g->t, at, to, n, err);
}

/* Each run of s in order, adjacent ones joined (from a URL: one request each). */
static oc_status gather_runs(const oz_slice *s, gather *g, oc_error *err) {
    uint64_t at = 0, n = 0;
    for (uint64_t i = 0; i < oz_slice_runs(s); i++) {
        uint64_t a, m;
        oz_slice_run(s, i, &a, &m);
        if (n && a == at + n) {
            n += m;
            continue;
        }
        if (n) OC_FORWARD(gather_run(g, at, n, err));
        at = a;
        n = m;
    }
    return n ? gather_run(g, at, n, err) : OC_OK;
}

/* The runs of a slice picked from the entry's bytes as they stream past, in order (the
 * runs rise through the tensor): run i is [at, at + n), pos the entry's offset of the
 * next byte to come. */
typedef struct picker {
    const oz_slice *s;
    uint64_t i, at, n, pos;
    uint8_t *dst;
} picker;

static oc_status pick_runs(void *ctx, const void *data, uint64_t size, oc_error *err) {
    (void)err;
    picker *p = ctx;
    const uint8_t *b = data;
    uint64_t end = p->pos + size;
    while (p->i < oz_slice_runs(p->s)) {
        uint64_t lo = p->at > p->pos ? p->at : p->pos, hi = p->at + p->n < end ? p->at + p->n : end;
        if (lo >= end) break; /* the run starts past this piece */
        if (lo < hi) {
            memcpy(p->dst, b + (lo - p->pos), (size_t)(hi - lo));
            p->dst += hi - lo;
        }
        if (hi < p->at + p->n) break; /* the rest of the run is in the next piece */
        if (++p->i < oz_slice_runs(p->s)) oz_slice_run(p->s, p->i, &p->at, &p->n);
    }
    p->pos = end;
    return OC_OK;
}

/* s's bytes streamed out of its archive entry, from its first run's first byte to its
 * last run's last (a DEFLATED entry inflated that far and no further), into dst. */
static oc_status stream_runs(const ranged *rg, const oz_slice *s, uint8_t *dst, oc_error *err) {
    picker p = {s, 0, 0, 0, 0, dst};
    uint64_t last_at, last_n;
    oz_slice_run(s, 0, &p.at, &p.n);
    oz_slice_run(s, oz_slice_runs(s) - 1, &last_at, &last_n);
    p.pos = p.at;
    return oz__zip_reader_read_part(rg->zip, rg->index, p.at, last_at + last_n - p.at, pick_runs,
                                    &p, err);
}

/* The runs of s from a URL (rg: an entry of its archive, or its data file), all at once
 * (oc_source_read_pieces): touching ones one range request, the requests on the source's
 * parallel connections, instead of one request after another. */
static oc_status runs_at_once(const oz_slice *s, const ranged *rg, uint8_t *dst, oc_error *err) {
    oc_source *src = rg->src;
    uint64_t base = rg->base, at = 0, n = 0, done = 0;
    size_t count = 0, failed = 0;
    if (rg->files)
        OC_FORWARD(oc__external_data_source(rg->files, oz__slice_tensor(s), &src, &base, err));
    oc_source_piece *p = malloc((size_t)oz_slice_runs(s) * sizeof *p);
    if (!p) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    for (uint64_t i = 0; i <= oz_slice_runs(s); i++) {
        uint64_t a = 0, m = 0;
        if (i < oz_slice_runs(s)) oz_slice_run(s, i, &a, &m);
        if (n && a == at + n && i < oz_slice_runs(s)) {
            n += m;
            continue;
        }
        if (n) p[count++] = (oc_source_piece){base + at, n, dst + done};
        done += n;
        at = a;
        n = m;
    }
    oc_status st = oc_source_read_pieces(src, p, count, &failed, err);
    free(p);
    return st;
}

/* s's bytes into dst (oz_slice_size(s) of them, not 0), its tensor's size checked
 * already. */
static oc_status slice_into(oz_reader *r, const oz_slice *s, uint8_t *dst, oc_error *err) {
    const onnx_TensorProto *t = oz__slice_tensor(s);
    ranged rg;
    gather g = {t, &rg, NULL, dst, 0};
    OC_FORWARD(ranged_of(r, t, &rg, err));
    if (rg.zip && (!rg.src || slice_is_whole(s))) /* DEFLATED, or checked whole */
        return stream_runs(&rg, s, dst, err);
    if ((rg.src || rg.files) && oz_slice_runs(s) > 1 && oc_is_url(r->name)) {
        oc_status st = runs_at_once(s, &rg, dst, err);
        ranged_close(&rg);
        return st;
    }
    if (rg.src || rg.files) {
        oc_status st = gather_runs(s, &g, err);
        ranged_close(&rg);
        return st;
    }
    oc_bytes whole = {0};
    OC_FORWARD(read_bytes(r, t, &whole, err));
    g.whole = &whole;
    oc_status st = gather_runs(s, &g, err);
    oc_bytes_release(&whole);
    return st;
}

/* The pickers of several slices of one entry, fed by one stream of it. */
typedef struct pickers {
    picker *p;
    size_t n;
} pickers;

static oc_status pick_all(void *ctx, const void *data, uint64_t size, oc_error *err) {
    pickers *ps = ctx;
    for (size_t i = 0; i < ps->n; i++) OC_FORWARD(pick_runs(&ps->p[i], data, size, err));
    return OC_OK;
}

oc_status oz__reader_slices_into(oz_reader *r, const oz_slice *const *ss, uint8_t *const *dsts,
                                 size_t n, oc_error *err) {
    const onnx_TensorProto *t = n ? oz__slice_tensor(ss[0]) : NULL;
    uint64_t from = UINT64_MAX, to = 0, at, len;
    bool whole = false;
    ranged rg;
    if (!t) return OC_OK;
    OC_FORWARD(ranged_of(r, t, &rg, err));
    for (size_t i = 0; i < n; i++) {
        if (!oz_slice_size(ss[i])) continue;
        whole |= slice_is_whole(ss[i]);
        oz_slice_run(ss[i], 0, &at, &len);
        from = at < from ? at : from;
        oz_slice_run(ss[i], oz_slice_runs(ss[i]) - 1, &at, &len);
        to = at + len > to ? at + len : to;
    }
    /* One pass only over a DEFLATED entry, and only where it checks no more than the
     * requests would alone: all of the entry is checked (Z-77) only when one of them
     * takes all of it (Z-79). */
    bool one = n > 1 && rg.zip && !rg.src && from < to &&
               (whole || from > 0 || to < oz__slice_whole(ss[0]));
    ranged_close(&rg);
    if (!one) {
        for (size_t i = 0; i < n; i++)
            if (oz_slice_size(ss[i])) OC_FORWARD(slice_into(r, ss[i], dsts[i], err));
        return OC_OK;
    }
    pickers ps = {calloc(n, sizeof(picker)), n};
    if (!ps.p) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    for (size_t i = 0; i < n; i++) {
        ps.p[i] = (picker){ss[i], 0, 0, 0, from, dsts[i]};
        if (oz_slice_runs(ss[i])) oz_slice_run(ss[i], 0, &ps.p[i].at, &ps.p[i].n);
    }
    oc_status st = oz__zip_reader_read_part(rg.zip, rg.index, from, to - from, pick_all, &ps, err);
    free(ps.p);
    return st;
}

/* A slice of one run, where it can share what holds it: a span of the archive's source
 * (a mapping) or of the tensor's bytes as read (a mapping, the decrypted file); true
 * when *out is set (or st failed). A part of a DEFLATED entry is not (it would inflate
 * the whole entry), nor one of a URL's data file. */
static bool one_run(oz_reader *r, const oz_slice *s, oc_bytes *out, oc_status *st, oc_error *err) {
    const onnx_TensorProto *t = oz__slice_tensor(s);
    uint64_t at, n;
    ranged rg;
    if (oz_slice_runs(s) != 1 || (r->data_dir && oc_tensor_is_external(t))) return false;
    oz_slice_run(s, 0, &at, &n);
    if ((*st = ranged_of(r, t, &rg, err)) != OC_OK) return true;
    if (rg.zip && !rg.src && !slice_is_whole(s)) return false;
    if (rg.src && !slice_is_whole(s)) {
        *st = oc_source_map(rg.src, rg.base + at, n, out, err); /* a mapping, else a read */
        return true;
    }
    oc_bytes whole = {0}; /* read as oz_reader_read reads it, checked as it checks it */
    if ((*st = read_bytes(r, t, &whole, err)) != OC_OK) return true;
    if (whole.mode == OC_BYTES_SHARED)
        oc_bytes_set_shared(out, whole.data + at, n, whole.owner);
    else if (whole.mode == OC_BYTES_BORROWED)
        oc_bytes_set_borrowed(out, whole.data + at, n);
    else if (n == whole.size)
        oc_bytes_move(out, &whole);
    else
        *st = oc_bytes_set_copy(out, whole.data + at, n, err);
    oc_bytes_release(&whole);
    return true;
}

oc_status oz_reader_read_slice(oz_reader *r, const oz_slice *s, oc_bytes *out, oc_error *err) {
    if (!r || !s || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_reader_read_slice: missing argument");
    OC_FORWARD(check_whole(r, s, err));
    OC_FORWARD(oz__reader_check_entry(r, oz__slice_tensor(s), err));
    oc_bytes_release(out);
    oc_status st = OC_OK;
    if (oz_slice_size(s) == 0 || one_run(r, s, out, &st, err)) return st;
    uint8_t *dst;
    oc_bytes b = {0};
    OC_FORWARD(oc_bytes_set_alloc(&b, oz_slice_size(s), &dst, err));
    st = slice_into(r, s, dst, err);
    if (st == OC_OK)
        oc_bytes_move(out, &b);
    else
        oc_bytes_release(&b);
    return st;
}

oc_status oz_reader_read_slice_into(oz_reader *r, const oz_slice *s, void *buf, uint64_t cap,
                                    oc_error *err) {
    if (!r || !s || (!buf && cap))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_reader_read_slice_into: missing argument");
    if (cap < oz_slice_size(s))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_reader_read_slice_into: a buffer of %llu bytes for a slice of %llu",
                        (unsigned long long)cap, (unsigned long long)oz_slice_size(s));
    OC_FORWARD(check_whole(r, s, err));
    OC_FORWARD(oz__reader_check_entry(r, oz__slice_tensor(s), err));
    return oz_slice_size(s) ? slice_into(r, s, buf, err) : OC_OK;
}
