/*
 * test_large.c - a model larger than 2 GiB (label `large`): three initializers of 800 MiB
 * each are saved to a file, loaded back copied and mapped (no_copy), checked byte for
 * byte, re-saved from the mapping, and compared with the in-memory serialization.
 * Needs about 5 GiB of memory and 5 GiB of disk under the scratch directory (argv[1]).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>

#include "check.h"
#include "testdir.h"
#include "testmodel.h"
#include "wire.h"

enum { NT = 3 };
#define TSIZE ((uint64_t)800 << 20)
#define K64   0x9E3779B97F4A7C15ull

static char dir[4096];

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t word(uint64_t j, unsigned k) { return j * K64 + k * 0x0101010101010101ull + 1; }

static void fill(uint8_t *p, uint64_t n, unsigned k) {
    for (uint64_t j = 0; j < n / 8; j++) {
        uint64_t w = word(j, k);
        memcpy(p + 8 * j, &w, 8);
    }
}

/* Every byte of a tensor. */
static int verify(const uint8_t *p, uint64_t n, unsigned k) {
    if (!p || n != TSIZE) return 0;
    for (uint64_t j = 0; j < n / 8; j++) {
        uint64_t w;
        memcpy(&w, p + 8 * j, 8);
        if (w != word(j, k)) {
            fprintf(stderr, "  tensor %u differs at byte %llu\n", k, (unsigned long long)(8 * j));
            return 0;
        }
    }
    return 1;
}

static void name_of(char *buf, size_t cap, unsigned k) { snprintf(buf, cap, "t%u", k); }

static onnx_TensorProto *find(oc_model *m, const char *name) {
    onnx_ModelProto *p = oc_model_proto(m);
    if (!p->graph) return NULL;
    for (uint64_t i = 0; i < p->graph->initializer.count; i++)
        if (oc_str_eq(p->graph->initializer.items[i]->name, name))
            return p->graph->initializer.items[i];
    return NULL;
}

/* Checks the loaded model: names, dims, sizes, modes, every byte, the small tail. */
static void check_model(oc_model *m, oc_bytes_mode want_mode, const char *what) {
    double t0 = now();
    const uint8_t *first = NULL;
    for (unsigned k = 0; k < NT; k++) {
        char name[16];
        name_of(name, sizeof name, k);
        onnx_TensorProto *t = find(m, name);
        if (!CHECK(t != NULL)) continue;
        CHECK_EQ(t->data_type, 1);
        CHECK(t->dims.count == 1 && t->dims.items[0] == (int64_t)(TSIZE / 4));
        CHECK_EQ(t->raw_data.size, TSIZE);
        CHECK_EQ(t->raw_data.mode, want_mode);
        if (!CHECK(verify(t->raw_data.data, t->raw_data.size, k)))
            fprintf(stderr, "  in %s\n", what);
        if (k == 0) first = t->raw_data.data;
        if (k == NT - 1 && want_mode != OC_BYTES_OWNED && first) {
            /* All tensors point into one input: the last lies beyond 2 GiB of the first. */
            CHECK((uint64_t)(t->raw_data.data - first) >= 2 * TSIZE);
        }
    }
    onnx_TensorProto *tail = find(m, "tail");
    CHECK(tail && tail->int64_data.count == 2 && tail->int64_data.items[1] == -9);
    CHECK(oc_str_eq(oc_model_proto(m)->producer_name, "test_large"));
    CHECK_EQ(oc_model_proto(m)->hdr.unknown.size, 5);
    fprintf(stderr, "  %s: checked in %.1f s\n", what, now() - t0);
}

/* Compares a file with a buffer, or with another file, chunk by chunk. */
static int same_file_bytes(const char *path, const uint8_t *mem, const char *other, uint64_t size) {
    int fd = open(path, O_RDONLY), fd2 = other ? open(other, O_RDONLY) : -1;
    if (fd < 0 || (other && fd2 < 0)) {
        if (fd >= 0) close(fd);
        if (fd2 >= 0) close(fd2);
        return 0;
    }
    enum { CH = 8 << 20 };
    uint8_t *buf = malloc(CH), *buf2 = other ? malloc(CH) : NULL;
    uint64_t off = 0;
    int ok = buf != NULL && (!other || buf2 != NULL);
    while (ok && off < size) {
        size_t want = (size_t)(size - off < CH ? size - off : CH);
        ssize_t got = pread(fd, buf, want, (off_t)off);
        if (got != (ssize_t)want) {
            ok = 0;
            break;
        }
        if (other) {
            got = pread(fd2, buf2, want, (off_t)off);
            ok = got == (ssize_t)want && memcmp(buf, buf2, want) == 0;
        } else {
            ok = memcmp(buf, mem + off, want) == 0;
        }
        if (!ok) fprintf(stderr, "  files differ in the chunk at %llu\n", (unsigned long long)off);
        off += want;
    }
    /* and nothing after */
    uint8_t extra;
    if (ok && pread(fd, &extra, 1, (off_t)size) != 0) ok = 0;
    free(buf);
    free(buf2);
    close(fd);
    if (fd2 >= 0) close(fd2);
    return ok;
}

int main(int argc, char **argv) {
    const char *base = argc > 1 ? argv[1] : NULL;
    if (td_make(base, "large", dir, sizeof dir) != 0) {
        fprintf(stderr, "cannot make a scratch directory under %s\n", base ? base : "/tmp");
        return 1;
    }
    char path[4200], path2[4200];
    snprintf(path, sizeof path, "%s/large.onnx", dir);
    snprintf(path2, sizeof path2, "%s/large2.onnx", dir);
    oc_error err;
    oc_error_clear(&err);
    double t0 = now();

    /* Build. */
    oc_model *m = tm_model_new();
    if (!CHECK(m != NULL)) return check_report("test_large");
    oc_arena *a = oc_model_arena(m);
    onnx_ModelProto *mp = oc_model_proto(m);
    oc_str_set_cstr(a, &mp->producer_name, "test_large");
    OC_SET_HAS(ModelProto, mp, producer_name);
    for (unsigned k = 0; k < NT; k++) {
        onnx_TensorProto *t = OC_ADD(a, TensorProto, mp->graph->initializer);
        char name[16];
        name_of(name, sizeof name, k);
        oc_str_set_cstr(a, &t->name, name);
        OC_SET_HAS(TensorProto, t, name);
        t->data_type = 1;
        OC_SET_HAS(TensorProto, t, data_type);
        int64_t *d = oc_array_push(a, &t->dims, sizeof(int64_t));
        if (d) *d = (int64_t)(TSIZE / 4);
        uint8_t *w = NULL;
        if (!CHECK_OK(oc_bytes_set_alloc(&t->raw_data, TSIZE, &w, &err), &err))
            return check_report("test_large");
        OC_SET_HAS(TensorProto, t, raw_data);
        fill(w, TSIZE, k);
    }
    onnx_TensorProto *tail = OC_ADD(a, TensorProto, mp->graph->initializer);
    oc_str_set_cstr(a, &tail->name, "tail");
    OC_SET_HAS(TensorProto, tail, name);
    int64_t *v = oc_array_push(a, &tail->int64_data, sizeof(int64_t));
    if (v) *v = 1;
    v = oc_array_push(a, &tail->int64_data, sizeof(int64_t));
    if (v) *v = -9;
    wbuf u = {0};
    wb_vint(&u, 777, 123456); /* 5 bytes of unknown field at the very end */
    oc_str_set(a, &mp->hdr.unknown, u.p, u.n);
    CHECK_EQ(u.n, 5);
    wb_free(&u);
    fprintf(stderr, "built in %.1f s\n", now() - t0);

    uint64_t size = 0;
    CHECK_OK(oc_encoded_size(&onnx_ModelProto_desc, mp, &size, &err), &err);
    CHECK(size > ((uint64_t)1 << 31));
    CHECK(size > NT * TSIZE);
    CHECK(size < NT * TSIZE + 4096);

    /* Save to a file. */
    t0 = now();
    CHECK_OK(oc_model_save_file(m, path, NULL, &err), &err);
    fprintf(stderr, "saved in %.1f s\n", now() - t0);
    struct stat st;
    if (CHECK(stat(path, &st) == 0)) CHECK_EQ((uint64_t)st.st_size, size);
    CHECK_EQ(td_count(dir, 0), 1); /* no temporary file left */

    /* Save to memory: the same bytes as the file; load it back borrowing. */
    t0 = now();
    void *mem = NULL;
    uint64_t msize = 0;
    CHECK_OK(oc_model_save_memory(m, NULL, &mem, &msize, &err), &err);
    CHECK_EQ(msize, size);
    oc_model_free(m);
    m = NULL;
    if (mem) {
        CHECK(same_file_bytes(path, mem, NULL, size));
        fprintf(stderr, "saved to memory and compared in %.1f s\n", now() - t0);
        oc_parse_options o = OC_PARSE_OPTIONS_INIT;
        o.no_copy = 1;
        oc_model *lm = NULL;
        CHECK_OK(oc_model_load_memory(mem, msize, &o, &lm, &err), &err);
        if (lm) {
            check_model(lm, OC_BYTES_BORROWED, "load_memory no_copy");
            oc_model_free(lm);
        }
        free(mem);
    }

    /* Load the file, copying. */
    t0 = now();
    oc_model *l = NULL;
    CHECK_OK(oc_model_load_file(path, NULL, &l, &err), &err);
    fprintf(stderr, "loaded (copy) in %.1f s\n", now() - t0);
    if (l) {
        check_model(l, OC_BYTES_OWNED, "load_file copy");
        CHECK_EQ(td_mapped(path), 0);
        oc_model_free(l);
        l = NULL;
    }

    /* Load the file, copying with all cores. */
    t0 = now();
    oc_parse_options ot = OC_PARSE_OPTIONS_INIT;
    ot.num_threads = -1;
    CHECK_OK(oc_model_load_file(path, &ot, &l, &err), &err);
    fprintf(stderr, "loaded (copy, all cores) in %.1f s\n", now() - t0);
    if (l) {
        check_model(l, OC_BYTES_OWNED, "load_file copy, threads");
        oc_model_free(l);
        l = NULL;
    }

    /* Load the file, mapped; clone; re-save from the mapping; compare the files. */
    t0 = now();
    oc_parse_options o = OC_PARSE_OPTIONS_INIT;
    o.no_copy = 1;
    CHECK_OK(oc_model_load_file(path, &o, &l, &err), &err);
    fprintf(stderr, "loaded (no_copy) in %.1f s\n", now() - t0);
    if (l) {
        check_model(l, OC_BYTES_SHARED, "load_file no_copy");
        oc_model *c = NULL;
        CHECK_OK(oc_model_clone(l, &c, &err), &err);
        oc_model_free(l);
        if (c) {
            t0 = now();
            CHECK_OK(oc_model_save_file(c, path2, NULL, &err), &err);
            fprintf(stderr, "re-saved from the mapping in %.1f s\n", now() - t0);
            if (CHECK(stat(path2, &st) == 0)) CHECK_EQ((uint64_t)st.st_size, size);
            CHECK(same_file_bytes(path, NULL, path2, size));
            CHECK(unlink(path) == 0); /* the mapping outlives the name */
            unlink(path2);
            check_model(c, OC_BYTES_SHARED, "clone of no_copy after unlink");
            oc_model_free(c);
        }
        CHECK_EQ(td_mapped(path), 0);
        CHECK_EQ(td_mapped(path2), 0);
    }
    unlink(path);
    unlink(path2);
    td_remove(dir);
    return check_report("test_large");
}
