/*
 * tools/cli.h - what the onnxz subcommands share: the command table entry, option
 * parsing, the error and message conventions, and small formatting helpers.
 *
 * Conventions every command follows:
 *   exit 0  success;
 *   exit 1  bad input or I/O failure, with exactly one stderr line
 *           "onnxz: error: FILE: MESSAGE (at offset N)" (cli_fail);
 *   exit 2  a usage error, with one stderr line "onnxz: usage error: ..." that ends with
 *           a hint to run --help (cli_usage_error).
 * Results go to stdout; diagnostics (-v) and errors go to stderr. A command prints its
 * result only once it has everything it needs, so a failure never leaves partial output.
 */
#ifndef ONNXZ_TOOLS_CLI_H
#define ONNXZ_TOOLS_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <onnxcore/crypto.h>
#include <onnxcore/crypto_model.h>
#include <onnxcore/http.h>
#include <onnxcore/onnxcore.h>
#include <onnxz/archive.h>

#if defined(__GNUC__)
#define CLI_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define CLI_PRINTF(fmt_index, first_arg)
#endif

enum { CLI_EXIT_OK = 0, CLI_EXIT_FAILURE = 1, CLI_EXIT_USAGE = 2 };

/* Verbosity: -q sets CLI_QUIET, each -v adds one. */
enum { CLI_QUIET = 0, CLI_NORMAL = 1, CLI_VERBOSE = 2 };

/* Whether a command that wrote OUT prints its "IN -> OUT" status line on stdout: at the
 * normal verbosity, and never when OUT is "-", whose bytes stdout carries (S-41). */
bool cli_reports(int verbosity, const char *out);

#define CLI_MAX_OPTIONS     24
#define CLI_MAX_POSITIONAL  8
#define CLI_MAX_OCCURRENCES 256

/* One entry of a command's option table; the table ends with a zeroed entry. The common
 * options -q/--quiet, -v/--verbose and -h/--help are accepted everywhere and are not
 * listed in the tables. */
typedef struct cli_option {
    char short_name;       /* '\0' when the option has no short form */
    const char *long_name; /* without the leading "--"; NULL ends the table */
    bool takes_value;      /* "--name VALUE", "--name=VALUE", "-xVALUE" or "-x VALUE" */
} cli_option;

/* The parsed command line of one command. seen[] and value[] are indexed like the
 * command's option table. */
typedef struct cli_args {
    const char *command; /* the command's name, NULL for the global options */
    bool seen[CLI_MAX_OPTIONS];
    const char *value[CLI_MAX_OPTIONS];
    const char *positional[CLI_MAX_POSITIONAL];
    int npositional;
    int verbosity;
    bool help;
    /* Every option that takes a value, in command-line order, for options that may be
     * repeated (value[] keeps only the last one). */
    struct {
        int option;
        const char *value;
    } occurrence[CLI_MAX_OCCURRENCES];
    int noccurrences;
} cli_args;

typedef struct cli_command {
    const char *name;
    const char *summary;          /* one line for `onnxz --help` */
    const char *usage;            /* "onnxz NAME [options] ARGS", the first help line */
    const char *help;             /* the rest of `onnxz help NAME` */
    const cli_option *options;    /* may be NULL: no options beyond the common ones */
    const char *const *arg_names; /* names of the positional arguments, for messages */
    int min_args;
    int max_args;
    int (*run)(const cli_args *args);
} cli_command;

/* Parses argv[first..argc) for a command (or the global options when args->command is
 * NULL). args must come in with command and verbosity set; the rest is filled in. With
 * stop_at_positional the parse ends at the first positional argument and *next gets its
 * index (argc when there is none); otherwise options and arguments may be mixed and "--"
 * ends the options. Returns CLI_EXIT_OK, or CLI_EXIT_USAGE after printing the error. A
 * -h/--help ends the parse at once with args->help set. */
int cli_parse(const cli_option *options, int argc, char **argv, int first, bool stop_at_positional,
              cli_args *args, int *next);

/* Prints "onnxz: usage error: [CMD: ]MESSAGE (see 'onnxz [CMD ]--help')" and returns
 * CLI_EXIT_USAGE. command may be NULL. */
int cli_usage_error(const char *command, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Prints "onnxz: error: FILE: MESSAGE[ (at offset N)]" for a library error and returns
 * CLI_EXIT_FAILURE. Where the library's message names FILE again in one of its fixed
 * forms ("cannot open FILE: why", "FILE is not a regular file", "FILE already exists",
 * "FILE: why"), the repeated name is left out: "cannot open: why", "is not a regular
 * file", ... (cli.c lists the forms). */
int cli_fail(const char *file, const oc_error *err);
/* cli_fail naming the file the library's error is about (oc_error_file), or otherwise
 * when it names none. */
int cli_fail_named(const char *otherwise, const oc_error *err);
/* The same for the tool's own errors (no offset). */
int cli_fail_msg(const char *file, const char *fmt, ...) CLI_PRINTF(2, 3);

/* Prints "onnxz: MESSAGE" to stderr when verbosity >= level (diagnostics, -v). */
void cli_note(int verbosity, int level, const char *fmt, ...) CLI_PRINTF(3, 4);

/* Flushes stdout and turns a failed write (full disk, closed pipe) into exit status 1. */
int cli_finish(int status);

/* "512 B", "1.5 KiB", "3.2 MiB"...: binary units with one decimal. */
void cli_format_size(uint64_t bytes, char *buf, size_t size);

/* Writes size bytes of untrusted text on one line, rendered as oc_quote (onnxcore/status.h)
 * renders it, without its length bound: control bytes, DEL, `\` and bytes that are not
 * well-formed UTF-8 as \xNN, so a name from a model can never break the line structure
 * of the output or drive the terminal. */
void cli_put_text(FILE *out, const char *data, uint64_t size);

/* Milliseconds from a monotonic clock, for -v timings. */
double cli_now_ms(void);

/* Parses a byte count for option `option` of `command`: decimal digits with an optional
 * suffix K, M, G or T (powers of 1024; "KiB" and lower case are accepted too). Returns
 * CLI_EXIT_OK, or CLI_EXIT_USAGE after printing the error. */
int cli_parse_size(const char *command, const char *option, const char *text, uint64_t *out);

/* The memory budget of every load (spec/security.md M-3): what decoding a model and
 * holding an archive's directory may take, --max-memory SIZE (a common option of every
 * command), 1 GiB by default. cli_parse_options_init is oc_parse_options_init with it.
 * Past it a load fails with OC_ERR_LIMIT,
 * and cli_fail names the flag. */
#define CLI_DEFAULT_MAX_MEMORY OC_RECOMMENDED_MAX_MEMORY
void cli_parse_options_init(oc_parse_options *opts);
/* The HTTP settings of every load of a URL, from the user's environment (the only place
 * the tool reads them; their names and ranges: oc_http_options_parse): cli_http_init
 * reads them once, before a command runs, and prints the error of a bad value
 * (CLI_EXIT_FAILURE); cli_parse_options_init passes them on. AWS's settings and files
 * are read only when some argument of args is an s3:// URL, the hub's for hf://. */
int cli_http_init(const cli_args *args);
const oc_http_options *cli_http_options(void);
/* path as the tool shows it (oc_path_shown: a URL without user:password@, spec/security.md
 * N-2), in a buffer of its own that the next call reuses: pass it on at once. */
const char *cli_shown(const char *path);
/* Parses a plain decimal integer in [min, max] for an option. Same returns. */
int cli_parse_int(const char *command, const char *option, const char *text, long min, long max,
                  long *out);

/* What every command that writes a file OUT checks first: an empty name is a usage error
 * (CLI_EXIT_USAGE); an existing directory is "OUT: is a directory", even with force; and
 * without force OUT must not exist (nor be in under another name). Returns CLI_EXIT_OK or
 * the exit status after printing the error. in may be NULL. */
int cli_check_output(const char *command, const char *in, const char *out, bool force);

/* The commands (cmd_*.c). */
extern const cli_command cmd_convert;
extern const cli_command cmd_info;
extern const cli_command cmd_ls;
extern const cli_command cmd_get;
extern const cli_command cmd_verify;
extern const cli_command cmd_sign;
extern const cli_command cmd_unpack;
extern const cli_command cmd_bench;
extern const cli_command cmd_encrypt;
extern const cli_command cmd_decrypt;
extern const cli_command cmd_meta;
extern const cli_command cmd_stub;

#endif
