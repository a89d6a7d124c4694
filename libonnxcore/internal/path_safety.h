/*
 * internal/path_safety.h - where a data file named by a model may be
 * (spec/external-data.md E-10, E-11, E-18). Every location read from a model passes
 * oc__location_problem, then oc__open_beneath with O_PATH, then oc__reopen_regular.
 */
#ifndef ONNXCORE_INTERNAL_PATH_SAFETY_H
#define ONNXCORE_INTERNAL_PATH_SAFETY_H

#include <fcntl.h>
#include <sys/stat.h>

#include "onnxcore/arena.h"
#include "onnxcore_private.h"

/* How a data file is opened for reading: never blocking (a FIFO), never a terminal. */
#define OC__READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/* E-10: NULL when loc names a file beneath a directory (relative, non-empty, no NUL, no
 * `..` component, not a directory); else why not ("is an absolute path", ...). */
OC_PRIVATE const char *oc__location_problem(const oc_str *loc);

/* E-11: opens rel beneath dirfd following no symbolic link (openat2, else one openat per
 * component with O_NOFOLLOW), or returns -1 with errno (ELOOP or EXDEV: a link or an
 * escape). flags: OC__READ_FLAGS, or O_PATH | O_CLOEXEC to look without opening. */
int oc__open_beneath(int dirfd, const char *rel, int flags);

/* E-18: opens the regular file that pathfd (an O_PATH descriptor) stands for, after
 * checking its type without opening it; through /proc/self/fd, else by name again (rel
 * beneath dir_fd, or path) with the same inode. Returns the descriptor; -1 with errno;
 * or -1 with *why set ("is not a regular file", "changed while it was opened"). */
int oc__reopen_regular(int pathfd, int dir_fd, const char *rel, const char *path, struct stat *st,
                       const char **why);

/* E-11 and E-18 in one call: the regular file rel beneath dir_fd (or, when path is not
 * NULL, the caller's own path standing for it), opened with OC__READ_FLAGS following no
 * symbolic link. Returns the descriptor, its stat in *st; -1 with errno (ELOOP or EXDEV:
 * a link or an escape); or -1 with *why set. rel must have passed E-10 first. */
OC_PRIVATE int oc__open_location(int dir_fd, const char *rel, const char *path, struct stat *st,
                                 const char **why);

/* E-28: when the directory dirfd stands for lies, by its real path, in a snapshot of the
 * Hugging Face hub's cache (".../models--ORG--NAME/snapshots/REV/..."; "datasets--" and
 * "spaces--" too), a descriptor (O_PATH) of the repository's folder (models--ORG--NAME),
 * found from dirfd by "..", and in prefix the path from there down to the directory
 * ("snapshots/REV/", ending in '/'); else -1 (not in a cache, or no /proc to tell). */
OC_PRIVATE int oc__hub_cache_root(int dirfd, char *prefix, size_t cap);

/* E-28: the regular file prefix + rel beneath root_fd (from oc__hub_cache_root), its
 * symbolic links followed only while each stays beneath root_fd (a relative target, no
 * `..` above it, 40 links at most), then opened following none on the path they led to,
 * as oc__open_location. -1 with errno EXDEV (a link out of the repository, or an
 * absolute one) or ELOOP (too many links), or with *why set. rel must have passed E-10. */
OC_PRIVATE int oc__open_in_hub_cache(int root_fd, const char *prefix, const char *rel,
                                     struct stat *st, const char **why);

#endif
