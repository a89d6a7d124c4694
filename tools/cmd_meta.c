/*
 * tools/cmd_meta.c - `onnxz meta FILE [edits]`: show or edit a model's producer,
 * producer_version, doc_string and metadata_props, through oz_edit_metadata
 * (onnxz/metadata.h: an archive in place, a .onnx rewritten whole, each under its lock).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <onnxz/metadata.h>
#include <onnxz/sign.h>

#include "cli.h"
#include "passphrase.h"
#include <onnxcore/json.h>

enum {
    META_OPT_PRODUCER = 0,
    META_OPT_PRODUCER_VERSION,
    META_OPT_DOC_STRING,
    META_OPT_SET,
    META_OPT_UNSET,
    META_OPT_JSON,
    META_OPT_APPEND_ONLY,
    META_OPT_KEY,
    META_OPT_PASS_FILE,
    META_OPT_UNSIGN
};

static const cli_option meta_options[] = {
    {'\0', "producer", true},
    {'\0', "producer-version", true},
    {'\0', "doc-string", true},
    {'\0', "set", true},
    {'\0', "unset", true},
    {'\0', "json", false},
    {'\0', "append-only", false},
    {'\0', "key", true},
    {'\0', "passphrase-file", true},
    {'\0', "unsign", false},
    {'\0', NULL, false},
};

static const char *const meta_arg_names[] = {"FILE"};

/* The edits in command-line order, each checked as the tool spells it (KEY=VALUE with a
 * non-empty KEY) before anything is read; *edits (free it) holds pointers into args,
 * the `=` of each --set cut off in a copy. */
static int parse_edits(const cli_args *args, oz_metadata_edit **edits, size_t *n, char ***keys) {
    static const oz_metadata_op ops[] = {
        [META_OPT_PRODUCER] = OZ_METADATA_PRODUCER,
        [META_OPT_PRODUCER_VERSION] = OZ_METADATA_PRODUCER_VERSION,
        [META_OPT_DOC_STRING] = OZ_METADATA_DOC_STRING,
        [META_OPT_SET] = OZ_METADATA_SET,
        [META_OPT_UNSET] = OZ_METADATA_REMOVE,
    };
    int count = args->noccurrences;
    *n = 0;
    *edits = calloc((size_t)count + 1, sizeof **edits);
    *keys = calloc((size_t)count + 1, sizeof **keys);
    if (!*edits || !*keys) return cli_fail_msg(args->positional[0], "out of memory");
    for (int i = 0; i < count; i++) {
        int opt = args->occurrence[i].option;
        const char *v = args->occurrence[i].value;
        oz_metadata_edit *e = &(*edits)[*n];
        if (opt == META_OPT_JSON || opt == META_OPT_APPEND_ONLY || opt == META_OPT_KEY ||
            opt == META_OPT_PASS_FILE || opt == META_OPT_UNSIGN)
            continue;
        e->op = ops[opt];
        e->value = v;
        if (opt == META_OPT_SET) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v)
                return cli_usage_error("meta", "--set '%s': give KEY=VALUE with a non-empty KEY",
                                       v);
            char *key = (*keys)[*n] = strndup(v, (size_t)(eq - v));
            if (!key) return cli_fail_msg(args->positional[0], "out of memory");
            e->key = key;
            e->value = eq + 1;
        } else if (opt == META_OPT_UNSET) {
            if (v[0] == '\0') return cli_usage_error("meta", "--unset needs a non-empty KEY");
            e->key = v;
        }
        (*n)++;
    }
    return CLI_EXIT_OK;
}

static void free_edits(oz_metadata_edit *edits, char **keys, size_t n) {
    for (size_t i = 0; keys && i < n; i++) free(keys[i]);
    free(keys);
    free(edits);
}

/* ---- output ---------------------------------------------------------------------- */

static void human_field(FILE *out, const char *key, int has, const oc_str *v) {
    fprintf(out, "%-18s", key);
    if (has)
        cli_put_text(out, v->data, v->size);
    else
        fputs("-", out);
    fputc('\n', out);
}

static void print_human(FILE *out, const onnx_ModelProto *m) {
    human_field(out, "producer name", OC_HAS(ModelProto, m, producer_name), &m->producer_name);
    human_field(out, "producer version", OC_HAS(ModelProto, m, producer_version),
                &m->producer_version);
    human_field(out, "doc_string", OC_HAS(ModelProto, m, doc_string), &m->doc_string);
    fprintf(out, "%-18s%" PRIu64 "\n", "metadata_props", m->metadata_props.count);
    for (uint64_t i = 0; i < m->metadata_props.count; i++) {
        const onnx_StringStringEntryProto *e = m->metadata_props.items[i];
        fputs("  ", out);
        cli_put_text(out, e->key.data, e->key.size);
        fputs(" = ", out);
        cli_put_text(out, e->value.data, e->value.size);
        fputc('\n', out);
    }
}

static void json_field(FILE *out, const char *key, int has, const oc_str *v) {
    fprintf(out, ", \"%s\": ", key);
    if (has)
        oc_json_put_string(out, v->data, v->size);
    else
        fputs("null", out);
}

static void print_json(FILE *out, const char *path, bool is_archive, const onnx_ModelProto *m) {
    fputs("{\"file\": ", out);
    oc_json_put_cstring(out, path);
    fprintf(out, ", \"format\": \"%s\"", is_archive ? "onnxz" : "onnx");
    json_field(out, "producer_name", OC_HAS(ModelProto, m, producer_name), &m->producer_name);
    json_field(out, "producer_version", OC_HAS(ModelProto, m, producer_version),
               &m->producer_version);
    json_field(out, "doc_string", OC_HAS(ModelProto, m, doc_string), &m->doc_string);
    fputs(", \"metadata_props\": [", out);
    for (uint64_t i = 0; i < m->metadata_props.count; i++) {
        const onnx_StringStringEntryProto *e = m->metadata_props.items[i];
        fputs(i ? ", {\"key\": " : "{\"key\": ", out);
        oc_json_put_string(out, e->key.data, e->key.size);
        fputs(", \"value\": ", out);
        oc_json_put_string(out, e->value.data, e->value.size);
        fputc('}', out);
    }
    fputs("]}\n", out);
}

/* ---- the command ------------------------------------------------------------------- */

static int run_meta(const cli_args *args) {
    const char *path = args->positional[0];
    oz_metadata_options opts = OZ_METADATA_OPTIONS_INIT;
    oz_metadata_info info = OZ_METADATA_INFO_INIT;
    oz_metadata_edit *edits = NULL;
    oc_parse_options budget;
    oc_model *model = NULL;
    char **keys = NULL;
    size_t n = 0;
    oc_error err;
    int rc = parse_edits(args, &edits, &n, &keys);
    if (rc != CLI_EXIT_OK) {
        free_edits(edits, keys, n);
        return rc;
    }
    cli_parse_options_init(&budget); /* --max-memory */
    opts.max_memory = budget.max_memory;
    opts.append_only = args->seen[META_OPT_APPEND_ONLY];
    opts.sign_key = args->value[META_OPT_KEY];
    opts.unsign = args->seen[META_OPT_UNSIGN];
    cli_key pass = {NULL, 0};
    bool needs = false;
    oc_error_clear(&err);
    if (opts.sign_key && n) {
        if (oz_sign_key_encrypted(opts.sign_key, &needs, &err) != OC_OK) {
            free_edits(edits, keys, n);
            return cli_fail(opts.sign_key, &err);
        }
        if (needs) {
            rc = cli_key_get("meta", args->value[META_OPT_PASS_FILE], opts.sign_key, false,
                             args->verbosity, &pass);
            if (rc != CLI_EXIT_OK) {
                free_edits(edits, keys, n);
                return rc;
            }
            opts.passphrase = pass.data;
            opts.passphrase_len = pass.len;
        }
    }
    double start = cli_now_ms();
    oc_status st = oz_edit_metadata(path, edits, n, &opts, &model, &info, &err);
    cli_key_free(&pass);
    free_edits(edits, keys, n);
    if (info.rolled_back) /* always: bytes were removed */
        cli_note(args->verbosity, CLI_QUIET,
                 "%s: rolled back an interrupted edit: removed its torn tail, the bytes from "
                 "offset %" PRIu64 " to the end at %" PRIu64 " (A-56)",
                 path, info.cut_from, info.cut_to);
    if (st != OC_OK) return cli_fail(path, &err);
    if (n && (opts.sign_key || (opts.unsign && info.was_signed)))
        cli_note(args->verbosity, CLI_NORMAL, "%s: %s", path,
                 opts.sign_key ? "signed again with the given key"
                               : "its signature was dropped: the model is unsigned now");
    if (n)
        cli_note(args->verbosity, CLI_VERBOSE, "%s %s in %.1f ms",
                 info.is_archive ? "edited the archive in place:" : "rewrote", path,
                 cli_now_ms() - start);
    if (args->seen[META_OPT_JSON])
        print_json(stdout, path, info.is_archive, oc_model_proto(model));
    else if (args->verbosity >= CLI_NORMAL || !n)
        print_human(stdout, oc_model_proto(model));
    oc_model_free(model);
    return CLI_EXIT_OK;
}

static const char meta_help[] =
    "Show a model's producer name and version, doc_string and metadata_props, or edit\n"
    "them. FILE is a .onnx file or an .onnxz archive, told apart by content.\n"
    "\n"
    "With no edit options, prints the fields. With edits, applies them in the order\n"
    "given and prints the fields as they are now (nothing with -q):\n"
    "  an .onnxz archive is edited IN PLACE: only the model entry and the central\n"
    "    directory are rewritten; the tensor entries keep their offsets and bytes, so\n"
    "    even a huge archive costs almost nothing (spec/onnxz.md A-50..A-59). While\n"
    "    another process has it open (onnxz info, verify, a server...), the edit is\n"
    "    refused as busy, unless --append-only (A-57, A-58).\n"
    "  a .onnx file is written anew beside itself and renamed over the old one (its\n"
    "    external data files are not touched; their references are kept).\n"
    "One edit of a file at a time: a second one meanwhile waits up to 1 s, then is\n"
    "refused as busy. A symbolic link is followed: the file it points at is edited.\n"
    "Encrypted files are refused: decrypt, edit, encrypt again.\n"
    "A signed model (onnxz sign) is refused, since the edit would break its signature,\n"
    "unless --key signs it again (an archive: in the same crash-safe edit) or --unsign\n"
    "drops the signature (spec/signing.md G-40).\n"
    "\n"
    "Options:\n"
    "      --producer NAME          set producer_name\n"
    "      --producer-version V     set producer_version\n"
    "      --doc-string S           set the model's doc_string\n"
    "      --set KEY=VALUE          set a metadata_props entry (replaces the value of an\n"
    "                               existing KEY; repeatable)\n"
    "      --unset KEY              remove the metadata_props entries of KEY (repeatable;\n"
    "                               an absent KEY is no error)\n"
    "      --append-only            archives: only append the new model, leaving the old\n"
    "                               one as unused bytes, so that processes reading the\n"
    "                               archive meanwhile are not disturbed (A-57)\n"
    "      --key PRIVATE.pem        a signed model: sign the edited model with this key\n"
    "      --passphrase-file FILE   the passphrase of an encrypted --key\n"
    "      --unsign                 a signed model: drop its signature (the __ONNXZ_SIGNATURE\n"
    "                               entry, or MODEL.sig beside a .onnx)\n"
    "      --json                   print one JSON object: file, format, producer_name,\n"
    "                               producer_version, doc_string (null when absent),\n"
    "                               metadata_props [{key, value}]\n"
    "  -q, --quiet                  print nothing after an edit\n"
    "  -v, --verbose                also print the time taken to stderr\n"
    "  -h, --help                   show this help\n"
    "\n"
    "Examples:\n"
    "  onnxz meta model.onnxz\n"
    "  onnxz meta model.onnxz --producer my-exporter --producer-version 2.1\n"
    "  onnxz meta model.onnx --set license=MIT --set author=me --unset draft\n"
    "  onnxz meta --json model.onnxz | jq .metadata_props\n"
    "  onnxz meta signed.onnxz --set license=MIT --key key.pem\n";

const cli_command cmd_meta = {
    "meta",
    "show or edit producer, doc_string and metadata_props (archives in place)",
    "onnxz meta [options] FILE",
    meta_help,
    meta_options,
    meta_arg_names,
    1,
    1,
    run_meta,
};
