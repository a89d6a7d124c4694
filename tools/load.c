/*
 * tools/load.c - the commands' input: detected, the passphrase asked for when it is
 * encrypted, and loaded through the library's one open call (onnxz/open.h).
 */
#include "load.h"

#include <string.h>

#include <onnxcore/http.h>
#include <onnxz/open.h>

#include "cli.h"
#include "passphrase.h"

oz_kind cli_input_kind(const char *path) {
    oz_kind kind = OZ_KIND_MODEL;
    if (oz_detect_path(path, cli_http_options(), &kind, NULL) != OC_OK) kind = OZ_KIND_MODEL;
    return kind;
}

/* Prints the library's report on a file it refuses by its kind alone (empty, or cut
 * inside an encryption magic). */
static int fail_by_kind(const char *path) {
    oc_model *m = NULL;
    oz_open_options opts = OZ_OPEN_OPTIONS_INIT;
    oc_error err;
    cli_parse_options_init(&opts.parse);
    oc_error_clear(&err);
    if (oz_open(path, &opts, &m, NULL, &err) == OC_OK) { /* the file changed meanwhile */
        oc_model_free(m);
        return cli_fail_msg(path, "changed while being read");
    }
    return cli_fail(path, &err);
}

int cli_detect_crypt_checked(const char *path, oc_crypt_format *out) {
    oz_kind kind = cli_input_kind(path);
    oz_kind_is_encrypted(kind, out);
    return kind == OZ_KIND_CRYPT_SHORT ? fail_by_kind(path) : CLI_EXIT_OK;
}

int cli_refuse_url_output(const char *path) {
    return path && oc_is_url(path) ? cli_fail_msg(path, "is a URL: onnxz writes local files only")
                                   : CLI_EXIT_OK;
}

int cli_refuse_empty(const char *path) {
    return cli_input_kind(path) == OZ_KIND_EMPTY ? fail_by_kind(path) : CLI_EXIT_OK;
}

int cli_load_input(const char *path, const cli_load_options *o, int verbosity, oc_model **out,
                   oz_form *form_out) {
    static const cli_load_options defaults;
    oz_open_options opts = OZ_OPEN_OPTIONS_INIT;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oc_crypt_format cf;
    cli_key key = {NULL, 0};
    oc_error err;
    oc_status st;
    double start = cli_now_ms();
    if (!o) o = &defaults;
    *out = NULL;
    if (o->crypt_out) *o->crypt_out = OC_CRYPT_NONE;
    cli_parse_options_init(&opts.parse);
    opts.parse.no_copy = !o->copy;
    opts.parse.num_threads = o->num_threads;
    opts.parse.prefetch = o->prefetch;
    opts.parse.storage_pool = o->storage_pool;
    opts.parse.skip_external_data = o->external == CLI_EXTERNAL_KEEP;
    opts.parse.data_dir = o->data_dir;
    opts.parse.verify_checksums = o->verify_checksums;
    /* oz_open detects the file's kind once and says it in info: an encrypted file comes
     * back at once (a key is needed) before anything is decrypted, and is opened again with
     * the passphrase, asked for only now that the file is known to need one. */
    oc_error_clear(&err);
    st = o->deferred ? oz_open_deferred(path, &opts, out, o->deferred, &info, &err)
                     : oz_open(path, &opts, out, &info, &err);
    int encrypted = oz_kind_is_encrypted(info.kind, &cf);
    if (form_out) *form_out = oz_kind_is_archive(info.kind) ? OZ_FORM_ONNXZ : OZ_FORM_ONNX;
    if (encrypted) {
        int rc = cli_require_crypto(path);
        if (rc != CLI_EXIT_OK) return rc;
        rc = cli_key_get(o->command ? o->command : "load", o->key_file, path, false, verbosity,
                         &key);
        if (rc != CLI_EXIT_OK) return rc;
        opts.key = key.data;
        opts.key_len = key.len;
        oc_error_clear(&err);
        st = oz_open(path, &opts, out, &info, &err);
        cli_key_free(&key);
    }
    if (st != OC_OK) return cli_fail(path, &err);
    if (o->size_out) *o->size_out = info.file_size;
    if (form_out) *form_out = info.is_archive ? OZ_FORM_ONNXZ : OZ_FORM_ONNX;
    if (encrypted) {
        if (o->crypt_out) *o->crypt_out = cf;
        cli_note(verbosity, CLI_VERBOSE, "decrypted and loaded %s (%s, %s) in %.1f ms", path,
                 oc_crypt_format_name(cf), info.is_archive ? "onnxz archive" : "onnx",
                 cli_now_ms() - start);
    } else {
        cli_note(verbosity, CLI_VERBOSE, "loaded %s (%s) in %.1f ms", path,
                 info.is_archive ? "onnxz archive" : "onnx", cli_now_ms() - start);
    }
    return CLI_EXIT_OK;
}

int cli_reader_open(const char *path, const cli_reader_options *o, int verbosity, oz_reader **out) {
    oz_reader_options opts = OZ_READER_OPTIONS_INIT;
    oz_open_info info = OZ_OPEN_INFO_INIT;
    oc_parse_options po;
    cli_key key = {NULL, 0};
    oc_error err;
    double start = cli_now_ms();
    cli_parse_options_init(&po);
    opts.max_memory = po.max_memory;
    opts.http = po.http;
    opts.skip_data_files = o->skip_data_files;
    opts.trust = o->trust;
    oc_error_clear(&err);
    oc_status st = oz_reader_open(path, &opts, out, &info, &err);
    if (oz_kind_is_encrypted(info.kind, NULL)) { /* refused at once: a key is needed */
        int rc = cli_require_crypto(path);
        if (rc == CLI_EXIT_OK)
            rc = cli_key_get(o->command, o->key_file, path, false, verbosity, &key);
        if (rc != CLI_EXIT_OK) return rc;
        opts.key = key.data;
        opts.key_len = key.len;
        oc_error_clear(&err);
        st = oz_reader_open(path, &opts, out, &info, &err);
        cli_key_free(&key);
    }
    if (st != OC_OK) return cli_fail(path, &err);
    cli_note(verbosity, CLI_VERBOSE, "opened %s (%s, %s) in %.1f ms", cli_shown(path),
             oz_kind_name(info.kind), info.is_archive ? "onnxz archive" : "onnx",
             cli_now_ms() - start);
    return CLI_EXIT_OK;
}

int cli_load_model(const char *path, cli_external external, int verbosity, oc_model **out) {
    cli_load_options opts;
    memset(&opts, 0, sizeof opts);
    opts.external = external;
    return cli_load_input(path, &opts, verbosity, out, NULL);
}
