/*
 * ocrypt.c - a command-line driver over onnxcore/crypto.h for crypto_test.py.
 *
 *   ocrypt [options] encrypt IN OUT       oc_crypt_encrypt_file (--mem: _encrypt_memory)
 *   ocrypt [options] decrypt IN OUT       oc_crypt_decrypt_file (--mem: _decrypt_memory)
 *   ocrypt detect IN                      prints ONNXZEC1, ONNXCRY1 or none
 *   ocrypt [options] load IN              oc_crypt_load_model_file (--mem: _memory); prints
 *                                         the graph name, the initializer count and how
 *                                         many initializers share the decrypted buffer
 *   ocrypt [options] save-model IN OUT    loads a plain .onnx, saves it encrypted
 *   ocrypt [options] sweep IN             decrypts IN with every single bit flipped and
 *                                         cut at every length, in-process; prints one hex
 *                                         status digit per case: {"flips": "...", "cuts": "..."}
 *   ocrypt [options] pattern-encrypt OUT SIZE   streams SIZE bytes of a cheap pattern
 *   ocrypt [options] pattern-decrypt IN SIZE    streams IN back and checks the pattern
 *
 * Options: --pass S | --pass-hex HEX (default "onnxz test passphrase"), --format zec1|cry1,
 * --iterations N, --chunk N, --max-iterations N, --mem, --no-copy.
 * Errors go to stderr as "ocrypt: <status> (<code>) at <offset>: <message>" and the exit
 * status is the oc_status number (2 for usage errors).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <onnxcore/crypto.h>
#include <onnxcore/crypto_model.h>
#include <onnxcore/onnxcore.h>

#include "testdir.h"

static uint8_t pass[4096];
static size_t pass_len;
static oc_crypt_options copts;
static int use_mem, no_copy;

static int fail(oc_status st, const oc_error *err) {
    fprintf(stderr, "ocrypt: %s (%d) at %lld: %s\n", oc_status_name(st), (int)st,
            err->offset == OC_NO_OFFSET ? -1LL : (long long)err->offset, err->message);
    return (int)st;
}

static int usage(void) {
    fprintf(stderr, "usage: ocrypt [--pass S|--pass-hex H] [--format zec1|cry1] [--iterations N] "
                    "[--chunk N] [--max-iterations N] [--mem] [--no-copy] COMMAND ARGS...\n");
    return 2;
}

/* Peak resident memory of this process image: VmHWM (ru_maxrss would include the parent's
 * pages at fork time, which exec does not reset). */
static long maxrss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kb = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    if (kb < 0) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        kb = ru.ru_maxrss;
    }
    return kb;
}

static int cmd_encrypt(const char *in, const char *out) {
    oc_error err;
    oc_error_clear(&err);
    oc_status st;
    if (!use_mem) {
        st = oc_crypt_encrypt_file(in, out, pass, pass_len, &copts, &err);
        return st == OC_OK ? 0 : fail(st, &err);
    }
    size_t n = 0;
    uint64_t esize = 0;
    uint8_t *plain = td_read(in, &n);
    void *enc = NULL;
    if (!plain) return fprintf(stderr, "ocrypt: cannot read %s\n", in), 2;
    st = oc_crypt_encrypt_memory(plain, n, pass, pass_len, &copts, &enc, &esize, &err);
    free(plain);
    if (st != OC_OK) return fail(st, &err);
    int rc = td_write(out, enc, esize);
    free(enc);
    return rc ? 2 : 0;
}

static int cmd_decrypt(const char *in, const char *out) {
    oc_error err;
    oc_error_clear(&err);
    oc_status st;
    if (!use_mem) {
        st = oc_crypt_decrypt_file(in, out, pass, pass_len, &copts, &err);
        return st == OC_OK ? 0 : fail(st, &err);
    }
    size_t n = 0;
    uint8_t *enc = td_read(in, &n);
    oc_bytes b = {0};
    if (!enc) return fprintf(stderr, "ocrypt: cannot read %s\n", in), 2;
    st = oc_crypt_decrypt_memory(enc, n, pass, pass_len, &copts, &b, &err);
    free(enc);
    if (st != OC_OK) return fail(st, &err);
    int rc = td_write(out, b.data, b.size);
    oc_bytes_release(&b);
    return rc ? 2 : 0;
}

static int cmd_load(const char *in) {
    oc_error err;
    oc_error_clear(&err);
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.no_copy = no_copy;
    oc_model *m = NULL;
    oc_status st;
    if (use_mem) {
        size_t n = 0;
        uint8_t *enc = td_read(in, &n);
        if (!enc) return fprintf(stderr, "ocrypt: cannot read %s\n", in), 2;
        st = oc_crypt_load_model_memory(enc, n, pass, pass_len, &copts, &po, &m, &err);
        free(enc);
    } else {
        st = oc_crypt_load_model_file(in, pass, pass_len, &copts, &po, &m, &err);
    }
    if (st != OC_OK) return fail(st, &err);
    const onnx_ModelProto *p = oc_model_proto(m);
    uint64_t inits = p->graph ? p->graph->initializer.count : 0, shared = 0;
    for (uint64_t i = 0; i < inits; i++)
        shared += p->graph->initializer.items[i]->raw_data.mode == OC_BYTES_SHARED;
    printf("graph=%.*s initializers=%llu shared=%llu\n", p->graph ? (int)p->graph->name.size : 0,
           p->graph ? p->graph->name.data : "", (unsigned long long)inits,
           (unsigned long long)shared);
    oc_model_free(m);
    return 0;
}

static int cmd_save_model(const char *in, const char *out) {
    oc_error err;
    oc_error_clear(&err);
    oc_model *m = NULL;
    oc_status st = oc_model_load_file(in, NULL, &m, &err);
    if (st != OC_OK) return fail(st, &err);
    if (use_mem) {
        void *enc = NULL;
        uint64_t n = 0;
        st = oc_crypt_save_model_memory(m, pass, pass_len, &copts, &enc, &n, &err);
        if (st == OC_OK && td_write(out, enc, n) != 0) st = OC_ERR_IO;
        free(enc);
    } else {
        st = oc_crypt_save_model_file(m, out, pass, pass_len, &copts, NULL, &err);
    }
    oc_model_free(m);
    return st == OC_OK ? 0 : fail(st, &err);
}

static int cmd_sweep(const char *in) {
    size_t n = 0;
    uint8_t *f = td_read(in, &n);
    if (!f) return fprintf(stderr, "ocrypt: cannot read %s\n", in), 2;
    uint8_t *g = malloc(n ? (size_t)n : 1);
    static const char hex[] = "0123456789abcdef";
    oc_error err;
    printf("{\"flips\": \"");
    for (uint64_t pos = 0; pos < n; pos++) {
        for (int bit = 0; bit < 8; bit++) {
            memcpy(g, f, (size_t)n);
            g[pos] ^= (uint8_t)(1u << bit);
            oc_bytes b = {0};
            oc_status st = oc_crypt_decrypt_memory(g, n, pass, pass_len, &copts, &b, &err);
            oc_bytes_release(&b);
            putchar(hex[st & 15]);
        }
    }
    printf("\", \"cuts\": \"");
    for (uint64_t len = 0; len < n; len++) {
        oc_bytes b = {0};
        oc_status st = oc_crypt_decrypt_memory(f, len, pass, pass_len, &copts, &b, &err);
        oc_bytes_release(&b);
        putchar(hex[st & 15]);
    }
    printf("\"}\n");
    free(g);
    free(f);
    return 0;
}

/* The pattern: byte o is ((o mod 1 MiB) * 7 + o / 1 MiB) mod 256. */
#define BLOCK ((uint64_t)1 << 20)

static void pattern_block(uint8_t *buf, uint64_t block) {
    for (uint64_t r = 0; r < BLOCK; r++) buf[r] = (uint8_t)(r * 7 + block);
}

static oc_status write_fd(void *ctx, const void *data, uint64_t size, oc_error *err) {
    int fd = *(int *)ctx;
    const uint8_t *p = data;
    while (size) {
        ssize_t w = write(fd, p, size > (1u << 30) ? (1u << 30) : (size_t)size);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return oc_error_set_errno(err, errno, "write");
        p += w;
        size -= (uint64_t)w;
    }
    return OC_OK;
}

static int cmd_pattern_encrypt(const char *out, uint64_t size) {
    oc_error err;
    oc_error_clear(&err);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return perror(out), 2;
    uint8_t *buf = malloc(BLOCK);
    oc_crypt_writer *w = NULL;
    oc_status st = oc_crypt_writer_open(write_fd, &fd, pass, pass_len, &copts, &w, &err);
    for (uint64_t done = 0, block = 0; st == OC_OK && done < size; block++) {
        uint64_t n = size - done < BLOCK ? size - done : BLOCK;
        pattern_block(buf, block);
        st = oc_crypt_writer_write(w, buf, n, &err);
        done += n;
    }
    if (st == OC_OK) st = oc_crypt_writer_finish(w, &err);
    oc_crypt_writer_free(w);
    free(buf);
    if (close(fd) != 0 && st == OC_OK) st = OC_ERR_IO;
    if (st != OC_OK) return fail(st, &err);
    printf("ok bytes=%llu maxrss_kb=%ld\n", (unsigned long long)size, maxrss_kb());
    return 0;
}

typedef struct checker {
    uint64_t offset;
    uint64_t bad;
    uint8_t *block;
    uint64_t block_no;
} checker;

static oc_status check_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    (void)err;
    checker *c = ctx;
    const uint8_t *p = data;
    while (size) {
        uint64_t block = c->offset / BLOCK, r = c->offset % BLOCK;
        if (block != c->block_no) {
            pattern_block(c->block, block);
            c->block_no = block;
        }
        uint64_t n = BLOCK - r < size ? BLOCK - r : size;
        if (memcmp(p, c->block + r, (size_t)n) != 0) c->bad++;
        p += n;
        size -= n;
        c->offset += n;
    }
    return OC_OK;
}

static oc_status read_fd(void *ctx, void *buf, uint64_t cap, uint64_t *got, oc_error *err) {
    int fd = *(int *)ctx;
    for (;;) {
        ssize_t r = read(fd, buf, cap > (1u << 30) ? (1u << 30) : (size_t)cap);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return oc_error_set_errno(err, errno, "read");
        *got = (uint64_t)r;
        return OC_OK;
    }
}

static int cmd_pattern_decrypt(const char *in, uint64_t size) {
    oc_error err;
    oc_error_clear(&err);
    int fd = open(in, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return perror(in), 2;
    checker c = {0, 0, malloc(BLOCK), UINT64_MAX};
    oc_status st =
        oc_crypt_decrypt_stream(read_fd, &fd, check_write, &c, pass, pass_len, &copts, &err);
    close(fd);
    free(c.block);
    if (st != OC_OK) return fail(st, &err);
    if (c.offset != size || c.bad) {
        fprintf(stderr, "ocrypt: pattern mismatch: %llu bytes (want %llu), %llu bad pieces\n",
                (unsigned long long)c.offset, (unsigned long long)size, (unsigned long long)c.bad);
        return 1;
    }
    printf("ok bytes=%llu maxrss_kb=%ld\n", (unsigned long long)size, maxrss_kb());
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int main(int argc, char **argv) {
    static const char def[] = "onnxz test passphrase";
    memcpy(pass, def, sizeof def - 1);
    pass_len = sizeof def - 1;
    oc_crypt_options_init(&copts);
    int i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--mem")) {
            use_mem = 1;
        } else if (!strcmp(o, "--no-copy")) {
            no_copy = 1;
        } else if (!v) {
            return usage();
        } else if (!strcmp(o, "--pass")) {
            pass_len = strlen(v);
            if (pass_len > sizeof pass) return usage();
            memcpy(pass, v, pass_len);
            i++;
        } else if (!strcmp(o, "--pass-hex")) {
            size_t n = strlen(v);
            if (n % 2 || n / 2 > sizeof pass) return usage();
            for (size_t k = 0; k < n / 2; k++) {
                int hi = hexval(v[2 * k]), lo = hexval(v[2 * k + 1]);
                if (hi < 0 || lo < 0) return usage();
                pass[k] = (uint8_t)(hi * 16 + lo);
            }
            pass_len = n / 2;
            i++;
        } else if (!strcmp(o, "--format")) {
            copts.format = !strcmp(v, "cry1")   ? OC_CRYPT_ONNXCRY1
                           : !strcmp(v, "zec1") ? OC_CRYPT_ONNXZEC1
                                                : (oc_crypt_format)99;
            i++;
        } else if (!strcmp(o, "--iterations")) {
            copts.iterations = (uint32_t)strtoul(v, NULL, 10);
            i++;
        } else if (!strcmp(o, "--chunk")) {
            copts.chunk_size = (uint32_t)strtoul(v, NULL, 10);
            i++;
        } else if (!strcmp(o, "--max-iterations")) {
            copts.max_iterations = (uint32_t)strtoul(v, NULL, 10);
            i++;
        } else {
            return usage();
        }
    }
    if (i >= argc) return usage();
    const char *cmd = argv[i];
    int nargs = argc - i - 1;
    char **a = argv + i + 1;
    if (!strcmp(cmd, "encrypt") && nargs == 2) return cmd_encrypt(a[0], a[1]);
    if (!strcmp(cmd, "decrypt") && nargs == 2) return cmd_decrypt(a[0], a[1]);
    if (!strcmp(cmd, "load") && nargs == 1) return cmd_load(a[0]);
    if (!strcmp(cmd, "save-model") && nargs == 2) return cmd_save_model(a[0], a[1]);
    if (!strcmp(cmd, "sweep") && nargs == 1) return cmd_sweep(a[0]);
    if (!strcmp(cmd, "pattern-encrypt") && nargs == 2)
        return cmd_pattern_encrypt(a[0], strtoull(a[1], NULL, 10));
    if (!strcmp(cmd, "pattern-decrypt") && nargs == 2)
        return cmd_pattern_decrypt(a[0], strtoull(a[1], NULL, 10));
    if (!strcmp(cmd, "detect") && nargs == 1) {
        oc_error err;
        oc_crypt_format f;
        oc_status st = oc_crypt_detect_file(a[0], &f, &err);
        if (st != OC_OK) return fail(st, &err);
        printf("%s\n", oc_crypt_format_name(f));
        return 0;
    }
    return usage();
}
