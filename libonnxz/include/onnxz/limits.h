/*
 * onnxz/limits.h - every limit libonnxz enforces, in one place (spec/onnxz-zip.md).
 *
 * Readers take their limits from oz_zip_reader_options (zero means the default below).
 * Writers never produce an archive that a reader with default limits would refuse: they
 * apply the same defaults to what they write.
 */
#ifndef ONNXZ_LIMITS_H
#define ONNXZ_LIMITS_H

/* ---- alignment of STORED data (Z-10) ---- */

/* Data of STORED entries starts on a multiple of this many bytes unless told otherwise. */
#define OZ_ZIP_DEFAULT_ALIGNMENT 64u
/* The smallest and largest alignments accepted; every power of two in between is too.
 * The ceiling comes from the format: the padding record must fit an extra field of at most
 * 65,535 bytes, and a padding of up to alignment + 5 bytes may be needed (Z-12). */
#define OZ_ZIP_MIN_ALIGNMENT 64u
#define OZ_ZIP_MAX_ALIGNMENT 32768u

/* ---- reading (Z-66) ---- */

/* Entries in one archive. Raise with oz_zip_reader_options.max_entries, up to the hard
 * ceiling (entry indices are 32-bit inside the library). */
#define OZ_ZIP_DEFAULT_MAX_ENTRIES 1048576u
#define OZ_ZIP_MAX_ENTRIES_HARD    0xFFFFFFFEu

/* Bytes in one entry name. The format's own ceiling is 65,535. */
#define OZ_ZIP_DEFAULT_MAX_NAME_LEN 4096u
#define OZ_ZIP_MAX_NAME_LEN_HARD    65535u

/* Bytes in the central directory (it is held in memory while the archive is open). */
#define OZ_ZIP_DEFAULT_MAX_CENTRAL_DIR (256ull << 20)

/* Declared uncompressed size of a DEFLATED entry that may be inflated into memory. */
#define OZ_ZIP_DEFAULT_MAX_INFLATED (4ull << 30)

/* Deflate cannot expand one input byte into more than 1,032 output bytes (a 258-byte match
 * costs at least two bits). A DEFLATED entry declaring more than this ratio, plus a small
 * allowance for tiny inputs, is refused before anything is allocated (Z-77). */
#define OZ_ZIP_MAX_DEFLATE_RATIO   1032u
#define OZ_ZIP_DEFLATE_RATIO_SLACK 1024u

/* The end record is searched for within this many bytes from the end of the file: the
 * record (22 bytes) plus the longest possible comment (65,535 bytes). Fixed by the format. */
#define OZ_ZIP_EOCD_SEARCH 65557u

#endif
