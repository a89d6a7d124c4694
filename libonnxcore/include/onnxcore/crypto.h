/*
 * onnxcore/crypto.h - encrypted models and files (spec/encryption.md).
 *
 * Two formats, told apart by their first eight bytes:
 *
 *   ONNXZEC1  ours, the default for new files: AES-256-GCM over fixed-size chunks (1 MiB
 *             by default), each authenticated together with the file header, its own
 *             position and a final-chunk flag; PBKDF2-HMAC-SHA256 with a stored iteration
 *             count (600,000 by default). A wrong passphrase, a flipped bit, truncation
 *             anywhere, reordered, duplicated or missing chunks and appended bytes are each
 *             reported with their own status (spec rules C-1..C-62). Streams in bounded
 *             memory, any size.
 *   ONNXCRY1  onnx_light's format, read and written for compatibility: "ONNXCRY1", a
 *             16-byte salt, a 16-byte IV, then AES-256-CBC (PKCS#7) of the payload, with
 *             PBKDF2-HMAC-SHA256, 100,000 iterations. It has no integrity check: a wrong
 *             passphrase is caught only by the padding check, which lets about one wrong
 *             passphrase in 256 through; the garbage then fails to decode as a model.
 *
 * Keys are passphrases: `key` points at key_len bytes (any bytes; not NUL-terminated;
 * key_len 0 is refused). Derived key material is wiped with OPENSSL_cleanse after use; the
 * passphrase itself belongs to the caller.
 *
 * Built without OpenSSL (cmake -DONNXZ_WITH_OPENSSL=OFF), every function that encrypts or
 * decrypts returns OC_ERR_UNSUPPORTED ("built without OpenSSL"); format detection
 * (oc_crypt_detect*, and oc_crypt_is_zip in crypto_model.h) still works, so a caller can say what a file is.
 *
 * Errors (spec/encryption.md lists them per rule): OC_ERR_BAD_KEY wrong passphrase;
 * OC_ERR_CHECKSUM a damaged header or a chunk that fails authentication; OC_ERR_TRUNCATED
 * the input ends early (inside the header, inside a chunk, or before the final chunk);
 * OC_ERR_INCONSISTENT chunks out of order, duplicated or missing; OC_ERR_MALFORMED not an
 * encrypted file, bytes after the final chunk, or a header field out of range;
 * OC_ERR_UNSUPPORTED a later format version or an unknown cipher or KDF; OC_ERR_LIMIT an
 * iteration count above the reader's limit. err->offset is the input offset of the fault.
 *
 * The model-level calls (encrypt a model, decrypt and decode one) are in crypto_model.h;
 * this header knows bytes and files only.
 *
 * Threads: no shared state; distinct calls and distinct writers may run concurrently.
 */
#ifndef ONNXCORE_CRYPTO_H
#define ONNXCORE_CRYPTO_H

#include "export.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bytes.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum oc_crypt_format {
    OC_CRYPT_NONE = 0,     /* detection: neither magic; options: the default */
    OC_CRYPT_ONNXZEC1 = 1, /* ours: chunked AES-256-GCM (the default for writing) */
    OC_CRYPT_ONNXCRY1 = 2  /* onnx_light's AES-256-CBC format */
} oc_crypt_format;

#define OC_CRYPT_MAGIC_LEN  8u
#define OC_CRYPT_ZEC1_MAGIC "ONNXZEC1"
#define OC_CRYPT_CRY1_MAGIC "ONNXCRY1"

/* ONNXZEC1 parameters (spec C-10, C-15, C-16). */
#define OC_CRYPT_ZEC1_HEADER_SIZE   72u
#define OC_CRYPT_ZEC1_FRAME_SIZE    16u /* the clear header in front of each chunk */
#define OC_CRYPT_ZEC1_TAG_SIZE      16u
#define OC_CRYPT_DEFAULT_ITERATIONS 600000u
#define OC_CRYPT_DEFAULT_CHUNK_SIZE (1u << 20)
#define OC_CRYPT_MIN_CHUNK_SIZE     64u
#define OC_CRYPT_MAX_CHUNK_SIZE     (64u << 20)
/* Readers refuse ONNXZEC1 headers asking for more PBKDF2 iterations than this (a crafted
 * header must not make a reader spin for minutes); raise it with max_iterations. */
#define OC_CRYPT_DEFAULT_MAX_ITERATIONS 10000000u
/* ONNXCRY1's fixed parameters. */
#define OC_CRYPT_CRY1_HEADER_SIZE 40u
#define OC_CRYPT_CRY1_ITERATIONS  100000u

/* Options grow at their end: fill them with OC_CRYPT_OPTIONS_INIT or oc_crypt_options_init
 * (onnxcore/options.h, "Extending"); a struct whose size is 0 is refused with
 * OC_ERR_INVALID_ARG. NULL means the defaults. */
typedef struct oc_crypt_options {
    size_t size; /* sizeof(oc_crypt_options), set by the initialisers */
    /* Encrypting: OC_CRYPT_NONE (0) writes ONNXZEC1; OC_CRYPT_ONNXCRY1 on request.
     * Decrypting: 0 accepts either format (by magic); otherwise the input must be that
     * format (anything else: OC_ERR_MALFORMED). */
    oc_crypt_format format;
    /* Encrypting ONNXZEC1: PBKDF2 iterations, 0 = OC_CRYPT_DEFAULT_ITERATIONS; at most the
     * reader limit below. ONNXCRY1 always uses 100,000 (another non-zero value:
     * OC_ERR_INVALID_ARG). */
    uint32_t iterations;
    /* Encrypting ONNXZEC1: plaintext bytes per chunk, 0 = OC_CRYPT_DEFAULT_CHUNK_SIZE;
     * OC_CRYPT_MIN_CHUNK_SIZE..OC_CRYPT_MAX_CHUNK_SIZE. Ignored for ONNXCRY1. */
    uint32_t chunk_size;
    /* Decrypting ONNXZEC1: refuse headers with more iterations (OC_ERR_LIMIT);
     * 0 = OC_CRYPT_DEFAULT_MAX_ITERATIONS; at most INT_MAX. */
    uint32_t max_iterations;
    /* Writing a file: fail with OC_ERR_EXISTS when the target exists (default: replace). */
    int no_overwrite;
} oc_crypt_options;

#define OC_CRYPT_OPTIONS_INIT                                                       \
    {                                                                               \
        .size = sizeof(oc_crypt_options), .format = OC_CRYPT_NONE, .iterations = 0, \
        .chunk_size = 0, .max_iterations = 0, .no_overwrite = 0                     \
    }

/* Fills *opts with the defaults (as OC_CRYPT_OPTIONS_INIT). */
OC_API void oc_crypt_options_init(oc_crypt_options *opts);

/* true when this build can encrypt and decrypt (it has OpenSSL). */
OC_API bool oc_crypt_available(void);

/* "ONNXZEC1", "ONNXCRY1", or "none". Never NULL. */
OC_API const char *oc_crypt_format_name(oc_crypt_format format);

/* The format whose magic begins data (size bytes), or OC_CRYPT_NONE. Works without
 * OpenSSL. */
OC_API oc_crypt_format oc_crypt_detect(const void *data, uint64_t size);
/* The same for the first bytes of a file. A file of 1 to 7 bytes that is the start of a
 * magic is an encrypted file cut short (spec C-1): OC_ERR_TRUNCATED, *out OC_CRYPT_NONE.
 * Any other file shorter than a magic: OC_CRYPT_NONE. */
OC_API oc_status oc_crypt_detect_file(const char *path, oc_crypt_format *out, oc_error *err);

/* ---- streaming encryption: push plaintext, get ciphertext through a sink ---- */

typedef struct oc_crypt_writer oc_crypt_writer;

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Derives the key (PBKDF2: the slow step), allocates everything, then writes the header to
 * `write`. Ciphertext follows through `write` as plaintext comes in; memory use is one
 * chunk whatever the total size. *out owns the writer. */
OC_API oc_status oc_crypt_writer_open(oc_write_fn write, void *write_ctx, const void *key,
                                      size_t key_len, const oc_crypt_options *opts,
                                      oc_crypt_writer **out, oc_error *err);
/* Encrypts size more bytes; an oc_write_fn, so it can be the sink of oc_encode (ctx is the
 * writer). After a failure the writer only accepts oc_crypt_writer_free. */
OC_API oc_status oc_crypt_writer_write(void *writer, const void *data, uint64_t size,
                                       oc_error *err);
/* Writes the final chunk (ONNXZEC1) or the padding block (ONNXCRY1). Without it the output
 * is incomplete and readers refuse it (OC_ERR_TRUNCATED). */
OC_API oc_status oc_crypt_writer_finish(oc_crypt_writer *w, oc_error *err);
/* Wipes the key and frees the writer. NULL is accepted. */
OC_API void oc_crypt_writer_free(oc_crypt_writer *w);
#endif

/* ---- streaming decryption: pull ciphertext from a source ---- */

/* A source of bytes: read(ctx, buf, cap, &got) stores up to cap bytes; *got == 0 means the
 * end of the input. Returns OC_OK or an error it has filled in err. */
typedef oc_status (*oc_crypt_read_fn)(void *ctx, void *buf, uint64_t cap, uint64_t *got,
                                      oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Decrypts everything `read` gives into `write`, one chunk at a time (bounded memory).
 * Each ONNXZEC1 chunk reaches `write` only once it has authenticated, but the stream as a
 * whole is known to be complete and in order only when this returns OC_OK: on any error
 * the caller must discard what was written (the file functions below do). ONNXCRY1 output
 * is never authenticated. */
OC_API oc_status oc_crypt_decrypt_stream(oc_crypt_read_fn read, void *read_ctx, oc_write_fn write,
                                         void *write_ctx, const void *key, size_t key_len,
                                         const oc_crypt_options *opts, oc_error *err);
#endif

/* ---- memory to memory ---- */

/* Encrypts size bytes at data into a new buffer of *out_size bytes (free it with free()).
 * The same bytes as the file form. */
OC_API oc_status oc_crypt_encrypt_memory(const void *data, uint64_t size, const void *key,
                                         size_t key_len, const oc_crypt_options *opts, void **out,
                                         uint64_t *out_size, oc_error *err);
/* Decrypts size bytes at data (either format, by magic). On success *out (released first)
 * is an OC_BYTES_SHARED span over a new 64-byte-aligned buffer kept alive by its owner
 * token: hand out->owner to anything that should borrow from it (oc_decode with no_copy,
 * oz_zip_reader_open_memory), then oc_bytes_release(out); the buffer goes with the last
 * reference. An empty plaintext gives an empty span. On failure *out is left empty. */
OC_API oc_status oc_crypt_decrypt_memory(const void *data, uint64_t size, const void *key,
                                         size_t key_len, const oc_crypt_options *opts,
                                         oc_bytes *out, oc_error *err);

/* ---- files ---- */

/* Encrypts or decrypts the file at in_path into out_path, streaming (memory use does not
 * depend on the size; 64-bit sizes). The output goes through oc_atomic_file: out_path is
 * replaced whole, or left untouched on any error (no unauthenticated plaintext survives a
 * failed decryption). in_path and out_path may name the same file. */
OC_API oc_status oc_crypt_encrypt_file(const char *in_path, const char *out_path, const void *key,
                                       size_t key_len, const oc_crypt_options *opts, oc_error *err);
OC_API oc_status oc_crypt_decrypt_file(const char *in_path, const char *out_path, const void *key,
                                       size_t key_len, const oc_crypt_options *opts, oc_error *err);
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Decrypts a file into memory: *out as for oc_crypt_decrypt_memory. */
OC_API oc_status oc_crypt_decrypt_file_to_memory(const char *path, const void *key, size_t key_len,
                                                 const oc_crypt_options *opts, oc_bytes *out,
                                                 oc_error *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
