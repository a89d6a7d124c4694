/*
 * tests/fuzz/fuzz_archive.c - the input as an .onnxz archive: libonnxz's ZIP reader
 * (spec/onnxz-zip.md) and its archive layer (spec/onnxz.md).
 *
 * The input is opened as a ZIP three ways: from memory (oz_zip_reader_open_memory, with an
 * owner token of ours or without one, as a hash of the input says), and from a file in a
 * per-process scratch directory (fuzz_scratch_dir), mapped (oz_zip_reader_open) and read
 * with pread (use_pread, or oz_zip_reader_open_fd). Invariants:
 *  - the three agree: the same status, error offset and message, or the same entries
 *    (every field of oz_zip_entry), size, zip64 flag, central directory and comment;
 *  - a refusal has a status of Z-60..Z-76 (truncated, malformed, inconsistent, unsupported,
 *    limit, unsafe path), an error record as fuzz_check_error requires and a message that
 *    ends with its rule, "(Z-nn)"; outside `truncated` the offset lies inside the input
 *    or at its end;
 *  - an accepted archive keeps the reader's promises, checked here on our own: names of 1
 *    to 4,096 bytes, valid UTF-8 without NUL, backslash, leading '/', drive prefix or
 *    empty / "." / ".." component (one trailing '/' allowed), unique (oz_zip_reader_find
 *    gives each entry back); each local header starts with its signature and names its
 *    entry; every entry's header and data lie before the central directory, STORED sizes
 *    agree, no two entries share a byte (Z-73..Z-76); the end records follow the central
 *    directory and end the file (Z-65);
 *  - every entry is read and verified: encrypted entries and unknown methods are
 *    `unsupported`; STORED data is the input's bytes at data_offset, in place from memory
 *    (borrowed, or shared with our owner token), shared with the mapping, an owned copy
 *    through pread, and verifies iff our own CRC-32 of it matches; DEFLATED data that our
 *    own inflate (zlib) finds complete and of the declared size reads as exactly those
 *    bytes (or fails with `checksum mismatch` when the CRC differs), anything else fails
 *    as Z-77 says; read and verify agree; verify_all reports the first failing entry; a
 *    failed read leaves an empty span; oz_zip_reader_check_paths finds a clash exactly
 *    when one name is the directory part of another (Z-36);
 *  - the archive layer: oz_archive_open fails exactly as the ZIP reader does, then with
 *    `not found` without __MODEL_PROTO, `unsupported` for an __ONNXZ_VERSION that is
 *    not a number up to 1; a load with skip_external_data decodes __MODEL_PROTO as
 *    oc_decode does; a full load (copy or no_copy, mapped or pread, sometimes with an
 *    alignment of 64) succeeds exactly when every EXTERNAL tensor, each on its own, meets
 *    A-21 (a location, E-12 numbers, an entry of that name that is not __MODEL_PROTO nor a
 *    directory, offset 0 and a length equal to the entry's size, an entry that reads, and
 *    with no_copy and an alignment, data aligned in the mapping, E-14); otherwise it fails
 *    with the status of the first tensor whose reference is bad, or when all references
 *    are sound, of the first tensor that does not load; a loaded model is the skip_external_data
 *    model with each EXTERNAL tensor given its entry's bytes, no data_location and only the
 *    external_data keys of E-3, and stays valid after the archive is closed;
 *    oz_archive_read_tensor gives the loaded model's bytes of that tensor; our owner token
 *    has no reference left once every reader and span is gone.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <onnxz/archive.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_NAME      4096u
#define DEFLATE_RATIO 1032u /* Z-77: deflate makes at most this much from one byte ... */
#define DEFLATE_SLACK 1024u /* ... plus this */

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- our own rules ---- */

/* Length of the UTF-8 sequence at p (no overlong forms, surrogates or values past
 * U+10FFFF), or 0. */
static size_t utf8_seq(const uint8_t *p, size_t n) {
    uint8_t c = p[0];
    if (c < 0x80) return 1;
    size_t k;
    uint32_t v, min;
    if (c >= 0xc2 && c <= 0xdf)
        k = 2, v = c & 0x1fu, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        k = 3, v = c & 0x0fu, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4)
        k = 4, v = c & 0x07u, min = 0x10000;
    else
        return 0;
    if (n < k) return 0;
    for (size_t i = 1; i < k; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        v = v << 6 | (p[i] & 0x3fu);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    return k;
}

/* Z-30..Z-34 with the reader's exceptions: what an accepted name must be. */
static const char *name_fault(const uint8_t *s, size_t n) {
    if (n == 0 || n > MAX_NAME) return "length";
    for (size_t i = 0; i < n;) {
        if (s[i] == 0) return "a NUL byte";
        size_t k = utf8_seq(s + i, n - i);
        if (!k) return "not UTF-8";
        i += k;
    }
    if (memchr(s, '\\', n)) return "a backslash";
    if (s[0] == '/') return "absolute";
    if (n >= 2 && s[1] == ':' && ((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z')) return "a drive";
    size_t end = s[n - 1] == '/' ? n - 1 : n, start = 0;
    for (size_t i = 0; i <= end; i++) {
        if (i < end && s[i] != '/') continue;
        size_t c = i - start;
        if (c == 0 || (c == 1 && s[start] == '.') ||
            (c == 2 && s[start] == '.' && s[start + 1] == '.'))
            return "a bad component";
        start = i + 1;
    }
    return NULL;
}

static int is_zip_status(oc_status st) {
    return st == OC_ERR_TRUNCATED || st == OC_ERR_MALFORMED || st == OC_ERR_INCONSISTENT ||
           st == OC_ERR_UNSUPPORTED || st == OC_ERR_LIMIT || st == OC_ERR_UNSAFE_PATH ||
           st == OC_ERR_NOMEM;
}

/* A refusal about the input: its error record, a rule at the end of the message, and an
 * offset inside the input, or at its end (an empty central directory there), unless the
 * fault is that something lies past its end. */
static void check_refusal(oc_status st, const oc_error *err, uint64_t size) {
    fuzz_check_error(st, err, UINT64_MAX);
    if (st == OC_ERR_NOMEM) return;
    size_t n = strlen(err->message);
    const char *tag = strstr(err->message, "(Z-");
    FUZZ_CHECK(tag && n && err->message[n - 1] == ')', "%s without its rule: %s",
               oc_status_name(st), err->message);
    FUZZ_CHECK(st == OC_ERR_TRUNCATED || err->offset == OC_NO_OFFSET || err->offset <= size,
               "%s at offset %llu, outside the %llu-byte input: %s", oc_status_name(st),
               (unsigned long long)err->offset, (unsigned long long)size, err->message);
    FUZZ_CHECK(err->sys_errno == 0, "refusal with errno %d: %s", err->sys_errno, err->message);
}

/* ---- our own inflate, to predict DEFLATED reads ---- */

typedef struct inflated {
    int complete;  /* a whole deflate stream of exactly csize bytes and usize bytes out */
    uint8_t *data; /* those bytes (malloc) */
    uint32_t crc;
} inflated;

static inflated inflate_own(const uint8_t *in, uint64_t csize, uint64_t usize) {
    inflated r = {0, NULL, 0};
    r.data = malloc(usize + 1);
    FUZZ_CHECK(r.data != NULL, "out of memory");
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    FUZZ_CHECK(inflateInit2(&zs, -15) == Z_OK, "inflateInit2");
    zs.next_in = (Bytef *)(uintptr_t)in;
    zs.avail_in = (uInt)csize;
    zs.next_out = r.data;
    zs.avail_out = (uInt)(usize + 1);
    int rc = inflate(&zs, Z_FINISH);
    r.complete = rc == Z_STREAM_END && zs.avail_in == 0 && zs.total_out == usize;
    inflateEnd(&zs);
    r.crc = r.complete ? fuzz_crc32(0, r.data, usize) : 0; /* else the bytes are not all there */
    return r;
}

/* ---- the three readers ---- */

enum { MEM, MAPPED, PREAD, NREADERS };
static const char *const reader_names[NREADERS] = {"memory", "mapped", "pread"};

typedef struct readers {
    oz_zip_reader *r[NREADERS];
    oc_status st[NREADERS];
    oc_error err[NREADERS];
    const uint8_t *base; /* where the memory reader's bytes are */
    oc_owner *owner;     /* ours, or NULL */
} readers;

static void free_buffer(void *p) { oc_bytes_free_buffer(p); }

static void compare_readers(readers *rs, uint64_t size) {
    for (int k = 1; k < NREADERS; k++) {
        FUZZ_CHECK(rs->st[k] == rs->st[MEM], "memory reader: %s (%s), %s reader: %s (%s)",
                   oc_status_name(rs->st[MEM]), rs->err[MEM].message, reader_names[k],
                   oc_status_name(rs->st[k]), rs->err[k].message);
        if (rs->st[MEM] != OC_OK) {
            FUZZ_CHECK(rs->err[k].offset == rs->err[MEM].offset &&
                           strcmp(rs->err[k].message, rs->err[MEM].message) == 0,
                       "memory reader: %s at %llu, %s reader: %s at %llu", rs->err[MEM].message,
                       (unsigned long long)rs->err[MEM].offset, reader_names[k], rs->err[k].message,
                       (unsigned long long)rs->err[k].offset);
            FUZZ_CHECK(rs->r[k] == NULL, "a failed open left a reader");
            continue;
        }
        const oz_zip_reader *a = rs->r[MEM], *b = rs->r[k];
        uint64_t n = oz_zip_reader_count(a);
        FUZZ_CHECK(oz_zip_reader_count(b) == n, "entry counts differ");
        FUZZ_CHECK(oz_zip_reader_size(a) == size && oz_zip_reader_size(b) == size,
                   "archive sizes %llu and %llu for %llu bytes",
                   (unsigned long long)oz_zip_reader_size(a),
                   (unsigned long long)oz_zip_reader_size(b), (unsigned long long)size);
        FUZZ_CHECK(oz_zip_reader_is_zip64(a) == oz_zip_reader_is_zip64(b), "zip64 differs");
        uint64_t ao, as, bo, bs;
        oz_zip_reader_central_dir(a, &ao, &as);
        oz_zip_reader_central_dir(b, &bo, &bs);
        FUZZ_CHECK(ao == bo && as == bs, "central directories differ");
        uint32_t ac, bc;
        const uint8_t *ap = oz_zip_reader_comment(a, &ac), *bp = oz_zip_reader_comment(b, &bc);
        FUZZ_CHECK(ac == bc && (ac == 0 || memcmp(ap, bp, ac) == 0), "comments differ");
        FUZZ_CHECK((ac == 0) == (ap == NULL), "comment of %u bytes at %p", ac, (const void *)ap);
        for (uint64_t i = 0; i < n; i++) {
            oz_zip_entry x, y;
            oc_error e;
            FUZZ_CHECK(oz_zip_reader_entry(a, i, &x, &e) == OC_OK &&
                           oz_zip_reader_entry(b, i, &y, &e) == OC_OK,
                       "entry %llu: %s", (unsigned long long)i, e.message);
            FUZZ_CHECK(x.name_len == y.name_len && memcmp(x.name, y.name, x.name_len) == 0 &&
                           x.method == y.method && x.flags == y.flags && x.crc32 == y.crc32 &&
                           x.compressed_size == y.compressed_size &&
                           x.uncompressed_size == y.uncompressed_size &&
                           x.local_header_offset == y.local_header_offset &&
                           x.data_offset == y.data_offset,
                       "entry %llu differs between the memory and the %s reader",
                       (unsigned long long)i, reader_names[k]);
        }
    }
}

/* ---- what an accepted archive must be ---- */

typedef struct span {
    uint64_t start, end;
} span;

static int span_cmp(const void *a, const void *b) {
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void check_structure(const oz_zip_reader *r, const uint8_t *data, uint64_t size) {
    uint64_t n = oz_zip_reader_count(r), cd_off, cd_size;
    oz_zip_reader_central_dir(r, &cd_off, &cd_size);
    uint32_t clen;
    oz_zip_reader_comment(r, &clen);
    FUZZ_CHECK(cd_off <= size && cd_size <= size - cd_off, "central directory outside the file");
    FUZZ_CHECK(n <= cd_size / 46, "%llu entries in %llu bytes of central directory",
               (unsigned long long)n, (unsigned long long)cd_size);
    uint64_t tail = size - cd_off - cd_size; /* the end records (Z-65) */
    if (oz_zip_reader_is_zip64(r))
        FUZZ_CHECK(tail >= 56 + 20 + 22 + (uint64_t)clen &&
                       le32(data + cd_off + cd_size) == 0x06064b50u,
                   "no zip64 end record after the central directory");
    else
        FUZZ_CHECK(tail == 22 + (uint64_t)clen && le32(data + cd_off + cd_size) == 0x06054b50u,
                   "%llu bytes after the central directory: not the end record and a %u-byte "
                   "comment",
                   (unsigned long long)tail, clen);
    span *s = malloc((size_t)(n ? n : 1) * sizeof *s);
    FUZZ_CHECK(s != NULL, "out of memory");
    for (uint64_t i = 0; i < n; i++) {
        oz_zip_entry e;
        oc_error err;
        FUZZ_CHECK(oz_zip_reader_entry(r, i, &e, &err) == OC_OK, "entry %llu: %s",
                   (unsigned long long)i, err.message);
        FUZZ_CHECK(strlen(e.name) == e.name_len, "name length %u, strlen %zu", e.name_len,
                   strlen(e.name));
        const char *why = name_fault((const uint8_t *)e.name, e.name_len);
        FUZZ_CHECK(!why, "accepted an entry name with %s", why);
        uint64_t idx = UINT64_MAX;
        FUZZ_CHECK(oz_zip_reader_find(r, e.name, &idx, &err) == OC_OK && idx == i,
                   "find(name of entry %llu) gives %llu", (unsigned long long)i,
                   (unsigned long long)idx);
        uint64_t h = e.local_header_offset;
        FUZZ_CHECK(h <= cd_off && cd_off - h >= 30 + (uint64_t)e.name_len,
                   "local header at %llu not before the central directory", (unsigned long long)h);
        FUZZ_CHECK(le32(data + h) == 0x04034b50u && le16(data + h + 26) == e.name_len &&
                       memcmp(data + h + 30, e.name, e.name_len) == 0,
                   "no local header of '%s' at %llu", e.name, (unsigned long long)h);
        FUZZ_CHECK(e.data_offset == h + 30 + le16(data + h + 26) + (uint64_t)le16(data + h + 28),
                   "data of '%s' at %llu, not after its local header", e.name,
                   (unsigned long long)e.data_offset);
        FUZZ_CHECK(e.data_offset <= cd_off && e.compressed_size <= cd_off - e.data_offset,
                   "data of '%s' not before the central directory", e.name);
        FUZZ_CHECK(e.method != 0 || e.compressed_size == e.uncompressed_size,
                   "STORED '%s' with two sizes", e.name);
        s[i].start = h;
        s[i].end = e.data_offset + e.compressed_size;
    }
    qsort(s, (size_t)n, sizeof *s, span_cmp);
    for (uint64_t i = 1; i < n; i++)
        FUZZ_CHECK(s[i - 1].end <= s[i].start, "entries at %llu and %llu overlap",
                   (unsigned long long)s[i - 1].start, (unsigned long long)s[i].start);
    free(s);
}

/* Z-36 on our own (quadratic: small archives only). -1: not predicted. */
static int predict_path_clash(const oz_zip_reader *r) {
    uint64_t n = oz_zip_reader_count(r);
    if (n > 256) return -1;
    for (uint64_t i = 0; i < n; i++) {
        oz_zip_entry a;
        oz_zip_reader_entry(r, i, &a, NULL);
        if (a.name[a.name_len - 1] == '/') continue; /* a directory itself */
        for (uint64_t j = 0; j < n; j++) {
            oz_zip_entry b;
            oz_zip_reader_entry(r, j, &b, NULL);
            if (j != i && b.name_len > a.name_len && b.name[a.name_len] == '/' &&
                memcmp(a.name, b.name, a.name_len) == 0)
                return 1;
        }
    }
    return 0;
}

/* ---- entries ---- */

typedef struct entry_result {
    oc_status st;   /* of reading it (memory reader) */
    oc_bytes bytes; /* what it read */
} entry_result;

static void check_span_empty(const oc_bytes *b, const char *what) {
    FUZZ_CHECK(b->data == NULL && b->size == 0 && b->mode == OC_BYTES_OWNED && b->owner == NULL,
               "%s: a failed read left a span of %llu bytes (mode %d)", what,
               (unsigned long long)b->size, (int)b->mode);
}

/* Reads and verifies entry i with every reader; returns what the memory reader read. */
static entry_result check_entry(readers *rs, uint64_t i, const uint8_t *input) {
    const oz_zip_reader *a = rs->r[MEM];
    oz_zip_entry e;
    oz_zip_reader_entry(a, i, &e, NULL);
    entry_result res;
    memset(&res, 0, sizeof res);
    oc_error err;
    oc_error_clear(&err);
    res.st = oz_zip_reader_read(a, i, &res.bytes, &err);
    oc_error verr;
    oc_error_clear(&verr);
    oc_status vst = oz_zip_reader_verify(a, i, &verr);
    if (res.st != OC_OK) {
        check_span_empty(&res.bytes, e.name);
        check_refusal(res.st, &err, UINT64_MAX);
    }
    if (vst != OC_OK) check_refusal(vst, &verr, UINT64_MAX);

    const uint8_t *at = input + e.data_offset;
    if ((e.flags & 0x41u) || (e.method != 0 && e.method != 8)) {
        FUZZ_CHECK(res.st == OC_ERR_UNSUPPORTED && vst == OC_ERR_UNSUPPORTED,
                   "encrypted or method %u entry '%s': read %s, verify %s", e.method, e.name,
                   oc_status_name(res.st), oc_status_name(vst));
    } else if (e.method == 0) {
        FUZZ_CHECK(res.st == OC_OK, "STORED '%s': %s", e.name, err.message);
        const oc_bytes *b = &res.bytes;
        FUZZ_CHECK(b->size == e.uncompressed_size, "read %llu bytes of %llu",
                   (unsigned long long)b->size, (unsigned long long)e.uncompressed_size);
        const uint8_t *want = rs->base + e.data_offset;
        if (rs->owner)
            FUZZ_CHECK(b->mode == OC_BYTES_SHARED && b->owner == rs->owner && b->data == want,
                       "STORED '%s' from owned memory is not shared in place", e.name);
        else
            FUZZ_CHECK(b->mode == OC_BYTES_BORROWED && b->data == want,
                       "STORED '%s' from memory is not borrowed in place", e.name);
        uint32_t crc = fuzz_crc32(0, at, e.uncompressed_size);
        FUZZ_CHECK(vst == (crc == e.crc32 ? OC_OK : OC_ERR_CHECKSUM),
                   "STORED '%s': CRC 0x%08x, stored 0x%08x, verify says %s", e.name, crc, e.crc32,
                   oc_status_name(vst));
    } else if (e.uncompressed_size > OZ_ZIP_DEFAULT_MAX_INFLATED) { /* verify streams: any */
        FUZZ_CHECK(res.st == OC_ERR_LIMIT, "DEFLATED '%s' of %llu bytes: read %s, not limit (Z-66)",
                   e.name, (unsigned long long)e.uncompressed_size, oc_status_name(res.st));
    } else {
        uint64_t most = e.compressed_size * DEFLATE_RATIO + DEFLATE_SLACK;
        if (e.uncompressed_size > most) {
            FUZZ_CHECK(res.st == OC_ERR_INCONSISTENT && vst == OC_ERR_INCONSISTENT,
                       "'%s' declares %llu bytes from %llu: read %s, verify %s (Z-77)", e.name,
                       (unsigned long long)e.uncompressed_size,
                       (unsigned long long)e.compressed_size, oc_status_name(res.st),
                       oc_status_name(vst));
        } else {
            inflated z = inflate_own(at, e.compressed_size, e.uncompressed_size);
            if (z.complete) {
                oc_status want = z.crc == e.crc32 ? OC_OK : OC_ERR_CHECKSUM;
                FUZZ_CHECK(res.st == want && vst == want,
                           "DEFLATED '%s' inflates whole: read %s, verify %s, expected %s (%s)",
                           e.name, oc_status_name(res.st), oc_status_name(vst),
                           oc_status_name(want), err.message);
                if (res.st == OC_OK) {
                    const oc_bytes *b = &res.bytes;
                    FUZZ_CHECK(b->mode == OC_BYTES_OWNED && b->size == e.uncompressed_size &&
                                   (b->size == 0 || ((uintptr_t)b->data & 63u) == 0) &&
                                   (b->size == 0 || memcmp(b->data, z.data, b->size) == 0),
                               "DEFLATED '%s' reads other bytes than it inflates to", e.name);
                }
            } else {
                FUZZ_CHECK((res.st == OC_ERR_MALFORMED || res.st == OC_ERR_TRUNCATED ||
                            res.st == OC_ERR_INCONSISTENT) &&
                               vst == res.st,
                           "DEFLATED '%s' does not inflate whole: read %s (%s), verify %s", e.name,
                           oc_status_name(res.st), err.message, oc_status_name(vst));
            }
            free(z.data);
        }
    }

    /* The file readers read the same. */
    for (int k = MAPPED; k < NREADERS; k++) {
        oc_bytes b = {0};
        oc_error e2;
        oc_status st = oz_zip_reader_read(rs->r[k], i, &b, &e2);
        FUZZ_CHECK(st == res.st, "entry '%s': memory read %s, %s read %s (%s)", e.name,
                   oc_status_name(res.st), reader_names[k], oc_status_name(st), e2.message);
        if (st == OC_OK) {
            FUZZ_CHECK(b.size == res.bytes.size &&
                           (b.size == 0 || memcmp(b.data, res.bytes.data, b.size) == 0),
                       "entry '%s': the %s reader reads other bytes", e.name, reader_names[k]);
            if (e.method == 0 && k == MAPPED)
                FUZZ_CHECK(b.mode == OC_BYTES_SHARED && b.owner != NULL,
                           "STORED '%s' from a mapping is not shared", e.name);
            if (e.method == 0 && k == PREAD)
                FUZZ_CHECK(b.mode == OC_BYTES_OWNED, "STORED '%s' through pread is not a copy",
                           e.name);
        } else {
            check_span_empty(&b, e.name);
        }
        oc_bytes_release(&b);
        if (k == PREAD) {
            st = oz_zip_reader_verify(rs->r[k], i, &e2);
            FUZZ_CHECK(st == vst, "entry '%s': memory verify %s, pread verify %s", e.name,
                       oc_status_name(vst), oc_status_name(st));
        }
    }
    return res;
}

/* ---- the archive layer ---- */

static int digits_up_to_1(const oc_bytes *b) { /* A-40, as version 1 reads it */
    if (b->size == 0 || b->size > 9) return 0;
    uint64_t v = 0;
    for (uint64_t i = 0; i < b->size; i++) {
        if (b->data[i] < '0' || b->data[i] > '9') return 0;
        v = v * 10 + (uint64_t)(b->data[i] - '0');
    }
    return v <= 1;
}

/* E-12: 1 to 19 decimal digits, at most 2^63 - 1. */
static int parse_number(const oc_str *s, uint64_t *v) {
    if (!s->size || s->size > 19) return 0;
    *v = 0;
    for (uint64_t i = 0; i < s->size; i++) {
        if (s->data[i] < '0' || s->data[i] > '9') return 0;
        *v = *v * 10 + (uint64_t)(s->data[i] - '0');
    }
    return *v <= (uint64_t)INT64_MAX;
}

static const oc_str *ext_value(const onnx_TensorProto *t, const char *key) {
    const oc_str *v = NULL; /* the last one counts (E-2) */
    for (uint64_t i = 0; i < t->external_data.count; i++)
        if (oc_str_eq(t->external_data.items[i]->key, key)) v = &t->external_data.items[i]->value;
    return v;
}

typedef struct predict {
    const oz_zip_reader *zip;
    const entry_result *entries;
    uint64_t model_index;
    int aligned_in_place; /* no_copy from a mapping with alignment 64 */
    oc_status first_ref;  /* the first tensor whose reference breaks A-21 */
    oc_status first_load; /* the first without a location, or whose entry does not load */
    uint64_t external;
} predict;

/* The reference of an EXTERNAL tensor with a location, against A-21 and E-12: OC_OK or
 * its fault; *index receives the entry. */
static oc_status reference_fault(predict *p, const onnx_TensorProto *t, const oc_str *loc,
                                 uint64_t *index) {
    const oc_str *o = ext_value(t, "offset"), *l = ext_value(t, "length");
    uint64_t off = 0, len = 0;
    if ((o && !parse_number(o, &off)) || (l && !parse_number(l, &len))) return OC_ERR_MALFORMED;
    if (loc->size > 65535 || (loc->size && memchr(loc->data, 0, (size_t)loc->size)))
        return OC_ERR_NOT_FOUND;
    char *name = malloc((size_t)loc->size + 1);
    FUZZ_CHECK(name != NULL, "out of memory");
    if (loc->size) memcpy(name, loc->data, (size_t)loc->size);
    name[loc->size] = '\0';
    oc_status st = oz_zip_reader_find(p->zip, name, index, NULL);
    free(name);
    if (st != OC_OK || *index == p->model_index) return OC_ERR_NOT_FOUND;
    if (loc->data[loc->size - 1] == '/') return OC_ERR_INCONSISTENT;
    oz_zip_entry e;
    oz_zip_reader_entry(p->zip, *index, &e, NULL);
    if (o && off != 0) return OC_ERR_INCONSISTENT;
    if (l && len != e.uncompressed_size) return OC_ERR_INCONSISTENT;
    return OC_OK;
}

/* What loading the entry of a tensor whose reference is sound gives. */
static oc_status load_fault(predict *p, uint64_t index) {
    oz_zip_entry e;
    oz_zip_reader_entry(p->zip, index, &e, NULL);
    if (p->entries[index].st != OC_OK) return p->entries[index].st;
    if (p->aligned_in_place && e.method == 0 && e.uncompressed_size && e.data_offset % 64)
        return OC_ERR_INCONSISTENT; /* E-14 */
    return OC_OK;
}

/* Every reference is checked (A-21, E-12) before the loader loads anything; so the first
 * tensor whose reference is bad decides, else the first the loader fails on in its walk:
 * no location (E-1), an entry that does not read, or bytes not aligned in place (E-14). */
static oc_status predict_tensor(void *ctx, onnx_TensorProto *t) {
    predict *p = ctx;
    if (!(OC_HAS(TensorProto, t, data_location) && t->data_location == 1)) return OC_OK;
    p->external++;
    uint64_t index = 0;
    const oc_str *loc = ext_value(t, "location");
    oc_status st = loc ? reference_fault(p, t, loc, &index) : OC_OK;
    if (st != OC_OK && p->first_ref == OC_OK) p->first_ref = st;
    if (st != OC_OK) return OC_OK;
    st = loc ? load_fault(p, index) : OC_ERR_MALFORMED;
    if (st != OC_OK && p->first_load == OC_OK) p->first_load = st;
    if (p->first_ref != OC_OK || p->first_load != OC_OK) return OC_OK;
    /* Not faulty (so far): what the load makes of it (A-22, E-3). */
    const oc_bytes *b = &p->entries[index].bytes;
    oc_error e;
    FUZZ_CHECK(oc_bytes_set_copy(&t->raw_data, b->data, b->size, &e) == OC_OK, "out of memory");
    OC_SET_HAS(TensorProto, t, raw_data);
    t->data_location = 0;
    OC_CLEAR_HAS(TensorProto, t, data_location);
    fuzz_drop_external_keys(t);
    return OC_OK;
}

typedef struct name_pick {
    char *buf;
    size_t cap;
    int found;
} name_pick;

static oc_status pick_external(void *ctx, onnx_TensorProto *t) {
    name_pick *p = ctx;
    if (p->found || !(OC_HAS(TensorProto, t, data_location) && t->data_location == 1)) return OC_OK;
    if (t->name.size >= p->cap || (t->name.size && memchr(t->name.data, 0, (size_t)t->name.size)))
        return OC_OK;
    if (t->name.size) memcpy(p->buf, t->name.data, (size_t)t->name.size);
    p->buf[t->name.size] = '\0';
    p->found = 1;
    return OC_OK;
}

static const char *first_external_name(void *model, char *buf, size_t cap) {
    name_pick p = {buf, cap, 0};
    oc_msg_visit_tensors(&onnx_ModelProto_desc, model, pick_external, &p);
    return p.found ? buf : NULL;
}

static void check_archive(readers *rs, const char *path, const entry_result *entries, uint64_t h) {
    const oz_zip_reader *zip = rs->r[MEM];
    int pread_archive = (h >> 2) & 1;
    oz_zip_reader_options zo = OZ_ZIP_READER_OPTIONS_INIT;
    zo.use_pread = pread_archive;
    oz_archive *ar = NULL;
    oc_error err;
    oc_error_clear(&err);
    oc_status st = oz_archive_open(path, &zo, &ar, &err);

    /* what it must say */
    oc_status want = rs->st[MEM];
    uint64_t model_index = UINT64_MAX;
    if (want == OC_OK) {
        uint64_t vi;
        if (oz_zip_reader_find(zip, OZ_MODEL_ENTRY, &model_index, NULL) != OC_OK)
            want = OC_ERR_NOT_FOUND;
        else if (oz_zip_reader_find(zip, OZ_VERSION_ENTRY, &vi, NULL) == OC_OK)
            want = entries[vi].st != OC_OK              ? entries[vi].st
                   : digits_up_to_1(&entries[vi].bytes) ? OC_OK
                                                        : OC_ERR_UNSUPPORTED;
    }
    FUZZ_CHECK(st == want, "oz_archive_open: %s (%s), expected %s", oc_status_name(st), err.message,
               oc_status_name(want));
    if (st != OC_OK) {
        fuzz_check_error(st, &err, UINT64_MAX);
        FUZZ_CHECK(ar == NULL, "a failed open left an archive");
        return;
    }
    FUZZ_CHECK(oz_zip_reader_count(oz_archive_zip(ar)) == oz_zip_reader_count(zip),
               "the archive's reader has other entries");
    oz_archive_space space;
    oz_archive_get_space(ar, &space);
    uint64_t cd_off;
    oz_zip_reader_central_dir(zip, &cd_off, NULL);
    FUZZ_CHECK(space.archive_size == oz_zip_reader_size(zip) &&
                   space.file_size == space.archive_size && space.unused_bytes <= cd_off,
               "oz_archive_get_space: %llu / %llu bytes, %llu unused",
               (unsigned long long)space.archive_size, (unsigned long long)space.file_size,
               (unsigned long long)space.unused_bytes);

    /* __MODEL_PROTO alone, as oc_decode decodes it */
    oc_parse_options skip = OC_PARSE_OPTIONS_INIT;
    skip.skip_external_data = 1;
    oc_model *ms = NULL;
    oc_status sst = oz_archive_load_model(ar, &skip, &ms, &err);
    const entry_result *me = &entries[model_index];
    oc_arena *arena = oc_arena_new();
    FUZZ_CHECK(arena != NULL, "out of memory");
    void *own = oc_msg_new(arena, &onnx_ModelProto_desc);
    oc_status dst = me->st;
    oc_error derr;
    oc_error_clear(&derr);
    if (dst == OC_OK)
        dst = oc_decode(&onnx_ModelProto_desc, own, me->bytes.data, me->bytes.size, arena, NULL,
                        NULL, &derr);
    FUZZ_CHECK(sst == dst,
               "skip_external_data load: %s (%s), decoding " OZ_MODEL_ENTRY " gives %s (%s)",
               oc_status_name(sst), err.message, oc_status_name(dst), derr.message);
    if (sst != OC_OK) {
        fuzz_check_error(sst, &err, UINT64_MAX);
        FUZZ_CHECK(ms == NULL, "a failed load left a model");
        oc_arena_free(arena);
        oz_archive_close(ar);
        return;
    }
    fuzz_buf e_own = fuzz_encode(&onnx_ModelProto_desc, own);
    fuzz_buf e_skip = fuzz_encode(&onnx_ModelProto_desc, oc_model_proto(ms));
    fuzz_check_same("skip_external_data load == oc_decode(" OZ_MODEL_ENTRY ")", &e_own, &e_skip);
    free(e_skip.data);
    oc_model_free(ms);

    /* the full load: predicted from A-21, tensor by tensor */
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.no_copy = (h >> 3) & 1;
    if (po.no_copy) po.buffer.raw_data_threshold = 0;
    if ((h >> 4) & 1) po.buffer.alignment = 64;
    char tname[256];
    const char *pick = first_external_name(own, tname, sizeof tname);
    predict p = {
        zip,   entries, model_index, po.no_copy && po.buffer.alignment && !pread_archive, OC_OK,
        OC_OK, 0};
    oc_msg_visit_tensors(&onnx_ModelProto_desc, own, predict_tensor, &p);
    oc_status expect = p.first_ref != OC_OK ? p.first_ref : p.first_load;
    oc_model *m = NULL;
    oc_error_clear(&err);
    st = oz_archive_load_model(ar, &po, &m, &err);
    FUZZ_CHECK(st == expect,
               "load (no_copy %d, alignment %llu, %s): %s (%s), expected %s "
               "(A-21, each of %llu EXTERNAL tensors on its own)",
               po.no_copy, (unsigned long long)po.buffer.alignment,
               pread_archive ? "pread" : "mapped", oc_status_name(st), err.message,
               oc_status_name(expect), (unsigned long long)p.external);
    if (st != OC_OK) {
        fuzz_check_error(st, &err, UINT64_MAX);
        FUZZ_CHECK(m == NULL, "a failed load left a model");
        free(e_own.data);
        oc_arena_free(arena);
        oz_archive_close(ar);
        return;
    }
    /* oz_archive_read_tensor agrees with the load */
    if (pick) {
        oc_bytes b = {0};
        oc_error e2;
        oc_status rst = oz_archive_read_tensor(ar, pick, &b, &e2);
        const onnx_TensorProto *found =
            fuzz_first_named(&onnx_ModelProto_desc, oc_model_proto(m), pick, strlen(pick));
        FUZZ_CHECK(found != NULL, "the loaded model lost tensor '%s'", pick);
        FUZZ_CHECK(rst == OC_OK, "oz_archive_read_tensor('%s') after a good load: %s", pick,
                   e2.message);
        FUZZ_CHECK(b.size == found->raw_data.size &&
                       (b.size == 0 || memcmp(b.data, found->raw_data.data, b.size) == 0),
                   "oz_archive_read_tensor('%s') reads other bytes than the load", pick);
        oc_bytes_release(&b);
    }
    oz_archive_close(ar); /* the model keeps what it needs */
    /* An empty entry read through pread is an empty owned span, with no owner to share:
     * a no_copy load then gives its tensor an empty borrowed span. Only empty ones. */
    static const uint8_t nowhere[1];
    fuzz_span_rules rules = {po.no_copy, nowhere, nowhere, po.no_copy, 0, 0};
    fuzz_check_tensors(&onnx_ModelProto_desc, oc_model_proto(m), &rules);
    fuzz_buf e_want = fuzz_encode(&onnx_ModelProto_desc, own);
    fuzz_buf e_load = fuzz_encode(&onnx_ModelProto_desc, oc_model_proto(m));
    fuzz_check_same("loaded model == " OZ_MODEL_ENTRY " with each EXTERNAL tensor given its "
                    "entry (A-22)",
                    &e_want, &e_load);
    free(e_want.data);
    free(e_load.data);
    free(e_own.data);
    oc_model_free(m);
    oc_arena_free(arena);
}

/* ---- the target ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[4096 + 16];
    if (!path[0]) snprintf(path, sizeof path, "%s/in.onnxz", fuzz_scratch_dir("archive"));
    uint64_t h = fuzz_hash(data, size);
    readers rs;
    memset(&rs, 0, sizeof rs);
    rs.base = data;
    uint8_t *copy = NULL;
    if ((h & 1) && size) { /* from memory we own: STORED reads share our token */
        copy = oc_bytes_alloc_buffer(size);
        FUZZ_CHECK(copy != NULL, "out of memory");
        memcpy(copy, data, size);
        rs.owner = oc_owner_new(free_buffer, copy);
        FUZZ_CHECK(rs.owner != NULL, "out of memory");
        rs.base = copy;
    }
    for (int k = 0; k < NREADERS; k++) oc_error_clear(&rs.err[k]);
    rs.st[MEM] = oz_zip_reader_open_memory(rs.base, size, rs.owner, NULL, &rs.r[MEM], &rs.err[MEM]);
    fuzz_write_file(path, data, size);
    rs.st[MAPPED] = oz_zip_reader_open(path, NULL, &rs.r[MAPPED], &rs.err[MAPPED]);
    if ((h >> 1) & 1) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        FUZZ_CHECK(fd >= 0, "cannot open %s", path);
        rs.st[PREAD] = oz_zip_reader_open_fd(fd, NULL, &rs.r[PREAD], &rs.err[PREAD]);
        close(fd); /* the reader has its own */
    } else {
        oz_zip_reader_options o = OZ_ZIP_READER_OPTIONS_INIT;
        o.use_pread = 1;
        rs.st[PREAD] = oz_zip_reader_open(path, &o, &rs.r[PREAD], &rs.err[PREAD]);
    }
    if (rs.st[MEM] != OC_OK) {
        check_refusal(rs.st[MEM], &rs.err[MEM], size);
        FUZZ_CHECK(is_zip_status(rs.st[MEM]), "opening gave %s (%s)", oc_status_name(rs.st[MEM]),
                   rs.err[MEM].message);
        FUZZ_CHECK(rs.r[MEM] == NULL, "a failed open left a reader");
    }
    compare_readers(&rs, size);

    entry_result *entries = NULL;
    uint64_t n = 0;
    if (rs.st[MEM] == OC_OK) {
        const oz_zip_reader *a = rs.r[MEM];
        check_structure(a, data, size);
        n = oz_zip_reader_count(a);
        entries = calloc((size_t)(n ? n : 1), sizeof *entries);
        FUZZ_CHECK(entries != NULL, "out of memory");
        oc_status first = OC_OK;
        for (uint64_t i = 0; i < n; i++) {
            entries[i] = check_entry(&rs, i, data);
            oc_status v = oz_zip_reader_verify(a, i, NULL);
            if (first == OC_OK) first = v;
        }
        oc_error err;
        oc_status st = oz_zip_reader_verify_all(a, &err);
        FUZZ_CHECK(st == first, "verify_all: %s, the first failing entry: %s", oc_status_name(st),
                   oc_status_name(first));
        int clash = predict_path_clash(a);
        st = oz_zip_reader_check_paths(a, &err);
        FUZZ_CHECK(st == OC_OK || st == OC_ERR_INCONSISTENT, "check_paths: %s", err.message);
        if (clash >= 0)
            FUZZ_CHECK(st == (clash ? OC_ERR_INCONSISTENT : OC_OK),
                       "check_paths says %s, a clash %s (Z-36)", oc_status_name(st),
                       clash ? "exists" : "does not exist");
    }
    check_archive(&rs, path, entries, h);

    for (uint64_t i = 0; i < n; i++) oc_bytes_release(&entries[i].bytes);
    free(entries);
    for (int k = 0; k < NREADERS; k++) oz_zip_reader_close(rs.r[k]);
    if (rs.owner) {
        FUZZ_CHECK(oc_owner_refcount(rs.owner) == 1,
                   "%llu references to our buffer remain after every reader and span is gone",
                   (unsigned long long)oc_owner_refcount(rs.owner) - 1);
        oc_owner_unref(rs.owner);
    }
    unlink(path);
    return 0;
}
