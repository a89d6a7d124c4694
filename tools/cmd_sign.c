/*
 * tools/cmd_sign.c - `onnxz sign MODEL --key PRIVATE.pem`: signs a model in any form with
 * one library call (oz_sign, spec/signing.md). The passphrase of an encrypted key comes
 * as every passphrase does (passphrase.h): --passphrase-file, ONNXZ_KEY, the terminal.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <onnxz/sign.h>

#include "cli.h"
#include "passphrase.h"

enum { SIGN_OPT_KEY = 0, SIGN_OPT_PASS_FILE, SIGN_OPT_SIGNATURE };

static const cli_option sign_options[] = {
    {'\0', "key", true},
    {'\0', "passphrase-file", true},
    {'\0', "signature", true},
    {'\0', NULL, false},
};

static const char *const sign_arg_names[] = {"MODEL"};

static int run_sign(const cli_args *args) {
    const char *model = args->positional[0], *key = args->value[SIGN_OPT_KEY];
    oz_sign_options opts = OZ_SIGN_OPTIONS_INIT;
    oz_signature_report *report = NULL;
    cli_key pass = {NULL, 0};
    oc_error err;
    bool needs = false;
    int rc;
    if (!key) return cli_usage_error("sign", "--key PRIVATE.pem is required");
    opts.signature_path = args->value[SIGN_OPT_SIGNATURE];
    oc_error_clear(&err);
    if (oz_sign_key_encrypted(key, &needs, &err) != OC_OK) return cli_fail(key, &err);
    if (needs) {
        rc = cli_key_get("sign", args->value[SIGN_OPT_PASS_FILE], key, false, args->verbosity,
                         &pass);
        if (rc != CLI_EXIT_OK) return rc;
        opts.passphrase = pass.data;
        opts.passphrase_len = pass.len;
    }
    oc_status st = oz_sign(model, key, &opts, &report, &err);
    cli_key_free(&pass);
    if (st != OC_OK) return cli_fail_named(model, &err);
    if (cli_reports(args->verbosity, model)) {
        cli_put_text(stdout, model, strlen(model));
        printf(": signed with %s key %.16s, %" PRIu64 " %s (%" PRIu64 " bytes); signature in ",
               report->key_type, report->key_fingerprint, report->parts,
               report->in_archive ? "entries" : "files", report->bytes);
        cli_put_text(stdout, report->location, strlen(report->location));
        putchar('\n');
    }
    oz_signature_report_free(report);
    return CLI_EXIT_OK;
}

static const char sign_help[] =
    "Sign MODEL with the private key PRIVATE.pem, in the OpenSSF model-signing format: a\n"
    "manifest of the SHA-256 of every part of the model, in an in-toto statement, signed\n"
    "(DSSE) inside a Sigstore bundle that names the key by its fingerprint.\n"
    "\n"
    "What is signed, and where the signature goes:\n"
    "  an .onnxz archive   every entry, __MODEL_PROTO included; the bundle is stored in\n"
    "                      the archive as the entry __ONNXZ_SIGNATURE (written in place as\n"
    "                      `onnxz meta` writes: no tensor moves; a signature already there\n"
    "                      is replaced)\n"
    "  a .onnx model       the model file and every data file it names; the bundle is\n"
    "                      written beside it as MODEL.sig (or --signature FILE)\n"
    "Check a signature with `onnxz verify MODEL --trust PUBLIC.pem`.\n"
    "\n"
    "Keys are PEM files as `openssl genpkey` writes them: ECDSA P-256 or Ed25519.\n"
    "  openssl genpkey -algorithm ed25519 -out key.pem\n"
    "  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem\n"
    "  openssl pkey -in key.pem -pubout -out key.pub.pem      (the key to trust)\n"
    "The passphrase of an encrypted key is read from --passphrase-file, else the\n"
    "environment variable ONNXZ_KEY, else asked for on the terminal.\n"
    "\n"
    "Options:\n"
    "  --key PRIVATE.pem        the private key (required)\n"
    "  --passphrase-file FILE   the passphrase of an encrypted key\n"
    "  --signature FILE         a .onnx model's bundle: FILE instead of MODEL.sig\n"
    "  -q, --quiet              print nothing but errors\n"
    "  -h, --help               show this help\n"
    "\n"
    "Examples:\n"
    "  onnxz sign model.onnxz --key key.pem\n"
    "  onnxz sign model.onnx --key key.pem       (writes model.onnx.sig)\n";

const cli_command cmd_sign = {
    "sign",
    "sign a model (OpenSSF model signing)",
    "onnxz sign [options] MODEL --key PRIVATE.pem",
    sign_help,
    sign_options,
    sign_arg_names,
    1,
    1,
    run_sign,
};
