/*
 * tools/cmd_get.c - `onnxz get SRC TENSOR [-o OUT] [--json] [--slice SPEC] [--npy]`: one
 * tensor's bytes (or a slice of them, onnxz/slice.h; or a .npy file of either), or what it
 * is, from a model or archive on disk or at a URL, without reading any other tensor.
 * The library's reader (onnxz/reader.h) opens every form and says what one tensor costs:
 * from a URL, an archive's directory and model (as `ls`) and one request for the tensor.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <onnxcore/tensor.h>
#include <errno.h>
#include <onnxz/reader.h>
#include <onnxz/slice.h>

#include "cli.h"
#include <onnxcore/json.h>
#include "load.h"
#include "onnxcore_private.h"

enum {
    GET_OPT_OUTPUT = 0,
    GET_OPT_JSON,
    GET_OPT_FORCE,
    GET_OPT_NO_SYNC,
    GET_OPT_SLICE,
    GET_OPT_NPY,
    GET_OPT_TRUST
};

static const cli_option get_options[] = {
    {'o', "output", true}, {'\0', "json", false}, {'f', "force", false}, {'\0', "no-sync", false},
    {'\0', "slice", true}, {'\0', "npy", false},  {'\0', "trust", true}, {'\0', NULL, false},
};

/* The most indices --slice takes (a tensor of more dimensions is sliced along its first
 * ones). */
#define SLICE_MAX 64

static const char *const get_arg_names[] = {"SRC", "TENSOR"};

static void print_json(const char *src, const onnx_TensorProto *t, const int64_t *dims, size_t rank,
                       uint64_t bytes) {
    fputs("{\"file\": ", stdout);
    oc_json_put_cstring(stdout, cli_shown(src));
    fputs(", \"name\": ", stdout);
    oc_json_put_string(stdout, t->name.data, t->name.size);
    fputs(", \"data_type\": ", stdout);
    oc_json_put_cstring(stdout, oc_tensor_type_name(t->data_type));
    fputs(", \"dims\": [", stdout);
    for (size_t i = 0; i < rank; i++) printf("%s%" PRId64, i ? ", " : "", dims[i]);
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
    if (oc_atomic_open(&o->af, o->path, !args->seen[GET_OPT_FORCE], &err) != OC_OK)
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

/* One number of a --slice item, from *p to the next ':' or the item's end; empty: dflt. */
static bool slice_number(const char **p, int64_t dflt, int64_t *out) {
    if (**p == ':' || **p == ',' || **p == '\0') {
        *out = dflt;
        return true;
    }
    char *end;
    errno = 0;
    long long v = strtoll(*p, &end, 10);
    if (end == *p || errno == ERANGE) return false;
    *p = end;
    *out = v;
    return true;
}

/* --slice SPEC as ranges: items separated by ',', each an index (an integer) or
 * START:STOP[:STEP] with any part left out (Python's, numpy's): "0:128,:", "3", "::2,-1".
 * Python's rules on them are the library's (oz_slice_new). */
static bool parse_slice(const char *spec, oz_slice_range *rs, size_t *count) {
    const char *p = spec;
    for (*count = 0; *count < SLICE_MAX; (*count)++) {
        oz_slice_range *rg = &rs[*count];
        *rg = (oz_slice_range)OZ_SLICE_ALL;
        if (!slice_number(&p, 0, &rg->start)) return false;
        rg->index = *p != ':';
        if (!rg->index && (++p, !slice_number(&p, INT64_MAX, &rg->stop))) return false;
        if (!rg->index && *p == ':' && (++p, !slice_number(&p, 1, &rg->step))) return false;
        if (rg->index && (p == spec || p[-1] == ',')) return false; /* an empty item */
        if (*p == '\0') return ++*count, true;
        if (*p++ != ',') return false;
    }
    return false;
}

/* The slice --slice names of t, or NULL after a message. */
static oz_slice *slice_of(const char *src, const char *spec, const onnx_TensorProto *t, int *rc) {
    oz_slice_range rs[SLICE_MAX];
    size_t count;
    oz_slice *s = NULL;
    oc_error err;
    oc_error_clear(&err);
    if (!parse_slice(spec, rs, &count))
        *rc = cli_usage_error("get",
                              "--slice '%s': give INDEX or START:STOP[:STEP] per "
                              "dimension, separated by commas (as 0:128,:)",
                              spec);
    else if (oz_slice_new(t, rs, count, &s, &err) != OC_OK)
        *rc = cli_fail(src, &err);
    return s;
}

/* ---- --npy: numpy's .npy format ---- */

/* The .npy header of an array of descr and dims (malloc'd, *len bytes; NULL: out of
 * memory): the magic, the version, the length of the dictionary that follows and the
 * dictionary, padded with spaces and a newline to a multiple of 64 bytes so the data
 * after it is aligned. Version 1.0 keeps that length in 16 bits; a longer dictionary (a
 * tensor of thousands of dimensions) takes 2.0's 32 bits. 3.0 only allows UTF-8 in the
 * dictionary, which a plain dtype never needs. */
static char *npy_header(const char *descr, const int64_t *dims, size_t rank, size_t *len) {
    enum { V1 = 10, V2 = 12 }; /* bytes before the dictionary */
    /* the dictionary without its dims, each dim with ", ", the padding and newline */
    char *out = malloc(V2 + 128 + rank * 22 + 64);
    if (!out) return NULL;
    char *dict = out + V2;
    size_t n = (size_t)sprintf(dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (size_t i = 0; i < rank; i++)
        n += (size_t)sprintf(dict + n, "%s%" PRId64, i ? ", " : "", dims[i]);
    n += (size_t)sprintf(dict + n, "%s), }", rank == 1 ? "," : "");
    size_t prefix = (V1 + n + 1 + 63) / 64 * 64 - V1 <= 65535 ? V1 : V2;
    size_t total = (prefix + n + 1 + 63) / 64 * 64;
    memmove(out + prefix, dict, n);
    memset(out + prefix + n, ' ', total - 1 - prefix - n);
    out[total - 1] = '\n';
    memcpy(out, "\x93NUMPY", 6);
    out[6] = prefix == V1 ? 1 : 2;
    out[7] = 0;
    for (size_t i = 8, v = total - prefix; i < prefix; i++, v >>= 8)
        out[i] = (char)(v & 0xff); /* little-endian */
    *len = total;
    return out;
}

/* The .npy header of t (or its slice s), malloc'd; NULL after a message. */
static char *npy_header_of(const char *src, oz_reader *r, const onnx_TensorProto *t,
                           const oz_slice *s, size_t *len) {
    const char *descr = oc_tensor_numpy_descr(t->data_type);
    bool packed = oc_tensor_element_bits(t->data_type) < 8; /* its bytes, one dimension */
    uint64_t bytes = 0;
    char name[OC_QUOTE_SIZE];
    oc_error err;
    oc_error_clear(&err);
    oc_quote(t->name.data, t->name.size, name, sizeof name);
    if (!descr) {
        cli_fail_msg(src, "tensor '%s' is %s, which has no numpy dtype for --npy", name,
                     oc_tensor_type_name(t->data_type));
        return NULL;
    }
    if (packed && !s && oz_reader_size(r, t, &bytes, &err) != OC_OK) {
        cli_fail(src, &err);
        return NULL;
    }
    int64_t flat = (int64_t)(s ? oz_slice_size(s) : bytes);
    char *h = packed ? npy_header(descr, &flat, 1, len)
              : s    ? npy_header(descr, oz_slice_dims(s), oz_slice_rank(s), len)
                     : npy_header(descr, t->dims.items, (size_t)t->dims.count, len);
    if (!h) cli_fail_msg(src, "out of memory for the .npy header of tensor '%s'", name);
    return h;
}

/* The tensor's bytes to the output, streamed as the reader gives them; or the slice's,
 * read whole (only its runs: onnxz/slice.h). */
static int write_tensor(const cli_args *args, const char *src, oz_reader *r,
                        const onnx_TensorProto *t, const oz_slice *s) {
    output o;
    oc_error err;
    oc_error_clear(&err);
    char *header = NULL;
    size_t header_len = 0;
    if (args->seen[GET_OPT_NPY] && !(header = npy_header_of(src, r, t, s, &header_len)))
        return CLI_EXIT_FAILURE;
    int rc = output_open(&o, args);
    if (rc != CLI_EXIT_OK) {
        free(header);
        return rc;
    }
    void *ctx;
    oc_write_fn fn = output_fn(&o, &ctx);
    oc_status st = header ? fn(ctx, header, header_len, &err) : OC_OK;
    free(header);
    if (!s) {
        if (st == OC_OK) st = oz_reader_read_to(r, t, fn, ctx, &err);
        return output_close(&o, st, src, &err);
    }
    oc_bytes b = {0};
    if (st == OC_OK) st = oz_reader_read_slice(r, s, &b, &err);
    if (st == OC_OK) st = oc_bytes_write(&b, fn, ctx, &err);
    oc_bytes_release(&b);
    return output_close(&o, st, src, &err);
}

/* --json: what the tensor (or its slice) is, and the bytes it would write (none of them
 * read). */
static int describe_tensor(const char *src, oz_reader *r, const onnx_TensorProto *t,
                           const oz_slice *s) {
    uint64_t bytes;
    oc_error err;
    oc_error_clear(&err);
    if (oz_reader_size(r, t, &bytes, &err) != OC_OK) return cli_fail(src, &err);
    if (s)
        print_json(src, t, oz_slice_dims(s), oz_slice_rank(s), oz_slice_size(s));
    else
        print_json(src, t, t->dims.items, (size_t)t->dims.count, bytes);
    return CLI_EXIT_OK;
}

static int run_get(const cli_args *args) {
    const char *src = args->positional[0];
    const char *name = args->positional[1];
    const char *spec = args->value[GET_OPT_SLICE];
    oz_reader *r;
    oz_slice *s = NULL;
    if (cli_refuse_url_output(args->value[GET_OPT_OUTPUT]) != CLI_EXIT_OK) return CLI_EXIT_FAILURE;
    const cli_reader_options ro = {"get", NULL, false, args->value[GET_OPT_TRUST]};
    int rc = cli_reader_open(src, &ro, args->verbosity, &r);
    if (rc != CLI_EXIT_OK) return rc;
    const onnx_TensorProto *t = oz_reader_find(r, name, strlen(name));
    if (!t)
        rc = cli_fail_msg(src, "no tensor named '%s'", name);
    else if (!spec || (s = slice_of(src, spec, t, &rc)) != NULL)
        rc = args->seen[GET_OPT_JSON] ? describe_tensor(src, r, t, s)
                                      : write_tensor(args, src, r, t, s);
    oz_slice_free(s);
    oz_reader_close(r);
    return rc;
}

static const char get_help[] =
    "Write the bytes of one tensor of SRC (a model, an .onnxz archive, or an http:// or\n"
    "https:// URL of either) as stored: raw_data, little-endian, no header. No other\n"
    "tensor is read: from a URL an archive costs its directory and model (as `ls`) and one\n"
    "request for the tensor; a model's external tensor costs one ranged read of its file.\n"
    "A tensor that keeps its values in typed fields (float_data, int32_data ...) gives\n"
    "the bytes raw_data would hold for them; one of STRING values is refused.\n"
    "With --slice, only the part of the tensor it names is read and written, as numpy's\n"
    "t[SPEC] in row-major order (from a URL one request per contiguous run of it).\n"
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
    "      --slice SPEC   a part of the tensor: per dimension INDEX or START:STOP[:STEP]\n"
    "                     (Python's rules: negative from the end, clamped, STEP 1 or\n"
    "                     more), separated by commas; dimensions left out are whole\n"
    "                     (0:128,: or -1 or ::2); 4-bit types split on bytes only\n"
    "      --npy          write a .npy file (numpy.load reads it): the bytes after a\n"
    "                     header of their dtype and shape (bfloat16 as uint16, float8 as\n"
    "                     uint8, 4-bit and 2-bit types as their packed bytes, 1-D)\n"
    "      --trust PUBLIC.pem  refuse SRC unless it is signed with this key (`onnxz\n"
    "                     sign`): an archive's signature, entries and model checked at\n"
    "                     open, the tensor's entry hashed as it is read (a slice: its\n"
    "                     whole entry; from a URL only that entry is fetched); a .onnx's\n"
    "                     files all hashed at open (spec/signing.md G-50..G-54)\n"
    "  -q, --quiet        print nothing but errors\n"
    "  -v, --verbose      also print what was loaded, with timings\n"
    "  -h, --help         show this help\n"
    "\n"
    "URLs: settings come from ONNXZ_HTTP_AUTH, ONNXZ_CA_FILE, ONNXZ_HTTP_INSECURE,\n"
    "ONNXZ_HTTP_TIMEOUT, ONNXZ_HTTP_RETRIES and ONNXZ_HTTP_PARALLEL; s3:// URLs' from\n"
    "AWS_* and ~/.aws (see `onnxz --help`).\n"
    "\n"
    "Examples:\n"
    "  onnxz get model.onnxz fc1.weight -o fc1.bin\n"
    "  onnxz get --json https://example.com/models/model.onnxz fc1.weight\n"
    "  onnxz get model.onnxz fc1.weight --slice 0:128,: --npy -o rows.npy\n";

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
