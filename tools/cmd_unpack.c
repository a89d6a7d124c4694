/*
 * tools/cmd_unpack.c - `onnxz unpack ARCHIVE DIR`: an archive as a classic external-data
 * model (spec/onnxz.md A-30): every entry becomes a file of the same name in DIR, and
 * __MODEL_PROTO becomes DIR/model.onnx. The model is written byte for byte as the archive
 * holds it: its tensors already name their entries in `location`, so the files beside it
 * are exactly its external data, and any ONNX reader loads DIR/model.onnx. The one
 * exception: a tensor whose entry is empty is written inside the model.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <onnxz/unpack.h>

#include "cli.h"
#include "load.h"

enum { UNPACK_OPT_FORCE = 0, UNPACK_OPT_NO_SYNC };

static const cli_option unpack_options[] = {
    {'f', "force", false},
    {'\0', "no-sync", false},
    {'\0', NULL, false},
};

static const char *const unpack_arg_names[] = {"ARCHIVE", "DIR"};

/* The library's rules and cleanup (oz_unpack_file; a signal is the handler's,
 * interrupt.c, through the cleanup registry); here the tool's: a URL is no DIR, an empty
 * file is refused as every command refuses it, and -f is the flag of a refused DIR. */
static int run_unpack(const cli_args *args) {
    const char *archive = args->positional[0], *dir = args->positional[1];
    oz_unpack_options opts = OZ_UNPACK_OPTIONS_INIT;
    oz_unpack_info info = OZ_UNPACK_INFO_INIT;
    oc_parse_options budget;
    oc_error err;
    int rc;
    if (!dir[0])
        rc = cli_usage_error("unpack", "the output directory name is empty");
    else if (strcmp(dir, "-") == 0) /* standard output wherever an output is named (S-41) */
        rc = cli_usage_error("unpack", "DIR '-': standard output cannot be a directory of files");
    else
        rc = cli_refuse_url_output(dir);
    if (rc == CLI_EXIT_OK) rc = cli_refuse_empty(archive);
    if (rc != CLI_EXIT_OK) return rc;
    cli_parse_options_init(&budget); /* --max-memory */
    opts.max_memory = budget.max_memory;
    opts.no_overwrite = !args->seen[UNPACK_OPT_FORCE];
    opts.no_sync = args->seen[UNPACK_OPT_NO_SYNC];
    double start = cli_now_ms();
    oc_error_clear(&err);
    if (oz_unpack_file(archive, dir, &opts, &info, &err) != OC_OK) {
        if (err.code == OC_ERR_EXISTS && !info.input_failed)
            return cli_fail_msg(dir, "%s; use -f to write into it", err.message);
        return cli_fail(info.input_failed ? archive : dir, &err);
    }
    cli_note(args->verbosity, CLI_VERBOSE, "checked %s and wrote %" PRIu64 " files in %.1f ms",
             cli_shown(archive), info.files + 1, cli_now_ms() - start);
    if (args->verbosity >= CLI_NORMAL) {
        const char *shown = cli_shown(archive); /* N-2: a URL's user:password@ is not shown */
        cli_put_text(stdout, shown, strlen(shown));
        fputs(" -> ", stdout);
        cli_put_text(stdout, dir, strlen(dir));
        printf("/" OZ_UNPACK_MODEL_FILE " + %" PRIu64 " data file%s (%" PRIu64 " bytes)\n",
               info.files, info.files == 1 ? "" : "s", info.bytes);
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
