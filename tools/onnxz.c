/*
 * tools/onnxz.c - the onnxz command: global options, the command table, help, dispatch.
 *
 *   onnxz [-q|-v] COMMAND [options] ARGS     run a command (see cli.h for exit codes)
 *   onnxz --help | --version | help COMMAND
 *   onnxz --man                               the manual page (roff), built from the helps
 *   onnxz --markdown                          the same page in Markdown (docs/tool.md)
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "interrupt.h"

enum { GLOBAL_OPT_VERSION = 0, GLOBAL_OPT_MAN, GLOBAL_OPT_MARKDOWN };

static const cli_option global_options[] = {
    {'V', "version", false},
    {'\0', "man", false},
    {'\0', "markdown", false},
    {'\0', NULL, false},
};

static int run_help(const cli_args *args);

static const char help_help[] = "Show the list of commands, or the full help of one command.\n"
                                "\n"
                                "Example:\n"
                                "  onnxz help convert\n";

static const char *const help_arg_names[] = {"COMMAND"};

static const cli_command cmd_help = {
    "help",
    "show help for a command",
    "onnxz help [COMMAND]",
    help_help,
    NULL,
    help_arg_names,
    0,
    1,
    run_help,
};

/* In the order `onnxz --help` lists them. */
static const cli_command *const commands[] = {
    &cmd_convert, &cmd_info, &cmd_ls,      &cmd_get,     &cmd_verify, &cmd_sign, &cmd_unpack,
    &cmd_meta,    &cmd_stub, &cmd_encrypt, &cmd_decrypt, &cmd_bench,  &cmd_help};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const cli_command *find_command(const char *name) {
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
}

static void print_global_help(FILE *out) {
    fputs("Usage: onnxz [-q|-v] COMMAND [options] ARGS\n"
          "       onnxz --help | --version | help COMMAND\n"
          "\n"
          "onnxz reads and writes ONNX models and .onnxz archives without protobuf.\n"
          "\n"
          "Commands:\n",
          out);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
    fputs("\n"
          "Global options:\n"
          "  -q, --quiet     print nothing but errors\n"
          "  -v, --verbose   print more (timings, sizes) to stderr\n"
          "  -h, --help      show this help; `onnxz COMMAND --help` for a command\n"
          "  -V, --version   print the version\n"
          "  --max-memory SIZE\n"
          "                  what loading a model may take for its decoded graph and an\n"
          "                  archive's directory, and writing an archive or data files\n"
          "                  for the tables of the tensors moved there (default 1G; 512M,\n"
          "                  8G, ...); past it the command fails at once instead of\n"
          "                  exhausting the machine. Accepted before or after the\n"
          "                  command, by every command\n"
          "\n"
          "URLs: info, ls, get, verify and convert read http:// and https:// URLs with\n"
          "range requests (an archive's directory, model and the tensors used; nothing\n"
          "else). Settings, from the environment only (never on the command line):\n"
          "  ONNXZ_HTTP_AUTH      Authorization header value, sent to the URL's own host\n"
          "  ONNXZ_CA_FILE        PEM certificates to verify the server with\n"
          "  ONNXZ_HTTP_INSECURE  1: do not verify the server's certificate\n"
          "  ONNXZ_HTTP_TIMEOUT   seconds without data before a request fails (30)\n"
          "  ONNXZ_HTTP_RETRIES   retries of a broken transfer or a 5xx (3)\n"
          "  ONNXZ_HTTP_PARALLEL  connections a read of 16 MiB or more is split across (4)\n"
          "A value out of its range (TIMEOUT 1-86400, RETRIES 0-100, PARALLEL 1-16) is an\n"
          "error, not the default.\n"
          "hf://ORG/NAME/PATH and hf://ORG/NAME@REVISION/PATH read a file of a Hugging\n"
          "Face hub repository, the revision pinned at open to the commit the hub reports:\n"
          "  HF_ENDPOINT          the hub (https://huggingface.co)\n"
          "  HF_TOKEN             its token, else the file `hf auth login` writes\n"
          "                       (HF_TOKEN_PATH, else $HF_HOME/token, else\n"
          "                       ~/.cache/huggingface/token); sent to the hub only\n"
          "\n"
          "S3: the same commands read s3://BUCKET/KEY (S3, and stores that speak its API),\n"
          "with the same requests, each signed (AWS Signature Version 4). Settings as AWS's\n"
          "own tools take them, from the environment and files only:\n"
          "  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN   credentials;\n"
          "                       else the profile's in ~/.aws/credentials or ~/.aws/config\n"
          "                       (AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE); none:\n"
          "                       unsigned requests (public buckets)\n"
          "  AWS_PROFILE          the profile (default)\n"
          "  AWS_REGION, AWS_DEFAULT_REGION   the bucket's region (else the profile's;\n"
          "                       us-east-1)\n"
          "  AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL   an S3-compatible store's URL (else the\n"
          "                       profile's endpoint_url), addressed path-style; none: AWS\n"
          "\n"
          "Exit status: 0 success, 1 bad input or I/O failure (one line on stderr:\n"
          "\"onnxz: error: FILE: MESSAGE (at offset N)\"), 2 usage error.\n"
          "\n"
          "Examples:\n"
          "  onnxz info model.onnx\n"
          "  onnxz convert model.onnx model.onnxz && onnxz verify model.onnxz\n",
          out);
}

static void print_command_help(FILE *out, const cli_command *cmd) {
    fprintf(out, "Usage: %s\n\n%s", cmd->usage, cmd->help);
}

/* Text as roff shows it verbatim: backslashes escaped, no line taken for a request. */
static void put_roff(FILE *out, const char *text) {
    bool line_start = true;
    for (const char *p = text; *p; p++) {
        if (line_start && (*p == '.' || *p == '\'')) fputs("\\&", out);
        if (*p == '\\')
            fputs("\\e", out);
        else if (*p == '-')
            fputs("\\-", out);
        else
            fputc(*p, out);
        line_start = *p == '\n';
    }
}

/* The parts of the manual page that are not a help text, shared by both renderings. */
static const char man_name[] = "convert, inspect and verify ONNX models and .onnxz archives";
static const struct {
    const char *name, *text;
} man_environment[] = {
    {"ONNXZ_KEY", "the passphrase for encrypted models when no --key-file is given"},
};
#define N_MAN_ENVIRONMENT (sizeof man_environment / sizeof man_environment[0])
static const char man_exit_status[] =
    "0 on success; 1 for bad input or a failed read or write, with one line on stderr\n"
    "naming the file, the problem and, where there is one, the offset; 2 for a usage\n"
    "error.\n";
static const char man_see_also[] =
    "The formats are specified in the project's spec/ directory: onnx-wire.md,\n"
    "external-data.md, onnxz.md, onnxz-zip.md, encryption.md and security.md.\n";

/* The global help as one string (a function prints it; the commands' helps are data). */
static void global_help_text(char *buf, size_t size) {
    FILE *mem = fmemopen(buf, size, "w");
    buf[0] = '\0';
    if (!mem) return;
    print_global_help(mem);
    fputc('\0', mem);
    fclose(mem);
    buf[size - 1] = '\0';
}

/* onnxz(1): the global help and every command's, as they are, so the page never drifts
 * from --help. Generated at build time and installed with the tool. */
static void print_man(FILE *out) {
    char buf[4096];
    fprintf(out, ".TH ONNXZ 1 \"\" \"onnxz %s\" \"User Commands\"\n", ONNXCORE_VERSION_STRING);
    fputs(".SH NAME\nonnxz \\- ", out);
    put_roff(out, man_name);
    fputs("\n.SH SYNOPSIS\n.B onnxz\n[\\-q|\\-v]\n.I COMMAND\n[options] ARGS\n"
          ".SH DESCRIPTION\n.nf\n",
          out);
    global_help_text(buf, sizeof buf);
    put_roff(out, buf);
    fputs(".fi\n.SH COMMANDS\n", out);
    for (size_t i = 0; i < NCOMMANDS; i++) {
        fprintf(out, ".SS %s\n.B ", commands[i]->name);
        put_roff(out, commands[i]->usage);
        fputs("\n.PP\n.nf\n", out);
        put_roff(out, commands[i]->help);
        fputs(".fi\n", out);
    }
    fputs(".SH ENVIRONMENT\n", out);
    for (size_t i = 0; i < N_MAN_ENVIRONMENT; i++) {
        fprintf(out, ".TP\n.B %s\n", man_environment[i].name);
        put_roff(out, man_environment[i].text);
        fputc('\n', out);
    }
    fputs(".SH EXIT STATUS\n", out);
    put_roff(out, man_exit_status);
    fputs(".SH SEE ALSO\n", out);
    put_roff(out, man_see_also);
}

/* docs/tool.md: the manual page in Markdown, the help texts verbatim in code blocks. It
 * carries no version, so the committed file equals what any build prints (cli.docs). */
static void print_markdown(FILE *out) {
    char buf[4096];
    fprintf(out, "# onnxz(1): %s\n\n", man_name);
    fputs("<!-- Generated by `onnxz --markdown` (tools/onnxz.c) from the help texts that\n"
          "     `onnxz --help` and `man onnxz` show: do not edit. After changing a help text:\n"
          "     build/tools/onnxz --markdown > docs/tool.md -->\n\n"
          "Commands:",
          out);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "%s [%s](#%s)", i ? "," : "", commands[i]->name, commands[i]->name);
    global_help_text(buf, sizeof buf);
    fprintf(out, ".\n\n## Synopsis\n\n```text\n%s```\n\n## Commands\n", buf);
    for (size_t i = 0; i < NCOMMANDS; i++) {
        fprintf(out, "\n### %s\n\n```text\n", commands[i]->name);
        print_command_help(out, commands[i]);
        fputs("```\n", out);
    }
    fputs("\n## Environment\n\n", out);
    for (size_t i = 0; i < N_MAN_ENVIRONMENT; i++)
        fprintf(out, "- `%s`: %s\n", man_environment[i].name, man_environment[i].text);
    fprintf(out, "\n## Exit status\n\n%s\n## See also\n\n%s", man_exit_status, man_see_also);
}

static int run_help(const cli_args *args) {
    const cli_command *cmd;
    if (args->npositional == 0) {
        print_global_help(stdout);
        return CLI_EXIT_OK;
    }
    cmd = find_command(args->positional[0]);
    if (!cmd) return cli_usage_error("help", "unknown command '%s'", args->positional[0]);
    print_command_help(stdout, cmd);
    return CLI_EXIT_OK;
}

/* Parses a command's own options and arguments, checks their number, and runs it. */
static int dispatch(const cli_command *cmd, int argc, char **argv, int first, int verbosity) {
    cli_args args;
    int rc;
    memset(&args, 0, sizeof args);
    args.command = cmd->name;
    args.verbosity = verbosity;
    rc = cli_parse(cmd->options, argc, argv, first, false, &args, NULL);
    if (rc != CLI_EXIT_OK) return rc;
    if (args.help) {
        print_command_help(stdout, cmd);
        return CLI_EXIT_OK;
    }
    if (args.npositional < cmd->min_args)
        return cli_usage_error(cmd->name, "missing %s", cmd->arg_names[args.npositional]);
    if (args.npositional > cmd->max_args)
        return cli_usage_error(cmd->name, "unexpected argument '%s'",
                               args.positional[cmd->max_args]);
    rc = cli_http_init(&args);
    return rc == CLI_EXIT_OK ? cmd->run(&args) : rc;
}

static int run_main(int argc, char **argv) {
    cli_args global;
    const cli_command *cmd;
    int next = argc;
    int rc;
    memset(&global, 0, sizeof global);
    global.verbosity = CLI_NORMAL;
    rc = cli_parse(global_options, argc, argv, 1, true, &global, &next);
    if (rc != CLI_EXIT_OK) return rc;
    if (global.help) {
        print_global_help(stdout);
        return CLI_EXIT_OK;
    }
    if (global.seen[GLOBAL_OPT_MAN]) {
        print_man(stdout);
        return CLI_EXIT_OK;
    }
    if (global.seen[GLOBAL_OPT_MARKDOWN]) {
        print_markdown(stdout);
        return CLI_EXIT_OK;
    }
    if (global.seen[GLOBAL_OPT_VERSION]) {
        printf("onnxz %s\n", ONNXCORE_VERSION_STRING);
        return CLI_EXIT_OK;
    }
    if (next >= argc) return cli_usage_error(NULL, "no command given");
    cmd = find_command(argv[next]);
    if (!cmd) return cli_usage_error(NULL, "unknown command '%s'", argv[next]);
    return dispatch(cmd, argc, argv, next + 1, global.verbosity);
}

int main(int argc, char **argv) {
    interrupt_install();
    return cli_finish(run_main(argc, argv));
}
