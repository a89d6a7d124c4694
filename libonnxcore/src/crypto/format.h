/*
 * crypt/format.h - inside the encryption component: what the common part (crypt.c, io.c)
 * and the format files (zec1.c, cry1.c) share.
 *
 * The component is a byte-stream transform: it knows passphrases, its two formats and
 * bytes in and out, not what the bytes are (models are model_crypt.c's). Its layers:
 *   backend.h   the primitives (backend_openssl.c or backend_none.c, chosen by CMake)
 *   io.c        pulling bytes from a source; memory and file readers; a buffer sink
 *   zec1.c      ONNXZEC1 (spec/encryption.md C-10..C-45): header, keys, chunks
 *   cry1.c      ONNXCRY1 (C-50..C-56): header, key, CBC stream
 *   crypt.c     onnxcore/crypto.h: detection, options, the writer and the decryption
 *               dispatched to a format by its table below, memory and file forms
 */
#ifndef ONNXCORE_CRYPT_FORMAT_H
#define ONNXCORE_CRYPT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "onnxcore/crypto.h"
#include "crypto/backend.h"
#include "internal/crypt.h"

/* Bytes read or encrypted per step where nothing else fixes the size (ONNXCRY1, file
 * input): bounded memory whatever the total. */
#define OC__CRYPT_PIECE_SIZE ((uint64_t)1 << 20)
/* Both formats: PBKDF2-HMAC-SHA256 with a 16-byte salt gives a 32-byte AES-256 key. */
#define OC__CRYPT_SALT_SIZE 16u
#define OC__CRYPT_KEY_SIZE  OC__CB_AES256_KEY_SIZE

/* ---- input (io.c) ---- */

/* A read callback and how far it has been read. */
typedef struct oc__crypt_source {
    oc_crypt_read_fn read;
    void *ctx;
    uint64_t offset; /* bytes consumed so far: the input offset of the next byte */
} oc__crypt_source;

/* Reads until want bytes or the end of the input; *got says how many came. */
oc_status oc__crypt_fill(oc__crypt_source *s, uint8_t *buf, uint64_t want, uint64_t *got,
                         oc_error *err);

/* oc_crypt_read_fn over a buffer. */
typedef struct oc__crypt_mem_reader {
    const uint8_t *data;
    uint64_t size, pos;
} oc__crypt_mem_reader;
oc_status oc__crypt_mem_read(void *reader, void *buf, uint64_t cap, uint64_t *got, oc_error *err);

/* oc_crypt_read_fn over a file descriptor; path names it in errors. */
typedef struct oc__crypt_fd_reader {
    int fd;
    const char *path;
} oc__crypt_fd_reader;
oc_status oc__crypt_fd_read(void *reader, void *buf, uint64_t cap, uint64_t *got, oc_error *err);

/* ---- formats ---- */

typedef struct oc__crypt_format_ops oc__crypt_format_ops;

/* One writer for both formats: the fields a format does not use stay zero. */
struct oc_crypt_writer {
    const oc__crypt_format_ops *ops;
    oc_write_fn write;
    void *write_ctx;
    oc__cb_cipher *cipher;
    int failed, finished;
    uint8_t header[OC_CRYPT_ZEC1_HEADER_SIZE]; /* ONNXCRY1's 40 bytes fit too */
    uint32_t chunk_size; /* ONNXZEC1; ONNXCRY1 encrypts OC__CRYPT_PIECE_SIZE at a time */
    uint64_t index;      /* ONNXZEC1: the next chunk's */
    uint8_t *plain;      /* ONNXZEC1: the pending chunk, `fill` bytes (chunk_size allocated) */
    uint64_t fill;
    uint8_t *out; /* one encrypted chunk or piece, out_cap bytes */
    uint64_t out_cap;
};

/* What the common part asks of a format. */
struct oc__crypt_format_ops {
    oc_crypt_format format;
    uint32_t header_size;
    /* Fills in the format's fields of p from the options (format and max_iterations are
     * set and checked already) and checks them. */
    oc_status (*resolve)(const oc_crypt_options *o, oc__crypt_params *p, oc_error *err);
    /* The exact size of the encryption of size bytes. */
    oc_status (*encrypted_size)(uint64_t size, const oc__crypt_params *p, uint64_t *out,
                                oc_error *err);
    /* Allocates w's buffers, derives the key, keys w->cipher (allocated) and fills
     * w->header (header_size bytes, written by the caller). Writes nothing. */
    oc_status (*writer_start)(oc_crypt_writer *w, const void *key, size_t key_len,
                              const oc__crypt_params *p, oc_error *err);
    oc_status (*writer_write)(oc_crypt_writer *w, const uint8_t *data, uint64_t size,
                              oc_error *err);
    oc_status (*writer_finish)(oc_crypt_writer *w, oc_error *err);
    /* Decrypts the rest of s (its magic, already read, is given) into write. p holds the
     * reader's max_iterations. */
    oc_status (*decrypt)(oc__crypt_source *s, const uint8_t magic[OC_CRYPT_MAGIC_LEN],
                         oc_write_fn write, void *write_ctx, const void *key, size_t key_len,
                         const oc__crypt_params *p, oc_error *err);
};

extern const oc__crypt_format_ops oc__crypt_zec1;
extern const oc__crypt_format_ops oc__crypt_cry1;

#endif
