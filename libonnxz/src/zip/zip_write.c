/*
 * zip_write.c - writing ZIP archives with aligned STORED data (spec/onnxz-zip.md).
 *
 * Layout (Z-1): entries (local header + data), central directory, [zip64 end record +
 * locator], end record. Every header is final when written: sizes are known up front,
 * DEFLATED data is compressed in memory before its header goes out, and a streamed
 * STORED entry has only its CRC patched in place at the end (Z-6). So there are no data
 * descriptors, and an archive cut short anywhere has no end record.
 *
 * Everything an entry needs in memory (its central directory slot, its name, room in the
 * name table, the header buffer) is allocated before any of its bytes are written; an I/O
 * failure therefore never leaves the in-memory list out of step with the file, and the
 * writer refuses further work after one.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "internal/nametab.h"

#include "internal/crc.h"
#include "internal/cursor.h"
#include "internal/error.h"
#include "internal/zipbuild.h"
#include "internal/atomic_url.h"
#include "internal/zipfmt.h"
#include "onnxz/zip.h"
#include "internal/onnxcore_atomic.h"

struct oz_zip_writer {
    oc_atomic_file af;
    int af_live; /* af holds an uncommitted temporary file */
    uint32_t alignment;
    int failed; /* an I/O or protocol failure happened: only free is allowed */
    int finished;
    oz__entry *e;
    uint64_t count, cap;
    uint8_t *names; /* NUL-terminated names, back to back */
    uint64_t names_len, names_cap;
    oc_nametab *tab;
    uint8_t *hdr; /* header scratch */
    size_t hdr_cap;
    uint64_t cd_size; /* central directory bytes the entries so far will need */
    /* the entry being streamed */
    int streaming;
    uint64_t s_written;
    uint32_t s_crc;
    z_stream *zs;  /* a DEFLATED one: its compressor (oz__zip_writer_begin_deflated) */
    uint8_t *zbuf; /* and the ZBUF_SIZE bytes it compresses into */
};

/* The compressed bytes a streamed DEFLATED entry holds in memory before they are written. */
#define ZBUF_SIZE (64u << 10)

static void name_of(const void *ctx, uint64_t i, const void **name, size_t *len) {
    const oz_zip_writer *w = ctx;
    *name = w->names + w->e[i].name_off;
    *len = w->e[i].name_len;
}

static int is_zip64_local(uint64_t csize, uint64_t usize) {
    return csize >= OZ_MAX32 || usize >= OZ_MAX32;
}

/* Bytes of the zip64 extra record in the central header (Z-22): only the fields that do
 * not fit, in the order uncompressed size, compressed size, local header offset. */
static uint32_t zip64_central_len(uint64_t csize, uint64_t usize, uint64_t lho) {
    uint32_t n =
        (usize >= OZ_MAX32 ? 8u : 0u) + (csize >= OZ_MAX32 ? 8u : 0u) + (lho >= OZ_MAX32 ? 8u : 0u);
    return n ? n + 4u : 0u;
}

/* ---- the records (internal/zipbuild.h) ---- */

uint16_t oz__version_needed(const oz__entry *e) {
    if (is_zip64_local(e->csize, e->usize) || e->lho >= OZ_MAX32) return OZ_VERSION_ZIP64;
    return e->method == OZ_ZIP_DEFLATED ? OZ_VERSION_DEFLATED : OZ_VERSION_STORED;
}

/* The fields local and central headers share, in the same order: version needed to
 * extract, flags, method, time, date, CRC-32. */
static uint8_t *put_shared_fields(uint8_t *p, const oz__entry *e) {
    p = oz__put16(p, oz__version_needed(e));
    p = oz__put16(p, OZ_FLAG_UTF8);
    p = oz__put16(p, e->method);
    p = oz__put16(p, OZ_DOS_TIME);
    p = oz__put16(p, OZ_DOS_DATE);
    p = oz__put32(p, e->crc);
    return p;
}

size_t oz__build_local(uint8_t *out, const oz__entry *e, const uint8_t *name, uint32_t alignment) {
    int z64 = is_zip64_local(e->csize, e->usize);
    uint64_t base = e->lho + OZ_LOCAL_SIZE + e->name_len + (z64 ? 20u : 0u);
    uint32_t pad = 0;
    if (e->method == OZ_ZIP_STORED) {
        pad = (uint32_t)((alignment - (base % alignment)) % alignment);
        if (pad != 0 && pad < OZ_EXTRA_ALIGN_MIN) pad += alignment;
    }
    uint8_t *p = out;
    p = oz__put32(p, OZ_SIG_LOCAL);
    p = put_shared_fields(p, e);
    p = oz__put32(p, z64 ? OZ_MAX32 : (uint32_t)e->csize);
    p = oz__put32(p, z64 ? OZ_MAX32 : (uint32_t)e->usize);
    p = oz__put16(p, (uint16_t)e->name_len);
    p = oz__put16(p, (uint16_t)((z64 ? 20u : 0u) + pad));
    p = oz__put_bytes(p, name, e->name_len);
    if (z64) { /* Z-21: the local zip64 record always carries both sizes */
        p = oz__put16(p, OZ_EXTRA_ZIP64);
        p = oz__put16(p, 16);
        p = oz__put64(p, e->usize);
        p = oz__put64(p, e->csize);
    }
    if (pad) { /* Z-11: id 0xD935, length, the alignment, zeros */
        p = oz__put16(p, OZ_EXTRA_ALIGN);
        p = oz__put16(p, (uint16_t)(pad - 4));
        p = oz__put16(p, (uint16_t)alignment);
        memset(p, 0, pad - OZ_EXTRA_ALIGN_MIN);
        p += pad - OZ_EXTRA_ALIGN_MIN;
    }
    return (size_t)(p - out);
}

uint64_t oz__central_len(const oz__entry *e) {
    return OZ_CENTRAL_SIZE + (uint64_t)e->name_len + zip64_central_len(e->csize, e->usize, e->lho);
}

uint8_t *oz__put_central(uint8_t *p, const oz__entry *e, const uint8_t *name) {
    uint32_t z64 = zip64_central_len(e->csize, e->usize, e->lho);
    p = oz__put32(p, OZ_SIG_CENTRAL);
    p = oz__put16(p, OZ_VERSION_MADE_BY);
    p = put_shared_fields(p, e);
    p = oz__put32(p, e->csize >= OZ_MAX32 ? OZ_MAX32 : (uint32_t)e->csize);
    p = oz__put32(p, e->usize >= OZ_MAX32 ? OZ_MAX32 : (uint32_t)e->usize);
    p = oz__put16(p, (uint16_t)e->name_len);
    p = oz__put16(p, (uint16_t)z64); /* no padding here (Z-13) */
    p = oz__put16(p, 0);             /* comment length */
    p = oz__put16(p, 0);             /* disk number start */
    p = oz__put16(p, 0);             /* internal attributes */
    p = oz__put32(p, OZ_EXTERNAL_ATTR);
    p = oz__put32(p, e->lho >= OZ_MAX32 ? OZ_MAX32 : (uint32_t)e->lho);
    p = oz__put_bytes(p, name, e->name_len);
    if (z64) { /* Z-22 */
        p = oz__put16(p, OZ_EXTRA_ZIP64);
        p = oz__put16(p, (uint16_t)(z64 - 4));
        if (e->usize >= OZ_MAX32) p = oz__put64(p, e->usize);
        if (e->csize >= OZ_MAX32) p = oz__put64(p, e->csize);
        if (e->lho >= OZ_MAX32) p = oz__put64(p, e->lho);
    }
    return p;
}

size_t oz__build_end(uint8_t *out, uint64_t n, uint64_t cd_size, uint64_t cd_off,
                     const uint8_t *comment, uint16_t comment_len) {
    uint8_t *p = out;
    /* Z-23: zip64 end records exactly when a field of the end record overflows. */
    if (n >= OZ_MAX16 || cd_size >= OZ_MAX32 || cd_off >= OZ_MAX32) {
        uint64_t z64_off = cd_off + cd_size;
        p = oz__put32(p, OZ_SIG_ZIP64_EOCD);
        p = oz__put64(p, OZ_ZIP64_EOCD_SIZE - 12); /* size of the rest of the record */
        p = oz__put16(p, OZ_VERSION_MADE_BY);
        p = oz__put16(p, OZ_VERSION_ZIP64);
        p = oz__put32(p, 0); /* this disk */
        p = oz__put32(p, 0); /* disk with the central directory */
        p = oz__put64(p, n);
        p = oz__put64(p, n);
        p = oz__put64(p, cd_size);
        p = oz__put64(p, cd_off);
        p = oz__put32(p, OZ_SIG_ZIP64_LOCATOR);
        p = oz__put32(p, 0); /* disk with the zip64 end record */
        p = oz__put64(p, z64_off);
        p = oz__put32(p, 1); /* total disks */
    }
    uint16_t n16 = n >= OZ_MAX16 ? (uint16_t)OZ_MAX16 : (uint16_t)n;
    p = oz__put32(p, OZ_SIG_EOCD);
    p = oz__put16(p, 0);
    p = oz__put16(p, 0);
    p = oz__put16(p, n16);
    p = oz__put16(p, n16);
    p = oz__put32(p, cd_size >= OZ_MAX32 ? OZ_MAX32 : (uint32_t)cd_size);
    p = oz__put32(p, cd_off >= OZ_MAX32 ? OZ_MAX32 : (uint32_t)cd_off);
    p = oz__put16(p, comment_len);
    p = oz__put_bytes(p, comment, comment_len);
    return (size_t)(p - out);
}

/* ---- opening and state ---- */

oc_status oz_zip_writer_open(const char *path, uint32_t alignment, int no_overwrite,
                             oz_zip_writer **out, oc_error *err) {
    return oz__zip_writer_open_url(path, alignment, no_overwrite, NULL, out, err);
}

oc_status oz__zip_writer_open_url(const char *path, uint32_t alignment, int no_overwrite,
                                  const struct oc_http_options *http, oz_zip_writer **out,
                                  oc_error *err) {
    OC_RETURN_ERROR_IF(!out, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no output pointer");
    *out = NULL;
    OC_RETURN_ERROR_IF(!path || !*path, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no path");
    if (alignment == 0) alignment = OZ_ZIP_DEFAULT_ALIGNMENT;
    OC_RETURN_RULE_IF(alignment < OZ_ZIP_MIN_ALIGNMENT || alignment > OZ_ZIP_MAX_ALIGNMENT ||
                          (alignment & (alignment - 1)) != 0,
                      err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "Z-10",
                      "alignment %u is not a power of two from %u to %u", alignment,
                      OZ_ZIP_MIN_ALIGNMENT, OZ_ZIP_MAX_ALIGNMENT);
    oz_zip_writer *w = calloc(1, sizeof *w);
    OC_RETURN_ERROR_IF(!w, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    w->alignment = alignment;
    w->af.fd = -1;
    if (!(w->tab = oc_nametab_new(16, name_of, w))) {
        free(w);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    /* Streamed entries get their CRC patched in (oz_zip_writer_end): a pipe written
     * through (S-41) cannot take that, so it is refused before a byte goes out. */
    oc_status st = oc_atomic_open_url(&w->af, path, no_overwrite, OC_ATOMIC_SEEKABLE, http, err);
    if (st != OC_OK) {
        oc_nametab_free(w->tab);
        free(w);
        return st;
    }
    w->af_live = 1;
    *out = w;
    return OC_OK;
}

/* Ends the compressor of a streamed DEFLATED entry, if any. */
static void deflate_free(oz_zip_writer *w) {
    if (w->zs) deflateEnd(w->zs);
    free(w->zs);
    free(w->zbuf);
    w->zs = NULL;
    w->zbuf = NULL;
}

void oz_zip_writer_free(oz_zip_writer *w) {
    if (!w) return;
    deflate_free(w);
    if (w->af_live) oc_atomic_abort(&w->af);
    oc_nametab_free(w->tab);
    free(w->e);
    free(w->names);
    free(w->hdr);
    free(w);
}

uint64_t oz_zip_writer_count(const oz_zip_writer *w) { return w ? w->count : 0; }

uint32_t oz_zip_writer_alignment(const oz_zip_writer *w) { return w ? w->alignment : 0; }

oc_status oz_zip_writer_entry(const oz_zip_writer *w, uint64_t index, oz_zip_entry *out,
                              oc_error *err) {
    OC_RETURN_ERROR_IF(!w || !out, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no writer or output");
    OC_RETURN_ERROR_IF(index >= w->count, err, OC_ERR_NOT_FOUND, OC_NO_OFFSET,
                       "no entry %llu (the writer has %llu)", (unsigned long long)index,
                       (unsigned long long)w->count);
    const oz__entry *e = &w->e[index];
    oz__entry_view(e, w->names, out);
    return OC_OK;
}

static oc_status usable(const oz_zip_writer *w, oc_error *err) {
    OC_RETURN_ERROR_IF(!w, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no writer");
    OC_RETURN_ERROR_IF(w->failed, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "the archive writer failed earlier; nothing more can be written");
    OC_RETURN_ERROR_IF(w->finished, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "the archive is already finished");
    return OC_OK;
}

/* Marks the writer failed and forwards the status of whatever failed. */
static oc_status poison(oz_zip_writer *w, oc_status st) {
    w->failed = 1;
    return st;
}

static oc_status grow(void **buf, uint64_t *cap, uint64_t need, size_t elem) {
    if (need <= *cap) return OC_OK;
    uint64_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    if (n > SIZE_MAX / elem) return OC_ERR_NOMEM;
    void *p = realloc(*buf, (size_t)(n * elem));
    if (!p) return OC_ERR_NOMEM;
    *buf = p;
    *cap = n;
    return OC_OK;
}

/* Checks the state and the name, and reserves everything one more entry needs. On
 * success *len and *hash describe the name. Writes nothing. */
static oc_status prepare(oz_zip_writer *w, const char *name, size_t *len, uint64_t *hash,
                         oc_error *err) {
    OC_FORWARD(usable(w, err));
    OC_RETURN_ERROR_IF(w->streaming, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "an entry is being streamed: end it first");
    OC_RETURN_ERROR_IF(!name, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no entry name");
    size_t n = strlen(name);
    char q[OC_QUOTE_SIZE];
    const uint8_t *un = (const uint8_t *)name;
    OC_RETURN_RULE_IF(n > OZ_ZIP_DEFAULT_MAX_NAME_LEN, err, OC_ERR_LIMIT, OC_NO_OFFSET, "Z-30",
                      "entry name '%s' is %zu bytes, more than %u",
                      oc_quote(un, n, q, OC_QUOTE_SIZE), n, OZ_ZIP_DEFAULT_MAX_NAME_LEN);
    oz__name_fault f = oz__name_check(un, n, 0);
    OC_RETURN_ERROR_IF(f != OZ_NAME_OK, err,
                       oz__name_fault_unsafe(f) ? OC_ERR_UNSAFE_PATH : OC_ERR_INVALID_ARG,
                       OC_NO_OFFSET, "entry name '%s' %s (%s)", oc_quote(un, n, q, OC_QUOTE_SIZE),
                       oz__name_fault_text(f), oz__name_fault_rule(f));
    OC_RETURN_RULE_IF(w->count >= OZ_ZIP_DEFAULT_MAX_ENTRIES, err, OC_ERR_LIMIT, OC_NO_OFFSET,
                      "Z-66", "more than %u entries", OZ_ZIP_DEFAULT_MAX_ENTRIES);
    uint64_t h = oc_nametab_hash(un, n);
    OC_RETURN_RULE_IF(oc_nametab_find(w->tab, un, n, h) >= 0, err, OC_ERR_EXISTS, OC_NO_OFFSET,
                      "Z-35", "entry name '%s' is already in the archive",
                      oc_quote(un, n, q, OC_QUOTE_SIZE));
    if (grow((void **)&w->e, &w->cap, w->count + 1, sizeof *w->e) != OC_OK ||
        grow((void **)&w->names, &w->names_cap, w->names_len + n + 1, 1) != OC_OK ||
        oc_nametab_reserve(w->tab) != OC_OK)
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    /* The header scratch: fixed part, name, zip64 record, padding of up to alignment + 5. */
    size_t need = OZ_LOCAL_SIZE + n + 20 + w->alignment + OZ_EXTRA_ALIGN_MIN;
    if (need > w->hdr_cap) {
        uint8_t *p = realloc(w->hdr, need);
        if (!p) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        w->hdr = p;
        w->hdr_cap = need;
    }
    *len = n;
    *hash = h;
    return OC_OK;
}

/* Builds the local header of an entry at the current end of the file into w->hdr (Z-4,
 * Z-5, Z-11, Z-12, Z-21) and fills the entry's offsets. Checks that the central directory
 * stays within the default read limit. */
static oc_status build_local(oz_zip_writer *w, oz__entry *e, const char *name, size_t *hdr_len,
                             oc_error *err) {
    e->lho = w->af.written;
    OC_RETURN_RULE_IF(w->cd_size + oz__central_len(e) > OZ_ZIP_DEFAULT_MAX_CENTRAL_DIR, err,
                      OC_ERR_LIMIT, OC_NO_OFFSET, "Z-66",
                      "the central directory would exceed %llu bytes",
                      (unsigned long long)OZ_ZIP_DEFAULT_MAX_CENTRAL_DIR);
    *hdr_len = oz__build_local(w->hdr, e, (const uint8_t *)name, w->alignment);
    e->data_off = e->lho + *hdr_len;
    return OC_OK;
}

/* Records entry e (already written, or being streamed) as the next one. */
static void commit_entry(oz_zip_writer *w, const oz__entry *e, const char *name, uint64_t hash) {
    oz__entry *d = &w->e[w->count];
    *d = *e;
    d->name_off = w->names_len;
    memcpy(w->names + w->names_len, name, e->name_len + 1u);
    w->names_len += e->name_len + 1u;
    d->flags = OZ_FLAG_UTF8; /* what the headers say (oz__build_local, oz__put_central) */
    oc_nametab_insert(w->tab, w->count, hash);
    w->cd_size += oz__central_len(e);
    w->count++;
}

/* Writes header and data of a complete entry, then records it. */
static oc_status emit(oz_zip_writer *w, oz__entry *e, const char *name, uint64_t hash,
                      const void *data, oc_error *err) {
    size_t hlen = 0;
    OC_FORWARD(build_local(w, e, name, &hlen, err));
    oc_status st = oc_atomic_write(&w->af, w->hdr, hlen, err);
    if (st == OC_OK && e->csize) st = oc_atomic_write(&w->af, data, e->csize, err);
    if (st != OC_OK) return poison(w, st);
    commit_entry(w, e, name, hash);
    return OC_OK;
}

/* ---- entries ---- */

void oz__zip_writer_set_save(oz_zip_writer *w, oc_progress *progress, int no_sync) {
    w->af.progress = progress;
    w->af.no_sync = no_sync;
}

oc_status oz_zip_writer_add(oz_zip_writer *w, const char *name, const void *data, uint64_t size,
                            uint64_t *data_offset, oc_error *err) {
    size_t n;
    uint64_t hash;
    OC_FORWARD(prepare(w, name, &n, &hash, err));
    OC_RETURN_ERROR_IF(!data && size, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "no data for a %llu-byte entry", (unsigned long long)size);
    oz__entry e = {0};
    e.name_len = (uint32_t)n;
    e.method = OZ_ZIP_STORED;
    e.crc = oz__crc32(0, data, size);
    e.csize = e.usize = size;
    OC_FORWARD(emit(w, &e, name, hash, data, err));
    if (data_offset) *data_offset = e.data_off;
    return OC_OK;
}

oc_status oz__deflate(const uint8_t *src, uint64_t n, int level, uint8_t **out, uint64_t *out_n,
                      oc_error *err) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    int rc = deflateInit2(&zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
    OC_RETURN_ERROR_IF(rc == Z_MEM_ERROR, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    OC_RETURN_ERROR_IF(rc != Z_OK, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "zlib refused compression level %d", level);
    uint64_t cap = (uint64_t)deflateBound(&zs, (uLong)n);
    uint8_t *buf = cap <= SIZE_MAX ? malloc((size_t)cap) : NULL;
    if (!buf) {
        deflateEnd(&zs);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    const uint64_t step = 1u << 30;
    uint64_t in_done = 0, out_done = 0;
    for (;;) {
        uint64_t in_left = n - in_done, out_left = cap - out_done;
        uInt ain = (uInt)(in_left < step ? in_left : step);
        uInt aout = (uInt)(out_left < step ? out_left : step);
        zs.next_in = (Bytef *)(uintptr_t)(src ? src + in_done : NULL);
        zs.avail_in = ain;
        zs.next_out = buf + out_done;
        zs.avail_out = aout;
        rc = deflate(&zs, in_left == ain ? Z_FINISH : Z_NO_FLUSH);
        in_done += ain - zs.avail_in;
        out_done += aout - zs.avail_out;
        if (rc == Z_STREAM_END) break;
        if ((rc != Z_OK && rc != Z_BUF_ERROR) || (ain == zs.avail_in && aout == zs.avail_out)) {
            deflateEnd(&zs);
            free(buf);
            return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "deflate failed (zlib code %d)", rc);
        }
    }
    deflateEnd(&zs);
    *out = buf;
    *out_n = out_done;
    return OC_OK;
}

oc_status oz_zip_writer_add_deflated(oz_zip_writer *w, const char *name, const void *data,
                                     uint64_t size, int level, oc_error *err) {
    size_t n;
    uint64_t hash;
    OC_FORWARD(prepare(w, name, &n, &hash, err));
    OC_RETURN_ERROR_IF(!data && size, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "no data for a %llu-byte entry", (unsigned long long)size);
    OC_RETURN_ERROR_IF(level < -1 || level > 9, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "compression level %d is not -1..9", level);
    OC_RETURN_RULE_IF(size > OZ_ZIP_DEFAULT_MAX_INFLATED, err, OC_ERR_LIMIT, OC_NO_OFFSET, "Z-66",
                      "a DEFLATED entry of %llu bytes is over the %llu-byte read limit",
                      (unsigned long long)size, (unsigned long long)OZ_ZIP_DEFAULT_MAX_INFLATED);
    uint8_t *packed = NULL;
    uint64_t packed_n = 0;
    OC_FORWARD(oz__deflate(data, size, level, &packed, &packed_n, err));
    oz__entry e = {0};
    e.name_len = (uint32_t)n;
    e.method = OZ_ZIP_DEFLATED;
    e.crc = oz__crc32(0, data, size);
    e.csize = packed_n;
    e.usize = size;
    oc_status st = emit(w, &e, name, hash, packed, err);
    free(packed);
    return st;
}

/* The local header of a streamed entry of `size` bytes, csize of them in the file. */
static oc_status begin_entry(oz_zip_writer *w, const char *name, uint16_t method, uint64_t size,
                             uint64_t csize, uint64_t *data_offset, oc_error *err) {
    size_t n;
    uint64_t hash;
    OC_FORWARD(prepare(w, name, &n, &hash, err));
    oz__entry e = {0};
    e.name_len = (uint32_t)n;
    e.method = method;
    e.crc = 0; /* patched by end */
    e.csize = csize;
    e.usize = size;
    size_t hlen = 0;
    OC_FORWARD(build_local(w, &e, name, &hlen, err));
    /* end patches the CRC (and the compressed size): an upload keeps that part back */
    oc_atomic_hold(&w->af, w->af.written + OZ_LOCAL_CRC_AT, 8);
    oc_status st = oc_atomic_write(&w->af, w->hdr, hlen, err);
    if (st != OC_OK) return poison(w, st);
    commit_entry(w, &e, name, hash);
    w->streaming = 1;
    w->s_written = 0;
    w->s_crc = 0;
    if (data_offset) *data_offset = e.data_off;
    return OC_OK;
}

oc_status oz_zip_writer_begin(oz_zip_writer *w, const char *name, uint64_t size,
                              uint64_t *data_offset, oc_error *err) {
    return begin_entry(w, name, OZ_ZIP_STORED, size, size, data_offset, err);
}

/* The header's compressed size is a placeholder patched by end; it is zlib's bound, so
 * that the header's layout (zip64 or not, Z-21) is decided before the first byte. */
oc_status oz__zip_writer_begin_deflated(oz_zip_writer *w, const char *name, uint64_t size,
                                        oc_error *err) {
    OC_FORWARD(usable(w, err));
    OC_RETURN_ERROR_IF(w->streaming, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "an entry is being streamed");
    w->zs = calloc(1, sizeof *w->zs);
    w->zbuf = malloc(ZBUF_SIZE);
    if (!w->zs || !w->zbuf ||
        deflateInit2(w->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) !=
            Z_OK) {
        free(w->zs);
        w->zs = NULL;
        deflate_free(w);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    uint64_t bound = size <= OZ_ZIP_DEFAULT_MAX_INFLATED ? deflateBound(w->zs, (uLong)size) : 0;
    oc_status st =
        size > OZ_ZIP_DEFAULT_MAX_INFLATED || is_zip64_local(bound, size)
            ? oc__fail_rule(err, OC_ERR_LIMIT, OC_NO_OFFSET, "Z-66",
                            "a streamed DEFLATED entry of %llu bytes is over the %llu-byte limit",
                            (unsigned long long)size, (unsigned long long)OZ_MAX32 - 1)
            : begin_entry(w, name, OZ_ZIP_DEFLATED, size, bound, NULL, err);
    if (st != OC_OK) deflate_free(w);
    return st;
}

/* Compresses data (flush: the last of it) and appends what comes out. */
static oc_status deflate_out(oz_zip_writer *w, const void *data, uint64_t size, int flush,
                             oc_error *err) {
    z_stream *zs = w->zs;
    const uint8_t *in = data;
    for (;;) {
        uInt step = size < (1u << 30) ? (uInt)size : (1u << 30);
        zs->next_in = (Bytef *)(uintptr_t)in;
        zs->avail_in = step;
        zs->next_out = w->zbuf;
        zs->avail_out = ZBUF_SIZE;
        int last = flush && step == size;
        int rc = deflate(zs, last ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_STREAM_ERROR)
            return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "deflate failed (zlib code %d)", rc);
        uInt used = step - zs->avail_in;
        if (used) in += used; /* the final flush passes NULL, to which no offset applies */
        size -= used;
        if (zs->avail_out < ZBUF_SIZE)
            OC_FORWARD(oc_atomic_write(&w->af, w->zbuf, ZBUF_SIZE - zs->avail_out, err));
        if (last ? rc == Z_STREAM_END : size == 0 && zs->avail_out > 0) return OC_OK;
    }
}

oc_status oz_zip_writer_write(oz_zip_writer *w, const void *data, uint64_t size, oc_error *err) {
    OC_FORWARD(usable(w, err));
    OC_RETURN_ERROR_IF(!w->streaming, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "no entry is being streamed");
    OC_RETURN_ERROR_IF(!data && size, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "no data");
    const oz__entry *e = &w->e[w->count - 1];
    char q[OC_QUOTE_SIZE];
    if (size > e->usize - w->s_written)
        return poison(w, oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                  "entry '%s' was declared as %llu bytes; writing %llu more "
                                  "after %llu overruns it",
                                  oc_quote(w->names + e->name_off, e->name_len, q, sizeof q),
                                  (unsigned long long)e->usize, (unsigned long long)size,
                                  (unsigned long long)w->s_written));
    oc_status st =
        w->zs ? deflate_out(w, data, size, 0, err) : oc_atomic_write(&w->af, data, size, err);
    if (st != OC_OK) return poison(w, st);
    w->s_crc = oz__crc32(w->s_crc, data, size);
    w->s_written += size;
    return OC_OK;
}

oc_status oz_zip_writer_end(oz_zip_writer *w, oc_error *err) {
    OC_FORWARD(usable(w, err));
    OC_RETURN_ERROR_IF(!w->streaming, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                       "no entry is being streamed");
    oz__entry *e = &w->e[w->count - 1];
    char q[OC_QUOTE_SIZE];
    if (w->s_written != e->usize)
        return poison(w, oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                  "entry '%s' was declared as %llu bytes but %llu were written",
                                  oc_quote(w->names + e->name_off, e->name_len, q, sizeof q),
                                  (unsigned long long)e->usize, (unsigned long long)w->s_written));
    /* CRC-32, then for a DEFLATED entry its compressed size: the next field (Z-4) */
    uint8_t fields[8];
    size_t nfields = 4;
    oz__put32(fields, w->s_crc);
    oc_status st = OC_OK;
    if (w->zs) {
        st = deflate_out(w, NULL, 0, 1, err);
        e->csize = w->af.written - e->data_off;
        oz__put32(fields + 4, (uint32_t)e->csize);
        nfields = 8;
        deflate_free(w);
    }
    if (st == OC_OK) st = oc_atomic_pwrite(&w->af, fields, nfields, e->lho + OZ_LOCAL_CRC_AT, err);
    if (st != OC_OK) return poison(w, st);
    e->crc = w->s_crc;
    w->streaming = 0;
    return OC_OK;
}

/* ---- the central directory and end records ---- */

typedef struct outbuf {
    oz_zip_writer *w;
    uint8_t *buf;
    size_t len, cap;
} outbuf;

static oc_status ob_flush(outbuf *ob, oc_error *err) {
    oc_status st = ob->len ? oc_atomic_write(&ob->w->af, ob->buf, ob->len, err) : OC_OK;
    ob->len = 0;
    return st;
}

/* A pointer to room for n more bytes (n <= cap), flushing first when needed. */
static oc_status ob_room(outbuf *ob, size_t n, uint8_t **p, oc_error *err) {
    if (ob->cap - ob->len < n) OC_FORWARD(ob_flush(ob, err));
    *p = ob->buf + ob->len;
    ob->len += n;
    return OC_OK;
}

static oc_status write_central(oz_zip_writer *w, outbuf *ob, const oz__entry *e, oc_error *err) {
    uint8_t *p;
    OC_FORWARD(ob_room(ob, (size_t)oz__central_len(e), &p, err));
    oz__put_central(p, e, w->names + e->name_off);
    return OC_OK;
}

static oc_status write_tail(oz_zip_writer *w, outbuf *ob, oc_error *err) {
    uint64_t cd_off = w->af.written;
    for (uint64_t i = 0; i < w->count; i++) OC_FORWARD(write_central(w, ob, &w->e[i], err));
    OC_FORWARD(ob_flush(ob, err));
    uint64_t cd_size = w->af.written - cd_off;
    uint8_t *p;
    OC_FORWARD(ob_room(ob, OZ_END_MAX, &p, err));
    ob->len -= OZ_END_MAX - oz__build_end(p, w->count, cd_size, cd_off, NULL, 0);
    return ob_flush(ob, err);
}

oc_status oz_zip_writer_finish(oz_zip_writer *w, oc_error *err) {
    OC_FORWARD(usable(w, err));
    char q[OC_QUOTE_SIZE];
    OC_RETURN_ERROR_IF(
        w->streaming, err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "entry '%s' is still being streamed",
        oc_quote(w->names + w->e[w->count - 1].name_off, w->e[w->count - 1].name_len, q, sizeof q));
    outbuf ob = {w, NULL, 0, (size_t)1 << 18};
    /* Every central record fits: 46 + a name of at most 4,096 bytes + 28. */
    ob.buf = malloc(ob.cap);
    OC_RETURN_ERROR_IF(!ob.buf, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_status st = write_tail(w, &ob, err);
    free(ob.buf);
    if (st != OC_OK) return poison(w, st);
    w->af_live = 0; /* commit consumes the temporary file, success or not */
    st = oc_atomic_commit(&w->af, err);
    if (st != OC_OK) return poison(w, st);
    w->finished = 1;
    return OC_OK;
}
