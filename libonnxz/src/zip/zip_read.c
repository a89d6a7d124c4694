/*
 * zip_read.c - opening ZIP archives from untrusted sources (spec/onnxz-zip.md, Z-60..Z-78).
 *
 * Nothing from the file is trusted before it is checked. Opening proceeds outside in:
 * the end record (and zip64 end record), then the central directory's place in the file,
 * then every central header, then every local header against its central header, then
 * the entries' byte ranges against each other. Only then is the reader handed out, and
 * from then on it is immutable, so reads from many threads need no locking.
 *
 * Bytes come from one byte source (libonnxcore/internal/source.h), held by the
 * reader: a source whose bytes are all in memory (a mapping of the file, the caller's
 * buffer) is read in place, any other (a file read with pread, a remote object) through
 * small buffers. Every access goes through src_read/src_view after its range has been
 * checked against the archive's size, with lengths compared to what is left (never
 * `offset + length` first). STORED entries are handed out through the source's map where
 * it has one, so they share the source's lifetime.
 *
 * A remote source (OC_SOURCE_REMOTE: every read a request) defers the local headers: at
 * open only what the end records and the central directory say is checked, plus that no
 * two entries start at the same offset; each entry's local header is checked (Z-73..Z-75,
 * and Z-76 against the next entry's start) before its first byte of data is handed out.
 * A STORED entry is then read with its local header in one request. Listing a 70,000-
 * entry archive costs its tail and central directory, not 70,000 requests. The deferred
 * results are the reader's only state that changes after open, under its lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <onnxcore/file.h>
#include <onnxcore/http.h>
#include "internal/nametab.h"

#include "internal/crc.h"
#include "internal/cursor.h"
#include "internal/error.h"
#include "internal/lock.h"
#include "internal/zipentry.h"
#include "internal/zipfmt.h"
#include "internal/zipread.h"
#include "internal/options.h"
#include "internal/source.h"
#include "internal/source_file.h"
#include "internal/source_http.h"
#include "onnxz/zip.h"

/* Entries whose data lie at most this far apart (a local header between them) are
 * prefetched as one range. */
#define PREFETCH_GAP ((uint64_t)64 << 10)

/* The compressed bytes of a part of a DEFLATED entry are read in windows from the first
 * size to the last, each twice the one before. */
#define INFLATE_WINDOW_MIN ((uint64_t)1 << 20)
#define INFLATE_WINDOW_MAX ((uint64_t)16 << 20)

/* Chunk size for pread-based reading, CRC checks and inflation. */
#define CHUNK ((size_t)1 << 18)

struct oz_zip_reader {
    oc_source *src; /* the archive's bytes (one reference held) */
    uint64_t size;  /* the archive's: src->size, or fewer (oz__zip_reader_open_source) */
    uint64_t cd_off, cd_size;
    oz__entry *e;
    uint64_t count;
    uint8_t *names;
    oc_nametab *tab;
    int zip64;
    uint8_t *comment;
    uint32_t comment_len;
    uint64_t max_entries, max_central_dir, max_inflated, max_memory;
    uint32_t max_name_len;
    /* Deferred local headers (a remote source), else NULL: per entry, whether its local
     * header was checked, and where the next entry in the file (or the central directory)
     * begins; `lock` guards checked[] and the entries' data_off. */
    uint8_t *checked;
    uint64_t *next_at;
    pthread_mutex_t lock;
};

static void name_of(const void *ctx, uint64_t i, const void **name, size_t *len) {
    const oz_zip_reader *r = ctx;
    *name = r->names + r->e[i].name_off;
    *len = r->e[i].name_len;
}

static const char *qname(const oz_zip_reader *r, const oz__entry *e, char q[OC_QUOTE_SIZE]) {
    return oc_quote(r->names + e->name_off, e->name_len, q, OC_QUOTE_SIZE);
}

/* ---- the source ---- */

/* Copies n bytes at off into buf; the caller has checked that they are inside the file.
 * A source that ends first (a file cut short while open) is OC_ERR_TRUNCATED. */
static oc_status src_read(const oz_zip_reader *r, uint64_t off, void *buf, uint64_t n,
                          oc_error *err) {
    uint64_t got;
    OC_FORWARD(oc_source_read_some(r->src, off, buf, n, &got, err));
    OC_RETURN_ERROR_IF(got < n, err, OC_ERR_TRUNCATED, off + got,
                       "the archive ended early (did it change while open?)");
    return OC_OK;
}

/* n bytes at off (inside the file): in place when the source is all in memory, else read
 * into *tmp (reallocated to fit; the caller frees it). */
static oc_status src_view(const oz_zip_reader *r, uint64_t off, uint64_t n, uint8_t **tmp,
                          const uint8_t **out, oc_error *err) {
    if (r->src->data || !n) {
        *out = r->src->data ? r->src->data + off : (const uint8_t *)"";
        return OC_OK;
    }
    uint8_t *p = realloc(*tmp, n ? (size_t)n : 1);
    OC_RETURN_ERROR_IF(!p, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    *tmp = p;
    OC_FORWARD(src_read(r, off, p, n, err));
    *out = p;
    return OC_OK;
}

/* ---- extra fields ---- */

/* Walks the extra field (Z-69) and finds the zip64 record. Records must not overrun the
 * field; fewer than 4 bytes left at the end are ignored (as other readers do). */
static oc_status find_zip64(const uint8_t *x, uint64_t xlen, uint64_t at, const uint8_t **z64,
                            uint16_t *z64_len, oc_error *err) {
    *z64 = NULL;
    *z64_len = 0;
    oz__cursor c = oz__cursor_make(x, xlen);
    while (c.left >= 4) {
        uint16_t id = oz__get16(&c);
        uint16_t len = oz__get16(&c);
        const uint8_t *data = oz__take(&c, len);
        OC_RETURN_RULE_IF(!data, err, OC_ERR_MALFORMED, at, "Z-69",
                          "extra field record 0x%04x of %u bytes overruns its header", id, len);
        if (id == OZ_EXTRA_ZIP64 && !*z64) {
            *z64 = data;
            *z64_len = len;
        }
    }
    return OC_OK;
}

/* ---- opening: the end records ---- */

typedef struct eocd_info {
    uint64_t at;        /* offset of the end record */
    uint64_t end_of_cd; /* where the central directory must end */
    uint64_t count, cd_size, cd_off;
} eocd_info;

/* The input begins with a local header or end record signature, or with the start of one
 * when it is shorter than a signature: an archive cut short rather than not one at all. */
static int starts_like_zip(const oz_zip_reader *r) {
    static const uint8_t local[4] = {'P', 'K', 3, 4}, end[4] = {'P', 'K', 5, 6};
    uint8_t b[4];
    size_t n = r->size < 4 ? (size_t)r->size : 4;
    if (n == 0 || src_read(r, 0, b, n, NULL) != OC_OK) return 0;
    return memcmp(b, local, n) == 0 || memcmp(b, end, n) == 0;
}

/* Whether the end record at `at` is anchored: the central directory it describes ends
 * exactly where it begins, or, with a zip64 locator right before it, where the zip64 end
 * record the locator names begins (as every end record a writer makes is). */
static oc_status anchored(const oz_zip_reader *r, uint64_t at, int *yes, oc_error *err) {
    uint8_t b[OZ_ZIP64_EOCD_SIZE];
    *yes = 0;
    OC_FORWARD(src_read(r, at, b, OZ_EOCD_SIZE, err));
    uint64_t cd_size = oz__le32(b + 12), cd_off = oz__le32(b + 16);
    if (at >= OZ_ZIP64_LOCATOR_SIZE) {
        uint64_t loc = at - OZ_ZIP64_LOCATOR_SIZE;
        OC_FORWARD(src_read(r, loc, b, OZ_ZIP64_LOCATOR_SIZE, err));
        if (oz__le32(b) == OZ_SIG_ZIP64_LOCATOR) {
            uint64_t z_at = oz__le64(b + 8);
            if (z_at > loc || loc - z_at < OZ_ZIP64_EOCD_SIZE) return OC_OK;
            OC_FORWARD(src_read(r, z_at, b, OZ_ZIP64_EOCD_SIZE, err));
            cd_size = oz__le64(b + 40);
            cd_off = oz__le64(b + 48);
            *yes = oz__le32(b) == OZ_SIG_ZIP64_EOCD && cd_off <= z_at && z_at - cd_off == cd_size;
            return OC_OK;
        }
    }
    *yes = cd_size != OZ_MAX32 && cd_off != OZ_MAX32 && cd_off + cd_size == at;
    return OC_OK;
}

/* Z-60..Z-62: the end record is the last one in the file whose comment reaches exactly the
 * end of the file (the one every ZIP reader finds first, searching backwards). Another
 * such record before it (in an entry's data: a tensor's bytes, a metadata value) is
 * ignored when the last one is anchored (anchored()); otherwise the archive is ambiguous,
 * as it is when a signature lies in the last one's comment. */
static oc_status find_eocd(oz_zip_reader *r, uint64_t *eocd_at, oc_error *err) {
    if (r->size < OZ_EOCD_SIZE) {
        OC_RETURN_RULE_IF(starts_like_zip(r), err, OC_ERR_TRUNCATED, r->size, "Z-60",
                          "the archive is cut short: no end of central directory record");
        return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "Z-60",
                             "not a ZIP archive: %llu bytes, too small for an end record",
                             (unsigned long long)r->size);
    }
    uint64_t tail_len = r->size < OZ_ZIP_EOCD_SEARCH ? r->size : OZ_ZIP_EOCD_SEARCH;
    uint64_t tail_off = r->size - tail_len;
    uint8_t *tmp = NULL;
    const uint8_t *tail = NULL;
    oc_status st = src_view(r, tail_off, tail_len, &tmp, &tail, err);
    if (st != OC_OK) {
        free(tmp);
        return st;
    }
    int found = 0, seen = 0;
    uint64_t found_at = 0, other_at = 0, first_end = 0, first_at = 0;
    for (uint64_t pos = tail_len - OZ_EOCD_SIZE;; pos--) {
        if (oz__le32(tail + pos) == OZ_SIG_EOCD) {
            uint64_t end = pos + OZ_EOCD_SIZE + oz__le16(tail + pos + 20);
            if (!seen) {
                seen = 1;
                first_end = end;
                first_at = tail_off + pos;
            }
            if (end == tail_len && found++ == 0)
                found_at = tail_off + pos;
            else if (end == tail_len && found == 2)
                other_at = tail_off + pos;
        }
        if (pos == 0) break;
    }
    /* Z-61: python's zipfile, unzip and others take the last end record signature in the
     * file wherever its comment ends, so with a comment, no signature may begin after the
     * record's own (in its comment or overlapping it): they would read another archive.
     * (An empty comment leaves room for one only in the record's own fields, and zipfile
     * tries the file's last 22 bytes first: not checked, so a central directory at an
     * offset spelling the signature stays readable.) */
    uint64_t later_at = 0;
    if (found && oz__le16(tail + (found_at - tail_off) + 20) != 0)
        for (uint64_t pos = tail_len - 4; pos > found_at - tail_off && !later_at; pos--)
            if (oz__le32(tail + pos) == OZ_SIG_EOCD) later_at = tail_off + pos;
    free(tmp);
    OC_RETURN_RULE_IF(later_at, err, OC_ERR_MALFORMED, later_at, "Z-61",
                      "an end of central directory signature lies in the comment of the end "
                      "record at %llu: ZIP readers that take the last signature would read "
                      "another archive",
                      (unsigned long long)found_at);
    if (found) {
        int yes = 1;
        if (found > 1) OC_FORWARD(anchored(r, found_at, &yes, err));
        OC_RETURN_RULE_IF(!yes, err, OC_ERR_MALFORMED, found_at, "Z-61",
                          "two end of central directory records both end the file (at %llu "
                          "and %llu), and the central directory does not end at the last",
                          (unsigned long long)found_at, (unsigned long long)other_at);
        *eocd_at = found_at;
        return OC_OK;
    }
    if (seen && first_end > tail_len)
        return oc__fail_rule(err, OC_ERR_TRUNCATED, first_at, "Z-62",
                             "the end record's comment runs %llu bytes past the end of the file",
                             (unsigned long long)(first_end - tail_len));
    if (seen)
        return oc__fail_rule(err, OC_ERR_MALFORMED, first_at, "Z-62",
                             "%llu bytes follow the end record and its comment",
                             (unsigned long long)(tail_len - first_end));
    OC_RETURN_RULE_IF(starts_like_zip(r), err, OC_ERR_TRUNCATED, OC_NO_OFFSET, "Z-60",
                      "the archive is cut short: no end of central directory record");
    return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "Z-60",
                         "not a ZIP archive: no end of central directory record");
}

static oc_status read_zip64_end(oz_zip_reader *r, uint64_t loc_at, uint16_t disk16,
                                uint16_t cd_disk16, uint16_t n_disk16, uint16_t n16,
                                uint32_t cd_size32, uint32_t cd_off32, eocd_info *out,
                                oc_error *err) {
    uint8_t b[OZ_ZIP64_EOCD_SIZE];
    OC_FORWARD(src_read(r, loc_at, b, OZ_ZIP64_LOCATOR_SIZE, err));
    oz__cursor c = oz__cursor_make(b, OZ_ZIP64_LOCATOR_SIZE);
    (void)oz__get32(&c);
    uint32_t z_disk = oz__get32(&c);
    uint64_t z_at = oz__get64(&c);
    uint32_t disks = oz__get32(&c);
    OC_RETURN_RULE_IF(z_disk != 0, err, OC_ERR_UNSUPPORTED, loc_at, "Z-63",
                      "multi-disk archives are not supported: the zip64 locator puts the "
                      "zip64 end record on disk %u",
                      z_disk);
    OC_RETURN_RULE_IF(disks > 1, err, OC_ERR_UNSUPPORTED, loc_at, "Z-63",
                      "multi-disk archives are not supported: the zip64 locator counts %u "
                      "disks",
                      disks);
    OC_RETURN_RULE_IF(z_at > loc_at || loc_at - z_at < OZ_ZIP64_EOCD_SIZE, err, OC_ERR_MALFORMED,
                      loc_at, "Z-64",
                      "the zip64 locator points at %llu, where no zip64 end record fits "
                      "before it",
                      (unsigned long long)z_at);
    OC_FORWARD(src_read(r, z_at, b, OZ_ZIP64_EOCD_SIZE, err));
    c = oz__cursor_make(b, OZ_ZIP64_EOCD_SIZE);
    OC_RETURN_RULE_IF(oz__get32(&c) != OZ_SIG_ZIP64_EOCD, err, OC_ERR_MALFORMED, z_at, "Z-64",
                      "no zip64 end record where the locator points");
    uint64_t rec = oz__get64(&c);
    OC_RETURN_RULE_IF(rec < OZ_ZIP64_EOCD_SIZE - 12 || rec != loc_at - z_at - 12, err,
                      OC_ERR_INCONSISTENT, z_at, "Z-64",
                      "the zip64 end record's size (%llu) does not reach the locator",
                      (unsigned long long)rec);
    (void)oz__get16(&c); /* version made by */
    (void)oz__get16(&c); /* version needed */
    uint32_t disk = oz__get32(&c);
    uint32_t cd_disk = oz__get32(&c);
    uint64_t n_disk = oz__get64(&c);
    uint64_t n = oz__get64(&c);
    uint64_t cd_size = oz__get64(&c);
    uint64_t cd_off = oz__get64(&c);
    OC_RETURN_RULE_IF(disk != 0, err, OC_ERR_UNSUPPORTED, z_at, "Z-63",
                      "multi-disk archives are not supported: the zip64 end record is on "
                      "disk %u",
                      disk);
    OC_RETURN_RULE_IF(cd_disk != 0, err, OC_ERR_UNSUPPORTED, z_at, "Z-63",
                      "multi-disk archives are not supported: the zip64 end record puts the "
                      "central directory on disk %u",
                      cd_disk);
    OC_RETURN_RULE_IF(n_disk != n, err, OC_ERR_INCONSISTENT, z_at, "Z-63",
                      "the zip64 end record counts %llu entries on this disk but %llu in all",
                      (unsigned long long)n_disk, (unsigned long long)n);
    /* Z-64: a field of the end record is either the zip64 value or all ones. */
    OC_RETURN_RULE_IF(
        (disk16 != 0 && disk16 != OZ_MAX16) || (cd_disk16 != 0 && cd_disk16 != OZ_MAX16) ||
            (n16 != OZ_MAX16 && n16 != n) || (n_disk16 != OZ_MAX16 && n_disk16 != n_disk) ||
            (cd_size32 != OZ_MAX32 && cd_size32 != cd_size) ||
            (cd_off32 != OZ_MAX32 && cd_off32 != cd_off),
        err, OC_ERR_INCONSISTENT, z_at, "Z-64",
        "the zip64 end record (%llu entries, central directory of %llu bytes at "
        "%llu) disagrees with the end record (%u, %u at %u)",
        (unsigned long long)n, (unsigned long long)cd_size, (unsigned long long)cd_off, n16,
        cd_size32, cd_off32);
    out->end_of_cd = z_at;
    out->count = n;
    out->cd_size = cd_size;
    out->cd_off = cd_off;
    r->zip64 = 1;
    return OC_OK;
}

static oc_status read_end(oz_zip_reader *r, eocd_info *out, oc_error *err) {
    OC_FORWARD(find_eocd(r, &out->at, err));
    uint8_t b[OZ_EOCD_SIZE];
    OC_FORWARD(src_read(r, out->at, b, OZ_EOCD_SIZE, err));
    oz__cursor c = oz__cursor_make(b, OZ_EOCD_SIZE);
    (void)oz__get32(&c);
    uint16_t disk = oz__get16(&c);
    uint16_t cd_disk = oz__get16(&c);
    uint16_t n_disk = oz__get16(&c);
    uint16_t n = oz__get16(&c);
    uint32_t cd_size = oz__get32(&c);
    uint32_t cd_off = oz__get32(&c);
    uint16_t clen = oz__get16(&c);
    if (clen) {
        r->comment = malloc(clen);
        OC_RETURN_ERROR_IF(!r->comment, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        OC_FORWARD(src_read(r, out->at + OZ_EOCD_SIZE, r->comment, clen, err));
        r->comment_len = clen;
    }
    if (out->at >= OZ_ZIP64_LOCATOR_SIZE) {
        uint8_t sig[4];
        uint64_t loc_at = out->at - OZ_ZIP64_LOCATOR_SIZE;
        OC_FORWARD(src_read(r, loc_at, sig, 4, err));
        if (oz__le32(sig) == OZ_SIG_ZIP64_LOCATOR)
            return read_zip64_end(r, loc_at, disk, cd_disk, n_disk, n, cd_size, cd_off, out, err);
    }
    OC_RETURN_RULE_IF(disk != 0, err, OC_ERR_UNSUPPORTED, out->at, "Z-63",
                      "multi-disk archives are not supported: the end record is on disk %u", disk);
    OC_RETURN_RULE_IF(cd_disk != 0, err, OC_ERR_UNSUPPORTED, out->at, "Z-63",
                      "multi-disk archives are not supported: the end record puts the "
                      "central directory on disk %u",
                      cd_disk);
    OC_RETURN_RULE_IF(n_disk != n, err, OC_ERR_INCONSISTENT, out->at, "Z-63",
                      "the end record counts %u entries on this disk but %u in all", n_disk, n);
    OC_RETURN_RULE_IF(cd_size == OZ_MAX32 || cd_off == OZ_MAX32, err, OC_ERR_MALFORMED, out->at,
                      "Z-64",
                      "the end record defers to zip64 records, but there is no zip64 "
                      "locator");
    out->end_of_cd = out->at;
    out->count = n;
    out->cd_size = cd_size;
    out->cd_off = cd_off;
    return OC_OK;
}

/* ---- opening: the central directory ---- */

static oc_status check_name(const oz_zip_reader *r, const uint8_t *name, uint16_t len, uint64_t at,
                            oc_error *err) {
    char q[OC_QUOTE_SIZE];
    OC_RETURN_RULE_IF(len > r->max_name_len, err, OC_ERR_LIMIT, at, "Z-66",
                      "entry name '%s' is %u bytes, more than the limit of %u",
                      oc_quote(name, len, q, OC_QUOTE_SIZE), len, r->max_name_len);
    oz__name_fault f = oz__name_check(name, len, 1);
    OC_RETURN_ERROR_IF(f != OZ_NAME_OK, err,
                       oz__name_fault_unsafe(f) ? OC_ERR_UNSAFE_PATH : OC_ERR_MALFORMED, at,
                       "entry name '%s' %s (%s)", oc_quote(name, len, q, OC_QUOTE_SIZE),
                       oz__name_fault_text(f), oz__name_fault_rule(f));
    return OC_OK;
}

/* Reads the next 64-bit value of a zip64 record for a field stored as all ones (Z-70). */
static oc_status take_zip64(oz__cursor *z, const char *field, uint64_t *v, uint64_t at,
                            const char *name, oc_error *err) {
    uint64_t x = oz__get64(z);
    OC_RETURN_RULE_IF(z->bad, err, OC_ERR_MALFORMED, at, "Z-70",
                      "entry '%s': the %s is in a zip64 extra field that is missing or too "
                      "short",
                      name, field);
    *v = x;
    return OC_OK;
}

/* ---- one entry's headers: the fields both hold, read by one parser ---- */

/* What a central header (APPNOTE 4.3.12) or a local header (4.3.7) says about its entry.
 * The local header is the central one without the version made by, the comment length,
 * the disk, the attributes and the local header offset: those stay 0 when it is read. */
typedef struct hdr_fields {
    uint32_t sig;
    uint16_t flags, method;
    uint32_t crc, csize32, usize32;
    uint16_t nlen, xlen;
    uint16_t clen, disk16; /* central only */
    uint32_t lho32;        /* central only */
    /* after resolve_zip64: the values the 16/32-bit fields stand for (Z-70) */
    uint64_t csize, usize, lho, disk;
} hdr_fields;

/* Reads the fixed part of a header at c (bounds are the cursor's: c->bad on a short one). */
static void read_fixed(oz__cursor *c, int central, hdr_fields *h) {
    memset(h, 0, sizeof *h);
    h->sig = oz__get32(c);
    if (central) (void)oz__get16(c); /* version made by */
    (void)oz__get16(c);              /* version needed */
    h->flags = oz__get16(c);
    h->method = oz__get16(c);
    (void)oz__get32(c); /* time, date */
    h->crc = oz__get32(c);
    h->csize32 = oz__get32(c);
    h->usize32 = oz__get32(c);
    h->nlen = oz__get16(c);
    h->xlen = oz__get16(c);
    if (!central) return;
    h->clen = oz__get16(c);
    h->disk16 = oz__get16(c);
    (void)oz__get16(c); /* internal attributes */
    (void)oz__get32(c); /* external attributes */
    h->lho32 = oz__get32(c);
}

/* Resolves the fields stored as all ones from the zip64 record among the header's extra
 * fields x (h->xlen bytes; Z-69, Z-70), in the record's order: uncompressed size,
 * compressed size, local header offset, disk. Errors at `at`, naming entry q. */
static oc_status resolve_zip64(hdr_fields *h, const uint8_t *x, uint64_t at, const char *q,
                               oc_error *err) {
    const uint8_t *z64;
    uint16_t z64_len;
    OC_FORWARD(find_zip64(x, h->xlen, at, &z64, &z64_len, err));
    oz__cursor z = oz__cursor_make(z64, z64_len);
    h->usize = h->usize32;
    h->csize = h->csize32;
    h->lho = h->lho32;
    h->disk = h->disk16;
    if (h->usize32 == OZ_MAX32)
        OC_FORWARD(take_zip64(&z, "uncompressed size", &h->usize, at, q, err));
    if (h->csize32 == OZ_MAX32)
        OC_FORWARD(take_zip64(&z, "compressed size", &h->csize, at, q, err));
    if (h->lho32 == OZ_MAX32)
        OC_FORWARD(take_zip64(&z, "local header offset", &h->lho, at, q, err));
    if (h->disk16 == OZ_MAX16) {
        const uint8_t *d = oz__take(&z, 4);
        OC_RETURN_RULE_IF(!d, err, OC_ERR_MALFORMED, at, "Z-70",
                          "entry '%s': the disk number is in a zip64 extra field that is "
                          "missing or too short",
                          q);
        h->disk = oz__le32(d);
    }
    return OC_OK;
}

static oc_status parse_central(oz_zip_reader *r, const uint8_t *cd, oc_error *err) {
    uint64_t n = r->count, used = 0;
    char q[OC_QUOTE_SIZE];
    r->e = calloc(n ? (size_t)n : 1, sizeof *r->e);
    r->names = malloc((size_t)(r->cd_size + n + 1));
    OC_RETURN_ERROR_IF(!r->e || !r->names || !(r->tab = oc_nametab_new(n, name_of, r)), err,
                       OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    uint64_t names_len = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t at = r->cd_off + used;
        oz__cursor c = oz__cursor_make(cd + used, r->cd_size - used);
        OC_RETURN_RULE_IF(c.left < OZ_CENTRAL_SIZE, err, OC_ERR_INCONSISTENT, at, "Z-67",
                          "the central directory ends after %llu of its %llu entries",
                          (unsigned long long)i, (unsigned long long)n);
        hdr_fields hf;
        read_fixed(&c, 1, &hf);
        OC_RETURN_RULE_IF(hf.sig != OZ_SIG_CENTRAL, err, OC_ERR_MALFORMED, at, "Z-68",
                          "no central header signature for entry %llu", (unsigned long long)i);
        uint16_t nlen = hf.nlen, xlen = hf.xlen, clen = hf.clen;
        const uint8_t *name = oz__take(&c, nlen);
        const uint8_t *x = oz__take(&c, xlen);
        (void)oz__take(&c, clen);
        OC_RETURN_RULE_IF(c.bad, err, OC_ERR_INCONSISTENT, at, "Z-68",
                          "central header %llu runs past the end of the central directory",
                          (unsigned long long)i);
        OC_FORWARD(check_name(r, name, nlen, at, err));
        oc_quote(name, nlen, q, OC_QUOTE_SIZE);
        OC_RETURN_RULE_IF(hf.flags & OZ_FLAG_MASKED_CD, err, OC_ERR_UNSUPPORTED, at, "Z-72",
                          "entry '%s': encrypted central directories are not supported", q);
        OC_FORWARD(resolve_zip64(&hf, x, at, q, err));
        uint64_t usize = hf.usize, csize = hf.csize, disk = hf.disk;
        OC_RETURN_RULE_IF(disk != 0, err, OC_ERR_UNSUPPORTED, at, "Z-63",
                          "entry '%s' starts on disk %llu: multi-disk archives are not "
                          "supported",
                          q, (unsigned long long)disk);
        OC_RETURN_RULE_IF(hf.method == OZ_ZIP_STORED && csize != usize, err, OC_ERR_INCONSISTENT,
                          at, "Z-75",
                          "STORED entry '%s' has a compressed size of %llu but an "
                          "uncompressed size of %llu",
                          q, (unsigned long long)csize, (unsigned long long)usize);
        uint64_t h = oc_nametab_hash(name, nlen);
        OC_RETURN_RULE_IF(oc_nametab_find(r->tab, name, nlen, h) >= 0, err, OC_ERR_INCONSISTENT, at,
                          "Z-71", "entry name '%s' appears twice", q);
        oz__entry *e = &r->e[i];
        e->name_off = names_len;
        e->name_len = nlen;
        memcpy(r->names + names_len, name, nlen);
        r->names[names_len + nlen] = 0;
        names_len += nlen + 1u;
        e->method = hf.method;
        e->flags = hf.flags;
        e->crc = hf.crc;
        e->csize = csize;
        e->usize = usize;
        e->lho = hf.lho;
        e->cd_at = at;
        oc_nametab_insert(r->tab, i, h);
        used += OZ_CENTRAL_SIZE + (uint64_t)nlen + xlen + clen;
    }
    OC_RETURN_RULE_IF(used != r->cd_size, err, OC_ERR_INCONSISTENT, r->cd_off + used, "Z-67",
                      "%llu bytes follow the last of the %llu central headers",
                      (unsigned long long)(r->cd_size - used), (unsigned long long)n);
    return OC_OK;
}

/* ---- opening: local headers (Z-73..Z-75) ---- */

/* Bytes already read: len bytes of the archive at `at`. */
typedef struct prefetch {
    const uint8_t *p;
    uint64_t at, len;
} prefetch;

/* n bytes at off, from pf when it holds all of them, else as src_view. */
static oc_status pre_view(const oz_zip_reader *r, const prefetch *pf, uint64_t off, uint64_t n,
                          uint8_t **tmp, const uint8_t **out, oc_error *err) {
    if (pf && off >= pf->at && off - pf->at <= pf->len && n <= pf->len - (off - pf->at)) {
        *out = pf->p + (off - pf->at);
        return OC_OK;
    }
    return src_view(r, off, n, tmp, out, err);
}

/* Z-73's checks that need no byte of the header: it lies inside the file, before the
 * central directory. Run at open for every entry of a remote archive too (whose headers
 * are read later), so that a header past the end gets the same message from any source. */
static oc_status local_in_bounds(const oz_zip_reader *r, const oz__entry *e, oc_error *err) {
    char q[OC_QUOTE_SIZE];
    uint64_t at = e->lho;
    OC_RETURN_RULE_IF(at > r->size || r->size - at < OZ_LOCAL_SIZE, err, OC_ERR_TRUNCATED, at,
                      "Z-73", "the local header of '%s' lies past the end of the file",
                      qname(r, e, q));
    OC_RETURN_RULE_IF(at > r->cd_off || r->cd_off - at < OZ_LOCAL_SIZE, err, OC_ERR_INCONSISTENT,
                      at, "Z-73", "the local header of '%s' overlaps the central directory",
                      qname(r, e, q));
    return OC_OK;
}

static oc_status check_local(const oz_zip_reader *r, oz__entry *e, const prefetch *pf,
                             uint8_t **tmp, oc_error *err) {
    char q[OC_QUOTE_SIZE];
    qname(r, e, q);
    uint64_t at = e->lho;
    OC_FORWARD(local_in_bounds(r, e, err));
    uint8_t b[OZ_LOCAL_SIZE];
    const uint8_t *fixed = NULL;
    OC_FORWARD(pre_view(r, pf, at, OZ_LOCAL_SIZE, tmp, &fixed, err));
    memcpy(b, fixed, OZ_LOCAL_SIZE); /* the next view may reuse *tmp */
    oz__cursor c = oz__cursor_make(b, OZ_LOCAL_SIZE);
    hdr_fields hf;
    read_fixed(&c, 0, &hf);
    OC_RETURN_RULE_IF(hf.sig != OZ_SIG_LOCAL, err, OC_ERR_MALFORMED, at, "Z-73",
                      "no local header signature where the central directory puts '%s'", q);
    uint16_t flags = hf.flags, method = hf.method, nlen = hf.nlen, xlen = hf.xlen;
    uint32_t crc = hf.crc;
    uint64_t var = (uint64_t)nlen + xlen, var_at = at + OZ_LOCAL_SIZE;
    OC_RETURN_RULE_IF(var > r->size - var_at, err, OC_ERR_TRUNCATED, at, "Z-73",
                      "the local header of '%s' runs past the end of the file", q);
    OC_RETURN_RULE_IF(var > r->cd_off - var_at, err, OC_ERR_INCONSISTENT, at, "Z-73",
                      "the local header of '%s' overlaps the central directory", q);
    const uint8_t *v = NULL;
    OC_FORWARD(pre_view(r, pf, var_at, var, tmp, &v, err));
    if (nlen != e->name_len || memcmp(v, r->names + e->name_off, nlen) != 0) {
        char lq[OC_QUOTE_SIZE];
        return oc__fail_rule(err, OC_ERR_INCONSISTENT, at, "Z-74",
                             "the local header names '%s' where the central directory names '%s'",
                             oc_quote(v, nlen, lq, OC_QUOTE_SIZE), q);
    }
    OC_RETURN_RULE_IF(method != e->method, err, OC_ERR_INCONSISTENT, at, "Z-74",
                      "entry '%s': compression method %u in the local header, %u in the "
                      "central directory",
                      q, method, e->method);
    OC_RETURN_RULE_IF(((flags ^ e->flags) & OZ_FLAGS_MUST_AGREE) != 0, err, OC_ERR_INCONSISTENT, at,
                      "Z-74",
                      "entry '%s': flags 0x%04x in the local header, 0x%04x in the central "
                      "directory",
                      q, flags, e->flags);
    OC_FORWARD(resolve_zip64(&hf, v + nlen, at, q, err));
    uint64_t usize = hf.usize, csize = hf.csize;
    /* With a data descriptor (bit 3) the local fields may be zero: the central directory is
     * authoritative. Otherwise they must agree exactly. */
    int desc = (e->flags & OZ_FLAG_DESCRIPTOR) != 0;
    OC_RETURN_RULE_IF(crc != e->crc && !(desc && crc == 0), err, OC_ERR_INCONSISTENT, at, "Z-74",
                      "entry '%s': CRC-32 0x%08x in the local header, 0x%08x in the central "
                      "directory",
                      q, crc, e->crc);
    OC_RETURN_RULE_IF(csize != e->csize && !(desc && csize == 0), err, OC_ERR_INCONSISTENT, at,
                      "Z-74",
                      "entry '%s': compressed size %llu in the local header, %llu in the "
                      "central directory",
                      q, (unsigned long long)csize, (unsigned long long)e->csize);
    OC_RETURN_RULE_IF(usize != e->usize && !(desc && usize == 0), err, OC_ERR_INCONSISTENT, at,
                      "Z-74",
                      "entry '%s': uncompressed size %llu in the local header, %llu in the "
                      "central directory",
                      q, (unsigned long long)usize, (unsigned long long)e->usize);
    e->data_off = var_at + var;
    OC_RETURN_RULE_IF(e->csize > r->size - e->data_off, err, OC_ERR_TRUNCATED, e->data_off, "Z-75",
                      "the data of '%s' (%llu bytes) runs past the end of the file", q,
                      (unsigned long long)e->csize);
    OC_RETURN_RULE_IF(e->csize > r->cd_off - e->data_off, err, OC_ERR_INCONSISTENT, e->data_off,
                      "Z-75", "the data of '%s' (%llu bytes) overlaps the central directory", q,
                      (unsigned long long)e->csize);
    return OC_OK;
}

typedef struct span {
    uint64_t start, end;
    uint64_t idx;
} span;

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : 0;
}

/* Z-76: no two entries (local header through data) share a byte. */
static oc_status check_overlaps(const oz_zip_reader *r, oc_error *err) {
    if (r->count < 2) return OC_OK;
    span *s = malloc((size_t)r->count * sizeof *s);
    OC_RETURN_ERROR_IF(!s, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    for (uint64_t i = 0; i < r->count; i++) {
        s[i].start = r->e[i].lho;
        s[i].end = r->e[i].data_off + r->e[i].csize;
        s[i].idx = i;
    }
    qsort(s, (size_t)r->count, sizeof *s, span_cmp);
    for (uint64_t i = 1; i < r->count; i++) {
        if (s[i - 1].end > s[i].start) {
            char qa[OC_QUOTE_SIZE], qb[OC_QUOTE_SIZE];
            uint64_t at = s[i].start;
            qname(r, &r->e[s[i - 1].idx], qa);
            qname(r, &r->e[s[i].idx], qb);
            free(s);
            return oc__fail_rule(err, OC_ERR_INCONSISTENT, at, "Z-76",
                                 "entries '%s' and '%s' overlap", qa, qb);
        }
    }
    free(s);
    return OC_OK;
}

/* A remote archive's local headers wait for their entries' first reads (see the top of
 * this file). What can be known now is: entries sorted by where they start, no two at
 * the same offset (Z-76), and where each one's successor starts, which its data must end
 * before once its local header says where the data begins. */
static oc_status defer_locals(oz_zip_reader *r, oc_error *err) {
    uint64_t n = r->count;
    OC_RETURN_ERROR_IF(pthread_mutex_init(&r->lock, NULL) != 0, err, OC_ERR_NOMEM, OC_NO_OFFSET,
                       "cannot make a lock");
    /* checked non-NULL from here on: close destroys the lock */
    r->checked = calloc(n ? (size_t)n : 1, 1);
    if (!r->checked) pthread_mutex_destroy(&r->lock);
    OC_RETURN_ERROR_IF(!r->checked, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    span *s = n ? malloc((size_t)n * sizeof *s) : NULL;
    r->next_at = malloc(n ? (size_t)n * sizeof *r->next_at : 1);
    if ((n && !s) || !r->next_at) free(s);
    OC_RETURN_ERROR_IF((n && !s) || !r->next_at, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    for (uint64_t i = 0; i < n; i++) s[i] = (span){r->e[i].lho, 0, i};
    if (n) qsort(s, (size_t)n, sizeof *s, span_cmp);
    for (uint64_t i = 0; i < n; i++) {
        if (i + 1 < n && s[i].start == s[i + 1].start) {
            char qa[OC_QUOTE_SIZE], qb[OC_QUOTE_SIZE];
            uint64_t at = s[i].start;
            qname(r, &r->e[s[i].idx], qa);
            qname(r, &r->e[s[i + 1].idx], qb);
            free(s);
            return oc__fail_rule(err, OC_ERR_INCONSISTENT, at, "Z-76",
                                 "entries '%s' and '%s' overlap", qa, qb);
        }
        r->next_at[s[i].idx] = i + 1 < n ? s[i + 1].start : r->cd_off;
    }
    free(s);
    return OC_OK;
}

/* Checks entry index's local header unless done (a deferred one), reading it from pf when
 * pf holds it. Results go in under the lock; two threads may check the same entry at
 * once and find the same. */
static oc_status ensure_local(const oz_zip_reader *r, uint64_t index, const prefetch *pf,
                              oc_error *err) {
    if (!r->checked) return OC_OK;
    oz_zip_reader *w = (oz_zip_reader *)(uintptr_t)r; /* only the deferred state changes */
    pthread_mutex_lock(&w->lock);
    oz__entry e = r->e[index];
    int done = r->checked[index];
    pthread_mutex_unlock(&w->lock);
    if (done) return OC_OK;
    /* Without the bytes at hand: the fixed header, the name and room for the extra field
     * (our archives' padding record) in one read, not one for each part. */
    uint8_t *head = NULL;
    prefetch own;
    if (!pf) {
        uint64_t n = OZ_LOCAL_SIZE + (uint64_t)e.name_len + 256, room = r->next_at[index] - e.lho;
        if (n > room) n = room;
        if (n >= OZ_LOCAL_SIZE && (head = malloc((size_t)n)) != NULL) {
            if (src_read(r, e.lho, head, n, NULL) == OC_OK) {
                own = (prefetch){head, e.lho, n};
                pf = &own;
            }
        }
    }
    uint8_t *tmp = NULL;
    oc_status st = check_local(r, &e, pf, &tmp, err);
    free(tmp);
    free(head);
    OC_FORWARD(st);
    /* Z-76: the data ends before the next entry begins (which may even lie inside this
     * entry's local header: next_at < data_off). */
    if (e.data_off > r->next_at[index] || e.csize > r->next_at[index] - e.data_off) {
        char q[OC_QUOTE_SIZE];
        return oc__fail_rule(err, OC_ERR_INCONSISTENT, e.data_off, "Z-76",
                             "the data of '%s' runs into the next entry at %llu", qname(r, &e, q),
                             (unsigned long long)r->next_at[index]);
    }
    pthread_mutex_lock(&w->lock);
    if (!w->checked[index]) { /* once checked, data_off is never written again */
        w->e[index].data_off = e.data_off;
        w->checked[index] = 1;
    }
    pthread_mutex_unlock(&w->lock);
    return OC_OK;
}

oc_status oz_zip_reader_local(const oz_zip_reader *r, uint64_t index, oc_error *err) {
    OC_RETURN_ERROR_IF(!r, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no reader");
    OC_RETURN_ERROR_IF(index >= r->count, err, OC_ERR_NOT_FOUND, OC_NO_OFFSET,
                       "no entry %llu (the archive has %llu)", (unsigned long long)index,
                       (unsigned long long)r->count);
    return ensure_local(r, index, NULL, err);
}

static oc_status open_common(oz_zip_reader *r, const oz_zip_reader_options *o, oc_error *err) {
    r->max_entries = o && o->max_entries ? o->max_entries : OZ_ZIP_DEFAULT_MAX_ENTRIES;
    if (r->max_entries > OZ_ZIP_MAX_ENTRIES_HARD) r->max_entries = OZ_ZIP_MAX_ENTRIES_HARD;
    r->max_name_len = o && o->max_name_len ? o->max_name_len : OZ_ZIP_DEFAULT_MAX_NAME_LEN;
    if (r->max_name_len > OZ_ZIP_MAX_NAME_LEN_HARD) r->max_name_len = OZ_ZIP_MAX_NAME_LEN_HARD;
    r->max_central_dir =
        o && o->max_central_dir ? o->max_central_dir : OZ_ZIP_DEFAULT_MAX_CENTRAL_DIR;
    r->max_inflated = o && o->max_inflated ? o->max_inflated : OZ_ZIP_DEFAULT_MAX_INFLATED;
    r->max_memory = o && o->max_memory ? o->max_memory : UINT64_MAX;
    if (r->max_inflated > r->max_memory) r->max_inflated = r->max_memory;

    eocd_info end = {0, 0, 0, 0, 0};
    OC_FORWARD(read_end(r, &end, err));
    /* Z-65: the central directory lies inside the file and ends where the end records
     * begin. */
    OC_RETURN_RULE_IF(end.cd_off > r->size || end.cd_size > r->size - end.cd_off, err,
                      OC_ERR_TRUNCATED, end.cd_off, "Z-65",
                      "the central directory (%llu bytes) extends past the end of the file",
                      (unsigned long long)end.cd_size);
    OC_RETURN_RULE_IF(
        end.cd_off + end.cd_size != end.end_of_cd, err, OC_ERR_INCONSISTENT, end.cd_off, "Z-65",
        "the central directory ends at %llu, but the end records begin at %llu",
        (unsigned long long)(end.cd_off + end.cd_size), (unsigned long long)end.end_of_cd);
    /* Z-66, Z-67 */
    OC_RETURN_RULE_IF(end.count > r->max_entries, err, OC_ERR_LIMIT, end.at, "Z-66",
                      "%llu entries, more than the limit of %llu", (unsigned long long)end.count,
                      (unsigned long long)r->max_entries);
    OC_RETURN_RULE_IF(end.cd_size > r->max_central_dir, err, OC_ERR_LIMIT, end.cd_off, "Z-66",
                      "a central directory of %llu bytes, more than the limit of %llu",
                      (unsigned long long)end.cd_size, (unsigned long long)r->max_central_dir);
    OC_RETURN_RULE_IF(end.count > end.cd_size / OZ_CENTRAL_SIZE, err, OC_ERR_INCONSISTENT, end.at,
                      "Z-67", "%llu entries cannot fit in a central directory of %llu bytes",
                      (unsigned long long)end.count, (unsigned long long)end.cd_size);
    /* M-2: what the reader holds while open (the central directory, its copy of the names,
     * an entry record and up to four table slots per entry) fits the memory budget. */
    uint64_t tables = end.count * (sizeof(oz__entry) + 49u) + 2 * end.cd_size;
    if (tables > r->max_memory)
        return oc__error_rule(err, "M-2",
                              oc__fail(err, OC_ERR_LIMIT, end.at,
                                       "%llu entries in a central directory of %llu bytes need "
                                       "about %llu bytes of memory, more than the budget of %llu "
                                       "(max_memory, M-2)",
                                       (unsigned long long)end.count,
                                       (unsigned long long)end.cd_size, (unsigned long long)tables,
                                       (unsigned long long)r->max_memory));
    r->count = end.count;
    r->cd_off = end.cd_off;
    r->cd_size = end.cd_size;

    uint8_t *tmp = NULL;
    const uint8_t *cd = NULL;
    oc_status st = src_view(r, r->cd_off, r->cd_size, &tmp, &cd, err);
    if (st == OC_OK) st = parse_central(r, cd, err);
    if (st == OC_OK && (r->src->caps & OC_SOURCE_REMOTE)) {
        free(tmp);
        for (uint64_t i = 0; i < r->count; i++) OC_FORWARD(local_in_bounds(r, &r->e[i], err));
        return defer_locals(r, err);
    }
    oc_source_random(r->src, 1); /* a header a tensor apart: not the tensors around it */
    for (uint64_t i = 0; st == OC_OK && i < r->count; i++)
        st = check_local(r, &r->e[i], NULL, &tmp, err);
    oc_source_random(r->src, 0);
    free(tmp);
    OC_FORWARD(st);
    return check_overlaps(r, err);
}

void oz_zip_reader_close(oz_zip_reader *r) {
    if (!r) return;
    oc_source_unref(r->src);
    if (r->checked) pthread_mutex_destroy(&r->lock);
    free(r->checked);
    free(r->next_at);
    oc_nametab_free(r->tab);
    free(r->e);
    free(r->names);
    free(r->comment);
    free(r);
}

oc_status oz__zip_reader_open_source(oc_source *src, uint64_t size,
                                     const oz_zip_reader_options *options, oz_zip_reader **out,
                                     oc_error *err) {
    OC_RETURN_ERROR_IF(!out || !src, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "no source or output pointer");
    *out = NULL;
    OZ_ZIP_OPTS(options, err);
    /* The archive's bytes are the first `size` bytes of the source (UINT64_MAX: all of
     * them); a source shorter than that is refused. */
    if (size == UINT64_MAX) size = src->size;
    OC_RETURN_ERROR_IF(size > src->size, err, OC_ERR_TRUNCATED, src->size,
                       "%s has %llu bytes, fewer than the %llu its archive needs", src->name,
                       (unsigned long long)src->size, (unsigned long long)size);
    oz_zip_reader *r = calloc(1, sizeof *r);
    OC_RETURN_ERROR_IF(!r, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    r->src = oc_source_ref(src);
    r->size = size;
    oc_status st = open_common(r, options, err);
    if (st != OC_OK) {
        oz_zip_reader_close(r);
        return st;
    }
    *out = r;
    return OC_OK;
}

/* Opens a reader over src and drops the caller's reference to it, whatever the outcome. */
static oc_status open_taking(oc_source *src, uint64_t size, const oz_zip_reader_options *o,
                             oz_zip_reader **out, oc_error *err) {
    oc_status st = oz__zip_reader_open_source(src, size, o, out, err);
    oc_source_unref(src);
    return st;
}

/* the shared locks are taken before the file's size is, so that no edit is half-way
 * through appending then; the content lock stays with the source's duplicate of the
 * descriptor (pread) or with the mapping's, the edit lock goes once the reader is open
 * (pread) or the file is mapped. */
oc_status oz_zip_reader_open(const char *path, const oz_zip_reader_options *options,
                             oz_zip_reader **out, oc_error *err) {
    OC_RETURN_ERROR_IF(!out || !path, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "no path or output pointer");
    *out = NULL;
    OZ_ZIP_OPTS(options, err);
    oc_source *src = NULL;
    if (oc_is_url(path)) { /* nothing to lock: the server's object has its identity checked */
        OC_FORWARD(oc__source_http(path, options->http, &src, err));
        return open_taking(src, UINT64_MAX, options, out, err);
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* never hang on a FIFO */
    if (fd < 0) return oc_error_file(err, path, oc__fail_errno(err, errno, "cannot open %s", path));
    oc_status st = oz__zip_reader_open_file(fd, path, options, out, err);
    close(fd); /* the source keeps a duplicate, and with it the content lock */
    return st;
}

oc_status oz__zip_reader_open_file(int fd, const char *path, const oz_zip_reader_options *options,
                                   oz_zip_reader **out, oc_error *err) {
    OZ_ZIP_OPTS(options, err);
    oc_source *src = NULL;
    oc_status st = oz__lock(fd, OZ_LOCK_EDIT, OZ_LOCK_CONTENT, F_RDLCK, OZ_LOCK_WAIT_MS, path,
                            "is being edited in place; try again once the edit is done", err);
    if (st == OC_OK && options->use_pread) {
        st = oc_source_file(NULL, fd, path, OC_FILE_PREAD, 1, &src, err);
        if (st == OC_OK) st = open_taking(src, UINT64_MAX, options, out, err);
        (void)oz__lock(fd, OZ_LOCK_EDIT, OZ_LOCK_EDIT, F_UNLCK, 0, path, "", NULL);
    } else if (st == OC_OK) {
        /* Mapped by libonnxcore, so that spans of the archive's entries are ones its
         * writers recognise as a file's (copied file to file, spec W-31); the memory source
         * shares the mapping's owner with every span it maps. */
        oc_mapped m;
        st = oc_map_fd_keep(fd, path, &m, err);
        (void)oz__lock(fd, OZ_LOCK_EDIT, OZ_LOCK_EDIT, F_UNLCK, 0, path, "", NULL);
        if (st == OC_OK) {
            st = oc_source_memory(m.data, m.size, NULL, NULL, m.owner, path, &src, err);
            oc_owner_unref(m.owner); /* the source holds its own reference */
        }
        if (st == OC_OK) st = open_taking(src, UINT64_MAX, options, out, err);
    }
    OC_FORWARD(st);
    oc__test_point("reader-open");
    return OC_OK;
}

oc_status oz__zip_reader_open_fd_prefix(int fd, uint64_t size, const oz_zip_reader_options *options,
                                        oz_zip_reader **out, oc_error *err) {
    OC_RETURN_ERROR_IF(!out, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no output pointer");
    *out = NULL;
    oc_source *src;
    OC_FORWARD(oc_source_file(NULL, fd, "the archive", OC_FILE_PREAD, 1, &src, err));
    return open_taking(src, size, options, out, err);
}

oc_status oz_zip_reader_open_fd(int fd, const oz_zip_reader_options *options, oz_zip_reader **out,
                                oc_error *err) {
    return oz__zip_reader_open_fd_prefix(fd, UINT64_MAX, options, out, err);
}

oc_status oz_zip_reader_open_memory(const void *data, uint64_t size, oc_owner *owner,
                                    const oz_zip_reader_options *options, oz_zip_reader **out,
                                    oc_error *err) {
    OC_RETURN_ERROR_IF(!out || (!data && size), err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "no data or output pointer");
    *out = NULL;
    oc_source *src; /* STORED reads share owner, or borrow the caller's bytes without one */
    OC_FORWARD(oc_source_memory(data, size, NULL, NULL, owner, "the archive", &src, err));
    return open_taking(src, UINT64_MAX, options, out, err);
}

/* ---- queries ---- */

uint64_t oz_zip_reader_count(const oz_zip_reader *r) { return r ? r->count : 0; }
uint64_t oz_zip_reader_size(const oz_zip_reader *r) { return r ? r->size : 0; }
bool oz_zip_reader_is_zip64(const oz_zip_reader *r) { return r && r->zip64; }

void oz_zip_reader_central_dir(const oz_zip_reader *r, uint64_t *offset, uint64_t *size) {
    if (offset) *offset = r ? r->cd_off : 0;
    if (size) *size = r ? r->cd_size : 0;
}

const uint8_t *oz_zip_reader_comment(const oz_zip_reader *r, uint32_t *size) {
    if (size) *size = r ? r->comment_len : 0;
    return r ? r->comment : NULL;
}

oc_status oz_zip_reader_entry(const oz_zip_reader *r, uint64_t index, oz_zip_entry *out,
                              oc_error *err) {
    OC_RETURN_ERROR_IF(!r || !out, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no reader or output");
    OC_RETURN_ERROR_IF(index >= r->count, err, OC_ERR_NOT_FOUND, OC_NO_OFFSET,
                       "no entry %llu (the archive has %llu)", (unsigned long long)index,
                       (unsigned long long)r->count);
    if (r->checked) pthread_mutex_lock(&((oz_zip_reader *)(uintptr_t)r)->lock);
    oz__entry_view(&r->e[index], r->names, out);
    if (r->checked) pthread_mutex_unlock(&((oz_zip_reader *)(uintptr_t)r)->lock);
    return OC_OK;
}

oc_status oz_zip_reader_find(const oz_zip_reader *r, const char *name, uint64_t *index,
                             oc_error *err) {
    OC_RETURN_ERROR_IF(!r || !name || !index, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "no reader, name or output");
    size_t n = strlen(name);
    char q[OC_QUOTE_SIZE];
    OC_RETURN_ERROR_IF(!oz__zip_reader_find_n(r, name, n, index), err, OC_ERR_NOT_FOUND,
                       OC_NO_OFFSET, "no entry named '%s' in the archive",
                       oc_quote(name, n, q, OC_QUOTE_SIZE));
    return OC_OK;
}

bool oz__zip_reader_find_n(const oz_zip_reader *r, const char *name, size_t len, uint64_t *index) {
    const uint8_t *un = (const uint8_t *)name;
    int64_t i = oc_nametab_find(r->tab, un, len, oc_nametab_hash(un, len));
    if (i < 0) return false;
    *index = (uint64_t)i;
    return true;
}

/* ---- reading data ---- */

/* Z-72: entries we can read at all. */
static oc_status readable(const oz_zip_reader *r, uint64_t index, const prefetch *pf,
                          const oz__entry **out, oc_error *err) {
    OC_RETURN_ERROR_IF(!r, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no reader");
    OC_RETURN_ERROR_IF(index >= r->count, err, OC_ERR_NOT_FOUND, OC_NO_OFFSET,
                       "no entry %llu (the archive has %llu)", (unsigned long long)index,
                       (unsigned long long)r->count);
    const oz__entry *e = &r->e[index];
    char q[OC_QUOTE_SIZE];
    OC_RETURN_RULE_IF(e->flags & (OZ_FLAG_ENCRYPTED | OZ_FLAG_STRONG_ENCRYPTION), err,
                      OC_ERR_UNSUPPORTED, e->cd_at, "Z-72",
                      "entry '%s' is encrypted; ZIP encryption is not supported", qname(r, e, q));
    OC_RETURN_RULE_IF(e->method != OZ_ZIP_STORED && e->method != OZ_ZIP_DEFLATED, err,
                      OC_ERR_UNSUPPORTED, e->cd_at, "Z-72",
                      "entry '%s' uses compression method %u; only 0 (stored) and 8 "
                      "(deflated) are supported",
                      qname(r, e, q), e->method);
    OC_FORWARD(ensure_local(r, index, pf, err));
    *out = e;
    return OC_OK;
}

/* The first read of a deferred STORED entry: its local header and data in one request,
 * [lho, where the next entry begins), when that span holds no more than the data and the
 * largest local header (else *buf stays NULL and the header costs a request of its own).
 * *buf (an oc_bytes_alloc_buffer) and *pf then hold the span. */
static oc_status fetch_with_local(const oz_zip_reader *r, uint64_t index, uint8_t **buf,
                                  prefetch *pf, oc_error *err) {
    *buf = NULL;
    if (!r || !r->checked || index >= r->count) return OC_OK;
    const oz__entry *e = &r->e[index]; /* lho, csize, method: fixed since open */
    pthread_mutex_lock(&((oz_zip_reader *)(uintptr_t)r)->lock);
    int done = r->checked[index];
    pthread_mutex_unlock(&((oz_zip_reader *)(uintptr_t)r)->lock);
    uint64_t reach = r->next_at[index] - e->lho, most = OZ_LOCAL_SIZE + 2 * 0xFFFFu + 16;
    if (done || e->method != OZ_ZIP_STORED || reach < e->csize || reach - e->csize > most ||
        reach > SIZE_MAX)
        return OC_OK;
    uint8_t *b = oc_bytes_alloc_buffer(reach);
    OC_RETURN_ERROR_IF(!b, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_status st = src_read(r, e->lho, b, reach, err);
    if (st != OC_OK) {
        oc_bytes_free_buffer(b);
        return st;
    }
    *buf = b;
    *pf = (prefetch){b, e->lho, reach};
    return OC_OK;
}

/* Z-77: a DEFLATED entry's declared size must be one deflate could produce. */
static oc_status plausible(const oz_zip_reader *r, const oz__entry *e, oc_error *err) {
    char q[OC_QUOTE_SIZE];
    uint64_t most = e->csize > (UINT64_MAX - OZ_ZIP_DEFLATE_RATIO_SLACK) / OZ_ZIP_MAX_DEFLATE_RATIO
                        ? UINT64_MAX
                        : e->csize * OZ_ZIP_MAX_DEFLATE_RATIO + OZ_ZIP_DEFLATE_RATIO_SLACK;
    OC_RETURN_RULE_IF(e->usize > most, err, OC_ERR_INCONSISTENT, e->cd_at, "Z-77",
                      "entry '%s' declares %llu bytes from %llu compressed, more than deflate "
                      "can produce",
                      qname(r, e, q), (unsigned long long)e->usize, (unsigned long long)e->csize);
    return OC_OK;
}

/* Inflates entry e, into dst (exactly e->usize bytes) or, when dst is NULL, into a scratch
 * buffer that is thrown away; *crc receives the CRC-32 of the output. Output past or short
 * of the declared size, corrupt or cut deflate data, and bytes left over after the deflate
 * stream are errors (Z-77). */
static oc_status inflate_entry(const oz_zip_reader *r, const oz__entry *e, uint8_t *dst,
                               uint32_t *crc, oc_error *err) {
    char q[OC_QUOTE_SIZE];
    qname(r, e, q);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK)
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    const uint8_t *mem = r->src->data; /* NULL: read in chunks */
    uint8_t *inbuf = mem ? NULL : malloc(CHUNK);
    uint8_t *scratch = dst ? NULL : malloc(CHUNK);
    oc_status st = OC_OK;
    if ((!mem && !inbuf) || (!dst && !scratch)) {
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        goto done;
    }
    uint64_t in_pos = 0, produced = 0;
    uint32_t c = 0;
    uint8_t probe;
    for (;;) {
        if (zs.avail_in == 0 && in_pos < e->csize) {
            uint64_t left = e->csize - in_pos;
            if (!mem) {
                uint64_t n = left < CHUNK ? left : CHUNK;
                st = src_read(r, e->data_off + in_pos, inbuf, n, err);
                if (st != OC_OK) goto done;
                zs.next_in = inbuf;
                zs.avail_in = (uInt)n;
                in_pos += n;
            } else {
                uint64_t n = left < ((uint64_t)1 << 30) ? left : ((uint64_t)1 << 30);
                zs.next_in = (Bytef *)(uintptr_t)(mem + e->data_off + in_pos);
                zs.avail_in = (uInt)n;
                in_pos += n;
            }
        }
        uint64_t room = e->usize - produced;
        uint8_t *window;
        uInt avail;
        if (room == 0) { /* everything declared has come: anything more is a bomb */
            window = &probe;
            avail = 1;
        } else if (dst) {
            window = dst + produced;
            avail = (uInt)(room < ((uint64_t)1 << 30) ? room : ((uint64_t)1 << 30));
        } else {
            window = scratch;
            avail = (uInt)(room < CHUNK ? room : CHUNK);
        }
        zs.next_out = window;
        zs.avail_out = avail;
        uInt in_before = zs.avail_in;
        int rc = inflate(&zs, Z_NO_FLUSH);
        uInt got = avail - zs.avail_out;
        if (room == 0 && got) {
            st = oc__fail_rule(err, OC_ERR_INCONSISTENT, e->data_off, "Z-77",
                               "entry '%s' inflates past its declared size of %llu bytes", q,
                               (unsigned long long)e->usize);
            goto done;
        }
        c = oz__crc32(c, window, got);
        produced += got;
        if (rc == Z_STREAM_END) break;
        if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
            st = oc__fail_rule(err, OC_ERR_MALFORMED, e->data_off, "Z-77",
                               "entry '%s' holds corrupt deflate data (%s)", q,
                               zs.msg ? zs.msg : "bad stream");
            goto done;
        }
        if (rc == Z_MEM_ERROR) {
            st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
            goto done;
        }
        if (got == 0 && in_before == zs.avail_in) { /* no progress: the input has run out */
            st = oc__fail_rule(err, OC_ERR_TRUNCATED, e->data_off, "Z-77",
                               "the deflate data of '%s' ends before its stream does", q);
            goto done;
        }
    }
    if (produced != e->usize) {
        st = oc__fail_rule(err, OC_ERR_INCONSISTENT, e->data_off, "Z-77",
                           "entry '%s' inflates to %llu bytes but declares %llu", q,
                           (unsigned long long)produced, (unsigned long long)e->usize);
        goto done;
    }
    if (zs.avail_in != 0 || in_pos != e->csize) {
        st = oc__fail_rule(err, OC_ERR_MALFORMED, e->data_off, "Z-77",
                           "%llu bytes of '%s' follow the end of its deflate stream",
                           (unsigned long long)(zs.avail_in + (e->csize - in_pos)), q);
        goto done;
    }
    *crc = c;
done:
    inflateEnd(&zs);
    free(inbuf);
    free(scratch);
    return st;
}

static oc_status crc_mismatch(const oz_zip_reader *r, const oz__entry *e, uint32_t got,
                              oc_error *err) {
    char q[OC_QUOTE_SIZE];
    return oc__fail_rule(err, OC_ERR_CHECKSUM, e->data_off, "Z-78",
                         "the CRC-32 of '%s' is 0x%08x, but the central directory says 0x%08x",
                         qname(r, e, q), got, e->crc);
}

/* Makes out own buf, an oc_bytes_alloc_buffer of n bytes (NULL when n is 0). */
static void give_buffer(oc_bytes *out, uint8_t *buf, uint64_t n) {
    out->data = buf;
    out->size = n;
    out->owner = NULL;
    out->mode = OC_BYTES_OWNED;
}

/* A STORED entry's bytes read from a remote source are checked against its CRC: they
 * crossed a network (a local file's are the file's, checked by verify). */
static oc_status downloaded_crc(const oz_zip_reader *r, const oz__entry *e, const uint8_t *data,
                                oc_error *err) {
    if (!(r->src->caps & OC_SOURCE_REMOTE)) return OC_OK;
    uint32_t crc = oz__crc32(0, data, e->usize);
    return crc == e->crc ? OC_OK : crc_mismatch(r, e, crc, err);
}

oc_status oz_zip_reader_read(const oz_zip_reader *r, uint64_t index, oc_bytes *out, oc_error *err) {
    OC_RETURN_ERROR_IF(!out, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no output span");
    oc_bytes_release(out);
    const oz__entry *e = NULL;
    uint8_t *both = NULL;
    prefetch pf;
    OC_FORWARD(fetch_with_local(r, index, &both, &pf, err));
    if (both) { /* checked from the bytes fetched; the data moves to the buffer's start */
        oc_status st = readable(r, index, &pf, &e, err);
        if (st != OC_OK) {
            oc_bytes_free_buffer(both);
            return st;
        }
        /* ensure_local put the data before the next entry, the span's end; checked again
         * here, where a mistake would hand out bytes past the buffer */
        uint64_t skip = e->data_off - e->lho;
        if (e->usize == 0 || skip > pf.len || e->usize > pf.len - skip) {
            oc_bytes_free_buffer(both);
            char q[OC_QUOTE_SIZE];
            return e->usize == 0
                       ? OC_OK /* an empty entry is an empty span */
                       : oc__fail_rule(err, OC_ERR_INCONSISTENT, e->data_off, "Z-76",
                                       "the data of '%s' runs into the next entry", qname(r, e, q));
        }
        memmove(both, both + skip, (size_t)e->usize);
        st = downloaded_crc(r, e, both, err);
        if (st != OC_OK) {
            oc_bytes_free_buffer(both);
            return st;
        }
        give_buffer(out, both, e->usize);
        return OC_OK;
    }
    OC_FORWARD(readable(r, index, NULL, &e, err));
    if (e->method == OZ_ZIP_STORED) {
        /* shares the source's lifetime (or borrows the caller's memory) */
        if (r->src->caps & OC_SOURCE_MAP)
            return oc_source_map(r->src, e->data_off, e->usize, out, err);
        if (e->usize == 0) return OC_OK;
        OC_RETURN_ERROR_IF(e->usize > SIZE_MAX, err, OC_ERR_LIMIT, e->data_off,
                           "an entry of %llu bytes does not fit in memory",
                           (unsigned long long)e->usize);
        uint8_t *buf = oc_bytes_alloc_buffer(e->usize);
        OC_RETURN_ERROR_IF(!buf, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        oc_status st = src_read(r, e->data_off, buf, e->usize, err);
        if (st == OC_OK) st = downloaded_crc(r, e, buf, err);
        if (st != OC_OK) {
            oc_bytes_free_buffer(buf);
            return st;
        }
        give_buffer(out, buf, e->usize);
        return OC_OK;
    }
    char q[OC_QUOTE_SIZE];
    if (e->usize > r->max_inflated) {
        int budget = r->max_inflated == r->max_memory;
        return oc__error_rule(err, budget ? "M-2" : "Z-66",
                              oc__fail(err, OC_ERR_LIMIT, e->cd_at,
                                       "entry '%s' would inflate to %llu bytes, more than the "
                                       "limit of %llu (%s)",
                                       qname(r, e, q), (unsigned long long)e->usize,
                                       (unsigned long long)r->max_inflated,
                                       budget ? "max_memory, M-2" : "Z-66"));
    }
    OC_FORWARD(plausible(r, e, err));
    uint8_t *buf = NULL; /* an empty entry still goes through inflate (into scratch) */
    if (e->usize) {
        buf = e->usize <= SIZE_MAX ? oc_bytes_alloc_buffer(e->usize) : NULL;
        OC_RETURN_ERROR_IF(!buf, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    uint32_t crc = 0;
    oc_status st = inflate_entry(r, e, buf, &crc, err);
    if (st == OC_OK && crc != e->crc) st = crc_mismatch(r, e, crc, err);
    if (st != OC_OK) {
        oc_bytes_free_buffer(buf);
        return st;
    }
    give_buffer(out, buf, e->usize);
    return OC_OK;
}

/* A writer that adds the bytes to a CRC and passes them on to `write`, if any. */
typedef struct crc_tee {
    oc_write_fn write; /* or NULL: the CRC alone */
    void *ctx;
    uint32_t crc;
} crc_tee;

static oc_status crc_tee_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    crc_tee *t = ctx;
    t->crc = oz__crc32(t->crc, data, size);
    return t->write ? t->write(t->ctx, data, size, err) : OC_OK;
}

oc_status oz_zip_reader_read_to(const oz_zip_reader *r, uint64_t index, oc_write_fn write,
                                void *ctx, oc_error *err) {
    OC_RETURN_ERROR_IF(!write, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no writer");
    const oz__entry *e = NULL;
    OC_FORWARD(readable(r, index, NULL, &e, err));
    if (e->method == OZ_ZIP_STORED) {
        if (!(r->src->caps & OC_SOURCE_MAP)) { /* downloaded: checked against its CRC */
            crc_tee tee = {write, ctx, 0};
            OC_FORWARD(oc_source_read_to(r->src, e->data_off, e->usize, crc_tee_write, &tee, err));
            return tee.crc == e->crc ? OC_OK : crc_mismatch(r, e, tee.crc, err);
        }
        oc_bytes view = {0}; /* streamed as a write streams, so a mapping's pages go once read */
        OC_FORWARD(oc_source_map(r->src, e->data_off, e->usize, &view, err));
        oc_status st = oc_bytes_write(&view, write, ctx, err);
        oc_bytes_release(&view);
        return st;
    }
    oc_bytes whole = {0}; /* inflated into memory, within max_inflated */
    OC_FORWARD(oz_zip_reader_read(r, index, &whole, err));
    oc_status st = whole.size ? write(ctx, whole.data, whole.size, err) : OC_OK;
    oc_bytes_release(&whole);
    return st;
}

oc_status oz_zip_reader_verify(const oz_zip_reader *r, uint64_t index, oc_error *err) {
    const oz__entry *e = NULL;
    OC_FORWARD(readable(r, index, NULL, &e, err));
    crc_tee tee = {NULL, NULL, 0};
    if (e->method == OZ_ZIP_STORED) {
        if (r->src->caps & OC_SOURCE_MAP) {
            /* streamed like a write, so a mapped archive's pages go once read */
            oc_bytes view = {0};
            OC_FORWARD(oc_source_map(r->src, e->data_off, e->usize, &view, err));
            oc_status st = oc_bytes_write(&view, crc_tee_write, &tee, err);
            oc_bytes_release(&view);
            OC_FORWARD(st);
        } else { /* in pieces; from a URL, one request streamed through */
            OC_FORWARD(oc_source_read_to(r->src, e->data_off, e->usize, crc_tee_write, &tee, err));
        }
    } else {
        OC_FORWARD(plausible(r, e, err));
        OC_FORWARD(inflate_entry(r, e, NULL, &tee.crc, err));
    }
    return tee.crc == e->crc ? OC_OK : crc_mismatch(r, e, tee.crc, err);
}

oc_status oz_zip_reader_verify_all(const oz_zip_reader *r, oc_error *err) {
    OC_RETURN_ERROR_IF(!r, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no reader");
    oz__zip_reader_will_read_all(r, UINT64_MAX);
    for (uint64_t i = 0; i < r->count; i++) OC_FORWARD(oz_zip_reader_verify(r, i, err));
    return OC_OK;
}

/* ---- a part of an entry (slices) ---- */

/* A DEFLATED entry inflated as its compressed bytes come, through a CHUNK of scratch:
 * the bytes before `from` thrown away, those of [from, to) passed to write, and nothing
 * inflated past `to`, so that memory does not depend on the entry's size. A part that
 * is the whole entry is checked as a whole read is (Z-77, its CRC included). */
typedef struct inflater {
    const oz_zip_reader *r;
    const oz__entry *e;
    z_stream zs;
    uint64_t from, to, produced;
    bool whole, ended, done; /* done: `to` reached, the rest not wanted */
    uint32_t crc;
    uint64_t left_over; /* input bytes after the end of the deflate stream */
    uint8_t *out;       /* CHUNK */
    oc_write_fn write;
    void *ctx;
} inflater;

/* Inflates what zs holds as input into the scratch, passing the wanted bytes on, until
 * it needs more input, the stream ends or `to` is reached. */
static oc_status inflate_some(inflater *f, oc_error *err) {
    char q[OC_QUOTE_SIZE];
    for (;;) {
        f->zs.next_out = f->out;
        f->zs.avail_out = (uInt)CHUNK;
        uInt in_before = f->zs.avail_in;
        int rc = inflate(&f->zs, Z_NO_FLUSH);
        uint64_t got = CHUNK - f->zs.avail_out;
        if (got > f->e->usize - f->produced)
            return oc__fail_rule(err, OC_ERR_INCONSISTENT, f->e->data_off, "Z-77",
                                 "entry '%s' inflates past its declared size of %llu bytes",
                                 qname(f->r, f->e, q), (unsigned long long)f->e->usize);
        if (f->whole) f->crc = oz__crc32(f->crc, f->out, got);
        uint64_t a = f->produced, b = f->produced + got; /* [a, b) of the entry */
        uint64_t lo = a > f->from ? a : f->from, hi = b < f->to ? b : f->to;
        if (lo < hi) OC_FORWARD(f->write(f->ctx, f->out + (lo - a), hi - lo, err));
        f->produced = b;
        if (rc == Z_STREAM_END) {
            f->ended = true;
            f->left_over += f->zs.avail_in;
            return OC_OK;
        }
        if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
            return oc__fail_rule(err, OC_ERR_MALFORMED, f->e->data_off, "Z-77",
                                 "entry '%s' holds corrupt deflate data (%s)", qname(f->r, f->e, q),
                                 f->zs.msg ? f->zs.msg : "bad stream");
        if (rc == Z_MEM_ERROR) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        if (!f->whole && f->produced >= f->to) {
            f->done = true;
            return OC_OK;
        }
        if (got == 0 && in_before == f->zs.avail_in) return OC_OK; /* wants more input */
    }
}

/* A writer that feeds compressed bytes to f; OC_ERR_CANCELLED once f->done (what
 * follows is not wanted: the read stops there). */
static oc_status inflate_feed(void *ctx, const void *data, uint64_t size, oc_error *err) {
    inflater *f = ctx;
    const uint8_t *p = data;
    while (size && !f->done) {
        if (f->ended) { /* bytes after the stream: counted, reported at the end */
            f->left_over += size;
            return OC_OK;
        }
        uInt n = (uInt)(size < ((uint64_t)1 << 30) ? size : ((uint64_t)1 << 30));
        f->zs.next_in = (Bytef *)(uintptr_t)p;
        f->zs.avail_in = n;
        OC_FORWARD(inflate_some(f, err));
        p += n;
        size -= n;
    }
    return f->done ? OC_ERR_CANCELLED : OC_OK;
}

/* The checks once the compressed bytes ran out or the part is out (Z-77): a part needs
 * its bytes alone; the whole entry a stream that ended within them, at the declared size,
 * with its CRC. */
static oc_status inflate_finish(inflater *f, oc_error *err) {
    char q[OC_QUOTE_SIZE];
    if (!f->whole && f->produced >= f->to) return OC_OK; /* the part is out */
    if (!f->ended)
        return oc__fail_rule(err, OC_ERR_TRUNCATED, f->e->data_off, "Z-77",
                             "the deflate data of '%s' ends before its stream does",
                             qname(f->r, f->e, q));
    if (f->produced != f->e->usize)
        return oc__fail_rule(err, OC_ERR_INCONSISTENT, f->e->data_off, "Z-77",
                             "entry '%s' inflates to %llu bytes but declares %llu",
                             qname(f->r, f->e, q), (unsigned long long)f->produced,
                             (unsigned long long)f->e->usize);
    if (f->left_over)
        return oc__fail_rule(err, OC_ERR_MALFORMED, f->e->data_off, "Z-77",
                             "%llu bytes of '%s' follow the end of its deflate stream",
                             (unsigned long long)f->left_over, qname(f->r, f->e, q));
    return f->crc == f->e->crc ? OC_OK : crc_mismatch(f->r, f->e, f->crc, err);
}

static oc_status inflate_part(const oz_zip_reader *r, const oz__entry *e, uint64_t from, uint64_t n,
                              oc_write_fn write, void *ctx, oc_error *err) {
    inflater f = {.r = r, .e = e, .from = from, .to = from + n, .write = write, .ctx = ctx};
    f.whole = from == 0 && n == e->usize;
    OC_FORWARD(plausible(r, e, err));
    if (!(f.out = malloc(CHUNK))) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (inflateInit2(&f.zs, -15) != Z_OK) {
        free(f.out);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    oc_status st = OC_OK;
    if (r->src->data) { /* in memory: fed in place */
        st = inflate_feed(&f, r->src->data + e->data_off, e->csize, err);
    } else { /* read as it is inflated, in windows that double up to INFLATE_WINDOW_MAX:
              * from a URL one request each, so that a part near the entry's start costs a
              * window of it, not the parallel ranges a read of all of it starts */
        uint64_t at = 0, window = INFLATE_WINDOW_MIN;
        while (st == OC_OK && at < e->csize) {
            uint64_t len = e->csize - at < window ? e->csize - at : window;
            st = oc_source_read_to(r->src, e->data_off + at, len, inflate_feed, &f, err);
            at += len;
            if (window < INFLATE_WINDOW_MAX) window *= 2;
        }
    }
    if (st == OC_ERR_CANCELLED && f.done) st = OC_OK;
    if (st == OC_OK) st = inflate_finish(&f, err);
    inflateEnd(&f.zs);
    free(f.out);
    return st;
}

oc_status oz__zip_reader_read_part(const oz_zip_reader *r, uint64_t index, uint64_t from,
                                   uint64_t n, oc_write_fn write, void *ctx, oc_error *err) {
    const oz__entry *e = NULL;
    OC_RETURN_ERROR_IF(!write, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no writer");
    OC_FORWARD(readable(r, index, NULL, &e, err));
    char q[OC_QUOTE_SIZE];
    OC_RETURN_ERROR_IF(from > e->usize || n > e->usize - from, err, OC_ERR_INVALID_ARG,
                       OC_NO_OFFSET, "entry '%s': %llu bytes at %llu run past its %llu bytes",
                       qname(r, e, q), (unsigned long long)n, (unsigned long long)from,
                       (unsigned long long)e->usize);
    if (e->method == OZ_ZIP_DEFLATED) return inflate_part(r, e, from, n, write, ctx, err);
    if (from == 0 && n == e->usize) return oz_zip_reader_read_to(r, index, write, ctx, err);
    return n ? oc_source_read_to(r->src, e->data_off + from, n, write, ctx, err) : OC_OK;
}

/* ---- Z-36: no name is both a file and a directory ---- */

/* Every name, sorted by its bytes (then by entry index). A file F clashes with the names
 * that start with "F/": in sorted order they form one run, found by binary search. That
 * costs O(B log n) for names of B bytes in all (K-1); a list of every directory prefix
 * of every name cost O(L^2) per name of length L. */
typedef struct sorted_name {
    const uint8_t *name;
    uint32_t len;
    uint32_t idx;
} sorted_name;

static int sorted_cmp(const void *pa, const void *pb) {
    const sorted_name *a = pa, *b = pb;
    uint32_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->name, b->name, n) : 0;
    if (c) return c;
    if (a->len != b->len) return a->len < b->len ? -1 : 1;
    return a->idx < b->idx ? -1 : (a->idx > b->idx ? 1 : 0);
}

/* Compares a name with the key "F/" (F: flen bytes): <0, 0 when the name starts with the
 * key, >0. */
static int cmp_dir_key(const sorted_name *x, const uint8_t *f, uint32_t flen) {
    uint32_t n = x->len < flen ? x->len : flen;
    int c = n ? memcmp(x->name, f, n) : 0;
    if (c) return c;
    if (x->len < flen) return -1;
    if (x->len == flen) return -1; /* F itself sorts before "F/..." */
    return (int)x->name[flen] - '/';
}

oc_status oz_zip_reader_check_paths(const oz_zip_reader *r, oc_error *err) {
    OC_RETURN_ERROR_IF(!r, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no reader");
    if (!r->count) return OC_OK;
    sorted_name *c = malloc((size_t)r->count * sizeof *c);
    OC_RETURN_ERROR_IF(!c, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    for (uint64_t i = 0; i < r->count; i++)
        c[i] = (sorted_name){r->names + r->e[i].name_off, r->e[i].name_len, (uint32_t)i};
    qsort(c, (size_t)r->count, sizeof *c, sorted_cmp);
    oc_status st = OC_OK;
    for (uint64_t i = 0; st == OC_OK && i < r->count; i++) {
        const oz__entry *e = &r->e[i];
        const uint8_t *s = r->names + e->name_off;
        if (e->name_len && s[e->name_len - 1] == '/') continue; /* a directory itself */
        uint64_t lo = 0, hi = r->count;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (cmp_dir_key(&c[mid], s, e->name_len) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == r->count || cmp_dir_key(&c[lo], s, e->name_len) != 0) continue;
        /* The first entry (lowest index) that makes it a directory. */
        uint32_t first = c[lo].idx;
        for (uint64_t k = lo + 1; k < r->count && cmp_dir_key(&c[k], s, e->name_len) == 0; k++)
            if (c[k].idx < first) first = c[k].idx;
        char qa[OC_QUOTE_SIZE], qb[OC_QUOTE_SIZE];
        qname(r, e, qa);
        qname(r, &r->e[first], qb);
        st = oc__fail_rule(err, OC_ERR_INCONSISTENT, e->cd_at, "Z-36",
                           "entry '%s' is a file, but entry '%s' makes it a directory: they "
                           "cannot both be extracted",
                           qa, qb);
    }
    free(c);
    return st;
}

oc_source *oz__zip_reader_source(const oz_zip_reader *r) { return r ? r->src : NULL; }

void oz__zip_reader_will_read_all(const oz_zip_reader *r, uint64_t except) {
    /* (a local file's read-ahead of the whole archive would only crowd the page cache) */
    if (!(r->src->caps & OC_SOURCE_REMOTE)) return;
    oc_source_range v[2] = {{0, r->cd_off}}; /* every entry lies before the directory (Z-75) */
    size_t n = 1;
    if (except < r->count && r->next_at) { /* [its local header, the next entry's) left out */
        uint64_t a = r->e[except].lho, b = r->next_at[except];
        if (a <= b && b <= r->cd_off) {
            n = 0;
            if (a) v[n++] = (oc_source_range){0, a};
            if (b < r->cd_off) v[n++] = (oc_source_range){b, r->cd_off - b};
        }
    }
    oc_source_will_read(r->src, v, n);
}

void oz__zip_reader_prefetch(const oz_zip_reader *r, uint64_t except) {
    if (r->src->caps & OC_SOURCE_REMOTE) return; /* will_read_all's business */
    oc_source_range *v = malloc((size_t)(r->count ? r->count : 1) * sizeof *v);
    size_t n = 0;
    if (!v) return; /* advice */
    for (uint64_t i = 0; i < r->count; i++) {
        const oz__entry *e = &r->e[i];
        if (i == except || e->method != OZ_ZIP_STORED || e->usize == 0) continue;
        if (n && v[n - 1].at + v[n - 1].size <= e->data_off &&
            e->data_off - (v[n - 1].at + v[n - 1].size) <= PREFETCH_GAP)
            v[n - 1].size = e->data_off + e->usize - v[n - 1].at; /* joined over the header */
        else
            v[n++] = (oc_source_range){e->data_off, e->usize};
    }
    oc_source_will_read(r->src, v, n);
    free(v);
}

void oz__zip_reader_will_read_locals(const oz_zip_reader *r) {
    if (!r->next_at || r->count == 0) return; /* local headers were read at open */
    oc_source_range *v = malloc((size_t)r->count * sizeof *v);
    if (!v) return;                           /* advice */
    for (uint64_t i = 0; i < r->count; i++) { /* what ensure_local reads */
        uint64_t n = OZ_LOCAL_SIZE + (uint64_t)r->e[i].name_len + 256;
        uint64_t room = r->next_at[i] - r->e[i].lho;
        v[i] = (oc_source_range){r->e[i].lho, n < room ? n : room};
    }
    oc_source_will_read(r->src, v, (size_t)r->count);
    free(v);
}
