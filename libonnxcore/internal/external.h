/*
 * internal/external.h - the two-file / N-file writer behind oc_model_save_file and the
 * pair locks (external_write.c, pair_lock.c).
 */
#ifndef ONNXCORE_INTERNAL_EXTERNAL_H
#define ONNXCORE_INTERNAL_EXTERNAL_H

#include "onnxcore_private.h"

#include "onnxcore/codec.h"
#include "onnxcore/external.h"
#include "internal/encode.h"
#include "internal/poll_lock.h"

/* Writes msg to path with large tensors in opts->external_data (spec/external-data.md):
 * data files first, each atomically, then the model. */
oc_status oc__save_external(const oc_msgdesc *desc, const void *msg, const char *path,
                            const oc_serialize_options *opts, oc_error *err);
/* oc__save_external with http: an s3:// path (and its data files beside it) written as
 * objects of the store (oc_atomic_open_url), the data objects completed before the
 * model's. */
oc_status oc__save_external_url(const oc_msgdesc *desc, const void *msg, const char *path,
                                const oc_serialize_options *opts,
                                const struct oc_http_options *http, oc_error *err);

/* oc_encode_external_fetched, with sized (may be NULL) told the model's encoded size
 * after every put and before the first write: libonnxz streams the model into an archive
 * entry whose header holds its size, instead of gathering it in memory. */
OC_PRIVATE oc_status oc__encode_external_sized(const oc_msgdesc *desc, const void *msg,
                                               uint64_t threshold, const oc_tensor_fetch *fetch,
                                               oc_external_put_fn put, void *put_ctx,
                                               oc__sized_fn sized, oc_write_fn write,
                                               void *write_ctx, oc_error *err);

/* Receives a tensor that a save moves out, with its byte count; a failure ends the walk. */
typedef oc_status (*oc__moved_fn)(void *ctx, const onnx_TensorProto *tensor, uint64_t n,
                                  oc_error *err);
/* Calls fn for each tensor that oc_encode_external_fetched with this threshold and fetch
 * hands to its put, in the same order, and writes nothing: how a writer sizes what it
 * will hold before it writes a byte (libonnxz's archive writer, spec/security.md M-5). */
OC_PRIVATE oc_status oc__external_moved(const oc_msgdesc *desc, const void *msg, uint64_t threshold,
                                        const oc_tensor_fetch *fetch, oc__moved_fn fn, void *ctx,
                                        oc_error *err);

/* Reads bytes [at, at + n) of external tensor t's bytes into dst, t one of the model
 * oc_external_data_open checked for x: one read of its data file (from a URL one range
 * request, or a few when large; nothing read ahead), the file opened again on the first
 * such read as a stream opens it (the same file as when checked, else
 * OC_ERR_INCONSISTENT) and kept open until oc_external_data_close. A range outside t's
 * bytes: OC_ERR_INVALID_ARG. One call at a time on x. */
OC_PRIVATE oc_status oc__external_data_read_at(oc_external_data *x, const onnx_TensorProto *t,
                                               uint64_t at, void *dst, uint64_t n, oc_error *err);

struct oc_source;
/* The source external tensor t's bytes are read from by oc__external_data_read_at (its
 * data file, opened again as that opens it) and the offset of t's first byte in it, for a
 * caller that reads ranges of it itself; the source is x's (borrowed until
 * oc_external_data_close). One call at a time on x. */
OC_PRIVATE oc_status oc__external_data_source(oc_external_data *x, const onnx_TensorProto *t,
                                              struct oc_source **src, uint64_t *at, oc_error *err);

/* M-5 (spec/security.md): the verdict on a writer's tables. OC_OK when `need` bytes for the
 * n tensors it moves out `how` ("as entries", "to data files"), beside the `held` bytes
 * of the model's arena, fit max_memory; else OC_ERR_LIMIT naming max_memory and M-5. */
OC_PRIVATE oc_status oc__write_budget(uint64_t n, const char *how, uint64_t need, uint64_t held,
                                      uint64_t max_memory, oc_error *err);
/* M-5 for oc__save_external with opts: the records it keeps per tensor it moves to the
 * data files (counted as it will move them), beside `held`, fit max_memory. Called
 * before a file is made; writes nothing. */
OC_PRIVATE oc_status oc__external_save_budget(const oc_msgdesc *desc, const void *msg,
                                              const oc_serialize_options *opts, uint64_t held,
                                              uint64_t max_memory, oc_error *err);

/* E-25, L-5: the locks that keep a model and its data files one pair (pair_lock.c). Each
 * returns a descriptor to give oc__pair_unlock; OC__PAIR_BUSY when another process held
 * the lock for all of about OC__PAIR_LOCK_WAIT_MS (tried again and again, never a blocking
 * wait: the caller fails "busy"); or -1 where there is nothing to lock or it cannot be
 * locked (no regular file at model_path, no permission, a filesystem without such locks):
 * the caller goes on unlocked.
 *   oc__pair_read_lock   a reader: the model file opened read-only and read-locked, the
 *                        file model_path names; decode the model from this descriptor,
 *                        open its data files, then unlock. Only a process that may write
 *                        the model can make it wait.
 *   oc__pair_write_lock  a save: the model it replaces, opened for writing and
 *                        write-locked, held while its files are renamed into place;
 *                        OC__PAIR_DENIED when the saver may not open it for writing (a
 *                        read-only model): the save is refused, since unlocked renames
 *                        would let a reader mix the new data with the old model.
 *   oc__pair_dir_lock    a save: an exclusive flock on model_path's directory, held from
 *                        before it looks at what it replaces until its commit is done
 *                        (saves one after the other; readers never take it).
 * A save's lock held by a lock that onnxz never takes (a shared flock; a POSIX lock, or an
 * open-file-description lock on other bytes than a reader's) is OC__PAIR_BUSY at once:
 * only onnxz's own readers and saves, which hold theirs briefly, are waited for
 * (spec/security.md L-5). With holder set, a save is told who held it. */
#define OC__PAIR_BUSY         (-2)
#define OC__PAIR_DENIED       (-3)
#define OC__PAIR_LOCK_WAIT_MS 2000

int oc__pair_read_lock(const char *model_path);
int oc__pair_write_lock(const char *model_path, oc__lock_holder *holder);
int oc__pair_dir_lock(const char *model_path, oc__lock_holder *holder);
void oc__pair_unlock(int fd);
/* A reader's error for OC__PAIR_BUSY: a save of model_path holds the pair. */
oc_status oc__pair_busy(const char *model_path, oc_error *err);

#endif
