/*
 * internal/edit.h - committing an edit with one more entry (the signature's), and a seam
 * for tests of in-place editing (tests/archive_edit): the editor
 * calls the hook, when one is set, at each step of spec/onnxz.md A-54, with the step's
 * name ("journaled", "appending", "appended", "committed", "compacting", "compacted",
 * "truncated"). A test sets it in a child process and has it kill the process there, to
 * look at what a crash at that step leaves. Nothing else sets it. It exists in test
 * builds only (ONNXZ_TEST_POINTS, onnxcore_private.h).
 */
#ifndef ONNXZ_INTERNAL_EDIT_H
#define ONNXZ_INTERNAL_EDIT_H

#include <stdint.h>

#include <onnxcore/status.h>

#include "onnxz/archive.h"
#include "onnxz/zip.h"

/* As oz_archive_edit_commit, with the model given as its encoded bytes (model_n of them,
 * written as they are, DEFLATED when deflate_model is set) and one more entry, `name`
 * with `size` bytes of data, STORED, written just before it. An entry of that name already
 * in the archive must be the last one before the model: it is replaced (its bytes become
 * unused, and the edit appends and compacts, A-54); one elsewhere: OC_ERR_UNSUPPORTED
 * (repack). The signature entry of a signed archive (spec/signing.md) is written so. name
 * and data must outlive the call only. */
oc_status oz__archive_edit_commit_entry(oz_archive_edit *ed, const uint8_t *model, uint64_t model_n,
                                        int deflate_model, const char *name, const uint8_t *data,
                                        uint64_t size, oc_error *err);

/* Makes the entry that oz__archive_edit_commit_with writes before the model, from the
 * archive's reader and the model's encoded bytes: *data (malloc'ed; the edit frees it),
 * *size bytes. */
typedef oc_status (*oz__edit_entry_fn)(void *ctx, const oz_zip_reader *zip, const uint8_t *model,
                                       uint64_t model_n, uint8_t **data, uint64_t *size,
                                       oc_error *err);

/* As oz_archive_edit_commit, and the entry `name` is dropped from the archive (it must
 * then be the last entry before the model; an archive without it is no error) or, with
 * make, replaced by (or given) the entry make builds from the encoded model: both the
 * model and that entry in the one crash-safe edit. A signed archive's metadata
 * edit re-signs or unsigns so (spec/signing.md G-40). */
oc_status oz__archive_edit_commit_with(oz_archive_edit *ed, const oc_msgdesc *desc, const void *msg,
                                       const char *name, oz__edit_entry_fn make, void *ctx,
                                       oc_error *err);

#ifdef ONNXZ_TEST_POINTS
extern void (*oz__edit_test_hook)(const char *step);
#endif

#endif
