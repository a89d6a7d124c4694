/*
 * onnxcore/external.h - tensor bytes kept outside the serialized model.
 *
 * ONNX lets a TensorProto say `data_location: EXTERNAL` and give its bytes' place in
 * `external_data` entries: location (a file relative to the model's directory), offset,
 * length, checksum. The rules we follow, including path safety, are in
 * spec/external-data.md. Loading such a model through oc_model_load_file resolves them by
 * default (see oc_parse_options); the functions here are for callers that hold a model
 * already, and for writers that place tensor bytes elsewhere (data files, archives).
 */
#ifndef ONNXCORE_EXTERNAL_H
#define ONNXCORE_EXTERNAL_H

#include "export.h"

#include <stdbool.h>
#include <stdint.h>

#include "codec.h"
#include "file.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Loads the external data of every EXTERNAL tensor in msg from files under base_dir (a
 * directory the caller trusts; locations inside the model are not trusted). Afterwards
 * each such tensor holds its bytes in raw_data: the tensor is back in the form
 * it had before a writer moved its bytes out (spec E-16). Uses opts->no_copy (share one
 * mapping per data file), location, verify_checksums, buffer.alignment and num_threads.
 * Errors name the tensor: OC_ERR_UNSAFE_PATH, OC_ERR_NOT_FOUND, OC_ERR_IO (the file cannot
 * be opened or read, e.g. a name too long), OC_ERR_MALFORMED (a bad offset or length),
 * OC_ERR_TRUNCATED (data past the end of its file), OC_ERR_INCONSISTENT (misaligned with
 * no_copy, E-14), OC_ERR_CHECKSUM, OC_ERR_UNSUPPORTED (no OpenSSL for checksums),
 * OC_ERR_INVALID_ARG (an alignment that is not a power of two). On error the model is
 * unchanged. */
OC_API oc_status oc_external_data_load(const oc_msgdesc *desc, void *msg, const char *base_dir,
                                       const oc_parse_options *opts, oc_error *err);
#endif

/* Finds the bytes a location names, for oc_external_data_load_with. It fills *out with the
 * whole "file" (the tensor's offset and length apply within it) and one reference to its
 * owner for the caller (owner NULL: the bytes live as long as the resolver's source and
 * no_copy spans borrow them). It is called once per distinct location; the tensor is
 * passed for error messages. Failures should name the tensor and the location. */
typedef oc_status (*oc_external_resolve_fn)(void *ctx, const onnx_TensorProto *tensor,
                                            const oc_str *location, oc_mapped *out, oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* As oc_external_data_load, with locations resolved by `resolve` instead of files beneath
 * a directory (libonnxz resolves them to archive entries). The `location` override and
 * path rules of files do not apply; everything else does. */
OC_API oc_status oc_external_data_load_with(const oc_msgdesc *desc, void *msg,
                                            oc_external_resolve_fn resolve, void *resolve_ctx,
                                            const oc_parse_options *opts, oc_error *err);
#endif

/* Where one tensor's bytes went, as a sink reports it. location must stay valid until the
 * encode call returns. */
typedef struct oc_external_ref {
    const char *location;
    uint64_t offset;
    bool has_offset; /* write an `offset` key */
    uint64_t length;
    const char *checksum; /* hex SHA-1 or NULL */
} oc_external_ref;

/* Receives each tensor to move out of the model, in encoding order. It stores the bytes
 * (tensor->raw_data, or with a fetch oc_tensor_write's) and fills ref; ref->length holds
 * their count on entry. The strings ref points to need to last only until the next call
 * of put: the encoder keeps copies. */
typedef oc_status (*oc_external_put_fn)(void *ctx, const onnx_TensorProto *tensor,
                                        oc_external_ref *ref, oc_error *err);

/* The bytes of tensors that are still EXTERNAL references, for a save
 * (oc_serialize_options.fetch, oc_encode_external_fetched): a converter streams them from
 * its input while it writes its output. */
typedef struct oc_tensor_fetch {
    /* *n receives the byte count of external tensor `tensor`; an invalid reference fails. */
    oc_status (*size)(void *ctx, const onnx_TensorProto *tensor, uint64_t *n, oc_error *err);
    /* Passes exactly those bytes to write, in order, holding few of them at a time. */
    oc_status (*stream)(void *ctx, const onnx_TensorProto *tensor, oc_write_fn write,
                        void *write_ctx, oc_error *err);
    void *ctx;
} oc_tensor_fetch;

/* A model's data files, checked and left where they are: a converter's way to write a
 * model whose external data is remote or larger than memory, streaming each tensor from
 * its file into the output (oc_serialize_options.fetch) instead of loading them all. */
typedef struct oc_external_data oc_external_data;

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Checks every EXTERNAL tensor of msg as oc_external_data_load does (E-10..E-18, the
 * location override, max_tensor_bytes, max_external_bytes; files beneath base_dir, or
 * beside a model's URL), without reading their bytes, and makes *out the fetch of them:
 * a data file is opened again when its first tensor is streamed, and must have the size
 * it had when checked (else OC_ERR_INCONSISTENT); a tensor with a checksum is hashed as
 * it streams and fails with OC_ERR_CHECKSUM after its last byte when verify_checksums is
 * set (a save then fails, and an atomic save leaves nothing). msg, opts and base_dir are
 * kept by reference until oc_external_data_close; the model's tensors must not change.
 * One save at a time may use the fetch. On error *out is NULL. */
OC_API oc_status oc_external_data_open(const oc_msgdesc *desc, const void *msg,
                                       const char *base_dir, const oc_parse_options *opts,
                                       oc_external_data **out, oc_error *err);
/* Fills *fetch with x's fetch; it stays valid until oc_external_data_close(x). */
OC_API void oc_external_data_fetch(oc_external_data *x, oc_tensor_fetch *fetch);
/* Closes the data files x holds; NULL is accepted. */
OC_API void oc_external_data_close(oc_external_data *x);

/* Serializes msg to `write` with every tensor whose raw_data has at least threshold bytes
 * replaced by an EXTERNAL reference to where `put` stored it. All put calls happen before
 * the first write call. The model itself is not modified. Tensors that are EXTERNAL
 * already are written as they are. */
OC_API oc_status oc_encode_external(const oc_msgdesc *desc, const void *msg, uint64_t threshold,
                                    oc_external_put_fn put, void *put_ctx, oc_write_fn write,
                                    void *write_ctx, oc_error *err);
/* As oc_encode_external, with every EXTERNAL tensor's bytes taken from fetch (NULL: none):
 * moved out to put like raw_data of the same size, or written inside the model (below the
 * threshold, or with put NULL) as the loader would leave it (spec E-16). */
OC_API oc_status oc_encode_external_fetched(const oc_msgdesc *desc, const void *msg,
                                            uint64_t threshold, const oc_tensor_fetch *fetch,
                                            oc_external_put_fn put, void *put_ctx,
                                            oc_write_fn write, void *write_ctx, oc_error *err);
/* Passes a tensor's `size` bytes to write (size: the count fetch->size gave, or put's
 * ref->length): streamed from fetch for an EXTERNAL tensor when fetch is given, and held
 * to exactly that count (more: OC_ERR_INCONSISTENT, fewer: OC_ERR_TRUNCATED); else its
 * raw_data (oc_bytes_write), which must have that size. */
OC_API oc_status oc_tensor_write(const oc_tensor_fetch *fetch, const onnx_TensorProto *tensor,
                                 uint64_t size, oc_write_fn write, void *ctx, oc_error *err);

/* spec/security.md S-40: a save writes what a model holds, never a reference it cannot
 * vouch for. Every EXTERNAL tensor reachable from msg must be resolved by fetch (given:
 * each one's bytes stream from it, as a converter's do); with fetch NULL, a model holding
 * one is refused (OC_ERR_INVALID_ARG naming the first tensor and its location): its
 * reference, written as it is, would name an archive entry, a data file or any path
 * relative to wherever the output goes, and the output would have lost the bytes. The
 * savers of whole models (libonnxz's one save path behind oz_save and oz_save_any, and
 * oc_crypt_save_model_file) call it before anything is written; writers that keep references on purpose (`meta` in place, `stub`) use
 * oc_model_save_file. */
OC_API oc_status oc_check_references_resolved(const oc_msgdesc *desc, const void *msg,
                                              const oc_tensor_fetch *fetch, oc_error *err);

/* True for the external_data keys this library defines and acts on: location, offset,
 * length, checksum (and basepath, which it recognises and never acts on). Other keys
 * are kept as they are and never acted on (spec E-3). */
OC_API bool oc_external_key_is_known(const oc_str *key);
#endif

/* True when the tensor's data lives outside the model (data_location == EXTERNAL). */
OC_API bool oc_tensor_is_external(const onnx_TensorProto *tensor);
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* The value of an external_data key, or NULL (the last entry wins, as in onnx). */
OC_API const oc_str *oc_tensor_external_value(const onnx_TensorProto *tensor, const char *key);
/* Reads a tensor's `offset` and `length` keys under spec E-12: each may be absent (then
 * *offset is 0, *length 0, and *has_offset / *has_length, when not NULL, are false); present,
 * it must be 1 to 19 decimal digits, at most 2^63 - 1. Anything else (a sign, a space,
 * hex, a NUL, ...) is OC_ERR_MALFORMED with "tensor 'NAME': external data offset 'VALUE'
 * is not a non-negative integer (E-12)", NAME and VALUE escaped by oc_quote. Archives
 * (libonnxz, spec onnxz.md A-21) read their tensors' keys with the same rule. */
OC_API oc_status oc_tensor_external_range(const onnx_TensorProto *tensor, uint64_t *offset,
                                          bool *has_offset, uint64_t *length, bool *has_length,
                                          oc_error *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
