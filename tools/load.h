/*
 * tools/load.h - how the commands load their input: every form (a .onnx file with its
 * external data, an .onnxz archive, either encrypted) through the library's one open call
 * (onnxz/open.h), with the passphrase asked for only when the input is encrypted, and the
 * error printed the tool's way (cli.h).
 */
#ifndef ONNXZ_TOOLS_LOAD_H
#define ONNXZ_TOOLS_LOAD_H

#include <onnxcore/crypto.h>
#include <onnxcore/onnxcore.h>
#include <onnxz/convert.h>
#include <onnxz/open.h>
#include <onnxz/reader.h>

/* How a command wants the tensors of EXTERNAL data_location. */
typedef enum cli_external {
    CLI_EXTERNAL_LOAD, /* read them from their data files (archive entries), as onnx.load does */
    CLI_EXTERNAL_KEEP  /* keep them as references; the data files are not opened */
} cli_external;

/* The kind of an input by its first bytes (oz_detect_path, with the tool's HTTP settings):
 * oz_kind_is_archive tells an archive. A file that cannot be looked at is taken for a
 * model (OZ_KIND_MODEL), whose loader then says why it cannot be read. */
oz_kind cli_input_kind(const char *path);

/* The encryption of a file by its first bytes (OC_CRYPT_NONE also when it cannot be read:
 * the loader that follows reports that in its own words), except that a file cut inside
 * an encryption magic (spec C-1) is an error, printed: returns CLI_EXIT_FAILURE then, else
 * CLI_EXIT_OK with *out set. For commands that would otherwise read such a file as a
 * model. */
int cli_detect_crypt_checked(const char *path, oc_crypt_format *out);

/* How cli_load_input loads. Zero-initialised means: external data loaded, model's own
 * directory, serial, no checksum verification. */
typedef struct cli_load_options {
    cli_external external;
    const char *data_dir;          /* .onnx inputs: look for data files here */
    int num_threads;               /* oc_parse_options.num_threads */
    int copy;                      /* copy tensor bytes instead of sharing the mapping */
    int verify_checksums;          /* check `checksum` keys of external data */
    int prefetch;                  /* oc_parse_options.prefetch: read mappings ahead */
    oc_storage_pool *storage_pool; /* copy loads: tensor storage from here (may be NULL) */
    /* Encrypted inputs (ONNXZEC1, ONNXCRY1) are decrypted once, in memory, whether they
     * hold a model or an archive; the passphrase as passphrase.h says. */
    const char *command;        /* for the usage error when there is no passphrase source */
    const char *key_file;       /* --key-file, or NULL */
    oc_crypt_format *crypt_out; /* may be NULL: receives the input's encryption (or NONE) */
    uint64_t *size_out;         /* may be NULL: receives the input's size (0: not known) */
    /* Not NULL: the weights stay where they are (oz_open_deferred: an archive's entries, a
     * model's data files), and *deferred receives them, for oz_weights_fetch when saving
     * (NULL after a failure). */
    oz_weights **deferred;
} cli_load_options;

/* Loads a .onnx file or an .onnxz archive (told apart by content), or an encrypted file
 * holding either (*form, OZ_FORM_ONNX or OZ_FORM_ONNXZ: what was inside), the way every command
 * does: mapped, tensors sharing the mapping (no_copy) unless opts->copy, so opening even a
 * large model costs little and tensor bytes go from the input's mapping to an output
 * without a copy in memory. *form (may be NULL) receives the input's form. The loading
 * is oz_open's (onnxz/open.h), with the passphrase asked for only once the file is
 * known to be encrypted. On failure prints the error and returns CLI_EXIT_FAILURE. */
int cli_load_input(const char *path, const cli_load_options *opts, int verbosity, oc_model **out,
                   oz_form *form);

/* How a command opens a reader. */
typedef struct cli_reader_options {
    const char *command;  /* the command, for the passphrase prompt and its messages */
    const char *key_file; /* --key-file, or NULL */
    bool skip_data_files; /* oz_reader_options.skip_data_files */
    const char *trust;    /* --trust: oz_reader_options.trust, or NULL */
} cli_reader_options;

/* Opens a file or URL in any form for reading its tensors one at a time (onnxz/reader.h),
 * with the tool's memory budget and HTTP settings, and the passphrase asked for (for
 * o->command) only once the file is known to be encrypted. On failure prints the error
 * and returns CLI_EXIT_FAILURE. */
int cli_reader_open(const char *path, const cli_reader_options *o, int verbosity, oz_reader **out);

/* An empty regular file is no model, though it decodes as one with nothing set: prints
 * "FILE: empty file, not an ONNX model" and returns CLI_EXIT_FAILURE; else CLI_EXIT_OK
 * (a file that cannot be read passes: its loader says why). oz_open, and so cli_load_input,
 * applies the same rule (OZ_KIND_EMPTY). */
int cli_refuse_empty(const char *path);

/* a URL is read, never written. Prints "PATH: is a URL: onnxz writes local files
 * only" and returns CLI_EXIT_FAILURE when path (an output: a file, a directory, a data
 * file's location, a file edited in place) is an http(s) URL; else CLI_EXIT_OK (NULL
 * too). Commands call it before they read anything, so that no request is made. */
int cli_refuse_url_output(const char *path);

/* cli_load_input with the default options but `external`. */
int cli_load_model(const char *path, cli_external external, int verbosity, oc_model **out);

#endif
