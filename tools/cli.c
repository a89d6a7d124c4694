/*
 * tools/cli.c - option parsing, error reporting and formatting shared by the commands.
 */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

/* The options every command accepts, handled here so no table has to repeat them. */
typedef enum common_option {
    COMMON_NONE,
    COMMON_QUIET,
    COMMON_VERBOSE,
    COMMON_HELP
} common_option;

static common_option common_short(char c)
{
    switch (c) {
    case 'q': return COMMON_QUIET;
    case 'v': return COMMON_VERBOSE;
    case 'h': return COMMON_HELP;
    default: return COMMON_NONE;
    }
}

static common_option common_long(const char *name, size_t len)
{
    if (len == 5 && strncmp(name, "quiet", len) == 0) return COMMON_QUIET;
    if (len == 7 && strncmp(name, "verbose", len) == 0) return COMMON_VERBOSE;
    if (len == 4 && strncmp(name, "help", len) == 0) return COMMON_HELP;
    return COMMON_NONE;
}

static void apply_common(common_option opt, cli_args *args)
{
    switch (opt) {
    case COMMON_QUIET: args->verbosity = CLI_QUIET; break;
    /* The last of -q and -v wins; -vv goes one level further. */
    case COMMON_VERBOSE:
        args->verbosity = args->verbosity < CLI_VERBOSE ? CLI_VERBOSE : args->verbosity + 1;
        break;
    case COMMON_HELP: args->help = true; break;
    case COMMON_NONE: break;
    }
}

/* The index of an option in the table, or -1. */
static int find_short(const cli_option *options, char c)
{
    for (int i = 0; options && i < CLI_MAX_OPTIONS && options[i].long_name; i++)
        if (options[i].short_name == c) return i;
    return -1;
}

static int find_long(const cli_option *options, const char *name, size_t len)
{
    for (int i = 0; options && i < CLI_MAX_OPTIONS && options[i].long_name; i++)
        if (strlen(options[i].long_name) == len && strncmp(options[i].long_name, name, len) == 0)
            return i;
    return -1;
}

/* Parses one "--name[=value]" at argv[*i]; may consume the next argument as the value. */
static int parse_long(const cli_option *options, int argc, char **argv, int *i, cli_args *args)
{
    const char *name = argv[*i] + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    common_option common = common_long(name, len);
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
    if (eq) {
        args->value[idx] = eq + 1;
    } else if (*i + 1 < argc) {
        args->value[idx] = argv[++*i];
    } else {
        return cli_usage_error(args->command, "option '--%s' needs a value",
                               options[idx].long_name);
    }
    args->seen[idx] = true;
    return CLI_EXIT_OK;
}

/* Parses a bundle of short options "-abc" at argv[*i]; an option that takes a value takes
 * the rest of the bundle, or the next argument. */
static int parse_short(const cli_option *options, int argc, char **argv, int *i, cli_args *args)
{
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
        if (arg[k + 1] != '\0') {
            args->value[idx] = arg + k + 1;
        } else if (*i + 1 < argc) {
            args->value[idx] = argv[++*i];
        } else {
            return cli_usage_error(args->command, "option '-%c' needs a value", arg[k]);
        }
        return CLI_EXIT_OK;
    }
    return CLI_EXIT_OK;
}

static int add_positional(cli_args *args, const char *arg)
{
    if (args->npositional >= CLI_MAX_POSITIONAL)
        return cli_usage_error(args->command, "unexpected argument '%s'", arg);
    args->positional[args->npositional++] = arg;
    return CLI_EXIT_OK;
}

int cli_parse(const cli_option *options, int argc, char **argv, int first,
              bool stop_at_positional, cli_args *args, int *next)
{
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

int cli_usage_error(const char *command, const char *fmt, ...)
{
    va_list ap;
    fputs("onnxz: usage error: ", stderr);
    if (command) fprintf(stderr, "%s: ", command);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'onnxz %s%s--help')\n", command ? command : "", command ? " " : "");
    return CLI_EXIT_USAGE;
}

/* Writes a message on the current line, turning any line break into a space: the
 * one-line error contract holds even if a message were to carry one. */
static void put_one_line(const char *msg)
{
    for (const char *p = msg; *p; p++) fputc((*p == '\n' || *p == '\r') ? ' ' : *p, stderr);
}

int cli_fail(const char *file, const oc_error *err)
{
    const char *msg = err->message[0] ? err->message : oc_status_name(err->code);
    fputs("onnxz: error: ", stderr);
    cli_put_text(stderr, file, strlen(file));
    fputs(": ", stderr);
    put_one_line(msg);
    if (err->offset != OC_NO_OFFSET) fprintf(stderr, " (at offset %" PRIu64 ")", err->offset);
    fputc('\n', stderr);
    return CLI_EXIT_FAILURE;
}

int cli_fail_msg(const char *file, const char *fmt, ...)
{
    va_list ap;
    fputs("onnxz: error: ", stderr);
    cli_put_text(stderr, file, strlen(file));
    fputs(": ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_FAILURE;
}

void cli_note(int verbosity, int level, const char *fmt, ...)
{
    va_list ap;
    if (verbosity < level) return;
    fputs("onnxz: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_finish(int status)
{
    /* Without this check `onnxz info m.onnx > /dev/full` would report success. */
    if (fflush(stdout) != 0 || ferror(stdout)) {
        int e = errno;
        cli_fail_msg("<stdout>", "write failed: %s", e ? strerror(e) : "I/O error");
        return CLI_EXIT_FAILURE;
    }
    return status;
}

void cli_format_size(uint64_t bytes, char *buf, size_t size)
{
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

void cli_put_text(FILE *out, const char *data, uint64_t size)
{
    for (uint64_t i = 0; i < size; i++) {
        unsigned char c = (unsigned char)data[i];
        if (c < 0x20 || c == 0x7f) fprintf(out, "\\x%02x", (unsigned)c);
        else fputc(c, out);
    }
}

double cli_now_ms(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0.0;
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

int cli_load_model(const char *path, cli_external external, int verbosity, oc_model **out)
{
    oc_parse_options opts;
    oc_error err;
    double start = cli_now_ms();
    oc_parse_options_init(&opts);
    opts.no_copy = 1;
    opts.skip_external_data = external == CLI_EXTERNAL_KEEP;
    oc_error_clear(&err);
    *out = NULL;
    /* model.h promises nothing about *out after a failure: treat it as unset. */
    if (oc_model_load_file(path, &opts, out, &err) != OC_OK) {
        *out = NULL;
        return cli_fail(path, &err);
    }
    cli_note(verbosity, CLI_VERBOSE, "loaded %s in %.1f ms", path, cli_now_ms() - start);
    return CLI_EXIT_OK;
}
