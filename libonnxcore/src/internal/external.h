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

/* E-25: the lock that keeps a model and its data files one pair. An flock on the
 * directory of model_path (exclusive: a multi-file save committing; shared: a reader from
 * before it reads the model until its data files are open). Returns the descriptor to
 * give oc__pair_unlock, or -1 where the directory cannot be opened or locked (then
 * nothing is serialized: a directory one may not read, a filesystem without flock). */
int oc__pair_lock(const char *model_path, int exclusive);
void oc__pair_unlock(int fd);

#endif
