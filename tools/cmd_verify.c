/*
 * tools/cmd_verify.c - `onnxz verify FILE [--json]`: every check we know of, on an .onnxz
 * archive or a .onnx model; exit 0 with a summary, or 1 with the first problem.
 */
#include <inttypes.h>
#include <string.h>

#include <onnxcore/http.h>

#include "archive_entries.h"
#include "cli.h"
#include "load.h"
#include "json.h"
#include "model_stats.h"
#include "passphrase.h"
#include "stub_record.h"

enum {
    VERIFY_OPT_JSON = 0,
    VERIFY_OPT_DATA_DIR,
    VERIFY_OPT_KEY_FILE,
    VERIFY_OPT_KEY,
    VERIFY_OPT_PASSPHRASE
};

static const cli_option verify_options[] = {
    {'\0', "json", false}, {'\0', "data-dir", true},   {'\0', "key-file", true},
    {'\0', "key", true},   {'\0', "passphrase", true}, {'\0', NULL, false},
};

static const char *const verify_arg_names[] = {"FILE"};

/* What a successful verification found, for the summary. */
typedef struct verify_report {
    const char *path;
    cli_form form;
    /* archives */
    uint64_t entries;
    uint64_t tensor_entries;
    uint64_t entry_tensors; /* tensors resolved to entries */
    uint64_t entry_bytes;   /* their entries' uncompressed bytes */
    uint64_t model_size;    /* __MODEL_PROTO, uncompressed */
    /* .onnx */
    uint64_t tensors;
    uint64_t external_tensors;
    uint64_t external_files;
    uint64_t external_bytes;
    uint64_t checksums;
    uint64_t stub_references; /* tensors checked against archive entries */
    /* encrypted files */
    oc_crypt_format crypt;
    cli_form payload;
} verify_report;

/* ---- archives ------------------------------------------------------------------- */

static int verify_archive(const cli_args *args, verify_report *r) {
    oz_archive *ar = NULL;
    oc_model *model = NULL;
    oc_parse_options opts;
    oc_error err;
    archive_listing listing;
    oc_status st;
    int rc;
    double start = cli_now_ms();
    oc_error_clear(&err);
    /* 1. Every ZIP check (Z-60..Z-76) and the archive's own. */
    st = cli_archive_open(r->path, &ar, &err);
    /* 2. The CRC-32 of every entry, streaming. */
    if (st == OC_OK) st = oz_zip_reader_verify_all(oz_archive_zip(ar), &err);
    /* No name is both a file and a directory: the archive could not be extracted (Z-36). */
    if (st == OC_OK) st = oz_zip_reader_check_paths(oz_archive_zip(ar), &err);
    if (st == OC_OK)
        cli_note(args->verbosity, CLI_VERBOSE, "ZIP structure and CRC-32s checked in %.1f ms",
                 cli_now_ms() - start);
    /* 3. The model decodes and every tensor resolves to its entry, in place; a
     * remote archive's entries, whose every byte step 2 has just downloaded, are resolved
     * without reading them again (oz_archive_fetch's sizes). */
    cli_parse_options_init(&opts);
    opts.no_copy = 1;
    opts.skip_external_data = oc_is_url(r->path);
    if (st == OC_OK) st = oz_archive_load_model(ar, &opts, &model, &err);
    /* ... and every tensor holds the bytes its dims and type make (W-40). */
    if (st == OC_OK) st = oc_model_check(model, &err);
    if (st == OC_OK && opts.skip_external_data) {
        oc_tensor_fetch fetch;
        oz_archive_fetch(ar, &fetch);
        st = oc_model_check_tensor_sizes_fetched(model, &fetch, &err);
    }
    if (st != OC_OK) {
        oc_model_free(model);
        oz_archive_close(ar);
        return cli_fail(r->path, &err);
    }
    /* 4. The layout rules, on the same reader: the local headers step 2 checked are not
     * read again (a remote archive's would cost a second download of it), nor the model
     * when it was decoded without its weights. */
    if (!opts.skip_external_data) {
        oc_model_free(model);
        model = NULL;
    }
    rc = archive_listing_of(r->path, ar, model, &listing);
    if (rc != CLI_EXIT_OK) return rc;
    /* (the library's check: File.verify() in Python makes the same) */
    oc_error_clear(&err);
    if (oz_archive_check_layout(listing.archive, oc_model_proto(listing.model), &err) != OC_OK)
        rc = cli_fail(r->path, &err);
    if (rc == CLI_EXIT_OK) {
        r->entries = listing.count;
        r->tensor_entries = listing.tensor_entries;
        for (uint64_t i = 0; i < listing.count; i++) {
            const archive_entry *e = &listing.entries[i];
            if (e->is_model) {
                r->model_size = e->zip.uncompressed_size;
            } else if (e->ntensors) {
                r->entry_tensors += e->ntensors;
                r->entry_bytes += e->zip.uncompressed_size;
            }
        }
    }
    archive_listing_close(&listing);
    return rc;
}

/* ---- .onnx files ----------------------------------------------------------------- */

static oc_status count_checksum(void *ctx, onnx_TensorProto *t) {
    uint64_t *n = ctx;
    if (oc_tensor_is_external(t) && oc_tensor_external_value(t, "checksum")) (*n)++;
    return OC_OK;
}

/* How verify loads a model, plain or encrypted: every checksum verified. */
static void verify_load_options(const cli_args *args, cli_load_options *lo) {
    memset(lo, 0, sizeof *lo);
    lo->data_dir = args->value[VERIFY_OPT_DATA_DIR];
    lo->verify_checksums = 1;
    lo->num_threads = -1; /* checksums are hashed on every core */
}

/* Loads path and checks the model (oc_model_check: W-41, W-40); on failure *out stays NULL. */
static int load_checked(const char *path, const cli_load_options *lo, int verbosity, oc_model **out,
                        cli_form *payload) {
    oc_error err;
    int rc = cli_load_input(path, lo, verbosity, out, payload);
    if (rc != CLI_EXIT_OK) return rc;
    oc_error_clear(&err);
    if (oc_model_check(*out, &err) == OC_OK) return CLI_EXIT_OK;
    oc_model_free(*out);
    *out = NULL;
    return cli_fail(path, &err);
}

/* The model's figures into *stats; on failure the model is freed. */
static int collect_stats(const char *path, oc_model *model, model_stats *stats) {
    oc_error err;
    oc_error_clear(&err);
    if (model_stats_collect(oc_model_proto(model), stats, &err) == OC_OK) return CLI_EXIT_OK;
    oc_model_free(model);
    return cli_fail(path, &err);
}

static int verify_onnx(const cli_args *args, verify_report *r) {
    cli_load_options lo;
    oc_model *model = NULL;
    model_stats stats;
    int rc;
    verify_load_options(args, &lo);
    /* The check: decode, resolve every external tensor (E-10..E-16), verify checksums;
     * then every tensor's size against its dims and type (W-40). */
    rc = load_checked(r->path, &lo, args->verbosity, &model, NULL);
    if (rc != CLI_EXIT_OK) return rc;
    oc_model_free(model);
    model = NULL;
    /* The summary's figures come from the references themselves. */
    lo.external = CLI_EXTERNAL_KEEP;
    rc = cli_load_input(r->path, &lo, CLI_QUIET, &model, NULL);
    if (rc != CLI_EXIT_OK) return rc;
    rc = collect_stats(r->path, model, &stats);
    if (rc != CLI_EXIT_OK) return rc;
    r->tensors = stats.tensors;
    r->external_tensors = stats.external.tensors;
    r->external_files = stats.nlocations;
    r->external_bytes = stats.external.bytes;
    oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(model), count_checksum,
                         &r->checksums);
    model_stats_free(&stats);
    /* A stub: every reference into an archive is the entry it was made from. */
    rc = stub_check(r->path, lo.data_dir, model, &r->stub_references);
    oc_model_free(model);
    return rc;
}

/* ---- encrypted files ------------------------------------------------------------- */

/* Decrypting authenticates every ONNXZEC1 chunk (ONNXCRY1: the padding), then the model
 * or archive inside must open and decode, every tensor resolving to its entry. */
static int verify_encrypted(const cli_args *args, verify_report *r) {
    cli_load_options lo;
    oc_model *model = NULL;
    model_stats stats;
    int rc;
    verify_load_options(args, &lo);
    lo.command = "verify";
    lo.key_file = args->value[VERIFY_OPT_KEY_FILE];
    lo.crypt_out = &r->crypt;
    rc = load_checked(r->path, &lo, args->verbosity, &model, &r->payload);
    if (rc != CLI_EXIT_OK) return rc;
    rc = collect_stats(r->path, model, &stats);
    if (rc != CLI_EXIT_OK) return rc;
    r->tensors = stats.tensors;
    model_stats_free(&stats);
    oc_model_free(model);
    return CLI_EXIT_OK;
}

/* ---- output ---------------------------------------------------------------------- */

static void print_human(FILE *out, const verify_report *r) {
    char size[32];
    fputs("OK ", out);
    cli_put_text(out, r->path, strlen(r->path));
    if (r->crypt != OC_CRYPT_NONE) {
        fprintf(out, ": encrypted (%s), decrypts%s; %s inside, %" PRIu64 " tensors, decodes\n",
                oc_crypt_format_name(r->crypt),
                r->crypt == OC_CRYPT_ONNXZEC1 ? " and authenticates" : "",
                r->payload == CLI_FORM_ONNXZ ? "onnxz archive" : "onnx model", r->tensors);
        return;
    }
    if (r->form == CLI_FORM_ONNXZ) {
        cli_format_size(r->entry_bytes, size, sizeof size);
        fprintf(out,
                ": onnxz archive, %" PRIu64 " entries with valid CRC-32s, %" PRIu64
                " tensors in %" PRIu64 " entries (%s), model decodes (%" PRIu64 " bytes, last)\n",
                r->entries, r->entry_tensors, r->tensor_entries, size, r->model_size);
        return;
    }
    fprintf(out, ": onnx model, %" PRIu64 " tensors", r->tensors);
    if (r->external_tensors) {
        cli_format_size(r->external_bytes, size, sizeof size);
        fprintf(out, ", %" PRIu64 " in %" PRIu64 " external data file%s (%s)", r->external_tensors,
                r->external_files, r->external_files == 1 ? "" : "s", size);
        if (r->checksums)
            fprintf(out, ", %" PRIu64 " checksum%s verified", r->checksums,
                    r->checksums == 1 ? "" : "s");
        else
            fputs(", no checksums to verify", out);
        if (r->stub_references)
            fprintf(out, ", %" PRIu64 " reference%s into an archive match%s its entries",
                    r->stub_references, r->stub_references == 1 ? "" : "s",
                    r->stub_references == 1 ? "es" : "");
    }
    fputc('\n', out);
}

static void print_json(FILE *out, const verify_report *r) {
    fputs("{\"file\": ", out);
    json_put_cstring(out, r->path);
    if (r->crypt != OC_CRYPT_NONE)
        fprintf(out,
                ", \"format\": \"encrypted\", \"ok\": true, \"encryption\": \"%s\", "
                "\"payload\": \"%s\", \"tensors\": %" PRIu64 "}\n",
                oc_crypt_format_name(r->crypt), r->payload == CLI_FORM_ONNXZ ? "onnxz" : "onnx",
                r->tensors);
    else if (r->form == CLI_FORM_ONNXZ)
        fprintf(out,
                ", \"format\": \"onnxz\", \"ok\": true, \"entries\": %" PRIu64
                ", \"tensor_entries\": %" PRIu64 ", \"entry_tensors\": %" PRIu64
                ", \"entry_bytes\": %" PRIu64 ", \"model_size\": %" PRIu64 "}\n",
                r->entries, r->tensor_entries, r->entry_tensors, r->entry_bytes, r->model_size);
    else {
        fprintf(out,
                ", \"format\": \"onnx\", \"ok\": true, \"tensors\": %" PRIu64
                ", \"external_tensors\": %" PRIu64 ", \"external_files\": %" PRIu64
                ", \"external_bytes\": %" PRIu64 ", \"checksums_verified\": %" PRIu64,
                r->tensors, r->external_tensors, r->external_files, r->external_bytes,
                r->checksums);
        if (r->stub_references)
            fprintf(out, ", \"archive_references\": %" PRIu64, r->stub_references);
        fputs("}\n", out);
    }
}

static int run_verify(const cli_args *args) {
    verify_report r;
    int rc;
    memset(&r, 0, sizeof r);
    r.path = args->positional[0];
    r.form = cli_input_form(r.path);
    rc = cli_refuse_argv_key("verify", args->seen, VERIFY_OPT_KEY, VERIFY_OPT_PASSPHRASE);
    if (rc != CLI_EXIT_OK) return rc;
    if (r.form == CLI_FORM_ONNXZ && args->seen[VERIFY_OPT_DATA_DIR])
        return cli_usage_error("verify", "--data-dir applies to .onnx files, not archives");
    if (r.form == CLI_FORM_ONNX) {
        r.crypt = cli_detect_crypt(r.path);
    }
    if (r.crypt != OC_CRYPT_NONE)
        rc = verify_encrypted(args, &r);
    else
        rc = r.form == CLI_FORM_ONNXZ ? verify_archive(args, &r) : verify_onnx(args, &r);
    if (rc != CLI_EXIT_OK) return rc;
    if (args->seen[VERIFY_OPT_JSON])
        print_json(stdout, &r);
    else if (args->verbosity >= CLI_NORMAL)
        print_human(stdout, &r);
    return CLI_EXIT_OK;
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
    "      --json          print one JSON object instead of the OK line\n"
    "  -q, --quiet         print nothing on success (the exit status tells)\n"
    "  -v, --verbose       also print timings to stderr\n"
    "  -h, --help          show this help\n"
    "\n"
    "JSON keys: file, format (\"onnxz\" or \"onnx\"), ok (true); for archives entries,\n"
    "  tensor_entries, entry_tensors, entry_bytes, model_size; for .onnx files tensors,\n"
    "  external_tensors, external_files, external_bytes, checksums_verified, and for a\n"
    "  stub archive_references; for encrypted files format \"encrypted\", encryption,\n"
    "  payload (\"onnx\" or \"onnxz\"), tensors.\n"
    "A failure prints no JSON: only the error line, on stderr.\n"
    "\n"
    "Examples:\n"
    "  onnxz verify model.onnxz\n"
    "  onnxz verify --data-dir /mnt/weights model.onnx\n"
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
