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
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <onnxz/archive.h>
#include <onnxz/convert.h>

#include <onnxz/sign.h>

#include "cli.h"
#include "interrupt.h"
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
    CONVERT_OPT_NO_SYNC,
    CONVERT_OPT_TRUST,
    CONVERT_OPT_SIGN_KEY,
    CONVERT_OPT_SIGN_PASS_FILE
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
    {'\0', "trust", true},
    {'\0', "sign-key", true},
    {'\0', "sign-passphrase-file", true},
    {'\0', NULL, false},
};

static const char *const convert_arg_names[] = {"IN", "OUT"};

/* What the command line asks for: the library's save options (oz_save_options, whose
 * rules are the library's: oz_save_check) and what the tool itself needs. */
typedef struct convert_plan {
    const char *in;
    const char *out;
    bool force;
    const char *data_dir;
    const char *trust; /* --trust: IN's signature checked first (oz_open_options.trust) */
    const char *key_file;
    const char *sign_key;       /* --sign-key: OUT signed after it is written (oz_sign) */
    const char *sign_pass_file; /* --sign-passphrase-file: an encrypted sign key's */
    oz_form out_form;           /* once checked */
    oc_crypt_options crypt;
    oz_save_options save;
} convert_plan;

/* The command-line spelling of a library option found at fault. */
static const char *flag_of(oz_save_option opt) {
    switch (opt) {
    case OZ_SAVE_OPT_EXTERNAL_DATA:
        return "--external-data";
    case OZ_SAVE_OPT_MAX_FILE_SIZE:
        return "--max-file-size";
    case OZ_SAVE_OPT_ALIGN:
        return "--align";
    case OZ_SAVE_OPT_THRESHOLD:
        return "--threshold";
    case OZ_SAVE_OPT_CHECKSUM:
        return "--checksum";
    case OZ_SAVE_OPT_DEFLATE_MODEL:
        return "--deflate-model";
    case OZ_SAVE_OPT_CRYPT:
        return "--format, --iterations or --chunk-size:";
    default:
        return oz_save_option_name(opt);
    }
}

/* The library's verdict on the save options, as a usage error, or as a failure naming
 * the URL where OUT or --external-data is one. An empty OUT and an existing
 * directory are refused with the other output checks, cli_check_output, in their own
 * words. */
static int check_save(const cli_args *args, convert_plan *p) {
    oz_save_option bad;
    oc_error err;
    struct stat st;
    oc_error_clear(&err);
    /* a .onnxc OUT's passphrase is asked for later (get_keys) */
    oc_status checked = oz_save_check_before_key(p->out, &p->save, &p->out_form, &bad, &err);
    if (checked == OC_OK) return CLI_EXIT_OK;
    if (bad == OZ_SAVE_OPT_NONE) /* not an option's value: OUT, or a URL it names */
        return cli_fail_named(p->out, &err);
    if (bad != OZ_SAVE_OPT_FORM)
        return cli_usage_error("convert", "%s%s", flag_of(bad),
                               err.message + strlen(oz_save_option_name(bad)));
    if (args->value[CONVERT_OPT_TO] || p->out[0] == '\0' ||
        (stat(p->out, &st) == 0 && S_ISDIR(st.st_mode)))
        return CLI_EXIT_OK;
    return cli_usage_error("convert",
                           "OUT '%s': its form is not known by its name; name it *.onnx, "
                           "*.onnxz or *.onnxc, or give --to onnx|onnxz|onnxc",
                           p->out);
}

/* A size option, when given, into *value (with *given set). */
static int size_option(const cli_args *args, int opt, const char *name, bool *given,
                       uint64_t *value) {
    *given = args->seen[opt];
    return *given ? cli_parse_size("convert", name, args->value[opt], value) : CLI_EXIT_OK;
}

/* OUT's HTTP settings: the environment's, cancelled by a signal (interrupt_defer). */
static oc_http_options out_http;

static int make_plan(const cli_args *args, convert_plan *p) {
    const char *to = args->value[CONVERT_OPT_TO];
    oz_save_options *s = &p->save;
    int rc;
    memset(p, 0, sizeof *p);
    oz_save_options_init(s);
    oc_crypt_options_init(&p->crypt);
    p->in = args->positional[0];
    p->out = args->positional[1];
    p->force = args->seen[CONVERT_OPT_FORCE];
    p->data_dir = args->value[CONVERT_OPT_DATA_DIR];
    p->trust = args->value[CONVERT_OPT_TRUST];
    p->key_file = args->value[CONVERT_OPT_KEY_FILE];
    p->sign_key = args->value[CONVERT_OPT_SIGN_KEY];
    p->sign_pass_file = args->value[CONVERT_OPT_SIGN_PASS_FILE];
    s->no_overwrite = !p->force;
    /* An s3:// OUT is a multipart upload: a signal cancels it, the library aborts the
     * upload (no part left stored), and then the process dies of the signal. */
    out_http = *cli_http_options();
    out_http.cancel = interrupt_cancel;
    s->http = &out_http;
    s->no_sync = args->seen[CONVERT_OPT_NO_SYNC];
    s->external_data = args->value[CONVERT_OPT_EXTERNAL_DATA];
    s->checksum = args->seen[CONVERT_OPT_CHECKSUM];
    s->deflate_model = args->seen[CONVERT_OPT_DEFLATE_MODEL];
    if (to && (s->form = oz_form_parse(to)) == OZ_FORM_AUTO)
        return cli_usage_error("convert", "--to '%s': give onnx, onnxz or onnxc", to);
    rc = cli_refuse_argv_key("convert", args->seen, CONVERT_OPT_KEY, CONVERT_OPT_PASSPHRASE);
    if (rc == CLI_EXIT_OK &&
        (args->seen[CONVERT_OPT_FORMAT] || args->seen[CONVERT_OPT_ITERATIONS] ||
         args->seen[CONVERT_OPT_CHUNK_SIZE])) {
        s->crypt = &p->crypt;
        rc = cli_parse_crypt_options("convert", args->value[CONVERT_OPT_FORMAT],
                                     args->value[CONVERT_OPT_ITERATIONS],
                                     args->value[CONVERT_OPT_CHUNK_SIZE], &p->crypt);
    }
    if (rc == CLI_EXIT_OK)
        rc = size_option(args, CONVERT_OPT_ALIGN, "align", &s->has_align, &s->align);
    if (rc == CLI_EXIT_OK)
        rc =
            size_option(args, CONVERT_OPT_THRESHOLD, "threshold", &s->has_threshold, &s->threshold);
    if (rc == CLI_EXIT_OK)
        rc = size_option(args, CONVERT_OPT_MAX_FILE_SIZE, "max-file-size", &s->has_max_file_size,
                         &s->max_file_size);
    if (rc == CLI_EXIT_OK) rc = check_save(args, p);
    if (rc == CLI_EXIT_OK && p->data_dir && oz_kind_is_archive(cli_input_kind(p->in)))
        rc = cli_usage_error("convert", "--data-dir applies to .onnx input; IN is an archive");
    return rc;
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
    if (verbosity < CLI_NORMAL || p->out_form != OZ_FORM_ONNX || p->save.external_data) return;
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
    if (!cli_reports(verbosity, p->out)) return;
    const char *in = cli_shown(p->in); /* N-2: a URL's user:password@ is not shown */
    cli_put_text(stdout, in, strlen(in));
    fputs(" -> ", stdout);
    const char *out = cli_shown(p->out);
    cli_put_text(stdout, out, strlen(out));
    if (oc_is_url(p->out)) /* an object written: no file here to measure */
        printf(" (%" PRIu64 " bytes read)", in_size);
    else
        printf(" (%" PRIu64 " => %" PRIu64 " bytes)", in_size, size_of(p->out));
    if (p->save.external_data && !oc_is_url(p->out)) report_data_files(p->out);
    putchar('\n');
}

/* The passphrases the conversion needs, asked for as the files are known to need them:
 * an encrypted IN's, then a .onnxc OUT's (confirmed when typed). */
static int get_keys(const convert_plan *p, int verbosity, cli_key *in_key, cli_key *out_key) {
    oc_crypt_format cf;
    int rc = cli_detect_crypt_checked(p->in, &cf);
    if (rc == CLI_EXIT_OK && cf != OC_CRYPT_NONE) rc = cli_require_crypto(p->in);
    if (rc == CLI_EXIT_OK && cf != OC_CRYPT_NONE)
        rc = cli_key_get("convert", p->key_file, p->in, false, verbosity, in_key);
    if (rc == CLI_EXIT_OK && p->out_form == OZ_FORM_ONNXC)
        rc = cli_key_get("convert", p->key_file, p->out, true, verbosity, out_key);
    return rc;
}

/* The file a failed conversion is about: IN, or on the output's side OUT, or the data file
 * beside it that the library found existing (without -f). */
static const char *failed_file(const convert_plan *p, const oz_convert_info *info,
                               const oc_error *err, char *buf, size_t size) {
    if (info->input_failed) return p->in;
    if (err->code != OC_ERR_EXISTS || !err->file_len) return p->out;
    snprintf(buf, size, "%.*s", (int)err->file_len, err->message + err->file_at);
    return buf;
}

/* The passphrase of an encrypted --sign-key, asked for before the conversion runs. */
static int get_sign_pass(const convert_plan *p, int verbosity, cli_key *pass) {
    bool needs = false;
    oc_error err;
    oc_error_clear(&err);
    if (!p->sign_key) return CLI_EXIT_OK;
    if (oz_sign_key_encrypted(p->sign_key, &needs, &err) != OC_OK)
        return cli_fail(p->sign_key, &err);
    return needs ? cli_key_get("convert", p->sign_pass_file, p->sign_key, false, verbosity, pass)
                 : CLI_EXIT_OK;
}

/* OUT signed as `onnxz sign` signs (oz_sign), after it is written. */
static int sign_out(const convert_plan *p, const cli_key *pass, int verbosity) {
    oz_sign_options so = OZ_SIGN_OPTIONS_INIT;
    oz_signature_report *report = NULL;
    oc_error err;
    oc_error_clear(&err);
    so.passphrase = pass->data;
    so.passphrase_len = pass->len;
    oc_status st = oz_sign(p->out, p->sign_key, &so, &report, &err);
    if (st != OC_OK) return cli_fail_named(p->out, &err);
    cli_note(verbosity, CLI_VERBOSE, "signed %s with %s key %.16s", p->out, report->key_type,
             report->key_fingerprint);
    oz_signature_report_free(report);
    return CLI_EXIT_OK;
}

/* The conversion, one library call; its error names IN or OUT, whichever failed. */
static int convert(convert_plan *p, int verbosity, uint64_t *in_size) {
    cli_key in_key = {NULL, 0}, out_key = {NULL, 0};
    oz_open_options oo = OZ_OPEN_OPTIONS_INIT;
    oz_convert_info info = OZ_CONVERT_INFO_INIT;
    cli_progress bar;
    oc_error err;
    char shown[OC_ERROR_MESSAGE_MAX];
    double start = cli_now_ms();
    if (p->sign_key && (p->out_form == OZ_FORM_ONNXC || oc_is_url(p->out)))
        return cli_usage_error("convert",
                               "--sign-key signs a local .onnxz or .onnx OUT, not an encrypted "
                               "one or a URL (sign the model before encrypting or uploading it)");
    int rc = p->out_form == OZ_FORM_ONNXC ? cli_require_crypto(p->out) : CLI_EXIT_OK;
    cli_key sign_pass = {NULL, 0};
    if (rc == CLI_EXIT_OK) rc = get_sign_pass(p, verbosity, &sign_pass);
    if (rc == CLI_EXIT_OK) rc = get_keys(p, verbosity, &in_key, &out_key);
    if (rc != CLI_EXIT_OK) {
        cli_key_free(&in_key);
        cli_key_free(&sign_pass);
        return rc;
    }
    cli_parse_options_init(&oo.parse);
    oo.parse.data_dir = p->data_dir;
    oo.trust = p->trust;
    p->save.max_memory = oo.parse.max_memory; /* the one budget: decode and write (M-3) */
    oo.key = in_key.data;
    oo.key_len = in_key.len;
    p->save.key = out_key.data;
    p->save.key_len = out_key.len;
    cli_progress_init(&bar, verbosity);
    if (p->out_form != OZ_FORM_ONNXC) {
        p->save.progress = cli_progress_update;
        p->save.progress_ctx = &bar;
    }
    /* With -f and OUT == IN this is still safe: the new file is renamed over IN, while
     * the mapping the tensors borrow from keeps the old contents alive until freed. */
    oc_error_clear(&err);
    /* An s3:// OUT is a multipart upload: a signal cancels it, the library aborts the
     * upload (no part left stored), and then the process dies of the signal. */
    p->save.cancel = interrupt_cancel;
    interrupt_defer(oc_url_scheme_of(p->out) == OC_URL_S3);
    oc_status st = oz_convert_file(p->in, p->out, &oo, &p->save, &info, &err);
    interrupt_defer(0);
    cli_progress_end(&bar);
    cli_key_free(&in_key);
    cli_key_free(&out_key);
    p->save.key = NULL;
    if (st != OC_OK) {
        cli_key_free(&sign_pass);
        return cli_fail(failed_file(p, &info, &err, shown, sizeof shown), &err);
    }
    if (info.in_size) *in_size = info.in_size;
    if (p->sign_key) {
        rc = sign_out(p, &sign_pass, verbosity);
        cli_key_free(&sign_pass);
        return rc;
    }
    if (info.in_signed) /* the library says IN was signed; OUT is a new file, unsigned */
        cli_note(verbosity, CLI_NORMAL,
                 "note: %s was signed, %s is not: sign it (onnxz sign %s --key PRIVATE.pem, or "
                 "convert --sign-key)",
                 p->in, p->out, p->out);
    cli_note(verbosity, CLI_VERBOSE, "read %s (%s) and wrote %s in %.1f ms", p->in,
             info.in_archive ? "onnxz archive" : "onnx", p->out, cli_now_ms() - start);
    return CLI_EXIT_OK;
}

static int run_convert(const cli_args *args) {
    convert_plan plan;
    int rc = make_plan(args, &plan);
    if (rc != CLI_EXIT_OK) return rc;
    uint64_t in_size = size_of(plan.in);
    rc = cli_check_output("convert", plan.in, plan.out, plan.force);
    /* External data is read in, as onnx.load does, so OUT stands on its own wherever it
     * goes: references relative to IN's directory would break beside OUT. */
    if (rc == CLI_EXIT_OK) rc = convert(&plan, args->verbosity, &in_size);
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
    "OUT - is standard output (with --to); an OUT that is a FIFO or a device is\n"
    "written through, never replaced (an archive needs a file or a device).\n"
    "OUT s3://BUCKET/KEY (and its data files as objects beside KEY) is written to the\n"
    "store with S3's multipart upload, AWS's settings as for reading (see onnxz\n"
    "--help), ONNXZ_HTTP_PARALLEL parts at once: each object appears whole when its\n"
    "upload completes (the data objects first); a failure, Ctrl-C or SIGTERM aborts\n"
    "the uploads, leaving no part stored (spec/remote.md R-21).\n"
    "\n"
    "Options:\n"
    "  -f, --force              overwrite OUT (and its data files) if they exist, even\n"
    "                           when OUT is IN\n"
    "      --to FORM            onnx, onnxz or onnxc: OUT's form, whatever its name\n"
    "      --data-dir DIR       .onnx input: read its external data files from DIR\n"
    "      --trust PUBLIC.pem   refuse IN unless it is signed with this key (`onnxz sign`):\n"
    "                           its whole signature verified before it is read (a local\n"
    "                           file; spec/signing.md G-55); OUT is not signed\n"
    "      --sign-key PRIVATE.pem  sign OUT once written, as `onnxz sign` does (.onnxz or\n"
    "                           .onnx OUT, a local file). Without it, OUT of a signed IN\n"
    "                           is unsigned, and a note on stderr says so (G-42)\n"
    "      --sign-passphrase-file FILE  the passphrase of an encrypted --sign-key\n"
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
