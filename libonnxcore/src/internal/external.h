/*
 * internal/external.h - the two-file / N-file writer behind oc_model_save_file.
 */
#ifndef ONNXCORE_INTERNAL_EXTERNAL_H
#define ONNXCORE_INTERNAL_EXTERNAL_H

#include "onnxcore/codec.h"

/* Writes msg to path with large tensors in opts->external_data (spec/external-data.md):
 * data files first, each atomically, then the model. */
oc_status oc__save_external(const oc_msgdesc *desc, const void *msg, const char *path,
                            const oc_serialize_options *opts, oc_error *err);

#endif
