/*
 * stub.c - a stub of an archive and the check of its references (onnxz/stub.h,
 * spec/onnxz.md A-60..A-63).
 */
#include "onnxz/stub.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/options.h"
#include "internal/metadata.h"
#include "internal/archive.h"
#include "internal/path_safety.h"
#include "internal/zipread.h"
#include "internal/error.h"
#include "onnxcore_private.h"
#include "onnxz/archive.h"
#include "onnxz/convert.h"
#include "onnxz/open.h"

static oc_status nomem(oc_error *err) {
    return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

/* ---- the records (A-61) ---------------------------------------------------------- */

typedef struct stub_record {
    uint64_t offset; /* the entry's data offset in the archive */
    uint64_t length; /* its size */
    uint32_t crc32;  /* its CRC-32, from the central directory */
    char *name;      /* the entry's name, NUL-terminated, owned */
} stub_record;

/* Zero-initialised is empty. */
typedef struct stub_records {
    stub_record *items;
    uint64_t count;
    uint64_t capacity;
} stub_records;

static oc_status records_add(stub_records *r, const oz_zip_entry *e) {
    stub_record *rec;
    if (r->count == r->capacity) {
        uint64_t cap = r->capacity ? 2 * r->capacity : 16;
        stub_record *items = realloc(r->items, (size_t)cap * sizeof *items);
        if (!items) return OC_ERR_NOMEM;
        r->items = items;
        r->capacity = cap;
    }
    rec = &r->items[r->count];
    rec->name = malloc((size_t)e->name_len + 1);
    if (!rec->name) return OC_ERR_NOMEM;
    memcpy(rec->name, e->name, e->name_len);
    rec->name[e->name_len] = '\0';
    rec->offset = e->data_offset;
    rec->length = e->uncompressed_size;
    rec->crc32 = e->crc32;
    r->count++;
    return OC_OK;
}

static void records_free(stub_records *r) {
    for (uint64_t i = 0; i < r->count; i++) free(r->items[i].name);
    free(r->items);
    memset(r, 0, sizeof *r);
}

static int by_offset(const void *a, const void *b) {
    const stub_record *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Sets the model's OZ_STUB_RECORD_KEY to the records: one line per entry, by offset
 * (tensors that share an entry share its line). OC_OK or OC_ERR_NOMEM. */
static oc_status records_attach(const stub_records *r, oc_model *model) {
    stub_record *sorted;
    char *text, *p;
    size_t size = 1;
    oc_status st;
    if (r->count == 0) return OC_OK;
    sorted = malloc((size_t)r->count * sizeof *sorted);
    if (!sorted) return OC_ERR_NOMEM;
    memcpy(sorted, r->items, (size_t)r->count * sizeof *sorted);
    qsort(sorted, (size_t)r->count, sizeof *sorted, by_offset);
    for (uint64_t i = 0; i < r->count; i++) size += 60 + strlen(sorted[i].name);
    p = text = malloc(size);
    if (!text) {
        free(sorted);
        return OC_ERR_NOMEM;
    }
    *p = '\0';
    for (uint64_t i = 0; i < r->count; i++) {
        if (i > 0 && sorted[i].offset == sorted[i - 1].offset) continue;
        p += sprintf(p, "%" PRIu64 " %" PRIu64 " %08" PRIx32 " %s\n", sorted[i].offset,
                     sorted[i].length, sorted[i].crc32, sorted[i].name);
    }
    st = oz__metadata_set(oc_model_arena(model), oc_model_proto(model), OZ_STUB_RECORD_KEY,
                          strlen(OZ_STUB_RECORD_KEY), text);
    free(text);
    free(sorted);
    return st;
}

/* ---- oz_stub_file ---------------------------------------------------------------- */

void oz_stub_options_init(oz_stub_options *opts) {
    static const oz_stub_options defaults = OZ_STUB_OPTIONS_INIT;
    *opts = defaults;
}

typedef struct stub_ctx {
    const oz_zip_reader *zip;
    oc_arena *arena;
    const char *archive_name; /* the archive's file name, the new location */
    stub_records records;     /* the entries used, for the check of A-62 */
    uint64_t tensors;
    uint64_t bytes;
    oc_error *err;
} stub_ctx;

/* Sets every external_data entry with this key to value, adding one when there is none. */
static oc_status set_ext(oc_arena *arena, onnx_TensorProto *t, const char *key, const char *value) {
    int found = 0;
    for (uint64_t i = 0; i < t->external_data.count; i++) {
        onnx_StringStringEntryProto *e = t->external_data.items[i];
        if (!e || e->key.size != strlen(key) || memcmp(e->key.data, key, e->key.size) != 0)
            continue;
        if (oc_str_set_cstr(arena, &e->value, value) != OC_OK) return OC_ERR_NOMEM;
        OC_SET_HAS(StringStringEntryProto, e, value);
        found = 1;
    }
    if (!found) {
        onnx_StringStringEntryProto *e = OC_ADD(arena, StringStringEntryProto, t->external_data);
        if (!e || oc_str_set_cstr(arena, &e->key, key) != OC_OK ||
            oc_str_set_cstr(arena, &e->value, value) != OC_OK)
            return OC_ERR_NOMEM;
        OC_SET_HAS(StringStringEntryProto, e, key);
        OC_SET_HAS(StringStringEntryProto, e, value);
    }
    return OC_OK;
}

/* The STORED entry an external tensor's location names, into *entry. */
static oc_status tensor_entry(stub_ctx *ctx, const onnx_TensorProto *t, const char *qt,
                              oz_zip_entry *entry) {
    const oc_str *loc = oc_tensor_external_value(t, "location");
    char qe[OC_QUOTE_SIZE];
    uint64_t index;
    oc_status st = OC_ERR_NOT_FOUND;
    if (!loc)
        return oc__fail(ctx->err, OC_ERR_MALFORMED, OC_NO_OFFSET,
                        "tensor '%s' is external without a location", qt);
    if (!memchr(loc->data, '\0', loc->size)) {
        char *name = malloc(loc->size + 1);
        if (!name) return nomem(ctx->err);
        memcpy(name, loc->data, loc->size);
        name[loc->size] = '\0';
        st = oz_zip_reader_find(ctx->zip, name, &index, NULL);
        free(name);
    }
    if (st == OC_OK) st = oz_zip_reader_entry(ctx->zip, index, entry, NULL);
    if (st != OC_OK)
        return oc__fail(ctx->err, OC_ERR_NOT_FOUND, OC_NO_OFFSET,
                        "tensor '%s' names the entry '%s', which the archive does not have", qt,
                        oc_quote(loc->data, loc->size, qe, sizeof qe));
    oc_quote(entry->name, entry->name_len, qe, sizeof qe);
    if (entry->method != OZ_ZIP_STORED)
        return oc__fail(ctx->err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                        "entry '%s' of tensor '%s' is deflated, not stored: its bytes are not "
                        "in the file as they are (rewrite the archive with stored entries)",
                        qe, qt);
    if (memchr(entry->name, '\n', entry->name_len))
        return oc__fail_rule(ctx->err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET, "A-61",
                             "entry '%s' of tensor '%s' has a line break in its name: the "
                             "stub cannot record it",
                             qe, qt);
    return OC_OK;
}

/* Points an external tensor at its entry's bytes in the archive file. */
static oc_status point_into_archive(void *vctx, onnx_TensorProto *t) {
    stub_ctx *ctx = vctx;
    char num[32], qt[OC_QUOTE_SIZE];
    oz_zip_entry entry;
    oc_status st;
    if (!oc_tensor_is_external(t)) return OC_OK;
    oc_quote(t->name.data, t->name.size, qt, sizeof qt);
    OC_FORWARD(tensor_entry(ctx, t, qt, &entry));
    st = set_ext(ctx->arena, t, "location", ctx->archive_name);
    snprintf(num, sizeof num, "%" PRIu64, entry.data_offset);
    if (st == OC_OK) st = set_ext(ctx->arena, t, "offset", num);
    snprintf(num, sizeof num, "%" PRIu64, entry.uncompressed_size);
    if (st == OC_OK) st = set_ext(ctx->arena, t, "length", num);
    if (st == OC_OK) st = records_add(&ctx->records, &entry);
    if (st != OC_OK) return nomem(ctx->err);
    ctx->tensors++;
    ctx->bytes += entry.uncompressed_size;
    return OC_OK;
}

static bool same_file(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The archive and OUT before anything is read: OUT a .onnx beside the archive,
 * not the archive itself; the archive an unencrypted .onnxz by content. */
static oc_status check_files(const char *archive, const char *out, oz_stub_info *found,
                             oc_error *err) {
    oz_form named = oz_form_named(out);
    oz_kind kind;
    oc_crypt_format crypt;
    struct stat sa, so;
    if (out[0] == '\0')
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "the output file name is empty");
    if (named == OZ_FORM_ONNXZ || named == OZ_FORM_ONNXC) {
        found->out_misnamed = true;
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "is named as an %s; a stub is a .onnx model: name it *.onnx",
                        named == OZ_FORM_ONNXZ ? ".onnxz archive" : "encrypted .onnxc model");
    }
    found->input_failed = true;
    OC_FORWARD(oz_detect_path(archive, NULL, &kind, err));
    if (oz_kind_is_encrypted(kind, &crypt))
        return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                        "is encrypted (%s): its weights cannot be referenced in place",
                        oc_crypt_format_name(crypt));
    if (!oz_kind_is_archive(kind))
        return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET, "not an .onnxz archive");
    found->input_failed = false;
    /* A stream ("-", a FIFO) is written through: it has no directory to share (A-60 is then
     * the reader's business) and cannot be the archive. */
    if (oc_atomic_through(out)) return OC_OK;
    char *da = oc__path_dir(archive), *dout = oc__path_dir(out);
    if (!da || !dout) {
        free(da);
        free(dout);
        return nomem(err);
    }
    int ok = stat(da, &sa) == 0 && stat(dout, &so) == 0, same = ok && same_file(&sa, &so);
    oc_status st = OC_OK;
    if (!ok)
        st = oc__fail_errno(err, errno, "cannot find the directory");
    else if (!same)
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                      "must be in the same directory as the archive %s: external data "
                      "locations are relative to the model's directory",
                      archive);
    else if (stat(out, &so) == 0 && stat(archive, &sa) == 0 && same_file(&sa, &so))
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "output is the archive itself");
    free(da);
    free(dout);
    return st;
}

/* The archive's model with every external tensor pointed into the archive file and the
 * records attached, into *out. */
static oc_status stub_model(const char *archive, const oz_stub_options *opts, oz_stub_info *found,
                            oc_model **out, oc_error *err) {
    oz_zip_reader_options zo = OZ_ZIP_READER_OPTIONS_INIT;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oz_archive *ar = NULL;
    oc_model *model = NULL;
    stub_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    zo.max_memory = po.max_memory = opts->max_memory;
    po.skip_external_data = 1;
    oc_status st = oz_archive_open(archive, &zo, &ar, err);
    if (st == OC_OK) st = oz_archive_load_model(ar, &po, &model, err);
    if (st == OC_OK) {
        ctx.zip = oz_archive_zip(ar);
        ctx.arena = oc_model_arena(model);
        ctx.archive_name = oc__path_base(archive);
        ctx.err = err;
        st = oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(model), point_into_archive,
                                  &ctx);
    }
    oz_archive_close(ar);
    if (st == OC_OK && records_attach(&ctx.records, model) != OC_OK) st = nomem(err);
    records_free(&ctx.records);
    if (st != OC_OK) {
        oc_model_free(model);
        return st;
    }
    found->tensors = ctx.tensors;
    found->bytes = ctx.bytes;
    *out = model;
    return OC_OK;
}

/* The fields of found that the caller's info holds (by its size). */
static void info_put(oz_stub_info *info, const oz_stub_info *found) {
    if (info) oc__output_put(info, found, sizeof *found);
}

oc_status oz_stub_file(const char *archive, const char *out, const oz_stub_options *opts,
                       oz_stub_info *info, oc_error *err) {
    oz_stub_info found = OZ_STUB_INFO_INIT;
    oz_stub_options full;
    oc_model *model = NULL;
    struct stat st_out;
    if (info) OC_FORWARD(oc__output_check(info, info->size, "oz_stub_info", err));
    oc_status st = !archive || !out ? oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                               "oz_stub_file: missing argument")
                                    : oz__stub_opts(&opts, &full, err);
    if (st == OC_OK) st = oz__refuse_url_output(out, err);
    if (st == OC_OK) st = check_files(archive, out, &found, err);
    if (st == OC_OK) {
        st = stub_model(archive, opts, &found, &model, err);
        found.input_failed = st != OC_OK;
    }
    if (st == OC_OK) {
        /* The crash-safe writer of every .onnx save (S-41), without oz_save's S-40 check:
         * these references are the stub's point, not bytes a save has lost. */
        oc_serialize_options so = OC_SERIALIZE_OPTIONS_INIT;
        so.no_overwrite = opts->no_overwrite;
        so.no_sync = opts->no_sync;
        st = oc_model_save_file(model, out, &so, err);
    }
    oc_model_free(model);
    if (st == OC_OK && stat(out, &st_out) == 0 && S_ISREG(st_out.st_mode))
        found.file_size = (uint64_t)st_out.st_size;
    info_put(info, &found);
    return st;
}

/* ---- oz_stub_check (A-62) -------------------------------------------------------- */

/* An entry's data offset and its index in the central directory. */
struct entry_at {
    uint64_t offset, index;
};

/* One location the model names, and the archive it is (NULL: not an archive). The two
 * arrays keep the check linear in the tensors however they share entries (K-1). */
typedef struct stub_location {
    const oc_str *location;
    oz_archive *archive;
    /* Entry offsets sorted, for a model without records: each tensor's entry is found by
     * binary search, not by scanning every entry. Built on first use; NULL until then. */
    struct entry_at *by_offset;
    uint64_t nby_offset;
    /* One flag per entry: its CRC-32 has been checked and matched. Many tensors may name
     * one entry; its bytes are read once, not once per tensor. (A mismatch ends the
     * check, so no failed result is ever needed again.) NULL until first use. */
    uint8_t *crc_ok;
} stub_location;

typedef struct stub_checker {
    const char *dir; /* locations are relative to this directory */
    int dirfd;       /* dir, opened on first need; -1 until then */
    int hub_fd;      /* dir in the hub's cache: its repository's folder (E-28), or -1 */
    char hub_prefix[1024];
    stub_records records; /* parsed from the model's OZ_STUB_RECORD_KEY, by offset */
    int has_records;      /* the model has the key */
    stub_location *locations;
    uint64_t nlocations;
    uint64_t checked;
    oc_error *err;
} stub_checker;

/* Parses one decimal or hex number that ends at a space; 0 when it is not one. */
static int parse_field(const char **p, const char *end, int base, uint64_t *out) {
    uint64_t v = 0;
    const char *q = *p;
    for (; q < end && *q != ' '; q++) {
        unsigned d;
        if (*q >= '0' && *q <= '9')
            d = (unsigned)(*q - '0');
        else if (base == 16 && *q >= 'a' && *q <= 'f')
            d = (unsigned)(*q - 'a' + 10);
        else
            return 0;
        if (v > (UINT64_MAX - d) / (unsigned)base) return 0;
        v = v * (unsigned)base + d;
    }
    if (q == *p || q == end || q - *p > 20) return 0;
    *out = v;
    *p = q + 1;
    return 1;
}

/* lines "OFFSET LENGTH CRC32 NAME\n", sorted by offset, each offset once. */
static oc_status parse_records(stub_checker *c, const oc_str *value) {
    const char *p = value->data, *end = value->data + value->size;
    uint64_t line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        oz_zip_entry e;
        uint64_t crc = 0;
        line++;
        memset(&e, 0, sizeof e);
        if (!nl || !parse_field(&p, nl, 10, &e.data_offset) ||
            !parse_field(&p, nl, 10, &e.uncompressed_size) || !parse_field(&p, nl, 16, &crc) ||
            crc > UINT32_MAX || p >= nl || memchr(p, '\0', (size_t)(nl - p)) ||
            (c->records.count && c->records.items[c->records.count - 1].offset >= e.data_offset))
            return oc__fail_rule(c->err, OC_ERR_MALFORMED, OC_NO_OFFSET, "A-61",
                                 "metadata '" OZ_STUB_RECORD_KEY "' line %" PRIu64
                                 " is not 'OFFSET LENGTH CRC32 ENTRY' in offset order",
                                 line);
        e.crc32 = (uint32_t)crc;
        e.name = p;
        e.name_len = (uint32_t)(nl - p);
        if (records_add(&c->records, &e) != OC_OK) return nomem(c->err);
        p = nl + 1;
    }
    return OC_OK;
}

static const stub_record *find_record(const stub_checker *c, uint64_t offset) {
    stub_record key;
    key.offset = offset;
    if (c->records.count == 0) return NULL;
    return bsearch(&key, c->records.items, (size_t)c->records.count, sizeof key, by_offset);
}

/* The file loc names beneath data_dir, opened as a model's data files are (E-10, E-11,
 * E-18) into *fd: never outside the directory, through a link, or anything but a regular
 * file. */
static oc_status open_beneath_dir(stub_checker *c, const oc_str *loc, const char *rel,
                                  struct stat *st, int *fd) {
    char ql[OC_QUOTE_SIZE];
    const char *why = oc__location_problem(loc);
    oc_quote(loc->data, loc->size, ql, sizeof ql);
    *fd = -1;
    if (why)
        return oc__fail_rule(c->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET, "E-10",
                             "external data location %s: '%s'", why, ql);
    if (c->dirfd < 0) {
        if ((c->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
            return oc__fail_errno(c->err, errno, "cannot open directory %s", c->dir);
        c->hub_fd = oc__hub_cache_root(c->dirfd, c->hub_prefix, sizeof c->hub_prefix);
    }
    *fd = c->hub_fd >= 0 ? oc__open_in_hub_cache(c->hub_fd, c->hub_prefix, rel, st, &why)
                         : oc__open_location(c->dirfd, rel, NULL, st, &why);
    if (why)
        return oc__fail_rule(c->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET, "E-18",
                             "external data file '%s' %s", ql, why);
    if (*fd < 0 && c->hub_fd >= 0 && errno == ELOOP)
        return oc__fail_rule(c->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET, "E-11",
                             "external data file '%s' passes through a loop of symbolic links "
                             "(or a chain of more than any hub cache holds)",
                             ql);
    if (*fd < 0 && (errno == ELOOP || errno == EXDEV))
        return oc__fail_rule(c->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET, "E-11",
                             "external data file '%s' is or passes through a symbolic link%s", ql,
                             c->hub_fd >= 0 ? " that leaves its hub cache repository" : "");
    if (*fd < 0) return oc__fail_errno(c->err, errno, "cannot open external data file '%s'", ql);
    return OC_OK;
}

/* The archive the location's file (fd, named file) is; *archive stays NULL when it is not
 * one. */
static oc_status open_archive(stub_checker *c, int fd, uint64_t size, const char *file,
                              oz_archive **archive) {
    uint8_t head[OZ_DETECT_HEAD];
    oz_zip_reader *zip = NULL;
    oc_error local;
    char buf[OC_ERROR_MESSAGE_MAX];
    *archive = NULL;
    ssize_t n = pread(fd, head, sizeof head, 0);
    if (n < 0) return oc__fail_errno(c->err, errno, "cannot read %s", file);
    if (!oz_kind_is_archive(oz_detect(head, (size_t)n, size))) return OC_OK;
    oc_error_clear(&local);
    oc_status st = oz__zip_reader_open_file(fd, file, NULL, &zip, &local);
    if (st == OC_OK) st = oz__archive_wrap(zip, file, archive, &local);
    if (st == OC_OK) return OC_OK;
    *archive = NULL;
    /* Without records, a data file that only starts like a ZIP (a tensor's first bytes)
     * is ordinary data; a stub's archive must open. */
    if (!c->has_records) return OC_OK;
    oc__fail(c->err, local.code, local.offset, "%s: %s", file,
             oc_error_detail(&local, file, buf, sizeof buf));
    return oc_error_file(c->err, file, local.code);
}

/* The location loc names, its archive opened once (archive NULL when it is not one). */
static oc_status location_archive(stub_checker *c, const oc_str *loc, stub_location **where) {
    stub_location *grown;
    oz_archive *archive = NULL;
    struct stat st;
    for (uint64_t i = 0; i < c->nlocations; i++) {
        if (c->locations[i].location->size == loc->size &&
            memcmp(c->locations[i].location->data, loc->data, loc->size) == 0) {
            *where = &c->locations[i];
            return OC_OK;
        }
    }
    grown = realloc(c->locations, (size_t)(c->nlocations + 1) * sizeof *grown);
    char *rel = strndup(loc->data, (size_t)loc->size);
    char *file = malloc(strlen(c->dir) + loc->size + 2);
    if (grown) c->locations = grown;
    if (!grown || !rel || !file) {
        free(rel);
        free(file);
        return nomem(c->err);
    }
    sprintf(file, "%s/%s", c->dir, rel);
    int fd;
    oc_status opened = open_beneath_dir(c, loc, rel, &st, &fd);
    if (opened == OC_OK) opened = open_archive(c, fd, (uint64_t)st.st_size, file, &archive);
    if (fd >= 0) close(fd);
    free(rel);
    free(file);
    if (opened != OC_OK) return opened;
    memset(&c->locations[c->nlocations], 0, sizeof c->locations[c->nlocations]);
    c->locations[c->nlocations].location = loc;
    c->locations[c->nlocations].archive = archive;
    *where = &c->locations[c->nlocations++];
    return OC_OK;
}

static int by_entry_offset(const void *a, const void *b) {
    const struct entry_at *x = a, *y = b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Sorts the archive's entries but its model by data offset, once per location: then
 * equal offsets keep central directory order, the one a scan would have found first. */
static oc_status index_offsets(stub_location *l) {
    const oz_zip_reader *zip = oz_archive_zip(l->archive);
    uint64_t n = oz_zip_reader_count(zip);
    oz_zip_entry e;
    l->by_offset = malloc((size_t)(n ? n : 1) * sizeof *l->by_offset);
    if (!l->by_offset) return OC_ERR_NOMEM;
    for (uint64_t i = 0; i < n; i++) {
        if (oz_zip_reader_entry(zip, i, &e, NULL) != OC_OK || strcmp(e.name, OZ_MODEL_ENTRY) == 0)
            continue;
        l->by_offset[l->nby_offset].offset = e.data_offset;
        l->by_offset[l->nby_offset++].index = i;
    }
    qsort(l->by_offset, (size_t)l->nby_offset, sizeof *l->by_offset, by_entry_offset);
    return OC_OK;
}

/* The entry a tensor's reference means: the recorded one (by name), or without records
 * the first one (central directory order) whose data starts at the offset. 1 when found,
 * 0 when not, -1 when out of memory. */
static int find_entry(stub_location *l, const stub_record *rec, uint64_t offset, uint64_t *index) {
    uint64_t lo = 0, hi;
    if (rec) return oz_zip_reader_find(oz_archive_zip(l->archive), rec->name, index, NULL) == OC_OK;
    if (!l->by_offset && index_offsets(l) != OC_OK) return -1;
    /* The first element whose offset is not below the one sought. */
    for (hi = l->nby_offset; lo < hi;) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (l->by_offset[mid].offset < offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == l->nby_offset || l->by_offset[lo].offset != offset) return 0;
    *index = l->by_offset[lo].index;
    return 1;
}

/* The entry a stub's reference reads is gone: the archive was rebuilt. */
static oc_status entry_gone(stub_checker *c, const stub_record *rec, const char *qt, const char *ql,
                            uint64_t offset) {
    char qe[OC_QUOTE_SIZE];
    if (rec)
        return oc__fail_rule(c->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "A-62",
                             "tensor '%s': %s has no entry '%s' any more: the archive was "
                             "rebuilt after the stub was made; make the stub again",
                             qt, ql, oc_quote(rec->name, strlen(rec->name), qe, sizeof qe));
    return oc__fail_rule(c->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "A-62",
                         "tensor '%s': no entry of %s has its data at offset %" PRIu64
                         ": the archive was rebuilt after the stub was made; make the stub "
                         "again",
                         qt, ql, offset);
}

/* The entry is not the bytes the stub reads (another place, size, method or CRC-32). */
static oc_status entry_moved(stub_checker *c, const stub_record *rec, const oz_zip_entry *e,
                             const char *qt, const char *ql, uint64_t offset, uint64_t length) {
    char was[48] = "", qe[OC_QUOTE_SIZE];
    if (rec && rec->crc32 != e->crc32)
        snprintf(was, sizeof was, ", the stub recorded %08" PRIx32, rec->crc32);
    return oc__fail_rule(c->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "A-62",
                         "tensor '%s': the stub reads %" PRIu64 " bytes at offset %" PRIu64
                         " of %s, but entry '%s' is %s%" PRIu64 " bytes at offset %" PRIu64
                         " (CRC-32 %08" PRIx32 "%s): the archive was rebuilt after the stub "
                         "was made; make the stub again",
                         qt, length, offset, ql, oc_quote(e->name, e->name_len, qe, sizeof qe),
                         e->method == OZ_ZIP_STORED ? "" : "deflated, ", e->uncompressed_size,
                         e->data_offset, e->crc32, was);
}

static oc_status check_tensor(void *vctx, onnx_TensorProto *t) {
    stub_checker *c = vctx;
    const oc_str *loc = oc_tensor_is_external(t) ? oc_tensor_external_value(t, "location") : NULL;
    const stub_record *rec;
    const oz_zip_reader *zip;
    stub_location *l = NULL;
    oz_zip_entry e;
    uint64_t offset, length, index = 0;
    bool has_offset, has_length;
    int found;
    char qt[OC_QUOTE_SIZE], ql[OC_QUOTE_SIZE];
    oc_error local;
    if (!loc) return OC_OK;
    OC_FORWARD(location_archive(c, loc, &l));
    if (!l->archive) return OC_OK;
    zip = oz_archive_zip(l->archive);
    oc_quote(t->name.data, t->name.size, qt, sizeof qt);
    oc_quote(loc->data, loc->size, ql, sizeof ql);
    OC_FORWARD(oc_tensor_external_range(t, &offset, &has_offset, &length, &has_length, c->err));
    rec = find_record(c, offset);
    if (c->has_records && !rec)
        return oc__fail_rule(c->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "A-62",
                             "tensor '%s': the stub has no record of an entry of %s at "
                             "offset %" PRIu64,
                             qt, ql, offset);
    found = find_entry(l, rec, offset, &index);
    if (found < 0 || (!l->crc_ok && !(l->crc_ok = calloc((size_t)oz_zip_reader_count(zip) + 1, 1))))
        return nomem(c->err);
    if (!found || oz_zip_reader_entry(zip, index, &e, NULL) != OC_OK)
        return entry_gone(c, rec, qt, ql, offset);
    if (e.data_offset != offset || !has_length || e.uncompressed_size != length ||
        e.method != OZ_ZIP_STORED || (rec && (rec->length != length || rec->crc32 != e.crc32)))
        return entry_moved(c, rec, &e, qt, ql, offset, length);
    /* The bytes the runtime reads are the entry's own: their CRC-32 is the entry's. */
    oc_error_clear(&local);
    if (!l->crc_ok[index] && oz_zip_reader_verify(zip, index, &local) != OC_OK)
        return oc__error_rule(
            c->err, local.rule,
            oc__fail(c->err, OC_ERR_CHECKSUM, OC_NO_OFFSET, "tensor '%s': %s", qt, local.message));
    l->crc_ok[index] = 1;
    c->checked++;
    return OC_OK;
}

oc_status oz_stub_check(oc_model *model, const char *data_dir, uint64_t *checked, oc_error *err) {
    onnx_ModelProto *m;
    const oc_str *value;
    stub_checker c;
    oc_status st = OC_OK;
    if (checked) *checked = 0;
    if (!model || !data_dir)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_stub_check: missing argument");
    m = oc_model_proto(model);
    memset(&c, 0, sizeof c);
    c.dir = data_dir;
    c.dirfd = c.hub_fd = -1;
    c.err = err;
    value = oz__metadata_get(m, OZ_STUB_RECORD_KEY, strlen(OZ_STUB_RECORD_KEY));
    c.has_records = value != NULL;
    if (value) st = parse_records(&c, value);
    if (st == OC_OK) st = oc_msg_visit_tensors(&onnx_ModelProto_desc, m, check_tensor, &c);
    for (uint64_t i = 0; i < c.nlocations; i++) {
        oz_archive_close(c.locations[i].archive);
        free(c.locations[i].by_offset);
        free(c.locations[i].crc_ok);
    }
    free(c.locations);
    if (c.dirfd >= 0) close(c.dirfd);
    if (c.hub_fd >= 0) close(c.hub_fd);
    records_free(&c.records);
    if (checked) *checked = c.checked;
    return st;
}
