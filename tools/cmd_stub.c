/*
 * tools/cmd_stub.c - `onnxz stub ARCHIVE.onnxz OUT.onnx`: a small .onnx whose external
 * tensors point into the archive file itself (location = the archive's file name, offset
 * = the entry's data offset, length = its size), so that any runtime reading classic
 * external data (spec/external-data.md) uses the archive's weights in place.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <onnxz/convert.h>
#include <onnxz/stub.h>

#include "cli.h"
#include "load.h"

enum { STUB_OPT_FORCE = 0 };

static const cli_option stub_options[] = {
    {'f', "force", false},
    {'\0', NULL, false},
};

static const char *const stub_arg_names[] = {"ARCHIVE", "OUT"};

/* The library's rules (oz_stub_file); here only the tool's: a URL is no OUT, an existing
 * OUT needs -f (cli_check_output), and a misnamed OUT is a usage error. */
static int run_stub(const cli_args *args) {
    const char *archive = args->positional[0], *out = args->positional[1];
    oz_stub_options opts = OZ_STUB_OPTIONS_INIT;
    oz_stub_info info = OZ_STUB_INFO_INIT;
    oc_parse_options budget;
    oc_error err;
    bool force = args->seen[STUB_OPT_FORCE];
    int rc;
    if (out[0] == '\0') return cli_check_output("stub", archive, out, false); /* usage */
    if (cli_refuse_url_output(out) != CLI_EXIT_OK) return CLI_EXIT_FAILURE;
    opts.no_overwrite = !force;
    cli_parse_options_init(&budget); /* --max-memory */
    opts.max_memory = budget.max_memory;
    rc = oz_form_named(out) == OZ_FORM_ONNX || oz_form_named(out) == OZ_FORM_AUTO
             ? cli_check_output("stub", archive, out, force)
             : CLI_EXIT_OK;
    if (rc != CLI_EXIT_OK) return rc;
    oc_error_clear(&err);
    if (oz_stub_file(archive, out, &opts, &info, &err) != OC_OK) {
        if (info.out_misnamed) return cli_usage_error("stub", "OUT '%s' %s", out, err.message);
        return cli_fail(info.input_failed ? archive : out, &err);
    }
    if (cli_reports(args->verbosity, out)) {
        const char *name = strrchr(archive, '/') ? strrchr(archive, '/') + 1 : archive;
        cli_put_text(stdout, out, strlen(out));
        printf(" (%" PRIu64 " bytes): %" PRIu64 " tensors, %" PRIu64 " bytes, in ", info.file_size,
               info.tensors, info.bytes);
        cli_put_text(stdout, name, strlen(name));
        putchar('\n');
    }
    return CLI_EXIT_OK;
}

static const char stub_help[] =
    "Write a small .onnx file OUT whose tensors are external data inside ARCHIVE itself:\n"
    "each tensor stored in an entry gets location = ARCHIVE's file name, offset = where\n"
    "the entry's bytes start in the file, length = their size. A runtime that reads\n"
    "classic external data (onnx.load, onnxruntime, ...) then uses the archive's weights\n"
    "in place, without unpacking.\n"
    "\n"
    "OUT must be in the same directory as ARCHIVE (locations are relative to the\n"
    "model's directory). Only STORED entries can be referenced: a deflated tensor entry\n"
    "is an error (`onnxz convert` rewrites the archive with stored entries). Tensors\n"
    "held inside the model stay there. OUT is a .onnx model: a name of another form\n"
    "(*.onnxz, *.onnxc) is a usage error, and OUT is never a directory.\n"
    "\n"
    "OUT also records, in its metadata_props under \"onnxz.stub\", each entry it uses:\n"
    "name, data offset, size and CRC-32 (runtimes ignore it), so that `onnxz verify OUT`\n"
    "can tell whether ARCHIVE still holds those entries where OUT reads them. What\n"
    "survives: `onnxz meta` edits of ARCHIVE (they rewrite only __MODEL_PROTO; the\n"
    "weights do not move), and edits of OUT itself. What does not: rebuilding ARCHIVE\n"
    "(`onnxz convert -f ... ARCHIVE`, another --align, a zip tool), after which OUT reads\n"
    "the wrong bytes and a runtime gives wrong answers without an error: `onnxz verify\n"
    "OUT` fails, naming the tensor; make the stub again (spec/onnxz.md A-60..A-63).\n"
    "\n"
    "Options:\n"
    "  -f, --force     overwrite OUT if it exists\n"
    "  -q, --quiet     print nothing but errors\n"
    "  -h, --help      show this help\n"
    "\n"
    "Examples:\n"
    "  onnxz stub model.onnxz model.onnx\n"
    "  onnxz verify model.onnx          (still the archive it was made from?)\n"
    "  onnxz stub /models/big.onnxz /models/big.onnx && python3 -c \\\n"
    "      'import onnx; onnx.load(\"/models/big.onnx\")'\n";

const cli_command cmd_stub = {
    "stub",
    "write a .onnx whose external data points into an .onnxz archive",
    "onnxz stub [options] ARCHIVE OUT",
    stub_help,
    stub_options,
    stub_arg_names,
    2,
    2,
    run_stub,
};
