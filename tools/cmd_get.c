/*
 * tools/cmd_get.c - `onnxz get SRC TENSOR [-o OUT] [--json]`: one tensor's bytes, or what
 * it is, from a model or archive on disk or at a URL, without reading any other tensor.
 *
 * An archive costs its directory and model (the same as `ls`), then one read of the
 * tensor's entry: over HTTP, one request for the entry's local header and data. A model
 * is loaded with its external tensors kept as references, and only the one asked for is
 * resolved (a ranged read of its data file, under the usual location rules).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <onnxcore/external.h>
#include <onnxcore/http.h>
#include <onnxcore/tensor.h>
#include <onnxz/open.h>

#include "archive_listing.h"
#include "cli.h"
#include <onnxcore/json.h>
#include "load.h"
#include "onnxcore_private.h"

enum { GET_OPT_OUTPUT = 0, GET_OPT_JSON, GET_OPT_FORCE, GET_OPT_NO_SYNC };

static const cli_option get_options[] = {
    {'o', "output", true},    {'\0', "json", false}, {'f', "force", false},
    {'\0', "no-sync", false}, {'\0', NULL, false},
};

static const char *const get_arg_names[] = {"SRC", "TENSOR"};

static void print_json(const char *src, const onnx_TensorProto *t, uint64_t bytes) {
    fputs("{\"file\": ", stdout);
    oc_json_put_cstring(stdout, cli_shown(src));
    fputs(", \"name\": ", stdout);
    oc_json_put_string(stdout, t->name.data, t->name.size);
    fputs(", \"data_type\": ", stdout);
    oc_json_put_cstring(stdout, oc_tensor_type_name(t->data_type));
    fputs(", \"dims\": [", stdout);
    for (uint64_t i = 0; i < t->dims.count; i++)
        printf("%s%" PRId64, i ? ", " : "", t->dims.items[i]);
    printf("], \"bytes\": %" PRIu64 "}\n", bytes);
}

/* Where the bytes go: a new file (renamed into place once complete) or standard output. */
typedef struct output {
    const char *path; /* NULL: standard output */
    oc_atomic_file af;
} output;

static oc_status to_stdout(void *ctx, const void *data, uint64_t size, oc_error *err) {
    (void)ctx;
    if (size && fwrite(data, 1, (size_t)size, stdout) != size)
        return oc_error_set(err, OC_ERR_IO, OC_NO_OFFSET, "write to standard output failed");
    return OC_OK;
}

static int output_open(output *o, const cli_args *args) {
    oc_error err;
    oc_error_clear(&err);
    o->path = args->value[GET_OPT_OUTPUT];
    if (o->path && strcmp(o->path, "-") == 0) o->path = NULL; /* -o -: standard output */
    if (!o->path)
        return isatty(STDOUT_FILENO)
                   ? cli_usage_error("get", "standard output is a terminal: give -o FILE or "
                                            "pipe the bytes elsewhere")
                   : CLI_EXIT_OK;
    if (oc_atomic_open(&o->af, o->path, args->seen[GET_OPT_FORCE], &err) != OC_OK)
        return cli_fail(o->path, &err);
    o->af.no_sync = args->seen[GET_OPT_NO_SYNC];
    return CLI_EXIT_OK;
}

static oc_write_fn output_fn(output *o, void **ctx) {
    *ctx = o->path ? (void *)&o->af : NULL;
    return o->path ? oc_atomic_write : to_stdout;
}

/* Ends the output: kept only when st is OC_OK and everything reached it. */
static int output_close(output *o, oc_status st, const char *src, oc_error *err) {
    if (!o->path) {
        if (st == OC_OK && fflush(stdout) != 0)
            return cli_fail_msg("standard output", "write failed");
        return st == OC_OK ? CLI_EXIT_OK : cli_fail(src, err);
    }
    if (st == OC_OK) {
        st = oc_atomic_commit(&o->af, err);
        oc_atomic_abort(&o->af);
        return st == OC_OK ? CLI_EXIT_OK : cli_fail(o->path, err);
    }
    oc_atomic_abort(&o->af);
    return cli_fail(src, err);
}

/* A span's bytes to the output (file to file by the kernel where the span is a file's). */
static int write_span(const cli_args *args, const char *src, const oc_bytes *bytes) {
    output o;
    oc_error err;
    oc_error_clear(&err);
    int rc = output_open(&o, args);
    if (rc != CLI_EXIT_OK) return rc;
    void *ctx;
    oc_write_fn fn = output_fn(&o, &ctx);
    oc_status st = o.path ? oc_atomic_write_bytes(&o.af, bytes, &err)
                          : (bytes->size ? fn(ctx, bytes->data, bytes->size, &err) : OC_OK);
    return output_close(&o, st, src, &err);
}

/* An archive entry's bytes to the output: small ones read whole (from a URL, one request
 * with the local header), large ones streamed through (never all in memory). */
#define GET_WHOLE_MAX ((uint64_t)64 << 20)

static int write_entry(const cli_args *args, const char *src, const oz_zip_reader *zip,
                       uint64_t index) {
    oz_zip_entry e;
    oc_error err;
    oc_error_clear(&err);
    if (oz_zip_reader_entry(zip, index, &e, &err) != OC_OK) return cli_fail(src, &err);
    if (e.uncompressed_size <= GET_WHOLE_MAX || e.method != OZ_ZIP_STORED) {
        oc_bytes bytes = {0};
        if (oz_zip_reader_read(zip, index, &bytes, &err) != OC_OK) return cli_fail(src, &err);
        int rc = write_span(args, src, &bytes);
        oc_bytes_release(&bytes);
        return rc;
    }
    output o;
    int rc = output_open(&o, args);
    if (rc != CLI_EXIT_OK) return rc;
    void *ctx;
    oc_write_fn fn = output_fn(&o, &ctx);
    return output_close(&o, oz_zip_reader_read_to(zip, index, fn, ctx, &err), src, &err);
}

/* A tensor's bytes (or what it is) read whole through oz_tensor_read: held by its model
 * (raw_data, typed fields: their bytes) or resolved from `from`. */
static int get_held(const cli_args *args, const char *src, onnx_TensorProto *t,
                    const oz_tensor_source *from) {
    oc_bytes bytes = {0};
    oc_error err;
    oc_error_clear(&err);
    int rc = CLI_EXIT_OK;
    if (oz_tensor_read(t, from, &bytes, &err) != OC_OK)
        rc = cli_fail(src, &err);
    else if (args->seen[GET_OPT_JSON])
        print_json(src, t, bytes.size);
    else
        rc = write_span(args, src, &bytes);
    oc_bytes_release(&bytes);
    return rc;
}

/* From an archive: the tensor's metadata from its model, its bytes from its entry. */
static int get_from_archive(const cli_args *args, const char *src, const char *name, size_t len) {
    archive_listing l;
    oc_error err;
    oc_error_clear(&err);
    int rc = archive_listing_open(src, args->verbosity, &l);
    if (rc != CLI_EXIT_OK) return rc;
    onnx_TensorProto *t = oz_model_find_tensor(l.model, name, len);
    uint64_t index;
    if (!t) {
        rc = cli_fail_msg(src, "no tensor named '%s'", name);
    } else if (!oc_tensor_is_external(t)) {
        rc = get_held(args, src, t, NULL);
    } else if (!oz_archive_tensor_entry(oz_archive_zip(l.archive), t, &index)) {
        rc = cli_fail_msg(src, "tensor '%s' names no entry of the archive", name);
    } else if (args->seen[GET_OPT_JSON]) {
        oz_zip_entry e;
        if (oz_zip_reader_entry(oz_archive_zip(l.archive), index, &e, &err) != OC_OK)
            rc = cli_fail(src, &err);
        else
            print_json(src, t, e.uncompressed_size);
    } else {
        rc = write_entry(args, src, oz_archive_zip(l.archive), index);
    }
    archive_listing_close(&l);
    return rc;
}

/* From a model: loaded with external tensors as references, then only this one read. */
static int get_from_model(const cli_args *args, const char *src, const char *name, size_t len) {
    oc_model *model = NULL;
    int rc = cli_load_model(src, CLI_EXTERNAL_KEEP, args->verbosity, &model);
    if (rc != CLI_EXIT_OK) return rc;
    onnx_TensorProto *t = oz_model_find_tensor(model, name, len);
    char *dir = oc__path_dir(src); /* a URL's too */
    oc_parse_options po;
    oz_tensor_source from = {NULL, NULL, dir, &po};
    cli_parse_options_init(&po);
    if (!t)
        rc = cli_fail_msg(src, "no tensor named '%s'", name);
    else if (!dir)
        rc = cli_fail_msg(src, "out of memory");
    else
        rc = get_held(args, src, t, &from);
    free(dir);
    oc_model_free(model);
    return rc;
}

static int run_get(const cli_args *args) {
    const char *src = args->positional[0];
    const char *name = args->positional[1];
    if (cli_refuse_url_output(args->value[GET_OPT_OUTPUT]) != CLI_EXIT_OK) return CLI_EXIT_FAILURE;
    return oz_kind_is_archive(cli_input_kind(src)) ? get_from_archive(args, src, name, strlen(name))
                                                   : get_from_model(args, src, name, strlen(name));
}

static const char get_help[] =
    "Write the bytes of one tensor of SRC (a model, an .onnxz archive, or an http:// or\n"
    "https:// URL of either) as stored: raw_data, little-endian, no header. No other\n"
    "tensor is read: from a URL an archive costs its directory and model (as `ls`) and one\n"
    "request for the tensor; a model's external tensor costs one ranged read of its file.\n"
    "A tensor that keeps its values in typed fields (float_data, int32_data ...) gives\n"
    "the bytes raw_data would hold for them; one of STRING values is refused.\n"
    "\n"
    "Options:\n"
    "  -o, --output FILE  write to FILE (a temporary file beside it, renamed into place\n"
    "                     once complete; a FIFO or device is written through, never\n"
    "                     replaced; - is standard output); default: standard output,\n"
    "                     unless a terminal\n"
    "  -f, --force        replace FILE if it exists\n"
    "      --no-sync      with -o: rename FILE into place without fsync (a power loss\n"
    "                     soon after may leave it empty or short)\n"
    "      --json         print the tensor's name, data_type, dims and bytes instead\n"
    "  -q, --quiet        print nothing but errors\n"
    "  -v, --verbose      also print what was loaded, with timings\n"
    "  -h, --help         show this help\n"
    "\n"
    "URLs: settings come from ONNXZ_HTTP_AUTH, ONNXZ_CA_FILE, ONNXZ_HTTP_INSECURE,\n"
    "ONNXZ_HTTP_TIMEOUT, ONNXZ_HTTP_RETRIES and ONNXZ_HTTP_PARALLEL (see `onnxz --help`).\n"
    "\n"
    "Examples:\n"
    "  onnxz get model.onnxz fc1.weight -o fc1.bin\n"
    "  onnxz get --json https://example.com/models/model.onnxz fc1.weight\n";

const cli_command cmd_get = {
    "get",
    "write one tensor's bytes (or its metadata) from a model, archive or URL",
    "onnxz get [options] SRC TENSOR",
    get_help,
    get_options,
    get_arg_names,
    2,
    2,
    run_get,
};
