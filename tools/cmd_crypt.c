/*
 * tools/cmd_crypt.c - `onnxz encrypt IN OUT` and `onnxz decrypt IN OUT`: any file (a .onnx
 * model, an .onnxz archive) to an encrypted file and back (spec/encryption.md), streaming.
 * The passphrase comes from --key-file, ONNXZ_KEY or the terminal (passphrase.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxz/archive.h>
#include <onnxz/open.h>

#include "cli.h"
#include "load.h"
#include "passphrase.h"
#include "onnxcore_private.h"

enum {
    CRYPT_OPT_FORCE = 0,
    CRYPT_OPT_KEY_FILE,
    CRYPT_OPT_KEY,        /* refused: a passphrase on argv */
    CRYPT_OPT_PASSPHRASE, /* refused likewise */
    CRYPT_OPT_FORMAT,
    CRYPT_OPT_ITERATIONS,
    CRYPT_OPT_CHUNK_SIZE
};

static const cli_option encrypt_options[] = {
    {'f', "force", false},      {'\0', "key-file", true}, {'\0', "key", true},
    {'\0', "passphrase", true}, {'\0', "format", true},   {'\0', "iterations", true},
    {'\0', "chunk-size", true}, {'\0', NULL, false},
};

/* The same indices, without the encryption parameters. */
static const cli_option decrypt_options[] = {
    {'f', "force", false},      {'\0', "key-file", true}, {'\0', "key", true},
    {'\0', "passphrase", true}, {'\0', NULL, false},
};

static const char *const crypt_arg_names[] = {"IN", "OUT"};

static uint64_t size_of(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : 0;
}

/* C-56: an ONNXCRY1 payload must be a model or an archive, since the format cannot tell
 * a wrong passphrase from the right one about once in 256 (C-53). Returns NULL when the
 * file at path is an .onnxz archive that opens, or decodes as a model with an ir_version
 * and a graph (random bytes from a wrong key are neither); else what it is not, with err
 * holding the reader's reason. */
static const char *not_a_payload(const char *path, oc_error *err) {
    oz_kind kind;
    if (oz_detect_path(path, NULL, &kind, err) != OC_OK) return "cannot be read";
    if (oz_kind_is_archive(kind)) {
        oz_archive *ar = NULL;
        oc_status st = oz_archive_open(path, NULL, &ar, err);
        oz_archive_close(ar);
        return st == OC_OK ? NULL : "is not an .onnxz archive that opens";
    }
    oc_parse_options opts;
    oc_parse_options_init(&opts);
    opts.skip_external_data = 1;
    opts.no_copy = 1;
    oc_model *m = NULL;
    const char *why = NULL;
    if (oc_model_load_file(path, &opts, &m, err) != OC_OK)
        why = "is not an ONNX model";
    else if (!OC_HAS(ModelProto, oc_model_proto(m), ir_version) || !oc_model_proto(m)->graph)
        why = "is not an ONNX model (no ir_version or no graph)";
    oc_model_free(m);
    return why;
}

typedef struct fd_source {
    int fd;
    const char *path;
} fd_source;

static oc_status read_fd(void *ctx, void *buf, uint64_t cap, uint64_t *got, oc_error *err) {
    fd_source *s = ctx;
    ssize_t r;
    do r = read(s->fd, buf, cap > (1u << 30) ? (1u << 30) : (size_t)cap);
    while (r < 0 && errno == EINTR);
    if (r < 0)
        return oc_error_file(err, s->path,
                             oc_error_set_errno(err, errno, "cannot read %s", s->path));
    *got = (uint64_t)r;
    return OC_OK;
}

/* ONNXCRY1 decryption: as oc_crypt_decrypt_file, and the plaintext is checked (C-56)
 * while it is still the temporary file, so a failed check leaves OUT untouched. */
static oc_status decrypt_cry1(const char *in, const char *out, const cli_key *key, bool force,
                              oc_error *err) {
    fd_source src = {open(in, O_RDONLY | O_CLOEXEC | O_NONBLOCK), in};
    if (src.fd < 0)
        return oc_error_file(err, in, oc_error_set_errno(err, errno, "cannot open %s", in));
    oc_atomic_file af;
    oc_status st = oc_atomic_open(&af, out, !force, err);
    if (st == OC_OK)
        st = oc_crypt_decrypt_stream(read_fd, &src, oc_atomic_write, &af, key->data, key->len, NULL,
                                     err);
    close(src.fd);
    if (st == OC_OK) {
        oc_error why;
        oc_error_clear(&why);
        const char *problem = not_a_payload(af.tmp_path, &why);
        if (problem)
            st = oc_error_set(err, OC_ERR_BAD_KEY, OC_NO_OFFSET,
                              "wrong passphrase, or damaged data: the decrypted ONNXCRY1 payload "
                              "%s (%s; ONNXCRY1's padding check misses about one wrong "
                              "passphrase in 256) (C-53, C-56)",
                              problem, why.message);
    }
    if (st == OC_OK) return oc_atomic_commit(&af, err);
    oc_atomic_abort(&af);
    return st;
}

static int parse_encrypt_options(const cli_args *args, oc_crypt_options *o) {
    return cli_parse_crypt_options("encrypt", args->value[CRYPT_OPT_FORMAT],
                                   args->value[CRYPT_OPT_ITERATIONS],
                                   args->value[CRYPT_OPT_CHUNK_SIZE], o);
}

static int run_crypt(const cli_args *args, bool encrypting) {
    const char *cmd = encrypting ? "encrypt" : "decrypt";
    const char *in = args->positional[0], *out = args->positional[1];
    bool force = args->seen[CRYPT_OPT_FORCE];
    oc_crypt_options o;
    oc_crypt_format in_format = OC_CRYPT_NONE;
    cli_key key;
    oc_error err;
    oc_status st;
    uint64_t in_size;
    double start;
    int rc = cli_refuse_argv_key(cmd, args->seen, CRYPT_OPT_KEY, CRYPT_OPT_PASSPHRASE);
    if (rc == CLI_EXIT_OK) rc = cli_refuse_url_output(out);
    oc_crypt_options_init(&o);
    if (rc == CLI_EXIT_OK && encrypting) rc = parse_encrypt_options(args, &o);
    if (rc != CLI_EXIT_OK) return rc;
    rc = cli_require_crypto(in);
    if (rc != CLI_EXIT_OK) return rc;
    oc_error_clear(&err);
    if (!encrypting) {
        /* Say what IN is before asking for a passphrase. */
        oz_kind kind;
        if (oz_detect_path(in, cli_http_options(), &kind, &err) != OC_OK) return cli_fail(in, &err);
        oz_kind_is_encrypted(kind, &in_format);
        /* Cut inside its magic: C-1's `truncated`, as every loader says it. */
        if (kind == OZ_KIND_CRYPT_SHORT &&
            (rc = cli_detect_crypt_checked(in, &in_format)) != CLI_EXIT_OK)
            return rc;
        if (in_format == OC_CRYPT_NONE)
            return cli_fail_msg(in, "not an encrypted file: it starts with neither "
                                    "ONNXZEC1 nor ONNXCRY1");
    }
    rc = cli_check_output(cmd, in, out, force);
    if (rc != CLI_EXIT_OK) return rc;
    in_size = size_of(in);
    rc = cli_key_get(cmd, args->value[CRYPT_OPT_KEY_FILE], encrypting ? out : in, encrypting,
                     args->verbosity, &key);
    if (rc != CLI_EXIT_OK) return rc;
    o.no_overwrite = !force;
    start = cli_now_ms();
    if (encrypting && o.format == OC_CRYPT_ONNXCRY1) { /* C-56: only what decrypt accepts */
        oc_error why;
        oc_error_clear(&why);
        const char *problem = not_a_payload(in, &why);
        if (problem) {
            cli_key_free(&key);
            return cli_fail_msg(in,
                                "%s (%s): ONNXCRY1 holds only models and archives, "
                                "since a wrong passphrase is told only by what it decrypts "
                                "to (C-56); use ONNXZEC1",
                                problem, why.message);
        }
    }
    st = encrypting ? oc_crypt_encrypt_file(in, out, key.data, key.len, &o, &err)
         : in_format == OC_CRYPT_ONNXCRY1
             ? decrypt_cry1(in, out, &key, force, &err)
             : oc_crypt_decrypt_file(in, out, key.data, key.len, &o, &err);
    cli_key_free(&key);
    if (st != OC_OK) /* about the file the error names (OUT refused, say), else IN */
        return cli_fail_named(in, &err);
    cli_note(args->verbosity, CLI_VERBOSE, "%sed %s in %.1f ms", cmd, in, cli_now_ms() - start);
    if (cli_reports(args->verbosity, out)) {
        cli_put_text(stdout, in, strlen(in));
        fputs(" -> ", stdout);
        cli_put_text(stdout, out, strlen(out));
        printf(" (%s, %" PRIu64 " => %" PRIu64 " bytes)\n",
               oc_crypt_format_name(encrypting ? (o.format ? o.format : OC_CRYPT_ONNXZEC1)
                                               : in_format),
               in_size, size_of(out));
    }
    return CLI_EXIT_OK;
}

static int run_encrypt(const cli_args *args) { return run_crypt(args, true); }
static int run_decrypt(const cli_args *args) { return run_crypt(args, false); }

#define KEY_HELP                                                                           \
    "The passphrase comes from, in this order:\n"                                          \
    "  --key-file FILE   the file's bytes (one trailing newline is dropped);\n"            \
    "  ONNXZ_KEY         the environment variable;\n"                                      \
    "  the terminal      a prompt on /dev/tty with echo off; without a terminal this is\n" \
    "                    a usage error (exit status 2).\n"                                 \
    "It is never taken from the command line, where other users could read it.\n"

static const char encrypt_help[] =
    "Encrypt the file IN (a .onnx model, an .onnxz archive, or any other file) to OUT,\n"
    "streaming, in bounded memory (spec/encryption.md).\n"
    "\n"
    "Formats:\n"
    "  onnxzec1  the default: AES-256-GCM in authenticated chunks, PBKDF2-HMAC-SHA256;\n"
    "            a wrong passphrase, damage, truncation or reordering is detected.\n"
    "  onnxcry1  onnx_light's format: AES-256-CBC, PBKDF2-HMAC-SHA256 with 100,000\n"
    "            iterations; no integrity check (use only for compatibility).\n"
    "\n" KEY_HELP "\n"
    "Options:\n"
    "  -f, --force            overwrite OUT if it exists (OUT may be IN)\n"
    "      --key-file FILE    read the passphrase from FILE\n"
    "      --format F         onnxzec1 (default) or onnxcry1\n"
    "      --iterations N     onnxzec1: PBKDF2 iterations (default 600000)\n"
    "      --chunk-size BYTES onnxzec1: plaintext bytes per chunk, 64 to 64M (default 1M)\n"
    "  -q, --quiet            print nothing but errors\n"
    "  -v, --verbose          also say where the passphrase came from, and the time\n"
    "  -h, --help             show this help\n"
    "\n"
    "OUT is written to a temporary file beside it and renamed into place: it is replaced\n"
    "whole or not at all. Built without OpenSSL, this fails (exit status 1).\n"
    "\n"
    "Examples:\n"
    "  onnxz encrypt --key-file secret.txt model.onnxz model.onnxz.enc\n"
    "  ONNXZ_KEY=... onnxz encrypt --format onnxcry1 model.onnx model.onnx.enc\n"
    "  onnxz encrypt model.onnx model.onnxc        (asks for the passphrase twice)\n";

static const char decrypt_help[] =
    "Decrypt the file IN (ONNXZEC1 or ONNXCRY1, told by its first bytes) to OUT,\n"
    "streaming. A wrong passphrase or a damaged file fails with one error line (exit\n"
    "status 1) and leaves OUT untouched: no unauthenticated plaintext is kept.\n"
    "\n" KEY_HELP "\n"
    "Options:\n"
    "  -f, --force            overwrite OUT if it exists (OUT may be IN)\n"
    "      --key-file FILE    read the passphrase from FILE\n"
    "  -q, --quiet            print nothing but errors\n"
    "  -v, --verbose          also say where the passphrase came from, and the time\n"
    "  -h, --help             show this help\n"
    "\n"
    "convert, info and verify read encrypted files directly (with the same passphrase\n"
    "sources); decrypt is for getting the plain file back.\n"
    "\n"
    "Examples:\n"
    "  onnxz decrypt --key-file secret.txt model.onnxz.enc model.onnxz\n"
    "  ONNXZ_KEY=... onnxz decrypt model.onnxc model.onnx\n";

const cli_command cmd_encrypt = {
    "encrypt",
    "encrypt a model or archive (ONNXZEC1, or ONNXCRY1 on request)",
    "onnxz encrypt [options] IN OUT",
    encrypt_help,
    encrypt_options,
    crypt_arg_names,
    2,
    2,
    run_encrypt,
};

const cli_command cmd_decrypt = {
    "decrypt",
    "decrypt an ONNXZEC1 or ONNXCRY1 file",
    "onnxz decrypt [options] IN OUT",
    decrypt_help,
    decrypt_options,
    crypt_arg_names,
    2,
    2,
    run_decrypt,
};
