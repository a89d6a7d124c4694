/*
 * tools/cmd_convert.c - `onnxz convert IN OUT`: load a model and write it out again.
 *
 * Today both sides are plain .onnx files; the archive formats plug in here later.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

enum { CONVERT_OPT_FORCE = 0 };

static const cli_option convert_options[] = {
    {'f', "force", false},
    {'\0', NULL, false},
};

static const char *const convert_arg_names[] = {"IN", "OUT"};

/* Refuses to clobber: OUT must not exist, and must not be IN under another name (a hard
 * link or a different spelling of the path), unless --force. The library checks again
 * when it renames the new file into place (overwrite = 0), so this is about failing
 * early with a clear message, before any work is done. */
static int check_output(const char *in, const char *out, bool force)
{
    struct stat in_st, out_st;
    if (force) return CLI_EXIT_OK;
    if (lstat(out, &out_st) != 0) {
        if (errno == ENOENT) return CLI_EXIT_OK;
        return cli_fail_msg(out, "%s", strerror(errno));
    }
    if (stat(in, &in_st) == 0 && stat(out, &out_st) == 0 && in_st.st_dev == out_st.st_dev &&
        in_st.st_ino == out_st.st_ino)
        return cli_fail_msg(out, "output is the input file; use -f to replace it");
    return cli_fail_msg(out, "output file exists; use -f to overwrite it");
}

static int save_model(const oc_model *model, const char *out, bool force, int verbosity)
{
    oc_serialize_options opts;
    oc_error err;
    double start = cli_now_ms();
    oc_serialize_options_init(&opts);
    opts.overwrite = force ? 1 : 0;
    oc_error_clear(&err);
    if (oc_model_save_file(model, out, &opts, &err) != OC_OK) return cli_fail(out, &err);
    cli_note(verbosity, CLI_VERBOSE, "wrote %s in %.1f ms", out, cli_now_ms() - start);
    return CLI_EXIT_OK;
}

/* "IN -> OUT (N => M bytes)" on stdout, unless -q. Sizes come from the files themselves. */
static void report(const char *in, const char *out, int verbosity)
{
    struct stat in_st, out_st;
    if (verbosity < CLI_NORMAL) return;
    if (stat(in, &in_st) != 0 || stat(out, &out_st) != 0) {
        printf("%s -> %s\n", in, out);
        return;
    }
    printf("%s -> %s (%" PRIu64 " => %" PRIu64 " bytes)\n", in, out, (uint64_t)in_st.st_size,
           (uint64_t)out_st.st_size);
}

static int run_convert(const cli_args *args)
{
    const char *in = args->positional[0];
    const char *out = args->positional[1];
    bool force = args->seen[CONVERT_OPT_FORCE];
    oc_model *model = NULL;
    int rc = check_output(in, out, force);
    /* External data is read in, as onnx.load does, so OUT stands on its own wherever it
     * goes: references relative to IN's directory would break beside OUT. */
    if (rc == CLI_EXIT_OK) rc = cli_load_model(in, CLI_EXTERNAL_LOAD, args->verbosity, &model);
    /* With -f and OUT == IN this is still safe: the new file is renamed over IN, while
     * the mapping the tensors borrow from keeps the old contents alive until freed. */
    if (rc == CLI_EXIT_OK) rc = save_model(model, out, force, args->verbosity);
    oc_model_free(model);
    if (rc == CLI_EXIT_OK) report(in, out, args->verbosity);
    return rc;
}

static const char convert_help[] =
    "Read the ONNX model IN and write it to OUT as a .onnx file. The output holds the\n"
    "same bytes protobuf would write for the model, so converting a file that protobuf\n"
    "wrote reproduces it exactly. Tensors kept in external data files are read in and\n"
    "stored inside OUT, as onnx.load followed by onnx.save does, so OUT stands alone.\n"
    "(Archive formats will be added here.)\n"
    "\n"
    "Options:\n"
    "  -f, --force     overwrite OUT if it exists, even when OUT is IN\n"
    "  -q, --quiet     print nothing but errors\n"
    "  -v, --verbose   also print load and save times to stderr\n"
    "  -h, --help      show this help\n"
    "\n"
    "OUT is written to a temporary file next to it, synced and renamed into place, so\n"
    "it is replaced whole or not at all. Without -f an existing OUT is left untouched\n"
    "and convert fails (exit status 1).\n"
    "\n"
    "Examples:\n"
    "  onnxz convert model.onnx copy.onnx\n"
    "  onnxz convert -f model.onnx model.onnx     (rewrite in place)\n";

const cli_command cmd_convert = {
    "convert",
    "load a model and write it to a new file",
    "onnxz convert [options] IN OUT",
    convert_help,
    convert_options,
    convert_arg_names,
    2,
    2,
    run_convert,
};
