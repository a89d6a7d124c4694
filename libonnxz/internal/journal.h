/*
 * internal/journal.h - the journal of an in-place edit (spec/onnxz.md ).
 *
 * While an edit appends its new tail to an archive, the file ends with bytes that are not
 * (yet) a ZIP end: a crash there leaves the old archive followed by a torn tail. Before
 * the first byte is appended, the editor durably writes a small journal beside the
 * archive (`<path>-journal`) that records the archive's old size; it removes it once the
 * new tail is durable. Readers never look at it. The next editor uses it only as a
 * candidate for the old end, and cuts the file back there only when the file is no
 * archive, the first old_size bytes are one, and the journal's checks hold.
 */
#ifndef ONNXZ_INTERNAL_JOURNAL_H
#define ONNXZ_INTERNAL_JOURNAL_H

#include <stdint.h>

#include <onnxcore/status.h>

#define OZ_JOURNAL_SUFFIX "-journal"

typedef struct oz__journal {
    uint64_t old_size;   /* the archive's size before the edit */
    uint64_t new_size;   /* its size once the appended tail is complete */
    uint64_t check_from; /* [check_from, old_size) is the part of the old archive the edit */
    uint32_t check_crc;  /* may overwrite later; its CRC-32 */
} oz__journal;

/* archive_path + OZ_JOURNAL_SUFFIX in a new string (free it), or NULL when out of memory;
 * when archive_path is a symbolic link, the file it points at + OZ_JOURNAL_SUFFIX. */
char *oz__journal_path(const char *archive_path);

/* CRC-32 of bytes [from, to) of fd, read with pread in chunks. */
oc_status oz__crc_range(int fd, uint64_t from, uint64_t to, uint32_t *crc, oc_error *err);

/* Creates the journal at jpath (never over an existing name, never through a link) and
 * makes it durable: the file and its directory are fsynced before this returns. */
oc_status oz__journal_write(const char *jpath, const oz__journal *j, oc_error *err);

/* Removes the journal at jpath and fsyncs its directory. No journal: OC_OK. */
oc_status oz__journal_remove(const char *jpath, oc_error *err);

/* Reads the journal at jpath without following a link or blocking on a FIFO. Nothing
 * there: *found = 0. A well-formed journal: *found = 1 and *j filled. Anything else
 * at that name (a link, a FIFO, a directory, a regular file that is no complete journal):
 * OC_ERR_IO naming it; nothing is removed. */
oc_status oz__journal_read(const char *jpath, oz__journal *j, int *found, oc_error *err);

/* True when the journal's numbers fit a file of `size` bytes open on fd
 * (check_from < old_size < size <= new_size) and bytes [check_from, old_size) of it still
 * have check_crc. */
int oz__journal_applies(const oz__journal *j, int fd, uint64_t size);

#endif
