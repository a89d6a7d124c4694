/*
 * tests/unit/testdir.h - scratch directories and small file helpers for the C tests.
 */
#ifndef ONNXZ_TESTS_TESTDIR_H
#define ONNXZ_TESTS_TESTDIR_H

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* mkdir -p */
static inline int td_mkdirs(const char *path) {
    char buf[4096];
    size_t n = strlen(path);
    if (n >= sizeof buf) return -1;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];
            buf[i] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
            buf[i] = c;
        }
    }
    return 0;
}

/* A fresh directory <base>/<tag>.XXXXXX (base defaults to /tmp); path in out. */
static inline int td_make(const char *base, const char *tag, char *out, size_t cap) {
    if (!base || !*base) base = "/tmp";
    if (td_mkdirs(base) != 0) return -1;
    if ((size_t)snprintf(out, cap, "%s/%s.XXXXXX", base, tag) >= cap) return -1;
    return mkdtemp(out) ? 0 : -1;
}

/* The scratch directory of a test that works in one, made by td_start. */
static char td_dir[4096];

/* Makes td_dir fresh under the work directory the test was given as its one argument
 * (<WORKDIR>/<tag>.XXXXXX); prints the usage and returns -1 without one. */
static inline int td_start(int argc, char **argv, const char *tag) {
    if (argc == 2 && td_make(argv[1], tag, td_dir, sizeof td_dir) == 0) return 0;
    fprintf(stderr, "usage: test_%s WORKDIR\n", tag);
    return -1;
}

/* <td_dir>/<name>, in one of four buffers taken in turn: one call may name four files. */
static inline const char *td_at(const char *name) {
    static char buf[4][sizeof td_dir + 160];
    static unsigned k;
    k = (k + 1) & 3;
    snprintf(buf[k], sizeof buf[k], "%.4095s/%.150s", td_dir, name);
    return buf[k];
}

/* rm -r of a directory holding plain files and empty directories (one level deep). */
static inline void td_remove(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[4096];
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= sizeof p) continue;
        if (unlink(p) != 0) {
            td_remove(p);
            rmdir(p);
        }
    }
    closedir(d);
    rmdir(dir);
}

/* Number of entries in a directory (without . and ..); -1 on error. With `list`, prints
 * them to stderr. */
static inline int td_count(const char *dir, int list) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (list) fprintf(stderr, "  entry: %s\n", e->d_name);
        n++;
    }
    closedir(d);
    return n;
}

/* Reads a whole file (malloc'ed; NULL and a size of 0 on error). */
static inline uint8_t *td_read(const char *path, size_t *size) {
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        uint8_t *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (buf) *size = n;
    return buf;
}

static inline int td_write(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = size ? fwrite(data, 1, size, f) : 0;
    int rc = fclose(f);
    return (w == size && rc == 0) ? 0 : -1;
}

/* True when /proc/self/maps has a mapping of a file whose path contains `needle`. */
static inline int td_mapped(const char *needle) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[8192];
    int found = 0;
    while (fgets(line, sizeof line, f))
        if (strstr(line, needle)) found = 1;
    fclose(f);
    return found;
}

#endif
