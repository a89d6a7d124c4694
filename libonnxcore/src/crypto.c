/*
 * crypto.c - encrypted files (spec/encryption.md): ONNXZEC1, our chunked AES-256-GCM
 * container, and ONNXCRY1, onnx_light's AES-256-CBC format.
 *
 * All cryptography is OpenSSL's (EVP ciphers, PKCS5_PBKDF2_HMAC, HMAC, RAND_bytes); this
 * file only frames it. Encryption is push-style (oc_crypt_writer: plaintext in, ciphertext
 * out through an oc_write_fn), decryption pull-style (an oc_crypt_read_fn in, an
 * oc_write_fn out); the memory, file and model functions are built on those two, so the
 * memory and file forms are the same bytes. Memory use is one chunk at a time.
 *
 * Without OpenSSL, detection still works and everything else returns OC_ERR_UNSUPPORTED.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnxcore/crypto.h"
#include "onnxcore/external.h"
#include "onnxcore/file.h"
#include "internal/error.h"
#include "onnxcore_shared.h"

#ifdef ONNXZ_HAVE_OPENSSL
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#endif

/* Bytes read or encrypted per step where nothing else fixes the size (ONNXCRY1, file
 * input): bounded memory whatever the total. */
#define PIECE_SIZE ((uint64_t)1 << 20)

/* ONNXZEC1 header fields (C-10). */
enum {
    H_VERSION = 8, H_CIPHER = 9, H_KDF = 10, H_RESERVED = 11, H_ITERATIONS = 12,
    H_CHUNK_SIZE = 16, H_NONCE_PREFIX = 20, H_SALT = 24, H_KEY_CHECK = 40, H_DIGEST = 56,
    H_DIGESTED = 56 /* the digest covers bytes 0..55 */
};
#define ZEC1_VERSION 1u
#define ZEC1_CIPHER_AES256GCM 1u
#define ZEC1_KDF_PBKDF2_SHA256 1u
#define ZEC1_FINAL 1u
#define SALT_SIZE 16u
#define PREFIX_SIZE 4u
#define NONCE_SIZE 12u
#define KEY_SIZE 32u
#define CHECK_SIZE 16u
#define CRY1_IV_SIZE 16u
#define CBC_BLOCK 16u
/* Labels of the two keys derived from the PBKDF2 output (C-21, C-22). */
#define LABEL_CHUNK_KEY "ONNXZEC1 chunk key"
#define LABEL_KEY_CHECK "ONNXZEC1 key check"

/* ======================================================================================
 * Detection (no OpenSSL needed)
 * ====================================================================================== */

int oc_crypt_available(void) {
#ifdef ONNXZ_HAVE_OPENSSL
    return 1;
#else
    return 0;
#endif
}

const char *oc_crypt_format_name(oc_crypt_format f) {
    switch (f) {
    case OC_CRYPT_ONNXZEC1: return "ONNXZEC1";
    case OC_CRYPT_ONNXCRY1: return "ONNXCRY1";
    case OC_CRYPT_NONE: break;
    }
    return "none";
}

oc_crypt_format oc_crypt_detect(const void *data, uint64_t size) {
    if (!data || size < OC_CRYPT_MAGIC_LEN) return OC_CRYPT_NONE;
    if (memcmp(data, OC_CRYPT_ZEC1_MAGIC, OC_CRYPT_MAGIC_LEN) == 0) return OC_CRYPT_ONNXZEC1;
    if (memcmp(data, OC_CRYPT_CRY1_MAGIC, OC_CRYPT_MAGIC_LEN) == 0) return OC_CRYPT_ONNXCRY1;
    return OC_CRYPT_NONE;
}

oc_status oc_crypt_detect_file(const char *path, oc_crypt_format *out, oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_detect_file: missing argument");
    *out = OC_CRYPT_NONE;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return oc__fail_errno(err, errno, "cannot open %s", path);
    uint8_t magic[OC_CRYPT_MAGIC_LEN];
    size_t got = 0;
    while (got < sizeof magic) {
        ssize_t r = read(fd, magic + got, sizeof magic - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            close(fd);
            return oc__fail_errno(err, e, "cannot read %s", path);
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    close(fd);
    *out = oc_crypt_detect(magic, got);
    /* C-1: a file shorter than a magic that begins one is an encrypted file cut short. */
    if (got > 0 && got < sizeof magic &&
        (memcmp(magic, OC_CRYPT_ZEC1_MAGIC, got) == 0 ||
         memcmp(magic, OC_CRYPT_CRY1_MAGIC, got) == 0))
        return oc__fail(err, OC_ERR_TRUNCATED, got,
                        "truncated: the file ends inside the magic of an encrypted file (%zu of "
                        "%u bytes) (C-1)", got, (unsigned)OC_CRYPT_MAGIC_LEN);
    return OC_OK;
}

int oc_crypt_is_zip(const void *data, uint64_t size) {
    const uint8_t *p = data;
    return data && size >= 4 && p[0] == 'P' && p[1] == 'K' &&
           ((p[2] == 3 && p[3] == 4) || (p[2] == 5 && p[3] == 6));
}

/* ======================================================================================
 * Sources and sinks
 * ====================================================================================== */

typedef struct source {
    oc_crypt_read_fn read;
    void *ctx;
    uint64_t offset; /* bytes consumed so far: the input offset of the next byte */
} source;

typedef struct mem_reader {
    const uint8_t *data;
    uint64_t size, pos;
} mem_reader;

static oc_status mem_read(void *ctx, void *buf, uint64_t cap, uint64_t *got, oc_error *err) {
    (void)err;
    mem_reader *m = ctx;
    uint64_t n = m->size - m->pos;
    if (n > cap) n = cap;
    if (n) memcpy(buf, m->data + m->pos, (size_t)n);
    m->pos += n;
    *got = n;
    return OC_OK;
}

typedef struct fd_reader {
    int fd;
    const char *path;
} fd_reader;

static oc_status fd_read(void *ctx, void *buf, uint64_t cap, uint64_t *got, oc_error *err) {
    fd_reader *f = ctx;
    size_t n = cap > ((uint64_t)1 << 30) ? ((size_t)1 << 30) : (size_t)cap;
    for (;;) {
        ssize_t r = read(f->fd, buf, n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return oc__fail_errno(err, errno, "cannot read %s", f->path);
        *got = (uint64_t)r;
        return OC_OK;
    }
}

/* A sink into a buffer allocated up front for the exact (or largest possible) size. */
typedef struct mem_sink {
    uint8_t *buf;
    uint64_t cap, len;
} mem_sink;

static oc_status mem_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    mem_sink *m = ctx;
    if (size > m->cap - m->len)
        return oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET,
                        "internal error: output larger than its computed size");
    if (size) memcpy(m->buf + m->len, data, (size_t)size);
    m->len += size;
    return OC_OK;
}

/* ======================================================================================
 * Options
 * ====================================================================================== */

typedef struct resolved {
    oc_crypt_format format;
    uint32_t iterations;
    uint32_t chunk_size;
    uint32_t max_iterations;
} resolved;

static oc_status resolve_options(const oc_crypt_options *o, resolved *r, oc_error *err) {
    r->format = o && o->format ? o->format : OC_CRYPT_ONNXZEC1;
    r->max_iterations = o && o->max_iterations ? o->max_iterations : OC_CRYPT_DEFAULT_MAX_ITERATIONS;
    OC_RETURN_ERROR_IF(r->format != OC_CRYPT_ONNXZEC1 && r->format != OC_CRYPT_ONNXCRY1, err,
                       OC_ERR_INVALID_ARG, OC_NO_OFFSET, "unknown encryption format %d",
                       (int)r->format);
    OC_RETURN_ERROR_IF(r->max_iterations > INT_MAX, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "max_iterations %u is above %d", r->max_iterations, INT_MAX);
    if (r->format == OC_CRYPT_ONNXCRY1) {
        OC_RETURN_ERROR_IF(o && o->iterations && o->iterations != OC_CRYPT_CRY1_ITERATIONS, err,
                           OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                           "ONNXCRY1 always uses %u PBKDF2 iterations, not %u (C-51)",
                           OC_CRYPT_CRY1_ITERATIONS, o->iterations);
        r->iterations = OC_CRYPT_CRY1_ITERATIONS;
        r->chunk_size = 0;
        return OC_OK;
    }
    r->iterations = o && o->iterations ? o->iterations : OC_CRYPT_DEFAULT_ITERATIONS;
    r->chunk_size = o && o->chunk_size ? o->chunk_size : OC_CRYPT_DEFAULT_CHUNK_SIZE;
    OC_RETURN_ERROR_IF(r->iterations > r->max_iterations, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "%u PBKDF2 iterations: above the reader limit %u (C-15)", r->iterations,
                       r->max_iterations);
    OC_RETURN_ERROR_IF(r->chunk_size < OC_CRYPT_MIN_CHUNK_SIZE || r->chunk_size > OC_CRYPT_MAX_CHUNK_SIZE,
                       err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "chunk size %u is outside %u..%u (C-16)", r->chunk_size,
                       OC_CRYPT_MIN_CHUNK_SIZE, OC_CRYPT_MAX_CHUNK_SIZE);
    return OC_OK;
}

static oc_status check_key(const void *key, size_t key_len, oc_error *err) {
    OC_RETURN_ERROR_IF(!key || key_len == 0, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "an empty passphrase is not accepted");
    OC_RETURN_ERROR_IF(key_len > INT_MAX, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "the passphrase is longer than %d bytes", INT_MAX);
    return OC_OK;
}

/* The exact size of the encryption of `size` bytes (C-35, C-50). */
static oc_status encrypted_size(uint64_t size, const resolved *r, uint64_t *out, oc_error *err) {
    uint64_t total;
    if (r->format == OC_CRYPT_ONNXCRY1) {
        uint64_t blocks = size / CBC_BLOCK + 1;
        OC_RETURN_ERROR_IF(blocks > (UINT64_MAX - OC_CRYPT_CRY1_HEADER_SIZE) / CBC_BLOCK, err,
                           OC_ERR_LIMIT, OC_NO_OFFSET, "input too large");
        total = OC_CRYPT_CRY1_HEADER_SIZE + blocks * CBC_BLOCK;
    } else {
        uint64_t chunks = size ? (size - 1) / r->chunk_size + 1 : 1;
        uint64_t per = OC_CRYPT_ZEC1_FRAME_SIZE + OC_CRYPT_ZEC1_TAG_SIZE;
        OC_RETURN_ERROR_IF(chunks > (UINT64_MAX - OC_CRYPT_ZEC1_HEADER_SIZE) / per ||
                               size > UINT64_MAX - OC_CRYPT_ZEC1_HEADER_SIZE - chunks * per,
                           err, OC_ERR_LIMIT, OC_NO_OFFSET, "input too large");
        total = OC_CRYPT_ZEC1_HEADER_SIZE + chunks * per + size;
    }
    *out = total;
    return OC_OK;
}

#ifdef ONNXZ_HAVE_OPENSSL

static void put_u32le(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64le(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32le(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t get_u64le(const uint8_t *p) {
    return (uint64_t)get_u32le(p) | (uint64_t)get_u32le(p + 4) << 32;
}

/* Reads until `want` bytes or the end of the input; *got says how many came. */
static oc_status source_fill(source *s, uint8_t *buf, uint64_t want, uint64_t *got,
                             oc_error *err) {
    uint64_t done = 0;
    while (done < want) {
        uint64_t n = 0;
        OC_FORWARD(s->read(s->ctx, buf + done, want - done, &n, err));
        if (n == 0) break;
        if (n > want - done)
            return oc__fail(err, OC_ERR_INVALID_ARG, s->offset + done,
                            "the read callback returned more bytes than asked for");
        done += n;
    }
    s->offset += done;
    *got = done;
    return OC_OK;
}

/* ======================================================================================
 * Key derivation
 * ====================================================================================== */

static oc_status require_crypto(oc_error *err) {
    (void)err;
    return OC_OK;
}

static oc_status random_bytes(uint8_t *buf, int n, oc_error *err) {
    OC_RETURN_ERROR_IF(RAND_bytes(buf, n) != 1, err, OC_ERR_CRYPTO, OC_NO_OFFSET,
                       "the random number generator failed");
    return OC_OK;
}

static oc_status pbkdf2(const void *key, size_t key_len, const uint8_t *salt, uint32_t iterations,
                        uint8_t out[KEY_SIZE], oc_error *err) {
    OC_RETURN_ERROR_IF(PKCS5_PBKDF2_HMAC((const char *)key, (int)key_len, salt, SALT_SIZE,
                                         (int)iterations, EVP_sha256(), KEY_SIZE, out) != 1,
                       err, OC_ERR_CRYPTO, OC_NO_OFFSET, "PBKDF2 key derivation failed");
    return OC_OK;
}

/* HMAC-SHA256(master, label): the chunk key and the key check of ONNXZEC1 (C-21, C-22). */
static int hmac_label(const uint8_t master[KEY_SIZE], const char *label, uint8_t out[32]) {
    unsigned int n = 0;
    return HMAC(EVP_sha256(), master, KEY_SIZE, (const unsigned char *)label, strlen(label),
                out, &n) != NULL && n == 32;
}

/* The ONNXZEC1 keys from a passphrase and a header's salt and iteration count. */
static oc_status zec1_keys(const void *key, size_t key_len, const uint8_t *header,
                           uint8_t chunk_key[KEY_SIZE], uint8_t check[CHECK_SIZE],
                           oc_error *err) {
    uint8_t master[KEY_SIZE], mac[32];
    oc_status st = pbkdf2(key, key_len, header + H_SALT, get_u32le(header + H_ITERATIONS),
                          master, err);
    if (st == OC_OK && (!hmac_label(master, LABEL_CHUNK_KEY, chunk_key) ||
                        !hmac_label(master, LABEL_KEY_CHECK, mac)))
        st = oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "HMAC-SHA256 failed");
    memcpy(check, mac, CHECK_SIZE);
    OPENSSL_cleanse(master, sizeof master);
    OPENSSL_cleanse(mac, sizeof mac);
    return st;
}

static int header_digest(const uint8_t *header, uint8_t out[CHECK_SIZE]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    int ok = EVP_Digest(header, H_DIGESTED, md, &n, EVP_sha256(), NULL) == 1 && n == 32;
    memcpy(out, md, CHECK_SIZE);
    return ok;
}

static void zec1_nonce(const uint8_t *header, uint64_t index, uint8_t nonce[NONCE_SIZE]) {
    memcpy(nonce, header + H_NONCE_PREFIX, PREFIX_SIZE);
    put_u64le(nonce + PREFIX_SIZE, index);
}

/* ======================================================================================
 * Encryption: oc_crypt_writer
 * ====================================================================================== */

struct oc_crypt_writer {
    oc_crypt_format format;
    oc_write_fn write;
    void *write_ctx;
    EVP_CIPHER_CTX *cipher;
    int failed, finished;
    uint8_t header[OC_CRYPT_ZEC1_HEADER_SIZE];
    uint32_t chunk_size;  /* ONNXZEC1; ONNXCRY1 encrypts PIECE_SIZE at a time */
    uint64_t index;       /* the next chunk's */
    uint8_t *plain;       /* ONNXZEC1: the pending chunk, `fill` bytes */
    uint64_t fill;
    uint8_t *out;         /* one encrypted chunk or piece */
    uint64_t out_cap;
};

/* Encrypts the pending plaintext as chunk `index` and writes it (C-30..C-35). */
static oc_status zec1_seal(oc_crypt_writer *w, int final, oc_error *err) {
    uint8_t *f = w->out, nonce[NONCE_SIZE], scratch[16];
    put_u64le(f, w->index);
    put_u32le(f + 8, (uint32_t)w->fill);
    f[12] = final ? ZEC1_FINAL : 0;
    f[13] = f[14] = f[15] = 0;
    zec1_nonce(w->header, w->index, nonce);
    uint8_t *ct = f + OC_CRYPT_ZEC1_FRAME_SIZE, *tag = ct + w->fill;
    int n = 0;
    int ok = EVP_EncryptInit_ex(w->cipher, NULL, NULL, NULL, nonce) == 1 &&
             EVP_EncryptUpdate(w->cipher, NULL, &n, w->header, OC_CRYPT_ZEC1_HEADER_SIZE) == 1 &&
             EVP_EncryptUpdate(w->cipher, NULL, &n, f, OC_CRYPT_ZEC1_FRAME_SIZE) == 1;
    if (ok && w->fill)
        ok = EVP_EncryptUpdate(w->cipher, ct, &n, w->plain, (int)w->fill) == 1 &&
             (uint64_t)n == w->fill;
    ok = ok && EVP_EncryptFinal_ex(w->cipher, scratch, &n) == 1 && n == 0 &&
         EVP_CIPHER_CTX_ctrl(w->cipher, EVP_CTRL_GCM_GET_TAG, OC_CRYPT_ZEC1_TAG_SIZE, tag) == 1;
    OC_RETURN_ERROR_IF(!ok, err, OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-GCM encryption failed");
    OC_RETURN_ERROR_IF(w->index == UINT64_MAX, err, OC_ERR_LIMIT, OC_NO_OFFSET,
                       "too many chunks (C-37)");
    w->index++;
    OC_FORWARD(w->write(w->write_ctx, f, OC_CRYPT_ZEC1_FRAME_SIZE + w->fill + OC_CRYPT_ZEC1_TAG_SIZE, err));
    w->fill = 0;
    return OC_OK;
}

static oc_status zec1_open(oc_crypt_writer *w, const void *key, size_t key_len,
                           const resolved *r, oc_error *err) {
    uint8_t *h = w->header;
    memset(h, 0, sizeof w->header);
    memcpy(h, OC_CRYPT_ZEC1_MAGIC, OC_CRYPT_MAGIC_LEN);
    h[H_VERSION] = ZEC1_VERSION;
    h[H_CIPHER] = ZEC1_CIPHER_AES256GCM;
    h[H_KDF] = ZEC1_KDF_PBKDF2_SHA256;
    put_u32le(h + H_ITERATIONS, r->iterations);
    put_u32le(h + H_CHUNK_SIZE, r->chunk_size);
    OC_FORWARD(random_bytes(h + H_NONCE_PREFIX, PREFIX_SIZE, err));
    OC_FORWARD(random_bytes(h + H_SALT, SALT_SIZE, err));
    uint8_t chunk_key[KEY_SIZE];
    oc_status st = zec1_keys(key, key_len, h, chunk_key, h + H_KEY_CHECK, err);
    if (st == OC_OK && !header_digest(h, h + H_DIGEST))
        st = oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "SHA-256 failed");
    if (st == OC_OK &&
        (EVP_EncryptInit_ex(w->cipher, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
         EVP_CIPHER_CTX_ctrl(w->cipher, EVP_CTRL_GCM_SET_IVLEN, NONCE_SIZE, NULL) != 1 ||
         EVP_EncryptInit_ex(w->cipher, NULL, NULL, chunk_key, NULL) != 1))
        st = oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-GCM setup failed");
    OPENSSL_cleanse(chunk_key, sizeof chunk_key);
    return st;
}

static oc_status cry1_open(oc_crypt_writer *w, const void *key, size_t key_len,
                           oc_error *err) {
    uint8_t *h = w->header; /* ONNXCRY1's 40-byte header fits in the same array */
    memcpy(h, OC_CRYPT_CRY1_MAGIC, OC_CRYPT_MAGIC_LEN);
    OC_FORWARD(random_bytes(h + 8, SALT_SIZE, err));
    OC_FORWARD(random_bytes(h + 8 + SALT_SIZE, CRY1_IV_SIZE, err));
    uint8_t k[KEY_SIZE];
    oc_status st = pbkdf2(key, key_len, h + 8, OC_CRYPT_CRY1_ITERATIONS, k, err);
    if (st == OC_OK &&
        EVP_EncryptInit_ex(w->cipher, EVP_aes_256_cbc(), NULL, k, h + 8 + SALT_SIZE) != 1)
        st = oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-CBC setup failed");
    OPENSSL_cleanse(k, sizeof k);
    return st;
}

static oc_status writer_open(oc_write_fn write, void *write_ctx, const void *key,
                             size_t key_len, const resolved *r, oc_crypt_writer **out,
                             oc_error *err) {
    oc_crypt_writer *w = calloc(1, sizeof *w);
    if (!w) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    w->format = r->format;
    w->write = write;
    w->write_ctx = write_ctx;
    w->chunk_size = r->chunk_size;
    w->cipher = EVP_CIPHER_CTX_new();
    if (r->format == OC_CRYPT_ONNXZEC1) {
        w->plain = malloc(r->chunk_size);
        w->out_cap = OC_CRYPT_ZEC1_FRAME_SIZE + (uint64_t)r->chunk_size + OC_CRYPT_ZEC1_TAG_SIZE;
    } else {
        w->out_cap = PIECE_SIZE + CBC_BLOCK;
    }
    w->out = malloc((size_t)w->out_cap);
    oc_status st = OC_OK;
    if (!w->cipher || !w->out || (r->format == OC_CRYPT_ONNXZEC1 && !w->plain))
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (st == OC_OK)
        st = r->format == OC_CRYPT_ONNXZEC1 ? zec1_open(w, key, key_len, r, err)
                                            : cry1_open(w, key, key_len, err);
    /* Everything is allocated and derived: only now does anything get written. */
    if (st == OC_OK)
        st = write(write_ctx, w->header,
                   r->format == OC_CRYPT_ONNXZEC1 ? OC_CRYPT_ZEC1_HEADER_SIZE
                                                  : OC_CRYPT_CRY1_HEADER_SIZE, err);
    if (st != OC_OK) {
        oc_crypt_writer_free(w);
        return st;
    }
    *out = w;
    return OC_OK;
}

static oc_status cry1_write(oc_crypt_writer *w, const uint8_t *p, uint64_t size, oc_error *err) {
    while (size) {
        uint64_t n = size < PIECE_SIZE ? size : PIECE_SIZE;
        int len = 0;
        OC_RETURN_ERROR_IF(EVP_EncryptUpdate(w->cipher, w->out, &len, p, (int)n) != 1, err,
                           OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-CBC encryption failed");
        if (len) OC_FORWARD(w->write(w->write_ctx, w->out, (uint64_t)len, err));
        p += n;
        size -= n;
    }
    return OC_OK;
}

static oc_status zec1_write(oc_crypt_writer *w, const uint8_t *p, uint64_t size, oc_error *err) {
    while (size) {
        /* A full chunk is sealed only when more data comes: until then it may be the last. */
        if (w->fill == w->chunk_size) OC_FORWARD(zec1_seal(w, 0, err));
        uint64_t n = w->chunk_size - w->fill;
        if (n > size) n = size;
        memcpy(w->plain + w->fill, p, (size_t)n);
        w->fill += n;
        p += n;
        size -= n;
    }
    return OC_OK;
}

oc_status oc_crypt_writer_write(void *writer, const void *data, uint64_t size, oc_error *err) {
    oc_crypt_writer *w = writer;
    if (!w || (!data && size) || w->failed || w->finished)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_writer_write: no writer, no data, or the writer is done");
    oc_status st = w->format == OC_CRYPT_ONNXZEC1 ? zec1_write(w, data, size, err)
                                                  : cry1_write(w, data, size, err);
    if (st != OC_OK) w->failed = 1;
    return st;
}

oc_status oc_crypt_writer_finish(oc_crypt_writer *w, oc_error *err) {
    if (!w || w->failed || w->finished)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_writer_finish: no writer, or the writer is done");
    oc_status st;
    if (w->format == OC_CRYPT_ONNXZEC1) {
        st = zec1_seal(w, 1, err);
    } else {
        int len = 0;
        st = EVP_EncryptFinal_ex(w->cipher, w->out, &len) == 1
                 ? w->write(w->write_ctx, w->out, (uint64_t)len, err)
                 : oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-CBC encryption failed");
    }
    if (st != OC_OK) w->failed = 1;
    w->finished = 1;
    return st;
}

void oc_crypt_writer_free(oc_crypt_writer *w) {
    if (!w) return;
    EVP_CIPHER_CTX_free(w->cipher); /* wipes the key schedule */
    if (w->plain) OPENSSL_cleanse(w->plain, w->chunk_size);
    if (w->out) OPENSSL_cleanse(w->out, (size_t)w->out_cap);
    free(w->plain);
    free(w->out);
    OPENSSL_cleanse(w, sizeof *w);
    free(w);
}

oc_status oc_crypt_writer_open(oc_write_fn write, void *write_ctx, const void *key,
                               size_t key_len, const oc_crypt_options *opts,
                               oc_crypt_writer **out, oc_error *err) {
    if (!write || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_writer_open: missing argument");
    *out = NULL;
    resolved r;
    OC_FORWARD(resolve_options(opts, &r, err));
    OC_FORWARD(check_key(key, key_len, err));
    return writer_open(write, write_ctx, key, key_len, &r, out, err);
}

/* ======================================================================================
 * Decryption
 * ====================================================================================== */

/* Authenticates and decrypts the chunk whose frame is `frame` as chunk number `index`;
 * 1 when the tag verifies. `plain` receives len bytes either way (released only on 1). */
static int zec1_open_chunk(EVP_CIPHER_CTX *c, const uint8_t *header, uint64_t index,
                           const uint8_t *frame, const uint8_t *ct, uint32_t len,
                           uint8_t *plain) {
    uint8_t nonce[NONCE_SIZE], scratch[16];
    zec1_nonce(header, index, nonce);
    int n = 0;
    int ok = EVP_DecryptInit_ex(c, NULL, NULL, NULL, nonce) == 1 &&
             EVP_DecryptUpdate(c, NULL, &n, header, OC_CRYPT_ZEC1_HEADER_SIZE) == 1 &&
             EVP_DecryptUpdate(c, NULL, &n, frame, OC_CRYPT_ZEC1_FRAME_SIZE) == 1;
    if (ok && len) ok = EVP_DecryptUpdate(c, plain, &n, ct, (int)len) == 1 && (uint32_t)n == len;
    ok = ok && EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, OC_CRYPT_ZEC1_TAG_SIZE,
                                   (void *)(uintptr_t)(ct + len)) == 1;
    return ok && EVP_DecryptFinal_ex(c, scratch, &n) == 1;
}

/* The header checks of C-40, in order; h holds the 72 header bytes. */
static oc_status zec1_check_header(const uint8_t *h, const resolved *r, oc_error *err) {
    OC_RETURN_ERROR_IF(h[H_VERSION] != ZEC1_VERSION, err, OC_ERR_UNSUPPORTED, H_VERSION,
                       "ONNXZEC1 format version %u is not supported: this build reads version %u (C-11)",
                       h[H_VERSION], ZEC1_VERSION);
    uint8_t digest[CHECK_SIZE];
    OC_RETURN_ERROR_IF(!header_digest(h, digest), err, OC_ERR_CRYPTO, OC_NO_OFFSET, "SHA-256 failed");
    OC_RETURN_ERROR_IF(CRYPTO_memcmp(digest, h + H_DIGEST, CHECK_SIZE) != 0, err, OC_ERR_CHECKSUM,
                       0, "the ONNXZEC1 header is damaged: its digest does not match (C-12)");
    OC_RETURN_ERROR_IF(h[H_CIPHER] != ZEC1_CIPHER_AES256GCM, err, OC_ERR_UNSUPPORTED, H_CIPHER,
                       "ONNXZEC1 cipher %u is not supported (C-13)", h[H_CIPHER]);
    OC_RETURN_ERROR_IF(h[H_KDF] != ZEC1_KDF_PBKDF2_SHA256, err, OC_ERR_UNSUPPORTED, H_KDF,
                       "ONNXZEC1 key derivation %u is not supported (C-13)", h[H_KDF]);
    OC_RETURN_ERROR_IF(h[H_RESERVED] != 0, err, OC_ERR_MALFORMED, H_RESERVED,
                       "ONNXZEC1 header: reserved byte is %u, not 0 (C-14)", h[H_RESERVED]);
    uint32_t iterations = get_u32le(h + H_ITERATIONS);
    uint32_t chunk_size = get_u32le(h + H_CHUNK_SIZE);
    OC_RETURN_ERROR_IF(iterations == 0, err, OC_ERR_MALFORMED, H_ITERATIONS,
                       "ONNXZEC1 header: zero PBKDF2 iterations (C-15)");
    OC_RETURN_ERROR_IF(iterations > r->max_iterations, err, OC_ERR_LIMIT, H_ITERATIONS,
                       "ONNXZEC1 header asks for %u PBKDF2 iterations, more than the limit %u "
                       "(raise max_iterations to accept it) (C-15)",
                       iterations, r->max_iterations);
    OC_RETURN_ERROR_IF(chunk_size < OC_CRYPT_MIN_CHUNK_SIZE || chunk_size > OC_CRYPT_MAX_CHUNK_SIZE,
                       err, OC_ERR_MALFORMED, H_CHUNK_SIZE,
                       "ONNXZEC1 header: chunk size %u is outside %u..%u (C-16)", chunk_size,
                       OC_CRYPT_MIN_CHUNK_SIZE, OC_CRYPT_MAX_CHUNK_SIZE);
    return OC_OK;
}

typedef struct zec1_reader {
    EVP_CIPHER_CTX *cipher;
    uint8_t *in;    /* frame + ciphertext + tag of one chunk */
    uint8_t *plain; /* its plaintext */
    uint32_t chunk_size;
} zec1_reader;

static oc_status zec1_chunks(zec1_reader *z, source *s, const uint8_t *h, oc_write_fn write,
                             void *write_ctx, oc_error *err) {
    const uint32_t cs = z->chunk_size;
    for (uint64_t i = 0;; i++) {
        uint64_t at = s->offset, got = 0;
        uint8_t *frame = z->in, *ct = z->in + OC_CRYPT_ZEC1_FRAME_SIZE;
        OC_FORWARD(source_fill(s, frame, OC_CRYPT_ZEC1_FRAME_SIZE, &got, err));
        if (got == 0) {
            if (i == 0)
                return oc__fail(err, OC_ERR_TRUNCATED, at,
                                "truncated: the input ends after the header, before the first "
                                "chunk (C-41)");
            return oc__fail(err, OC_ERR_TRUNCATED, at,
                            "truncated: the input ends after chunk %llu, before the final "
                            "chunk (C-41)", (unsigned long long)(i - 1));
        }
        OC_RETURN_ERROR_IF(got < OC_CRYPT_ZEC1_FRAME_SIZE, err, OC_ERR_TRUNCATED, at,
                           "truncated: the input ends inside the frame of chunk %llu (C-41)",
                           (unsigned long long)i);
        uint64_t index = get_u64le(frame);
        uint32_t len = get_u32le(frame + 8);
        uint8_t flags = frame[12];
        OC_RETURN_ERROR_IF(len > cs, err, OC_ERR_MALFORMED, at + 8,
                           "chunk %llu declares %u bytes, more than the chunk size %u (C-31)",
                           (unsigned long long)i, len, cs);
        uint64_t body = (uint64_t)len + OC_CRYPT_ZEC1_TAG_SIZE;
        OC_FORWARD(source_fill(s, ct, body, &got, err));
        OC_RETURN_ERROR_IF(got < body, err, OC_ERR_TRUNCATED, at,
                           "truncated: the input ends inside chunk %llu (%llu of its %llu bytes) (C-41)",
                           (unsigned long long)i,
                           (unsigned long long)(got + OC_CRYPT_ZEC1_FRAME_SIZE),
                           (unsigned long long)(body + OC_CRYPT_ZEC1_FRAME_SIZE));
        int ok = zec1_open_chunk(z->cipher, h, index, frame, ct, len, z->plain);
        if (index != i && ok) {
            if (index < i)
                return oc__fail(err, OC_ERR_INCONSISTENT, at,
                                "chunk %llu appears again at position %llu: a duplicated chunk (C-42)",
                                (unsigned long long)index, (unsigned long long)i);
            return oc__fail(err, OC_ERR_INCONSISTENT, at,
                            "chunk %llu found at position %llu: chunks are missing or out of "
                            "order (C-42)", (unsigned long long)index, (unsigned long long)i);
        }
        OC_RETURN_ERROR_IF(!ok, err, OC_ERR_CHECKSUM, at,
                           "chunk %llu fails authentication: the data is damaged or was "
                           "tampered with (C-43)", (unsigned long long)i);
        int final = (flags & ZEC1_FINAL) != 0;
        OC_RETURN_ERROR_IF((flags & ~ZEC1_FINAL) || frame[13] || frame[14] || frame[15], err,
                           OC_ERR_MALFORMED, at + 12,
                           "chunk %llu: reserved frame bits are set (C-44)", (unsigned long long)i);
        OC_RETURN_ERROR_IF(!final && len != cs, err, OC_ERR_MALFORMED, at + 8,
                           "chunk %llu is not the final chunk but holds %u bytes, not the chunk "
                           "size %u (C-44)", (unsigned long long)i, len, cs);
        OC_RETURN_ERROR_IF(final && len == 0 && i > 0, err, OC_ERR_MALFORMED, at + 8,
                           "chunk %llu is an empty final chunk after full ones (C-44)",
                           (unsigned long long)i);
        if (len) OC_FORWARD(write(write_ctx, z->plain, len, err));
        if (final) {
            uint8_t extra;
            OC_FORWARD(source_fill(s, &extra, 1, &got, err));
            OC_RETURN_ERROR_IF(got != 0, err, OC_ERR_MALFORMED, s->offset - 1,
                               "bytes follow the final chunk (chunk %llu): appended data (C-45)",
                               (unsigned long long)i);
            return OC_OK;
        }
    }
}

static oc_status zec1_decrypt(source *s, const uint8_t magic[OC_CRYPT_MAGIC_LEN],
                              oc_write_fn write, void *write_ctx, const void *key,
                              size_t key_len, const resolved *r, oc_error *err) {
    uint8_t h[OC_CRYPT_ZEC1_HEADER_SIZE];
    memcpy(h, magic, OC_CRYPT_MAGIC_LEN);
    uint64_t got;
    OC_FORWARD(source_fill(s, h + OC_CRYPT_MAGIC_LEN, sizeof h - OC_CRYPT_MAGIC_LEN, &got, err));
    OC_RETURN_ERROR_IF(got < sizeof h - OC_CRYPT_MAGIC_LEN, err, OC_ERR_TRUNCATED, s->offset,
                       "truncated: the input ends inside the ONNXZEC1 header (%llu of its %u bytes) (C-10)",
                       (unsigned long long)(got + OC_CRYPT_MAGIC_LEN), OC_CRYPT_ZEC1_HEADER_SIZE);
    OC_FORWARD(zec1_check_header(h, r, err));
    uint8_t chunk_key[KEY_SIZE], check[CHECK_SIZE];
    OC_FORWARD(zec1_keys(key, key_len, h, chunk_key, check, err));
    int right = CRYPTO_memcmp(check, h + H_KEY_CHECK, CHECK_SIZE) == 0;
    OPENSSL_cleanse(check, sizeof check);
    if (!right) {
        OPENSSL_cleanse(chunk_key, sizeof chunk_key);
        return oc__fail(err, OC_ERR_BAD_KEY, OC_NO_OFFSET,
                        "wrong passphrase: it does not match the key check of this ONNXZEC1 "
                        "file (C-22)");
    }
    zec1_reader z = {0};
    z.chunk_size = get_u32le(h + H_CHUNK_SIZE);
    z.cipher = EVP_CIPHER_CTX_new();
    z.in = malloc(OC_CRYPT_ZEC1_FRAME_SIZE + (size_t)z.chunk_size + OC_CRYPT_ZEC1_TAG_SIZE);
    z.plain = malloc(z.chunk_size);
    oc_status st = OC_OK;
    if (!z.cipher || !z.in || !z.plain)
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    else if (EVP_DecryptInit_ex(z.cipher, EVP_aes_256_gcm(), NULL, NULL, NULL) != 1 ||
             EVP_CIPHER_CTX_ctrl(z.cipher, EVP_CTRL_GCM_SET_IVLEN, NONCE_SIZE, NULL) != 1 ||
             EVP_DecryptInit_ex(z.cipher, NULL, NULL, chunk_key, NULL) != 1)
        st = oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-GCM setup failed");
    OPENSSL_cleanse(chunk_key, sizeof chunk_key);
    if (st == OC_OK) st = zec1_chunks(&z, s, h, write, write_ctx, err);
    EVP_CIPHER_CTX_free(z.cipher);
    if (z.plain) OPENSSL_cleanse(z.plain, z.chunk_size);
    free(z.plain);
    free(z.in);
    return st;
}

static oc_status cry1_stream(EVP_CIPHER_CTX *c, source *s, uint8_t *in, uint8_t *out,
                             oc_write_fn write, void *write_ctx, oc_error *err) {
    uint64_t total = 0, got = 0;
    int len = 0;
    for (;;) {
        OC_FORWARD(source_fill(s, in, PIECE_SIZE, &got, err));
        if (got == 0) break;
        total += got;
        OC_RETURN_ERROR_IF(EVP_DecryptUpdate(c, out, &len, in, (int)got) != 1, err, OC_ERR_CRYPTO,
                           OC_NO_OFFSET, "AES-256-CBC decryption failed");
        if (len) OC_FORWARD(write(write_ctx, out, (uint64_t)len, err));
        if (got < PIECE_SIZE) break;
    }
    OC_RETURN_ERROR_IF(total == 0, err, OC_ERR_TRUNCATED, s->offset,
                       "truncated: the ONNXCRY1 input has no ciphertext after its header (C-52)");
    OC_RETURN_ERROR_IF(total % CBC_BLOCK, err, OC_ERR_TRUNCATED, s->offset,
                       "truncated: the ONNXCRY1 ciphertext (%llu bytes) is not a whole number of "
                       "16-byte blocks (C-52)", (unsigned long long)total);
    OC_RETURN_ERROR_IF(EVP_DecryptFinal_ex(c, out, &len) != 1, err, OC_ERR_BAD_KEY, OC_NO_OFFSET,
                       "wrong passphrase, or damaged data: the ONNXCRY1 padding check failed "
                       "(the format has no other check) (C-53)");
    if (len) OC_FORWARD(write(write_ctx, out, (uint64_t)len, err));
    return OC_OK;
}

static oc_status cry1_decrypt(source *s, oc_write_fn write, void *write_ctx, const void *key,
                              size_t key_len, oc_error *err) {
    uint8_t h[SALT_SIZE + CRY1_IV_SIZE];
    uint64_t got;
    OC_FORWARD(source_fill(s, h, sizeof h, &got, err));
    OC_RETURN_ERROR_IF(got < sizeof h, err, OC_ERR_TRUNCATED, s->offset,
                       "truncated: the input ends inside the ONNXCRY1 header (%llu of its %u bytes) (C-50)",
                       (unsigned long long)(got + OC_CRYPT_MAGIC_LEN), OC_CRYPT_CRY1_HEADER_SIZE);
    uint8_t k[KEY_SIZE];
    OC_FORWARD(pbkdf2(key, key_len, h, OC_CRYPT_CRY1_ITERATIONS, k, err));
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    uint8_t *in = malloc(PIECE_SIZE), *out = malloc(PIECE_SIZE + CBC_BLOCK);
    oc_status st = OC_OK;
    if (!c || !in || !out)
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    else if (EVP_DecryptInit_ex(c, EVP_aes_256_cbc(), NULL, k, h + SALT_SIZE) != 1)
        st = oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "AES-256-CBC setup failed");
    OPENSSL_cleanse(k, sizeof k);
    if (st == OC_OK) st = cry1_stream(c, s, in, out, write, write_ctx, err);
    EVP_CIPHER_CTX_free(c);
    if (out) OPENSSL_cleanse(out, PIECE_SIZE + CBC_BLOCK);
    free(in);
    free(out);
    return st;
}

static oc_status decrypt_source(source *s, oc_write_fn write, void *write_ctx, const void *key,
                                size_t key_len, const oc_crypt_options *opts, oc_error *err) {
    resolved r = {OC_CRYPT_NONE, 0, 0, OC_CRYPT_DEFAULT_MAX_ITERATIONS};
    oc_crypt_format want = opts ? opts->format : OC_CRYPT_NONE;
    if (opts && opts->max_iterations) r.max_iterations = opts->max_iterations;
    OC_RETURN_ERROR_IF(r.max_iterations > INT_MAX, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "max_iterations %u is above %d", r.max_iterations, INT_MAX);
    OC_RETURN_ERROR_IF(want != OC_CRYPT_NONE && want != OC_CRYPT_ONNXZEC1 && want != OC_CRYPT_ONNXCRY1,
                       err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "unknown encryption format %d",
                       (int)want);
    OC_FORWARD(check_key(key, key_len, err));
    uint8_t magic[OC_CRYPT_MAGIC_LEN];
    uint64_t got = 0;
    OC_FORWARD(source_fill(s, magic, sizeof magic, &got, err));
    oc_crypt_format f = oc_crypt_detect(magic, got);
    if (f == OC_CRYPT_NONE) {
        int prefix = got > 0 && (memcmp(magic, OC_CRYPT_ZEC1_MAGIC, (size_t)got) == 0 ||
                                 memcmp(magic, OC_CRYPT_CRY1_MAGIC, (size_t)got) == 0);
        OC_RETURN_ERROR_IF(got < sizeof magic && prefix, err, OC_ERR_TRUNCATED, got,
                           "truncated: the input ends inside the magic (C-1)");
        return oc__fail(err, OC_ERR_MALFORMED, 0,
                        "not an encrypted file: it starts with neither ONNXZEC1 nor ONNXCRY1 (C-1)");
    }
    OC_RETURN_ERROR_IF(want != OC_CRYPT_NONE && f != want, err, OC_ERR_MALFORMED, 0,
                       "the input is %s, not %s as required", oc_crypt_format_name(f),
                       oc_crypt_format_name(want));
    if (f == OC_CRYPT_ONNXZEC1)
        return zec1_decrypt(s, magic, write, write_ctx, key, key_len, &r, err);
    return cry1_decrypt(s, write, write_ctx, key, key_len, err);
}

#else /* !ONNXZ_HAVE_OPENSSL */

struct oc_crypt_writer {
    int unused;
};

static oc_status require_crypto(oc_error *err) {
    return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                    "encryption is not available: onnxz was built without OpenSSL");
}

static oc_status writer_open(oc_write_fn write, void *write_ctx, const void *key,
                             size_t key_len, const resolved *r, oc_crypt_writer **out,
                             oc_error *err) {
    (void)write, (void)write_ctx, (void)key, (void)key_len, (void)r, (void)out;
    return require_crypto(err);
}

static oc_status decrypt_source(source *s, oc_write_fn write, void *write_ctx, const void *key,
                                size_t key_len, const oc_crypt_options *opts, oc_error *err) {
    (void)s, (void)write, (void)write_ctx, (void)key, (void)key_len, (void)opts;
    return require_crypto(err);
}

oc_status oc_crypt_writer_open(oc_write_fn write, void *write_ctx, const void *key,
                               size_t key_len, const oc_crypt_options *opts,
                               oc_crypt_writer **out, oc_error *err) {
    (void)write, (void)write_ctx, (void)key, (void)key_len, (void)opts;
    if (out) *out = NULL;
    return require_crypto(err);
}

oc_status oc_crypt_writer_write(void *writer, const void *data, uint64_t size, oc_error *err) {
    (void)writer, (void)data, (void)size;
    return require_crypto(err);
}

oc_status oc_crypt_writer_finish(oc_crypt_writer *w, oc_error *err) {
    (void)w;
    return require_crypto(err);
}

void oc_crypt_writer_free(oc_crypt_writer *w) { free(w); }

#endif /* ONNXZ_HAVE_OPENSSL */

/* ======================================================================================
 * Streams, memory and files (one implementation for both builds)
 * ====================================================================================== */

oc_status oc_crypt_decrypt_stream(oc_crypt_read_fn read, void *read_ctx, oc_write_fn write,
                                  void *write_ctx, const void *key, size_t key_len,
                                  const oc_crypt_options *opts, oc_error *err) {
    if (!read || !write)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_decrypt_stream: missing argument");
    OC_FORWARD(require_crypto(err));
    source s = {read, read_ctx, 0};
    return decrypt_source(&s, write, write_ctx, key, key_len, opts, err);
}

/* Opens a writer for r into sink, feeds it size bytes at data and finishes it. */
static oc_status encrypt_all(const void *data, uint64_t size, oc_write_fn write, void *ctx,
                             const void *key, size_t key_len, const resolved *r, oc_error *err) {
    oc_crypt_writer *w = NULL;
    OC_FORWARD(writer_open(write, ctx, key, key_len, r, &w, err));
    oc_status st = oc_crypt_writer_write(w, data, size, err);
    if (st == OC_OK) st = oc_crypt_writer_finish(w, err);
    oc_crypt_writer_free(w);
    return st;
}

oc_status oc_crypt_encrypt_memory(const void *data, uint64_t size, const void *key,
                                  size_t key_len, const oc_crypt_options *opts, void **out,
                                  uint64_t *out_size, oc_error *err) {
    if (!out || !out_size || (!data && size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_encrypt_memory: missing argument");
    *out = NULL;
    *out_size = 0;
    OC_FORWARD(require_crypto(err));
    resolved r;
    uint64_t total = 0;
    OC_FORWARD(resolve_options(opts, &r, err));
    OC_FORWARD(check_key(key, key_len, err));
    OC_FORWARD(encrypted_size(size, &r, &total, err));
    OC_RETURN_ERROR_IF(total > SIZE_MAX, err, OC_ERR_LIMIT, OC_NO_OFFSET, "input too large");
    mem_sink sink = {malloc((size_t)total), total, 0};
    if (!sink.buf) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_status st = encrypt_all(data, size, mem_write, &sink, key, key_len, &r, err);
    if (st == OC_OK && sink.len != total)
        st = oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "internal error: output size mismatch");
    if (st != OC_OK) {
        free(sink.buf);
        return st;
    }
    *out = sink.buf;
    *out_size = total;
    return OC_OK;
}

static void release_buffer(void *p) { oc_bytes_free_buffer(p); }

/* Decrypts size bytes at data into a new shared span. */
static oc_status decrypt_to_span(const void *data, uint64_t size, const void *key,
                                 size_t key_len, const oc_crypt_options *opts, oc_bytes *out,
                                 oc_error *err) {
    /* The plaintext is never longer than the input after its header. */
    oc_crypt_format f = oc_crypt_detect(data, size);
    uint64_t header = f == OC_CRYPT_ONNXCRY1 ? OC_CRYPT_CRY1_HEADER_SIZE : OC_CRYPT_ZEC1_HEADER_SIZE;
    uint64_t cap = size > header ? size - header : 0;
    mem_sink sink = {NULL, cap, 0};
    if (cap && !(sink.buf = oc_bytes_alloc_buffer(cap)))
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    mem_reader mr = {data, size, 0};
    source s = {mem_read, &mr, 0};
    oc_status st = decrypt_source(&s, mem_write, &sink, key, key_len, opts, err);
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

oc_status oc_crypt_decrypt_memory(const void *data, uint64_t size, const void *key,
                                  size_t key_len, const oc_crypt_options *opts, oc_bytes *out,
                                  oc_error *err) {
    if (!out || (!data && size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_decrypt_memory: missing argument");
    oc_bytes_release(out);
    OC_FORWARD(require_crypto(err));
    return decrypt_to_span(data, size, key, key_len, opts, out, err);
}

oc_status oc_crypt_decrypt_file_to_memory(const char *path, const void *key, size_t key_len,
                                          const oc_crypt_options *opts, oc_bytes *out,
                                          oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_decrypt_file_to_memory: missing argument");
    oc_bytes_release(out);
    OC_FORWARD(require_crypto(err));
    oc_mapped map;
    OC_FORWARD(oc_map_file(path, &map, err));
    oc_status st = decrypt_to_span(map.data, map.size, key, key_len, opts, out, err);
    oc_owner_unref(map.owner);
    return st;
}

static oc_status open_input(const char *path, int *fd, oc_error *err) {
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) return oc__fail_errno(err, errno, "cannot open %s", path);
    return OC_OK;
}

/* Streams the file through a writer into sink. */
static oc_status encrypt_fd(int fd, const char *path, oc_write_fn write, void *ctx,
                            const void *key, size_t key_len, const resolved *r, oc_error *err) {
    uint8_t *buf = malloc(PIECE_SIZE);
    if (!buf) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_crypt_writer *w = NULL;
    oc_status st = writer_open(write, ctx, key, key_len, r, &w, err);
    fd_reader fr = {fd, path};
    while (st == OC_OK) {
        uint64_t got = 0;
        st = fd_read(&fr, buf, PIECE_SIZE, &got, err);
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
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_encrypt_file: missing argument");
    OC_FORWARD(require_crypto(err));
    resolved r;
    OC_FORWARD(resolve_options(opts, &r, err));
    OC_FORWARD(check_key(key, key_len, err));
    int fd;
    OC_FORWARD(open_input(in_path, &fd, err));
    oc_atomic_file af;
    oc_status st = oc_atomic_open(&af, out_path, !(opts && opts->no_overwrite), err);
    if (st == OC_OK) {
        st = encrypt_fd(fd, in_path, oc_atomic_write, &af, key, key_len, &r, err);
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
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_decrypt_file: missing argument");
    OC_FORWARD(require_crypto(err));
    OC_FORWARD(check_key(key, key_len, err));
    int fd;
    OC_FORWARD(open_input(in_path, &fd, err));
    oc_atomic_file af;
    oc_status st = oc_atomic_open(&af, out_path, !(opts && opts->no_overwrite), err);
    if (st == OC_OK) {
        fd_reader fr = {fd, in_path};
        source s = {fd_read, &fr, 0};
        st = decrypt_source(&s, oc_atomic_write, &af, key, key_len, opts, err);
        if (st == OC_OK)
            st = oc_atomic_commit(&af, err);
        else
            oc_atomic_abort(&af); /* no unauthenticated plaintext is left behind */
    }
    close(fd);
    return st;
}

/* ======================================================================================
 * Models
 * ====================================================================================== */

oc_status oc_crypt_save_model_file(const oc_model *model, const char *path, const void *key,
                                   size_t key_len, const oc_crypt_options *copts,
                                   const oc_serialize_options *sopts, oc_error *err) {
    if (!model || !path)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_save_model_file: missing argument");
    OC_SERIALIZE_OPTS(sopts, err);
    OC_RETURN_ERROR_IF(sopts && sopts->external_data, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "an encrypted model cannot have external data: it would be written in "
                       "the clear");
    OC_FORWARD(require_crypto(err));
    resolved r;
    OC_FORWARD(resolve_options(copts, &r, err));
    OC_FORWARD(check_key(key, key_len, err));
    int overwrite = (sopts ? sopts->overwrite : 1) && !(copts && copts->no_overwrite);
    oc_atomic_file af;
    OC_FORWARD(oc_atomic_open(&af, path, overwrite, err));
    oc_crypt_writer *w = NULL;
    oc_status st = writer_open(oc_atomic_write, &af, key, key_len, &r, &w, err);
    if (st == OC_OK)
        st = oc_encode(&onnx_ModelProto_desc, oc_model_proto_const(model), oc_crypt_writer_write,
                       w, err);
    if (st == OC_OK) st = oc_crypt_writer_finish(w, err);
    oc_crypt_writer_free(w);
    if (st != OC_OK) {
        oc_atomic_abort(&af);
        return st;
    }
    return oc_atomic_commit(&af, err);
}

oc_status oc_crypt_save_model_memory(const oc_model *model, const void *key, size_t key_len,
                                     const oc_crypt_options *copts, void **out,
                                     uint64_t *out_size, oc_error *err) {
    if (!model || !out || !out_size)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_save_model_memory: missing argument");
    *out = NULL;
    *out_size = 0;
    OC_FORWARD(require_crypto(err));
    resolved r;
    uint64_t plain = 0, total = 0;
    OC_FORWARD(resolve_options(copts, &r, err));
    OC_FORWARD(check_key(key, key_len, err));
    const onnx_ModelProto *proto = oc_model_proto_const(model);
    OC_FORWARD(oc_encoded_size(&onnx_ModelProto_desc, proto, &plain, err));
    OC_FORWARD(encrypted_size(plain, &r, &total, err));
    OC_RETURN_ERROR_IF(total > SIZE_MAX, err, OC_ERR_LIMIT, OC_NO_OFFSET, "model too large");
    /* Encoded straight into the writer: one buffer, the ciphertext. */
    mem_sink sink = {malloc((size_t)total), total, 0};
    if (!sink.buf) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_crypt_writer *w = NULL;
    oc_status st = writer_open(mem_write, &sink, key, key_len, &r, &w, err);
    if (st == OC_OK) st = oc_encode(&onnx_ModelProto_desc, proto, oc_crypt_writer_write, w, err);
    if (st == OC_OK) st = oc_crypt_writer_finish(w, err);
    oc_crypt_writer_free(w);
    if (st == OC_OK && sink.len != total)
        st = oc__fail(err, OC_ERR_CRYPTO, OC_NO_OFFSET, "internal error: output size mismatch");
    if (st != OC_OK) {
        free(sink.buf);
        return st;
    }
    *out = sink.buf;
    *out_size = total;
    return OC_OK;
}

/* Decodes a decrypted plaintext as a model (C-61): tensors share the plaintext's buffer
 * with no_copy; an archive is sent to libonnxz; an ONNXCRY1 plaintext that does not decode
 * most likely came from a wrong passphrase that passed the padding check (C-53). */
oc_status oc_crypt_decode_model(const oc_bytes *plain, oc_crypt_format format,
                                const char *base_dir, const oc_parse_options *popts,
                                oc_model **out, oc_error *err) {
    if (!plain || !out || (!plain->data && plain->size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_decode_model: missing argument");
    OC_PARSE_OPTS(popts, err);
    *out = NULL;
    if (!base_dir && popts) base_dir = popts->data_dir;
    OC_RETURN_ERROR_IF(oc_crypt_is_zip(plain->data, plain->size), err, OC_ERR_UNSUPPORTED,
                       OC_NO_OFFSET,
                       "the decrypted data is an .onnxz archive, not a serialized model: decrypt "
                       "it with oc_crypt_decrypt_memory and open it with oz_zip_reader_open_memory "
                       "(C-61)");
    oc_model *m = oc_model_new();
    if (!m) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_error derr;
    oc_error_clear(&derr);
    oc_owner *share = popts && popts->no_copy ? plain->owner : NULL;
    oc_status st = oc_decode(&onnx_ModelProto_desc, oc_model_proto(m), plain->data, plain->size,
                             oc_model_arena(m), popts, share, &derr);
    if (st != OC_OK) {
        oc_model_free(m);
        if (format == OC_CRYPT_ONNXCRY1)
            return oc__fail(err, OC_ERR_BAD_KEY, OC_NO_OFFSET,
                            "wrong passphrase, or damaged data: the decrypted ONNXCRY1 payload is "
                            "not a model (%s; ONNXCRY1's padding check misses about one wrong "
                            "passphrase in 256) (C-53)", derr.message);
        if (err) *err = derr;
        return st;
    }
    if (base_dir && !(popts && popts->skip_external_data)) {
        st = oc_load_external_data(&onnx_ModelProto_desc, oc_model_proto(m), base_dir, popts, err);
        if (st != OC_OK) {
            oc_model_free(m);
            return st;
        }
    }
    *out = m;
    return OC_OK;
}

oc_status oc_crypt_load_model_memory(const void *data, uint64_t size, const void *key,
                                     size_t key_len, const oc_crypt_options *copts,
                                     const oc_parse_options *popts, oc_model **out,
                                     oc_error *err) {
    if (!out || (!data && size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_load_model_memory: missing argument");
    *out = NULL;
    oc_bytes plain = {0};
    OC_FORWARD(oc_crypt_decrypt_memory(data, size, key, key_len, copts, &plain, err));
    oc_status st = oc_crypt_decode_model(&plain, oc_crypt_detect(data, size), NULL, popts, out, err);
    oc_bytes_release(&plain); /* shared tensors keep the buffer alive */
    return st;
}

oc_status oc_crypt_load_model_file(const char *path, const void *key, size_t key_len,
                                   const oc_crypt_options *copts, const oc_parse_options *popts,
                                   oc_model **out, oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_crypt_load_model_file: missing argument");
    OC_PARSE_OPTS(popts, err);
    *out = NULL;
    OC_FORWARD(require_crypto(err));
    oc_mapped map;
    OC_FORWARD(oc_map_file(path, &map, err));
    oc_bytes plain = {0};
    oc_crypt_format format = oc_crypt_detect(map.data, map.size);
    oc_status st = decrypt_to_span(map.data, map.size, key, key_len, copts, &plain, err);
    oc_owner_unref(map.owner);
    if (st != OC_OK) return st;
    /* External data lives beside the encrypted file, as for oc_model_load_file. */
    char *dir = NULL;
    if (!(popts && popts->data_dir)) {
        const char *slash = strrchr(path, '/');
        dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
        if (!dir) {
            oc_bytes_release(&plain);
            return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        }
    }
    st = oc_crypt_decode_model(&plain, format, dir, popts, out, err);
    free(dir);
    oc_bytes_release(&plain);
    return st;
}
