/*
 * unpack.c - an archive unpacked into a directory (onnxz/unpack.h, spec/onnxz.md A-30,
 * The model is written byte for byte as the archive holds it: its tensors already
 * name their entries in `location`, so the files beside it are exactly its external
 * data. The one exception: a tensor whose entry is empty is written inside the
 * model.
 */
#include "onnxz/unpack.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal/onnxcore_atomic.h"
#include "internal/options.h"
#include "internal/archive.h"
#include "internal/error.h"
#include "internal/cleanup.h"
#include "onnxcore/external.h"
#include "onnxz/archive.h"

static oc_status nomem(oc_error *err) {
    return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
}

/* ---- what this call created, taken back on a failure ------------------------------ */

/* Each new file and directory, in the order made, also registered with the signal
 * cleanup (onnxcore/cleanup.h) so that a process killed half-way loses them too. A path
 * is listed before it is created, so no moment exists where a signal would leave it
 * behind (removing a name that is not there yet does nothing). Zero-initialised is
 * empty. */
typedef struct made_list {
    struct made {
        char *path;
        bool is_dir;
        oc_cleanup_entry *cleanup;
    } * items;
    size_t count, cap;
} made_list;

static bool made_add(made_list *l, const char *path, bool is_dir) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        struct made *items = realloc(l->items, cap * sizeof *items);
        if (!items) return false;
        l->items = items;
        l->cap = cap;
    }
    struct made *m = &l->items[l->count];
    m->path = strdup(path);
    m->is_dir = is_dir;
    m->cleanup = m->path ? oc_cleanup_register(path, is_dir) : NULL;
    if (!m->cleanup) {
        free(m->path);
        return false;
    }
    l->count++;
    return true;
}

/* Takes the last path off the list (it was not created after all). */
static void made_pop(made_list *l) {
    struct made *m = &l->items[--l->count];
    oc_cleanup_forget(m->cleanup);
    free(m->path);
}

/* Forgets the list; with undo, removes what it names first, newest first (so directories
 * are empty by then). */
static void made_end(made_list *l, bool undo) {
    for (size_t i = l->count; i-- > 0;) {
        if (undo && l->items[i].is_dir)
            rmdir(l->items[i].path);
        else if (undo)
            unlink(l->items[i].path);
        oc_cleanup_forget(l->items[i].cleanup);
        free(l->items[i].path);
    }
    free(l->items);
    memset(l, 0, sizeof *l);
}

/* ---- the checks before anything is written ---------------------------------------- */

/* *exists: DIR is there (a directory: anything else is refused, and so is one that has
 * anything in it with no_overwrite). */
static oc_status check_dir(const char *dir, int no_overwrite, bool *exists, oc_error *err) {
    struct stat st;
    struct dirent *ent;
    bool empty = true;
    *exists = false;
    if (stat(dir, &st) != 0)
        return errno == ENOENT ? OC_OK : oc__fail_errno(err, errno, "cannot use the directory");
    if (!S_ISDIR(st.st_mode))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "not a directory");
    *exists = true;
    if (!no_overwrite) return OC_OK;
    DIR *d = opendir(dir);
    if (!d) return oc__fail_errno(err, errno, "cannot read the directory");
    while (empty && (ent = readdir(d)) != NULL)
        empty = strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0;
    closedir(d);
    return empty ? OC_OK : oc__fail(err, OC_ERR_EXISTS, OC_NO_OFFSET, "directory is not empty");
}

/* Everything extraction relies on: the ZIP rules, every CRC, no name both a file and a
 * directory (Z-36), the model decodes and its tensors resolve to entries (the checks of
 * oz_archive_verify, less the layout rules, which do not matter here). */
static oc_status open_checked(const char *path, uint64_t max_memory, oz_archive **out,
                              oc_error *err) {
    oz_zip_reader_options zo = OZ_ZIP_READER_OPTIONS_INIT;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oc_model *model = NULL;
    zo.max_memory = po.max_memory = max_memory;
    po.no_copy = 1;
    oc_status st = oz_archive_open(path, &zo, out, err);
    if (st == OC_OK) st = oz_zip_reader_verify_all(oz_archive_zip(*out), err);
    if (st == OC_OK) st = oz_zip_reader_check_paths(oz_archive_zip(*out), err);
    if (st == OC_OK) st = oz_archive_load_model(*out, &po, &model, err);
    oc_model_free(model);
    if (st != OC_OK) {
        oz_archive_close(*out);
        *out = NULL;
    }
    return st;
}

/* DIR/NAME in a new string; NULL when out of memory. */
static char *join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

/* The name an entry takes in DIR: its own, or model.onnx for __MODEL_PROTO. */
static const char *target_name(const oz_zip_entry *e) {
    return strcmp(e->name, OZ_MODEL_ENTRY) == 0 ? OZ_UNPACK_MODEL_FILE : e->name;
}

/* The archive's names: none nested past OZ_UNPACK_MAX_DEPTH (K-1), none taking the
 * model's name, model.onnx, or making it a directory (the reader has checked the names
 * themselves and that none is both a file and a directory, Z-30..Z-36). */
static oc_status check_names(const oz_zip_reader *zip, oc_error *err) {
    size_t mlen = strlen(OZ_UNPACK_MODEL_FILE);
    char q[OC_QUOTE_SIZE];
    oz_zip_entry e;
    for (uint64_t i = 0; i < oz_zip_reader_count(zip); i++) {
        OC_FORWARD(oz_zip_reader_entry(zip, i, &e, err));
        if (strcmp(e.name, OZ_MODEL_ENTRY) == 0) continue;
        uint64_t depth = 0;
        for (const char *p = e.name; (p = strchr(p, '/')) != NULL; p++) depth++;
        if (depth > OZ_UNPACK_MAX_DEPTH)
            return oc__fail_rule(err, OC_ERR_LIMIT, OC_NO_OFFSET, "K-1",
                                 "entry %s is nested %" PRIu64 " directories deep, more than "
                                 "unpack's limit of %d",
                                 oc_quote(e.name, e.name_len, q, sizeof q), depth,
                                 OZ_UNPACK_MAX_DEPTH);
        if (strncmp(e.name, OZ_UNPACK_MODEL_FILE, mlen) == 0 &&
            (e.name[mlen] == '\0' || e.name[mlen] == '/'))
            return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                            "has an entry named %s, and " OZ_UNPACK_MODEL_FILE
                            " is the name the model takes when unpacked",
                            oc_quote(e.name, e.name_len, q, sizeof q));
    }
    return OC_OK;
}

/* In an existing DIR: every directory on the way to the entry's file is a directory or
 * absent (never a file or a symbolic link), and no file would land where a directory is. */
static oc_status check_target(const char *dir, char *path, oc_error *err) {
    struct stat st;
    char q[OC_QUOTE_SIZE];
    oc_status rc = OC_OK;
    size_t len = strlen(path);
    bool is_dir_entry = path[len - 1] == '/';
    /* Each parent directory, and a directory entry's own. */
    for (char *s = path + strlen(dir) + 1; rc == OC_OK && (s = strchr(s, '/')); s++) {
        *s = '\0';
        if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode))
            rc = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                          "%s exists and is not a directory%s",
                          oc_quote(path, strlen(path), q, sizeof q),
                          S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
        *s = '/';
    }
    if (rc == OC_OK && !is_dir_entry && lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
        rc = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                      "%s is a directory, where the archive has a file",
                      oc_quote(path, strlen(path), q, sizeof q));
    return rc;
}

static oc_status check_targets(const oz_zip_reader *zip, const char *dir, oc_error *err) {
    oz_zip_entry e;
    for (uint64_t i = 0; i < oz_zip_reader_count(zip); i++) {
        OC_FORWARD(oz_zip_reader_entry(zip, i, &e, err));
        char *path = join(dir, target_name(&e));
        if (!path) return nomem(err);
        oc_status st = check_target(dir, path, err);
        free(path);
        OC_FORWARD(st);
    }
    return OC_OK;
}

/* ---- writing ----------------------------------------------------------------------- */

typedef struct unpacker {
    const char *dir;
    const oz_zip_reader *zip;
    const oz_unpack_options *opts;
    made_list made;
    oz_unpack_info *found;
    oc_error *err;
} unpacker;

/* mkdir, with the directory listed first. Returns 0, or -1 with errno (ENOMEM when it
 * could not be listed: then nothing was created). */
static int mkdir_listed(unpacker *u, const char *path) {
    if (!made_add(&u->made, path, true)) {
        errno = ENOMEM;
        return -1;
    }
    if (mkdir(path, 0777) == 0) return 0;
    int e = errno;
    made_pop(&u->made); /* not ours: take it off the list again */
    errno = e;
    return -1;
}

/* Creates the directory `path` unless it is one already. Something else in its place, a
 * symbolic link included, is refused: nothing may be written outside DIR. */
static oc_status make_dir(unpacker *u, const char *path) {
    struct stat st;
    char q[OC_QUOTE_SIZE];
    if (mkdir_listed(u, path) == 0) return OC_OK;
    if (errno == EEXIST && lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) return OC_OK;
    int e = errno;
    oc_quote(path, strlen(path), q, sizeof q);
    if (e == EEXIST)
        return oc__fail(u->err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "%s exists and is not a directory", q);
    return oc__fail_errno(u->err, e, "cannot create directory %s", q);
}

/* The directories on the way to DIR/NAME (NAME's own, too, when it ends in '/'). */
static oc_status make_parents(unpacker *u, char *path) {
    oc_status st = OC_OK;
    for (char *s = path + strlen(u->dir) + 1; st == OC_OK && (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        st = make_dir(u, path);
        *s = '/';
    }
    return st;
}

/* Writes bytes to path through a temporary file renamed into place (synced first, unless
 * no_sync); bytes shared from the archive's mapping are copied file to file by the kernel
 * (oc_atomic_write_bytes). */
static oc_status write_file(unpacker *u, const char *path, const oc_bytes *bytes) {
    oc_atomic_file af;
    struct stat old;
    if (u->opts->cancel && u->opts->cancel(u->opts->cancel_ctx))
        return oc__fail(u->err, OC_ERR_CANCELLED, OC_NO_OFFSET, "cancelled");
    if (lstat(path, &old) != 0 && !made_add(&u->made, path, false)) return nomem(u->err);
    /* A file the model names: never standard output nor a stream (S-41). */
    OC_FORWARD(oc_atomic_open_for(&af, path, false, OC_ATOMIC_NAMED, u->err));
    af.no_sync = u->opts->no_sync;
    oc_status st = oc_atomic_write_bytes(&af, bytes, u->err);
    if (st == OC_OK) st = oc_atomic_commit(&af, u->err);
    oc_atomic_abort(&af);
    return st;
}

/* Writes entry `index` as `path`: its bytes shared from the mapping (stored) or inflated
 * (deflated), never more than one entry in memory at a time. */
static oc_status extract(unpacker *u, uint64_t index, const char *path) {
    oc_bytes bytes;
    memset(&bytes, 0, sizeof bytes);
    oc_status st = oz_zip_reader_read(u->zip, index, &bytes, u->err);
    if (st != OC_OK) {
        u->found->input_failed = true;
        return st;
    }
    st = write_file(u, path, &bytes);
    oc_bytes_release(&bytes);
    return st;
}

/* references to empty entries (other writers make them; ours never do, A-14) become
 * empty raw_data inside the model, since ONNX Runtime and onnx.load read a reference of
 * length 0 as "to the end of the file". */
typedef struct empty_refs {
    const oz_zip_reader *zip;
    uint64_t count;
} empty_refs;

static bool refers_to_empty_entry(const oz_zip_reader *zip, const onnx_TensorProto *t) {
    uint64_t offset, length, index;
    bool has_offset, has_length;
    oz_zip_entry e;
    const oc_str *loc = oc_tensor_external_value(t, "location");
    if (!loc ||
        oc_tensor_external_range(t, &offset, &has_offset, &length, &has_length, NULL) != OC_OK)
        return false;
    if (has_length) return length == 0;
    char *name = malloc(loc->size + 1);
    if (!name) return false;
    memcpy(name, loc->data, loc->size);
    name[loc->size] = '\0';
    bool empty = oz_zip_reader_find(zip, name, &index, NULL) == OC_OK &&
                 oz_zip_reader_entry(zip, index, &e, NULL) == OC_OK && e.uncompressed_size == 0;
    free(name);
    return empty;
}

static oc_status inline_empty(void *ctx, onnx_TensorProto *t) {
    empty_refs *r = ctx;
    if (!oc_tensor_is_external(t) || !refers_to_empty_entry(r->zip, t)) return OC_OK;
    t->external_data.count = 0;
    t->data_location = 0;
    OC_CLEAR_HAS(TensorProto, t, data_location);
    memset(&t->raw_data, 0, sizeof t->raw_data);
    OC_SET_HAS(TensorProto, t, raw_data);
    r->count++;
    return OC_OK;
}

/* Writes __MODEL_PROTO as DIR/model.onnx: byte for byte, or re-encoded when A-31 moved
 * tensors inside it. */
static oc_status extract_model(unpacker *u, uint64_t index, const char *path) {
    oc_bytes bytes, encoded;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    oc_model *model = NULL;
    empty_refs refs = {u->zip, 0};
    void *out = NULL;
    uint64_t size = 0;
    memset(&bytes, 0, sizeof bytes);
    po.skip_external_data = 1;
    oc_status st = oz_zip_reader_read(u->zip, index, &bytes, u->err);
    if (st == OC_OK) st = oc_model_load_memory(bytes.data, bytes.size, &po, &model, u->err);
    if (st == OC_OK)
        st =
            oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(model), inline_empty, &refs);
    if (st == OC_OK && refs.count) st = oc_model_save_memory(model, NULL, &out, &size, u->err);
    oc_model_free(model);
    if (st != OC_OK) {
        u->found->input_failed = true;
        oc_bytes_release(&bytes);
        return st;
    }
    memset(&encoded, 0, sizeof encoded);
    encoded.data = out;
    encoded.size = size;
    encoded.mode = OC_BYTES_BORROWED;
    st = write_file(u, path, refs.count ? &encoded : &bytes);
    free(out);
    oc_bytes_release(&bytes);
    return st;
}

/* Every entry as its file, the model last: it never names data that is not in place (as
 * E-24 orders it). */
static oc_status unpack_entries(unpacker *u) {
    uint64_t count = oz_zip_reader_count(u->zip), model_index = 0;
    oz_zip_entry e;
    oc_status st = OC_OK;
    for (uint64_t i = 0; st == OC_OK && i < count; i++) {
        OC_FORWARD(oz_zip_reader_entry(u->zip, i, &e, u->err));
        if (strcmp(e.name, OZ_MODEL_ENTRY) == 0) {
            model_index = i;
            continue;
        }
        char *path = join(u->dir, e.name);
        if (!path) return nomem(u->err);
        st = make_parents(u, path);
        if (st == OC_OK && e.name[e.name_len - 1] != '/') { /* not a directory entry */
            st = extract(u, i, path);
            u->found->files++;
            u->found->bytes += e.uncompressed_size;
        }
        free(path);
    }
    OC_FORWARD(st);
    char *path = join(u->dir, OZ_UNPACK_MODEL_FILE);
    if (!path) return nomem(u->err);
    st = extract_model(u, model_index, path);
    free(path);
    return st;
}

/* ---- oz_unpack_file ---------------------------------------------------------------- */

void oz_unpack_options_init(oz_unpack_options *opts) {
    static const oz_unpack_options defaults = OZ_UNPACK_OPTIONS_INIT;
    *opts = defaults;
}

/* The fields of found that the caller's info holds (by its size). */
static void info_put(oz_unpack_info *info, const oz_unpack_info *found) {
    if (info) oc__output_put(info, found, sizeof *found);
}

/* Checks everything that can be known before writing, then writes; a failure half-way
 * (a full disk, a race, a cancel) takes back what this call created. */
static oc_status unpack(const char *archive, const char *dir, const oz_unpack_options *opts,
                        oz_unpack_info *found, oc_error *err) {
    unpacker u = {dir, NULL, opts, {NULL, 0, 0}, found, err};
    oz_archive *ar = NULL;
    bool exists;
    OC_FORWARD(check_dir(dir, opts->no_overwrite, &exists, err));
    found->input_failed = true;
    OC_FORWARD(open_checked(archive, opts->max_memory, &ar, err));
    u.zip = oz_archive_zip(ar);
    oc_status st = check_names(u.zip, err);
    found->input_failed = st != OC_OK;
    if (st == OC_OK && exists) st = check_targets(u.zip, dir, err);
    if (st == OC_OK && !exists && mkdir_listed(&u, dir) != 0)
        st = oc__fail_errno(err, errno, "cannot create directory");
    if (st == OC_OK) st = unpack_entries(&u);
    oz_archive_close(ar);
    made_end(&u.made, st != OC_OK);
    return st;
}

oc_status oz_unpack_file(const char *archive, const char *dir, const oz_unpack_options *opts,
                         oz_unpack_info *info, oc_error *err) {
    oz_unpack_info found = OZ_UNPACK_INFO_INIT;
    oz_unpack_options full;
    if (info) OC_FORWARD(oc__output_check(info, info->size, "oz_unpack_info", err));
    oc_status st;
    if (!archive || !dir || !dir[0])
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oz_unpack_file: missing argument");
    else if (strcmp(dir, "-") == 0) /* standard output, wherever an output is named (S-41) */
        st = oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                      "DIR '-': standard output cannot be a directory of files");
    else if ((st = oz__refuse_url_output(dir, err)) == OC_OK)
        st = oz__unpack_opts(&opts, &full, err);
    if (st == OC_OK) st = unpack(archive, dir, opts, &found, err);
    if (st != OC_OK) found.files = found.bytes = 0;
    info_put(info, &found);
    return st;
}
