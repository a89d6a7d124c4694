/*
 * tools/cmd_verify.c - `onnxz verify FILE [--json]`: every check we know of, on an .onnxz
 * archive or a .onnx model; exit 0 with a summary, or 1 with the first problem.
 */
#include <inttypes.h>
#include <string.h>

#include <onnxz/sign.h>
#include <onnxz/verify.h>

#include "cli.h"
#include <onnxcore/json.h>
#include "passphrase.h"

enum {
    VERIFY_OPT_JSON = 0,
    VERIFY_OPT_DATA_DIR,
    VERIFY_OPT_KEY_FILE,
    VERIFY_OPT_KEY,
    VERIFY_OPT_PASSPHRASE,
    VERIFY_OPT_TRUST
};

static const cli_option verify_options[] = {
    {'\0', "json", false}, {'\0', "data-dir", true},   {'\0', "key-file", true},
    {'\0', "key", true},   {'\0', "passphrase", true}, {'\0', "trust", true},
    {'\0', NULL, false},
};

static const char *const verify_arg_names[] = {"FILE"};

/* The flag that sets the oz_open_options field `option` names ("data_dir": "--data-dir"). */
static const char *flag_of(const char *option) {
    return strcmp(option, "data_dir") == 0 ? "--data-dir" : option;
}

/* The verification, one library call (oz_verify_path), made again with the passphrase
 * when the file turns out to be encrypted. */
static int verify(const cli_args *args, const char *path, oz_verify_report **out) {
    oz_open_options opts = OZ_OPEN_OPTIONS_INIT;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    cli_key key = {NULL, 0};
    oc_error err;
    oc_status st;
    int rc = CLI_EXIT_OK;
    cli_parse_options_init(&opts.parse);
    opts.parse.data_dir = args->value[VERIFY_OPT_DATA_DIR];
    opts.trust = args->value[VERIFY_OPT_TRUST];
    oc_error_clear(&err);
    st = oz_verify_path(path, &opts, out, &info, &err);
    if (st == OC_ERR_INVALID_ARG && info.option) /* the library names the option at fault */
        return cli_usage_error("verify", "%s%s", flag_of(info.option),
                               err.message + strlen(info.option));
    if (st != OC_OK && oz_kind_is_encrypted(info.kind, NULL)) { /* refused: a key is needed */
        rc = cli_require_crypto(path);
        if (rc == CLI_EXIT_OK)
            rc = cli_key_get("verify", args->value[VERIFY_OPT_KEY_FILE], path, false,
                             args->verbosity, &key);
        if (rc != CLI_EXIT_OK) return rc;
        opts.key = key.data;
        opts.key_len = key.len;
        oc_error_clear(&err);
        st = oz_verify_path(path, &opts, out, &info, &err);
        cli_key_free(&key);
    }
    return st == OC_OK ? CLI_EXIT_OK : cli_fail_named(path, &err);
}

/* ---- output ---------------------------------------------------------------------- */

/* The signature a trusted key verified (--trust), on a line of its own. */
static void print_signature(FILE *out, const oz_signature_report *g) {
    char size[32];
    if (!g) return;
    cli_format_size(g->bytes, size, sizeof size);
    fprintf(out,
            "OK signed with the trusted %s key %.16s: %" PRIu64
            " %s (%s) match the signed manifest\n",
            g->key_type, g->key_fingerprint, g->parts, g->in_archive ? "entries" : "files", size);
}

static void print_human(FILE *out, const char *path, const oz_verify_report *r) {
    const oz_archive_report *a = r->archive;
    const oz_model_report *s = r->model;
    oc_crypt_format crypt;
    char size[32];
    fputs("OK ", out);
    const char *shown = cli_shown(path);
    cli_put_text(out, shown, strlen(shown));
    if (oz_kind_is_encrypted(r->kind, &crypt)) {
        fprintf(out, ": encrypted (%s), decrypts%s; %s inside, %" PRIu64 " tensors, decodes\n",
                oc_crypt_format_name(crypt), crypt == OC_CRYPT_ONNXZEC1 ? " and authenticates" : "",
                r->is_archive ? "onnxz archive" : "onnx model", s->tensors);
        return;
    }
    if (a) {
        cli_format_size(a->entry_bytes, size, sizeof size);
        fprintf(out,
                ": onnxz archive, %" PRIu64 " entries with valid CRC-32s, %" PRIu64
                " tensors in %" PRIu64 " entries (%s), model decodes (%" PRIu64 " bytes, last)\n",
                a->entries, a->entry_tensors, a->tensor_entries, size, a->model_size);
        return;
    }
    fprintf(out, ": onnx model, %" PRIu64 " tensors", s->tensors);
    if (s->external_tensors) {
        cli_format_size(s->external_bytes, size, sizeof size);
        fprintf(out, ", %" PRIu64 " in %" PRIu64 " external data file%s (%s)", s->external_tensors,
                s->external_files, s->external_files == 1 ? "" : "s", size);
        if (s->checksums)
            fprintf(out, ", %" PRIu64 " checksum%s verified", s->checksums,
                    s->checksums == 1 ? "" : "s");
        else
            fputs(", no checksums to verify", out);
        if (s->archive_references)
            fprintf(out, ", %" PRIu64 " reference%s into an archive match%s its entries",
                    s->archive_references, s->archive_references == 1 ? "" : "s",
                    s->archive_references == 1 ? "es" : "");
    }
    fputc('\n', out);
}

/* ", \"signature\": {...}" when a trusted key verified the signature. */
static void put_signature_json(FILE *out, const oz_signature_report *g) {
    if (!g) return;
    fprintf(
        out,
        ", \"signature\": {\"key_type\": \"%s\", \"key_fingerprint\": \"%s\", \"parts\": %" PRIu64
        ", \"bytes\": %" PRIu64 ", \"model_digest\": \"%s\", \"location\": ",
        g->key_type, g->key_fingerprint, g->parts, g->bytes, g->model_digest);
    oc_json_put_cstring(out, g->location);
    fputc('}', out);
}

static void print_json(FILE *out, const char *path, const oz_verify_report *r) {
    const oz_archive_report *a = r->archive;
    const oz_model_report *s = r->model;
    oc_crypt_format crypt;
    fputs("{\"file\": ", out);
    oc_json_put_cstring(out, cli_shown(path));
    put_signature_json(out, r->signature);
    if (oz_kind_is_encrypted(r->kind, &crypt))
        fprintf(out,
                ", \"format\": \"encrypted\", \"ok\": true, \"encryption\": \"%s\", "
                "\"payload\": \"%s\", \"tensors\": %" PRIu64 "}\n",
                oc_crypt_format_name(crypt), r->is_archive ? "onnxz" : "onnx", s->tensors);
    else if (a)
        fprintf(out,
                ", \"format\": \"onnxz\", \"ok\": true, \"entries\": %" PRIu64
                ", \"tensor_entries\": %" PRIu64 ", \"entry_tensors\": %" PRIu64
                ", \"entry_bytes\": %" PRIu64 ", \"model_size\": %" PRIu64 "}\n",
                a->entries, a->tensor_entries, a->entry_tensors, a->entry_bytes, a->model_size);
    else {
        fprintf(out,
                ", \"format\": \"onnx\", \"ok\": true, \"tensors\": %" PRIu64
                ", \"external_tensors\": %" PRIu64 ", \"external_files\": %" PRIu64
                ", \"external_bytes\": %" PRIu64 ", \"checksums_verified\": %" PRIu64,
                s->tensors, s->external_tensors, s->external_files, s->external_bytes,
                s->checksums);
        if (s->archive_references)
            fprintf(out, ", \"archive_references\": %" PRIu64, s->archive_references);
        fputs("}\n", out);
    }
}

static int run_verify(const cli_args *args) {
    const char *path = args->positional[0];
    oz_verify_report *r = NULL;
    double start = cli_now_ms();
    int rc = cli_refuse_argv_key("verify", args->seen, VERIFY_OPT_KEY, VERIFY_OPT_PASSPHRASE);
    if (rc == CLI_EXIT_OK) rc = verify(args, path, &r);
    if (rc == CLI_EXIT_OK) {
        cli_note(args->verbosity, CLI_VERBOSE, "checked %s in %.1f ms", path, cli_now_ms() - start);
        if (args->seen[VERIFY_OPT_JSON])
            print_json(stdout, path, r);
        else if (args->verbosity >= CLI_NORMAL) {
            print_signature(stdout, r->signature);
            print_human(stdout, path, r);
        }
    }
    oz_verify_report_free(r);
    return rc;
}

static const char verify_help[] =
    "Check a model file as thoroughly as we can, without changing anything. Exit status\n"
    "0 and one \"OK\" line when every check passes; 1 and the first problem as an error\n"
    "line otherwise. The form of FILE is told by its content, not its name.\n"
    "\n"
    "An .onnxz archive, in this order:\n"
    "  1. every ZIP rule of spec/onnxz-zip.md (Z-60..Z-76) and the archive's (A-1, A-40);\n"
    "  2. the CRC-32 of every entry (and the inflated size of deflated ones); no name is\n"
    "     both a file and a directory (Z-36);\n"
    "  3. the model decodes, states its ir_version and has a graph (W-41), and every\n"
    "     tensor resolves to an entry of its length (A-21) and holds the bytes its dims\n"
    "     and data type make (W-40);\n"
    "  4. __MODEL_PROTO is the last entry, in the central directory and in the file (A-2);\n"
    "     tensor entries are stored, not deflated (A-3); every stored entry's data starts\n"
    "     on a 64-byte boundary (A-4).\n"
    "A .onnx model: it decodes, states its ir_version and has a graph (W-41), every\n"
    "external tensor resolves to its data file under the rules of\n"
    "spec/external-data.md, every `checksum` key matches (SHA-1, hashed on every core),\n"
    "and every tensor holds the bytes its dims and data type make (W-40).\n"
    "A stub (`onnxz stub`: tensors whose location is an .onnxz archive): each such\n"
    "reference is still the entry the stub was made from: same name, data offset, size\n"
    "and CRC-32, and the bytes have that CRC-32 (spec/onnxz.md A-62). A rebuilt archive\n"
    "fails, naming the tensor; an archive edited by `onnxz meta` passes.\n"
    "\n"
    "An encrypted file (ONNXZEC1 or ONNXCRY1): it decrypts with the passphrase (every\n"
    "ONNXZEC1 chunk authenticates), and the model or archive inside decodes with every\n"
    "tensor resolved (the archive layout rules are not checked: decrypt it for that).\n"
    "\n"
    "Options:\n"
    "      --key-file FILE the passphrase of an encrypted FILE (else ONNXZ_KEY, else a\n"
    "                      prompt on the terminal; never from the command line)\n"
    "      --data-dir DIR  .onnx only: look for external data files in DIR instead of\n"
    "                      the model's directory\n"
    "      --trust PUBLIC.pem  first verify the model's signature (`onnxz sign`) with this\n"
    "                      public key: the bundle in the archive (__ONNXZ_SIGNATURE) or\n"
    "                      beside the .onnx (MODEL.sig), its signature, and every entry\n"
    "                      or file against the signed manifest (spec/signing.md G-31);\n"
    "                      an unsigned model, another key or any changed, missing or\n"
    "                      unlisted part fails, naming it\n"
    "      --json          print one JSON object instead of the OK line\n"
    "  -q, --quiet         print nothing on success (the exit status tells)\n"
    "  -v, --verbose       also print timings to stderr\n"
    "  -h, --help          show this help\n"
    "\n"
    "JSON keys: file, format (\"onnxz\" or \"onnx\"), ok (true); for archives entries,\n"
    "  tensor_entries, entry_tensors, entry_bytes, model_size; for .onnx files tensors,\n"
    "  external_tensors, external_files, external_bytes, checksums_verified, and for a\n"
    "  stub archive_references; for encrypted files format \"encrypted\", encryption,\n"
    "  payload (\"onnx\" or \"onnxz\"), tensors; with --trust, signature: key_type,\n"
    "  key_fingerprint, parts, bytes, model_digest, location.\n"
    "A failure prints no JSON: only the error line, on stderr.\n"
    "\n"
    "Examples:\n"
    "  onnxz verify model.onnxz\n"
    "  onnxz verify --data-dir /mnt/weights model.onnx\n"
    "  onnxz verify model.onnxz --trust publisher.pub.pem\n"
    "  ONNXZ_KEY=... onnxz verify model.onnxc\n";

const cli_command cmd_verify = {
    "verify",
    "check an archive or model: structure, CRCs, checksums, references",
    "onnxz verify [options] FILE",
    verify_help,
    verify_options,
    verify_arg_names,
    1,
    1,
    run_verify,
};
