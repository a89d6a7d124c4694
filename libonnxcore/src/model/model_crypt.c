/*
 * model_crypt.c - encrypted models: the model-level functions of onnxcore/crypto_model.h, one
 * floor above both the model code and the encryption component (src/crypto/).
 *
 * A model is encoded straight into an oc_crypt_writer (the plaintext is never whole in
 * memory nor on disk); a decrypted plaintext is looked at once here (C-61): an .onnxz
 * archive is refused with a pointer to libonnxz, anything else is decoded as a model, its
 * tensors sharing the plaintext's buffer with no_copy.
 */
#include <stdlib.h>
#include <string.h>

#include "onnxcore/crypto_model.h"
#include "onnxcore/external.h"
#include "internal/crypt.h"
#include "internal/error.h"
#include "onnxcore_private.h"
#include "internal/onnxcore_shared.h"
#include "internal/onnxcore_atomic.h"
#include "internal/atomic_url.h"
#include "internal/crypt_url.h"

bool oc_crypt_is_zip(const void *data, uint64_t size) {
    const uint8_t *p = data;
    return data && size >= 4 && p[0] == 'P' && p[1] == 'K' &&
           ((p[2] == 3 && p[3] == 4) || (p[2] == 5 && p[3] == 6));
}

oc_status oc_crypt_save_model_file(const oc_model *model, const char *path, const void *key,
                                   size_t key_len, const oc_crypt_options *copts,
                                   const oc_serialize_options *sopts, oc_error *err) {
    return oc_crypt_save_model_url(model, path, key, key_len, copts, sopts, NULL, err);
}

oc_status oc_crypt_save_model_url(const oc_model *model, const char *path, const void *key,
                                  size_t key_len, const oc_crypt_options *copts,
                                  const oc_serialize_options *sopts, const oc_http_options *http,
                                  oc_error *err) {
    if (!model || !path)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_save_model_file: missing argument");
    OC_SERIALIZE_OPTS(sopts, err);
    OC_CRYPT_OPTS(copts, err);
    OC_RETURN_ERROR_IF(sopts->external_data, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "an encrypted model cannot have external data: it would be written in "
                       "the clear");
    OC_FORWARD(oc_check_references_resolved(&onnx_ModelProto_desc, oc_model_proto_const(model),
                                            sopts->fetch, err)); /* S-40 */
    oc__crypt_params p;
    OC_FORWARD(oc__crypt_prepare(copts, key, key_len, &p, err));
    oc_atomic_file af;
    OC_FORWARD(oc_atomic_open_url(&af, path, sopts->no_overwrite || copts->no_overwrite,
                                  OC_ATOMIC_STREAM, http, err));
    af.no_sync = sopts->no_sync;
    oc_crypt_writer *w = NULL;
    oc_status st = oc__crypt_writer_open(oc_atomic_write, &af, key, key_len, &p, &w, err);
    if (st == OC_OK) /* fetched tensors: streamed in, all inside the model */
        st = oc_encode_external_fetched(&onnx_ModelProto_desc, oc_model_proto_const(model),
                                        UINT64_MAX, sopts->fetch, NULL, NULL, oc_crypt_writer_write,
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
                                     const oc_crypt_options *copts, void **out, uint64_t *out_size,
                                     oc_error *err) {
    if (!model || !out || !out_size)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_save_model_memory: missing argument");
    *out = NULL;
    *out_size = 0;
    OC_CRYPT_OPTS(copts, err);
    oc__crypt_params p;
    uint64_t plain = 0, total = 0;
    OC_FORWARD(oc__crypt_prepare(copts, key, key_len, &p, err));
    const onnx_ModelProto *proto = oc_model_proto_const(model);
    OC_FORWARD(oc_encoded_size(&onnx_ModelProto_desc, proto, &plain, err));
    OC_FORWARD(oc__crypt_encrypted_size(plain, &p, &total, err));
    OC_RETURN_ERROR_IF(total > SIZE_MAX, err, OC_ERR_LIMIT, OC_NO_OFFSET, "model too large");
    /* Encoded straight into the writer: one buffer, the ciphertext. */
    oc__crypt_buffer sink;
    OC_FORWARD(oc__crypt_buffer_open(&sink, total, err));
    oc_crypt_writer *w = NULL;
    oc_status st = oc__crypt_writer_open(oc__crypt_buffer_write, &sink, key, key_len, &p, &w, err);
    if (st == OC_OK) st = oc_encode(&onnx_ModelProto_desc, proto, oc_crypt_writer_write, w, err);
    if (st == OC_OK) st = oc_crypt_writer_finish(w, err);
    oc_crypt_writer_free(w);
    return oc__crypt_buffer_finish(&sink, st, out, out_size, err);
}

/* Decodes a decrypted plaintext as a model (C-61): tensors share the plaintext's buffer
 * with no_copy; an archive is sent to libonnxz; an ONNXCRY1 plaintext that does not decode
 * most likely came from a wrong passphrase that passed the padding check (C-53). */
oc_status oc_crypt_decode_model(const oc_bytes *plain, oc_crypt_format format, const char *base_dir,
                                const oc_parse_options *popts, oc_model **out, oc_error *err) {
    if (!plain || !out || (!plain->data && plain->size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_decode_model: missing argument");
    *out = NULL; /* on any failure, an unset options struct too */
    OC_PARSE_OPTS(popts, err);
    if (!base_dir && popts) base_dir = popts->data_dir;
    OC_RETURN_RULE_IF(oc_crypt_is_zip(plain->data, plain->size), err, OC_ERR_UNSUPPORTED,
                      OC_NO_OFFSET, "C-61",
                      "the decrypted data is an .onnxz archive, not a serialized model: decrypt "
                      "it with oc_crypt_decrypt_memory and open it with oz_zip_reader_open_memory");
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
            return oc__fail_rule(
                err, OC_ERR_BAD_KEY, OC_NO_OFFSET, "C-53",
                "wrong passphrase, or damaged data: the decrypted ONNXCRY1 payload is "
                "not a model (%s; ONNXCRY1's padding check misses about one wrong "
                "passphrase in 256)",
                derr.message);
        if (err) *err = derr;
        return st;
    }
    if (base_dir && !(popts && popts->skip_external_data)) {
        st = oc_external_data_load(&onnx_ModelProto_desc, oc_model_proto(m), base_dir, popts, err);
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
                                     const oc_parse_options *popts, oc_model **out, oc_error *err) {
    if (!out || (!data && size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_load_model_memory: missing argument");
    *out = NULL;
    oc_bytes plain = {0};
    OC_FORWARD(oc_crypt_decrypt_memory(data, size, key, key_len, copts, &plain, err));
    oc_status st =
        oc_crypt_decode_model(&plain, oc_crypt_detect(data, size), NULL, popts, out, err);
    oc_bytes_release(&plain); /* shared tensors keep the buffer alive */
    return st;
}

oc_status oc_crypt_load_model_file(const char *path, const void *key, size_t key_len,
                                   const oc_crypt_options *copts, const oc_parse_options *popts,
                                   oc_model **out, oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_load_model_file: missing argument");
    *out = NULL; /* on any failure, an unset options struct too */
    OC_PARSE_OPTS(popts, err);
    oc_bytes plain = {0};
    oc_crypt_format format = OC_CRYPT_NONE;
    OC_FORWARD(oc__crypt_decrypt_file_span(path, key, key_len, copts, &plain, &format, err));
    oc_status st = oc_crypt_decode_model_file(&plain, format, path, popts, out, err);
    oc_bytes_release(&plain);
    return st;
}

/* The one place a decrypted file's model finds its external data: beside the encrypted
 * file, as for oc_model_load_file, unless popts->data_dir says where (libonnxz's
 * oz_encrypted_load comes here too, after sending archives to its reader). */
oc_status oc_crypt_decode_model_file(const oc_bytes *plain, oc_crypt_format format,
                                     const char *path, const oc_parse_options *popts,
                                     oc_model **out, oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_crypt_decode_model_file: missing argument");
    *out = NULL; /* on any failure, an unset options struct too */
    OC_PARSE_OPTS(popts, err);
    char *dir = NULL;
    if (!(popts && popts->data_dir)) {
        dir = oc__path_dir(path);
        if (!dir) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    oc_status st = oc_crypt_decode_model(plain, format, dir, popts, out, err);
    free(dir);
    return st;
}
