/*
 * internal/metadata.h - a model's metadata_props by key: what a stub records (stub.c)
 * and what a metadata edit changes.
 */
#ifndef ONNXZ_INTERNAL_METADATA_H
#define ONNXZ_INTERNAL_METADATA_H

#include <stddef.h>
#include <stdint.h>

#include <onnxcore/onnxcore.h>

/* Sets the value of key (klen bytes) to the NUL-terminated value: the first entry with the
 * key keeps its place and gets the value, later entries with the key go; with none, one
 * is added at the end. OC_OK or OC_ERR_NOMEM. */
oc_status oz__metadata_set(oc_arena *arena, onnx_ModelProto *model, const char *key, size_t klen,
                           const char *value);

/* Removes every entry with key (klen bytes); returns how many went. */
uint64_t oz__metadata_remove(onnx_ModelProto *model, const char *key, size_t klen);

/* The value of the last entry with key (klen bytes), NULL when there is none. */
const oc_str *oz__metadata_get(const onnx_ModelProto *model, const char *key, size_t klen);

#endif
