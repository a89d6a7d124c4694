/*
 * tools/cmd_meta.c - `onnxz meta FILE [edits]`: show or edit a model's producer,
 * producer_version, doc_string and metadata_props.
 *
 * An .onnxz archive is edited in place (oz_archive_edit_*, spec/onnxz.md A-50..): only
 * __MODEL_PROTO and the central directory are rewritten, the tensor entries neither move
 * nor change. A .onnx file is rewritten whole, atomically (temporary file + rename), its
 * external data references kept as they are. Either way the model is read, changed and
 * written under a lock, so that two edits at once never lose one of them.
 */
#define _DEFAULT_SOURCE /* flock, realpath */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxcore/http.h>
#include <onnxz/archive.h>
#include <onnxz/open.h>

#include "cli.h"
#include "load.h"
#include "json.h"
/* libonnxcore's test stop points (spec/security.md S-4), compiled in test builds only: the
 * tests stop an edit at "meta-read" to run another writer or reader beside it. */
#include "onnxcore_private.h"

enum {
    META_OPT_PRODUCER = 0,
    META_OPT_PRODUCER_VERSION,
    META_OPT_DOC_STRING,
    META_OPT_SET,
    META_OPT_UNSET,
    META_OPT_JSON,
    META_OPT_APPEND_ONLY
};

static const cli_option meta_options[] = {
    {'\0', "producer", true},     {'\0', "producer-version", true},
    {'\0', "doc-string", true},   {'\0', "set", true},
    {'\0', "unset", true},        {'\0', "json", false},
    {'\0', "append-only", false}, {'\0', NULL, false},
};

static const char *const meta_arg_names[] = {"FILE"};

static int str_eq(const oc_str *s, const char *c, size_t n) {
    return s->size == n && (n == 0 || memcmp(s->data, c, n) == 0);
}

/* Checks every edit before anything is loaded: KEY=VALUE with a non-empty KEY. */
static int check_edits(const cli_args *args, int *nedits) {
    *nedits = 0;
    for (int i = 0; i < args->noccurrences; i++) {
        int opt = args->occurrence[i].option;
        const char *v = args->occurrence[i].value;
        if (opt == META_OPT_SET) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v)
                return cli_usage_error("meta", "--set '%s': give KEY=VALUE with a non-empty KEY",
                                       v);
        } else if (opt == META_OPT_UNSET && v[0] == '\0') {
            return cli_usage_error("meta", "--unset needs a non-empty KEY");
        }
        if (opt != META_OPT_JSON && opt != META_OPT_APPEND_ONLY) (*nedits)++;
    }
    return CLI_EXIT_OK;
}

/* Removes every metadata_props entry with this key; returns how many went. */
static uint64_t remove_key(onnx_ModelProto *m, const char *key, size_t klen) {
    uint64_t kept = 0, n = m->metadata_props.count;
    for (uint64_t i = 0; i < n; i++) {
        onnx_StringStringEntryProto *e = m->metadata_props.items[i];
        if (e && str_eq(&e->key, key, klen)) continue;
        m->metadata_props.items[kept++] = e;
    }
    m->metadata_props.count = kept;
    return n - kept;
}

oc_status cli_metadata_set(oc_arena *arena, onnx_ModelProto *m, const char *key, size_t klen,
                           const char *value) {
    onnx_StringStringEntryProto *e = NULL;
    oc_status st = OC_OK;
    /* The first entry with the key gets the value; later duplicates go. */
    for (uint64_t i = 0; i < m->metadata_props.count; i++) {
        onnx_StringStringEntryProto *x = m->metadata_props.items[i];
        if (x && str_eq(&x->key, key, klen)) {
            e = x;
            break;
        }
    }
    if (!e) {
        e = OC_ADD(arena, StringStringEntryProto, m->metadata_props);
        if (!e) return OC_ERR_NOMEM;
        st = oc_str_set(arena, &e->key, key, klen);
        if (st == OC_OK) OC_SET_HAS(StringStringEntryProto, e, key);
    } else {
        /* Keep e, drop the others with the same key. */
        uint64_t kept = 0;
        for (uint64_t i = 0; i < m->metadata_props.count; i++) {
            onnx_StringStringEntryProto *x = m->metadata_props.items[i];
            if (x != e && x && str_eq(&x->key, key, klen)) continue;
            m->metadata_props.items[kept++] = x;
        }
        m->metadata_props.count = kept;
    }
    if (st == OC_OK) st = oc_str_set_cstr(arena, &e->value, value);
    if (st == OC_OK) OC_SET_HAS(StringStringEntryProto, e, value);
    return st;
}

static oc_status apply_edits(const cli_args *args, oc_model *model, oc_error *err) {
    onnx_ModelProto *m = oc_model_proto(model);
    oc_arena *arena = oc_model_arena(model);
    oc_status st = OC_OK;
    for (int i = 0; i < args->noccurrences && st == OC_OK; i++) {
        const char *v = args->occurrence[i].value;
        switch (args->occurrence[i].option) {
        case META_OPT_PRODUCER:
            st = oc_str_set_cstr(arena, &m->producer_name, v);
            OC_SET_HAS(ModelProto, m, producer_name);
            break;
        case META_OPT_PRODUCER_VERSION:
            st = oc_str_set_cstr(arena, &m->producer_version, v);
            OC_SET_HAS(ModelProto, m, producer_version);
            break;
        case META_OPT_DOC_STRING:
            st = oc_str_set_cstr(arena, &m->doc_string, v);
            OC_SET_HAS(ModelProto, m, doc_string);
            break;
        case META_OPT_SET:
            st = cli_metadata_set(arena, m, v, (size_t)(strchr(v, '=') - v), strchr(v, '=') + 1);
            break;
        case META_OPT_UNSET:
            remove_key(m, v, strlen(v));
            break;
        default:
            break;
        }
        if (st != OC_OK) return oc_error_set(err, st, OC_NO_OFFSET, "out of memory");
    }
    return st;
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
        json_put_string(out, v->data, v->size);
    else
        fputs("null", out);
}

static void print_json(FILE *out, const char *path, oz_form form, const onnx_ModelProto *m) {
    fputs("{\"file\": ", out);
    json_put_cstring(out, path);
    fprintf(out, ", \"format\": \"%s\"", form == OZ_FORM_ONNXZ ? "onnxz" : "onnx");
    json_field(out, "producer_name", OC_HAS(ModelProto, m, producer_name), &m->producer_name);
    json_field(out, "producer_version", OC_HAS(ModelProto, m, producer_version),
               &m->producer_version);
    json_field(out, "doc_string", OC_HAS(ModelProto, m, doc_string), &m->doc_string);
    fputs(", \"metadata_props\": [", out);
    for (uint64_t i = 0; i < m->metadata_props.count; i++) {
        const onnx_StringStringEntryProto *e = m->metadata_props.items[i];
        fputs(i ? ", {\"key\": " : "{\"key\": ", out);
        json_put_string(out, e->key.data, e->key.size);
        fputs(", \"value\": ", out);
        json_put_string(out, e->value.data, e->value.size);
        fputc('}', out);
    }
    fputs("]}\n", out);
}

/* ---- the command ------------------------------------------------------------------- */

/* One editor of a .onnx file at a time, and no save of a pair over it meanwhile
 * (E-25: a save takes the same lock): an exclusive flock on the file, taken
 * before it is read and held until the new file has replaced it. Another editor's rename
 * may have replaced the name between our open and our lock: then the lock is on a file
 * nobody will read again, so it is taken again on the file the name now holds. */
static int lock_model_file(const char *path, int *fd_out) {
    for (int attempt = 0; attempt < 16; attempt++) {
        struct stat a, b;
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) return cli_fail_msg(path, "cannot open: %s", strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
            close(fd);
            return cli_fail_msg(path, "busy: another edit of it is in progress (A-58)");
        }
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
            a.st_ino == b.st_ino) {
            *fd_out = fd;
            return CLI_EXIT_OK;
        }
        close(fd);
    }
    return cli_fail_msg(path, "busy: it keeps being replaced while we lock it (A-58)");
}

/* Shows or edits the file at path (a link already resolved by run_meta). */
static int meta_file(const cli_args *args, const char *path) {
    oz_form form;
    oc_crypt_format cf = OC_CRYPT_NONE;
    oc_parse_options opts;
    oc_model *model = NULL;
    oz_archive_edit *ed = NULL;
    int lock_fd = -1;
    oc_error err;
    oc_status st;
    int nedits, rc = check_edits(args, &nedits);
    if (rc != CLI_EXIT_OK) return rc;
    if (nedits && oc_is_url(path)) /* before any request: a URL is read, never written */
        return cli_fail_msg(path, "is a URL: onnxz edits local files only");
    form = oz_kind_is_archive(cli_input_kind(path)) ? OZ_FORM_ONNXZ : OZ_FORM_ONNX;
    rc = cli_refuse_empty(path);
    if (rc != CLI_EXIT_OK) return rc;
    oc_error_clear(&err);
    if (form == OZ_FORM_ONNX) {
        rc = cli_detect_crypt_checked(path, &cf); /* a cut magic is `truncated` (C-1) */
        if (rc != CLI_EXIT_OK) return rc;
        if (cf != OC_CRYPT_NONE)
            return cli_fail_msg(path, "is encrypted (%s): decrypt it, edit, and encrypt it again",
                                oc_crypt_format_name(cf));
    }
    cli_parse_options_init(&opts);
    /* The tensors' bytes are not needed: entries and data files stay references. */
    opts.skip_external_data = 1;
    if (form == OZ_FORM_ONNXZ && nedits) {
        oz_archive_options ao = OZ_ARCHIVE_OPTIONS_INIT;
        ao.append_only = args->seen[META_OPT_APPEND_ONLY];
        st = oz_archive_edit_begin(path, &ao, &ed, &err);
        uint64_t cut_from, cut_to;
        if (st == OC_OK && oz_archive_edit_rolled_back(ed, &cut_from, &cut_to))
            cli_note(args->verbosity, CLI_QUIET, /* always: bytes were removed */
                     "%s: rolled back an interrupted edit: removed its torn tail, the "
                     "bytes from offset %llu to the end at %llu (A-56)",
                     path, (unsigned long long)cut_from, (unsigned long long)cut_to);
        if (st == OC_OK)
            st = oz_archive_load_model(oz_archive_edit_archive(ed), &opts, &model, &err);
    } else {
        oz_open_options oo = OZ_OPEN_OPTIONS_INIT;
        if (form == OZ_FORM_ONNX) {
            if (nedits && (rc = lock_model_file(path, &lock_fd)) != CLI_EXIT_OK) return rc;
            /* The new file is renamed over the old one; the mapping keeps the old bytes. */
            opts.no_copy = 1;
        }
        oo.parse = opts;
        st = oz_open(path, &oo, &model, NULL, &err);
    }
    if (st == OC_OK && nedits) {
        double start = cli_now_ms();
        oc__test_point("meta-read");
        st = apply_edits(args, model, &err);
        if (st == OC_OK && form == OZ_FORM_ONNXZ) {
            st = oz_archive_edit_commit(ed, &onnx_ModelProto_desc, oc_model_proto(model), &err);
        } else if (st == OC_OK) {
            oc_serialize_options so;
            oc_serialize_options_init(&so);
            so.overwrite = 1;
            st = oc_model_save_file(model, path, &so, &err);
        }
        if (st == OC_OK)
            cli_note(args->verbosity, CLI_VERBOSE, "%s %s in %.1f ms",
                     form == OZ_FORM_ONNXZ ? "edited the archive in place:" : "rewrote", path,
                     cli_now_ms() - start);
    }
    oz_archive_edit_end(ed);
    if (lock_fd >= 0) close(lock_fd);
    if (st != OC_OK) {
        oc_model_free(model);
        return cli_fail(path, &err);
    }
    if (args->seen[META_OPT_JSON])
        print_json(stdout, path, form, oc_model_proto(model));
    else if (args->verbosity >= CLI_NORMAL || !nedits)
        print_human(stdout, oc_model_proto(model));
    oc_model_free(model);
    return CLI_EXIT_OK;
}

/* An edit changes the file a symbolic link names, archive and .onnx alike (W-32): the
 * link is resolved here, once, for everything that follows. */
static int run_meta(const cli_args *args) {
    const char *path = args->positional[0];
    struct stat st;
    if (oc_is_url(path) || lstat(path, &st) != 0 || !S_ISLNK(st.st_mode))
        return meta_file(args, path);
    char *target = realpath(path, NULL);
    if (!target)
        return cli_fail_msg(path, "a symbolic link to nothing usable: %s", strerror(errno));
    int rc = meta_file(args, target);
    free(target);
    return rc;
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
    "One edit of a file at a time: a second one meanwhile is refused as busy. A\n"
    "symbolic link is followed: the file it points at is edited.\n"
    "Encrypted files are refused: decrypt, edit, encrypt again.\n"
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
    "  onnxz meta --json model.onnxz | jq .metadata_props\n";

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
