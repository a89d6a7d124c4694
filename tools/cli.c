/*
 * tools/cli.c - option parsing, error reporting and formatting shared by the commands.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "onnxcore_private.h"

/* The options every command accepts, handled here so no table has to repeat them. */
typedef enum common_option {
    COMMON_NONE,
    COMMON_QUIET,
    COMMON_VERBOSE,
    COMMON_HELP,
    COMMON_MAX_MEMORY /* takes a value */
} common_option;

static common_option common_short(char c) {
    switch (c) {
    case 'q':
        return COMMON_QUIET;
    case 'v':
        return COMMON_VERBOSE;
    case 'h':
        return COMMON_HELP;
    default:
        return COMMON_NONE;
    }
}

static common_option common_long(const char *name, size_t len) {
    if (len == 5 && strncmp(name, "quiet", len) == 0) return COMMON_QUIET;
    if (len == 7 && strncmp(name, "verbose", len) == 0) return COMMON_VERBOSE;
    if (len == 4 && strncmp(name, "help", len) == 0) return COMMON_HELP;
    if (len == 10 && strncmp(name, "max-memory", len) == 0) return COMMON_MAX_MEMORY;
    return COMMON_NONE;
}

static void apply_common(common_option opt, cli_args *args) {
    switch (opt) {
    case COMMON_QUIET:
        args->verbosity = CLI_QUIET;
        break;
    /* The last of -q and -v wins; -vv goes one level further. */
    case COMMON_VERBOSE:
        args->verbosity = args->verbosity < CLI_VERBOSE ? CLI_VERBOSE : args->verbosity + 1;
        break;
    case COMMON_HELP:
        args->help = true;
        break;
    case COMMON_MAX_MEMORY:
    case COMMON_NONE:
        break;
    }
}

/* ---- the memory budget (spec/security.md M-3) ---- */

static uint64_t max_memory = CLI_DEFAULT_MAX_MEMORY;

static int set_max_memory(const char *command, const char *text) {
    uint64_t v;
    int rc = cli_parse_size(command ? command : "onnxz", "max-memory", text, &v);
    if (rc != CLI_EXIT_OK) return rc;
    if (v == 0) return cli_usage_error(command, "--max-memory must be more than 0");
    max_memory = v;
    return CLI_EXIT_OK;
}

void cli_parse_options_init(oc_parse_options *opts) {
    oc_parse_options_init(opts);
    opts->max_memory = max_memory;
    opts->http = cli_http_options();
}

/* ---- HTTP settings from the environment ---- */

static oc_http_options http = OC_HTTP_OPTIONS_INIT;

static const char *env_lookup(void *ctx, const char *name) {
    (void)ctx;
    return getenv(name);
}

/* s3:// URLs: AWS's settings as its own tools find them (oc_s3_options_load: the
 * environment, ~/.aws/credentials and ~/.aws/config), kept for the process's life. */
static oc_s3_options *s3;
/* The hub's settings (HF_ENDPOINT, HF_TOKEN or its token file): for the process's life. */
static oc_hf_options *hf;

/* Whether some argument of the command (a path, or an option's value) is a URL of the
 * scheme: the AWS and hub settings are read only for a command that opens one, so that
 * a broken ~/.aws or token file never touches a command on local files (spec/remote.md
 * */
static bool names_scheme(const cli_args *args, oc_url_scheme scheme) {
    for (int i = 0; i < args->npositional; i++)
        if (oc_url_scheme_of(args->positional[i]) == scheme) return true;
    for (int i = 0; i < args->noccurrences; i++)
        if (args->occurrence[i].value && oc_url_scheme_of(args->occurrence[i].value) == scheme)
            return true;
    return false;
}

int cli_http_init(const cli_args *args) {
    oc_error err;
    oc_error_clear(&err);
    if (oc_http_options_parse(&http, env_lookup, NULL, &err) == OC_OK &&
        (!names_scheme(args, OC_URL_S3) ||
         oc_s3_options_load(&s3, env_lookup, NULL, &err) == OC_OK) &&
        (!names_scheme(args, OC_URL_HF) ||
         oc_hf_options_load(&hf, env_lookup, NULL, &err) == OC_OK)) {
        http.s3 = s3;
        http.hf = hf;
        return CLI_EXIT_OK;
    }
    return cli_fail_msg("environment", "%s", err.message);
}

const oc_http_options *cli_http_options(void) { return &http; }

/* The index of an option in the table, or -1. */
static int find_short(const cli_option *options, char c) {
    for (int i = 0; options && i < CLI_MAX_OPTIONS && options[i].long_name; i++)
        if (options[i].short_name == c) return i;
    return -1;
}

static int find_long(const cli_option *options, const char *name, size_t len) {
    for (int i = 0; options && i < CLI_MAX_OPTIONS && options[i].long_name; i++)
        if (strlen(options[i].long_name) == len && strncmp(options[i].long_name, name, len) == 0)
            return i;
    return -1;
}

/* Records a value of option idx (cli_args.occurrence). */
static int record_value(const cli_option *options, int idx, const char *value, cli_args *args) {
    if (args->noccurrences >= CLI_MAX_OCCURRENCES)
        return cli_usage_error(args->command, "too many options (at most %d with values)",
                               CLI_MAX_OCCURRENCES);
    (void)options;
    args->occurrence[args->noccurrences].option = idx;
    args->occurrence[args->noccurrences].value = value;
    args->noccurrences++;
    args->value[idx] = value;
    args->seen[idx] = true;
    return CLI_EXIT_OK;
}

/* Parses one "--name[=value]" at argv[*i]; may consume the next argument as the value. */
static int parse_long(const cli_option *options, int argc, char **argv, int *i, cli_args *args) {
    const char *name = argv[*i] + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    common_option common = common_long(name, len);
    if (common == COMMON_MAX_MEMORY) {
        const char *value = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
        if (!value) return cli_usage_error(args->command, "option '--max-memory' needs a value");
        return set_max_memory(args->command, value);
    }
    if (common != COMMON_NONE && !eq) {
        apply_common(common, args);
        return CLI_EXIT_OK;
    }
    int idx = find_long(options, name, len);
    if (idx < 0) {
        if (common == COMMON_NONE)
            return cli_usage_error(args->command, "unknown option '--%.*s'", (int)len, name);
        return cli_usage_error(args->command, "option '--%.*s' takes no value", (int)len, name);
    }
    if (!options[idx].takes_value) {
        if (eq)
            return cli_usage_error(args->command, "option '--%.*s' takes no value", (int)len, name);
        args->seen[idx] = true;
        return CLI_EXIT_OK;
    }
    if (eq) return record_value(options, idx, eq + 1, args);
    if (*i + 1 < argc) return record_value(options, idx, argv[++*i], args);
    return cli_usage_error(args->command, "option '--%s' needs a value", options[idx].long_name);
}

/* Parses a bundle of short options "-abc" at argv[*i]; an option that takes a value takes
 * the rest of the bundle, or the next argument. */
static int parse_short(const cli_option *options, int argc, char **argv, int *i, cli_args *args) {
    const char *arg = argv[*i];
    for (size_t k = 1; arg[k] != '\0'; k++) {
        common_option common = common_short(arg[k]);
        if (common != COMMON_NONE) {
            apply_common(common, args);
            if (args->help) return CLI_EXIT_OK;
            continue;
        }
        int idx = find_short(options, arg[k]);
        if (idx < 0) return cli_usage_error(args->command, "unknown option '-%c'", arg[k]);
        args->seen[idx] = true;
        if (!options[idx].takes_value) continue;
        if (arg[k + 1] != '\0') return record_value(options, idx, arg + k + 1, args);
        if (*i + 1 < argc) return record_value(options, idx, argv[++*i], args);
        return cli_usage_error(args->command, "option '-%c' needs a value", arg[k]);
    }
    return CLI_EXIT_OK;
}

static int add_positional(cli_args *args, const char *arg) {
    if (args->npositional >= CLI_MAX_POSITIONAL)
        return cli_usage_error(args->command, "unexpected argument '%s'", arg);
    args->positional[args->npositional++] = arg;
    return CLI_EXIT_OK;
}

int cli_parse(const cli_option *options, int argc, char **argv, int first, bool stop_at_positional,
              cli_args *args, int *next) {
    bool options_done = false;
    int i = first;
    for (; i < argc; i++) {
        const char *arg = argv[i];
        /* "-" alone is an argument (a file name), as in most tools. */
        bool is_option = !options_done && arg[0] == '-' && arg[1] != '\0';
        int rc = CLI_EXIT_OK;
        if (!is_option) {
            if (stop_at_positional) break;
            rc = add_positional(args, arg);
        } else if (strcmp(arg, "--") == 0) {
            options_done = true;
            if (stop_at_positional) {
                i++;
                break;
            }
        } else if (arg[1] == '-') {
            rc = parse_long(options, argc, argv, &i, args);
        } else {
            rc = parse_short(options, argc, argv, &i, args);
        }
        if (rc != CLI_EXIT_OK) return rc;
        if (args->help) break;
    }
    if (next) *next = i;
    return CLI_EXIT_OK;
}

/* The tool's own text, formatted, as it may be shown: no user:password@ of a URL in it
 * (oc_path_shown, spec/security.md N-2), whatever argument it repeats. */
static const char *shown_text(char *buf, size_t size, const char *fmt, va_list ap) {
    vsnprintf(buf, size, fmt, ap);
    return oc_path_shown(buf, buf, size);
}

int cli_usage_error(const char *command, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    fputs("onnxz: usage error: ", stderr);
    if (command) fprintf(stderr, "%s: ", command);
    va_start(ap, fmt);
    fputs(shown_text(msg, sizeof msg, fmt, ap), stderr);
    va_end(ap);
    fprintf(stderr, " (see 'onnxz %s%s--help')\n", command ? command : "", command ? " " : "");
    return CLI_EXIT_USAGE;
}

/* Writes a message on the current line. Strings from files and servers reach messages
 * escaped (oc_quote); as a safety net for any that did not, what oc_quote escapes is
 * written as \xNN here too: control bytes, DEL, bytes that are not well-formed UTF-8 and
 * the sequences that act on the line (bidirectional controls such as U+202E, C1
 * controls, U+2028/9), so the one-line error contract holds and the terminal is never
 * driven. The message's own text, backslashes included, is kept. */
static void put_one_line(const char *msg) {
    const unsigned char *p = (const unsigned char *)msg;
    size_t left = strlen(msg), k;
    while (left) {
        if (*p >= 0x20 && *p < 0x7f) {
            k = 1;
            fputc(*p, stderr);
        } else if (*p >= 0x80 && (k = oc_utf8_printable_len(p, left)) != 0) {
            fwrite(p, 1, k, stderr);
        } else {
            k = 1;
            fprintf(stderr, "\\x%02x", (unsigned)*p);
        }
        p += k;
        left -= k;
    }
}

const char *cli_shown(const char *path) {
    static char shown[4096];
    return oc_path_shown(path, shown, sizeof shown);
}

int cli_fail(const char *file, const oc_error *err) {
    char buf[OC_ERROR_MESSAGE_MAX + 16];
    file = cli_shown(file); /* as the library names it in the message */
    const char *msg = oc_error_detail(err, file, buf, sizeof buf); /* FILE is printed here */
    fputs("onnxz: error: ", stderr);
    cli_put_text(stderr, file, strlen(file));
    fputs(": ", stderr);
    put_one_line(msg);
    /* The library names its option; the tool's is the flag (M-3). */
    if (err->code == OC_ERR_LIMIT && strncmp(err->rule, "M-", 2) == 0)
        fprintf(stderr, "; --max-memory raises the budget");
    if (err->offset != OC_NO_OFFSET) fprintf(stderr, " (at offset %" PRIu64 ")", err->offset);
    fputc('\n', stderr);
    return CLI_EXIT_FAILURE;
}

int cli_fail_named(const char *otherwise, const oc_error *err) {
    char file[OC_ERROR_MESSAGE_MAX];
    if (!err->file_len) return cli_fail(otherwise, err);
    snprintf(file, sizeof file, "%.*s", (int)err->file_len, err->message + err->file_at);
    return cli_fail(file, err);
}

int cli_fail_msg(const char *file, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    shown_text(msg, sizeof msg, fmt, ap);
    va_end(ap);
    file = cli_shown(file);
    fputs("onnxz: error: ", stderr);
    cli_put_text(stderr, file, strlen(file));
    fputs(": ", stderr);
    put_one_line(msg); /* names from a file may hold line breaks */
    fputc('\n', stderr);
    return CLI_EXIT_FAILURE;
}

bool cli_reports(int verbosity, const char *out) {
    return verbosity >= CLI_NORMAL && strcmp(out, "-") != 0;
}

void cli_note(int verbosity, int level, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    if (verbosity < level) return;
    fputs("onnxz: ", stderr);
    va_start(ap, fmt);
    fputs(shown_text(msg, sizeof msg, fmt, ap), stderr);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_finish(int status) {
    /* Without this check `onnxz info m.onnx > /dev/full` would report success. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        cli_fail_msg("<stdout>", "write failed: %s", e ? strerror(e) : "I/O error");
        return CLI_EXIT_FAILURE;
    }
    return status;
}

void cli_format_size(uint64_t bytes, char *buf, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) {
        snprintf(buf, size, "%" PRIu64 " B", bytes);
        return;
    }
    double value = (double)bytes;
    size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < sizeof units / sizeof units[0]) {
        value /= 1024.0;
        unit++;
    }
    snprintf(buf, size, "%.1f %s", value, units[unit]);
}

void cli_put_text(FILE *out, const char *data, uint64_t size) {
    /* oc_quote's rendering, piece by piece: a buffer of 4 bytes per input byte (and the
     * room oc_quote keeps for "...") never cuts; pieces end between UTF-8 sequences. */
    enum { PIECE = 256 };
    char buf[4 * PIECE + 4];
    const unsigned char *p = (const unsigned char *)data;
    while (size > 0) {
        uint64_t n = size < PIECE ? size : PIECE;
        /* Back off over continuation bytes so that no sequence is split (a run of them
         * longer than a sequence is malformed anyway and escaped byte by byte). */
        for (uint64_t k = 0; n < size && k < 3 && n > 1 && (p[n] & 0xC0) == 0x80; k++) n--;
        fputs(oc_quote(p, n, buf, sizeof buf), out);
        p += n;
        size -= n;
    }
}

double cli_now_ms(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0.0;
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

int cli_parse_size(const char *command, const char *option, const char *text, uint64_t *out) {
    uint64_t v = 0, mult = 1;
    const char *p = text;
    if (*p < '0' || *p > '9')
        return cli_usage_error(command,
                               "--%s: '%s' is not a size (a number, optionally "
                               "followed by K, M or G)",
                               option, text);
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return cli_usage_error(command, "--%s: '%s' is too large", option, text);
        v = v * 10 + d;
    }
    switch (*p) {
    case 'k':
    case 'K':
        mult = 1ull << 10;
        p++;
        break;
    case 'm':
    case 'M':
        mult = 1ull << 20;
        p++;
        break;
    case 'g':
    case 'G':
        mult = 1ull << 30;
        p++;
        break;
    case 't':
    case 'T':
        mult = 1ull << 40;
        p++;
        break;
    default:
        break;
    }
    if (mult > 1 && strcmp(p, "iB") == 0) p += 2;
    if (*p != '\0')
        return cli_usage_error(command,
                               "--%s: '%s' is not a size (a number, optionally "
                               "followed by K, M or G)",
                               option, text);
    if (v > UINT64_MAX / mult)
        return cli_usage_error(command, "--%s: '%s' is too large", option, text);
    *out = v * mult;
    return CLI_EXIT_OK;
}

int cli_parse_int(const char *command, const char *option, const char *text, long min, long max,
                  long *out) {
    char *end;
    long v;
    errno = 0;
    v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || v < min || v > max || text[0] == ' ' ||
        text[0] == '+')
        return cli_usage_error(command, "--%s: '%s' is not a whole number from %ld to %ld", option,
                               text, min, max);
    *out = v;
    return CLI_EXIT_OK;
}

int cli_check_output(const char *command, const char *in, const char *out, bool force) {
    struct stat st, si;
    if (out[0] == '\0') return cli_usage_error(command, "the output file name is empty");
    /* Even with -f: a file is never renamed over a directory. */
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) return cli_fail_msg(out, "is a directory");
    /* "-", a FIFO, a device: written through, never replaced (S-41), so no -f needed. */
    if (force || oc_atomic_through(out)) return CLI_EXIT_OK;
    if (lstat(out, &st) != 0) {
        if (errno == ENOENT) return CLI_EXIT_OK;
        return cli_fail_msg(out, "%s", strerror(errno));
    }
    if (in && stat(in, &si) == 0 && stat(out, &st) == 0 && si.st_dev == st.st_dev &&
        si.st_ino == st.st_ino)
        return cli_fail_msg(out, "output is the input file; use -f to replace it");
    return cli_fail_msg(out, "output file exists; use -f to overwrite it");
}
