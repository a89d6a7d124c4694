/*
 * onnxz/zip.h - the ZIP container under the .onnxz archive (spec/onnxz-zip.md).
 *
 * A writer produces a ZIP whose STORED entries have their data on an alignment boundary
 * (64 bytes by default), padded with a well-formed extra-field record in the local header;
 * zip64 records appear exactly when a size, offset or count needs them. A reader checks an
 * archive from any source before it trusts it, finds entries by name through a hash table,
 * and gives STORED data without copying it (a span sharing the file's mapping).
 *
 * Errors follow onnxcore/status.h: every fallible call returns an oc_status and fills the
 * caller's oc_error (may be NULL). Messages about input end with the id of the rule in
 * spec/onnxz-zip.md that the input breaks, e.g. "(Z-74)"; err->offset is the byte offset
 * of the record at fault. Nothing here prints, logs or aborts on input.
 *
 * Threads: a writer is used by one thread at a time. A reader is immutable once open: any
 * number of threads may look up, read and verify entries of one reader at once.
 */
#ifndef ONNXZ_ZIP_H
#define ONNXZ_ZIP_H

#include "export.h"

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <onnxcore/bytes.h>
#include <onnxcore/file.h>
#include <onnxcore/status.h>

#include "limits.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Compression methods (Z-7). */
#define OZ_ZIP_STORED   0u
#define OZ_ZIP_DEFLATED 8u

/* What the central directory says about one entry, plus where its data starts. Strings
 * belong to the reader or writer they came from and live as long as it does. */
typedef struct oz_zip_entry {
    const char *name;  /* NUL-terminated UTF-8 (never contains NUL itself) */
    uint32_t name_len; /* bytes, without the terminator */
    uint16_t method;   /* OZ_ZIP_STORED, OZ_ZIP_DEFLATED, or another (unreadable) */
    uint16_t flags;    /* general purpose bits from the central directory */
    uint32_t crc32;
    uint64_t compressed_size;
    uint64_t uncompressed_size;
    uint64_t local_header_offset;
    /* First byte of the (compressed) data in the file; 0 while not known: an archive
     * read from a URL checks each local header with its entry's first read (or
     * oz_zip_reader_local), so that listing it costs no request per entry. */
    uint64_t data_offset;
} oz_zip_entry;

/* ======================================================================================
 * Writing
 * ====================================================================================== */

typedef struct oz_zip_writer oz_zip_writer;

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Starts an archive that will replace `path` when oz_zip_writer_finish succeeds (the bytes
 * go to a temporary file beside it; see onnxcore/file.h). alignment: 0 for the default
 * (64), else a power of two from OZ_ZIP_MIN_ALIGNMENT to OZ_ZIP_MAX_ALIGNMENT.
 * no_overwrite: refuses an existing path with OC_ERR_EXISTS (now and at finish); 0
 * replaces it. On success *out owns the writer; free it with oz_zip_writer_free. */
OZ_API oc_status oz_zip_writer_open(const char *path, uint32_t alignment, int no_overwrite,
                                    oz_zip_writer **out, oc_error *err);

/* Adds a STORED entry holding size bytes at data (data may be NULL when size is 0). Its
 * data starts on a multiple of the alignment; *data_offset (if not NULL) receives where.
 * Names are checked against Z-30..Z-35 and nothing is written when one is refused: empty,
 * not UTF-8 or ending in '/': OC_ERR_INVALID_ARG; longer than OZ_ZIP_DEFAULT_MAX_NAME_LEN:
 * OC_ERR_LIMIT; absolute, a drive prefix, a backslash, or an empty, "." or ".." component:
 * OC_ERR_UNSAFE_PATH; the name of an earlier entry: OC_ERR_EXISTS. More entries or a larger
 * central directory than a reader accepts by default: OC_ERR_LIMIT. A failed write
 * (OC_ERR_IO) leaves the writer failed: later calls return OC_ERR_INVALID_ARG. */
OZ_API oc_status oz_zip_writer_add(oz_zip_writer *w, const char *name, const void *data,
                                   uint64_t size, uint64_t *data_offset, oc_error *err);

/* Adds a DEFLATED entry: size bytes at data are compressed (raw deflate, zlib level
 * `level`, -1 for zlib's default, 0..9 otherwise) in memory before anything is written.
 * Not aligned (only STORED data is). Errors as oz_zip_writer_add; a size over
 * OZ_ZIP_DEFAULT_MAX_INFLATED (readers would refuse to inflate it): OC_ERR_LIMIT. */
OZ_API oc_status oz_zip_writer_add_deflated(oz_zip_writer *w, const char *name, const void *data,
                                            uint64_t size, int level, oc_error *err);

/* Streams a STORED entry of exactly `size` bytes: begin writes the local header (and tells
 * the aligned data offset), write appends chunks (the CRC-32 is computed on the way), end
 * checks that exactly `size` bytes came and patches the CRC into the local header. Memory
 * use does not depend on size. Between begin and end no other entry can be added. Writing
 * past `size`, or ending short of it: OC_ERR_INVALID_ARG, and the writer is failed. */
OZ_API oc_status oz_zip_writer_begin(oz_zip_writer *w, const char *name, uint64_t size,
                                     uint64_t *data_offset, oc_error *err);
OZ_API oc_status oz_zip_writer_write(oz_zip_writer *w, const void *data, uint64_t size,
                                     oc_error *err);
OZ_API oc_status oz_zip_writer_end(oz_zip_writer *w, oc_error *err);

/* Entries added so far, and what will be written about entry `index` (0-based, in order of
 * addition; the name belongs to the writer). An index out of range: OC_ERR_NOT_FOUND. */
OZ_API uint64_t oz_zip_writer_count(const oz_zip_writer *w);
OZ_API oc_status oz_zip_writer_entry(const oz_zip_writer *w, uint64_t index, oz_zip_entry *out,
                                     oc_error *err);

/* The alignment the writer applies (after resolving 0 to the default). */
OZ_API uint32_t oz_zip_writer_alignment(const oz_zip_writer *w);

/* Writes the central directory and end records (zip64 ones when needed, Z-20..Z-24),
 * then fsyncs and renames the file into place. Afterwards the writer only accepts
 * oz_zip_writer_free. On failure the target is left as it was. An unfinished streamed
 * entry: OC_ERR_INVALID_ARG. */
OZ_API oc_status oz_zip_writer_finish(oz_zip_writer *w, oc_error *err);

/* Frees the writer; an unfinished archive is abandoned (its temporary file removed) and
 * the target is left as it was. NULL is accepted. */
OZ_API void oz_zip_writer_free(oz_zip_writer *w);
#endif

/* ======================================================================================
 * Reading
 * ====================================================================================== */

typedef struct oz_zip_reader oz_zip_reader;

/* Options for opening: initialise with OZ_ZIP_READER_OPTIONS_INIT or
 * oz_zip_reader_options_init (every other field 0: the defaults). Extendable as
 * onnxcore/options.h says ("Extending"). */
typedef struct oz_zip_reader_options {
    size_t size; /* sizeof(oz_zip_reader_options) */
    /* oz_zip_reader_open: read the file with pread() instead of mapping it (for network
     * filesystems, where a mapping may fault unpredictably). STORED reads then copy. */
    int use_pread;
    uint64_t max_entries;     /* 0: OZ_ZIP_DEFAULT_MAX_ENTRIES (at most ..._HARD) */
    uint32_t max_name_len;    /* 0: OZ_ZIP_DEFAULT_MAX_NAME_LEN (at most ..._HARD) */
    uint64_t max_central_dir; /* 0: OZ_ZIP_DEFAULT_MAX_CENTRAL_DIR */
    uint64_t max_inflated;    /* 0: OZ_ZIP_DEFAULT_MAX_INFLATED */
    /* The memory budget (spec/security.md M-2; 0: no cap): what the reader holds while
     * open (its tables: about 80 bytes per entry plus twice the central directory) and
     * any one entry it inflates into memory. Over it: OC_ERR_LIMIT naming max_memory. */
    uint64_t max_memory;
    /* oz_zip_reader_open of a URL (onnxcore/http.h): its settings; NULL: the defaults. */
    const struct oc_http_options *http;
} oz_zip_reader_options;

#define OZ_ZIP_READER_OPTIONS_INIT \
    { .size = sizeof(oz_zip_reader_options) }
#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Sets *opts to the defaults (as OZ_ZIP_READER_OPTIONS_INIT), size included. */
OZ_API void oz_zip_reader_options_init(oz_zip_reader_options *opts);

/* Opens the archive at path: maps it read-only (default) or reads it with pread
 * (options->use_pread), or, for an http:// or https:// URL, reads it with range requests
 * (onnxcore/http.h: the tail at open, then one request per entry read); then checks everything Z-60..Z-76 requires before returning. CRCs
 * are not checked here (see oz_zip_reader_verify). options may be NULL. Missing file:
 * OC_ERR_NOT_FOUND; a rule broken: the status the spec gives it. *out owns the reader.
 * Locks (spec/onnxz.md A-58): the reader holds a shared lock on the file for as long as it
 * or its mapping lives (spans read from it included), so that no in-place edit overwrites
 * or shortens the file under it; while an edit is running the open fails at once with
 * OC_ERR_IO ("busy"). */
OZ_API oc_status oz_zip_reader_open(const char *path, const oz_zip_reader_options *options,
                                    oz_zip_reader **out, oc_error *err);

/* As oz_zip_reader_open, reading through fd with pread. The reader works on its own
 * duplicate of fd (the caller may close fd at once); the file must not change while the
 * reader is open. No lock is taken: that is the caller's business (a duplicate shares the
 * caller's open file description, and with it the caller's own locks). */
OZ_API oc_status oz_zip_reader_open_fd(int fd, const oz_zip_reader_options *options,
                                       oz_zip_reader **out, oc_error *err);

/* As oz_zip_reader_open, over size bytes at data in memory. With an owner token the
 * reader takes a reference and STORED reads share it (OC_BYTES_SHARED); without one the
 * caller keeps the bytes alive and unchanged until the reader and every span read from
 * it are gone (OC_BYTES_BORROWED). */
OZ_API oc_status oz_zip_reader_open_memory(const void *data, uint64_t size, oc_owner *owner,
                                           const oz_zip_reader_options *options,
                                           oz_zip_reader **out, oc_error *err);

/* Passes entry index's bytes to write, in order, without holding a STORED entry in memory:
 * a mapped archive's pages, a file's in pieces, a URL's as one request streamed through
 * (after its local header's, when deferred). A DEFLATED entry is inflated into memory first
 * (as oz_zip_reader_read, within max_inflated) and checked against its CRC; so is a STORED
 * entry that is not mapped (read with pread, or downloaded), once its last byte has gone to
 * write: a mismatch fails OC_ERR_CHECKSUM, and the caller discards what it wrote. A mapped
 * STORED entry's CRC is not checked (oz_zip_reader_verify). */
OZ_API oc_status oz_zip_reader_read_to(const oz_zip_reader *r, uint64_t index, oc_write_fn write,
                                       void *ctx, oc_error *err);

/* Reads and checks entry index's local header now if that was deferred (an archive read
 * from a URL: one request), so that oz_zip_reader_entry gives its data_offset; a no-op
 * otherwise. A broken rule fails as it would have at open. */
OZ_API oc_status oz_zip_reader_local(const oz_zip_reader *r, uint64_t index, oc_error *err);

/* Closes the reader. Spans read from a mapping stay valid (they hold the mapping's owner
 * token). NULL is accepted. */
OZ_API void oz_zip_reader_close(oz_zip_reader *r);

/* Number of entries, in central directory order. */
OZ_API uint64_t oz_zip_reader_count(const oz_zip_reader *r);

/* Entry `index` (0-based, central directory order). Out of range: OC_ERR_NOT_FOUND. */
OZ_API oc_status oz_zip_reader_entry(const oz_zip_reader *r, uint64_t index, oz_zip_entry *out,
                                     oc_error *err);

/* Looks name up (exact bytes, NUL-terminated) in the hash table; *index receives its
 * position. Absent: OC_ERR_NOT_FOUND. */
OZ_API oc_status oz_zip_reader_find(const oz_zip_reader *r, const char *name, uint64_t *index,
                                    oc_error *err);

/* The entry's uncompressed bytes. STORED from a mapping or owned memory: *out shares the
 * bytes in place (no copy; OC_BYTES_SHARED holding the owner token); from unowned memory:
 * OC_BYTES_BORROWED; through pread: an owned copy. STORED data is not CRC-checked here
 * (oz_zip_reader_verify does that), but for a download (an archive at a URL), which is
 * (OC_ERR_CHECKSUM). DEFLATED: inflated into an owned 64-byte-aligned
 * buffer of exactly the declared size, and its CRC checked; output past or short of the
 * declared size, corrupt data or a CRC mismatch is an error (Z-77, Z-78). Encrypted
 * entries and other methods: OC_ERR_UNSUPPORTED. *out is released first; on failure it
 * is left empty. */
OZ_API oc_status oz_zip_reader_read(const oz_zip_reader *r, uint64_t index, oc_bytes *out,
                                    oc_error *err);

/* Checks the CRC-32 (and, for DEFLATED, the inflated size) of one entry or of all of
 * them, streaming: memory use does not depend on entry sizes. Mismatch: OC_ERR_CHECKSUM. */
OZ_API oc_status oz_zip_reader_verify(const oz_zip_reader *r, uint64_t index, oc_error *err);
OZ_API oc_status oz_zip_reader_verify_all(const oz_zip_reader *r, oc_error *err);

/* Z-36: checks that no entry name is both a file and a directory, as extracting the
 * archive would need: a file entry's name must not be the directory part of another
 * name ("a" and "a/b") nor a directory entry's name without its '/' ("W" and "W/").
 * Opening does not check this (finding entries by name is unaffected); extractors and
 * validators do. A clash: OC_ERR_INCONSISTENT naming both entries, at the file entry's
 * central header. Time O(n log n) in the number of '/' in all names. */
OZ_API oc_status oz_zip_reader_check_paths(const oz_zip_reader *r, oc_error *err);

/* The archive's size in bytes, whether it uses zip64 end records, and its comment
 * (*size receives its length; not NUL-terminated; NULL when empty). */
OZ_API uint64_t oz_zip_reader_size(const oz_zip_reader *r);
OZ_API bool oz_zip_reader_is_zip64(const oz_zip_reader *r);
/* Where the central directory lies: *offset and *size in bytes (either may be NULL). The
 * end records follow it directly (Z-65). */
OZ_API void oz_zip_reader_central_dir(const oz_zip_reader *r, uint64_t *offset, uint64_t *size);
OZ_API const uint8_t *oz_zip_reader_comment(const oz_zip_reader *r, uint32_t *size);
#endif

#ifdef __cplusplus
}
#endif

#endif
