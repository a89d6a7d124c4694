/*
 * test_path_safety.c - the path-safety unit of external data (libonnxcore/src/io/path_safety.c)
 * against the rules spec/external-data.md states about locations: each rule with a case
 * it accepts and a case it refuses.
 *
 *   E-10  a location's spelling (oc__location_problem)
 *   E-11  opened beneath the base directory, no symbolic link on the way or at the end,
 *         one hard link only (oc__open_beneath; the link count through a load)
 *   E-17  the caller's own data file is trusted (no beneath rule), its type still checked
 *   E-18  the type checked before opening: only a regular file is opened (oc__reopen_regular)
 *   E-23  a written location: an absolute one reduced to its file name, `..` refused
 *
 * With the argument --no-openat2 (a second ctest run) the kernel refuses openat2 (seccomp,
 * ENOSYS) and oc__open_beneath takes its per-component fallback: every case must give the
 * same answer.
 */
#define _GNU_SOURCE /* O_PATH */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include <onnxcore/onnxcore.h>

#include "check.h"
#include "testdir.h"
#include "internal/path_safety.h"

static char root[1024], mdir[1200];

static void path_in(char *out, size_t cap, const char *dir, const char *name) {
    snprintf(out, cap, "%s/%s", dir, name);
}

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* root/outside.bin, root/m/{data.bin, sub/inner.bin, fifo, hard.bin (a second link to
 * root/outside-hard.bin), link.bin -> ../outside.bin, inlink.bin -> data.bin,
 * dirlink -> sub}. */
static int make_tree(const char *base) {
    char p[2048], q[2048];
    if (td_make(base, "path_safety", root, sizeof root) != 0) return -1;
    path_in(mdir, sizeof mdir, root, "m");
    if (mkdir(mdir, 0755) != 0) return -1;
    path_in(p, sizeof p, root, "outside.bin");
    write_file(p, "OUTSIDE!");
    path_in(p, sizeof p, root, "outside-hard.bin");
    write_file(p, "HARDLINK");
    path_in(q, sizeof q, mdir, "hard.bin");
    if (link(p, q) != 0) return -1;
    path_in(p, sizeof p, mdir, "data.bin");
    write_file(p, "DATA0123");
    path_in(p, sizeof p, mdir, "sub");
    if (mkdir(p, 0755) != 0) return -1;
    path_in(p, sizeof p, mdir, "sub/inner.bin");
    write_file(p, "INNER567");
    path_in(p, sizeof p, mdir, "fifo");
    if (mkfifo(p, 0644) != 0) return -1;
    path_in(p, sizeof p, mdir, "link.bin");
    if (symlink("../outside.bin", p) != 0) return -1;
    path_in(p, sizeof p, mdir, "inlink.bin");
    if (symlink("data.bin", p) != 0) return -1;
    path_in(p, sizeof p, mdir, "dirlink");
    if (symlink("sub", p) != 0) return -1;
    return 0;
}

/* ---- E-10: the spelling of a location ---- */

static const char *problem(const char *s, size_t n) {
    oc_str loc = {s, n};
    return oc__location_problem(&loc);
}
#define PROBLEM(lit) problem((lit), sizeof(lit) - 1)

static void test_e10_spelling(void) {
    /* accepted: relative names beneath the directory, dots that are not a component */
    CHECK(PROBLEM("data.bin") == NULL);
    CHECK(PROBLEM("sub/inner.bin") == NULL);
    CHECK(PROBLEM("./data.bin") == NULL);
    CHECK(PROBLEM("a..b") == NULL);
    CHECK(PROBLEM("..data") == NULL);
    CHECK(PROBLEM("sub/...") == NULL);
    /* refused, each with its reason */
    const char *why;
    CHECK((why = PROBLEM("")) && strcmp(why, "is empty") == 0);
    CHECK((why = PROBLEM("da\0ta.bin")) && strcmp(why, "contains a NUL byte") == 0);
    CHECK((why = PROBLEM("/etc/passwd")) && strcmp(why, "is an absolute path") == 0);
    CHECK((why = PROBLEM("../outside.bin")) && strstr(why, "(..)"));
    CHECK((why = PROBLEM("sub/../../outside.bin")) && strstr(why, "(..)"));
    CHECK((why = PROBLEM("sub/..")) && strstr(why, "(..)"));
    CHECK((why = PROBLEM("..")) && strstr(why, "(..)"));
    CHECK((why = PROBLEM("sub/")) && strcmp(why, "names a directory") == 0);
    CHECK((why = PROBLEM(".")) && strcmp(why, "names a directory") == 0);
    CHECK((why = PROBLEM("sub/.")) && strcmp(why, "names a directory") == 0);
}

/* ---- E-11: beneath the directory, no symbolic link ---- */

static void test_e11_beneath(void) {
    int dirfd = open(mdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(dirfd >= 0);
    if (dirfd < 0) return;
    char buf[16];
    /* accepted: a file, and one in a subdirectory, read through the descriptor */
    int fd = oc__open_beneath(dirfd, "data.bin", OC__READ_FLAGS);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_EQ(read(fd, buf, 8), 8);
        CHECK(memcmp(buf, "DATA0123", 8) == 0);
        close(fd);
    }
    fd = oc__open_beneath(dirfd, "sub/inner.bin", OC__READ_FLAGS);
    CHECK(fd >= 0);
    if (fd >= 0) {
        CHECK_EQ(read(fd, buf, 8), 8);
        CHECK(memcmp(buf, "INNER567", 8) == 0);
        close(fd);
    }
    fd = oc__open_beneath(dirfd, "./sub/inner.bin", O_PATH | O_CLOEXEC);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    /* refused: a symbolic link at the end (out of the directory, or even within it) and
     * on the way, whatever it points at */
    static const char *const links[] = {"link.bin", "inlink.bin", "dirlink/inner.bin"};
    for (unsigned i = 0; i < sizeof links / sizeof links[0]; i++) {
        errno = 0;
        fd = oc__open_beneath(dirfd, links[i], OC__READ_FLAGS);
        CHECK(fd < 0);
        if (fd >= 0)
            close(fd);
        else if (!CHECK(errno == ELOOP || errno == EXDEV))
            fprintf(stderr, "  %s: errno %d (%s)\n", links[i], errno, strerror(errno));
    }
    /* A missing file is not a safety refusal: ENOENT, so the caller says "cannot open". */
    errno = 0;
    CHECK(oc__open_beneath(dirfd, "missing.bin", OC__READ_FLAGS) < 0);
    CHECK_EQ(errno, ENOENT);
    close(dirfd);
}

/* ---- E-18: the type checked before any open ---- */

static void test_e18_regular_only(void) {
    int dirfd = open(mdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    CHECK(dirfd >= 0);
    if (dirfd < 0) return;
    struct stat st;
    const char *why;
    /* accepted: a regular file, reopened for reading, the same inode */
    int pfd = oc__open_beneath(dirfd, "data.bin", O_PATH | O_CLOEXEC);
    CHECK(pfd >= 0);
    int fd = pfd < 0 ? -1 : oc__reopen_regular(pfd, dirfd, "data.bin", NULL, &st, &why);
    CHECK(fd >= 0);
    if (fd >= 0) {
        struct stat now;
        CHECK(fstat(fd, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev);
        CHECK(S_ISREG(now.st_mode));
        close(fd);
    }
    if (pfd >= 0) close(pfd);
    /* refused without being opened for reading: a FIFO (opening it would wait for a
     * writer), a directory, and a device (the caller's path, as E-17 allows) */
    static const char *const odd[] = {"fifo", "sub"};
    for (unsigned i = 0; i < sizeof odd / sizeof odd[0]; i++) {
        pfd = oc__open_beneath(dirfd, odd[i], O_PATH | O_CLOEXEC);
        CHECK(pfd >= 0);
        why = NULL;
        fd = pfd < 0 ? -1 : oc__reopen_regular(pfd, dirfd, odd[i], NULL, &st, &why);
        CHECK(fd < 0);
        CHECK(why && strcmp(why, "is not a regular file") == 0);
        if (fd >= 0) close(fd);
        if (pfd >= 0) close(pfd);
    }
    pfd = open("/dev/null", O_PATH | O_CLOEXEC);
    CHECK(pfd >= 0);
    why = NULL;
    fd = pfd < 0 ? -1 : oc__reopen_regular(pfd, -1, NULL, "/dev/null", &st, &why);
    CHECK(fd < 0);
    CHECK(why && strcmp(why, "is not a regular file") == 0);
    if (pfd >= 0) close(pfd);
    close(dirfd);
}

/* ---- through a load: the link count (E-11) and the caller's own file (E-17) ---- */

/* A model with one EXTERNAL tensor "W" of 8 bytes at `location`. */
static oc_model *external_model(const char *location) {
    oc_model *model = oc_model_new();
    if (!model) return NULL;
    oc_arena *a = oc_model_arena(model);
    onnx_ModelProto *m = oc_model_proto(model);
    onnx_GraphProto *g = m->graph = OC_NEW(a, GraphProto);
    onnx_TensorProto *t = g ? OC_ADD(a, TensorProto, g->initializer) : NULL;
    if (!t) {
        oc_model_free(model);
        return NULL;
    }
    oc_str_set_cstr(a, &t->name, "W");
    OC_SET_HAS(TensorProto, t, name);
    t->data_location = 1;
    OC_SET_HAS(TensorProto, t, data_location);
    static const char *const keys[] = {"location", "length"};
    const char *values[] = {location, "8"};
    for (unsigned i = 0; i < 2; i++) {
        onnx_StringStringEntryProto *e = OC_ADD(a, StringStringEntryProto, t->external_data);
        if (!e) continue;
        oc_str_set_cstr(a, &e->key, keys[i]);
        oc_str_set_cstr(a, &e->value, values[i]);
        OC_SET_HAS(StringStringEntryProto, e, key);
        OC_SET_HAS(StringStringEntryProto, e, value);
    }
    return model;
}

/* Loads `location`'s model against mdir (opts->location = override when not NULL):
 * the status, the error in err, and on success the tensor's first 8 bytes in got. */
static oc_status load(const char *location, const char *override, oc_error *err, char got[8]) {
    oc_model *model = external_model(location);
    CHECK(model != NULL);
    if (!model) return OC_ERR_NOMEM;
    oc_parse_options po;
    oc_parse_options_init(&po);
    po.location = override;
    onnx_ModelProto *m = oc_model_proto(model);
    oc_status st = oc_external_data_load(&onnx_ModelProto_desc, m, mdir, &po, err);
    if (st == OC_OK) {
        const onnx_TensorProto *t = m->graph->initializer.items[0];
        CHECK_EQ(t->raw_data.size, 8);
        if (t->raw_data.size == 8) memcpy(got, t->raw_data.data, 8);
        CHECK(!oc_tensor_is_external(t));
    }
    oc_model_free(model);
    return st;
}

static void test_load_rules(void) {
    oc_error err;
    char got[8], p[2048];
    /* E-11 accepted: a file with one link */
    CHECK_OK(load("data.bin", NULL, &err, got), &err);
    CHECK(memcmp(got, "DATA0123", 8) == 0);
    /* E-11 refused: a second hard link (could bring a file from elsewhere inside) */
    CHECK_STATUS(load("hard.bin", NULL, &err, got), OC_ERR_UNSAFE_PATH, &err);
    CHECK(strstr(err.message, "several hard links") != NULL);
    /* E-11 refused: a symbolic link, named in the message */
    CHECK_STATUS(load("link.bin", NULL, &err, got), OC_ERR_UNSAFE_PATH, &err);
    CHECK(strstr(err.message, "symbolic link") != NULL);
    /* E-10 refused through the load, the tensor named, nothing opened */
    CHECK_STATUS(load("../outside.bin", NULL, &err, got), OC_ERR_UNSAFE_PATH, &err);
    CHECK(strstr(err.message, "tensor 'W'") && strstr(err.message, "(..)"));
    /* E-18 refused through the load: a FIFO, without waiting for a writer */
    CHECK_STATUS(load("fifo", NULL, &err, got), OC_ERR_UNSAFE_PATH, &err);
    CHECK(strstr(err.message, "is not a regular file") != NULL);
    /* E-17 accepted: the caller's own file is trusted, though it is outside the directory
     * and reached through a symbolic link; and so is its hard-linked file */
    path_in(p, sizeof p, mdir, "link.bin");
    CHECK_OK(load("whatever.bin", p, &err, got), &err);
    CHECK(memcmp(got, "OUTSIDE!", 8) == 0);
    path_in(p, sizeof p, mdir, "hard.bin");
    CHECK_OK(load("whatever.bin", p, &err, got), &err);
    CHECK(memcmp(got, "HARDLINK", 8) == 0);
    /* E-17 + E-18 refused: the caller's file is still checked for its type */
    path_in(p, sizeof p, mdir, "sub");
    CHECK_STATUS(load("whatever.bin", p, &err, got), OC_ERR_UNSAFE_PATH, &err);
    CHECK(strstr(err.message, "is not a regular file") != NULL);
}

/* ---- E-23: the location a save writes ---- */

static void test_e23_written(void) {
    char model_path[2048], data_path[2048], abs_loc[2048];
    oc_error err;
    path_in(model_path, sizeof model_path, root, "w/model.onnx");
    path_in(data_path, sizeof data_path, root, "w");
    CHECK(mkdir(data_path, 0755) == 0);
    oc_model *model = oc_model_new();
    CHECK(model != NULL);
    if (!model) return;
    oc_arena *a = oc_model_arena(model);
    onnx_ModelProto *m = oc_model_proto(model);
    m->graph = OC_NEW(a, GraphProto);
    onnx_TensorProto *t = m->graph ? OC_ADD(a, TensorProto, m->graph->initializer) : NULL;
    CHECK(t != NULL);
    if (!t) {
        oc_model_free(model);
        return;
    }
    static uint8_t bytes[2048];
    memset(bytes, 0x5a, sizeof bytes);
    oc_str_set_cstr(a, &t->name, "W");
    OC_SET_HAS(TensorProto, t, name);
    oc_bytes_set_borrowed(&t->raw_data, bytes, sizeof bytes);
    OC_SET_HAS(TensorProto, t, raw_data);
    oc_serialize_options so;
    oc_serialize_options_init(&so);
    /* refused: a `..` location, before anything is written */
    so.external_data = "../escape.bin";
    CHECK_STATUS(oc_model_save_file(model, model_path, &so, &err), OC_ERR_INVALID_ARG, &err);
    CHECK(strstr(err.message, "(..)") != NULL);
    struct stat st;
    CHECK(stat(model_path, &st) != 0);
    path_in(data_path, sizeof data_path, root, "escape.bin");
    CHECK(stat(data_path, &st) != 0);
    /* accepted: an absolute location, written beside the model under its file name */
    path_in(abs_loc, sizeof abs_loc, root, "elsewhere/w.bin");
    so.external_data = abs_loc;
    CHECK_OK(oc_model_save_file(model, model_path, &so, &err), &err);
    path_in(data_path, sizeof data_path, root, "w/w.bin");
    CHECK(stat(data_path, &st) == 0 && st.st_size == (off_t)sizeof bytes);
    path_in(data_path, sizeof data_path, root, "elsewhere");
    CHECK(stat(data_path, &st) != 0);
    oc_model_free(model);
}

#if defined(__linux__) && defined(SYS_openat2)
/* Makes the kernel answer ENOSYS to openat2 for this process, as kernels before 5.6 do. */
static int refuse_openat2(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}
#endif

int main(int argc, char **argv) {
    const char *base = NULL;
    int no_openat2 = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-openat2") == 0)
            no_openat2 = 1;
        else
            base = argv[i];
    }
    if (no_openat2) {
#if defined(__linux__) && defined(SYS_openat2)
        if (refuse_openat2() != 0) {
            perror("seccomp");
            return 1;
        }
#else
        fprintf(stderr, "no openat2 here: the fallback is the only path\n");
#endif
    }
    if (make_tree(base) != 0) {
        perror("test_path_safety: fixture");
        return 1;
    }
    test_e10_spelling();
    test_e11_beneath();
    test_e18_regular_only();
    test_load_rules();
    test_e23_written();
    td_remove(root);
    return check_report(no_openat2 ? "test_path_safety --no-openat2" : "test_path_safety");
}
