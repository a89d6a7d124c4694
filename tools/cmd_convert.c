/*
 * tools/cmd_convert.c - `onnxz convert IN OUT`: load a model in any form and write it in
 * the form OUT's name asks for.
 *
 *   IN   a .onnx file (its external data files are read in, from --data-dir if they
 *        moved) or an .onnxz archive, told apart by content;
 *   OUT  "*.onnxz": an archive; "*.onnxc": an encrypted model; "*.onnx": a .onnx file,
 *        with --external-data its tensors in data files beside it; --to says which for
 *        any other name (without it, another name is a usage error).
 * The input is mapped and its tensors share the mapping (no_copy), so the tensor bytes go
 * from the input's pages to the output file without a copy in memory.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <onnxcore/http.h>
#include <onnxz/archive.h>
#include <onnxz/convert.h>

#include "internal/path.h"

#include "cli.h"
#include "load.h"
#include "passphrase.h"
#include "progress.h"

enum {
    CONVERT_OPT_FORCE = 0,
    CONVERT_OPT_DATA_DIR,
    CONVERT_OPT_ALIGN,
    CONVERT_OPT_THRESHOLD,
    CONVERT_OPT_DEFLATE_MODEL,
    CONVERT_OPT_EXTERNAL_DATA,
    CONVERT_OPT_MAX_FILE_SIZE,
    CONVERT_OPT_CHECKSUM,
    CONVERT_OPT_KEY_FILE,
    CONVERT_OPT_KEY,
    CONVERT_OPT_PASSPHRASE,
    CONVERT_OPT_FORMAT,
    CONVERT_OPT_ITERATIONS,
    CONVERT_OPT_CHUNK_SIZE,
    CONVERT_OPT_TO,
    CONVERT_OPT_NO_SYNC
};

static const cli_option convert_options[] = {
    {'f', "force", false},
    {'\0', "data-dir", true},
    {'\0', "align", true},
    {'\0', "threshold", true},
    {'\0', "deflate-model", false},
    {'\0', "external-data", true},
    {'\0', "max-file-size", true},
    {'\0', "checksum", false},
    {'\0', "key-file", true},
    {'\0', "key", true},
    {'\0', "passphrase", true},
    {'\0', "format", true},
    {'\0', "iterations", true},
    {'\0', "chunk-size", true},
    {'\0', "to", true},
    {'\0', "no-sync", false},
    {'\0', NULL, false},
};

static const char *const convert_arg_names[] = {"IN", "OUT"};

#define CONVERT_DEFAULT_ALIGN 64u
/* The largest alignment for data files: far beyond any page size, small enough that the
 * padding it may add stays reasonable. */
#define CONVERT_MAX_FILE_ALIGN (1u << 20)

/* What the options say, checked against each other and against OUT's form. */
typedef struct convert_plan {
    const char *in;
    const char *out;
    bool force;
    bool no_sync; /* --no-sync: rename into place without waiting for the disk */
    cli_form in_form;
    cli_form out_form;
    const char *data_dir;
    uint64_t align;
    uint64_t threshold;
    bool deflate_model;
    const char *external_data; /* NULL: a single .onnx file */
    uint64_t max_file_size;
    bool checksum;
    bool encrypt_out; /* OUT ends in .onnxc: an encrypted model */
    const char *key_file;
    oc_crypt_options crypt;
} convert_plan;

static int option_needs(const cli_args *args, int opt, bool allowed, const char *name,
                        const char *why) {
    if (args->seen[opt] && !allowed) return cli_usage_error("convert", "--%s %s", name, why);
    return CLI_EXIT_OK;
}

/* OUT's form: --to when given, else by OUT's name; a name of no known form is a usage
 * error (an empty name and an existing directory are refused with the other output
 * checks, cli_check_output, in their own words). */
static int output_form(const cli_args *args, const char *out, oz_form *form) {
    const char *to = args->value[CONVERT_OPT_TO];
    struct stat st;
    *form = to ? oz_form_parse(to) : oz_form_named(out);
    if (to && *form == OZ_FORM_AUTO) {
        return cli_usage_error("convert", "--to '%s': give onnx, onnxz or onnxc", to);
    } else if (*form == OZ_FORM_AUTO && out[0] != '\0' &&
               !(stat(out, &st) == 0 && S_ISDIR(st.st_mode))) {
        return cli_usage_error("convert",
                               "OUT '%s': its form is not known by its name; name "
                               "it *.onnx, *.onnxz or *.onnxc, or give --to onnx|onnxz|onnxc",
                               out);
    }
    return CLI_EXIT_OK;
}

static int make_plan(const cli_args *args, convert_plan *p) {
    oz_form form;
    bool archive, external;
    int rc = CLI_EXIT_OK;
    memset(p, 0, sizeof *p);
    oc_crypt_options_init(&p->crypt);
    p->in = args->positional[0];
    p->out = args->positional[1];
    p->force = args->seen[CONVERT_OPT_FORCE];
    p->no_sync = args->seen[CONVERT_OPT_NO_SYNC];
    rc = cli_refuse_url_output(p->out);
    if (rc == CLI_EXIT_OK) rc = cli_refuse_url_output(args->value[CONVERT_OPT_EXTERNAL_DATA]);
    if (rc == CLI_EXIT_OK) rc = output_form(args, p->out, &form);
    if (rc != CLI_EXIT_OK) return rc;
    p->out_form = form == OZ_FORM_ONNXZ ? CLI_FORM_ONNXZ : CLI_FORM_ONNX;
    p->encrypt_out = form == OZ_FORM_ONNXC;
    p->in_form = cli_input_form(p->in);
    p->data_dir = args->value[CONVERT_OPT_DATA_DIR];
    p->deflate_model = args->seen[CONVERT_OPT_DEFLATE_MODEL];
    p->external_data = args->value[CONVERT_OPT_EXTERNAL_DATA];
    p->checksum = args->seen[CONVERT_OPT_CHECKSUM];
    p->align = CONVERT_DEFAULT_ALIGN;
    p->threshold = OC_EXTERNAL_THRESHOLD_DEFAULT;
    archive = p->out_form == CLI_FORM_ONNXZ;
    external = p->external_data != NULL;
    p->key_file = args->value[CONVERT_OPT_KEY_FILE];
    rc = cli_refuse_argv_key("convert", args->seen, CONVERT_OPT_KEY, CONVERT_OPT_PASSPHRASE);
    if (rc == CLI_EXIT_OK && !p->encrypt_out &&
        (args->seen[CONVERT_OPT_FORMAT] || args->seen[CONVERT_OPT_ITERATIONS] ||
         args->seen[CONVERT_OPT_CHUNK_SIZE]))
        rc = cli_usage_error("convert", "--format, --iterations and --chunk-size apply to "
                                        ".onnxc output only");
    if (rc == CLI_EXIT_OK && p->encrypt_out && external)
        rc = cli_usage_error("convert", "--external-data does not apply to .onnxc output: "
                                        "an encrypted model holds its tensors itself");
    if (rc == CLI_EXIT_OK && p->encrypt_out)
        rc = cli_parse_crypt_options("convert", args->value[CONVERT_OPT_FORMAT],
                                     args->value[CONVERT_OPT_ITERATIONS],
                                     args->value[CONVERT_OPT_CHUNK_SIZE], &p->crypt);
    /* Options that do not apply to this conversion are mistakes, not no-ops. */
    if (rc == CLI_EXIT_OK)
        rc = option_needs(args, CONVERT_OPT_EXTERNAL_DATA, !archive, "external-data",
                          "applies to .onnx output; an .onnxz archive holds its tensors itself");
    if (rc == CLI_EXIT_OK)
        rc = option_needs(args, CONVERT_OPT_DEFLATE_MODEL, archive, "deflate-model",
                          "applies to .onnxz output only");
    if (rc == CLI_EXIT_OK)
        rc = option_needs(args, CONVERT_OPT_ALIGN, archive || external, "align",
                          "applies to .onnxz output or with --external-data");
    if (rc == CLI_EXIT_OK)
        rc = option_needs(args, CONVERT_OPT_THRESHOLD, archive || external, "threshold",
                          "applies to .onnxz output or with --external-data");
    if (rc == CLI_EXIT_OK)
        rc = option_needs(args, CONVERT_OPT_MAX_FILE_SIZE, external, "max-file-size",
                          "applies with --external-data only");
    if (rc == CLI_EXIT_OK)
        rc = option_needs(args, CONVERT_OPT_CHECKSUM, external, "checksum",
                          "applies with --external-data only");
    if (rc == CLI_EXIT_OK && p->data_dir && p->in_form == CLI_FORM_ONNXZ)
        rc = cli_usage_error("convert", "--data-dir applies to .onnx input; IN is an archive");
    if (rc == CLI_EXIT_OK && external && p->external_data[0] == '\0')
        rc = cli_usage_error("convert", "--external-data needs a file name");
    if (rc == CLI_EXIT_OK && args->seen[CONVERT_OPT_ALIGN])
        rc = cli_parse_size("convert", "align", args->value[CONVERT_OPT_ALIGN], &p->align);
    if (rc == CLI_EXIT_OK && args->seen[CONVERT_OPT_THRESHOLD])
        rc = cli_parse_size("convert", "threshold", args->value[CONVERT_OPT_THRESHOLD],
                            &p->threshold);
    if (rc == CLI_EXIT_OK && args->seen[CONVERT_OPT_MAX_FILE_SIZE]) {
        rc = cli_parse_size("convert", "max-file-size", args->value[CONVERT_OPT_MAX_FILE_SIZE],
                            &p->max_file_size);
        if (rc == CLI_EXIT_OK && p->max_file_size == 0)
            rc = cli_usage_error("convert", "--max-file-size must be more than 0");
    }
    if (rc != CLI_EXIT_OK) return rc;
    if (p->align == 0 || (p->align & (p->align - 1)) != 0)
        return cli_usage_error("convert", "--align %" PRIu64 " is not a power of two", p->align);
    if (archive && (p->align < OZ_ZIP_MIN_ALIGNMENT || p->align > OZ_ZIP_MAX_ALIGNMENT))
        return cli_usage_error("convert", "--align for an archive must be from %u to %u",
                               OZ_ZIP_MIN_ALIGNMENT, OZ_ZIP_MAX_ALIGNMENT);
    if (!archive && p->align > CONVERT_MAX_FILE_ALIGN)
        return cli_usage_error("convert", "--align for data files must be at most %u",
                               CONVERT_MAX_FILE_ALIGN);
    return CLI_EXIT_OK;
}

/* ---- never overwrite without -f ------------------------------------------------- */

static int same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* OUT's directory with a trailing slash ("" for the current one), as the library places
 * data files; NULL when out of memory. */
static char *out_dir(const char *out) {
    const char *slash = strrchr(out, '/');
    size_t n = slash ? (size_t)(slash - out) + 1 : 0;
    char *dir = malloc(n + 1);
    if (!dir) return NULL;
    memcpy(dir, out, n);
    dir[n] = '\0';
    return dir;
}

/* The data file's location as the library writes it: an absolute path is reduced to its
 * file name (E-23). */
static const char *data_location(const char *external_data) {
    return external_data[0] == '/' ? oc__path_base(external_data) : external_data;
}

/* 1 when name is "LOCATION.N" for the location's base name (N decimal). */
static int is_part_name(const char *name, const char *base) {
    size_t n = strlen(base);
    const char *p = name + n + 1;
    if (strncmp(name, base, n) != 0 || name[n] != '.' || *p == '\0') return 0;
    for (; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

static int fail_part(const char *dir, const char *name) {
    char *path = malloc(strlen(dir) + strlen(name) + 1);
    int rc;
    if (!path) return cli_fail_msg(name, "data file exists; use -f to overwrite it");
    strcpy(path, dir);
    strcat(path, name);
    rc = cli_fail_msg(path, "data file exists; use -f to overwrite it");
    free(path);
    return rc;
}

/* The data files a save with --external-data writes: LOCATION and, with a maximum file
 * size, LOCATION.1, LOCATION.2, ... The library replaces them whatever its overwrite
 * option says, so the tool refuses existing ones here unless -f. */
static int check_data_files(const convert_plan *p) {
    const char *loc = data_location(p->external_data);
    char *dir = out_dir(p->out), *path, *part_dir;
    const char *base = oc__path_base(loc);
    struct stat st;
    DIR *d;
    struct dirent *ent;
    int rc = CLI_EXIT_OK;
    if (p->force) {
        free(dir);
        return CLI_EXIT_OK;
    }
    if (!dir || !(path = malloc(strlen(dir) + strlen(loc) + 1))) {
        free(dir);
        return cli_fail_msg(p->out, "out of memory");
    }
    strcpy(path, dir);
    strcat(path, loc);
    if (lstat(path, &st) == 0) {
        if (same_file(p->in, path))
            rc = cli_fail_msg(path, "data file is the input file; use -f to replace it");
        else
            rc = cli_fail_msg(path, "data file exists; use -f to overwrite it");
    }
    if (rc == CLI_EXIT_OK && p->max_file_size) {
        /* The parts live beside LOCATION: look for any LOCATION.N there. */
        part_dir = out_dir(path);
        d = part_dir ? opendir(part_dir[0] ? part_dir : ".") : NULL;
        while (d && rc == CLI_EXIT_OK && (ent = readdir(d)) != NULL) {
            if (!is_part_name(ent->d_name, base)) continue;
            /* Named as the library would name it: OUT's directory + the location. */
            rc = fail_part(part_dir, ent->d_name);
        }
        if (d) closedir(d);
        free(part_dir);
    }
    free(path);
    free(dir);
    return rc;
}

/* ---- saving ---------------------------------------------------------------------- */

/* The fetch of a deferred model's tensors, watched: a save that fails because the input
 * did (a request, a CRC) names the input, not OUT. */
typedef struct watched_fetch {
    oc_tensor_fetch inner;
    int input_failed;
} watched_fetch;

typedef struct watched_sink {
    oc_write_fn write;
    void *ctx;
    int failed;
} watched_sink;

static oc_status watched_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    watched_sink *w = ctx;
    oc_status st = w->write(w->ctx, data, size, err);
    if (st != OC_OK) w->failed = 1;
    return st;
}

static oc_status watched_size(void *ctx, const onnx_TensorProto *t, uint64_t *n, oc_error *err) {
    watched_fetch *f = ctx;
    oc_status st = f->inner.size(f->inner.ctx, t, n, err);
    if (st != OC_OK) f->input_failed = 1;
    return st;
}

static oc_status watched_stream(void *ctx, const onnx_TensorProto *t, oc_write_fn write,
                                void *write_ctx, oc_error *err) {
    watched_fetch *f = ctx;
    watched_sink sink = {write, write_ctx, 0};
    oc_status st = f->inner.stream(f->inner.ctx, t, watched_write, &sink, err);
    if (st != OC_OK && !sink.failed) f->input_failed = 1;
    return st;
}

/* source: where a deferred model's tensors stream from (NULL: all in memory). */
static int save(const oc_model *model, oz_weights *source, const convert_plan *p, int verbosity) {
    oc_error err;
    oc_status st;
    double start = cli_now_ms();
    cli_progress bar;
    watched_fetch watched = {{NULL, NULL, NULL}, 0};
    oc_tensor_fetch fetch;
    oc_error_clear(&err);
    cli_progress_init(&bar, verbosity);
    if (p->encrypt_out) {
        oc_serialize_options so;
        cli_key key;
        int rc = cli_key_get("convert", p->key_file, p->out, true, verbosity, &key);
        if (rc != CLI_EXIT_OK) return rc;
        oc_serialize_options_init(&so);
        so.overwrite = p->force ? 1 : 0;
        so.no_sync = p->no_sync;
        st = oc_crypt_save_model_file(model, p->out, key.data, key.len, &p->crypt, &so, &err);
        cli_key_free(&key);
    } else {
        /* One library call writes either form; the options not asked for keep defaults. */
        oz_archive_options ao = OZ_ARCHIVE_OPTIONS_INIT;
        oz_weights_fetch(source, &watched.inner);
        if (watched.inner.size) {
            fetch = (oc_tensor_fetch){watched_size, watched_stream, &watched};
            ao.serialize.fetch = &fetch;
        }
        ao.serialize.overwrite = p->force ? 1 : 0;
        ao.serialize.no_sync = p->no_sync;
        ao.serialize.progress = cli_progress_update;
        ao.serialize.progress_ctx = &bar;
        if (p->out_form == CLI_FORM_ONNXZ || p->external_data) {
            ao.serialize.buffer.alignment = p->align;
            ao.serialize.buffer.raw_data_threshold = p->threshold;
        }
        ao.deflate_model = p->deflate_model ? 1 : 0;
        ao.serialize.external_data = p->external_data;
        ao.serialize.max_external_file_size = p->max_file_size;
        ao.serialize.checksum = p->checksum ? 1 : 0;
        st = oz_save_any(model, p->out,
                         p->out_form == CLI_FORM_ONNXZ ? OZ_FORM_ONNXZ : OZ_FORM_ONNX, &ao, &err);
    }
    cli_progress_end(&bar);
    if (st != OC_OK) return cli_fail(watched.input_failed ? p->in : p->out, &err);
    cli_note(verbosity, CLI_VERBOSE, "wrote %s in %.1f ms", p->out, cli_now_ms() - start);
    return CLI_EXIT_OK;
}

static uint64_t size_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

/* ", data in LOCATION (N bytes)" or ", data in LOCATION and K more files (N bytes)": the
 * files OUT's tensors name, read back from OUT itself (sorted, LOCATION comes first). */
static void report_data_files(const char *out) {
    oc_model *model = NULL;
    oc_model_stats *stats = NULL;
    oc_error err;
    char *dir = out_dir(out);
    uint64_t bytes = 0;
    if (!dir || cli_load_model(out, CLI_EXTERNAL_KEEP, CLI_QUIET, &model) != CLI_EXIT_OK) {
        free(dir);
        return;
    }
    if (oc_model_stats_collect(oc_model_proto(model), &stats, &err) == OC_OK && stats->nlocations) {
        for (uint64_t i = 0; i < stats->nlocations; i++) {
            const oc_str *loc = &stats->locations[i].location;
            char *path = malloc(strlen(dir) + loc->size + 1);
            if (!path) continue;
            sprintf(path, "%s%.*s", dir, (int)loc->size, loc->data);
            bytes += size_of(path);
            free(path);
        }
        printf(", data in ");
        cli_put_text(stdout, stats->locations[0].location.data, stats->locations[0].location.size);
        if (stats->nlocations > 1)
            printf(" and %" PRIu64 " more file%s", stats->nlocations - 1,
                   stats->nlocations == 2 ? "" : "s");
        printf(" (%" PRIu64 " bytes)", bytes);
    }
    oc_model_stats_free(stats);
    oc_model_free(model);
    free(dir);
}

/* The largest message protobuf-based readers (ONNX Runtime, python3-onnx) parse: 2 GiB - 1
 * bytes. */
#define CONVERT_PROTOBUF_LIMIT 0x7fffffffu

/* A single .onnx over the protobuf limit is written (we read it back), but most ONNX
 * readers cannot load it: say so on stderr, unless -q, with the forms that they can. */
static void warn_protobuf_limit(const convert_plan *p, int verbosity) {
    uint64_t size;
    if (verbosity < CLI_NORMAL || p->out_form == CLI_FORM_ONNXZ || p->external_data ||
        p->encrypt_out)
        return;
    size = size_of(p->out);
    if (size <= CONVERT_PROTOBUF_LIMIT) return;
    fputs("onnxz: warning: ", stderr);
    cli_put_text(stderr, p->out, strlen(p->out));
    fprintf(stderr,
            ": %" PRIu64 " bytes, 2 GiB or more: protobuf-based readers (ONNX "
            "Runtime, python3-onnx) cannot load it; use --external-data LOC, or an .onnxz "
            "with `onnxz stub`, for a file they load\n",
            size);
}

/* "IN -> OUT (N => M bytes)" on stdout, unless -q. Sizes come from the files themselves,
 * IN's taken before the conversion (with -f, OUT may be IN). */
static void report(const convert_plan *p, uint64_t in_size, int verbosity) {
    if (verbosity < CLI_NORMAL) return;
    cli_put_text(stdout, p->in, strlen(p->in));
    fputs(" -> ", stdout);
    cli_put_text(stdout, p->out, strlen(p->out));
    printf(" (%" PRIu64 " => %" PRIu64 " bytes)", in_size, size_of(p->out));
    if (p->external_data) report_data_files(p->out);
    putchar('\n');
}

/* an archive holds only tensors whose bytes are the size their dims and data_type
 * make (W-40), which a runtime can map and index by shape. source: where a deferred
 * model's tensors stream from, or NULL. A reference the fetch cannot resolve (A-21, a
 * data file gone) is the input's failure, not a size's. */
static int check_packable(oc_model *model, oz_weights *source, const char *in) {
    oc_error err;
    oc_status st;
    watched_fetch watched = {{NULL, NULL, NULL}, 0};
    oc_tensor_fetch fetch = {watched_size, watched_stream, &watched};
    oc_error_clear(&err);
    oz_weights_fetch(source, &watched.inner);
    st = oc_model_check_tensor_sizes_fetched(model, watched.inner.size ? &fetch : NULL, &err);
    if (st == OC_OK) return CLI_EXIT_OK;
    if (watched.input_failed) return cli_fail(in, &err);
    return cli_fail_msg(in,
                        "%s; an .onnxz archive holds only tensors of the size their "
                        "shape makes (A-13)",
                        err.message);
}

static int run_convert(const cli_args *args) {
    convert_plan plan;
    cli_load_options lo;
    oc_model *model = NULL;
    oz_weights *source = NULL;
    uint64_t in_size;
    int rc = make_plan(args, &plan);
    if (rc != CLI_EXIT_OK) return rc;
    in_size = size_of(plan.in);
    rc = cli_check_output("convert", plan.in, plan.out, plan.force);
    if (rc == CLI_EXIT_OK && plan.external_data) rc = check_data_files(&plan);
    /* External data is read in, as onnx.load does, so OUT stands on its own wherever it
     * goes: references relative to IN's directory would break beside OUT. */
    memset(&lo, 0, sizeof lo);
    lo.data_dir = plan.data_dir;
    lo.command = "convert";
    lo.key_file = plan.key_file;
    lo.size_out = &in_size;
    /* A remote model's tensors (an archive's entries, a model's data files) are
     * downloaded as they are written, one at a time: the conversion holds a few MiB,
     * never the weights. */
    if (oc_is_url(plan.in) && !plan.encrypt_out) lo.deferred = &source;
    if (rc == CLI_EXIT_OK && plan.encrypt_out) rc = cli_require_crypto(plan.out);
    if (rc == CLI_EXIT_OK) rc = cli_load_input(plan.in, &lo, args->verbosity, &model, NULL);
    if (rc == CLI_EXIT_OK && plan.out_form == CLI_FORM_ONNXZ)
        rc = check_packable(model, source, plan.in);
    /* With -f and OUT == IN this is still safe: the new file is renamed over IN, while
     * the mapping the tensors borrow from keeps the old contents alive until freed. The
     * same holds for data files replaced while their old contents are mapped. */
    if (rc == CLI_EXIT_OK) rc = save(model, source, &plan, args->verbosity);
    oc_model_free(model);
    oz_weights_close(source);
    if (rc == CLI_EXIT_OK) report(&plan, in_size, args->verbosity);
    if (rc == CLI_EXIT_OK) warn_protobuf_limit(&plan, args->verbosity);
    return rc;
}

static const char convert_help[] =
    "Read the model IN and write it to OUT, in the form OUT's name (or --to) asks for.\n"
    "\n"
    "IN is told by its content: an encrypted file (ONNXZEC1 or ONNXCRY1, holding a\n"
    "model or an archive; decrypted once, in memory), an .onnxz archive (a ZIP), or a\n"
    ".onnx file, whose external data files (two-file or N-file models) are read in from\n"
    "beside it, or from --data-dir when they moved. Tensor bytes go from IN to OUT\n"
    "without a copy in memory.\n"
    "\n"
    "OUT by its name, or by --to:\n"
    "  *.onnxc   an encrypted model (spec/encryption.md; every tensor inside it, none\n"
    "            in the clear): the serialized model, encrypted. Only a model payload:\n"
    "            for an encrypted archive, convert to .onnxz and run `onnxz encrypt`;\n"
    "  *.onnxz   an archive (spec/onnxz.md): each tensor of at least --threshold bytes\n"
    "            is a stored entry aligned to --align, the model last as __MODEL_PROTO;\n"
    "  *.onnx    a .onnx file holding every tensor, the bytes protobuf would write\n"
    "            (an archive converts back to the same bytes); with\n"
    "            --external-data, tensors of at least --threshold bytes go to data files\n"
    "            beside it instead (spec/external-data.md), any ONNX reader loads them.\n"
    "Another name (model.bin) is a usage error without --to. An archive refuses a\n"
    "tensor whose bytes are not the size its dims and type make (A-13).\n"
    "\n"
    "Options:\n"
    "  -f, --force              overwrite OUT (and its data files) if they exist, even\n"
    "                           when OUT is IN\n"
    "      --to FORM            onnx, onnxz or onnxc: OUT's form, whatever its name\n"
    "      --data-dir DIR       .onnx input: read its external data files from DIR\n"
    "      --align N            .onnxz or --external-data: put each tensor's bytes on a\n"
    "                           multiple of N, a power of two (default 64; archives 64\n"
    "                           to 32K, data files 1 to 1M)\n"
    "      --threshold BYTES    .onnxz or --external-data: tensors with fewer bytes of\n"
    "                           raw_data stay inside the model (default 1024, which\n"
    "                           keeps the shape inputs ONNX Runtime needs; empty\n"
    "                           tensors always stay)\n"
    "      --deflate-model      .onnxz: store __MODEL_PROTO deflated (tensors stay stored)\n"
    "      --external-data LOC  .onnx output: write tensor bytes to the file LOC, relative\n"
    "                           to OUT's directory (an absolute path keeps its file name)\n"
    "      --max-file-size BYTES  with --external-data: start a new file LOC.1, LOC.2, ...\n"
    "                           when the next tensor would pass BYTES (a larger tensor\n"
    "                           gets a file of its own)\n"
    "      --checksum           with --external-data: record each tensor's SHA-1\n"
    "                           (`onnxz verify` checks them)\n"
    "      --key-file FILE      the passphrase of an encrypted IN or a .onnxc OUT\n"
    "      --format F           .onnxc: onnxzec1 (default) or onnxcry1\n"
    "      --iterations N       .onnxc, onnxzec1: PBKDF2 iterations (default 600000)\n"
    "      --chunk-size BYTES   .onnxc, onnxzec1: bytes per chunk (default 1M)\n"
    "      --no-sync            do not wait for the disk: OUT is still renamed into\n"
    "                           place whole, but not fsynced, so a power loss soon\n"
    "                           after may leave it empty or short (scratch outputs)\n"
    "  -q, --quiet              print nothing but errors\n"
    "  -v, --verbose            also print load and save times to stderr\n"
    "  -h, --help               show this help\n"
    "Sizes take a suffix K, M or G (powers of 1024): 64K, 2G.\n"
    "Options that do not apply to the conversion asked for are usage errors.\n"
    "\n"
    "OUT and every data file are written to a temporary file next to them, synced and\n"
    "renamed into place (data files first), so each is replaced whole or not at all.\n"
    "Without -f an existing OUT or data file (LOC, LOC.N) is left untouched and convert\n"
    "fails (exit status 1). OUT is never a directory, even with -f.\n"
    "\n"
    "Examples:\n"
    "  onnxz convert model.onnx model.onnxz\n"
    "  onnxz convert model.onnxz model.onnx\n"
    "  onnxz convert model.onnx big.onnx --external-data big.data --max-file-size 2G\n"
    "  onnxz convert --data-dir /mnt/weights model.onnx model.onnxz\n"
    "  onnxz convert -f model.onnx model.onnx     (rewrite in place)\n"
    "  onnxz convert --key-file k.txt model.onnxz model.onnxc   (encrypt)\n"
    "  ONNXZ_KEY=... onnxz convert model.onnxc model.onnxz      (decrypt)\n"
    "The passphrase comes from --key-file, else ONNXZ_KEY, else a prompt on the\n"
    "terminal; never from the command line.\n";

const cli_command cmd_convert = {
    "convert",
    "convert between .onnx, external-data models and .onnxz archives",
    "onnxz convert [options] IN OUT",
    convert_help,
    convert_options,
    convert_arg_names,
    2,
    2,
    run_convert,
};
