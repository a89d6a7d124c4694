/*
 * tools/onnxz.c - the onnxz command: global options, the command table, help, dispatch.
 *
 *   onnxz [-q|-v] COMMAND [options] ARGS     run a command (see cli.h for exit codes)
 *   onnxz --help | --version | help COMMAND
 */
#include <string.h>

#include "cli.h"

enum { GLOBAL_OPT_VERSION = 0 };

static const cli_option global_options[] = {
    {'V', "version", false},
    {'\0', NULL, false},
};

static int run_help(const cli_args *args);

static const char help_help[] =
    "Show the list of commands, or the full help of one command.\n"
    "\n"
    "Example:\n"
    "  onnxz help convert\n";

static const char *const help_arg_names[] = {"COMMAND"};

static const cli_command cmd_help = {
    "help", "show help for a command", "onnxz help [COMMAND]", help_help,
    NULL,   help_arg_names,            0,                      1,
    run_help,
};

/* In the order `onnxz --help` lists them. */
static const cli_command *const commands[] = {
    &cmd_convert, &cmd_info,    &cmd_ls,   &cmd_verify, &cmd_unpack, &cmd_meta,
    &cmd_stub,    &cmd_encrypt, &cmd_decrypt, &cmd_bench, &cmd_help};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
}

static void print_global_help(FILE *out)
{
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
          "\n"
          "Exit status: 0 success, 1 bad input or I/O failure (one line on stderr:\n"
          "\"onnxz: error: FILE: MESSAGE (at offset N)\"), 2 usage error.\n"
          "\n"
          "Examples:\n"
          "  onnxz info model.onnx\n"
          "  onnxz convert model.onnx model.onnxz && onnxz verify model.onnxz\n",
          out);
}

static void print_command_help(FILE *out, const cli_command *cmd)
{
    fprintf(out, "Usage: %s\n\n%s", cmd->usage, cmd->help);
}

static int run_help(const cli_args *args)
{
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
static int dispatch(const cli_command *cmd, int argc, char **argv, int first, int verbosity)
{
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
    return cmd->run(&args);
}

static int run_main(int argc, char **argv)
{
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
    if (global.seen[GLOBAL_OPT_VERSION]) {
        printf("onnxz %s\n", ONNXCORE_VERSION_STRING);
        return CLI_EXIT_OK;
    }
    if (next >= argc) return cli_usage_error(NULL, "no command given");
    cmd = find_command(argv[next]);
    if (!cmd) return cli_usage_error(NULL, "unknown command '%s'", argv[next]);
    return dispatch(cmd, argc, argv, next + 1, global.verbosity);
}

int main(int argc, char **argv)
{
    return cli_finish(run_main(argc, argv));
}
