/*
 * tests/zip/test_zip.c - the ZIP layer of libonnxz through its C API.
 *
 * Writer contracts (alignment, names, streaming, atomic output, determinism), exact bytes
 * of the padding record, round trips through every reader source, zero-copy reads, CRC
 * verification on demand, limits, and a zip64 archive by entry count. Rule ids refer to
 * spec/onnxz-zip.md. Hostile archives and the real ZIP clients are in zip_driver.py.
 *
 * Usage: test_zip WORKDIR
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <onnxcore/bytes.h>
#include <onnxz/zip.h>

#include "check.h"
#include "testdir.h"

static int exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Files in the scratch directory whose names contain `needle`. */
static int count_files(const char *needle) {
    DIR *d = opendir(td_dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strstr(e->d_name, needle)) n++;
    closedir(d);
    return n;
}

static void fill(uint8_t *p, size_t n, unsigned seed) {
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (uint8_t)x;
    }
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- writer arguments ---- */

static void test_alignment_args(void) {
    oc_error err;
    oz_zip_writer *w = NULL;
    const char *p = td_at("align.zip");
    static const uint32_t bad[] = {1, 4, 32, 63, 96, 65536, 100000};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) /* Z-10 */
        CHECK_RULE(oz_zip_writer_open(p, bad[i], 0, &w, &err), OC_ERR_INVALID_ARG, &err, "Z-10");
    CHECK(w == NULL);
    CHECK_OK(oz_zip_writer_open(p, 0, 0, &w, &err), &err);
    CHECK_EQ(oz_zip_writer_alignment(w), 64);
    oz_zip_writer_free(w);
    static const uint32_t good[] = {64, 128, 4096, 32768};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK_OK(oz_zip_writer_open(p, good[i], 0, &w, &err), &err);
        CHECK_EQ(oz_zip_writer_alignment(w), good[i]);
        oz_zip_writer_free(w);
    }
    CHECK(!exists(p)); /* never finished: nothing written */
    CHECK_EQ(count_files(".tmp-"), 0);
}

/* Z-30..Z-35 on the writer's side. */
static void test_name_rules(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("names.zip");
    REQUIRE(oz_zip_writer_open(p, 0, 0, &w, &err) == OC_OK);
    struct {
        const char *name;
        oc_status st;
        const char *rule;
    } cases[] = {
        {"", OC_ERR_INVALID_ARG, "Z-30"},
        {"\xff\xfe", OC_ERR_INVALID_ARG, "Z-31"},
        {"a\xc0\xaf", OC_ERR_INVALID_ARG, "Z-31"},    /* overlong '/' */
        {"\xed\xa0\x80", OC_ERR_INVALID_ARG, "Z-31"}, /* a surrogate */
        {"a\\b", OC_ERR_UNSAFE_PATH, "Z-32"},
        {"/etc/passwd", OC_ERR_UNSAFE_PATH, "Z-33"},
        {"C:/x", OC_ERR_UNSAFE_PATH, "Z-33"},
        {"c:x", OC_ERR_UNSAFE_PATH, "Z-33"},
        {"../x", OC_ERR_UNSAFE_PATH, "Z-34"},
        {"a/../../x", OC_ERR_UNSAFE_PATH, "Z-34"},
        {"a/..", OC_ERR_UNSAFE_PATH, "Z-34"},
        {"./a", OC_ERR_UNSAFE_PATH, "Z-34"},
        {"a//b", OC_ERR_UNSAFE_PATH, "Z-34"},
        {"dir/", OC_ERR_INVALID_ARG, "Z-34"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_RULE(oz_zip_writer_add(w, cases[i].name, "x", 1, NULL, &err), cases[i].st, &err,
                   cases[i].rule);
    char long_name[OZ_ZIP_DEFAULT_MAX_NAME_LEN + 2];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = 0;
    CHECK_RULE(oz_zip_writer_add(w, long_name, "x", 1, NULL, &err), OC_ERR_LIMIT, &err, "Z-30");
    long_name[OZ_ZIP_DEFAULT_MAX_NAME_LEN] = 0; /* exactly the limit is fine */
    CHECK_OK(oz_zip_writer_add(w, long_name, "x", 1, NULL, &err), &err);
    static const char *ok[] = {
        "a",   "a..b", "..a", "a/.b/c..", "weights/\xce\xbb.bin", "C", "emoji \xf0\x9f\x98\x80",
        "ab:c"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        CHECK_OK(oz_zip_writer_add(w, ok[i], "y", 1, NULL, &err), &err);
    CHECK_EQ(oz_zip_writer_count(w), 1 + sizeof ok / sizeof ok[0]);
    /* Z-35: a repeated name is refused and nothing is written. */
    oz_zip_entry last;
    CHECK_OK(oz_zip_writer_entry(w, oz_zip_writer_count(w) - 1, &last, &err), &err);
    CHECK_RULE(oz_zip_writer_add(w, "a", "z", 1, NULL, &err), OC_ERR_EXISTS, &err, "Z-35");
    CHECK_RULE(oz_zip_writer_begin(w, "a..b", 5, NULL, &err), OC_ERR_EXISTS, &err, "Z-35");
    CHECK_RULE(oz_zip_writer_add_deflated(w, "C", "z", 1, -1, &err), OC_ERR_EXISTS, &err, "Z-35");
    CHECK_OK(oz_zip_writer_add(w, "A", "z", 1, NULL, &err), &err); /* case matters here */
    oz_zip_entry a;
    CHECK_OK(oz_zip_writer_entry(w, oz_zip_writer_count(w) - 1, &a, &err), &err);
    /* the rejected adds wrote nothing: "A" follows right after the last good entry */
    CHECK_EQ(a.local_header_offset, last.data_offset + 1);
    CHECK_STATUS(oz_zip_writer_entry(w, 999, &a, &err), OC_ERR_NOT_FOUND, &err);
    CHECK_STATUS(oz_zip_writer_add(w, NULL, "z", 1, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_zip_writer_add(w, "nodata", NULL, 1, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_zip_writer_add_deflated(w, "lvl", "z", 1, 10, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_OK(oz_zip_writer_finish(w, &err), &err);
    CHECK_STATUS(oz_zip_writer_add(w, "late", "z", 1, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_zip_writer_finish(w, &err), OC_ERR_INVALID_ARG, &err);
    oz_zip_writer_free(w);

    oz_zip_reader *r;
    REQUIRE(oz_zip_reader_open(p, NULL, &r, &err) == OC_OK);
    uint64_t i;
    CHECK_OK(oz_zip_reader_find(r, "weights/\xce\xbb.bin", &i, &err), &err);
    CHECK_OK(oz_zip_reader_find(r, long_name, &i, &err), &err);
    CHECK_STATUS(oz_zip_reader_find(r, "weights", &i, &err), OC_ERR_NOT_FOUND, &err);
    CHECK_STATUS(oz_zip_reader_find(r, "c", &i, &err), OC_ERR_NOT_FOUND, &err);
    oz_zip_entry e;
    CHECK_OK(oz_zip_reader_entry(r, 0, &e, &err), &err);
    CHECK(e.flags & 0x0800); /* Z-31: the UTF-8 flag */
    CHECK_OK(oz_zip_reader_verify_all(r, &err), &err);
    oz_zip_reader_close(r);
}

/* ---- layout ---- */

/* Z-11, Z-12: the padding record's exact bytes, including the case where the gap is too
 * small for a record and a whole alignment is added. */
static void test_padding_bytes(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("pad.zip");
    REQUIRE(oz_zip_writer_open(p, 64, 0, &w, &err) == OC_OK);
    uint64_t off[4];
    char name30[31];
    memset(name30, 'b', 30);
    name30[30] = 0;
    CHECK_OK(oz_zip_writer_add(w, "a", "0123456789", 10, &off[0], &err), &err);
    /* second header at 74: 74 + 30 + 30 = 134, gap 58 */
    CHECK_OK(oz_zip_writer_add(w, name30, "", 0, &off[1], &err), &err);
    /* third header at 192: 192 + 30 + 29 = 251, gap 5 < 6 -> 69 */
    CHECK_OK(oz_zip_writer_add(w, name30 + 1, "z", 1, &off[2], &err), &err);
    CHECK_OK(oz_zip_writer_add_deflated(w, "d", "dddddddddddddddd", 16, 9, &err), &err);
    CHECK_OK(oz_zip_writer_finish(w, &err), &err);
    oz_zip_writer_free(w);
    CHECK_EQ(off[0], 64);
    CHECK_EQ(off[1], 192);
    CHECK_EQ(off[2], 320);
    size_t n;
    uint8_t *b = td_read(p, &n);
    REQUIRE(b && n > 400);
    /* entry "a": header 0..30, name 30, extra 31..63 = one record of 33 bytes */
    static const uint8_t head[] = {0x50, 0x4b, 0x03, 0x04, 10, 0, 0x00, 0x08, 0, 0, 0, 0, 0x21, 0};
    CHECK(memcmp(b, head, sizeof head) == 0); /* Z-4 */
    CHECK_EQ(le32(b + 18), 10);
    CHECK_EQ(le32(b + 22), 10);
    CHECK_EQ(le16(b + 26), 1);
    CHECK_EQ(le16(b + 28), 33);
    CHECK_EQ(b[30], 'a');
    static const uint8_t rec[] = {0x35, 0xd9, 29, 0, 64, 0};
    CHECK(memcmp(b + 31, rec, sizeof rec) == 0);
    int zeros = 1;
    for (int i = 37; i < 64; i++) zeros &= b[i] == 0;
    CHECK(zeros);
    CHECK(memcmp(b + 64, "0123456789", 10) == 0);
    /* entry 3 at 192: 30 + 29-byte name = 251, padding 5 < 6, so 5 + 64 = 69 */
    CHECK_EQ(le32(b + 192), 0x04034b50);
    CHECK_EQ(le16(b + 192 + 28), 69);
    CHECK_EQ(le16(b + 192 + 30 + 29), 0xd935);
    CHECK_EQ(le16(b + 192 + 30 + 29 + 2), 65);
    CHECK_EQ(le16(b + 192 + 30 + 29 + 4), 64);
    /* the DEFLATED entry right after, unpadded: header at 321, extra length 0 */
    CHECK_EQ(le32(b + 321), 0x04034b50);
    CHECK_EQ(le16(b + 321 + 4), 20);
    CHECK_EQ(le16(b + 321 + 8), 8);
    CHECK_EQ(le16(b + 321 + 28), 0);
    /* Z-13: the central directory has no padding: every central extra length is 0 */
    uint32_t cd_off = le32(b + n - 22 + 16), cd_n = le16(b + n - 22 + 10);
    CHECK_EQ(cd_n, 4);
    uint8_t *c = b + cd_off;
    for (uint32_t i = 0; i < cd_n; i++) {
        CHECK_EQ(le32(c), 0x02014b50);
        CHECK_EQ(le16(c + 4), 0x033f); /* Z-41 made by */
        CHECK_EQ(le16(c + 8), 0x0800); /* Z-31 */
        CHECK_EQ(le16(c + 30), 0);     /* no extra */
        CHECK_EQ(le32(c + 38), 0x81a40000u);
        c += 46 + le16(c + 28);
    }
    CHECK(c == b + n - 22); /* Z-1: the end record follows directly */
    free(b);
}

/* Writes a mix of entries at the given alignment and reads them back through every
 * source. Z-10: every STORED data offset is a multiple of the alignment. */
static void test_roundtrip(uint32_t align) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("rt.zip");
    REQUIRE(oz_zip_writer_open(p, align, 1, &w, &err) == OC_OK);
    enum { N = 12 };
    static const size_t sizes[N] = {0, 1, 63, 64, 65, 1000, 4095, 4096, 4097, 100000, 777, 3};
    uint8_t *data[N];
    char names[N][32];
    for (int i = 0; i < N; i++) {
        data[i] = malloc(sizes[i] + 1);
        fill(data[i], sizes[i], (unsigned)i + align);
        if (i == 5 || i == 9) memset(data[i], 'q', sizes[i] / 2); /* compressible */
        snprintf(names[i], sizeof names[i], "t/%d/%s.bin", i, i % 3 ? "w" : "bias");
        uint64_t off = 0;
        if (i % 4 == 1) {
            CHECK_OK(oz_zip_writer_add_deflated(w, names[i], data[i], sizes[i], -1, &err), &err);
            continue;
        }
        if (i % 4 == 2) { /* streamed in uneven chunks */
            CHECK_OK(oz_zip_writer_begin(w, names[i], sizes[i], &off, &err), &err);
            for (size_t done = 0; done < sizes[i];) {
                size_t k = sizes[i] - done < 333 ? sizes[i] - done : 333;
                CHECK_OK(oz_zip_writer_write(w, data[i] + done, k, &err), &err);
                done += k;
            }
            CHECK_OK(oz_zip_writer_end(w, &err), &err);
        } else {
            CHECK_OK(oz_zip_writer_add(w, names[i], data[i], sizes[i], &off, &err), &err);
        }
        CHECK_EQ(off % align, 0);
    }
    CHECK(!exists(p)); /* Z-50: nothing at the target before finish */
    CHECK_OK(oz_zip_writer_finish(w, &err), &err);
    oz_zip_writer_free(w);
    CHECK(exists(p));
    CHECK_EQ(count_files(".tmp-"), 0);

    size_t fsize;
    uint8_t *file = td_read(p, &fsize);
    REQUIRE(file);
    int fd = open(p, O_RDONLY);
    for (int mode = 0; mode < 5; mode++) {
        oz_zip_reader *r = NULL;
        oz_zip_reader_options o = OZ_ZIP_READER_OPTIONS_INIT;
        oc_owner *owner = NULL;
        if (mode == 0) CHECK_OK(oz_zip_reader_open(p, NULL, &r, &err), &err);
        if (mode == 1) {
            o.use_pread = 1;
            CHECK_OK(oz_zip_reader_open(p, &o, &r, &err), &err);
        }
        if (mode == 2) CHECK_OK(oz_zip_reader_open_fd(fd, &o, &r, &err), &err);
        if (mode == 3) CHECK_OK(oz_zip_reader_open_memory(file, fsize, NULL, &o, &r, &err), &err);
        if (mode == 4) {
            owner = oc_owner_new(NULL, NULL);
            CHECK_OK(oz_zip_reader_open_memory(file, fsize, owner, &o, &r, &err), &err);
        }
        if (!r) continue;
        CHECK_EQ(oz_zip_reader_count(r), N);
        CHECK_EQ(oz_zip_reader_size(r), fsize);
        CHECK_EQ(oz_zip_reader_is_zip64(r), 0);
        for (int i = 0; i < N; i++) {
            uint64_t idx = 99;
            CHECK_OK(oz_zip_reader_find(r, names[i], &idx, &err), &err);
            CHECK_EQ(idx, (uint64_t)i); /* Z-3: central order is the order of writing */
            oz_zip_entry e;
            CHECK_OK(oz_zip_reader_entry(r, idx, &e, &err), &err);
            CHECK(strcmp(e.name, names[i]) == 0);
            CHECK_EQ(e.uncompressed_size, sizes[i]);
            CHECK_EQ(e.method, i % 4 == 1 ? OZ_ZIP_DEFLATED : OZ_ZIP_STORED);
            if (e.method == OZ_ZIP_STORED) CHECK_EQ(e.data_offset % align, 0);
            oc_bytes b = {0};
            CHECK_OK(oz_zip_reader_read(r, idx, &b, &err), &err);
            CHECK_EQ(b.size, sizes[i]);
            CHECK(sizes[i] == 0 || memcmp(b.data, data[i], sizes[i]) == 0);
            if (e.method == OZ_ZIP_STORED && sizes[i]) {
                oc_bytes_mode want = mode == 0 || mode == 4 ? OC_BYTES_SHARED
                                     : mode == 3            ? OC_BYTES_BORROWED
                                                            : OC_BYTES_OWNED;
                CHECK_EQ(b.mode, want);
                if (mode >= 3) CHECK(b.data == file + e.data_offset); /* zero copy */
                if (mode == 0) /* mapped: aligned as far as the page-aligned mapping allows */
                    CHECK_EQ((uintptr_t)b.data % (align < 4096 ? align : 4096), 0);
            } else if (sizes[i]) {
                CHECK_EQ(b.mode, OC_BYTES_OWNED);
                CHECK_EQ((uintptr_t)b.data % 64, 0);
            }
            oc_bytes_release(&b);
            CHECK_OK(oz_zip_reader_verify(r, idx, &err), &err);
        }
        CHECK_OK(oz_zip_reader_verify_all(r, &err), &err);
        oz_zip_entry e;
        CHECK_STATUS(oz_zip_reader_entry(r, N, &e, &err), OC_ERR_NOT_FOUND, &err);
        oc_bytes b = {0};
        CHECK_STATUS(oz_zip_reader_read(r, N, &b, &err), OC_ERR_NOT_FOUND, &err);
        oz_zip_reader_close(r);
        oc_owner_unref(owner);
    }
    close(fd);
    free(file);
    for (int i = 0; i < N; i++) free(data[i]);
    oc_error e2;
    oz_zip_writer *w2;
    CHECK_STATUS(oz_zip_writer_open(p, align, 1, &w2, &e2), OC_ERR_EXISTS, &e2);
    remove(p);
}

/* Spans read from a mapping keep it alive after the reader is closed. */
static void test_zero_copy_lifetime(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("zc.zip");
    uint8_t big[5000];
    fill(big, sizeof big, 7);
    REQUIRE(oz_zip_writer_open(p, 4096, 0, &w, &err) == OC_OK);
    CHECK_OK(oz_zip_writer_add(w, "w.bin", big, sizeof big, NULL, &err), &err);
    CHECK_OK(oz_zip_writer_finish(w, &err), &err);
    oz_zip_writer_free(w);
    oz_zip_reader *r;
    REQUIRE(oz_zip_reader_open(p, NULL, &r, &err) == OC_OK);
    oc_bytes b = {0}, c = {0};
    CHECK_OK(oz_zip_reader_read(r, 0, &b, &err), &err);
    CHECK_EQ(b.mode, OC_BYTES_SHARED);
    CHECK_EQ(oc_owner_refcount(b.owner), 2); /* the reader's and the span's */
    CHECK_OK(oz_zip_reader_read(r, 0, &c, &err), &err);
    CHECK_EQ(oc_owner_refcount(b.owner), 3);
    CHECK_EQ((uintptr_t)b.data % 4096, 0);
    oz_zip_reader_close(r);
    CHECK_EQ(oc_owner_refcount(b.owner), 2);
    CHECK(memcmp(b.data, big, sizeof big) == 0);
    oc_bytes_release(&c);
    CHECK_EQ(oc_owner_refcount(b.owner), 1);
    oc_bytes_release(&b);
}

/* ---- streaming ---- */

static void test_streaming_errors(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("stream.zip");
    /* overrun: refused, and the writer is failed from then on */
    REQUIRE(oz_zip_writer_open(p, 0, 0, &w, &err) == OC_OK);
    CHECK_STATUS(oz_zip_writer_write(w, "x", 1, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_zip_writer_end(w, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_OK(oz_zip_writer_begin(w, "s", 4, NULL, &err), &err);
    CHECK_STATUS(oz_zip_writer_add(w, "t", "x", 1, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_zip_writer_begin(w, "t", 1, NULL, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_zip_writer_finish(w, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_OK(oz_zip_writer_write(w, "abc", 3, &err), &err);
    CHECK_STATUS(oz_zip_writer_write(w, "de", 2, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_zip_writer_write(w, "d", 1, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_zip_writer_finish(w, &err), OC_ERR_INVALID_ARG, &err);
    oz_zip_writer_free(w);
    CHECK(!exists(p));
    /* short: end refuses, the writer is failed */
    REQUIRE(oz_zip_writer_open(p, 0, 0, &w, &err) == OC_OK);
    CHECK_OK(oz_zip_writer_begin(w, "s", 4, NULL, &err), &err);
    CHECK_OK(oz_zip_writer_write(w, "abc", 3, &err), &err);
    CHECK_STATUS(oz_zip_writer_end(w, &err), OC_ERR_INVALID_ARG, &err);
    CHECK_STATUS(oz_zip_writer_add(w, "t", "x", 1, NULL, &err), OC_ERR_INVALID_ARG, &err);
    oz_zip_writer_free(w);
    CHECK(!exists(p));
    CHECK_EQ(count_files(".tmp-"), 0);
    /* an exact stream: the CRC is patched in (Z-6) and the reader agrees */
    REQUIRE(oz_zip_writer_open(p, 0, 0, &w, &err) == OC_OK);
    CHECK_OK(oz_zip_writer_begin(w, "s", 5, NULL, &err), &err);
    CHECK_OK(oz_zip_writer_write(w, "hel", 3, &err), &err);
    CHECK_OK(oz_zip_writer_write(w, NULL, 0, &err), &err);
    CHECK_OK(oz_zip_writer_write(w, "lo", 2, &err), &err);
    CHECK_OK(oz_zip_writer_end(w, &err), &err);
    CHECK_OK(oz_zip_writer_begin(w, "empty", 0, NULL, &err), &err);
    CHECK_OK(oz_zip_writer_end(w, &err), &err);
    CHECK_OK(oz_zip_writer_finish(w, &err), &err);
    oz_zip_writer_free(w);
    size_t n;
    uint8_t *b = td_read(p, &n);
    REQUIRE(b);
    CHECK_EQ(le32(b + 14), 0x3610a686u); /* crc32("hello") in the local header */
    free(b);
    oz_zip_reader *r;
    REQUIRE(oz_zip_reader_open(p, NULL, &r, &err) == OC_OK);
    CHECK_OK(oz_zip_reader_verify_all(r, &err), &err);
    oz_zip_entry e;
    CHECK_OK(oz_zip_reader_entry(r, 0, &e, &err), &err);
    CHECK_EQ(e.crc32, 0x3610a686u);
    oz_zip_reader_close(r);
}

/* Z-50: an unfinished writer leaves the target as it was. */
static void test_abort_keeps_target(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("keep.zip");
    FILE *f = fopen(p, "wb");
    REQUIRE(f);
    fputs("previous contents", f);
    fclose(f);
    CHECK_RULE(oz_zip_writer_open(p, 0, 1, &w, &err), OC_ERR_EXISTS, &err, NULL);
    REQUIRE(oz_zip_writer_open(p, 0, 0, &w, &err) == OC_OK);
    CHECK_OK(oz_zip_writer_add(w, "a", "abc", 3, NULL, &err), &err);
    oz_zip_writer_free(w);
    size_t n;
    uint8_t *b = td_read(p, &n);
    CHECK(b && n == 17 && memcmp(b, "previous contents", 17) == 0);
    free(b);
    CHECK_EQ(count_files(".tmp-"), 0);
    remove(p);
    oz_zip_writer_free(NULL);
    oz_zip_reader_close(NULL);
}

/* The same calls give the same bytes (fixed timestamps and attributes, Z-4). */
static void test_deterministic(void) {
    oc_error err;
    uint8_t *files[2];
    size_t sizes[2];
    for (int k = 0; k < 2; k++) {
        oz_zip_writer *w;
        const char *p = td_at(k ? "det1.zip" : "det0.zip");
        REQUIRE(oz_zip_writer_open(p, 0, 0, &w, &err) == OC_OK);
        uint8_t d[3000];
        fill(d, sizeof d, 3);
        CHECK_OK(oz_zip_writer_add(w, "x/a", d, sizeof d, NULL, &err), &err);
        CHECK_OK(oz_zip_writer_add_deflated(w, "x/b", d, sizeof d, 6, &err), &err);
        CHECK_OK(oz_zip_writer_finish(w, &err), &err);
        oz_zip_writer_free(w);
        files[k] = td_read(p, &sizes[k]);
    }
    CHECK(files[0] && files[1] && sizes[0] == sizes[1] &&
          memcmp(files[0], files[1], sizes[0]) == 0);
    free(files[0]);
    free(files[1]);
}

/* The empty archive: just an end record. */
static void test_empty_archive(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("empty.zip");
    REQUIRE(oz_zip_writer_open(p, 0, 0, &w, &err) == OC_OK);
    CHECK_OK(oz_zip_writer_finish(w, &err), &err);
    oz_zip_writer_free(w);
    size_t n;
    uint8_t *b = td_read(p, &n);
    CHECK_EQ(n, 22);
    free(b);
    oz_zip_reader *r;
    REQUIRE(oz_zip_reader_open(p, NULL, &r, &err) == OC_OK);
    CHECK_EQ(oz_zip_reader_count(r), 0);
    CHECK_OK(oz_zip_reader_verify_all(r, &err), &err);
    oz_zip_reader_close(r);
}

/* ---- reading ---- */

/* Z-78: CRCs are checked on demand; a flipped byte in STORED data passes open and read
 * (zero copy), and fails verify. In DEFLATED data read fails as well. */
static void test_verify_on_demand(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("crc.zip");
    uint8_t d[2000];
    fill(d, sizeof d, 11);
    REQUIRE(oz_zip_writer_open(p, 0, 0, &w, &err) == OC_OK);
    uint64_t off;
    CHECK_OK(oz_zip_writer_add(w, "s", d, sizeof d, &off, &err), &err);
    CHECK_OK(oz_zip_writer_add_deflated(w, "z", d, sizeof d, 0, &err), &err); /* level 0 */
    CHECK_OK(oz_zip_writer_finish(w, &err), &err);
    oz_zip_entry ze;
    size_t n;
    uint8_t *b = td_read(p, &n);
    REQUIRE(b);
    b[off + 100] ^= 1;
    oz_zip_reader *r;
    REQUIRE(oz_zip_reader_open_memory(b, n, NULL, NULL, &r, &err) == OC_OK);
    oc_bytes s = {0};
    CHECK_OK(oz_zip_reader_read(r, 0, &s, &err), &err);
    oc_bytes_release(&s);
    CHECK_RULE(oz_zip_reader_verify(r, 0, &err), OC_ERR_CHECKSUM, &err, "Z-78");
    CHECK_EQ(err.offset, off);
    CHECK_OK(oz_zip_reader_verify(r, 1, &err), &err);
    CHECK_RULE(oz_zip_reader_verify_all(r, &err), OC_ERR_CHECKSUM, &err, "Z-78");
    CHECK_OK(oz_zip_reader_entry(r, 1, &ze, &err), &err);
    oz_zip_reader_close(r);
    b[off + 100] ^= 1;
    b[ze.data_offset + 500] ^= 0x20; /* inside a stored deflate block: still valid deflate */
    REQUIRE(oz_zip_reader_open_memory(b, n, NULL, NULL, &r, &err) == OC_OK);
    CHECK_RULE(oz_zip_reader_read(r, 1, &s, &err), OC_ERR_CHECKSUM, &err, "Z-78");
    CHECK(s.size == 0 && s.data == NULL);
    CHECK_RULE(oz_zip_reader_verify(r, 1, &err), OC_ERR_CHECKSUM, &err, "Z-78");
    CHECK_OK(oz_zip_reader_verify(r, 0, &err), &err);
    oz_zip_reader_close(r);
    oz_zip_writer_free(w);
    free(b);
}

/* Z-66: the reader's limits, lowered through options. */
static void test_reader_limits(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("lim.zip");
    uint8_t d[10000];
    memset(d, 'a', sizeof d);
    REQUIRE(oz_zip_writer_open(p, 0, 0, &w, &err) == OC_OK);
    CHECK_OK(oz_zip_writer_add(w, "a-rather-long-name", d, 10, NULL, &err), &err);
    CHECK_OK(oz_zip_writer_add(w, "b", d, 10, NULL, &err), &err);
    CHECK_OK(oz_zip_writer_add_deflated(w, "c", d, sizeof d, 9, &err), &err);
    CHECK_OK(oz_zip_writer_finish(w, &err), &err);
    oz_zip_writer_free(w);
    oz_zip_reader *r;
    oz_zip_reader_options o = OZ_ZIP_READER_OPTIONS_INIT;
    o.max_entries = 2;
    CHECK_RULE(oz_zip_reader_open(p, &o, &r, &err), OC_ERR_LIMIT, &err, "Z-66");
    o.max_entries = 3;
    o.max_name_len = 5;
    CHECK_RULE(oz_zip_reader_open(p, &o, &r, &err), OC_ERR_LIMIT, &err, "Z-66");
    o.max_name_len = 0;
    o.max_central_dir = 100;
    CHECK_RULE(oz_zip_reader_open(p, &o, &r, &err), OC_ERR_LIMIT, &err, "Z-66");
    o.max_central_dir = 0;
    o.max_inflated = 9999;
    REQUIRE(oz_zip_reader_open(p, &o, &r, &err) == OC_OK);
    oc_bytes b = {0};
    CHECK_RULE(oz_zip_reader_read(r, 2, &b, &err), OC_ERR_LIMIT, &err, "Z-66");
    CHECK_OK(oz_zip_reader_verify(r, 2, &err), &err); /* streaming: no limit needed */
    oz_zip_reader_close(r);
    CHECK_STATUS(oz_zip_reader_open(td_at("missing.zip"), NULL, &r, &err), OC_ERR_NOT_FOUND, &err);
    o.max_inflated = 0;
    o.use_pread = 1;
    CHECK_STATUS(oz_zip_reader_open(td_at("missing.zip"), &o, &r, &err), OC_ERR_NOT_FOUND, &err);
    CHECK_STATUS(oz_zip_reader_open(td_dir, &o, &r, &err), OC_ERR_IO, &err);
}

/* Z-23, Z-24: more than 65,535 entries need the zip64 end records; the reader takes the
 * count from them. */
static void test_many_entries(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("many.zip");
    const unsigned n = 70000;
    REQUIRE(oz_zip_writer_open(p, 0, 0, &w, &err) == OC_OK);
    for (unsigned i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "e/%u", i);
        if (!CHECK_OK(oz_zip_writer_add(w, name, name, strlen(name), NULL, &err), &err)) break;
    }
    CHECK_OK(oz_zip_writer_finish(w, &err), &err);
    oz_zip_writer_free(w);
    size_t size;
    uint8_t *b = td_read(p, &size);
    REQUIRE(b && size > 98);
    const uint8_t *eocd = b + size - 22;
    CHECK_EQ(le16(eocd + 8), 0xffff);
    CHECK_EQ(le16(eocd + 10), 0xffff);
    CHECK(le32(eocd + 12) != 0xffffffffu); /* only the overflowing fields are all ones */
    CHECK_EQ(le32(eocd - 20), 0x07064b50);
    CHECK_EQ(le32(eocd - 76), 0x06064b50);
    free(b);
    oz_zip_reader *r;
    REQUIRE(oz_zip_reader_open(p, NULL, &r, &err) == OC_OK);
    CHECK_EQ(oz_zip_reader_count(r), n);
    CHECK(oz_zip_reader_is_zip64(r));
    uint64_t i;
    CHECK_OK(oz_zip_reader_find(r, "e/69999", &i, &err), &err);
    CHECK_EQ(i, 69999);
    CHECK_OK(oz_zip_reader_find(r, "e/12345", &i, &err), &err);
    oc_bytes d = {0};
    CHECK_OK(oz_zip_reader_read(r, i, &d, &err), &err);
    CHECK(d.size == 7 && memcmp(d.data, "e/12345", 7) == 0);
    oc_bytes_release(&d);
    CHECK_OK(oz_zip_reader_verify_all(r, &err), &err);
    oz_zip_reader_close(r);
    oz_zip_reader_options o = OZ_ZIP_READER_OPTIONS_INIT;
    o.max_entries = 65535;
    CHECK_RULE(oz_zip_reader_open(p, &o, &r, &err), OC_ERR_LIMIT, &err, "Z-66");
}

/* Random damage to valid archives (a plain one and a zip64 one): whatever the bytes, the
 * reader either opens and then reads and verifies every entry, or refuses with an input
 * status and a message citing a rule; it never crashes (run under ASan/UBSan in CI).
 * Entries it accepts lie inside the buffer and do not overlap (Z-75, Z-76). */
static void test_mutations(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p[2] = {td_at("mut0.zip"), td_at("mut1.zip")};
    uint8_t d[3000];
    fill(d, sizeof d, 5);
    for (int k = 0; k < 2; k++) {
        REQUIRE(oz_zip_writer_open(p[k], 0, 0, &w, &err) == OC_OK);
        CHECK_OK(oz_zip_writer_add(w, "a.bin", d, 200, NULL, &err), &err);
        CHECK_OK(
            oz_zip_writer_add_deflated(w, "b.txt", "hello hello hello hello hello", 29, 9, &err),
            &err);
        CHECK_OK(oz_zip_writer_add(w, "c/d.bin", d + 7, 100, NULL, &err), &err);
        for (unsigned i = 0; k == 1 && i < 65535; i++) { /* zip64 end records */
            char name[16];
            snprintf(name, sizeof name, "%u", i);
            oz_zip_writer_add(w, name, "", 0, NULL, &err);
        }
        CHECK_OK(oz_zip_writer_finish(w, &err), &err);
        oz_zip_writer_free(w);
    }
    uint32_t x = 12345;
#define RND() (x ^= x << 13, x ^= x >> 17, x ^= x << 5, x)
    long opened = 0, refused = 0;
    for (int k = 0; k < 2; k++) {
        size_t n;
        uint8_t *orig = td_read(p[k], &n);
        REQUIRE(orig);
        uint8_t *b = malloc(n);
        int rounds = k ? 300 : 20000;
        for (int it = 0; it < rounds; it++) {
            memcpy(b, orig, n);
            size_t len = n;
            int muts = 1 + (int)(RND() % 4);
            for (int m = 0; m < muts; m++) {
                /* aim at the headers most of the time: the first 400 and last 200 bytes */
                uint32_t r = RND();
                size_t pos = r % 3 == 0   ? RND() % n
                             : r % 3 == 1 ? RND() % (n < 400 ? n : 400)
                                          : n - 1 - RND() % (n < 200 ? n : 200);
                uint32_t how = RND() % 8;
                if (how < 5)
                    b[pos] = (uint8_t)RND();
                else if (how == 5)
                    b[pos] ^= (uint8_t)(1u << (RND() % 8));
                else if (how == 6)
                    b[pos] = (uint8_t)(RND() & 1 ? 0xff : 0x00);
                else
                    len = pos; /* cut */
            }
            oz_zip_reader *r;
            oc_status st = oz_zip_reader_open_memory(b, len, NULL, NULL, &r, &err);
            if (st != OC_OK) {
                refused++;
                if (!CHECK(st != OC_ERR_NOMEM && st != OC_ERR_INVALID_ARG && err.code == st &&
                           strstr(err.message, "(Z-") != NULL))
                    fprintf(stderr, "  iteration %d: %s: %s\n", it, oc_status_name(st),
                            err.message);
                continue;
            }
            opened++;
            for (uint64_t i = 0; i < oz_zip_reader_count(r); i++) {
                oz_zip_entry e;
                oz_zip_reader_entry(r, i, &e, NULL);
                CHECK(e.data_offset <= len && e.compressed_size <= len - e.data_offset);
                oc_bytes s = {0};
                st = oz_zip_reader_read(r, i, &s, &err);
                CHECK(st == OC_OK || strstr(err.message, "(Z-") != NULL);
                CHECK(st != OC_OK || s.size == e.uncompressed_size);
                oc_bytes_release(&s);
                st = oz_zip_reader_verify(r, i, &err);
                CHECK(st == OC_OK || strstr(err.message, "(Z-") != NULL);
            }
            oz_zip_reader_close(r);
        }
        free(b);
        free(orig);
    }
#undef RND
    printf("mutations: %ld opened, %ld refused\n", opened, refused);
    CHECK(opened > 100 && refused > 1000);
}

/* The CRC of every entry is zlib's crc32 of its bytes, for every length around the folding
 * steps (16 and 64 bytes), at every misalignment, and streamed in uneven pieces. */
static void test_crc_matches_zlib(void) {
    oc_error err;
    oz_zip_writer *w;
    const char *p = td_at("crc_zlib.zip");
    enum { BIG = (1 << 20) + 77, N = 320 };
    uint8_t *buf = malloc(BIG + 64);
    REQUIRE(buf);
    fill(buf, BIG + 64, 99);
    if (!CHECK_OK(oz_zip_writer_open(p, 64, 1, &w, &err), &err)) {
        free(buf);
        return;
    }
    uint32_t want[N + 2];
    char name[32];
    for (unsigned i = 0; i < N; i++) { /* length i at offset i % 37 */
        snprintf(name, sizeof name, "e%u", i);
        CHECK_OK(oz_zip_writer_add(w, name, buf + i % 37, i, NULL, &err), &err);
        want[i] = (uint32_t)crc32(0, buf + i % 37, i);
    }
    CHECK_OK(oz_zip_writer_add(w, "big", buf + 5, BIG, NULL, &err), &err);
    want[N] = (uint32_t)crc32(0, buf + 5, BIG);
    CHECK_OK(oz_zip_writer_begin(w, "streamed", BIG, NULL, &err), &err);
    for (size_t done = 0, k = 1; done < BIG; done += k, k = k * 3 + 1) {
        if (k > BIG - done) k = BIG - done;
        CHECK_OK(oz_zip_writer_write(w, buf + 1 + done, k, &err), &err);
    }
    CHECK_OK(oz_zip_writer_end(w, &err), &err);
    want[N + 1] = (uint32_t)crc32(0, buf + 1, BIG);
    CHECK_OK(oz_zip_writer_finish(w, &err), &err);
    oz_zip_writer_free(w);
    oz_zip_reader *r = NULL;
    CHECK_OK(oz_zip_reader_open(p, NULL, &r, &err), &err);
    for (unsigned i = 0; r && i < N + 2; i++) {
        oz_zip_entry e;
        CHECK_OK(oz_zip_reader_entry(r, i, &e, &err), &err);
        CHECK_EQ(e.crc32, want[i]);
    }
    if (r) CHECK_OK(oz_zip_reader_verify_all(r, &err), &err);
    oz_zip_reader_close(r);
    free(buf);
}

int main(int argc, char **argv) {
    if (td_start(argc, argv, "zip") != 0) return 2;
    test_alignment_args();
    test_name_rules();
    test_padding_bytes();
    test_roundtrip(64);
    test_roundtrip(4096);
    test_roundtrip(32768);
    test_zero_copy_lifetime();
    test_streaming_errors();
    test_abort_keeps_target();
    test_deterministic();
    test_empty_archive();
    test_verify_on_demand();
    test_reader_limits();
    test_many_entries();
    test_mutations();
    test_crc_matches_zlib();
    td_remove(td_dir);
    return check_report("test_zip");
}
