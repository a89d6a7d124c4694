/*
 * tools/passphrase.c - the passphrase: key file, ONNXZ_KEY, or a prompt on /dev/tty.
 */
#include "passphrase.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"

void cli_wipe(void *p, size_t n) {
    /* A volatile pointer: the stores cannot be proved dead and dropped. */
    volatile unsigned char *v = p;
    while (n--) *v++ = 0;
}

void cli_key_free(cli_key *k) {
    if (!k) return;
    if (k->data) {
        cli_wipe(k->data, k->len + 1);
        free(k->data);
    }
    k->data = NULL;
    k->len = 0;
}

static oc_status discard_output(void *ctx, const void *data, uint64_t size, oc_error *err) {
    (void)ctx, (void)data, (void)size, (void)err;
    return OC_OK;
}

int cli_require_crypto(const char *file) {
    oc_crypt_writer *w = NULL;
    oc_error err;
    if (oc_crypt_available()) return CLI_EXIT_OK;
    /* Ask the library, so that the message is its own. */
    oc_error_clear(&err);
    if (oc_crypt_writer_open(discard_output, NULL, "x", 1, NULL, &w, &err) == OC_OK) {
        oc_crypt_writer_free(w);
        return cli_fail_msg(file, "encryption is not available in this build");
    }
    return cli_fail(file, &err);
}

/* Reads the key file: at most CLI_KEY_MAX bytes, one trailing "\n" (or "\r\n") dropped. */
static int key_from_file(const char *path, cli_key *out) {
    char *buf = malloc(CLI_KEY_MAX + 2);
    size_t len = 0;
    ssize_t got;
    int fd, e;
    if (!buf) return cli_fail_msg(path, "out of memory");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        e = errno;
        free(buf);
        return cli_fail_msg(path, "cannot open key file: %s", strerror(e));
    }
    for (;;) {
        got = read(fd, buf + len, CLI_KEY_MAX + 1 - len);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        len += (size_t)got;
        if (len > CLI_KEY_MAX) break;
    }
    e = errno;
    close(fd);
    if (got < 0) {
        cli_wipe(buf, len);
        free(buf);
        return cli_fail_msg(path, "cannot read key file: %s", strerror(e));
    }
    if (len > CLI_KEY_MAX) {
        cli_wipe(buf, len);
        free(buf);
        return cli_fail_msg(path, "key file is larger than %u bytes", CLI_KEY_MAX);
    }
    if (len && buf[len - 1] == '\n') {
        len--;
        if (len && buf[len - 1] == '\r') len--;
    }
    if (len == 0) {
        cli_wipe(buf, CLI_KEY_MAX + 2);
        free(buf);
        return cli_fail_msg(path, "key file is empty");
    }
    buf[len] = '\0';
    out->data = buf;
    out->len = len;
    return CLI_EXIT_OK;
}

static int key_from_env(const char *value, cli_key *out) {
    size_t len = strlen(value);
    if (len == 0) return cli_fail_msg(CLI_KEY_ENV, "the environment variable is empty");
    if (len > CLI_KEY_MAX)
        return cli_fail_msg(CLI_KEY_ENV, "the passphrase is longer than %u bytes", CLI_KEY_MAX);
    out->data = malloc(len + 1);
    if (!out->data) return cli_fail_msg(CLI_KEY_ENV, "out of memory");
    memcpy(out->data, value, len + 1);
    out->len = len;
    return CLI_EXIT_OK;
}

static void tty_puts(int fd, const char *s) {
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

/* One line from the terminal with echo off; the line break is not kept. Returns 0, or -1
 * with errno (EOF before any line: ENODATA; too long: E2BIG). */
static int tty_read_line(int fd, const char *prompt, char *buf, size_t cap, size_t *len) {
    struct termios old, quiet;
    sigset_t block, saved;
    int have_termios = tcgetattr(fd, &old) == 0, rc = 0, e = 0;
    size_t n = 0;
    char c;
    /* No ^C or ^Z while echo is off: the terminal must not be left silent. */
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTSTP);
    sigaddset(&block, SIGQUIT);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGHUP);
    sigprocmask(SIG_BLOCK, &block, &saved);
    if (have_termios) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK | ECHONL);
        quiet.c_lflag |= ICANON;
        tcsetattr(fd, TCSAFLUSH, &quiet);
    }
    tty_puts(fd, prompt);
    for (;;) {
        ssize_t got = read(fd, &c, 1);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            rc = -1;
            e = errno;
            break;
        }
        if (got == 0) {
            if (n == 0) {
                rc = -1;
                e = ENODATA;
            }
            break;
        }
        if (c == '\n' || c == '\r') break;
        if (n + 1 >= cap) {
            rc = -1;
            e = E2BIG;
            continue; /* read to the end of the line so nothing is left for the shell */
        }
        buf[n++] = c;
    }
    c = 0;
    tty_puts(fd, "\n");
    if (have_termios) tcsetattr(fd, TCSAFLUSH, &old);
    sigprocmask(SIG_SETMASK, &saved, NULL);
    *len = n;
    errno = e;
    return rc;
}

static int key_from_tty(const char *command, const char *file, bool confirm, cli_key *out) {
    char prompt[512];
    char *a = NULL, *b = NULL;
    size_t alen = 0, blen = 0;
    int rc = CLI_EXIT_OK, fd;
    fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 || !isatty(fd)) {
        if (fd >= 0) close(fd);
        return cli_usage_error(command,
                               "no passphrase: use --key-file FILE or set %s "
                               "(there is no terminal to ask on)",
                               CLI_KEY_ENV);
    }
    a = malloc(CLI_KEY_MAX + 1);
    b = confirm ? malloc(CLI_KEY_MAX + 1) : NULL;
    if (!a || (confirm && !b)) {
        rc = cli_fail_msg(file, "out of memory");
        goto done;
    }
    snprintf(prompt, sizeof prompt, "Passphrase for %s: ", file);
    if (tty_read_line(fd, prompt, a, CLI_KEY_MAX + 1, &alen) != 0) {
        rc = errno == E2BIG ? cli_fail_msg("/dev/tty", "the passphrase is too long")
                            : cli_fail_msg("/dev/tty", "no passphrase was read");
        goto done;
    }
    if (alen == 0) {
        rc = cli_fail_msg("/dev/tty", "the passphrase is empty");
        goto done;
    }
    if (confirm) {
        if (tty_read_line(fd, "Repeat the passphrase: ", b, CLI_KEY_MAX + 1, &blen) != 0 ||
            blen != alen || memcmp(a, b, alen) != 0) {
            rc = cli_fail_msg("/dev/tty", "the passphrases do not match");
            goto done;
        }
    }
    a[alen] = '\0';
    out->data = a;
    out->len = alen;
    a = NULL;
done:
    if (a) {
        cli_wipe(a, CLI_KEY_MAX + 1);
        free(a);
    }
    if (b) {
        cli_wipe(b, CLI_KEY_MAX + 1);
        free(b);
    }
    close(fd);
    return rc;
}

int cli_key_get(const char *command, const char *key_file, const char *file, bool confirm,
                int verbosity, cli_key *out) {
    const char *env;
    out->data = NULL;
    out->len = 0;
    if (key_file) {
        cli_note(verbosity, CLI_VERBOSE, "passphrase from the key file %s", key_file);
        return key_from_file(key_file, out);
    }
    env = getenv(CLI_KEY_ENV);
    if (env) {
        cli_note(verbosity, CLI_VERBOSE, "passphrase from %s", CLI_KEY_ENV);
        return key_from_env(env, out);
    }
    return key_from_tty(command, file, confirm, out);
}

int cli_refuse_argv_key(const char *command, const bool *seen, int key_opt, int pass_opt) {
    if (seen[key_opt] || seen[pass_opt])
        return cli_usage_error(command,
                               "the passphrase is never taken from the command line "
                               "(other users can read it); use --key-file FILE or set %s",
                               CLI_KEY_ENV);
    return CLI_EXIT_OK;
}

int cli_parse_crypt_options(const char *command, const char *format, const char *iterations,
                            const char *chunk_size, oc_crypt_options *o) {
    long v;
    uint64_t size;
    int rc;
    if (format) {
        if (strcasecmp(format, "onnxzec1") == 0)
            o->format = OC_CRYPT_ONNXZEC1;
        else if (strcasecmp(format, "onnxcry1") == 0)
            o->format = OC_CRYPT_ONNXCRY1;
        else
            return cli_usage_error(command,
                                   "--format '%s': use onnxzec1 (the default) or "
                                   "onnxcry1",
                                   format);
    }
    if (iterations) {
        if (o->format == OC_CRYPT_ONNXCRY1)
            return cli_usage_error(command,
                                   "--iterations applies to onnxzec1; onnxcry1 "
                                   "always uses %u",
                                   OC_CRYPT_CRY1_ITERATIONS);
        rc = cli_parse_int(command, "iterations", iterations, 1,
                           (long)OC_CRYPT_DEFAULT_MAX_ITERATIONS, &v);
        if (rc != CLI_EXIT_OK) return rc;
        o->iterations = (uint32_t)v;
    }
    if (chunk_size) {
        if (o->format == OC_CRYPT_ONNXCRY1)
            return cli_usage_error(command, "--chunk-size applies to onnxzec1 only");
        rc = cli_parse_size(command, "chunk-size", chunk_size, &size);
        if (rc != CLI_EXIT_OK) return rc;
        if (size < OC_CRYPT_MIN_CHUNK_SIZE || size > OC_CRYPT_MAX_CHUNK_SIZE)
            return cli_usage_error(command, "--chunk-size must be from %u to %u bytes",
                                   OC_CRYPT_MIN_CHUNK_SIZE, OC_CRYPT_MAX_CHUNK_SIZE);
        o->chunk_size = (uint32_t)size;
    }
    return CLI_EXIT_OK;
}
