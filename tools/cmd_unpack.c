/*
 * tools/cmd_unpack.c - `onnxz unpack ARCHIVE DIR`: an archive as a classic external-data
 * model (spec/onnxz.md A-30): every entry becomes a file of the same name in DIR, and
 * __MODEL_PROTO becomes DIR/model.onnx. The model is written byte for byte as the archive
 * holds it: its tensors already name their entries in `location`, so the files beside it
 * are exactly its external data, and any ONNX reader loads DIR/model.onnx. The one
 * exception: a tensor whose entry is empty is written inside the model.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <onnxcore/external.h>
#include <onnxz/archive.h>

#include "cli.h"
#include "interrupt.h"
#include "load.h"
#include "onnxcore_private.h"

enum { UNPACK_OPT_FORCE = 0, UNPACK_OPT_NO_SYNC };

static const cli_option unpack_options[] = {
    {'f', "force", false},
    {'\0', "no-sync", false},
    {'\0', NULL, false},
};

static const char *const unpack_arg_names[] = {"ARCHIVE", "DIR"};

#define UNPACK_MODEL_FILE "model.onnx"

/* Directories an entry name may nest (spec/security.md K-1). Making and checking the
 * parents of a name of d levels takes d system calls that each walk up to d levels, so
 * d is bounded: 64 levels cost a few thousand steps per entry, where 2,000 levels (a
 * 4 KB name) cost millions and an 8 MB archive kept unpack busy for ten minutes and
 * more. Tensor entries are never nested; this is far beyond any real archive. */
#define UNPACK_MAX_DEPTH 64

/* 1 when DIR exists, 0 when not; refuses a DIR that is not a directory, and one that has
 * anything in it unless force. */
static int check_dir(const char *dir, bool force, int *exists) {
    struct stat st;
    DIR *d;
    struct dirent *ent;
    int empty = 1;
    *exists = 0;
    if (stat(dir, &st) != 0) {
        if (errno == ENOENT) return CLI_EXIT_OK;
        return cli_fail_msg(dir, "%s", strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) return cli_fail_msg(dir, "not a directory");
    *exists = 1;
    if (force) return CLI_EXIT_OK;
    d = opendir(dir);
    if (!d) return cli_fail_msg(dir, "cannot read the directory: %s", strerror(errno));
    while ((ent = readdir(d)) != NULL)
        if (strcmp(ent->d_name, ".") != 0 && strcmp(ent->d_name, "..") != 0) {
            empty = 0;
            break;
        }
    closedir(d);
    if (!empty) return cli_fail_msg(dir, "directory is not empty; use -f to write into it");
    return CLI_EXIT_OK;
}

/* Everything extraction relies on, before a single file is written: the ZIP rules, every
 * CRC, no name both a file and a directory (Z-36), the model decodes and its tensors
 * resolve to entries (the checks of `verify`, less the layout rules, which do not matter
 * here). */
static int open_checked(const char *path, int verbosity, oz_archive **out) {
    oc_error err;
    oc_parse_options opts;
    oc_model *model = NULL;
    oc_status st;
    double start = cli_now_ms();
    oc_error_clear(&err);
    *out = NULL;
    st = cli_archive_open(path, out, &err);
    if (st == OC_OK) st = oz_zip_reader_verify_all(oz_archive_zip(*out), &err);
    if (st == OC_OK) st = oz_zip_reader_check_paths(oz_archive_zip(*out), &err);
    cli_parse_options_init(&opts);
    opts.no_copy = 1;
    if (st == OC_OK) st = oz_archive_load_model(*out, &opts, &model, &err);
    oc_model_free(model);
    if (st != OC_OK) {
        oz_archive_close(*out);
        *out = NULL;
        return cli_fail(path, &err);
    }
    cli_note(verbosity, CLI_VERBOSE, "checked %s in %.1f ms", path, cli_now_ms() - start);
    return CLI_EXIT_OK;
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

/* mkdir, with the directory listed first (as write_file lists a new file). Returns 0, or
 * -1 with errno (ENOMEM when it could not be listed: then nothing was created). */
static int mkdir_listed(const char *path, interrupt_list *made) {
    if (!interrupt_list_add(made, path, true)) {
        errno = ENOMEM;
        return -1;
    }
    if (mkdir(path, 0777) == 0) return 0;
    int e = errno;
    interrupt_list_pop(made); /* not ours: take it off the list again */
    errno = e;
    return -1;
}

/* Creates the directory `path` unless it is one already. Something else in its place, a
 * symbolic link included, is refused: nothing may be written outside DIR. */
static int make_dir(const char *dir, const char *path, interrupt_list *made) {
    struct stat st;
    if (mkdir_listed(path, made) == 0) return CLI_EXIT_OK;
    if (errno == EEXIST && lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) return CLI_EXIT_OK;
    int e = errno;
    char q[OC_QUOTE_SIZE];
    oc_quote(path, strlen(path), q, sizeof q);
    if (e == EEXIST) return cli_fail_msg(dir, "%s exists and is not a directory", q);
    return cli_fail_msg(dir, "cannot create directory %s: %s", q, strerror(e));
}

/* The directories on the way to DIR/NAME (NAME's own, too, when it ends in '/'). */
static int make_parents(const char *dir, const char *path, size_t dir_len, interrupt_list *made) {
    char *p = strdup(path);
    int rc = CLI_EXIT_OK;
    if (!p) return cli_fail_msg(dir, "out of memory");
    for (char *s = p + dir_len + 1; rc == CLI_EXIT_OK && (s = strchr(s, '/')) != NULL; s++) {
        *s = '\0';
        rc = make_dir(dir, p, made);
        *s = '/';
    }
    free(p);
    return rc;
}

/* Writes bytes to path through a temporary file renamed into place (synced first, unless
 * no_sync); bytes shared from the archive's mapping are copied file to file by the kernel
 * (oc_atomic_write_bytes). */
static int write_file(const char *path, const oc_bytes *bytes, bool no_sync, interrupt_list *made) {
    oc_atomic_file af;
    oc_error err;
    oc_status st;
    struct stat old;
    /* A new file is listed before it appears, so no moment exists where a signal would
     * leave it behind (removing a name that is not there yet does nothing). */
    if (lstat(path, &old) != 0 && !interrupt_list_add(made, path, false))
        return cli_fail_msg(path, "out of memory");
    oc_error_clear(&err);
    st = oc_atomic_open_for(&af, path, 1, OC_ATOMIC_NAMED, &err); /* the model names them */
    if (st != OC_OK) return cli_fail(path, &err);
    af.no_sync = no_sync;
    st = oc_atomic_write_bytes(&af, bytes, &err);
    if (st == OC_OK) st = oc_atomic_commit(&af, &err);
    oc_atomic_abort(&af);
    if (st != OC_OK) return cli_fail(path, &err);
    return CLI_EXIT_OK;
}

/* Writes entry `index` as `path`: its bytes shared from the mapping (stored) or inflated
 * (deflated), never more than one entry in memory at a time. */
static int extract(const char *archive, const oz_zip_reader *zip, uint64_t index, const char *path,
                   bool no_sync, interrupt_list *made) {
    oc_bytes bytes;
    oc_error err;
    int rc;
    memset(&bytes, 0, sizeof bytes);
    oc_error_clear(&err);
    if (oz_zip_reader_read(zip, index, &bytes, &err) != OC_OK) return cli_fail(archive, &err);
    rc = write_file(path, &bytes, no_sync, made);
    oc_bytes_release(&bytes);
    return rc;
}

/* references to empty entries (other writers make them; ours never do, A-14) become
 * empty raw_data inside the model, since ONNX Runtime and onnx.load read a reference of
 * length 0 as "to the end of the file". */
typedef struct empty_refs {
    const oz_zip_reader *zip;
    uint64_t count;
} empty_refs;

static int refers_to_empty_entry(const oz_zip_reader *zip, const onnx_TensorProto *t) {
    uint64_t offset, length, index;
    int has_offset, has_length;
    oz_zip_entry e;
    oc_error err;
    const oc_str *loc = oc_tensor_external_value(t, "location");
    char *name;
    oc_error_clear(&err);
    if (!loc ||
        oc_tensor_external_range(t, &offset, &has_offset, &length, &has_length, &err) != OC_OK)
        return 0;
    if (has_length) return length == 0;
    name = malloc(loc->size + 1);
    if (!name) return 0;
    memcpy(name, loc->data, loc->size);
    name[loc->size] = '\0';
    int empty = oz_zip_reader_find(zip, name, &index, &err) == OC_OK &&
                oz_zip_reader_entry(zip, index, &e, &err) == OC_OK && e.uncompressed_size == 0;
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
static int extract_model(const char *archive, const oz_zip_reader *zip, uint64_t index,
                         const char *path, bool no_sync, interrupt_list *made) {
    oc_bytes bytes, encoded;
    oc_parse_options po;
    oc_model *model = NULL;
    empty_refs refs = {zip, 0};
    void *out = NULL;
    uint64_t size = 0;
    oc_error err;
    oc_status st;
    int rc;
    memset(&bytes, 0, sizeof bytes);
    oc_error_clear(&err);
    if (oz_zip_reader_read(zip, index, &bytes, &err) != OC_OK) return cli_fail(archive, &err);
    oc_parse_options_init(&po);
    po.skip_external_data = 1;
    st = oc_model_load_memory(bytes.data, bytes.size, &po, &model, &err);
    if (st == OC_OK)
        st =
            oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(model), inline_empty, &refs);
    if (st == OC_OK && refs.count) st = oc_model_save_memory(model, NULL, &out, &size, &err);
    oc_model_free(model);
    if (st != OC_OK) {
        oc_bytes_release(&bytes);
        return cli_fail(archive, &err);
    }
    memset(&encoded, 0, sizeof encoded);
    encoded.data = out;
    encoded.size = size;
    encoded.mode = OC_BYTES_BORROWED;
    rc = write_file(path, refs.count ? &encoded : &bytes, no_sync, made);
    free(out);
    oc_bytes_release(&bytes);
    return rc;
}

/* The name an entry takes in DIR: its own, or model.onnx for __MODEL_PROTO. */
static const char *target_name(const oz_zip_entry *e) {
    return strcmp(e->name, OZ_MODEL_ENTRY) == 0 ? UNPACK_MODEL_FILE : e->name;
}

/* The plan, checked whole before anything is written. The archive: no entry may take the
 * model's name, model.onnx, or make it a directory (the reader has checked the names
 * themselves and that none is both a file and a directory, Z-30..Z-36). DIR, when it
 * exists (-f): every directory on the way to an entry is a directory or absent (never a
 * file or a symbolic link), and no file would land where a directory is. */
static int check_plan(const char *archive, const oz_zip_reader *zip, const char *dir,
                      bool dir_exists) {
    uint64_t count = oz_zip_reader_count(zip);
    size_t mlen = strlen(UNPACK_MODEL_FILE);
    oz_zip_entry e;
    oc_error err;
    oc_error_clear(&err);
    for (uint64_t i = 0; i < count; i++) {
        if (oz_zip_reader_entry(zip, i, &e, &err) != OC_OK) return cli_fail(archive, &err);
        if (strcmp(e.name, OZ_MODEL_ENTRY) == 0) continue;
        uint64_t depth = 0;
        for (const char *p = e.name; (p = strchr(p, '/')) != NULL; p++) depth++;
        if (depth > UNPACK_MAX_DEPTH) {
            char q[OC_QUOTE_SIZE];
            return cli_fail_msg(archive,
                                "entry %s is nested %" PRIu64 " directories deep, "
                                "more than unpack's limit of %d",
                                oc_quote(e.name, e.name_len, q, sizeof q), depth, UNPACK_MAX_DEPTH);
        }
        if (strncmp(e.name, UNPACK_MODEL_FILE, mlen) == 0 &&
            (e.name[mlen] == '\0' || e.name[mlen] == '/')) {
            char q[OC_QUOTE_SIZE];
            return cli_fail_msg(archive,
                                "has an entry named %s, and " UNPACK_MODEL_FILE
                                " is the name the model takes when unpacked",
                                oc_quote(e.name, e.name_len, q, sizeof q));
        }
    }
    if (!dir_exists) return CLI_EXIT_OK;
    for (uint64_t i = 0; i < count; i++) {
        struct stat st;
        char *path;
        int rc = CLI_EXIT_OK;
        if (oz_zip_reader_entry(zip, i, &e, &err) != OC_OK) return cli_fail(archive, &err);
        path = join(dir, target_name(&e));
        if (!path) return cli_fail_msg(dir, "out of memory");
        size_t len = strlen(path);
        bool is_dir_entry = path[len - 1] == '/';
        /* Each parent directory, and a directory entry's own. */
        char q[OC_QUOTE_SIZE];
        for (char *s = path + strlen(dir) + 1; rc == CLI_EXIT_OK && (s = strchr(s, '/')); s++) {
            *s = '\0';
            if (lstat(path, &st) == 0 && !S_ISDIR(st.st_mode))
                rc = cli_fail_msg(dir, "%s exists and is not a directory%s",
                                  oc_quote(path, strlen(path), q, sizeof q),
                                  S_ISLNK(st.st_mode) ? " (a symbolic link)" : "");
            *s = '/';
        }
        if (rc == CLI_EXIT_OK && !is_dir_entry && lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
            rc = cli_fail_msg(dir, "%s is a directory, where the archive has a file",
                              oc_quote(path, strlen(path), q, sizeof q));
        free(path);
        if (rc != CLI_EXIT_OK) return rc;
    }
    return CLI_EXIT_OK;
}

typedef struct unpack_result {
    uint64_t files;
    uint64_t bytes;
} unpack_result;

static int unpack_entries(const char *archive, const oz_archive *ar, const char *dir, bool no_sync,
                          unpack_result *res, interrupt_list *made) {
    const oz_zip_reader *zip = oz_archive_zip(ar);
    uint64_t count = oz_zip_reader_count(zip), model_index = 0;
    size_t dir_len = strlen(dir);
    oz_zip_entry e;
    oc_error err;
    int rc = CLI_EXIT_OK;
    char *path;
    oc_error_clear(&err);
    for (uint64_t i = 0; rc == CLI_EXIT_OK && i < count; i++) {
        if (oz_zip_reader_entry(zip, i, &e, &err) != OC_OK) return cli_fail(archive, &err);
        if (strcmp(e.name, OZ_MODEL_ENTRY) == 0) {
            model_index = i;
            continue;
        }
        path = join(dir, e.name);
        if (!path) return cli_fail_msg(dir, "out of memory");
        rc = make_parents(dir, path, dir_len, made);
        if (rc == CLI_EXIT_OK && e.name[e.name_len - 1] != '/') { /* not a directory entry */
            rc = extract(archive, zip, i, path, no_sync, made);
            res->files++;
            res->bytes += e.uncompressed_size;
        }
        free(path);
    }
    if (rc != CLI_EXIT_OK) return rc;
    /* The model last: it never names data that is not in place (as E-24 orders it). */
    path = join(dir, UNPACK_MODEL_FILE);
    if (!path) return cli_fail_msg(dir, "out of memory");
    rc = extract_model(archive, zip, model_index, path, no_sync, made);
    free(path);
    return rc;
}

static int run_unpack(const cli_args *args) {
    const char *archive = args->positional[0];
    const char *dir = args->positional[1];
    bool force = args->seen[UNPACK_OPT_FORCE];
    oz_archive *ar = NULL;
    unpack_result res;
    interrupt_list made; /* what this run created: taken back on a failure or a signal */
    double start;
    int exists = 0;
    int rc;
    if (!dir[0])
        rc = cli_usage_error("unpack", "the output directory name is empty");
    else if (strcmp(dir, "-") == 0) /* standard output wherever an output is named (S-41) */
        rc = cli_usage_error("unpack", "DIR '-': standard output cannot be a directory of files");
    else
        rc = cli_refuse_url_output(dir);
    if (rc == CLI_EXIT_OK) rc = cli_refuse_empty(archive);
    if (rc == CLI_EXIT_OK) rc = check_dir(dir, force, &exists);
    memset(&res, 0, sizeof res);
    memset(&made, 0, sizeof made);
    if (rc == CLI_EXIT_OK) rc = open_checked(archive, args->verbosity, &ar);
    if (rc != CLI_EXIT_OK) return rc;
    /* Everything that can be known before writing is checked first. */
    rc = check_plan(archive, oz_archive_zip(ar), dir, exists);
    if (rc == CLI_EXIT_OK && !exists) {
        if (mkdir_listed(dir, &made) != 0)
            rc = cli_fail_msg(dir, "cannot create directory: %s", strerror(errno));
    }
    start = cli_now_ms();
    if (rc == CLI_EXIT_OK)
        rc = unpack_entries(archive, ar, dir, args->seen[UNPACK_OPT_NO_SYNC], &res, &made);
    oz_archive_close(ar);
    /* A failure half-way (a full disk, a race) takes back what this run created. */
    if (rc != CLI_EXIT_OK) interrupt_list_undo(&made);
    interrupt_list_free(&made);
    if (rc != CLI_EXIT_OK) return rc;
    cli_note(args->verbosity, CLI_VERBOSE, "wrote %" PRIu64 " files in %.1f ms", res.files + 1,
             cli_now_ms() - start);
    if (args->verbosity >= CLI_NORMAL) {
        const char *shown = cli_shown(archive); /* N-2: a URL's user:password@ is not shown */
        cli_put_text(stdout, shown, strlen(shown));
        fputs(" -> ", stdout);
        cli_put_text(stdout, dir, strlen(dir));
        printf("/" UNPACK_MODEL_FILE " + %" PRIu64 " data file%s (%" PRIu64 " bytes)\n", res.files,
               res.files == 1 ? "" : "s", res.bytes);
    }
    return CLI_EXIT_OK;
}

static const char unpack_help[] =
    "Unpack an .onnxz archive into DIR as a classic external-data model that any ONNX\n"
    "reader loads (spec/onnxz.md A-30): DIR/model.onnx is the archive's __MODEL_PROTO,\n"
    "byte for byte, and every other entry becomes the file of the same name in DIR, so\n"
    "each tensor's `location` names its own file beside the model. This is what\n"
    "`unzip ARCHIVE -d DIR` followed by renaming __MODEL_PROTO to model.onnx gives, with\n"
    "the checks of `onnxz verify` first: the ZIP rules, every CRC-32, and the model\n"
    "decodes with every tensor resolving to its entry. Nothing is written unless they all\n"
    "pass, and if writing fails half-way, what was written is removed again. A tensor\n"
    "whose entry is empty (0 bytes) is written inside model.onnx instead (A-31): runtimes\n"
    "read a reference of length 0 as \"to the end of the file\". (To get a\n"
    "single data file instead, use\n"
    "`onnxz convert ARCHIVE DIR/model.onnx --external-data model.data`.)\n"
    "\n"
    "Options:\n"
    "  -f, --force     write into DIR even if it is not empty, replacing files there\n"
    "      --no-sync   do not wait for the disk: each file is still renamed into place\n"
    "                  whole, but not fsynced (a power loss soon after may leave files\n"
    "                  empty or short); much faster for archives of many entries\n"
    "  -q, --quiet     print nothing but errors\n"
    "  -v, --verbose   also print timings to stderr\n"
    "  -h, --help      show this help\n"
    "\n"
    "DIR is created if missing (its parent must exist). An existing DIR must be empty\n"
    "unless -f. Each file is written to a temporary name, synced and renamed into place,\n"
    "the model last; entries in subdirectories get them, but never through a symbolic\n"
    "link. An archive with an entry named model.onnx (or model.onnx/...) is refused, and\n"
    "so is one where a name is both a file and a directory ('a' and 'a/b', 'W' and 'W/').\n"
    "\n"
    "Examples:\n"
    "  onnxz unpack model.onnxz model_dir\n"
    "  python3 -c 'import onnx; onnx.load(\"model_dir/model.onnx\")'\n";

const cli_command cmd_unpack = {
    "unpack",
    "unpack an .onnxz archive into a directory (external-data model)",
    "onnxz unpack [options] ARCHIVE DIR",
    unpack_help,
    unpack_options,
    unpack_arg_names,
    2,
    2,
    run_unpack,
};
