/*
 * tools/passphrase.h - where the crypto commands get their passphrase from, and wiping it.
 *
 * In this order: --key-file FILE (the file's bytes, one trailing newline stripped), the
 * environment variable ONNXZ_KEY, a prompt on the terminal (/dev/tty, echo off). Never
 * from a command-line argument: argv is visible to every user through ps and /proc.
 */
#ifndef ONNXZ_TOOLS_PASSPHRASE_H
#define ONNXZ_TOOLS_PASSPHRASE_H

#include <stdbool.h>
#include <stddef.h>

#include <onnxcore/crypto.h>

#define CLI_KEY_ENV "ONNXZ_KEY"
/* Key files and typed passphrases longer than this are refused. */
#define CLI_KEY_MAX (64u * 1024u)

typedef struct cli_key {
    char *data; /* key bytes (malloc'd; not NUL-terminated for the library's sake) */
    size_t len;
} cli_key;

/* Fills *out with the passphrase for `file` (named in the prompt). confirm: prompt twice
 * and require the same answer (for encrypting). Returns CLI_EXIT_OK, CLI_EXIT_FAILURE (an
 * unreadable or empty key file, an empty ONNXZ_KEY, ...) or CLI_EXIT_USAGE (no key file,
 * no ONNXZ_KEY and no terminal to ask on), after printing the error. */
int cli_key_get(const char *command, const char *key_file, const char *file, bool confirm,
                int verbosity, cli_key *out);

/* Wipes and frees the key; *k is left empty. */
void cli_key_free(cli_key *k);

/* Overwrites n bytes with zeros in a way the compiler may not remove. */
void cli_wipe(void *p, size_t n);

/* When this build cannot encrypt: prints the library's "built without OpenSSL" error for
 * file and returns CLI_EXIT_FAILURE; otherwise returns CLI_EXIT_OK. */
int cli_require_crypto(const char *file);

/* A usage error when --key or --passphrase was given (seen[] indices of those options):
 * a passphrase on argv is never accepted. */
int cli_refuse_argv_key(const char *command, const bool *seen, int key_opt, int pass_opt);

/* --format, --iterations and --chunk-size (each NULL when not given) into *o. Returns
 * CLI_EXIT_OK or CLI_EXIT_USAGE after printing the error. */
int cli_parse_crypt_options(const char *command, const char *format, const char *iterations,
                            const char *chunk_size, oc_crypt_options *o);

#endif
