/*
 * internal/lock.h - the advisory locks that keep editors and readers of one archive apart
 * (spec/onnxz.md A-58), and the test stop points of editors and readers.
 *
 * Two bytes of the archive file carry open-file-description locks (fcntl F_OFD_SETLK):
 * such a lock belongs to one open() of the file, never conflicts with itself, and does
 * not go away when some other descriptor of the same file is closed in the process.
 *   OZ_LOCK_EDIT    byte 0: exclusive for an editor for its whole edit; shared for a
 *                   reader while it takes the file's size and maps it.
 *   OZ_LOCK_CONTENT byte 1: shared for a reader for as long as its descriptor (or the
 *                   mapping that keeps a duplicate of it) lives; exclusive for an editor
 *                   that overwrites or shortens the file (every edit but append_only).
 * Readers and editors wait for each other, polling, for at most OZ_LOCK_WAIT_MS. A
 * conflict still there then is OC_ERR_BUSY, "busy" in the message. A filesystem
 * without such locks leaves the file unlocked (as flock did before). Only a process that
 * may write the file can keep a reader waiting: the locks a reader waits on are the
 * exclusive ones, which fcntl grants only on a descriptor open for writing.
 */
#ifndef ONNXZ_INTERNAL_LOCK_H
#define ONNXZ_INTERNAL_LOCK_H

#include <onnxcore/status.h>

#include "internal/poll_lock.h"

enum { OZ_LOCK_EDIT = 0, OZ_LOCK_CONTENT = 1 };

/* How long a reader waits for an edit to end, and an editor for the readers that have the
 * file open to let go: `meta` edits, and opens, take well under it. */
#define OZ_LOCK_WAIT_MS 1000L

/* How A-58's locks wait: pauses of 2 ms doubling up to 50 ms, for OZ_LOCK_WAIT_MS in all
 * (libonnxcore's internal/poll_lock.h): the archive's locks (oz__lock) and the flock of a
 * .onnx file that oz_edit_metadata takes. */
extern const oc__lock_wait oz__a58_wait;

/* Takes (F_RDLCK, F_WRLCK) or releases (F_UNLCK) the locks on bytes [first, last] of fd,
 * trying again for up to wait_ms (0: once). Still held by another open file then:
 * OC_ERR_BUSY, "busy: <path> <why>". */
oc_status oz__lock(int fd, int first, int last, short type, long wait_ms, const char *path,
                   const char *why, oc_error *err);

/* The stop points of tests (spec/security.md S-4; the points of edits are named in
 * spec/onnxz.md A-58): libonnxcore's, one mechanism for both libraries and the tool,
 * compiled in test builds only. */
#include "onnxcore_private.h"

#endif
