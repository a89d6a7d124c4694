/*
 * internal/source.h - one byte source under every reader (as libzip's zip_source,
 * nanopb's pb_istream_t, miniz's read callback).
 *
 * A source is a read-only run of `size` bytes that can be read at any offset. Some can
 * also do more, each said by a capability bit:
 *
 *   OC_SOURCE_MAP     map(): a span of any range that stays valid while the span lives,
 *                     without copying (memory, a mapped file);
 *   OC_SOURCE_DROP    drop(): pages of a range that will not be read again soon can be
 *                     handed back to the system (madvise / posix_fadvise);
 *   OC_SOURCE_BYPASS  read() does not touch the mapping: copying bytes out with read is
 *                     cheaper than through map's pages (a mapped file whose descriptor
 *                     was kept: pread), so large copies should use read;
 *   OC_SOURCE_REMOTE  every read costs a request (HTTP ranges): read few, large ranges,
 *                     and announce them with will_read.
 *
 * Lifetime: a source is reference-counted by its owner token (`owner`, onnxcore/bytes.h):
 * the creator holds one reference and drops it with oc_source_unref; a span that maps the
 * source shares the same token, so a mapping outlives every loader and goes with the last
 * tensor using it. The owner is what a span keeps: spans know sources only through it
 * (oc__source_of_owner), and the byte-span code (bytes.c) knows no files.
 *
 * A new kind of source is one file: a vtable, and a constructor that calls
 * oc__source_new. Nothing outside it changes: readers go through the functions below,
 * which fall back to read() when an optional entry is missing.
 *
 * Thread safety: read, map and drop may be called from several threads at once (the
 * parallel copies of a load do); implementations keep no cursor.
 */
#ifndef ONNXCORE_INTERNAL_SOURCE_H
#define ONNXCORE_INTERNAL_SOURCE_H

#include "onnxcore_private.h"

#include <stddef.h>
#include <stdint.h>

#include "onnxcore/bytes.h"
#include "onnxcore/status.h"

#define OC_SOURCE_MAP    1u
#define OC_SOURCE_DROP   2u
#define OC_SOURCE_BYPASS 4u
#define OC_SOURCE_REMOTE 8u

typedef struct oc_source oc_source;

/* A range of a source, for will_read. */
typedef struct oc_source_range {
    uint64_t at, size;
} oc_source_range;

/* A range of a source and where its bytes go, for read_pieces. */
typedef struct oc_source_piece {
    uint64_t at, size;
    void *dst;
} oc_source_piece;

typedef struct oc_source_vtable {
    const char *kind; /* "memory", "mapped file", "file" ... (diagnostics) */
    /* Reads n bytes at `at` into dst; *got receives how many were read, fewer than n
     * only when the source ends first (the range runs past size, or a file was cut short
     * since it was measured). Errors (an I/O failure, a failed request) fill err.
     * Required. */
    oc_status (*read)(oc_source *s, uint64_t at, void *dst, uint64_t n, uint64_t *got,
                      oc_error *err);
    /* Makes *out a span of [at, at + n) (already checked to lie inside the source), sharing
     * the source's owner or borrowed, never a copy. NULL unless OC_SOURCE_MAP. */
    oc_status (*map)(oc_source *s, uint64_t at, uint64_t n, oc_bytes *out, oc_error *err);
    /* Advice: [at, at + n) will not be read again soon. May be NULL. */
    void (*drop)(oc_source *s, uint64_t at, uint64_t n);
    /* Advice: these ranges will be read soon (read-ahead; a remote source may fetch them
     * in one request). May be NULL. */
    void (*will_read)(oc_source *s, const oc_source_range *ranges, size_t count);
    /* Copies [at, at + n) to the end of the file open as fd by the kernel, without the
     * bytes entering the process; *done receives the bytes copied. OC_OK with *done < n
     * means "read the rest yourself" (not between these files). May be NULL. */
    oc_status (*copy_to_fd)(oc_source *s, uint64_t at, uint64_t n, int fd, uint64_t *done,
                            oc_error *err);
    /* Frees the implementation's state; runs when the last reference goes. */
    void (*destroy)(oc_source *s);
    /* Passes [at, at + n) (already checked to lie inside the source) to write, in order,
     * in pieces: for a remote source one request whose body streams through, never the
     * whole range in memory. May be NULL (oc_source_read_to reads in pieces instead). */
    oc_status (*read_to)(oc_source *s, uint64_t at, uint64_t n, oc_write_fn write, void *ctx,
                         oc_error *err);
    /* Reads every piece (each already checked to lie inside the source) into its dst, in
     * any order and at once where the source can (a remote one: pieces that touch in the
     * source one request, those requests in parallel); on failure *failed receives the
     * index of a piece whose bytes did not all come. May be NULL (oc_source_read_pieces
     * reads them one after the other). */
    oc_status (*read_pieces)(oc_source *s, const oc_source_piece *pieces, size_t n, size_t *failed,
                             oc_error *err);
    /* Advice: until the next call with on = 0, reads jump about (a pass over an archive's
     * local headers): a mapped file reads no pages around those it faults in (a fault's
     * read-around is the readahead window, 8 MiB here: a header pass over a cold archive
     * of 5 MB tensors read the whole file). May be NULL. */
    void (*random)(oc_source *s, int on);
} oc_source_vtable;

/* The common head of every source; implementations embed it first. Read-only once made. */
struct oc_source {
    const oc_source_vtable *vt;
    oc_owner *owner; /* the source's references */
    uint64_t size;
    unsigned caps;       /* OC_SOURCE_* */
    char *name;          /* a path or a description, for messages */
    const uint8_t *data; /* the whole source in memory (memory, a mapped file), or NULL */
};

/* Fills the head of a freshly allocated implementation object `s` (of at least
 * sizeof(oc_source) bytes, allocated with malloc, its other fields set) and gives it one
 * reference. On failure (OC_ERR_NOMEM) vt->destroy(s) has run and s is freed. */
oc_status oc__source_new(oc_source *s, const oc_source_vtable *vt, uint64_t size, unsigned caps,
                         const uint8_t *data, const char *name, oc_error *err);

/* Takes another reference; NULL is accepted and returned. */
OC_PRIVATE oc_source *oc_source_ref(oc_source *s);
/* Drops a reference; NULL is accepted. */
OC_PRIVATE void oc_source_unref(oc_source *s);

/* The source whose owner token this is, or NULL (an owner of something else). */
oc_source *oc__source_of_owner(const oc_owner *owner);

/* Reads exactly n bytes at `at`: a range past the end, or a source that ends early, is
 * OC_ERR_TRUNCATED naming `at` as the offset. */
OC_PRIVATE oc_status oc_source_read(oc_source *s, uint64_t at, void *dst, uint64_t n,
                                    oc_error *err);
/* As the vtable's read, with the range clamped to the source (*got < n at the end). */
OC_PRIVATE oc_status oc_source_read_some(oc_source *s, uint64_t at, void *dst, uint64_t n,
                                         uint64_t *got, oc_error *err);
/* Passes exactly [at, at + n) to write, in order, holding at most a few MiB of it at a
 * time; a range past the end, or a source that ends early, is OC_ERR_TRUNCATED. */
OC_PRIVATE oc_status oc_source_read_to(oc_source *s, uint64_t at, uint64_t n, oc_write_fn write,
                                       void *ctx, oc_error *err);
/* Makes *out a span of [at, at + n): a mapping where the source can map (shared or
 * borrowed), else an owned copy read through read. A range past the end is
 * OC_ERR_TRUNCATED. On failure *out is unchanged. */
OC_PRIVATE oc_status oc_source_map(oc_source *s, uint64_t at, uint64_t n, oc_bytes *out,
                                   oc_error *err);
/* Reads every piece into its dst (read_pieces above; one after the other where the source
 * has none). A piece past the end is OC_ERR_TRUNCATED before anything is read. On failure
 * *failed (may be NULL) receives the index of a piece whose bytes did not all come. */
OC_PRIVATE oc_status oc_source_read_pieces(oc_source *s, const oc_source_piece *pieces, size_t n,
                                           size_t *failed, oc_error *err);
/* Advice, passed on where the source takes it. */
void oc_source_drop(oc_source *s, uint64_t at, uint64_t n);
OC_PRIVATE void oc_source_will_read(oc_source *s, const oc_source_range *ranges, size_t count);
OC_PRIVATE void oc_source_random(oc_source *s, int on);
/* Copies [at, at + n) to the end of the file open as fd where the source can have the
 * kernel do it; *done receives the bytes copied (0 where it cannot): the caller writes
 * the rest. */
oc_status oc_source_copy_to_fd(oc_source *s, uint64_t at, uint64_t n, int fd, uint64_t *done,
                               oc_error *err);

/* When the span shares a source's owner and lies in its whole-source mapping (a source
 * made from one mapping), the source and the span's offset in it; else NULL. */
OC_PRIVATE oc_source *oc__bytes_source(const oc_bytes *span, uint64_t *at);

/* ---- implementations ---- */

/* size bytes at data. With release, the source owns them and calls release(ctx) when it
 * goes (on failure too); without, the caller keeps them alive (mapped spans are then borrowed) unless
 * `keep` is given: an owner that keeps them, shared by mapped spans. */
OC_PRIVATE oc_status oc_source_memory(const void *data, uint64_t size, void (*release)(void *ctx),
                                      void *ctx, oc_owner *keep, const char *name, oc_source **out,
                                      oc_error *err);

#endif
