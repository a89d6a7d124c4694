/*
 * tests/fuzz/replay.c - runs a fuzz target on files, without libFuzzer.
 *
 *   fuzz_TARGET_replay PATH...
 *
 * Each PATH is a file (one input) or a directory (every regular file in it, in name
 * order, not recursively; names starting with '.' and README* are skipped). Each input
 * goes to LLVMFuzzerTestOneInput in a fresh malloc'd buffer of exactly its size, so a
 * sanitizer build catches reads past the end. An invariant violation aborts (the test
 * fails, naming the file last printed); otherwise prints a count and exits 0. A missing
 * PATH is an error; an empty directory is not.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "replay: out of memory reading %s\n", path);
            fclose(f);
            return -1;
        }
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        cap *= 2;
        uint8_t *nb = realloc(buf, cap);
        if (!nb) free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        free(buf);
        return -1;
    }
    /* An exact-size copy: nothing past the input is addressable. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return -1;
    }
    if (n) memcpy(exact, buf, n);
    free(buf);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir, long *count) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, "README", 6) == 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        names[n] = strdup(e->d_name);
        if (names[n]) n++;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(len);
        struct stat st;
        if (path) {
            snprintf(path, len, "%s/%s", dir, names[i]);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                if (run_file(path) != 0)
                    rc = -1;
                else
                    (*count)++;
            }
        }
        free(path);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE-OR-DIRECTORY...\n", argv[0]);
        return 2;
    }
    long count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            if (run_dir(argv[i], &count) != 0) rc = 1;
        } else if (run_file(argv[i]) != 0) {
            rc = 1;
        } else {
            count++;
        }
    }
    fprintf(stderr, "replay: %ld input(s) passed\n", count);
    return rc;
}
