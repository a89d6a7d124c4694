/*
 * onnxz/reader.h - an open model file of any form, whose tensors are read one at a time
 * (experimental: docs/api.md).
 *
 *   oz_reader_options o = OZ_READER_OPTIONS_INIT;
 *   oz_reader *r = NULL;
 *   oc_error err;
 *   if (oz_reader_open("model.onnxz", &o, &r, NULL, &err) != OC_OK) ... err.message ...
 *   const onnx_TensorProto *t = oz_reader_find(r, "fc1.weight", 10);
 *   oc_bytes b = {0};
 *   if (t && oz_reader_read(r, t, &b, &err) == OC_OK) ... b.data, b.size ...
 *   oc_bytes_release(&b);
 *   oz_reader_close(r);
 *
 * What each form costs at open, and for each tensor read:
 *   an archive (a path or a URL)  its directory and model, as `onnxz ls` reads them; a
 *                                 tensor is its one entry (from a URL: one request for
 *                                 the entry's local header and data);
 *   a .onnx file                  the model and its data files, decoded and mapped under
 *                                 one pair lock (spec/security.md L-2); a tensor is a span
 *                                 of the mapping, no copy;
 *   a .onnx at a URL              the model; a tensor is its one data file, opened (its
 *                                 tail) and read (one ranged request): the other data
 *                                 files cost nothing;
 *   an encrypted file             decrypted once with the key, held in memory: the
 *                                 archive in it read as an archive (a tensor is a span
 *                                 of its entry); the .onnx in it as a URL's (a tensor in
 *                                 a data file beside it is read from that one file);
 *   skip_data_files               a .onnx's model alone, its data files neither opened nor
 *                                 mapped (what `onnxz info` reads).
 * Threads: the lookups and reads may run concurrently on one reader (each read opens what
 * it fetches from); close it when none runs.
 */
#ifndef ONNXZ_READER_H
#define ONNXZ_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <onnxcore/crypto.h>
#include <onnxcore/http.h>
#include <onnxcore/model.h>
#include <onnxz/archive.h>
#include <onnxz/export.h>
#include <onnxz/open.h>
#include <onnxz/verify.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */

typedef struct oz_reader oz_reader;

/* Options grow at their end: fill them with OZ_READER_OPTIONS_INIT or
 * oz_reader_options_init (onnxcore/options.h, "Extending"). */
typedef struct oz_reader_options {
    size_t size; /* sizeof(oz_reader_options), set by the initialisers */
    /* The memory budget of the model's decode and of an archive's directory (M-1, M-2;
     * oc_parse_options.max_memory): 0 is the decoder's default. */
    uint64_t max_memory;
    /* A URL's settings (onnxcore/http.h), copied at open; the strings they point to must
     * outlive the reader. NULL: the defaults. */
    const oc_http_options *http;
    /* The passphrase of an encrypted file (key_len bytes); NULL when there is none, and an
     * encrypted input then fails with OC_ERR_INVALID_ARG before anything is decrypted
     * (info->kind says which format, so that a caller can ask for one and open again). */
    const void *key;
    size_t key_len;
    const oc_crypt_options *crypt; /* may be NULL: the defaults */
    /* Tell the kernel the tensors' bytes will be read (oc_parse_options.prefetch): a
     * .onnx file and its data files, an archive's tensor entries; for a first pass over
     * every tensor of a file not in the page cache. Advice only. */
    int prefetch;
    /* Never read: the tail padding of this struct when it ended at `prefetch` (56 bytes),
     * which a caller built against that header passes holding anything (onnxcore/options.h,
     * "Extending"). */
    uint32_t padding_52;
    /* A .onnx's data files (at a path or a URL, or beside an encrypted file) are neither
     * opened nor mapped: the tensors kept there stay EXTERNAL references, and a read of
     * one fails with OC_ERR_UNSUPPORTED. A model whose data files are missing opens. An
     * archive's entries are read as ever. prefetch then applies to the model file alone. */
    bool skip_data_files;
    /* A trusted public key (a PEM file; NULL: none): the model must be signed with it
     * (onnxz/sign.h), and what is read is checked against its signed manifest
     * (spec/signing.md G-50..G-54): an archive's signature, its set of entries and its
     * model at open, each tensor's entry when first read whole (a slice's entry is read
     * whole first); a local .onnx's files all hashed at open. Other forms: unsupported. */
    const char *trust;
} oz_reader_options;

#define OZ_READER_OPTIONS_INIT                                                              \
    {                                                                                       \
        .size = sizeof(oz_reader_options), .max_memory = 0, .http = NULL, .key = NULL,      \
        .key_len = 0, .crypt = NULL, .prefetch = 0, .skip_data_files = false, .trust = NULL \
    }

/* Fills *opts with the defaults (as OZ_READER_OPTIONS_INIT). */
OZ_API void oz_reader_options_init(oz_reader_options *opts);

/* Opens the file or URL at path in whichever form it is (oz_detect_path): an archive (a
 * ZIP cut short: the ZIP reader's `truncated`), a .onnx with no, one or many data files, an
 * encrypted file given opts->key (not from a URL). Errors as oz_open's. info (may be NULL)
 * is filled as oz_open fills it, also on failure. *out is NULL after a failure. */
OZ_API oc_status oz_reader_open(const char *path, const oz_reader_options *opts, oz_reader **out,
                                oz_open_info *info, oc_error *err);

/* Closes r; spans read from it stay valid (they hold what they share). NULL is accepted. */
OZ_API void oz_reader_close(oz_reader *r);

/* What oz_reader_open found (as its info). */
OZ_API void oz_reader_info(const oz_reader *r, oz_open_info *info);

/* The model as the file holds it, for its graph and figures: each tensor kept in an
 * archive's entry (an encrypted archive's too) or a data file is an EXTERNAL reference.
 * Borrowed from r, to read: not to change or free. */
OZ_API oc_model *oz_reader_model(const oz_reader *r);

/* The archive r's model came from (for listings and verification): a file's or a URL's,
 * or the one an encrypted file holds, decrypted in memory; NULL for the other forms.
 * Borrowed from r. */
OZ_API const oz_archive *oz_reader_archive(const oz_reader *r);

/* The model's tensors, each name once (spec K-1: the first of a name in the model's
 * order, at any depth): their count, the i-th, the one named `name` (len bytes; a NUL is a
 * byte like any other; NULL when none). The tensors are r's: pass them to the reads
 * below, while r is open. */
OZ_API uint64_t oz_reader_count(const oz_reader *r);
OZ_API const onnx_TensorProto *oz_reader_at(const oz_reader *r, uint64_t i);
OZ_API const onnx_TensorProto *oz_reader_find(const oz_reader *r, const char *name, size_t len);

/* Tensor t's bytes into *out (released first), as oz_tensor_read gives them: a span of
 * the mapping where the file is mapped (no copy), else read whole (an archive's entry at
 * a URL: one request). W-40 is checked before any byte is read. */
OZ_API oc_status oz_reader_read(oz_reader *r, const onnx_TensorProto *t, oc_bytes *out,
                                oc_error *err);

/* The byte count oz_reader_read would give for t, W-40 checked, without reading a byte of
 * an archive's entry or a data file. */
OZ_API oc_status oz_reader_size(oz_reader *r, const onnx_TensorProto *t, uint64_t *size,
                                oc_error *err);

/* Tensor t's bytes passed to write in order, never more than a few MiB of them held at
 * once whatever t's size (a large stored entry or data range is streamed through); a
 * small one from a URL costs what oz_reader_read costs. A failure of write ends the read
 * with its status. */
OZ_API oc_status oz_reader_read_to(oz_reader *r, const onnx_TensorProto *t, oc_write_fn write,
                                   void *ctx, oc_error *err);

/* spec/security.md L-2: OC_OK while each file a local .onnx was read from (the model and
 * every data file its tensors name) is still the one at its path, as it was opened; else
 * OC_ERR_INCONSISTENT ("replaced since it was opened", or "its data file 'X' was replaced
 * since it was opened"). Always OC_OK for the other forms, which hold what they read or
 * check it as they read it. For a caller about to read the files again by their names. */
OZ_API oc_status oz_reader_unchanged(const oz_reader *r, oc_error *err);

/* Every check `onnxz verify` makes (oz_verify_path), on what r opened: an unencrypted
 * archive's open archive passes oz_archive_verify; any other file is read again by its
 * name with opts (the key of an encrypted file, data_dir, num_threads; the memory budget
 * and HTTP settings are r's own, those it was opened with) and passes oz_verify_model,
 * while it is still the one r opened (oz_reader_unchanged, before and after); with
 * opts->trust, the signature of the file at r's path first, as oz_verify_path. On success
 * a new *out (NULL after a failure) that oz_verify_report_free releases. */
OZ_API oc_status oz_reader_verify(oz_reader *r, const oz_open_options *opts, oz_verify_report **out,
                                  oc_error *err);

#endif

#ifdef __cplusplus
}
#endif

#endif
