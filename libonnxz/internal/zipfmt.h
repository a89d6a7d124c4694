/*
 * internal/zipfmt.h - the ZIP records libonnxz writes and reads (APPNOTE 6.3.x), and the
 * fixed values of spec/onnxz-zip.md.
 */
#ifndef ONNXZ_INTERNAL_ZIPFMT_H
#define ONNXZ_INTERNAL_ZIPFMT_H

#include <stddef.h>
#include <stdint.h>

/* Record signatures ("PK" + two bytes). */
#define OZ_SIG_LOCAL         0x04034b50u
#define OZ_SIG_CENTRAL       0x02014b50u
#define OZ_SIG_EOCD          0x06054b50u
#define OZ_SIG_ZIP64_EOCD    0x06064b50u
#define OZ_SIG_ZIP64_LOCATOR 0x07064b50u

/* Fixed record sizes. */
#define OZ_LOCAL_SIZE         30u
#define OZ_CENTRAL_SIZE       46u
#define OZ_EOCD_SIZE          22u
#define OZ_ZIP64_EOCD_SIZE    56u /* with no extensible data */
#define OZ_ZIP64_LOCATOR_SIZE 20u

/* Offsets of fields patched or checked in place. */
#define OZ_LOCAL_CRC_AT 14u

/* Extra-field header ids. */
#define OZ_EXTRA_ZIP64     0x0001u
#define OZ_EXTRA_ALIGN     0xD935u /* alignment padding (Z-11) */
#define OZ_EXTRA_ALIGN_MIN 6u      /* id, length, u16 alignment */

/* Values too large for a 16- or 32-bit field are stored as all-ones there (zip64). */
#define OZ_MAX16 0xFFFFu
#define OZ_MAX32 0xFFFFFFFFu

/* General purpose flag bits. */
#define OZ_FLAG_ENCRYPTED         0x0001u
#define OZ_FLAG_DESCRIPTOR        0x0008u
#define OZ_FLAG_STRONG_ENCRYPTION 0x0040u
#define OZ_FLAG_UTF8              0x0800u
#define OZ_FLAG_MASKED_CD         0x2000u
/* Bits that must agree between local and central headers (Z-74). */
#define OZ_FLAGS_MUST_AGREE (OZ_FLAG_ENCRYPTED | OZ_FLAG_DESCRIPTOR | OZ_FLAG_STRONG_ENCRYPTION)

/* What we write (Z-4, Z-40..Z-42). */
#define OZ_VERSION_MADE_BY  0x033Fu     /* host 3 (UNIX), APPNOTE 6.3 */
#define OZ_VERSION_STORED   10u         /* 1.0 */
#define OZ_VERSION_DEFLATED 20u         /* 2.0 */
#define OZ_VERSION_ZIP64    45u         /* 4.5 */
#define OZ_DOS_TIME         0x0000u     /* 00:00:00 */
#define OZ_DOS_DATE         0x0021u     /* 1980-01-01 */
#define OZ_EXTERNAL_ATTR    0x81A40000u /* regular file, mode 0644, in the high 16 bits */

/* ---- names (names.c) ---- */

typedef enum oz__name_fault {
    OZ_NAME_OK = 0,
    OZ_NAME_EMPTY,           /* Z-30 */
    OZ_NAME_NOT_UTF8,        /* Z-31 */
    OZ_NAME_NUL,             /* Z-31 */
    OZ_NAME_BACKSLASH,       /* Z-32 */
    OZ_NAME_ABSOLUTE,        /* Z-33 */
    OZ_NAME_DRIVE,           /* Z-33 */
    OZ_NAME_EMPTY_COMPONENT, /* Z-34 */
    OZ_NAME_DOT,             /* Z-34 */
    OZ_NAME_DOTDOT,          /* Z-34 */
    OZ_NAME_DIRECTORY        /* Z-34: a trailing '/', where not allowed */
} oz__name_fault;

/* Checks a name against Z-30..Z-34. allow_dir: accept one trailing '/' (readers). */
oz__name_fault oz__name_check(const uint8_t *name, size_t len, int allow_dir);
/* "is empty", "is not valid UTF-8", ... (for messages), and the rule id ("Z-34"). */
const char *oz__name_fault_text(oz__name_fault f);
const char *oz__name_fault_rule(oz__name_fault f);
/* True for faults that make a path unsafe (rather than merely malformed). */
int oz__name_fault_unsafe(oz__name_fault f);

#endif
