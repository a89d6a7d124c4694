/*
 * internal/external.h - the two-file / N-file writer behind oc_model_save_file and the
 * pair lock (external_write.c).
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
 * before it reads the model until its data files are open). Never waits for long: while
 * another process holds it the lock is tried again for about OC__PAIR_LOCK_WAIT_MS, then
 * given up with OC__PAIR_BUSY (the caller fails "busy"). Returns the descriptor to give
 * oc__pair_unlock, OC__PAIR_BUSY, or -1 where the directory cannot be opened or locked
 * (then nothing is serialized: a directory one may not read, a filesystem without flock). */
#define OC__PAIR_BUSY         (-2)
#define OC__PAIR_LOCK_WAIT_MS 2000
int oc__pair_lock(const char *model_path, int exclusive);
/* The error for OC__PAIR_BUSY, naming the directory of model_path. */
oc_status oc__pair_busy(const char *model_path, oc_error *err);
void oc__pair_unlock(int fd);

#endif
