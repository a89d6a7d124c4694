/*
 * encrypted.c - encrypted .onnxz archives (onnxz/encrypted.h, spec/encryption.md C-61).
 * Decryption is libonnxcore's (onnxcore/crypto.h); this only routes the decrypted buffer,
 * with its owner token, into the ZIP reader.
 */
#include <stdlib.h>
#include <string.h>

#include <onnxcore/crypto.h>
#include <onnxcore/crypto_model.h>

#include "onnxz/encrypted.h"
#include "internal/archive.h"
#include "internal/error.h"
#include "internal/options.h"

oc_status oz_archive_open_memory(const void *data, uint64_t size, oc_owner *owner,
                                 const oz_zip_reader_options *zip_opts, oz_archive **out,
                                 oc_error *err) {
    if (!out || (!data && size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_archive_open_memory: missing argument");
    oz_zip_reader *zip = NULL;
    OC_FORWARD(oz_zip_reader_open_memory(data, size, owner, zip_opts, &zip, err));
    return oz__archive_wrap(zip, "(memory)", out, err);
}

/* The decrypted bytes as an archive; the span's reference is the caller's to drop. */
static oc_status open_plain(const oc_bytes *plain, const char *path,
                            const oz_zip_reader_options *zip_opts, oz_archive **out,
                            oc_error *err) {
    if (!oc_crypt_is_zip(plain->data, plain->size))
        return oc_error_file(err, path,
                             oc__fail(err, OC_ERR_MALFORMED, OC_NO_OFFSET,
                                      "%s: the decrypted data is not an .onnxz archive", path));
    return oz_archive_open_memory(plain->data, plain->size, plain->owner, zip_opts, out, err);
}

oc_status oz_archive_open_encrypted(const char *path, const void *key, size_t key_len,
                                    const oc_crypt_options *copts,
                                    const oz_zip_reader_options *zip_opts, oz_archive **out,
                                    oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_archive_open_encrypted: missing argument");
    oc_bytes plain = {0};
    OC_FORWARD(oc_crypt_decrypt_file_to_memory(path, key, key_len, copts, &plain, err));
    oc_status st = open_plain(&plain, path, zip_opts, out, err);
    oc_bytes_release(&plain); /* the reader holds its own reference */
    return st;
}

oc_status oz__encrypted_open(const char *path, const void *key, size_t key_len,
                             const oc_crypt_options *copts, const oc_parse_options *popts,
                             oz_archive **keep, oc_model **out, bool *is_archive, oc_error *err) {
    if (keep) *keep = NULL;
    oc_crypt_format format = OC_CRYPT_NONE;
    OC_FORWARD(oc_crypt_detect_file(path, &format, err));
    oc_bytes plain = {0};
    OC_FORWARD(oc_crypt_decrypt_file_to_memory(path, key, key_len, copts, &plain, err));
    bool zip = oc_crypt_is_zip(plain.data, plain.size);
    if (is_archive) *is_archive = zip;
    oc_status st;
    if (zip) {
        oz_archive *ar = NULL;
        oz_zip_reader_options zo = oz__zip_options_for(popts);
        st = open_plain(&plain, path, &zo, &ar, err);
        if (st == OC_OK) st = oz_archive_load_model(ar, popts, out, err);
        if (st == OC_OK && keep)
            *keep = ar;
        else
            oz_archive_close(ar); /* no_copy tensors keep the buffer alive on their own */
    } else {
        /* External data beside the encrypted file: oc_crypt_load_model_file's own path. */
        st = oc_crypt_decode_model_file(&plain, format, path, popts, out, err);
    }
    oc_bytes_release(&plain);
    return st;
}

oc_status oz_encrypted_load(const char *path, const void *key, size_t key_len,
                            const oc_crypt_options *copts, const oc_parse_options *popts,
                            oc_model **out, bool *is_archive, oc_error *err) {
    if (!path || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_encrypted_load: missing argument");
    *out = NULL; /* on any failure, an unset options struct too */
    OC_PARSE_OPTS(popts, err);
    return oz__encrypted_open(path, key, key_len, copts, popts, NULL, out, is_archive, err);
}
