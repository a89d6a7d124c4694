/*
 * onnxcore/model.h - a ModelProto with its arena: load, save, copy.
 *
 * oc_model is an opaque handle owning an arena and the ModelProto in it. Tensor bytes
 * follow the byte-span rules of bytes.h: a model loaded with no_copy from memory borrows
 * the caller's bytes; one loaded with no_copy from a file shares a read-only mapping of
 * the file that stays alive as long as any tensor refers to it.
 *
 * The functions below that return a new model or message in *out (loads, clone) set
 * *out to NULL first: after a failure *out is NULL (and nothing needs freeing); after
 * success it holds the result, which the caller owns.
 */
#ifndef ONNXCORE_MODEL_H
#define ONNXCORE_MODEL_H

#include "export.h"

#include <stdint.h>

#include "codec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oc_model oc_model;

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* An empty model (ModelProto with no fields set); NULL when out of memory. */
OC_API oc_model *oc_model_new(void);
#endif
/* Frees the model, its arena, and releases every tensor span. NULL is accepted. */
OC_API void oc_model_free(oc_model *model);
/* The ModelProto and the arena to allocate additions from (valid until oc_model_free).
 * NULL for a NULL model. */
OC_API onnx_ModelProto *oc_model_proto(oc_model *model);
OC_API const onnx_ModelProto *oc_model_proto_const(const oc_model *model);
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
OC_API oc_arena *oc_model_arena(oc_model *model);
#endif

/* Loads a serialized ModelProto from memory. See oc_decode for no_copy. */
OC_API oc_status oc_model_load_memory(const void *data, uint64_t size, const oc_parse_options *opts,
                                      oc_model **out, oc_error *err);
/* Loads a .onnx file. The file is mapped read-only; without no_copy every tensor gets its
 * own copy and the mapping is dropped before returning; with no_copy tensors share it. */
OC_API oc_status oc_model_load_file(const char *path, const oc_parse_options *opts, oc_model **out,
                                    oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
struct oc_external_data;
/* As oc_model_load_file with skip_external_data, the model's tensors kept as references,
 * and their data files (beside path, or in opts->data_dir) opened into *files
 * (external.h: oc_external_data_fetch reads a tensor's bytes from them, as a deferred
 * load). The model is read and its data files checked under the pair lock (spec
 * external-data.md E-25), which fixes their identity: a tensor read later comes from the
 * files of the save the model came from, or fails (OC_ERR_INCONSISTENT) when one was
 * replaced meanwhile; never from another save's. Close *files before freeing the model. On failure
 * *out and *files are NULL. */
OC_API oc_status oc_model_load_file_deferred(const char *path, const oc_parse_options *opts,
                                             oc_model **out, struct oc_external_data **files,
                                             oc_error *err);
/* As oc_model_load_file, and *references a copy of the model as the file holds it, each
 * EXTERNAL tensor still a reference to its data file, decoded from the same bytes under
 * the same pair lock: what a reader that keeps a model open reports about it (its graph,
 * its figures) describes the files its tensors came from, whatever is saved over them
 * later. *references is NULL when the model has no EXTERNAL tensor (the model is then
 * that form itself) or external data is skipped. Free both. */
OC_API oc_status oc_model_load_file_with_references(const char *path, const oc_parse_options *opts,
                                                    oc_model **out, oc_model **references,
                                                    oc_error *err);
#endif

/* Serializes the model into a new buffer (free it with free()). */
OC_API oc_status oc_model_save_memory(const oc_model *model, const oc_serialize_options *opts,
                                      void **out, uint64_t *size, oc_error *err);
/* Writes the model to path through a temporary file in the same directory that is fsynced
 * and renamed over path: path is replaced whole or not at all. With opts->no_overwrite an
 * existing path gives OC_ERR_EXISTS. */
OC_API oc_status oc_model_save_file(const oc_model *model, const char *path,
                                    const oc_serialize_options *opts, oc_error *err);

/* A deep copy (see oc_msg_copy for how tensor bytes are shared). */
OC_API oc_status oc_model_clone(const oc_model *model, oc_model **out, oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* W-40 on every tensor of the model, at any depth (oc_tensor_check_size: its payload, or
 * an external reference's `length`, has the size its dims and data_type make): OC_OK, or
 * the first failure, naming the tensor. For validators; loading never applies it. */
OC_API oc_status oc_model_check_tensor_sizes(const oc_model *model, oc_error *err);
struct oc_tensor_fetch;
/* The same with each EXTERNAL tensor's size asked of fetch (oc_tensor_check_size_fetched;
 * NULL: as oc_model_check_tensor_sizes), for a model whose weights were left where they
 * are: its references are resolved, its bytes not read. */
OC_API oc_status oc_model_check_tensor_sizes_fetched(const oc_model *model,
                                                     const struct oc_tensor_fetch *fetch,
                                                     oc_error *err);
#endif

/* What `onnxz verify` asks of any model: it states its IR version and has a graph (W-41;
 * loads take a model without them, as onnx.load does; OC_ERR_MALFORMED naming the rule),
 * then oc_model_check_tensor_sizes. */
OC_API oc_status oc_model_check(const oc_model *model, oc_error *err);

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Generic loading of any message type from a file (TensorProto, SequenceProto... test
 * data). The message lives in arena; the file mapping is shared with no_copy as above. */
OC_API oc_status oc_msg_load_file(const oc_msgdesc *desc, const char *path, oc_arena *arena,
                                  const oc_parse_options *opts, void **out, oc_error *err);
/* Writes any message to path atomically, as oc_model_save_file does. */
OC_API oc_status oc_msg_save_file(const oc_msgdesc *desc, const void *msg, const char *path,
                                  const oc_serialize_options *opts, oc_error *err);
#endif

#ifdef __cplusplus
}
#endif

#endif
