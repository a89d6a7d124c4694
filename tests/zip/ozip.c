/*
 * tests/zip/ozip.c - a small command-line front end to libonnxz's ZIP layer, used by
 * zip_driver.py to write archives for the real ZIP clients and to run our reader over
 * archives from elsewhere (python's zipfile, hand-made hostile ones).
 *
 *   ozip write OUT ALIGN MANIFEST      each manifest line: "stored|deflated|stream<TAB>PATH<TAB>NAME";
 *                                      prints one line per
 *                                      entry: "<data_offset> <name>"
 *   ozip many OUT COUNT                COUNT tiny STORED entries "e/<i>.bin"
 *   ozip big OUT SIZE                  a SIZE-byte STORED entry "big.bin" streamed from a
 *                                      pattern, then a small entry "after.bin"
 *   ozip check ARCHIVE [MODE]          open, read every entry, verify every CRC; prints
 *                                      "ok <count> zip64=<0|1>" or
 *                                      "error <code> <status name> offset=<n>: <message>"
 *   ozip list ARCHIVE [MODE]           one line per entry (see cmd_list)
 *   ozip extract ARCHIVE DIR [MODE]    every entry's bytes into DIR/<name>
 *
 * MODE: map (default), pread, fd, memory. Exit status: 0 ok, 1 an error from the library,
 * 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <onnxz/zip.h>

#include "testdir.h"

static int report(const char *what, const oc_error *err) {
    printf("error %d %s offset=%lld: %s%s%s\n", (int)err->code, oc_status_name(err->code),
           err->offset == OC_NO_OFFSET ? -1LL : (long long)err->offset, what ? what : "",
           what ? ": " : "", err->message);
    return 1;
}

static int cmd_write(const char *out, const char *align, const char *manifest) {
    FILE *m = fopen(manifest, "r");
    if (!m) {
        perror(manifest);
        return 2;
    }
    oc_error err;
    oz_zip_writer *w;
    if (oz_zip_writer_open(out, (uint32_t)strtoul(align, NULL, 0), 0, &w, &err) != OC_OK) {
        fclose(m);
        return report("open", &err);
    }
    char line[8192];
    int rc = 0;
    while (!rc && fgets(line, sizeof line, m)) {
        line[strcspn(line, "\n")] = 0;
        if (!line[0]) continue;
        char *method = line, *path = strchr(line, '\t');
        if (!path) return 2;
        *path++ = 0;
        char *name = strchr(path, '\t');
        if (!name) return 2;
        *name++ = 0;
        size_t size = 0;
        uint8_t *data = td_read(path, &size);
        if (!data) {
            perror(path);
            return 2;
        }
        uint64_t off = 0;
        oc_status st;
        if (!strcmp(method, "stored")) {
            st = oz_zip_writer_add(w, name, data, size, &off, &err);
        } else if (!strcmp(method, "deflated")) {
            st = oz_zip_writer_add_deflated(w, name, data, size, 6, &err);
        } else {
            st = oz_zip_writer_begin(w, name, size, &off, &err);
            for (size_t done = 0; st == OC_OK && done < size;) { /* odd chunk sizes */
                size_t n = size - done < 7777 ? size - done : 7777;
                st = oz_zip_writer_write(w, data + done, n, &err);
                done += n;
            }
            if (st == OC_OK) st = oz_zip_writer_end(w, &err);
        }
        free(data);
        if (st != OC_OK) {
            rc = report(name, &err);
            break;
        }
        oz_zip_entry e;
        oz_zip_writer_entry(w, oz_zip_writer_count(w) - 1, &e, NULL);
        if (!strcmp(method, "deflated")) off = e.data_offset;
        if (off != e.data_offset) return 2;
        printf("%llu %s\n", (unsigned long long)off, e.name);
    }
    fclose(m);
    if (!rc && oz_zip_writer_finish(w, &err) != OC_OK) rc = report("finish", &err);
    oz_zip_writer_free(w);
    return rc;
}

static int cmd_many(const char *out, const char *count) {
    unsigned long n = strtoul(count, NULL, 10);
    oc_error err;
    oz_zip_writer *w;
    if (oz_zip_writer_open(out, 0, 0, &w, &err) != OC_OK) return report("open", &err);
    int rc = 0;
    for (unsigned long i = 0; i < n && !rc; i++) {
        char name[64], data[32];
        snprintf(name, sizeof name, "e/%lu.bin", i);
        int len = snprintf(data, sizeof data, "%lu\n", i * 7919u);
        if (oz_zip_writer_add(w, name, data, (uint64_t)len, NULL, &err) != OC_OK)
            rc = report(name, &err);
    }
    if (!rc && oz_zip_writer_finish(w, &err) != OC_OK) rc = report("finish", &err);
    oz_zip_writer_free(w);
    return rc;
}

/* The byte at position i of the big entry: cheap, not constant, not periodic in 2^k. */
static void pattern(uint8_t *buf, size_t n, uint64_t at) {
    for (size_t i = 0; i < n; i++) {
        uint64_t x = at + i;
        buf[i] = (uint8_t)((x * 131u) ^ (x >> 12) ^ (x >> 29));
    }
}

static int cmd_big(const char *out, const char *size_s) {
    uint64_t size = strtoull(size_s, NULL, 0);
    oc_error err;
    oz_zip_writer *w;
    if (oz_zip_writer_open(out, 0, 0, &w, &err) != OC_OK) return report("open", &err);
    size_t cap = (size_t)1 << 22;
    uint8_t *buf = malloc(cap);
    uint64_t off = 0;
    int rc = 0;
    if (!buf) return 2;
    if (oz_zip_writer_begin(w, "big.bin", size, &off, &err) != OC_OK) rc = report("begin", &err);
    for (uint64_t done = 0; !rc && done < size;) {
        size_t n = size - done < cap ? (size_t)(size - done) : cap;
        pattern(buf, n, done);
        if (oz_zip_writer_write(w, buf, n, &err) != OC_OK) rc = report("write", &err);
        done += n;
    }
    if (!rc && oz_zip_writer_end(w, &err) != OC_OK) rc = report("end", &err);
    printf("%llu big.bin\n", (unsigned long long)off);
    if (!rc && oz_zip_writer_add(w, "after.bin", "after the big one\n", 18, &off, &err) != OC_OK)
        rc = report("after.bin", &err);
    printf("%llu after.bin\n", (unsigned long long)off);
    if (!rc && oz_zip_writer_finish(w, &err) != OC_OK) rc = report("finish", &err);
    oz_zip_writer_free(w);
    free(buf);
    return rc;
}

/* Opens path in the given mode. For `memory`, *mem receives the buffer to free. */
static oc_status open_mode(const char *path, const char *mode, oz_zip_reader **r, uint8_t **mem,
                           oc_error *err) {
    oz_zip_reader_options o = OZ_ZIP_READER_OPTIONS_INIT;
    *mem = NULL;
    if (!mode || !strcmp(mode, "map")) return oz_zip_reader_open(path, &o, r, err);
    if (!strcmp(mode, "pread")) {
        o.use_pread = 1;
        return oz_zip_reader_open(path, &o, r, err);
    }
    if (!strcmp(mode, "fd")) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) {
            perror(path);
            exit(2);
        }
        oc_status st = oz_zip_reader_open_fd(fd, &o, r, err);
        close(fd); /* the reader has its own */
        return st;
    }
    size_t size = 0;
    *mem = td_read(path, &size);
    if (!*mem) {
        perror(path);
        exit(2);
    }
    return oz_zip_reader_open_memory(*mem, size, NULL, &o, r, err);
}

static int cmd_check(const char *path, const char *mode) {
    oz_zip_reader *r;
    uint8_t *mem;
    oc_error err;
    if (open_mode(path, mode, &r, &mem, &err) != OC_OK) {
        free(mem);
        return report(NULL, &err);
    }
    int rc = 0;
    for (uint64_t i = 0; i < oz_zip_reader_count(r) && !rc; i++) {
        oc_bytes b = {0};
        if (oz_zip_reader_read(r, i, &b, &err) != OC_OK) rc = report(NULL, &err);
        oc_bytes_release(&b);
    }
    if (!rc && oz_zip_reader_verify_all(r, &err) != OC_OK) rc = report(NULL, &err);
    if (!rc)
        printf("ok %llu zip64=%d\n", (unsigned long long)oz_zip_reader_count(r),
               oz_zip_reader_is_zip64(r));
    oz_zip_reader_close(r);
    free(mem);
    return rc;
}

/* "<method> <crc32 hex> <csize> <usize> <lho> <data_off> <name>" per entry, after a line
 * "count <n> zip64 <0|1> comment <len>". */
static int cmd_list(const char *path, const char *mode) {
    oz_zip_reader *r;
    uint8_t *mem;
    oc_error err;
    if (open_mode(path, mode, &r, &mem, &err) != OC_OK) {
        free(mem);
        return report(NULL, &err);
    }
    uint32_t clen;
    oz_zip_reader_comment(r, &clen);
    printf("count %llu zip64 %d comment %u\n", (unsigned long long)oz_zip_reader_count(r),
           oz_zip_reader_is_zip64(r), clen);
    for (uint64_t i = 0; i < oz_zip_reader_count(r); i++) {
        oz_zip_entry e;
        uint64_t found = UINT64_MAX;
        if (oz_zip_reader_entry(r, i, &e, &err) != OC_OK ||
            oz_zip_reader_find(r, e.name, &found, &err) != OC_OK || found != i) {
            oz_zip_reader_close(r);
            free(mem);
            return report("lookup", &err);
        }
        printf("%u %08x %llu %llu %llu %llu %s\n", e.method, e.crc32,
               (unsigned long long)e.compressed_size, (unsigned long long)e.uncompressed_size,
               (unsigned long long)e.local_header_offset, (unsigned long long)e.data_offset,
               e.name);
    }
    oz_zip_reader_close(r);
    free(mem);
    return 0;
}

static int mkdirs_for(char *path) {
    for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
        *p = 0;
        int bad = mkdir(path, 0777) != 0 && errno != EEXIST;
        *p = '/';
        if (bad) return -1;
    }
    return 0;
}

static int cmd_extract(const char *path, const char *dir, const char *mode) {
    oz_zip_reader *r;
    uint8_t *mem;
    oc_error err;
    if (open_mode(path, mode, &r, &mem, &err) != OC_OK) {
        free(mem);
        return report(NULL, &err);
    }
    int rc = 0;
    for (uint64_t i = 0; i < oz_zip_reader_count(r) && !rc; i++) {
        oz_zip_entry e;
        oc_bytes b = {0};
        oz_zip_reader_entry(r, i, &e, NULL);
        if (e.name[e.name_len - 1] == '/') continue; /* a directory entry */
        if (oz_zip_reader_read(r, i, &b, &err) != OC_OK) {
            rc = report(e.name, &err);
            break;
        }
        char out[8192];
        snprintf(out, sizeof out, "%s/%s", dir, e.name);
        FILE *f = mkdirs_for(out) == 0 ? fopen(out, "wb") : NULL;
        if (!f || (b.size && fwrite(b.data, 1, (size_t)b.size, f) != b.size)) rc = 2;
        if (f && fclose(f) != 0) rc = 2;
        if (rc) perror(out);
        oc_bytes_release(&b);
    }
    oz_zip_reader_close(r);
    free(mem);
    return rc;
}

int main(int argc, char **argv) {
    if (argc >= 5 && !strcmp(argv[1], "write")) return cmd_write(argv[2], argv[3], argv[4]);
    if (argc >= 4 && !strcmp(argv[1], "many")) return cmd_many(argv[2], argv[3]);
    if (argc >= 4 && !strcmp(argv[1], "big")) return cmd_big(argv[2], argv[3]);
    if (argc >= 3 && !strcmp(argv[1], "check"))
        return cmd_check(argv[2], argc > 3 ? argv[3] : NULL);
    if (argc >= 3 && !strcmp(argv[1], "list")) return cmd_list(argv[2], argc > 3 ? argv[3] : NULL);
    if (argc >= 4 && !strcmp(argv[1], "extract"))
        return cmd_extract(argv[2], argv[3], argc > 4 ? argv[4] : NULL);
    fprintf(stderr, "usage: ozip write|many|big|check|list|extract ... (see ozip.c)\n");
    return 2;
}
