/*
 * tools/cmd_ls.c - `onnxz ls ARCHIVE [--json]`: the entries of an .onnxz archive, where
 * their data lies and which tensor points at each.
 */
#include <inttypes.h>
#include <string.h>

#include <onnxcore/json.h>
#include <onnxz/listing.h>

#include "cli.h"

enum { LS_OPT_JSON = 0 };

static const cli_option ls_options[] = {
    {'\0', "json", false},
    {'\0', NULL, false},
};

static const char *const ls_arg_names[] = {"ARCHIVE"};

/* The width cli_put_text gives a name: control bytes take four columns (\xNN). */
static uint64_t text_width(const char *s, uint64_t n) {
    uint64_t w = 0;
    for (uint64_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        w += (c < 0x20 || c == 0x7f) ? 4 : 1;
    }
    return w;
}

static void put_padded(FILE *out, const char *s, uint64_t n, uint64_t width) {
    cli_put_text(out, s, n);
    for (uint64_t w = text_width(s, n); w < width; w++) fputc(' ', out);
}

static void print_human(FILE *out, const oz_archive_listing *l) {
    uint64_t name_width = 4;
    char buf[32];
    for (uint64_t i = 0; i < l->count; i++) {
        uint64_t w = text_width(l->entries[i].zip.name, l->entries[i].zip.name_len);
        if (w > name_width) name_width = w;
    }
    put_padded(out, "NAME", 4, name_width);
    fprintf(out, "  %-8s %14s %14s %5s  %s\n", "METHOD", "SIZE", "OFFSET", "ALIGN", "TENSOR");
    for (uint64_t i = 0; i < l->count; i++) {
        const oz_listed_entry *e = &l->entries[i];
        put_padded(out, e->zip.name, e->zip.name_len, name_width);
        fprintf(out, "  %-8s %14" PRIu64, oz_zip_method_name(e->zip.method, buf, sizeof buf),
                e->zip.uncompressed_size);
        if (e->zip.data_offset) /* 0: a URL's local header, not read (zip.h) */
            fprintf(out, " %14" PRIu64 " %5" PRIu64 "  ", e->zip.data_offset,
                    oz_offset_alignment(e->zip.data_offset));
        else
            fprintf(out, " %14s %5s  ", "-", "-");
        if (e->is_model) fputs("(model)", out);
        for (uint64_t k = 0; k < e->ntensors; k++) {
            const oc_str *name = &l->names[e->first_name + k];
            if (k) fputs(", ", out);
            cli_put_text(out, name->data, name->size);
        }
        if (!e->is_model && e->ntensors == 0) fputc('-', out);
        fputc('\n', out);
    }
    if (l->signature) { /* nothing when unsigned: the table stays as it was */
        const oz_signature_summary *g = l->signature;
        if (g->problem) {
            fputs("signed; its signature: ", out);
            cli_put_text(out, g->problem, strlen(g->problem));
            fputc('\n', out);
        } else {
            fprintf(out,
                    "signed by key %s over %" PRIu64 " entr%s (not verified: onnxz verify "
                    "--trust)\n",
                    g->key_fingerprint[0] ? g->key_fingerprint : "(not named)", g->parts,
                    g->parts == 1 ? "y" : "ies");
        }
    }
}

static void print_json(FILE *out, const char *path, const oz_archive_listing *l) {
    char buf[32];
    fputs("{\"file\": ", out);
    oc_json_put_cstring(out, cli_shown(path));
    fprintf(out, ", \"file_size\": %" PRIu64 ", \"entries\": [", l->file_size);
    for (uint64_t i = 0; i < l->count; i++) {
        const oz_listed_entry *e = &l->entries[i];
        fputs(i ? ",\n  {\"name\": " : "\n  {\"name\": ", out);
        oc_json_put_string(out, e->zip.name, e->zip.name_len);
        fputs(", \"method\": ", out);
        oc_json_put_cstring(out, oz_zip_method_name(e->zip.method, buf, sizeof buf));
        fprintf(out, ", \"size\": %" PRIu64 ", \"compressed_size\": %" PRIu64,
                e->zip.uncompressed_size, e->zip.compressed_size);
        if (e->zip.data_offset)
            fprintf(out, ", \"data_offset\": %" PRIu64 ", \"alignment\": %" PRIu64,
                    e->zip.data_offset, oz_offset_alignment(e->zip.data_offset));
        else /* a URL's local header, not read: not known without a request per entry */
            fputs(", \"data_offset\": null, \"alignment\": null", out);
        fprintf(out, ", \"crc32\": %" PRIu32 ", \"model\": %s, \"tensors\": [", e->zip.crc32,
                e->is_model ? "true" : "false");
        for (uint64_t k = 0; k < e->ntensors; k++) {
            const oc_str *name = &l->names[e->first_name + k];
            if (k) fputs(", ", out);
            oc_json_put_string(out, name->data, name->size);
        }
        fputs("]}", out);
    }
    fputs(l->count ? "\n]" : "]", out);
    if (l->signature) { /* absent when unsigned: the document stays as it was */
        fputs(", \"signature\": ", out);
        oz_signature_summary_write_json(out, l->signature);
    }
    fputs("}\n", out);
}

/* The listing, one library call (oz_list_path). */
static int run_ls(const cli_args *args) {
    const char *path = args->positional[0];
    oz_archive_listing *l = NULL;
    oc_parse_options opts;
    oc_error err;
    double start = cli_now_ms();
    cli_parse_options_init(&opts);
    oc_error_clear(&err);
    if (oz_list_path(path, &opts, &l, &err) != OC_OK) return cli_fail(path, &err);
    cli_note(args->verbosity, CLI_VERBOSE, "read %s's directory (%" PRIu64 " entries) in %.1f ms",
             cli_shown(path), l->count, cli_now_ms() - start);
    if (args->seen[LS_OPT_JSON])
        print_json(stdout, path, l);
    else
        print_human(stdout, l);
    oz_archive_listing_free(l);
    return CLI_EXIT_OK;
}

static const char ls_help[] =
    "List the entries of an .onnxz archive, one line each, in central-directory order:\n"
    "  NAME     the entry's name\n"
    "  METHOD   stored (mapped in place when loading) or deflated (inflated into memory)\n"
    "  SIZE     the entry's uncompressed size in bytes\n"
    "  OFFSET   where its (compressed) data starts in the archive\n"
    "  ALIGN    the largest power of two dividing OFFSET, up to 4096 (an archive's\n"
    "           tensors are at least 64-byte aligned)\n"
    "  TENSOR   the tensor(s) whose `location` names the entry, \"(model)\" for\n"
    "           __MODEL_PROTO, \"-\" for entries no tensor points at\n"
    "The archive must open and its model must decode; the tensor bytes are not read\n"
    "(`onnxz verify` checks them).\n"
    "A signed archive (onnxz sign) adds a last line: the signer's key fingerprint and\n"
    "how many entries the signature covers, as it states them (not verified: `onnxz\n"
    "verify --trust PUBLIC.pem` checks them; spec/signing.md G-41).\n"
    "\n"
    "Options:\n"
    "      --json      print one JSON object instead of a table\n"
    "  -q, --quiet     accepted for symmetry; ls always prints its listing\n"
    "  -v, --verbose   also print the time taken to stderr\n"
    "  -h, --help      show this help\n"
    "\n"
    "JSON keys: file, file_size, entries [{name, method, size, compressed_size,\n"
    "  data_offset, alignment, crc32, model (true for __MODEL_PROTO), tensors [names]}],\n"
    "  and for a signed archive only: signature {location, key_fingerprint (or null),\n"
    "  parts, verified (false), problem (null, or why the bundle cannot be read)}\n"
    "\n"
    "Examples:\n"
    "  onnxz ls model.onnxz\n"
    "  onnxz ls --json model.onnxz | jq '.entries[] | select(.alignment < 64)'\n";

const cli_command cmd_ls = {
    "ls",
    "list the entries of an .onnxz archive",
    "onnxz ls [options] ARCHIVE",
    ls_help,
    ls_options,
    ls_arg_names,
    1,
    1,
    run_ls,
};
