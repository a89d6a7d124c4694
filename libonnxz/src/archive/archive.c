/*
 * archive.c - models as .onnxz archives (spec/onnxz.md): the writer places each large
 * tensor as a STORED, aligned entry through onnxcore's external-data sink and appends the
 * model as `__MODEL_PROTO`; the reader resolves tensors to entries through onnxcore's
 * external-data loader, so every check of spec/external-data.md applies to archives too.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <onnxcore/external.h>
#include <onnxcore/http.h>
#include <onnxcore/tensor.h>

#include "internal/external.h"
#include "internal/nametab.h"

#include "onnxz/archive.h"
#include "internal/archive.h"
#include "internal/error.h"
#include "internal/journal.h"
#include "internal/options.h"
#include "internal/zipbuild.h"
#include "internal/zipread.h"
#include "internal/onnxcore_progress.h"

/* ---- entry names (A-10) ---- */

/* Tensor entry names: a C identifier derived from the tensor name, at most this long
 * before a uniqueness suffix, so that an unpacked archive has portable file names. */
#define OZ_ENTRY_NAME_MAX 120

/* Lower-cased names taken so far, found through onnxcore's keyed table. Each name also
 * remembers the next uniqueness suffix to try when it comes up again as a base, so N
 * tensors with one name cost O(N), not O(N^2) (K-1). */
typedef struct name_set {
    oc_nametab *tab;
    oc_arena *arena; /* the lower-cased copies */
    oc_str *names;
    uint64_t *next_suffix; /* 0: none tried yet (the next is 2) */
    uint64_t count, cap;
} name_set;

static void set_name_of(const void *ctx, uint64_t i, const void **name, size_t *len) {
    const name_set *s = ctx;
    *name = s->names[i].data;
    *len = (size_t)s->names[i].size;
}

static int set_init(name_set *s, oc_arena *arena) {
    memset(s, 0, sizeof *s);
    s->arena = arena;
    s->tab = oc_nametab_new(256, set_name_of, s);
    return s->tab ? 0 : -1;
}

/* Adds lower-cased `name` unless present; *at receives its index either way.
 * 1: added, 0: present, -1: out of memory. */
static int set_add(name_set *s, const char *name, uint64_t *at) {
    char low[OZ_ENTRY_NAME_MAX + 24];
    size_t n = strlen(name);
    if (n >= sizeof low) return -1; /* entry_name never makes one this long */
    for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)name[i]);
    uint64_t h = oc_nametab_hash(low, n);
    int64_t found = oc_nametab_find(s->tab, low, n, h);
    if (found >= 0) {
        *at = (uint64_t)found;
        return 0;
    }
    char *copy = oc_arena_alloc(s->arena, n + 1);
    if (!copy) return -1;
    memcpy(copy, low, n);
    if (s->count == s->cap) {
        uint64_t cap = s->cap ? s->cap * 2 : 256;
        oc_str *names = realloc(s->names, (size_t)cap * sizeof *names);
        if (names) s->names = names;
        uint64_t *next = realloc(s->next_suffix, (size_t)cap * sizeof *next);
        if (next) s->next_suffix = next;
        if (!names || !next) return -1;
        s->cap = cap;
    }
    if (oc_nametab_reserve(s->tab) != OC_OK) return -1;
    s->names[s->count] = (oc_str){copy, n};
    s->next_suffix[s->count] = 0;
    oc_nametab_insert(s->tab, s->count, h);
    *at = s->count++;
    return 1;
}

static void set_free(name_set *s) {
    oc_nametab_free(s->tab);
    free(s->names);
    free(s->next_suffix);
    memset(s, 0, sizeof *s);
}

/* A byte of a tensor name as it appears in an entry name. */
static char entry_char(char c) {
    unsigned char u = (unsigned char)c;
    return isalnum(u) && u < 0x80 ? c : '_';
}

/* Writes the entry name for a tensor into out (OZ_ENTRY_NAME_MAX + 24 bytes): the name
 * with every byte outside [A-Za-z0-9_] replaced by '_', "t" in front when it would start
 * with a digit or with "__" (reserved for the format's own entries), "tensor" when empty;
 * then "_2", "_3", ... until no earlier entry has the same name ignoring case. */
static int entry_name(name_set *taken, const oc_str *tname, char *out) {
    char base[OZ_ENTRY_NAME_MAX + 2];
    size_t n = 0;
    /* "would start with": after the replacement ("_." is "__" too, and must not come out
     * as a reserved name such as __ONNXZ_VERSION) */
    int need_prefix = tname->size == 0 || (tname->data[0] >= '0' && tname->data[0] <= '9') ||
                      (tname->size >= 2 && entry_char(tname->data[0]) == '_' &&
                       entry_char(tname->data[1]) == '_');
    if (tname->size == 0) {
        memcpy(base, "tensor", 7);
        n = 6;
    } else {
        if (need_prefix) base[n++] = 't';
        for (uint64_t i = 0; i < tname->size && n < OZ_ENTRY_NAME_MAX; i++)
            base[n++] = entry_char(tname->data[i]);
        base[n] = '\0';
    }
    uint64_t base_at;
    snprintf(out, OZ_ENTRY_NAME_MAX + 24, "%s", base);
    int r = set_add(taken, out, &base_at);
    if (r != 0) return r;
    /* Taken: the suffixes from where the last tensor with this base stopped. Each failed
     * try meets a name that is base_k for this base alone, so the tries stay O(entries). */
    for (uint64_t k = taken->next_suffix[base_at] ? taken->next_suffix[base_at] : 2;; k++) {
        uint64_t at;
        snprintf(out, OZ_ENTRY_NAME_MAX + 24, "%s_%llu", base, (unsigned long long)k);
        r = set_add(taken, out, &at);
        if (r != 0) {
            taken->next_suffix[base_at] = k + 1;
            return r;
        }
    }
}

/* ---- writing ---- */

typedef struct writer_ctx {
    oz_zip_writer *zip;
    const oc_tensor_fetch *fetch; /* or NULL (oc_serialize_options.fetch) */
    name_set taken;
    oc_arena *names;                   /* taken's lower-cased names */
    char name[OZ_ENTRY_NAME_MAX + 24]; /* the last entry's (oc_external_put_fn copies it) */
    int deflate; /* the model entry is deflated as it is encoded, else stored */
} writer_ctx;

static oc_status zip_sink(void *ctx, const void *data, uint64_t size, oc_error *err) {
    return oz_zip_writer_write(ctx, data, size, err);
}

static oc_status put_entry(void *ctx, const onnx_TensorProto *t, oc_external_ref *ref,
                           oc_error *err) {
    writer_ctx *w = ctx;
    char *name = w->name;
    int r = entry_name(&w->taken, &t->name, name);
    if (r < 0) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    /* Streamed: the CRC is computed on the way and patched into the local header, so each
     * piece is read once and, from a mapped input, dropped from memory once written. */
    OC_FORWARD(oz_zip_writer_begin(w->zip, name, ref->length, NULL, err));
    OC_FORWARD(oc_tensor_write(w->fetch, t, ref->length, zip_sink, w->zip, err));
    OC_FORWARD(oz_zip_writer_end(w->zip, err));
    ref->location = name;
    ref->has_offset = false; /* the entry is the tensor: offset 0 */
    return OC_OK;
}

/* Frees the entry names taken (NULL-safe, idempotent). */
static void names_free(writer_ctx *w) {
    set_free(&w->taken);
    oc_arena_free(w->names);
    w->names = NULL;
}

/* The model's encoded size, after every put and before its first byte (A-2: the model
 * entry comes last). Its bytes stream into the entry, deflated on the way or stored. */
static oc_status model_sized(void *ctx, uint64_t total, oc_error *err) {
    writer_ctx *w = ctx;
    names_free(w); /* the entries are written: their names are done with */
    if (w->deflate) return oz__zip_writer_begin_deflated(w->zip, OZ_MODEL_ENTRY, total, err);
    return oz_zip_writer_begin(w->zip, OZ_MODEL_ENTRY, total, NULL, err);
}

static oc_status write_model(void *ctx, const void *data, uint64_t size, oc_error *err) {
    writer_ctx *w = ctx;
    return oz_zip_writer_write(w->zip, data, size, err);
}

/* ---- the memory budget of a save (spec/security.md M-5) ---- */

/* What writing holds per entry until the archive is finished: the ZIP writer's entry
 * record (64 bytes) and name-table slots (up to 48), the name set's record and slots (up
 * to 72, until the model is encoded), the encoder's reference record (56) and message
 * sizes (24), and the slack of tables that grow by doubling (measured: 1,000,000 entries
 * take some 360 MB). */
#define WRITE_ENTRY_BYTES 320u
/* Copies of each entry name held: the ZIP writer's, the name set's and the reference's,
 * and the slack of the ZIP writer's growing name blob. */
#define WRITE_NAME_COPIES 4u

typedef struct write_plan {
    uint64_t entries, names; /* names: bytes of the entry names, NULs included */
} write_plan;

static oc_status plan_entry(void *ctx, const onnx_TensorProto *t, uint64_t n, oc_error *err) {
    write_plan *p = ctx;
    (void)n;
    (void)err;
    /* entry_name: at most OZ_ENTRY_NAME_MAX bytes of the tensor's name, a "t" in front or
     * "tensor", a uniqueness suffix (counted as 4 bytes: most names need none) */
    uint64_t len = t->name.size < OZ_ENTRY_NAME_MAX ? t->name.size : OZ_ENTRY_NAME_MAX;
    p->entries++;
    p->names += (len < 6 ? 6 : len) + 1 + 4 + 1;
    return OC_OK;
}

/* M-5: the tables of the entries the save will make, beside the `held` bytes of the
 * model's arena, fit max_memory: checked before the file is created. */
static oc_status check_budget(const oc_msgdesc *desc, const void *msg, uint64_t held,
                              const oz_archive_options *opts, oc_error *err) {
    const oc_serialize_options *so = &opts->serialize;
    write_plan plan = {0, 0};
    OC_FORWARD(oc__external_moved(desc, msg, so->buffer.raw_data_threshold, so->fetch, plan_entry,
                                  &plan, err));
    uint64_t need = plan.entries * WRITE_ENTRY_BYTES + plan.names * WRITE_NAME_COPIES;
    return oc__write_budget(plan.entries, "as entries", need, held, opts->max_memory, err);
}

/* oz_archive_save_message, with `held` bytes of the budget taken by the model's arena. */
static oc_status save_message(const oc_msgdesc *desc, const void *msg, uint64_t held,
                              const char *path, const oz_archive_options *opts,
                              const oc_http_options *http, oc_error *err) {
    if (!desc || !msg || !path)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_archive_save: missing argument");
    OZ_ARCHIVE_OPTS(opts, err);
    const oc_serialize_options *so = &opts->serialize;
    if (so->buffer.alignment > UINT32_MAX)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "alignment %llu is too large",
                        (unsigned long long)so->buffer.alignment);
    if (opts->max_memory) OC_FORWARD(check_budget(desc, msg, held, opts, err));
    writer_ctx w;
    memset(&w, 0, sizeof w);
    w.fetch = so->fetch;
    w.deflate = opts->deflate_model;
    uint64_t model_at;
    w.names = oc_arena_new();
    if (!w.names || set_init(&w.taken, w.names) != 0 ||
        set_add(&w.taken, OZ_MODEL_ENTRY, &model_at) < 0) {
        names_free(&w);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    oc_progress progress;
    oc_status st = oc_progress_start_save(&progress, desc, msg, so, err);
    if (st == OC_OK)
        st = oz__zip_writer_open_url(path, (uint32_t)so->buffer.alignment, so->no_overwrite, http,
                                     &w.zip, err);
    if (st == OC_OK) oz__zip_writer_set_save(w.zip, &progress, so->no_sync);
    /* The model last: tools can rewrite it without moving a single weight. */
    if (st == OC_OK)
        st = oc__encode_external_sized(desc, msg, so->buffer.raw_data_threshold, so->fetch,
                                       put_entry, &w, model_sized, write_model, &w, err);
    if (st == OC_OK) st = oz_zip_writer_end(w.zip, err);
    if (st == OC_OK) st = oz_zip_writer_finish(w.zip, err);
    if (st == OC_OK) oc_progress_finish(&progress);
    oz_zip_writer_free(w.zip); /* abandons the temporary file unless finished */
    names_free(&w);
    return st;
}

oc_status oz_archive_save_message(const oc_msgdesc *desc, const void *msg, const char *path,
                                  const oz_archive_options *opts, oc_error *err) {
    return save_message(desc, msg, 0, path, opts, NULL, err);
}

oc_status oz_archive_save(const oc_model *model, const char *path, const oz_archive_options *opts,
                          oc_error *err) {
    if (!model) return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_archive_save: no model");
    /* The arena is only measured: the cast is for an accessor that also serves writers. */
    uint64_t held = oc_arena_bytes_used(oc_model_arena((oc_model *)(uintptr_t)model));
    return save_message(&onnx_ModelProto_desc, oc_model_proto_const(model), held, path, opts, NULL,
                        err);
}

oc_status oz__archive_save_url(const oc_model *model, const char *path,
                               const oz_archive_options *opts, const oc_http_options *http,
                               oc_error *err) {
    uint64_t held = oc_arena_bytes_used(oc_model_arena((oc_model *)(uintptr_t)model));
    return save_message(&onnx_ModelProto_desc, oc_model_proto_const(model), held, path, opts, http,
                        err);
}

/* ---- reading ---- */

/* oz_archive_read_tensor's index: the model decoded once (no_copy, the tensors keep their
 * external references) and its tensors sorted by name, first in the model's order first. */
typedef struct tensor_slot {
    onnx_TensorProto *t;
    size_t order;
} tensor_slot;

typedef struct tensor_index {
    oc_model *model;
    tensor_slot *slots;
    size_t count;
} tensor_index;

struct oz_archive {
    oz_zip_reader *zip;
    char *path;
    uint64_t model_index;
    pthread_mutex_t lock; /* guards the building of tix; once set, tix never changes */
    int lock_ready;
    tensor_index *tix;
};

/* an archive of a later format version says so in __ONNXZ_VERSION; refuse it. */
static oc_status check_version(const oz_archive *ar, oc_error *err) {
    uint64_t index;
    oc_error tmp;
    if (oz_zip_reader_find(ar->zip, OZ_VERSION_ENTRY, &index, &tmp) != OC_OK) return OC_OK;
    oc_bytes b = {0};
    OC_FORWARD(oz_zip_reader_read(ar->zip, index, &b, err));
    uint64_t v = 0;
    int digits = b.size > 0 && b.size <= 9;
    for (uint64_t i = 0; digits && i < b.size; i++) {
        digits = b.data[i] >= '0' && b.data[i] <= '9';
        v = v * 10 + (uint64_t)(b.data[i] - '0');
    }
    oc_bytes_release(&b);
    if (!digits || v > OZ_ARCHIVE_VERSION)
        return oc__fail_rule(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET, "A-40",
                             "archive format version %s is newer than this reader (%u)",
                             digits ? "above 1" : "unreadable", OZ_ARCHIVE_VERSION);
    return OC_OK;
}

/* readers never take the journal of an interrupted edit into account; when the
 * archive does not open and one is there, the message says so. */
static void mention_journal(const char *path, oc_status st, oc_error *err) {
    char *jpath = oz__journal_path(path);
    struct stat st_j;
    if (err && jpath &&
        (st == OC_ERR_MALFORMED || st == OC_ERR_TRUNCATED || st == OC_ERR_INCONSISTENT) &&
        lstat(jpath, &st_j) == 0) {
        size_t n = strlen(err->message);
        snprintf(err->message + n, sizeof err->message - n,
                 " (an in-place edit of it was interrupted: %s is there; the next edit rolls "
                 "it back, A-56)",
                 jpath);
    }
    free(jpath);
}

oc_status oz__archive_wrap(oz_zip_reader *zip, const char *path, oz_archive **out, oc_error *err) {
    oz_archive *ar = calloc(1, sizeof *ar);
    if (!ar || !(ar->path = strdup(path ? path : ""))) {
        free(ar);
        oz_zip_reader_close(zip);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    ar->zip = zip;
    ar->lock_ready = pthread_mutex_init(&ar->lock, NULL) == 0;
    oc_error tmp;
    oc_status st = OC_OK;
    if (oz_zip_reader_find(ar->zip, OZ_MODEL_ENTRY, &ar->model_index, &tmp) != OC_OK)
        st = oc__fail_rule(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET, "A-1",
                           "not an ONNX archive: no " OZ_MODEL_ENTRY " entry");
    if (st == OC_OK) st = check_version(ar, err);
    if (st != OC_OK) {
        oz_archive_close(ar);
        return st;
    }
    *out = ar;
    return OC_OK;
}

uint64_t oz__archive_model_index(const oz_archive *ar) { return ar->model_index; }
const char *oz__archive_path(const oz_archive *ar) { return ar->path; }

oc_status oz_archive_open(const char *path, const oz_zip_reader_options *zip_opts, oz_archive **out,
                          oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_archive_open: missing argument");
    oz_zip_reader *zip = NULL;
    oc_status st = oz_zip_reader_open(path, zip_opts, &zip, err);
    if (st != OC_OK) {
        mention_journal(path, st, err);
        return st;
    }
    return oz__archive_wrap(zip, path, out, err);
}

void oz_archive_close(oz_archive *ar) {
    if (!ar) return;
    if (ar->tix) {
        oc_model_free(ar->tix->model);
        free(ar->tix->slots);
        free(ar->tix);
    }
    if (ar->lock_ready) pthread_mutex_destroy(&ar->lock);
    oz_zip_reader_close(ar->zip);
    free(ar->path);
    free(ar);
}

const oz_zip_reader *oz_archive_zip(const oz_archive *ar) { return ar ? ar->zip : NULL; }

void oz_archive_get_space(const oz_archive *ar, oz_archive_space *out) {
    memset(out, 0, sizeof *out);
    if (!ar) return;
    out->archive_size = out->file_size = oz_zip_reader_size(ar->zip);
    uint64_t cd_off, covered = 0;
    oz_zip_reader_central_dir(ar->zip, &cd_off, NULL);
    uint64_t n = oz_zip_reader_count(ar->zip);
    for (uint64_t i = 0; i < n; i++) {
        oz_zip_entry e;
        if (oz_zip_reader_entry(ar->zip, i, &e, NULL) != OC_OK) continue;
        if (!e.data_offset) { /* a local header not read yet (a URL's): unknown */
            out->unused_bytes = UINT64_MAX;
            return;
        }
        covered += e.data_offset + e.compressed_size - e.local_header_offset;
    }
    out->unused_bytes = cd_off - covered; /* entries lie before the central directory (Z-75) */
}

static void free_owned(void *p) { oc_bytes_free_buffer(p); }

/* Turns an entry's bytes into (data, size, owner reference): owned buffers (inflated
 * entries, pread copies) get an owner token of their own so that no_copy spans can share
 * them like a mapping. */
static oc_status to_mapped(oc_bytes *b, oc_mapped *out, oc_error *err) {
    out->data = b->data;
    out->size = b->size;
    out->owner = NULL;
    if (b->mode == OC_BYTES_SHARED) {
        out->owner = oc_owner_ref(b->owner);
    } else if (b->mode == OC_BYTES_OWNED && b->data) {
        out->owner = oc_owner_new(free_owned, (void *)(uintptr_t)b->data);
        if (!out->owner) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        memset(b, 0, sizeof *b); /* the token frees the buffer now */
    }
    oc_bytes_release(b);
    return OC_OK;
}

/* A-21 on one tensor's reference: *index receives the entry it names. */
static oc_status check_reference(const oz_archive *ar, const onnx_TensorProto *t, const oc_str *loc,
                                 uint64_t *index, oc_error *err) {
    char name[OZ_ZIP_MAX_NAME_LEN_HARD + 1];
    char tname[OC_QUOTE_SIZE], qloc[OC_QUOTE_SIZE];
    oc_quote(t->name.data, t->name.size, tname, sizeof tname);
    oc_quote(loc->data, loc->size, qloc, sizeof qloc);
    /* E-12 applies: a value that is no number is named as such. */
    uint64_t offset, length;
    bool has_offset, has_length;
    OC_FORWARD(oc_tensor_external_range(t, &offset, &has_offset, &length, &has_length, err));
    /* a `location` key without a value has no bytes at all (data NULL) */
    if (loc->size > OZ_ZIP_MAX_NAME_LEN_HARD ||
        (loc->size && memchr(loc->data, '\0', (size_t)loc->size)))
        return oc__fail_rule(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET, "A-21",
                             "tensor '%s': the archive has no entry '%s'", tname, qloc);
    if (loc->size) memcpy(name, loc->data, (size_t)loc->size);
    name[loc->size] = '\0';
    oc_error tmp;
    if (oz_zip_reader_find(ar->zip, name, index, &tmp) != OC_OK)
        return oc__fail_rule(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET, "A-21",
                             "tensor '%s': the archive has no entry '%s'", tname, qloc);
    if (*index == ar->model_index) /* `not found`: no tensor entry has that name */
        return oc__fail_rule(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET, "A-21",
                             "tensor '%s': its location is " OZ_MODEL_ENTRY
                             ", the model's own entry, "
                             "which cannot hold a tensor",
                             tname);
    if (loc->size && loc->data[loc->size - 1] == '/')
        return oc__fail_rule(
            err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "A-21",
            "tensor '%s': its location '%s' names a directory entry (a name ending "
            "in /), which cannot hold a tensor",
            tname, qloc);
    oz_zip_entry e;
    OC_FORWARD(oz_zip_reader_entry(ar->zip, *index, &e, err));
    if (has_offset && offset != 0)
        return oc__fail_rule(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "A-21",
                             "tensor '%s': offset %llu in entry '%s', where a tensor entry is the "
                             "tensor and its offset is 0",
                             tname, (unsigned long long)offset, qloc);
    if (has_length && length != e.uncompressed_size)
        return oc__fail_rule(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "A-21",
                             "tensor '%s': its length is %llu, but entry '%s' holds %llu bytes",
                             tname, (unsigned long long)length, qloc,
                             (unsigned long long)e.uncompressed_size);
    return OC_OK;
}

/* Resolves a tensor's location to its entry. */
static oc_status resolve_entry(void *ctx, const onnx_TensorProto *t, const oc_str *loc,
                               oc_mapped *out, oc_error *err) {
    const oz_archive *ar = ctx;
    uint64_t index;
    OC_FORWARD(check_reference(ar, t, loc, &index, err));
    oc_bytes b = {0};
    OC_FORWARD(oz_zip_reader_read(ar->zip, index, &b, err));
    return to_mapped(&b, out, err);
}

/* ---- oz_archive_fetch: a tensor's entry streamed while a save writes it ---- */

/* The entry an EXTERNAL tensor names, checked as a load checks it (A-21; E-1). */
static oc_status fetch_entry(const oz_archive *ar, const onnx_TensorProto *t, uint64_t *index,
                             oc_error *err) {
    const oc_str *loc = oc_tensor_external_value(t, "location");
    if (!loc) {
        char tname[OC_QUOTE_SIZE];
        oc_quote(t->name.data, t->name.size, tname, sizeof tname);
        return oc__fail_rule(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET, "E-1",
                             "tensor '%s': external data has no location", tname);
    }
    return check_reference(ar, t, loc, index, err);
}

static oc_status fetch_size(void *ctx, const onnx_TensorProto *t, uint64_t *n, oc_error *err) {
    const oz_archive *ar = ctx;
    uint64_t index;
    oz_zip_entry e;
    OC_FORWARD(fetch_entry(ar, t, &index, err));
    OC_FORWARD(oz_zip_reader_entry(ar->zip, index, &e, err));
    *n = e.uncompressed_size;
    return OC_OK;
}

static oc_status fetch_stream(void *ctx, const onnx_TensorProto *t, oc_write_fn write,
                              void *write_ctx, oc_error *err) {
    const oz_archive *ar = ctx;
    uint64_t index;
    OC_FORWARD(fetch_entry(ar, t, &index, err));
    return oz_zip_reader_read_to(ar->zip, index, write, write_ctx, err);
}

void oz_archive_fetch(const oz_archive *ar, oc_tensor_fetch *out) {
    out->size = fetch_size;
    out->stream = fetch_stream;
    out->ctx = (void *)(uintptr_t)ar;
}

typedef struct refs_ctx {
    const oz_archive *ar;
    oc_error *err;
} refs_ctx;

/* The loader resolves each distinct location once, so A-21 is checked here first for every
 * tensor: a tensor naming an entry that an earlier one named too would otherwise pass with
 * an offset or a shorter length (a part of the entry). A missing location is the loader's
 * to report (E-1). */
static oc_status check_tensor_reference(void *ctx, onnx_TensorProto *t) {
    refs_ctx *c = ctx;
    const oc_str *loc = oc_tensor_is_external(t) ? oc_tensor_external_value(t, "location") : NULL;
    uint64_t index;
    return loc ? check_reference(c->ar, t, loc, &index, c->err) : OC_OK;
}

/* Decodes __MODEL_PROTO; with no_copy the model's inline bytes share the entry. A
 * deflated one is inflated into memory first, which counts against the memory budget
 * (M-1): checked before inflating, and the decode gets what is left. */
/* check (may be NULL) is given the model's bytes as read, before they are decoded. */
static oc_status decode_model(const oz_archive *ar, const oc_parse_options *opts,
                              oz__model_check_fn check, void *ctx, oc_model **out, oc_error *err) {
    oz_zip_entry e;
    OC_FORWARD(oz_zip_reader_entry(ar->zip, ar->model_index, &e, err));
    oc_parse_options budgeted;
    if (opts)
        budgeted = *opts;
    else
        oc_parse_options_init(&budgeted);
    uint64_t budget = budgeted.max_memory ? budgeted.max_memory : OC_DEFAULT_MAX_MEMORY;
    if (e.method != OZ_ZIP_STORED && budget != OC_DEFAULT_MAX_MEMORY) {
        if (e.uncompressed_size >= budget)
            return oc__error_rule(err, "M-1",
                                  oc__fail(err, OC_ERR_LIMIT, OC_NO_OFFSET,
                                           "inflating " OZ_MODEL_ENTRY " takes %llu bytes, more "
                                           "than the memory budget of %llu bytes (max_memory, M-1)",
                                           (unsigned long long)e.uncompressed_size,
                                           (unsigned long long)budget));
        budgeted.max_memory = budget - e.uncompressed_size;
    }
    opts = &budgeted;
    oc_bytes b = {0};
    OC_FORWARD(oz_zip_reader_read(ar->zip, ar->model_index, &b, err));
    if (check) {
        oc_status cs = check(ctx, b.data, b.size, err);
        if (cs != OC_OK) {
            oc_bytes_release(&b);
            return cs;
        }
    }
    oc_mapped m;
    OC_FORWARD(to_mapped(&b, &m, err));
    oc_model *model = oc_model_new();
    oc_status st = model ? OC_OK : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (st == OC_OK)
        st = oc_decode(&onnx_ModelProto_desc, oc_model_proto(model), m.data, m.size,
                       oc_model_arena(model), opts, m.owner, err);
    oc_owner_unref(m.owner);
    if (st == OC_ERR_LIMIT && budgeted.max_memory != budget)
        st = oc__error_rule(err, "M-1",
                            oc__fail(err, OC_ERR_LIMIT, err ? err->offset : OC_NO_OFFSET,
                                     "decoding needs more memory than the budget of %llu bytes, "
                                     "of which inflating " OZ_MODEL_ENTRY " took %llu "
                                     "(max_memory, M-1)",
                                     (unsigned long long)budget,
                                     (unsigned long long)e.uncompressed_size));
    if (st != OC_OK) {
        oc_model_free(model);
        return st;
    }
    *out = model;
    return OC_OK;
}

oc_status oz_archive_load_model(const oz_archive *ar, const oc_parse_options *opts, oc_model **out,
                                oc_error *err) {
    return oz__archive_load_model_checked(ar, opts, NULL, NULL, out, err);
}

oc_status oz__archive_load_model_checked(const oz_archive *ar, const oc_parse_options *opts,
                                         oz__model_check_fn check, void *ctx, oc_model **out,
                                         oc_error *err) {
    if (!ar || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_archive_load_model: missing argument");
    OC_PARSE_OPTS(opts, err);
    oc_model *m;
    OC_FORWARD(decode_model(ar, opts, check, ctx, &m, err));
    /* the tensors stay in the mapping, read soon: the kernel told (oc_parse_options) */
    if (opts && opts->prefetch && opts->no_copy) oz__zip_reader_prefetch(ar->zip, ar->model_index);
    if (!opts || !opts->skip_external_data) {
        refs_ctx rc = {ar, err};
        /* every tensor's entry, in about file order */
        oz__zip_reader_will_read_all(ar->zip, ar->model_index);
        oc_status st = oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(m),
                                            check_tensor_reference, &rc);
        if (st == OC_OK)
            st = oc_external_data_load_with(&onnx_ModelProto_desc, oc_model_proto(m), resolve_entry,
                                            (void *)(uintptr_t)ar, opts, err);
        if (st != OC_OK) {
            oc_model_free(m);
            return st;
        }
    }
    *out = m;
    return OC_OK;
}

oz_zip_reader_options oz__zip_options_for(const oc_parse_options *opts) {
    oz_zip_reader_options zo = OZ_ZIP_READER_OPTIONS_INIT;
    if (opts) {
        zo.max_memory = opts->max_memory;
        zo.use_pread = opts->use_pread; /* read, not mapped: every tensor a copy */
        zo.http = opts->http;
    }
    return zo;
}

oc_status oz_archive_load(const char *path, const oc_parse_options *opts, oc_model **out,
                          oc_error *err) {
    OC_PARSE_OPTS(opts, err);
    oz_archive *ar;
    oz_zip_reader_options zo = oz__zip_options_for(opts);
    OC_FORWARD(oz_archive_open(path, &zo, &ar, err));
    oc_status st = oz_archive_load_model(ar, opts, out, err);
    oz_archive_close(ar); /* tensors keep the mapping alive on their own */
    return st;
}

typedef struct collect_ctx {
    tensor_index *x;
    size_t cap;
} collect_ctx;

static oc_status collect_tensor(void *ctx, onnx_TensorProto *t) {
    collect_ctx *c = ctx;
    if (c->x->count == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 64;
        tensor_slot *s = cap < SIZE_MAX / sizeof *s ? realloc(c->x->slots, cap * sizeof *s) : NULL;
        if (!s) return OC_ERR_NOMEM;
        c->x->slots = s;
        c->cap = cap;
    }
    c->x->slots[c->x->count] = (tensor_slot){t, c->x->count};
    c->x->count++;
    return OC_OK;
}

static int cmp_name(const char *a, uint64_t na, const char *b, uint64_t nb) {
    uint64_t n = na < nb ? na : nb;
    int c = n ? memcmp(a, b, n) : 0; /* an empty name's data may be NULL */
    return c ? c : (na > nb) - (na < nb);
}

static int cmp_slot(const void *pa, const void *pb) {
    const tensor_slot *a = pa, *b = pb;
    int c = cmp_name(a->t->name.data, a->t->name.size, b->t->name.data, b->t->name.size);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* Decodes __MODEL_PROTO as oz_archive_read_tensor always did and sorts its tensors. */
static oc_status build_index(const oz_archive *ar, tensor_index **out, oc_error *err) {
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.no_copy = 1;
    po.buffer.raw_data_threshold = 0;
    tensor_index *x = calloc(1, sizeof *x);
    if (!x) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_status st = decode_model(ar, &po, NULL, NULL, &x->model, err);
    if (st == OC_OK) {
        collect_ctx c = {x, 0};
        if (oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(x->model), collect_tensor,
                                 &c) != OC_OK)
            st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    if (st != OC_OK) {
        oc_model_free(x->model);
        free(x->slots);
        free(x);
        return st;
    }
    if (x->count > 1) qsort(x->slots, x->count, sizeof *x->slots, cmp_slot);
    *out = x;
    return OC_OK;
}

/* The archive's index, built by the first caller; a failed build is not kept, so every
 * call reports the same error as the first. */
static oc_status get_index(const oz_archive *ar, const tensor_index **out, oc_error *err) {
    oz_archive *mut = (oz_archive *)(uintptr_t)ar; /* the cache is not part of its value */
    if (!mut->lock_ready) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_status st = OC_OK;
    pthread_mutex_lock(&mut->lock);
    if (!mut->tix) st = build_index(ar, &mut->tix, err);
    *out = mut->tix;
    pthread_mutex_unlock(&mut->lock);
    return st;
}

/* The first tensor (in the model's order) of that name, or NULL. */
static onnx_TensorProto *lookup(const tensor_index *x, const char *name, size_t len) {
    size_t lo = 0, hi = x->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const oc_str *n = &x->slots[mid].t->name;
        if (cmp_name(n->data, n->size, name, len) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < x->count) {
        const oc_str *n = &x->slots[lo].t->name;
        if (n->size == len && (len == 0 || memcmp(n->data, name, len) == 0)) return x->slots[lo].t;
    }
    return NULL;
}

static oc_status read_tensor(const oz_archive *ar, const char *tensor_name, size_t name_len,
                             oc_bytes *out, oc_error *err) {
    const tensor_index *x = NULL;
    OC_FORWARD(get_index(ar, &x, err));
    onnx_TensorProto *found = lookup(x, tensor_name, name_len);
    oc_status st;
    if (!found) {
        char q[OC_QUOTE_SIZE];
        st = oc__fail(err, OC_ERR_NOT_FOUND, OC_NO_OFFSET, "the model has no tensor named '%s'",
                      oc_quote(tensor_name, name_len, q, sizeof q));
    } else {
        st = oz__archive_tensor_bytes(ar, found, out, err);
    }
    return st;
}

oc_status oz__archive_tensor_bytes(const oz_archive *ar, const onnx_TensorProto *t, oc_bytes *out,
                                   oc_error *err) {
    if (oc_tensor_is_typed(t)) return oc_tensor_typed_bytes(t, out, err); /* float_data ... */
    if (!oc_tensor_is_external(t)) return oc_bytes_copy(out, &t->raw_data, err); /* inline */
    oc_mapped mp;
    const oc_str *loc = oc_tensor_external_value(t, "location");
    char q[OC_QUOTE_SIZE];
    oc_status st =
        loc ? resolve_entry((void *)(uintptr_t)ar, t, loc, &mp, err)
            : oc__fail(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "tensor '%s' has no location",
                       oc_quote(t->name.data, t->name.size, q, sizeof q));
    if (st == OC_OK) {
        if (mp.owner)
            oc_bytes_set_shared(out, mp.data, mp.size, mp.owner);
        else
            oc_bytes_set_borrowed(out, mp.data, mp.size);
        oc_owner_unref(mp.owner);
    }
    return st;
}

oc_status oz_archive_read_tensor(const oz_archive *ar, const char *tensor_name, oc_bytes *out,
                                 oc_error *err) {
    if (!ar || !tensor_name || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_archive_read_tensor: missing argument");
    return read_tensor(ar, tensor_name, strlen(tensor_name), out, err);
}

oc_status oz_archive_read_tensor_n(const oz_archive *ar, const char *tensor_name, size_t name_len,
                                   oc_bytes *out, oc_error *err) {
    if (!ar || (!tensor_name && name_len) || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_archive_read_tensor_n: missing argument");
    return read_tensor(ar, tensor_name ? tensor_name : "", name_len, out, err);
}

/* ---- the layout rules, for verifiers ---- */

typedef struct layout_walk {
    const oz_zip_reader *zip;
    uint64_t model_index;
    oc_str *first_tensor; /* per entry: the first tensor naming it (size 0 ... none) */
    uint8_t *has_tensor;
} layout_walk;

bool oz_archive_tensor_entry(const oz_zip_reader *zip, const onnx_TensorProto *t, uint64_t *index) {
    if (!zip || !t || !index || !oc_tensor_is_external(t)) return false;
    const oc_str *loc = oc_tensor_external_value(t, "location");
    /* Entry names hold no NUL (Z-rules); a location that does names none. */
    if (!loc || (loc->size && memchr(loc->data, '\0', (size_t)loc->size))) return false;
    return oz__zip_reader_find_n(zip, loc->data, (size_t)loc->size, index);
}

static oc_status layout_ref(void *ctx, onnx_TensorProto *t) {
    layout_walk *w = ctx;
    uint64_t index;
    /* A location that names no entry is refused by loading, not here. */
    if (!oz_archive_tensor_entry(w->zip, t, &index)) return OC_OK;
    if (!w->has_tensor[index]) {
        w->has_tensor[index] = 1;
        w->first_tensor[index] = t->name;
    }
    return OC_OK;
}

static const char *layout_method_name(uint16_t method, char *buf, size_t size) {
    if (method == OZ_ZIP_STORED) return "stored";
    if (method == OZ_ZIP_DEFLATED) return "deflated";
    snprintf(buf, size, "method %u", (unsigned)method);
    return buf;
}

/* The rules, entries in central-directory order; w filled. */
static oc_status layout_check(const layout_walk *w, uint64_t count, oc_error *err) {
    oz_zip_entry model, e;
    uint64_t rank = 0;
    char buf[32], qe[OC_QUOTE_SIZE], qt[OC_QUOTE_SIZE];
    OC_FORWARD(oz_zip_reader_entry(w->zip, w->model_index, &model, err));
    if (w->model_index + 1 != count)
        return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "A-2",
                             OZ_MODEL_ENTRY " is entry %llu of %llu in the central directory, "
                                            "not the last",
                             (unsigned long long)w->model_index + 1, (unsigned long long)count);
    for (uint64_t i = 0; i < count; i++) {
        OC_FORWARD(oz_zip_reader_entry(w->zip, i, &e, err));
        if (e.local_header_offset < model.local_header_offset) rank++;
    }
    if (rank + 1 != count)
        return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "A-2",
                             OZ_MODEL_ENTRY " is not the last entry in the file: its data at "
                                            "offset %llu comes before other entries'",
                             (unsigned long long)model.data_offset);
    for (uint64_t i = 0; i < count; i++) {
        OC_FORWARD(oz_zip_reader_local(w->zip, i, err)); /* data_offset, where deferred */
        OC_FORWARD(oz_zip_reader_entry(w->zip, i, &e, err));
        oc_quote(e.name, e.name_len, qe, sizeof qe);
        if (i != w->model_index && w->has_tensor[i] && e.method != OZ_ZIP_STORED) {
            const oc_str *t = &w->first_tensor[i];
            return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "A-3",
                                 "entry '%s' of tensor '%s' is %s, not stored: it cannot be "
                                 "mapped in place",
                                 qe, oc_quote(t->data, t->size, qt, sizeof qt),
                                 layout_method_name(e.method, buf, sizeof buf));
        }
        if (e.method == OZ_ZIP_STORED && e.data_offset % OZ_ZIP_DEFAULT_ALIGNMENT != 0)
            return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "A-4",
                                 "entry '%s' has its data at offset %llu, not on a %u-byte "
                                 "boundary",
                                 qe, (unsigned long long)e.data_offset, OZ_ZIP_DEFAULT_ALIGNMENT);
    }
    return OC_OK;
}

oc_status oz_archive_check_layout(const oz_archive *ar, const onnx_ModelProto *model,
                                  oc_error *err) {
    layout_walk w;
    uint64_t count;
    oc_status st;
    OC_RETURN_ERROR_IF(!ar || !model, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "oz_archive_check_layout: NULL archive or model");
    memset(&w, 0, sizeof w);
    w.zip = oz_archive_zip(ar);
    oz__zip_reader_will_read_locals(w.zip); /* A-4 needs every data offset */
    count = oz_zip_reader_count(w.zip);
    OC_FORWARD(oz_zip_reader_find(w.zip, OZ_MODEL_ENTRY, &w.model_index, err));
    w.first_tensor = calloc((size_t)count, sizeof *w.first_tensor);
    w.has_tensor = calloc((size_t)count, 1);
    if (!w.first_tensor || !w.has_tensor)
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory checking the layout");
    else if (oc_msg_visit_tensors(&onnx_ModelProto_desc, (onnx_ModelProto *)model, layout_ref,
                                  &w) != OC_OK)
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory checking the layout");
    else
        st = layout_check(&w, count, err);
    free(w.first_tensor);
    free(w.has_tensor);
    return st;
}

/* ---- outputs ---------------------------------------------------------------------- */

oc_status oz__refuse_url_output(const char *path, oc_error *err) {
    char shown[OC_ERROR_MESSAGE_MAX];
    if (!path || !oc_is_url(path)) return OC_OK;
    oc_path_shown(path, shown, sizeof shown);
    return oc_error_file(err, path,
                         oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                  "%s is a URL: onnxz writes local files only", shown));
}
