/*
 * tools/cmd_info.c - `onnxz info FILE [--json]`: what a model holds and where its bytes are.
 */
#include <inttypes.h>
#include <string.h>

#include <onnxz/info.h>

#include "cli.h"
#include "load.h"
#include "passphrase.h"

enum { INFO_OPT_JSON = 0, INFO_OPT_KEY_FILE, INFO_OPT_KEY, INFO_OPT_PASSPHRASE, INFO_OPT_TRUST };

static const cli_option info_options[] = {
    {'\0', "json", false},      {'\0', "key-file", true}, {'\0', "key", true},
    {'\0', "passphrase", true}, {'\0', "trust", true},    {'\0', NULL, false},
};

static const char *const info_arg_names[] = {"FILE"};

/* ---- human output: aligned "key: value" lines ------------------------------------ */

#define KEY_WIDTH 22

static void put_key(FILE *out, const char *key) {
    int pad = KEY_WIDTH - (int)strlen(key) - 1;
    fprintf(out, "%s:%*s", key, pad > 1 ? pad : 1, "");
}

/* "453914 bytes (443.3 KiB)", or just "15 bytes" below a KiB. */
static void put_bytes(FILE *out, uint64_t bytes) {
    char human[32];
    fprintf(out, "%" PRIu64 " byte%s", bytes, bytes == 1 ? "" : "s");
    if (bytes < 1024) return;
    cli_format_size(bytes, human, sizeof human);
    fprintf(out, " (%s)", human);
}

static void put_share_value(FILE *out, uint64_t tensors, uint64_t bytes) {
    fprintf(out, "%" PRIu64 " tensor%s, ", tensors, tensors == 1 ? "" : "s");
    put_bytes(out, bytes);
}

static void human_str(FILE *out, const char *key, bool present, oc_str value) {
    put_key(out, key);
    if (present)
        cli_put_text(out, value.data, value.size);
    else
        fputs("(not set)", out);
    fputc('\n', out);
}

static void human_int(FILE *out, const char *key, bool present, int64_t value) {
    put_key(out, key);
    if (present)
        fprintf(out, "%" PRId64 "\n", value);
    else
        fputs("(not set)\n", out);
}

static void human_count(FILE *out, const char *key, uint64_t value) {
    put_key(out, key);
    fprintf(out, "%" PRIu64 "\n", value);
}

static void human_opsets(FILE *out, const oz_info *r) {
    put_key(out, "opset imports");
    if (r->nopsets == 0) fputs("(none)", out);
    for (uint64_t i = 0; i < r->nopsets; i++) {
        if (i) fputs(", ", out);
        cli_put_text(out, r->opsets[i].domain.data, r->opsets[i].domain.size);
        fprintf(out, ":%" PRId64, r->opsets[i].version);
    }
    fputc('\n', out);
}

static void human_tensors(FILE *out, const oc_model_stats *s, bool archive) {
    put_key(out, "tensors");
    put_share_value(out, s->tensors, s->tensor_bytes);
    fputc('\n', out);
    put_key(out, "  raw_data");
    put_share_value(out, s->raw.tensors, s->raw.bytes);
    fputc('\n', out);
    put_key(out, "  typed fields");
    put_share_value(out, s->typed.tensors, s->typed.bytes);
    fputc('\n', out);
    put_key(out, "  external data");
    put_share_value(out, s->external.tensors, s->external.bytes);
    if (s->external_unknown_length)
        fprintf(out, ", %" PRIu64 " without a length", s->external_unknown_length);
    fputc('\n', out);
    if (s->external_other_keys) { /* keys kept and never acted on (spec E-3) */
        put_key(out, "  other keys");
        fprintf(out, "%" PRIu64 " entries onnxz does not act on:", s->external_other_keys);
        for (unsigned i = 0; i < s->n_other_key_names; i++) {
            fputs(i ? ", " : " ", out);
            cli_put_text(out, s->other_key_names[i].data, s->other_key_names[i].size);
        }
        fputc('\n', out);
    }
    /* An archive's locations are its entries, as many as its tensors: `ls` lists them. */
    for (uint64_t i = 0; !archive && i < s->nlocations; i++) {
        const oc_external_location *loc = &s->locations[i];
        int pad = KEY_WIDTH - 4 - (int)loc->location.size - 1;
        fputs("    ", out);
        if (loc->location.size)
            cli_put_text(out, loc->location.data, loc->location.size);
        else
            fputs("(no location)", out);
        fprintf(out, ":%*s", pad > 1 ? pad : 1, "");
        put_share_value(out, loc->tensors, loc->bytes);
        fputc('\n', out);
    }
}

/* Where an archive's bytes are: its entries, stored (mapped in place) or deflated. */
static void human_archive(FILE *out, const oz_info *r) {
    const oz_archive_listing *a = r->listing;
    const oz_listed_entry *model = &a->entries[a->model_index];
    char buf[32];
    human_count(out, "archive entries", a->count);
    put_key(out, "  stored");
    fprintf(out, "%" PRIu64 " entr%s, ", a->stored_entries, a->stored_entries == 1 ? "y" : "ies");
    put_bytes(out, a->stored_bytes);
    fputc('\n', out);
    put_key(out, "  deflated");
    fprintf(out, "%" PRIu64 " entr%s, ", a->deflated_entries,
            a->deflated_entries == 1 ? "y" : "ies");
    put_bytes(out, a->deflated_bytes);
    if (a->deflated_entries) {
        fputs(" (", out);
        put_bytes(out, a->deflated_compressed);
        fputs(" compressed)", out);
    }
    fputc('\n', out);
    put_key(out, "  tensor entries");
    fprintf(out, "%" PRIu64, a->tensor_entries);
    if (a->deflated_tensor_entries)
        fprintf(out, ", %" PRIu64 " deflated: not zero-copy, loading inflates them into memory",
                a->deflated_tensor_entries);
    else if (a->tensor_entries && !r->alignment_known)
        fputs(", stored (their alignment is known once each is read)", out);
    else if (a->tensor_entries)
        fprintf(out, ", stored, aligned to %" PRIu64 "%s: zero-copy", a->min_tensor_alignment,
                a->min_tensor_alignment >= OZ_ALIGNMENT_CAP ? " or more" : "");
    fputc('\n', out);
    put_key(out, "  model entry");
    fprintf(out, OZ_MODEL_ENTRY ", %s, ", oz_zip_method_name(model->zip.method, buf, sizeof buf));
    put_bytes(out, model->zip.uncompressed_size);
    if (!oz_archive_listing_model_last(a)) fputs(", not the last entry", out);
    fputc('\n', out);
}

static void print_human(FILE *out, const oz_info *r) {
    const oc_model_stats *s = r->stats;
    put_key(out, "file");
    cli_put_text(out, r->file, strlen(r->file));
    fputc('\n', out);
    put_key(out, "file size");
    put_bytes(out, r->file_size);
    fputc('\n', out);
    put_key(out, "format");
    fputs(r->archive ? "onnxz archive" : "onnx", out);
    if (r->crypt != OC_CRYPT_NONE) fprintf(out, " (encrypted: %s)", oc_crypt_format_name(r->crypt));
    fputc('\n', out);
    human_int(out, "ir_version", r->has_ir_version, r->ir_version);
    human_str(out, "producer name", r->has_producer_name, r->producer_name);
    human_str(out, "producer version", r->has_producer_version, r->producer_version);
    human_str(out, "domain", r->has_domain, r->domain);
    human_int(out, "model_version", r->has_model_version, r->model_version);
    human_opsets(out, r);
    human_str(out, "graph name", r->has_graph_name, r->graph_name);
    human_count(out, "nodes", s->nodes);
    human_count(out, "nodes (total)", s->nodes_total);
    human_count(out, "initializers", s->initializers);
    human_count(out, "sparse initializers", s->sparse_initializers);
    human_count(out, "inputs", s->inputs);
    human_count(out, "outputs", s->outputs);
    human_count(out, "value_infos", s->value_infos);
    human_count(out, "functions", s->functions);
    human_count(out, "training infos", s->training_infos);
    human_count(out, "metadata_props", s->metadata_props);
    human_tensors(out, s, r->archive);
    if (r->listing) human_archive(out, r);
    if (r->signature) { /* nothing when unsigned: the report stays as it was */
        const oz_signature_summary *g = r->signature;
        put_key(out, "signature");
        cli_put_text(out, g->location, strlen(g->location));
        if (g->problem) {
            fputs(" (", out);
            cli_put_text(out, g->problem, strlen(g->problem));
            fputs(")\n", out);
        } else {
            const char *what = r->archive ? (g->parts == 1 ? "entry" : "entries")
                                          : (g->parts == 1 ? "file" : "files");
            fprintf(out, ", key %s, %" PRIu64 " %s signed (not verified: onnxz verify --trust)\n",
                    g->key_fingerprint[0] ? g->key_fingerprint : "(not named)", g->parts, what);
        }
    }
}

/* ---- the command ------------------------------------------------------------------ */

static int run_info(const cli_args *args) {
    const char *path = args->positional[0];
    /* tensors kept as references: missing data files are no obstacle */
    const cli_reader_options ro = {"info", args->value[INFO_OPT_KEY_FILE], true,
                                   args->value[INFO_OPT_TRUST]};
    oz_reader *r = NULL;
    oz_info *report = NULL;
    oc_error err;
    int rc = cli_refuse_argv_key("info", args->seen, INFO_OPT_KEY, INFO_OPT_PASSPHRASE);
    if (rc == CLI_EXIT_OK) rc = cli_reader_open(path, &ro, args->verbosity, &r);
    oc_error_clear(&err);
    if (rc == CLI_EXIT_OK && oz_info_collect_reader(r, &report, &err) != OC_OK)
        rc = cli_fail(path, &err);
    if (rc == CLI_EXIT_OK && args->seen[INFO_OPT_JSON])
        oz_info_write_json(report, stdout);
    else if (rc == CLI_EXIT_OK)
        print_human(stdout, report);
    oz_info_free(report);
    oz_reader_close(r);
    return rc;
}

static const char info_help[] =
    "Show what an ONNX model holds: header fields, graph and node counts, and how many\n"
    "tensor bytes it has and where they live (raw_data in the file, the typed fields,\n"
    "external data files, or the entries of an .onnxz archive). FILE is a .onnx file or\n"
    "an .onnxz archive, told apart by content. The model is mapped, not read, and tensor\n"
    "bytes kept elsewhere are not opened, so this is fast and works without them.\n"
    "\n"
    "An encrypted file (ONNXZEC1 or ONNXCRY1) is decrypted in memory first; the report\n"
    "is that of the model or archive inside (an archive's entries are not listed).\n"
    "\n"
    "Options:\n"
    "      --json      print one JSON object instead of aligned lines\n"
    "      --key-file FILE  the passphrase of an encrypted FILE (else ONNXZ_KEY, else a\n"
    "                  prompt on the terminal; never from the command line)\n"
    "      --trust PUBLIC.pem  refuse FILE unless it is signed with this key (`onnxz\n"
    "                  sign`): an archive's signature, entries and model are checked,\n"
    "                  a .onnx's files all hashed (spec/signing.md G-50..G-54)\n"
    "  -q, --quiet     accepted for symmetry; info always prints its report\n"
    "  -v, --verbose   also print the load time to stderr\n"
    "  -h, --help      show this help\n"
    "\n"
    "Counts: nodes, initializers, sparse initializers, inputs, outputs and value_infos\n"
    "are those of the main graph; \"nodes (total)\" adds the nodes of every subgraph\n"
    "(If/Loop/Scan bodies at any depth), of the model functions and of the training\n"
    "graphs. Tensors are all TensorProtos at any depth (initializers, Constant values,\n"
    "sparse tensor parts, subgraphs...). Their bytes are split three ways:\n"
    "  raw_data        the raw_data field, inside the file (the model entry, for an archive);\n"
    "  typed fields    float_data, int32_data, int64_data, double_data, uint64_data and\n"
    "                  string_data, counted as encoded: 4 or 8 bytes per float or\n"
    "                  double, the varint size of each integer, the length of each string;\n"
    "  external data   tensors with data_location EXTERNAL, by their `length` key,\n"
    "                  grouped by their `location` key (for an archive: its entries,\n"
    "                  listed by `onnxz ls` rather than here).\n"
    "A tensor with bytes in two places is counted in both.\n"
    "\n"
    "An archive adds where its bytes are: its entries, stored (used in place when\n"
    "loading: zero-copy) or deflated (a ZIP tool may have recompressed it: loading then\n"
    "inflates those tensors into memory, which is correct but not zero-copy), the\n"
    "smallest alignment of a stored tensor entry, and the model entry.\n"
    "\n"
    "A signed model (onnxz sign) adds its signature: where it is, the signer's key\n"
    "fingerprint and how many entries or files it covers, as the signature states them;\n"
    "`onnxz verify --trust PUBLIC.pem` checks them (spec/signing.md G-41).\n"
    "\n"
    "JSON keys (stable; absent model fields are null):\n"
    "  file, file_size, format (\"onnx\" or \"onnxz\"), encrypted (\"ONNXZEC1\" or\n"
    "  \"ONNXCRY1\"; only for encrypted files; archive is then null), ir_version, producer_name,\n"
    "  producer_version, domain, model_version, opset_import [{domain, version}] (the\n"
    "  default domain shows as \"ai.onnx\"), graph_name, nodes, nodes_total,\n"
    "  initializers, sparse_initializers, inputs, outputs, value_infos, functions,\n"
    "  training_infos, metadata_props, tensors, tensor_bytes, raw_data {tensors, bytes},\n"
    "  typed_data {tensors, bytes},\n"
    "  external_data {tensors, bytes, unknown_length,\n"
    "                 locations [{location, tensors, bytes}]},\n"
    "  archive: null for .onnx, else {entries, stored {entries, bytes},\n"
    "           deflated {entries, bytes, compressed_bytes}, tensor_entries,\n"
    "           deflated_tensor_entries, min_tensor_alignment, zero_copy,\n"
    "           model_entry {method, size, compressed_size, last}}\n"
    "  signature: only for a signed model (onnxz sign), as its bundle states it, not\n"
    "             verified: {location (__ONNXZ_SIGNATURE or MODEL.sig), key_fingerprint\n"
    "             (SHA-256 of the signer's public key PEM, or null), parts (entries or\n"
    "             files signed), verified (false), problem (null, or why the bundle\n"
    "             cannot be read)}\n"
    "\n"
    "Examples:\n"
    "  onnxz info model.onnx\n"
    "  onnxz info model.onnxz\n"
    "  onnxz info --json model.onnx | jq .tensor_bytes\n"
    "  onnxz info --key-file secret.txt model.onnxc\n";

const cli_command cmd_info = {
    "info",
    "show a model's fields, counts and where its bytes live",
    "onnxz info [options] FILE",
    info_help,
    info_options,
    info_arg_names,
    1,
    1,
    run_info,
};
