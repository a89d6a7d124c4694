/*
 * tools/cmd_stub.c - `onnxz stub ARCHIVE.onnxz OUT.onnx`: a small .onnx whose external
 * tensors point into the archive file itself (location = the archive's file name, offset
 * = the entry's data offset, length = its size), so that any runtime reading classic
 * external data (spec/external-data.md) uses the archive's weights in place.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <onnxz/archive.h>
#include <onnxz/convert.h>

#include "onnxcore_private.h"

#include "cli.h"
#include "load.h"
#include "stub_record.h"

enum { STUB_OPT_FORCE = 0 };

static const cli_option stub_options[] = {
    {'f', "force", false},
    {'\0', NULL, false},
};

static const char *const stub_arg_names[] = {"ARCHIVE", "OUT"};

typedef struct stub_ctx {
    const oz_zip_reader *zip;
    oc_arena *arena;
    const char *archive_name; /* the archive's file name, the new location */
    stub_records records;     /* the entries used, for the check of A-62 */
    uint64_t tensors;
    uint64_t bytes;
    char message[600]; /* the tool's own error, when the visit stops */
} stub_ctx;

static int same_directory(const char *a, const char *b, int *same) {
    char *da = oc__path_dir(a), *db = oc__path_dir(b);
    struct stat sa, sb;
    int ok = da && db && stat(da, &sa) == 0 && stat(db, &sb) == 0;
    *same = ok && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    free(da);
    free(db);
    return ok;
}

/* Sets every external_data entry with this key to value, adding one when there is none. */
static oc_status set_ext(oc_arena *arena, onnx_TensorProto *t, const char *key, const char *value) {
    int found = 0;
    for (uint64_t i = 0; i < t->external_data.count; i++) {
        onnx_StringStringEntryProto *e = t->external_data.items[i];
        if (!e || e->key.size != strlen(key) || memcmp(e->key.data, key, e->key.size) != 0)
            continue;
        if (oc_str_set_cstr(arena, &e->value, value) != OC_OK) return OC_ERR_NOMEM;
        OC_SET_HAS(StringStringEntryProto, e, value);
        found = 1;
    }
    if (!found) {
        onnx_StringStringEntryProto *e = OC_ADD(arena, StringStringEntryProto, t->external_data);
        if (!e || oc_str_set_cstr(arena, &e->key, key) != OC_OK ||
            oc_str_set_cstr(arena, &e->value, value) != OC_OK)
            return OC_ERR_NOMEM;
        OC_SET_HAS(StringStringEntryProto, e, key);
        OC_SET_HAS(StringStringEntryProto, e, value);
    }
    return OC_OK;
}

static oc_status point_into_archive(void *vctx, onnx_TensorProto *t) {
    stub_ctx *ctx = vctx;
    const oc_str *loc;
    char *name;
    char num[32], qt[OC_QUOTE_SIZE], qe[OC_QUOTE_SIZE]; /* names from the file: oc_quote */
    uint64_t index;
    oz_zip_entry entry;
    oc_error err;
    oc_status st;
    if (!oc_tensor_is_external(t)) return OC_OK;
    oc_quote(t->name.data, t->name.size, qt, sizeof qt);
    loc = oc_tensor_external_value(t, "location");
    if (!loc) {
        snprintf(ctx->message, sizeof ctx->message, "tensor '%s' is external without a location",
                 qt);
        return OC_ERR_MALFORMED;
    }
    name = malloc(loc->size + 1);
    if (!name) return OC_ERR_NOMEM;
    memcpy(name, loc->data, loc->size);
    name[loc->size] = '\0';
    oc_error_clear(&err);
    st = strlen(name) == loc->size ? oz_zip_reader_find(ctx->zip, name, &index, &err)
                                   : OC_ERR_NOT_FOUND;
    if (st == OC_OK) st = oz_zip_reader_entry(ctx->zip, index, &entry, &err);
    if (st != OC_OK) {
        snprintf(ctx->message, sizeof ctx->message,
                 "tensor '%s' names the entry '%s', which the archive does not have", qt,
                 oc_quote(loc->data, loc->size, qe, sizeof qe));
        free(name);
        return OC_ERR_NOT_FOUND;
    }
    free(name);
    if (entry.method != OZ_ZIP_STORED) {
        snprintf(ctx->message, sizeof ctx->message,
                 "entry '%s' of tensor '%s' is deflated, not stored: its bytes are not "
                 "in the file as they are (rewrite the archive with `onnxz convert`)",
                 oc_quote(entry.name, entry.name_len, qe, sizeof qe), qt);
        return OC_ERR_UNSUPPORTED;
    }
    if (memchr(entry.name, '\n', entry.name_len)) {
        snprintf(ctx->message, sizeof ctx->message,
                 "entry '%s' of tensor '%s' has a line break in its name: the stub cannot "
                 "record it (A-61)",
                 oc_quote(entry.name, entry.name_len, qe, sizeof qe), qt);
        return OC_ERR_UNSUPPORTED;
    }
    st = set_ext(ctx->arena, t, "location", ctx->archive_name);
    snprintf(num, sizeof num, "%" PRIu64, entry.data_offset);
    if (st == OC_OK) st = set_ext(ctx->arena, t, "offset", num);
    snprintf(num, sizeof num, "%" PRIu64, entry.uncompressed_size);
    if (st == OC_OK) st = set_ext(ctx->arena, t, "length", num);
    if (st == OC_OK) st = stub_records_add(&ctx->records, &entry);
    if (st != OC_OK) {
        snprintf(ctx->message, sizeof ctx->message, "out of memory");
        return st;
    }
    ctx->tensors++;
    ctx->bytes += entry.uncompressed_size;
    return OC_OK;
}

static int run_stub(const cli_args *args) {
    const char *archive = args->positional[0], *out = args->positional[1];
    bool force = args->seen[STUB_OPT_FORCE];
    oz_archive *ar = NULL;
    oc_model *model = NULL;
    oc_parse_options opts;
    oc_serialize_options so;
    oc_error err;
    oc_status st;
    stub_ctx ctx;
    int same = 0, rc;
    struct stat st_out;
    oz_form named = oz_form_named(out);
    memset(&ctx, 0, sizeof ctx);
    ctx.archive_name = oc__path_base(archive);
    if (out[0] == '\0') return cli_check_output("stub", archive, out, force); /* usage */
    if (cli_refuse_url_output(out) != CLI_EXIT_OK) return CLI_EXIT_FAILURE;
    if (named == OZ_FORM_ONNXZ || named == OZ_FORM_ONNXC)
        return cli_usage_error(
            "stub",
            "OUT '%s' is named as an %s; a stub is a .onnx model: "
            "name it *.onnx",
            out, named == OZ_FORM_ONNXZ ? ".onnxz archive" : "encrypted .onnxc model");
    if (!oz_kind_is_archive(cli_input_kind(archive))) {
        oc_crypt_format cf = cli_detect_crypt(archive);
        if (cf != OC_CRYPT_NONE)
            return cli_fail_msg(archive,
                                "is encrypted (%s): its weights cannot be referenced "
                                "in place",
                                oc_crypt_format_name(cf));
        if (stat(archive, &st_out) != 0) return cli_fail_msg(archive, "%s", strerror(errno));
        return cli_fail_msg(archive, "not an .onnxz archive");
    }
    if (!same_directory(archive, out, &same))
        return cli_fail_msg(out, "cannot find the directory: %s", strerror(errno));
    if (!same)
        return cli_fail_msg(out,
                            "must be in the same directory as the archive %s: external "
                            "data locations are relative to the model's directory",
                            archive);
    if (lstat(out, &st_out) == 0 && stat(archive, &st_out) == 0) {
        struct stat sa;
        if (stat(out, &sa) == 0 && sa.st_dev == st_out.st_dev && sa.st_ino == st_out.st_ino)
            return cli_fail_msg(out, "output is the archive itself");
    }
    rc = cli_check_output("stub", archive, out, force);
    if (rc != CLI_EXIT_OK) return rc;
    oc_error_clear(&err);
    cli_parse_options_init(&opts);
    opts.skip_external_data = 1;
    st = cli_archive_open(archive, &ar, &err);
    if (st == OC_OK) st = oz_archive_load_model(ar, &opts, &model, &err);
    if (st != OC_OK) {
        oz_archive_close(ar);
        return cli_fail(archive, &err);
    }
    ctx.zip = oz_archive_zip(ar);
    ctx.arena = oc_model_arena(model);
    st = oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(model), point_into_archive,
                              &ctx);
    oz_archive_close(ar);
    if (st == OC_OK && stub_records_attach(&ctx.records, model) != OC_OK) {
        st = OC_ERR_NOMEM;
        snprintf(ctx.message, sizeof ctx.message, "out of memory");
    }
    stub_records_free(&ctx.records);
    if (st != OC_OK) {
        oc_model_free(model);
        return cli_fail_msg(archive, "%s", ctx.message[0] ? ctx.message : oc_status_name(st));
    }
    oc_serialize_options_init(&so);
    so.overwrite = force ? 1 : 0;
    st = oc_model_save_file(model, out, &so, &err);
    oc_model_free(model);
    if (st != OC_OK) return cli_fail(out, &err);
    if (cli_reports(args->verbosity, out)) {
        struct stat so_st;
        cli_put_text(stdout, out, strlen(out));
        printf(" (%" PRIu64 " bytes): %" PRIu64 " tensors, %" PRIu64 " bytes, in ",
               stat(out, &so_st) == 0 ? (uint64_t)so_st.st_size : 0, ctx.tensors, ctx.bytes);
        cli_put_text(stdout, ctx.archive_name, strlen(ctx.archive_name));
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
