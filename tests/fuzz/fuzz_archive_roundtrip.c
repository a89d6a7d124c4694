/*
 * tests/fuzz/fuzz_archive_roundtrip.c - a decoded ModelProto saved as an .onnxz archive and
 * loaded back (libonnxz's writer, then its reader).
 *
 * Byte 0 picks the options, the rest is the model:
 *   bits 0-2  alignment: 0 (64) 64 128 256 4096 32768, or 32 and 65536, which saving must
 *             refuse (`invalid argument`) leaving no file behind
 *   bits 3-4  raw_data_threshold: 0 1 64 1000
 *   bit 5     deflate_model
 *   bit 6     load with no_copy (raw_data_threshold 0: every payload in place)
 *   bit 7     load through oz_archive_open with use_pread + oz_archive_load_model, else
 *             oz_archive_load (mapped)
 * A model that does not decode is only checked for its error record (fuzz_decode_model does
 * the rest). Tensors of the model that are EXTERNAL already are made ordinary first
 * (data_location 0): the archive has no entries they could name. Then, in a per-process
 * scratch directory (fuzz_scratch_dir), oz_archive_save_message writes the archive, and:
 *  - the source model encodes as before (saving does not modify it);
 *  - the archive is exactly what spec/onnxz.md and spec/onnxz-zip.md say, checked on our
 *    own from its bytes: one STORED entry per tensor whose raw_data has at least the
 *    threshold's bytes, in the order oc_msg_visit_tensors meets them, named by our own
 *    A-10 derivation, holding exactly its bytes; then __MODEL_PROTO, last in the
 *    file and in the central directory, STORED or DEFLATED as asked, holding the
 *    source model with each of those tensors replaced by its reference (A-20: no
 *    raw_data, data_location EXTERNAL, the external_data keys of E-3, then `location`
 *    and `length`); no gaps, the central directory right after the last entry and the end
 *    record right after it, no zip64, no comment (Z-1); every STORED entry's data on a
 *    multiple of the alignment, padded by a 0xD935 record of exactly the size of Z-12
 *    (Z-10, Z-11, A-4); the local and central header fields of Z-4, Z-13, Z-40..Z-42; our
 *    own CRC-32 of each entry; verify_all and check_paths accept it;
 *  - the archive loads: the model encodes exactly as the source with each moved tensor
 *    back in its source form, without data_location and the external_data keys of E-1
 *    (A-22, E-16); with no_copy from a mapping each moved tensor's bytes are aligned in
 *    memory to the alignment (at most a page: the mapping's own); a load with
 *    skip_external_data gives __MODEL_PROTO's model; oz_archive_read_tensor gives a moved
 *    tensor's bytes; oz_archive_get_space finds no unused byte.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <onnxz/archive.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint64_t alignments[8] = {0, 64, 128, 256, 4096, 32768, 32, 65536};
static const uint64_t thresholds[4] = {0, 1, 64, 1000};
#define NAME_MAX_BASE 120u

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- A-10, our own: entry names from tensor names ---- */

typedef struct name_set { /* lower-cased names taken, open addressing */
    char **slot;
    uint64_t cap, count;
} name_set;

static uint64_t hash_name(const char *s) { return fuzz_hash((const uint8_t *)s, strlen(s)); }

static int name_taken_add(name_set *s, const char *name) { /* 1: added; 0: taken */
    if ((s->count + 1) * 2 > s->cap) {
        name_set g = {calloc(s->cap ? s->cap * 2 : 64, sizeof(char *)), s->cap ? s->cap * 2 : 64,
                      0};
        FUZZ_CHECK(g.slot != NULL, "out of memory");
        for (uint64_t i = 0; i < s->cap; i++) {
            if (!s->slot[i]) continue;
            uint64_t j = hash_name(s->slot[i]) & (g.cap - 1);
            while (g.slot[j]) j = (j + 1) & (g.cap - 1);
            g.slot[j] = s->slot[i];
            g.count++;
        }
        free(s->slot);
        *s = g;
    }
    char low[NAME_MAX_BASE + 32];
    size_t n = strlen(name);
    for (size_t i = 0; i <= n; i++)
        low[i] = name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] + 32) : name[i];
    uint64_t j = hash_name(low) & (s->cap - 1);
    for (; s->slot[j]; j = (j + 1) & (s->cap - 1))
        if (strcmp(s->slot[j], low) == 0) return 0;
    s->slot[j] = strdup(low);
    FUZZ_CHECK(s->slot[j] != NULL, "out of memory");
    s->count++;
    return 1;
}

static void name_set_free(name_set *s) {
    for (uint64_t i = 0; i < s->cap; i++) free(s->slot[i]);
    free(s->slot);
}

/* Every byte outside [A-Za-z0-9_] becomes '_'; a 't' in front of what would start with a
 * digit or "__"; "tensor" for an empty name; cut to 120 bytes; then _2, _3, ... until no
 * earlier name is the same ignoring ASCII case. */
static void entry_name(name_set *taken, const oc_str *t, char out[NAME_MAX_BASE + 32]) {
    char mapped[NAME_MAX_BASE + 2];
    size_t n = 0;
    for (uint64_t i = 0; i < t->size && n <= NAME_MAX_BASE; i++) {
        unsigned char c = (unsigned char)t->data[i];
        int keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        mapped[n++] = keep ? (char)c : '_';
    }
    mapped[n] = '\0';
    char base[NAME_MAX_BASE + 4];
    if (t->size == 0)
        snprintf(base, sizeof base, "tensor");
    else if ((mapped[0] >= '0' && mapped[0] <= '9') || (mapped[0] == '_' && mapped[1] == '_'))
        snprintf(base, sizeof base, "t%s", mapped);
    else
        snprintf(base, sizeof base, "%s", mapped);
    base[NAME_MAX_BASE] = '\0';
    for (unsigned long long k = 1;; k++) {
        if (k == 1)
            snprintf(out, NAME_MAX_BASE + 32, "%s", base);
        else
            snprintf(out, NAME_MAX_BASE + 32, "%s_%llu", base, k);
        if (name_taken_add(taken, out)) return;
    }
}

/* ---- the prediction ---- */

typedef struct moved {
    char name[NAME_MAX_BASE + 32];
    const oc_bytes *bytes; /* the source tensor's */
    const onnx_TensorProto *tensor;
} moved;

typedef struct plan {
    uint64_t threshold;
    name_set taken;
    moved *m; /* the tensors that become entries, in order */
    uint64_t nm, capm;
    uint8_t *flags; /* per tensor in walk order: 1 when it moves */
    uint64_t nt, capt;
    uint64_t at;     /* walk position, for the passes over copies */
    uint64_t k;      /* moved tensors met so far in such a pass */
    oc_arena *arena; /* of the copy being rewritten */
    int unique;      /* pass 3: only tensors named by nobody earlier */
} plan;

static void push_flag(plan *p, uint8_t f) {
    if (p->nt == p->capt) {
        p->capt = p->capt ? p->capt * 2 : 64;
        p->flags = realloc(p->flags, (size_t)p->capt);
        FUZZ_CHECK(p->flags != NULL, "out of memory");
    }
    p->flags[p->nt++] = f;
}

static oc_status neutralize(void *ctx, onnx_TensorProto *t) {
    (void)ctx;
    if (OC_HAS(TensorProto, t, data_location) && t->data_location == 1) t->data_location = 0;
    return OC_OK;
}

static int moves(const plan *p, const onnx_TensorProto *t) { /* */
    return OC_HAS(TensorProto, t, raw_data) && t->raw_data.size >= p->threshold &&
           t->raw_data.size > 0 &&
           !(OC_HAS(TensorProto, t, data_location) && t->data_location == 1);
}

static oc_status plan_tensor(void *ctx, onnx_TensorProto *t) {
    plan *p = ctx;
    int mv = moves(p, t);
    push_flag(p, (uint8_t)mv);
    if (!mv) return OC_OK;
    if (p->nm == p->capm) {
        p->capm = p->capm ? p->capm * 2 : 16;
        p->m = realloc(p->m, (size_t)p->capm * sizeof *p->m);
        FUZZ_CHECK(p->m != NULL, "out of memory");
    }
    moved *m = &p->m[p->nm++];
    entry_name(&p->taken, &t->name, m->name);
    m->bytes = &t->raw_data;
    m->tensor = t;
    return OC_OK;
}

/* The model a load gives back: moved tensors without data_location and E-1's keys. */
static oc_status as_loaded(void *ctx, onnx_TensorProto *t) {
    plan *p = ctx;
    FUZZ_CHECK(p->at < p->nt, "the copy has more tensors than the source");
    if (!p->flags[p->at++]) return OC_OK;
    t->data_location = 0;
    OC_CLEAR_HAS(TensorProto, t, data_location);
    fuzz_drop_external_keys(t);
    return OC_OK;
}

static void add_key(oc_arena *a, onnx_TensorProto *t, const char *k, const char *v) {
    onnx_StringStringEntryProto *e = OC_ADD(a, StringStringEntryProto, t->external_data);
    FUZZ_CHECK(e && !oc_str_set_cstr(a, &e->key, k) && !oc_str_set_cstr(a, &e->value, v),
               "out of memory");
    OC_SET_HAS(StringStringEntryProto, e, key);
    OC_SET_HAS(StringStringEntryProto, e, value);
}

/* The model __MODEL_PROTO holds: moved tensors as references (A-20, E-20). */
static oc_status as_referenced(void *ctx, onnx_TensorProto *t) {
    plan *p = ctx;
    FUZZ_CHECK(p->at < p->nt, "the copy has more tensors than the source");
    if (!p->flags[p->at++]) return OC_OK;
    uint64_t k = p->k++; /* which moved tensor this is */
    char len[24];
    snprintf(len, sizeof len, "%llu", (unsigned long long)t->raw_data.size);
    oc_bytes_release(&t->raw_data);
    OC_CLEAR_HAS(TensorProto, t, raw_data);
    t->data_location = 1;
    OC_SET_HAS(TensorProto, t, data_location);
    fuzz_drop_external_keys(t);
    add_key(p->arena, t, "location", p->m[k].name);
    add_key(p->arena, t, "length", len);
    return OC_OK;
}

/* ---- checking the archive's bytes ---- */

typedef struct file {
    uint8_t *data;
    uint64_t size;
} file;

static file slurp(const char *path) {
    file f = {NULL, 0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    FUZZ_CHECK(fd >= 0, "cannot open %s", path);
    struct stat st;
    FUZZ_CHECK(fstat(fd, &st) == 0, "cannot stat %s", path);
    f.size = (uint64_t)st.st_size;
    f.data = malloc(f.size ? (size_t)f.size : 1);
    FUZZ_CHECK(f.data != NULL, "out of memory");
    for (uint64_t done = 0; done < f.size;) {
        ssize_t r = read(fd, f.data + done, (size_t)(f.size - done));
        FUZZ_CHECK(r > 0, "cannot read %s", path);
        done += (uint64_t)r;
    }
    close(fd);
    return f;
}

/* Z-4, Z-5, Z-11, Z-12, Z-40..Z-42: the local header of entry e. */
static void check_local(const file *f, const oz_zip_entry *e, uint32_t align) {
    const uint8_t *p = f->data + e->local_header_offset;
    uint64_t h = e->local_header_offset;
    int stored = e->method == 0;
    FUZZ_CHECK(le32(p) == 0x04034b50u && le16(p + 4) == (stored ? 10 : 20) &&
                   le16(p + 6) == 0x0800 && le16(p + 8) == e->method && le16(p + 10) == 0 &&
                   le16(p + 12) == 0x0021 && le32(p + 14) == e->crc32 &&
                   le32(p + 18) == e->compressed_size && le32(p + 22) == e->uncompressed_size &&
                   le16(p + 26) == e->name_len,
               "local header of '%s' is not as Z-4 says", e->name);
    uint16_t xlen = le16(p + 28);
    const uint8_t *x = p + 30 + e->name_len;
    uint64_t pad = 0;
    if (stored) {
        pad = (align - (h + 30 + e->name_len) % align) % align;
        if (pad && pad < 6) pad += align;
    }
    FUZZ_CHECK(xlen == pad, "local extra field of '%s' at %llu: %u bytes, Z-12 says %llu", e->name,
               (unsigned long long)h, xlen, (unsigned long long)pad);
    if (pad) {
        FUZZ_CHECK(le16(x) == 0xD935 && le16(x + 2) == pad - 4 && le16(x + 4) == (uint16_t)align,
                   "padding record of '%s' is not Z-11's", e->name);
        for (uint64_t i = 6; i < pad; i++)
            FUZZ_CHECK(x[i] == 0, "padding of '%s' is not zeros", e->name);
    }
    FUZZ_CHECK(e->data_offset == h + 30 + e->name_len + xlen, "data of '%s' not after its header",
               e->name);
    FUZZ_CHECK(!stored || e->data_offset % align == 0, "STORED '%s' at %llu, alignment %u", e->name,
               (unsigned long long)e->data_offset, align);
}

/* Z-13, Z-41 and the end record (Z-1, Z-24): the central directory as written. */
static void check_central(const file *f, const oz_zip_reader *r) {
    uint64_t cd_off, cd_size, n = oz_zip_reader_count(r);
    oz_zip_reader_central_dir(r, &cd_off, &cd_size);
    const uint8_t *p = f->data + cd_off;
    for (uint64_t i = 0; i < n; i++) {
        oz_zip_entry e;
        oz_zip_reader_entry(r, i, &e, NULL);
        FUZZ_CHECK(le32(p) == 0x02014b50u && le16(p + 4) == 0x033F &&
                       le16(p + 6) == (e.method == 0 ? 10 : 20) && le16(p + 8) == 0x0800 &&
                       le16(p + 10) == e.method && le16(p + 12) == 0 && le16(p + 14) == 0x0021 &&
                       le32(p + 16) == e.crc32 && le32(p + 20) == e.compressed_size &&
                       le32(p + 24) == e.uncompressed_size && le16(p + 28) == e.name_len &&
                       le16(p + 30) == 0 && le16(p + 32) == 0 && le16(p + 34) == 0 &&
                       le16(p + 36) == 0 && le32(p + 38) == 0x81A40000u &&
                       le32(p + 42) == e.local_header_offset &&
                       memcmp(p + 46, e.name, e.name_len) == 0,
                   "central header %llu ('%s') is not as Z-4, Z-13 and Z-41 say",
                   (unsigned long long)i, e.name);
        p += 46 + e.name_len;
    }
    FUZZ_CHECK(p == f->data + cd_off + cd_size, "central directory size");
    FUZZ_CHECK(f->size == cd_off + cd_size + 22 && le32(p) == 0x06054b50u && le16(p + 4) == 0 &&
                   le16(p + 6) == 0 && le16(p + 8) == n && le16(p + 10) == n &&
                   le32(p + 12) == cd_size && le32(p + 16) == cd_off && le16(p + 20) == 0,
               "the end record is not the last 22 bytes as Z-1 says");
}

/* ---- loading ---- */

typedef struct align_check {
    const plan *p;
    uint64_t at, align;
} align_check;

static oc_status check_in_place(void *ctx, onnx_TensorProto *t) {
    align_check *c = ctx;
    FUZZ_CHECK(c->at < c->p->nt, "the loaded model has more tensors than the source");
    if (!c->p->flags[c->at++] || !t->raw_data.size) return OC_OK;
    FUZZ_CHECK(t->raw_data.mode == OC_BYTES_SHARED && (uintptr_t)t->raw_data.data % c->align == 0,
               "a moved tensor loaded with no_copy from a mapping is not in place, aligned to "
               "%llu (mode %d, address %p)",
               (unsigned long long)c->align, (int)t->raw_data.mode, (const void *)t->raw_data.data);
    return OC_OK;
}

/* ---- the target ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static char path[4096 + 16];
    const char *dir = fuzz_scratch_dir("archive-roundtrip");
    if (!path[0]) snprintf(path, sizeof path, "%s/out.onnxz", dir);
    uint8_t sel = data[0];
    uint64_t align = alignments[sel & 7];
    plan p;
    memset(&p, 0, sizeof p);
    p.threshold = thresholds[(sel >> 3) & 3];
    oz_archive_options ao = OZ_ARCHIVE_OPTIONS_INIT;
    ao.serialize.buffer.alignment = align;
    ao.serialize.buffer.raw_data_threshold = p.threshold;
    ao.deflate_model = (sel >> 5) & 1;
    oc_parse_options po = OC_PARSE_OPTIONS_INIT;
    po.no_copy = (sel >> 6) & 1;
    if (po.no_copy) po.buffer.raw_data_threshold = 0;
    int use_pread = (sel >> 7) & 1;

    const oc_msgdesc *desc = &onnx_ModelProto_desc;
    oc_arena *arena = oc_arena_new();
    FUZZ_CHECK(arena != NULL, "out of memory");
    void *src = oc_msg_new(arena, desc);
    FUZZ_CHECK(src != NULL, "out of memory");
    oc_error err;
    oc_error_clear(&err);
    oc_status st = oc_decode(desc, src, data + 1, size - 1, arena, NULL, NULL, &err);
    if (st != OC_OK) {
        fuzz_check_error(st, &err, size - 1);
        oc_arena_free(arena);
        return 0;
    }
    oc_msg_visit_tensors(desc, src, neutralize, NULL);
    fuzz_buf pre = fuzz_encode(desc, src);

    /* what the archive and the loaded model must be */
    FUZZ_CHECK(name_taken_add(&p.taken, OZ_MODEL_ENTRY), "name set");
    oc_msg_visit_tensors(desc, src, plan_tensor, &p);
    oc_arena *ea = oc_arena_new();
    FUZZ_CHECK(ea != NULL, "out of memory");
    void *want_loaded = NULL, *want_model = NULL;
    FUZZ_CHECK(oc_msg_copy(desc, src, ea, &want_loaded, &err) == OC_OK &&
                   oc_msg_copy(desc, src, ea, &want_model, &err) == OC_OK,
               "oc_msg_copy: %s", err.message);
    p.arena = ea;
    p.at = 0;
    oc_msg_visit_tensors(desc, want_loaded, as_loaded, &p);
    FUZZ_CHECK(p.at == p.nt, "the copy has fewer tensors than the source");
    p.at = 0;
    p.k = 0;
    oc_msg_visit_tensors(desc, want_model, as_referenced, &p);
    FUZZ_CHECK(p.at == p.nt, "the copy has fewer tensors than the source");
    fuzz_buf enc_loaded = fuzz_encode(desc, want_loaded);
    fuzz_buf enc_model = fuzz_encode(desc, want_model);

    unlink(path);
    oc_error_clear(&err);
    st = oz_archive_save_message(desc, src, path, &ao, &err);
    fuzz_buf post = fuzz_encode(desc, src);
    fuzz_check_same("the source after oz_archive_save == before", &pre, &post);
    free(post.data);
    struct stat sb;
    if (align == 32 || align == 65536) {
        FUZZ_CHECK(st == OC_ERR_INVALID_ARG, "alignment %llu: %s", (unsigned long long)align,
                   oc_status_name(st));
        fuzz_check_error(st, &err, UINT64_MAX);
        FUZZ_CHECK(stat(path, &sb) != 0, "a refused save left %s", path);
        goto done;
    }
    FUZZ_CHECK(st == OC_OK, "oz_archive_save (alignment %llu, threshold %llu, deflate %d): %s: %s",
               (unsigned long long)align, (unsigned long long)p.threshold, ao.deflate_model,
               oc_status_name(st), err.message);

    /* the archive's bytes */
    uint32_t A = align ? (uint32_t)align : 64;
    file f = slurp(path);
    oz_zip_reader *zr = NULL;
    st = oz_zip_reader_open_memory(f.data, f.size, NULL, NULL, &zr, &err);
    FUZZ_CHECK(st == OC_OK, "our own archive does not open: %s", err.message);
    uint64_t n = oz_zip_reader_count(zr), cd_off;
    oz_zip_reader_central_dir(zr, &cd_off, NULL);
    FUZZ_CHECK(n == p.nm + 1, "%llu entries for %llu tensors of at least %llu bytes",
               (unsigned long long)n, (unsigned long long)p.nm, (unsigned long long)p.threshold);
    FUZZ_CHECK(!oz_zip_reader_is_zip64(zr), "zip64 records in a small archive (Z-20)");
    uint32_t clen;
    oz_zip_reader_comment(zr, &clen);
    FUZZ_CHECK(clen == 0, "a comment");
    uint64_t next = 0; /* Z-1: entries back to back from offset 0 */
    for (uint64_t i = 0; i < n; i++) {
        oz_zip_entry e;
        oz_zip_reader_entry(zr, i, &e, NULL);
        FUZZ_CHECK(e.local_header_offset == next, "entry %llu at %llu, the previous ends at %llu",
                   (unsigned long long)i, (unsigned long long)e.local_header_offset,
                   (unsigned long long)next);
        next = e.data_offset + e.compressed_size;
        check_local(&f, &e, A);
        oc_bytes b = {0};
        st = oz_zip_reader_read(zr, i, &b, &err);
        FUZZ_CHECK(st == OC_OK, "entry %llu does not read: %s", (unsigned long long)i, err.message);
        FUZZ_CHECK(fuzz_crc32(0, b.data, b.size) == e.crc32, "CRC-32 of '%s'", e.name);
        if (i < p.nm) {
            const moved *m = &p.m[i];
            FUZZ_CHECK(strcmp(e.name, m->name) == 0, "entry %llu is '%s', A-10 names it '%s'",
                       (unsigned long long)i, e.name, m->name);
            FUZZ_CHECK(e.method == 0, "tensor entry '%s' is not STORED (A-3)", e.name);
            FUZZ_CHECK(b.size == m->bytes->size &&
                           (b.size == 0 || memcmp(b.data, m->bytes->data, b.size) == 0),
                       "entry '%s' does not hold its tensor's bytes (A-12)", e.name);
        } else {
            FUZZ_CHECK(strcmp(e.name, OZ_MODEL_ENTRY) == 0, "the last entry is '%s' (A-2)", e.name);
            FUZZ_CHECK(e.method == (ao.deflate_model ? 8u : 0u), "__MODEL_PROTO method %u",
                       e.method);
            fuzz_buf got = {(uint8_t *)(uintptr_t)b.data, b.size};
            fuzz_check_same(OZ_MODEL_ENTRY " == the source with moved tensors as references "
                                           "(A-20)",
                            &enc_model, &got);
        }
        oc_bytes_release(&b);
    }
    FUZZ_CHECK(next == cd_off, "%llu bytes between the last entry and the central directory",
               (unsigned long long)(cd_off - next));
    check_central(&f, zr);
    FUZZ_CHECK(oz_zip_reader_verify_all(zr, &err) == OC_OK, "verify_all: %s", err.message);
    FUZZ_CHECK(oz_zip_reader_check_paths(zr, &err) == OC_OK, "check_paths: %s", err.message);
    oz_zip_reader_close(zr);
    free(f.data);

    /* loading it back */
    oz_archive *ar = NULL;
    oc_model *m = NULL;
    oz_zip_reader_options zo = OZ_ZIP_READER_OPTIONS_INIT;
    zo.use_pread = 1;
    st = oz_archive_open(path, use_pread ? &zo : NULL, &ar, &err);
    FUZZ_CHECK(st == OC_OK, "oz_archive_open: %s", err.message);
    oz_archive_space space;
    oz_archive_get_space(ar, &space);
    FUZZ_CHECK(space.unused_bytes == 0 && space.file_size == space.archive_size &&
                   space.file_size == f.size,
               "oz_archive_get_space: %llu unused bytes", (unsigned long long)space.unused_bytes);
    if (use_pread) {
        st = oz_archive_load_model(ar, &po, &m, &err);
    } else {
        st = oz_archive_load(path, &po, &m, &err);
    }
    FUZZ_CHECK(st == OC_OK, "loading our own archive: %s: %s", oc_status_name(st), err.message);
    if (p.nm) { /* random access to the first moved tensor that is the first of its name */
        const oc_str *nm = &p.m[0].tensor->name;
        if (fuzz_first_named(desc, src, nm->data, nm->size) == p.m[0].tensor &&
            !(nm->size && memchr(nm->data, 0, (size_t)nm->size)) && nm->size < 4096) {
            char name[4096];
            if (nm->size) memcpy(name, nm->data, (size_t)nm->size);
            name[nm->size] = '\0';
            oc_bytes b = {0};
            st = oz_archive_read_tensor(ar, name, &b, &err);
            FUZZ_CHECK(st == OC_OK, "oz_archive_read_tensor('%s'): %s", name, err.message);
            FUZZ_CHECK(b.size == p.m[0].bytes->size &&
                           (b.size == 0 || memcmp(b.data, p.m[0].bytes->data, b.size) == 0),
                       "oz_archive_read_tensor('%s') reads other bytes", name);
            oc_bytes_release(&b);
        }
    }
    oc_parse_options skip = OC_PARSE_OPTIONS_INIT;
    skip.skip_external_data = 1;
    oc_model *ms = NULL;
    st = oz_archive_load_model(ar, &skip, &ms, &err);
    FUZZ_CHECK(st == OC_OK, "skip_external_data load: %s", err.message);
    fuzz_buf enc_skip = fuzz_encode(desc, oc_model_proto(ms));
    fuzz_check_same("skip_external_data load == " OZ_MODEL_ENTRY "'s model", &enc_model, &enc_skip);
    free(enc_skip.data);
    oc_model_free(ms);
    oz_archive_close(ar);
    unlink(path);                    /* a mapping outlives its name */
    static const uint8_t nowhere[1]; /* empty borrowed spans only (see fuzz_archive.c) */
    fuzz_span_rules rules = {po.no_copy, nowhere, nowhere, po.no_copy, 0, 0};
    fuzz_check_tensors(desc, oc_model_proto(m), &rules);
    fuzz_buf got = fuzz_encode(desc, oc_model_proto(m));
    fuzz_check_same("loaded model == the source, moved tensors back in place (A-22)", &enc_loaded,
                    &got);
    free(got.data);
    if (po.no_copy && !use_pread) {
        align_check c = {&p, 0, A < 4096 ? A : 4096};
        oc_msg_visit_tensors(desc, oc_model_proto(m), check_in_place, &c);
    }
    oc_model_free(m);

done:
    unlink(path);
    free(pre.data);
    free(enc_loaded.data);
    free(enc_model.data);
    free(p.m);
    free(p.flags);
    name_set_free(&p.taken);
    oc_arena_free(ea);
    oc_arena_free(arena);
    return 0;
}
