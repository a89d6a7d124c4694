/*
 * internal/zipentry.h - one ZIP entry as libonnxz knows it: the header fields that the
 * central and local headers hold (APPNOTE 4.3.7, 4.3.12), with zip64 values already
 * resolved, and where its name and data are. The reader (zip_read.c), the writer
 * (zip_write.c) and the in-place editor (edit.c, through internal/zipbuild.h) all keep
 * entries this way; the public oz_zip_entry is a view of it.
 */
#ifndef ONNXZ_INTERNAL_ZIPENTRY_H
#define ONNXZ_INTERNAL_ZIPENTRY_H

#include <stdint.h>

#include "onnxz/zip.h"

typedef struct oz__entry {
    uint64_t name_off; /* into the owner's names blob (NUL-terminated names back to back) */
    uint32_t name_len;
    uint16_t method;
    uint16_t flags; /* general purpose bits (the central directory's, when read) */
    uint32_t crc;
    uint64_t csize;
    uint64_t usize;
    uint64_t lho;      /* local header offset */
    uint64_t data_off; /* first byte of the (compressed) data */
    uint64_t cd_at;    /* read: offset of the central header, for messages */
} oz__entry;

/* The public view of e, whose name is at names + e->name_off. */
static inline void oz__entry_view(const oz__entry *e, const uint8_t *names, oz_zip_entry *out) {
    out->name = (const char *)names + e->name_off;
    out->name_len = e->name_len;
    out->method = e->method;
    out->flags = e->flags;
    out->crc32 = e->crc;
    out->compressed_size = e->csize;
    out->uncompressed_size = e->usize;
    out->local_header_offset = e->lho;
    out->data_offset = e->data_off;
}

#endif
