/*
 * crypt/crypt.c - onnxcore/crypto.h: encrypted byte streams in the two formats of
 * spec/encryption.md (ONNXZEC1: zec1.c, ONNXCRY1: cry1.c), over the primitives of
 * crypt/backend.h.
 *
 * Encryption is push-style (oc_crypt_writer: plaintext in, ciphertext out through an
 * oc_write_fn), decryption pull-style (an oc_crypt_read_fn in, an oc_write_fn out); the
 * memory and file functions are built on those two, so the memory and file forms are the
 * same bytes. Memory use is one chunk at a time. This file detects formats, resolves
 * options and passphrases and hands the work to the format's table; it knows nothing of
 * what the bytes are (models: model_crypt.c).
 *
 * Built without OpenSSL, detection still works and everything else returns
 * OC_ERR_UNSUPPORTED: each entry point asks the backend first (oc__cb_require).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crypto/format.h"
#include "internal/error.h"
#include "onnxcore/file.h"
#include "internal/onnxcore_atomic.h"
#include "internal/source_file.h"

/* The table of a format; NULL for OC_CRYPT_NONE and unknown values. */
static const oc__crypt_format_ops *format_ops(oc_crypt_format f) {
    switch (f) {
    case OC_CRYPT_ONNXZEC1:
        return &oc__crypt_zec1;
    case OC_CRYPT_ONNXCRY1:
        return &oc__crypt_cry1;
    case OC_CRYPT_NONE:
        break;
    }
    return NULL;
}

/* ======================================================================================
 * Detection (no backend needed)
 * ====================================================================================== */

bool oc_crypt_available(void) { return oc__cb_available() != 0; }

const char *oc_crypt_format_name(oc_crypt_format f) {
    switch (f) {
    case OC_CRYPT_ONNXZEC1:
        return "ONNXZEC1";
    case OC_CRYPT_ONNXCRY1:
        return "ONNXCRY1";
    case OC_CRYPT_NONE:
        break;
    }
    return "none";
}

oc_crypt_format oc_crypt_detect(const void *data, uint64_t size) {
    if (!data || size < OC_CRYPT_MAGIC_LEN) return OC_CRYPT_NONE;
    if (memcmp(data, OC_CRYPT_ZEC1_MAGIC, OC_CRYPT_MAGIC_LEN) == 0) return OC_CRYPT_ONNXZEC1;
    if (memcmp(data, OC_CRYPT_CRY1_MAGIC, OC_CRYPT_MAGIC_LEN) == 0) return OC_CRYPT_ONNXCRY1;
    return OC_CRYPT_NONE;
}

/* 1 when the n (< 8) bytes at p begin one of the magics: an encrypted input cut short. */
static int magic_prefix(const uint8_t *p, size_t n) {
    return n > 0 &&
           (memcmp(p, OC_CRYPT_ZEC1_MAGIC, n) == 0 || memcmp(p, OC_CRYPT_CRY1_MAGIC, n) == 0);
}

oc_status oc_crypt_detect_file(const char *path, oc_crypt_format *out, oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_detect_file: missing argument");
    *out = OC_CRYPT_NONE;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return oc_error_file(err, path, oc__fail_errno(err, errno, "cannot open %s", path));
    uint8_t magic[OC_CRYPT_MAGIC_LEN];
    size_t got = 0;
    oc_status st = oc__read_head(fd, path, magic, sizeof magic, &got, err);
    close(fd);
    OC_FORWARD(st);
    *out = oc_crypt_detect(magic, got);
    /* C-1: a file shorter than a magic that begins one is an encrypted file cut short. */
    if (got < sizeof magic && magic_prefix(magic, got))
        return oc__fail_rule(
            err, OC_ERR_TRUNCATED, got, "C-1",
            "truncated: the file ends inside the magic of an encrypted file (%zu of "
            "%u bytes)",
            got, (unsigned)OC_CRYPT_MAGIC_LEN);
    return OC_OK;
}

/* ======================================================================================
 * Options and passphrases
 * ====================================================================================== */

void oc_crypt_options_init(oc_crypt_options *opts) {
    static const oc_crypt_options defaults = OC_CRYPT_OPTIONS_INIT;
    *opts = defaults;
}

static oc_status resolve_options(const oc_crypt_options *o, oc__crypt_params *r, oc_error *err) {
    r->format = o && o->format ? o->format : OC_CRYPT_ONNXZEC1;
    r->max_iterations =
        o && o->max_iterations ? o->max_iterations : OC_CRYPT_DEFAULT_MAX_ITERATIONS;
    const oc__crypt_format_ops *ops = format_ops(r->format);
    OC_RETURN_ERROR_IF(!ops, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "unknown encryption format %d",
                       (int)r->format);
    OC_RETURN_ERROR_IF(r->max_iterations > INT_MAX, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "max_iterations %u is above %d", r->max_iterations, INT_MAX);
    return ops->resolve(o, r, err);
}

static oc_status check_key(const void *key, size_t key_len, oc_error *err) {
    OC_RETURN_ERROR_IF(!key || key_len == 0, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "an empty passphrase is not accepted");
    OC_RETURN_ERROR_IF(key_len > INT_MAX, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "the passphrase is longer than %d bytes", INT_MAX);
    return OC_OK;
}

oc_status oc__crypt_prepare(const oc_crypt_options *opts, const void *key, size_t key_len,
                            oc__crypt_params *out, oc_error *err) {
    OC_FORWARD(oc__cb_require(err));
    OC_FORWARD(resolve_options(opts, out, err));
    return check_key(key, key_len, err);
}

oc_status oc__crypt_encrypted_size(uint64_t size, const oc__crypt_params *p, uint64_t *out,
                                   oc_error *err) {
    return format_ops(p->format)->encrypted_size(size, p, out, err);
}

/* ======================================================================================
 * Encryption: oc_crypt_writer
 * ====================================================================================== */

oc_status oc__crypt_writer_open(oc_write_fn write, void *write_ctx, const void *key, size_t key_len,
                                const oc__crypt_params *p, oc_crypt_writer **out, oc_error *err) {
    oc_crypt_writer *w = calloc(1, sizeof *w);
    if (!w) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    w->ops = format_ops(p->format);
    w->write = write;
    w->write_ctx = write_ctx;
    oc_status st = oc__cb_cipher_new(&w->cipher, err);
    if (st == OC_OK) st = w->ops->writer_start(w, key, key_len, p, err);
    /* Everything is allocated and derived: only now does anything get written. */
    if (st == OC_OK) st = write(write_ctx, w->header, w->ops->header_size, err);
    if (st != OC_OK) {
        oc_crypt_writer_free(w);
        return st;
    }
    *out = w;
    return OC_OK;
}

oc_status oc_crypt_writer_open(oc_write_fn write, void *write_ctx, const void *key, size_t key_len,
                               const oc_crypt_options *opts, oc_crypt_writer **out, oc_error *err) {
    if (out) *out = NULL;
    OC_FORWARD(oc__cb_require(err));
    if (!write || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_writer_open: missing argument");
    OC_CRYPT_OPTS(opts, err);
    oc__crypt_params p;
    OC_FORWARD(oc__crypt_prepare(opts, key, key_len, &p, err));
    return oc__crypt_writer_open(write, write_ctx, key, key_len, &p, out, err);
}

oc_status oc_crypt_writer_write(void *writer, const void *data, uint64_t size, oc_error *err) {
    oc_crypt_writer *w = writer;
    if (!w || (!data && size) || w->failed || w->finished) {
        OC_FORWARD(oc__cb_require(err)); /* without a backend there is never a writer */
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_writer_write: no writer, no data, or the writer is done");
    }
    oc_status st = w->ops->writer_write(w, data, size, err);
    if (st != OC_OK) w->failed = 1;
    return st;
}

oc_status oc_crypt_writer_finish(oc_crypt_writer *w, oc_error *err) {
    if (!w || w->failed || w->finished) {
        OC_FORWARD(oc__cb_require(err));
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_writer_finish: no writer, or the writer is done");
    }
    oc_status st = w->ops->writer_finish(w, err);
    if (st != OC_OK) w->failed = 1;
    w->finished = 1;
    return st;
}

void oc_crypt_writer_free(oc_crypt_writer *w) {
    if (!w) return;
    oc__cb_cipher_free(w->cipher); /* wipes the key schedule */
    if (w->plain) oc__cb_cleanse(w->plain, w->chunk_size);
    if (w->out) oc__cb_cleanse(w->out, (size_t)w->out_cap);
    free(w->plain);
    free(w->out);
    oc__cb_cleanse(w, sizeof *w);
    free(w);
}

/* ======================================================================================
 * Decryption
 * ====================================================================================== */

static oc_status decrypt_source(oc__crypt_source *s, oc_write_fn write, void *write_ctx,
                                const void *key, size_t key_len, const oc_crypt_options *opts,
                                oc_error *err) {
    oc__crypt_params r = {OC_CRYPT_NONE, 0, 0, OC_CRYPT_DEFAULT_MAX_ITERATIONS};
    oc_crypt_format want = opts ? opts->format : OC_CRYPT_NONE;
    if (opts && opts->max_iterations) r.max_iterations = opts->max_iterations;
    OC_RETURN_ERROR_IF(r.max_iterations > INT_MAX, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "max_iterations %u is above %d", r.max_iterations, INT_MAX);
    OC_RETURN_ERROR_IF(want != OC_CRYPT_NONE && !format_ops(want), err, OC_ERR_INVALID_ARG,
                       OC_NO_OFFSET, "unknown encryption format %d", (int)want);
    OC_FORWARD(check_key(key, key_len, err));
    uint8_t magic[OC_CRYPT_MAGIC_LEN];
    uint64_t got = 0;
    OC_FORWARD(oc__crypt_fill(s, magic, sizeof magic, &got, err));
    oc_crypt_format f = oc_crypt_detect(magic, got);
    if (f == OC_CRYPT_NONE) {
        OC_RETURN_RULE_IF(got < sizeof magic && magic_prefix(magic, (size_t)got), err,
                          OC_ERR_TRUNCATED, got, "C-1",
                          "truncated: the input ends inside the magic");
        return oc__fail_rule(err, OC_ERR_MALFORMED, 0, "C-1",
                             "not an encrypted file: it starts with neither ONNXZEC1 nor ONNXCRY1");
    }
    OC_RETURN_ERROR_IF(want != OC_CRYPT_NONE && f != want, err, OC_ERR_MALFORMED, 0,
                       "the input is %s, not %s as required", oc_crypt_format_name(f),
                       oc_crypt_format_name(want));
    r.format = f;
    return format_ops(f)->decrypt(s, magic, write, write_ctx, key, key_len, &r, err);
}

oc_status oc_crypt_decrypt_stream(oc_crypt_read_fn read, void *read_ctx, oc_write_fn write,
                                  void *write_ctx, const void *key, size_t key_len,
                                  const oc_crypt_options *opts, oc_error *err) {
    if (!read || !write)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_decrypt_stream: missing argument");
    OC_CRYPT_OPTS(opts, err);
    OC_FORWARD(oc__cb_require(err));
    oc__crypt_source s = {read, read_ctx, 0};
    return decrypt_source(&s, write, write_ctx, key, key_len, opts, err);
}

/* ======================================================================================
 * Memory
 * ====================================================================================== */

/* Opens a writer for p into sink, feeds it size bytes at data and finishes it. */
static oc_status encrypt_all(const void *data, uint64_t size, oc_write_fn write, void *ctx,
                             const void *key, size_t key_len, const oc__crypt_params *p,
                             oc_error *err) {
    oc_crypt_writer *w = NULL;
    OC_FORWARD(oc__crypt_writer_open(write, ctx, key, key_len, p, &w, err));
    oc_status st = oc_crypt_writer_write(w, data, size, err);
    if (st == OC_OK) st = oc_crypt_writer_finish(w, err);
    oc_crypt_writer_free(w);
    return st;
}

oc_status oc_crypt_encrypt_memory(const void *data, uint64_t size, const void *key, size_t key_len,
                                  const oc_crypt_options *opts, void **out, uint64_t *out_size,
                                  oc_error *err) {
    if (!out || !out_size || (!data && size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_encrypt_memory: missing argument");
    *out = NULL;
    *out_size = 0;
    OC_CRYPT_OPTS(opts, err);
    oc__crypt_params p;
    uint64_t total = 0;
    OC_FORWARD(oc__crypt_prepare(opts, key, key_len, &p, err));
    OC_FORWARD(oc__crypt_encrypted_size(size, &p, &total, err));
    OC_RETURN_ERROR_IF(total > SIZE_MAX, err, OC_ERR_LIMIT, OC_NO_OFFSET, "input too large");
    oc__crypt_buffer sink;
    OC_FORWARD(oc__crypt_buffer_open(&sink, total, err));
    oc_status st = encrypt_all(data, size, oc__crypt_buffer_write, &sink, key, key_len, &p, err);
    return oc__crypt_buffer_finish(&sink, st, out, out_size, err);
}

static void release_buffer(void *p) { oc_bytes_free_buffer(p); }

/* Decrypts size bytes at data into a new shared span. */
static oc_status decrypt_to_span(const void *data, uint64_t size, const void *key, size_t key_len,
                                 const oc_crypt_options *opts, oc_bytes *out, oc_error *err) {
    /* The plaintext is never longer than the input after its header. */
    const oc__crypt_format_ops *ops = format_ops(oc_crypt_detect(data, size));
    uint64_t header = ops ? ops->header_size : OC_CRYPT_ZEC1_HEADER_SIZE;
    uint64_t cap = size > header ? size - header : 0;
    oc__crypt_buffer sink = {NULL, cap, 0};
    if (cap && !(sink.buf = oc_bytes_alloc_buffer(cap)))
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc__crypt_mem_reader mr = {data, size, 0};
    oc__crypt_source s = {oc__crypt_mem_read, &mr, 0};
    oc_status st = decrypt_source(&s, oc__crypt_buffer_write, &sink, key, key_len, opts, err);
    oc_owner *owner = NULL;
    if (st == OC_OK && sink.len && !(owner = oc_owner_new(release_buffer, sink.buf)))
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (st != OC_OK || !sink.len) {
        oc_bytes_free_buffer(sink.buf);
        return st;
    }
    oc_bytes_set_shared(out, sink.buf, sink.len, owner);
    oc_owner_unref(owner); /* the span holds the buffer now */
    return OC_OK;
}

oc_status oc_crypt_decrypt_memory(const void *data, uint64_t size, const void *key, size_t key_len,
                                  const oc_crypt_options *opts, oc_bytes *out, oc_error *err) {
    if (!out || (!data && size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_decrypt_memory: missing argument");
    oc_bytes_release(out);
    OC_CRYPT_OPTS(opts, err);
    OC_FORWARD(oc__cb_require(err));
    return decrypt_to_span(data, size, key, key_len, opts, out, err);
}

/* ======================================================================================
 * Files
 * ====================================================================================== */

oc_status oc__crypt_decrypt_file_span(const char *path, const void *key, size_t key_len,
                                      const oc_crypt_options *opts, oc_bytes *out,
                                      oc_crypt_format *format, oc_error *err) {
    OC_CRYPT_OPTS(opts, err);
    OC_FORWARD(oc__cb_require(err));
    oc_mapped map;
    OC_FORWARD(oc_map_file(path, &map, err));
    if (format) *format = oc_crypt_detect(map.data, map.size);
    oc_status st = decrypt_to_span(map.data, map.size, key, key_len, opts, out, err);
    oc_owner_unref(map.owner);
    return st;
}

oc_status oc_crypt_decrypt_file_to_memory(const char *path, const void *key, size_t key_len,
                                          const oc_crypt_options *opts, oc_bytes *out,
                                          oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_decrypt_file_to_memory: missing argument");
    oc_bytes_release(out);
    return oc__crypt_decrypt_file_span(path, key, key_len, opts, out, NULL, err);
}

static oc_status open_input(const char *path, int *fd, oc_error *err) {
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0)
        return oc_error_file(err, path, oc__fail_errno(err, errno, "cannot open %s", path));
    return OC_OK;
}

/* Streams the file through a writer into sink. */
static oc_status encrypt_fd(int fd, const char *path, oc_write_fn write, void *ctx, const void *key,
                            size_t key_len, const oc__crypt_params *p, oc_error *err) {
    uint8_t *buf = malloc(OC__CRYPT_PIECE_SIZE);
    if (!buf) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_crypt_writer *w = NULL;
    oc_status st = oc__crypt_writer_open(write, ctx, key, key_len, p, &w, err);
    oc__crypt_fd_reader fr = {fd, path};
    while (st == OC_OK) {
        uint64_t got = 0;
        st = oc__crypt_fd_read(&fr, buf, OC__CRYPT_PIECE_SIZE, &got, err);
        if (st != OC_OK || got == 0) break;
        st = oc_crypt_writer_write(w, buf, got, err);
    }
    if (st == OC_OK) st = oc_crypt_writer_finish(w, err);
    oc_crypt_writer_free(w);
    free(buf);
    return st;
}

oc_status oc_crypt_encrypt_file(const char *in_path, const char *out_path, const void *key,
                                size_t key_len, const oc_crypt_options *opts, oc_error *err) {
    if (!in_path || !out_path)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_encrypt_file: missing argument");
    OC_CRYPT_OPTS(opts, err);
    oc__crypt_params p;
    OC_FORWARD(oc__crypt_prepare(opts, key, key_len, &p, err));
    int fd;
    OC_FORWARD(open_input(in_path, &fd, err));
    oc_atomic_file af;
    oc_status st = oc_atomic_open(&af, out_path, opts && opts->no_overwrite, err);
    if (st == OC_OK) {
        st = encrypt_fd(fd, in_path, oc_atomic_write, &af, key, key_len, &p, err);
        if (st == OC_OK)
            st = oc_atomic_commit(&af, err);
        else
            oc_atomic_abort(&af);
    }
    close(fd);
    return st;
}

oc_status oc_crypt_decrypt_file(const char *in_path, const char *out_path, const void *key,
                                size_t key_len, const oc_crypt_options *opts, oc_error *err) {
    if (!in_path || !out_path)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_decrypt_file: missing argument");
    OC_CRYPT_OPTS(opts, err);
    OC_FORWARD(oc__cb_require(err));
    OC_FORWARD(check_key(key, key_len, err));
    int fd;
    OC_FORWARD(open_input(in_path, &fd, err));
    oc_atomic_file af;
    oc_status st = oc_atomic_open(&af, out_path, opts && opts->no_overwrite, err);
    if (st == OC_OK) {
        oc__crypt_fd_reader fr = {fd, in_path};
        oc__crypt_source s = {oc__crypt_fd_read, &fr, 0};
        st = decrypt_source(&s, oc_atomic_write, &af, key, key_len, opts, err);
        if (st == OC_OK)
            st = oc_atomic_commit(&af, err);
        else
            oc_atomic_abort(&af); /* no unauthenticated plaintext is left behind */
    }
    close(fd);
    return st;
}
