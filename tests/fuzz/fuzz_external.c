/*
 * tests/fuzz/fuzz_external.c - loading a model file whose tensors name external data.
 *
 * The input is written as model.onnx into a directory the harness builds once per process
 * (mkdtemp), beside fixed files of known, distinct contents:
 *
 *   ROOT/outside.bin         a canary outside the model directory
 *   ROOT/outside-hard.bin    hard-linked into the model directory as hard.bin
 *   ROOT/outdir/secret.bin   a file in a directory outside
 *   ROOT/m/model.onnx        the input
 *   ROOT/m/data.bin          4096 bytes, ROOT/m/empty.bin 0 bytes
 *   ROOT/m/sub/inner.bin     256 bytes in a subdirectory
 *   ROOT/m/link.bin -> ../outside.bin, abslink.bin -> ROOT/outside.bin,
 *   ROOT/m/inlink.bin -> data.bin, dirlink -> sub, outlink -> ../outdir (symbolic links)
 *   ROOT/m/hard.bin          a second name of outside-hard.bin
 *   ROOT/m/fifo              a FIFO (opening it for reading without O_NONBLOCK would hang)
 *
 * Each input is loaded with oc_model_load_file, external data on, with a copy, with
 * no_copy and with use_pread (alignment, threads and checksum verification vary with a
 * hash of the input), then from memory with data_dir, and once with skip_external_data.
 * The use_pread load must agree with the mapped copy load in everything, errors included. The harness predicts
 * each outcome from spec/external-data.md on its own (its own decode, its own walk of the
 * fixture tree, its own SHA-1): the status must be the predicted one, and a successful
 * load must give every formerly external tensor exactly the predicted bytes of a file
 * inside the model directory. Bytes from outside it, or from a file that should have been
 * refused, or a load that hangs, are violations.
 *
 * ONNXZ_FUZZ_NO_OPENAT2=1 in the environment makes the kernel refuse openat2 (seccomp,
 * ENOSYS), so that the library's fallback path (one openat per component) is fuzzed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- SHA-1 (FIPS 180-4), our own, to predict checksum results ---- */

static uint32_t rol(uint32_t x, unsigned n) { return (x << n) | (x >> (32 - n)); }

static void sha1_block(uint32_t h[5], const uint8_t *p) {
    uint32_t w[80];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; i++) w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; i++) {
        uint32_t f, k;
        if (i < 20)
            f = (b & c) | (~b & d), k = 0x5a827999;
        else if (i < 40)
            f = b ^ c ^ d, k = 0x6ed9eba1;
        else if (i < 60)
            f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
        else
            f = b ^ c ^ d, k = 0xca62c1d6;
        uint32_t t = rol(a, 5) + f + e + k + w[i];
        e = d, d = c, c = rol(b, 30), b = a, a = t;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e;
}

static void sha1_hex(const uint8_t *data, uint64_t n, char out[41]) {
    uint32_t h[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
    uint64_t i = 0;
    for (; n - i >= 64; i += 64) sha1_block(h, data + i);
    uint8_t tail[128] = {0};
    uint64_t r = n - i;
    if (r) memcpy(tail, data + i, (size_t)r);
    tail[r] = 0x80;
    uint64_t len = r < 56 ? 64 : 128, bits = n * 8;
    for (int k = 0; k < 8; k++) tail[len - 1 - (uint64_t)k] = (uint8_t)(bits >> (8 * k));
    sha1_block(h, tail);
    if (len == 128) sha1_block(h, tail + 64);
    static const char hex[] = "0123456789abcdef";
    for (int k = 0; k < 20; k++) {
        uint8_t byte = (uint8_t)(h[k / 4] >> (24 - 8 * (k % 4)));
        out[2 * k] = hex[byte >> 4];
        out[2 * k + 1] = hex[byte & 15];
    }
    out[40] = '\0';
}

/* ---- the fixture ---- */

enum node_kind { N_DIR, N_FILE, N_LINK, N_FIFO, N_HARDLINKED };

typedef struct node {
    const char *path; /* relative to the model directory */
    enum node_kind kind;
    uint8_t *content; /* N_FILE */
    uint64_t size;
} node;

#define DATA_SIZE    4096u
#define INNER_SIZE   256u
#define OUTSIDE_SIZE 4096u

static uint8_t data_bin[DATA_SIZE], inner_bin[INNER_SIZE], outside_bin[OUTSIDE_SIZE];
static node nodes[] = {
    {"model.onnx", N_FILE, NULL, 0}, /* content: the current input */
    {"data.bin", N_FILE, data_bin, DATA_SIZE},
    {"empty.bin", N_FILE, NULL, 0},
    {"sub", N_DIR, NULL, 0},
    {"sub/inner.bin", N_FILE, inner_bin, INNER_SIZE},
    {"link.bin", N_LINK, NULL, 0},
    {"abslink.bin", N_LINK, NULL, 0},
    {"inlink.bin", N_LINK, NULL, 0},
    {"dirlink", N_LINK, NULL, 0},
    {"outlink", N_LINK, NULL, 0},
    {"hard.bin", N_HARDLINKED, NULL, 0},
    {"fifo", N_FIFO, NULL, 0},
};
#define NNODES (sizeof nodes / sizeof nodes[0])

static char root[PATH_MAX], mdir[PATH_MAX], model_path[PATH_MAX];

static char *join(char *buf, const char *a, const char *b) {
    int n = snprintf(buf, PATH_MAX, "%s/%s", a, b);
    FUZZ_CHECK(n > 0 && n < PATH_MAX, "path too long");
    return buf;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_fixture(void) {
    if (root[0]) nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    root[0] = '\0';
}

/* Fixtures of processes that died (a crash skips atexit): onnxz-fuzz-external-PID-XXXXXX
 * whose PID is gone. */
static void remove_stale_fixtures(const char *tmp) {
    DIR *d = opendir(tmp);
    if (!d) return;
    struct dirent *e;
    static const char prefix[] = "onnxz-fuzz-external-";
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, sizeof prefix - 1) != 0) continue;
        char *endp;
        long pid = strtol(e->d_name + sizeof prefix - 1, &endp, 10);
        if (pid <= 0 || *endp != '-' || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", tmp, e->d_name) < (int)sizeof path)
            nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    closedir(d);
}

#if defined(__linux__) && defined(SYS_openat2)
/* Makes openat2 fail with ENOSYS in this process, as on kernels before 5.6. */
static void refuse_openat2(void) {
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    FUZZ_CHECK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0, "PR_SET_NO_NEW_PRIVS: %s",
               strerror(errno));
    FUZZ_CHECK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0, "seccomp: %s",
               strerror(errno));
}
#endif

static void setup(void) {
    static int done;
    if (done) return;
    done = 1;
    const char *env = getenv("ONNXZ_FUZZ_NO_OPENAT2");
    if (env && *env && strcmp(env, "0") != 0) {
#if defined(__linux__) && defined(SYS_openat2)
        refuse_openat2();
#endif
    }
    for (unsigned i = 0; i < DATA_SIZE; i++) data_bin[i] = (uint8_t)(i * 31u + 7u);
    for (unsigned i = 0; i < INNER_SIZE; i++) inner_bin[i] = (uint8_t)(i ^ 0x5au);
    for (unsigned i = 0; i < OUTSIDE_SIZE; i++) outside_bin[i] = (uint8_t)(0xeeu - i * 13u);

    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    remove_stale_fixtures(tmp);
    snprintf(root, sizeof root, "%s/onnxz-fuzz-external-%ld-XXXXXX", tmp, (long)getpid());
    FUZZ_CHECK(mkdtemp(root) != NULL, "mkdtemp %s: %s", root, strerror(errno));
    atexit(remove_fixture);
    fuzz_on_fail = remove_fixture;
    char p[PATH_MAX], q[PATH_MAX];
    join(mdir, root, "m");
    join(model_path, mdir, "model.onnx");
    FUZZ_CHECK(mkdir(mdir, 0755) == 0, "mkdir");
    FUZZ_CHECK(mkdir(join(p, root, "outdir"), 0755) == 0, "mkdir");
    fuzz_write_file(join(p, root, "outside.bin"), outside_bin, OUTSIDE_SIZE);
    fuzz_write_file(join(p, root, "outdir/secret.bin"), outside_bin, OUTSIDE_SIZE);
    fuzz_write_file(join(p, root, "outside-hard.bin"), outside_bin, OUTSIDE_SIZE);
    fuzz_write_file(model_path, NULL, 0);
    fuzz_write_file(join(p, mdir, "data.bin"), data_bin, DATA_SIZE);
    fuzz_write_file(join(p, mdir, "empty.bin"), NULL, 0);
    FUZZ_CHECK(mkdir(join(p, mdir, "sub"), 0755) == 0, "mkdir");
    fuzz_write_file(join(p, mdir, "sub/inner.bin"), inner_bin, INNER_SIZE);
    FUZZ_CHECK(symlink("../outside.bin", join(p, mdir, "link.bin")) == 0, "symlink");
    FUZZ_CHECK(symlink(join(q, root, "outside.bin"), join(p, mdir, "abslink.bin")) == 0, "symlink");
    FUZZ_CHECK(symlink("data.bin", join(p, mdir, "inlink.bin")) == 0, "symlink");
    FUZZ_CHECK(symlink("sub", join(p, mdir, "dirlink")) == 0, "symlink");
    FUZZ_CHECK(symlink("../outdir", join(p, mdir, "outlink")) == 0, "symlink");
    FUZZ_CHECK(link(join(q, root, "outside-hard.bin"), join(p, mdir, "hard.bin")) == 0, "link: %s",
               strerror(errno));
    FUZZ_CHECK(mkfifo(join(p, mdir, "fifo"), 0644) == 0, "mkfifo");
}

/* ---- the prediction ---- */

/* What opening a location beneath the model directory gives (E-10, E-11). */
typedef struct resolved {
    oc_status st;  /* OC_OK: file below */
    oc_status alt; /* another acceptable status, or OC_OK */
    const node *file;
} resolved;

static const node *find_node(const char *path, size_t n) {
    for (size_t i = 0; i < NNODES; i++)
        if (strlen(nodes[i].path) == n && memcmp(nodes[i].path, path, n) == 0) return &nodes[i];
    return NULL;
}

static resolved resolve(const oc_str *loc) {
    resolved r = {OC_ERR_UNSAFE_PATH, OC_OK, NULL};
    const char *s = loc->data;
    uint64_t n = loc->size;
    /* E-10: relative, non-empty, no NUL, no `..` component, not ending in '/'; a last
     * component "." names a directory (E-11), whether or not the one before it exists */
    if (n == 0 || memchr(s, '\0', (size_t)n) || s[0] == '/' || s[n - 1] == '/') return r;
    if (s[n - 1] == '.' && (n == 1 || s[n - 2] == '/')) return r;
    for (uint64_t i = 0; i < n;) {
        uint64_t j = i;
        while (j < n && s[j] != '/') j++;
        if (j - i == 2 && s[i] == '.' && s[i + 1] == '.') return r;
        i = j + 1;
    }
    if (n >= PATH_MAX) { /* ENAMETOOLONG before any lookup; a walk one component at a
                          * time (the fallback of E-11) may find a missing one first */
        r.st = OC_ERR_IO;
        r.alt = OC_ERR_NOT_FOUND;
        return r;
    }
    /* E-11: walk the fixture; the current node is always a directory ("" = the top). */
    char cur[PATH_MAX] = "";
    size_t curlen = 0;
    const node *last = NULL; /* NULL with cur: a directory */
    for (uint64_t i = 0; i < n;) {
        uint64_t j = i;
        while (j < n && s[j] != '/') j++;
        uint64_t clen = j - i;
        if (clen == 0) { /* "a//b" */
            i = j + 1;
            continue;
        }
        if (last) { /* a component after a non-directory */
            r.st = OC_ERR_IO;
            return r;
        }
        if (clen > NAME_MAX) {
            r.st = OC_ERR_IO;
            return r;
        }
        if (!(clen == 1 && s[i] == '.')) {
            char path[PATH_MAX];
            int pn =
                snprintf(path, sizeof path, "%s%s%.*s", cur, curlen ? "/" : "", (int)clen, s + i);
            const node *nd = find_node(path, (size_t)pn);
            if (!nd) {
                r.st = OC_ERR_NOT_FOUND;
                return r;
            }
            if (nd->kind == N_LINK) return r; /* ELOOP: unsafe */
            if (nd->kind == N_DIR) {
                memcpy(cur, path, (size_t)pn + 1);
                curlen = (size_t)pn;
            } else {
                last = nd;
            }
        }
        i = j + 1;
    }
    if (!last || last->kind != N_FILE) return r; /* a directory, FIFO or hard link: unsafe */
    r.st = OC_OK;
    r.file = last;
    return r;
}

/* The last value of a key (E-2). */
static const oc_str *ext_value(const onnx_TensorProto *t, const char *key) {
    const oc_str *v = NULL;
    size_t kn = strlen(key);
    for (uint64_t i = 0; i < t->external_data.count; i++) {
        const onnx_StringStringEntryProto *e = t->external_data.items[i];
        if (e->key.size == kn && memcmp(e->key.data, key, kn) == 0) v = &e->value;
    }
    return v;
}

/* E-12: 1 to 19 decimal digits, at most 2^63 - 1. */
static int parse_u63(const oc_str *s, uint64_t *out) {
    if (s->size < 1 || s->size > 19) return 0;
    uint64_t v = 0;
    for (uint64_t i = 0; i < s->size; i++) {
        if (s->data[i] < '0' || s->data[i] > '9') return 0;
        v = v * 10 + (uint64_t)(s->data[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX) return 0;
    *out = v;
    return 1;
}

typedef struct opened {
    oc_str key;
    resolved r;
} opened;

typedef struct tensor_expect {
    int external;
    const uint8_t *bytes; /* the bytes the tensor must end up with */
    uint64_t size;
} tensor_expect;

typedef struct predictor {
    int no_copy, verify;
    uint64_t align;
    oc_status st;  /* the first failure, or OC_OK */
    oc_status alt; /* another acceptable failure, or OC_OK */
    const char *why;
    oc_status sum_st; /* the first checksum failure (E-15: checked after the rest) */
    const char *sum_why;
    tensor_expect *t;
    uint64_t n, cap;
    opened files[64];
    unsigned nfiles;
} predictor;

static void predict_fail(predictor *p, oc_status st, oc_status alt, const char *why) {
    if (p->st == OC_OK) {
        p->st = st;
        p->alt = alt;
        p->why = why;
    }
}

static void predict_sum_fail(predictor *p, oc_status st, const char *why) {
    if (p->sum_st == OC_OK) {
        p->sum_st = st;
        p->sum_why = why;
    }
}

static oc_status predict_tensor(void *ctx, onnx_TensorProto *t) {
    predictor *p = ctx;
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 16;
        p->t = realloc(p->t, (size_t)p->cap * sizeof *p->t);
        FUZZ_CHECK(p->t != NULL, "out of memory");
    }
    tensor_expect *x = &p->t[p->n++];
    memset(x, 0, sizeof *x);
    x->bytes = t->raw_data.data;
    x->size = t->raw_data.size;
    if (p->st != OC_OK) return OC_OK; /* the load fails before; keep counting tensors */
    if (!(OC_HAS(TensorProto, t, data_location) && t->data_location == 1)) return OC_OK;
    x->external = 1;
    const oc_str *loc = ext_value(t, "location");
    if (!loc) {
        predict_fail(p, OC_ERR_MALFORMED, OC_OK, "no location");
        return OC_OK;
    }
    /* E-12: offset and length are read before the data file is opened. */
    uint64_t offset = 0, length = 0;
    const oc_str *o = ext_value(t, "offset"), *l = ext_value(t, "length");
    if ((o && !parse_u63(o, &offset)) || (l && !parse_u63(l, &length))) {
        predict_fail(p, OC_ERR_MALFORMED, OC_OK, "offset or length");
        return OC_OK;
    }
    resolved r;
    unsigned i = 0;
    while (i < p->nfiles &&
           !(p->files[i].key.size == loc->size &&
             (loc->size == 0 || memcmp(p->files[i].key.data, loc->data, (size_t)loc->size) == 0)))
        i++;
    if (i < p->nfiles) {
        r = p->files[i].r;
    } else {
        r = resolve(loc);
        if (p->nfiles < sizeof p->files / sizeof p->files[0])
            p->files[p->nfiles++] = (opened){*loc, r};
    }
    if (r.st != OC_OK) {
        predict_fail(p, r.st, r.alt, "location");
        return OC_OK;
    }
    uint64_t fsize = r.file->size;
    if (offset > fsize) {
        predict_fail(p, OC_ERR_TRUNCATED, OC_OK, "offset past the end");
        return OC_OK;
    }
    if (!l) length = fsize - offset;
    if (length > fsize - offset) {
        predict_fail(p, OC_ERR_TRUNCATED, OC_OK, "length past the end");
        return OC_OK;
    }
    /* E-14: the mapping is page-aligned, so the offset decides (empty: nothing to align). */
    if (p->no_copy && p->align > 1 && length && offset % p->align) {
        predict_fail(p, OC_ERR_INCONSISTENT, OC_OK, "misaligned for no_copy");
        return OC_OK;
    }
    x->bytes = length ? r.file->content + offset : NULL;
    x->size = length;
    const oc_str *want = ext_value(t, "checksum");
    if (p->verify && want) {
#ifdef FUZZ_HAVE_SHA1
        char got[41];
        sha1_hex(x->bytes ? x->bytes : (const uint8_t *)"", length, got);
        int same = want->size == 40;
        for (unsigned k = 0; same && k < 40; k++) {
            char c = want->data[k];
            if (c >= 'A' && c <= 'F') c = (char)(c - 'A' + 'a');
            same = c == got[k];
        }
        if (!same) predict_sum_fail(p, OC_ERR_CHECKSUM, "checksum");
#else
        predict_sum_fail(p, OC_ERR_UNSUPPORTED, "checksum without OpenSSL");
#endif
    }
    return OC_OK;
}

/* After the walk: checksums are the last check of a load (E-15), so the first checksum
 * failure counts only when every reference passed everything else. */
static void predict_checksums(predictor *p) {
    if (p->sum_st != OC_OK) predict_fail(p, p->sum_st, OC_OK, p->sum_why);
}

/* ---- checking a load ---- */

typedef struct verifier {
    const predictor *p;
    uint64_t i;
    int no_copy;
    uint64_t align;
} verifier;

/* True when the span's first bytes occur in the canary outside the model directory. */
static int from_outside(const oc_bytes *b) {
    uint64_t n = b->size < 16 ? b->size : 16;
    return n >= 4 && memmem(outside_bin, OUTSIDE_SIZE, b->data, (size_t)n) != NULL;
}

static oc_status verify_tensor(void *ctx, onnx_TensorProto *t) {
    verifier *v = ctx;
    FUZZ_CHECK(v->i < v->p->n, "the loaded model has more tensors than the file");
    const tensor_expect *x = &v->p->t[v->i++];
    const oc_bytes *b = &t->raw_data;
    FUZZ_CHECK(b->size == x->size &&
                   (x->size == 0 || memcmp(b->data, x->bytes, (size_t)x->size) == 0),
               "tensor %llu (%s): %llu bytes loaded, expected %llu%s",
               (unsigned long long)(v->i - 1), x->external ? "external" : "inline",
               (unsigned long long)b->size, (unsigned long long)x->size,
               from_outside(b) ? " (the loaded bytes come from OUTSIDE the model directory)" : "");
    if (!x->external) return OC_OK;
    int known_left = 0; /* E-16 removes the keys of E-1; E-3 keeps every other key */
    for (uint64_t k = 0; k < t->external_data.count; k++)
        known_left += oc_external_key_is_known(&t->external_data.items[k]->key);
    FUZZ_CHECK(OC_HAS(TensorProto, t, raw_data) && !OC_HAS(TensorProto, t, data_location) &&
                   known_left == 0,
               "a loaded tensor is not back in its form before its bytes were moved out (E-16)");
    if (v->no_copy) {
        FUZZ_CHECK(b->size == 0 || b->mode == OC_BYTES_SHARED,
                   "no_copy external tensor not shared (mode %d)", (int)b->mode);
    } else {
        uint64_t a = v->align > 64 ? v->align : 64;
        FUZZ_CHECK(b->mode == OC_BYTES_OWNED && (b->size == 0 || (uintptr_t)b->data % a == 0),
                   "copied external tensor not an owned buffer aligned to %llu",
                   (unsigned long long)a);
    }
    return OC_OK;
}

/* Checks a load against the prediction; returns the model's encoding (empty on failure). */
static fuzz_buf check_load(const char *what, oc_status st, const oc_error *err, oc_model *m,
                           const predictor *p, const oc_parse_options *po) {
    fuzz_buf none = {NULL, 0};
    if (p->st != OC_OK) {
        FUZZ_CHECK(st == p->st || (p->alt != OC_OK && st == p->alt),
                   "%s: expected %s (%s), got %s: %s", what, oc_status_name(p->st), p->why,
                   oc_status_name(st), st == OC_OK ? "(loaded)" : err->message);
    } else {
        FUZZ_CHECK(st == OC_OK, "%s: expected success, got %s: %s", what, oc_status_name(st),
                   err->message);
    }
    if (st != OC_OK) {
        fuzz_check_error(st, err, UINT64_MAX);
        if (st == OC_ERR_IO)
            FUZZ_CHECK(err->sys_errno != 0, "%s: I/O error without errno: %s", what, err->message);
        FUZZ_CHECK(m == NULL, "%s: failed load left a model", what);
        return none;
    }
    verifier v = {p, 0, po->no_copy && !po->use_pread, po->buffer.alignment};
    oc_status vs =
        oc_msg_visit_tensors(&onnx_ModelProto_desc, oc_model_proto(m), verify_tensor, &v);
    FUZZ_CHECK(vs == OC_OK && v.i == p->n, "%s: %llu tensors loaded, %llu in the file", what,
               (unsigned long long)v.i, (unsigned long long)p->n);
    fuzz_span_rules rules = {po->no_copy, NULL, NULL, po->no_copy, 0, 0};
    return fuzz_check_roundtrip(&onnx_ModelProto_desc, oc_model_proto(m), po, &rules);
}

/* The loads of one input: variant 0 copy, 1 no_copy, 2 from memory with data_dir, 3 with
 * use_pread (which must agree with the copy load in everything, errors included). */
enum { V_COPY, V_NO_COPY, V_MEMORY, V_PREAD, NVARIANTS };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    setup();
    fuzz_write_file(model_path, data, size);
    nodes[0].content = (uint8_t *)(uintptr_t)data;
    nodes[0].size = size;

    uint64_t h = fuzz_hash(data, size);
    static const uint64_t aligns[4] = {0, 16, 64, 4096};
    oc_parse_options base = OC_PARSE_OPTIONS_INIT;
    base.num_threads = (h & 1) ? 2 : 0;
    base.buffer.alignment = aligns[(h >> 1) & 3];
    base.verify_checksums = (int)((h >> 3) & 1);

    /* Our own decode: the model the library will see, and the prediction. */
    oc_arena *arena = oc_arena_new();
    FUZZ_CHECK(arena != NULL, "out of memory");
    void *msg = oc_msg_new(arena, &onnx_ModelProto_desc);
    FUZZ_CHECK(msg != NULL, "out of memory");
    oc_error derr;
    oc_error_clear(&derr);
    oc_status dst = oc_decode(&onnx_ModelProto_desc, msg, data, size, arena, NULL, NULL, &derr);
    fuzz_buf inline_enc = {NULL, 0};
    if (dst == OC_OK) inline_enc = fuzz_encode(&onnx_ModelProto_desc, msg);

    fuzz_buf copy_enc = {NULL, 0};
    oc_error copy_err;
    oc_status copy_st = OC_OK;
    for (int variant = 0; variant < NVARIANTS; variant++) {
        oc_parse_options po = base;
        po.no_copy = variant == V_NO_COPY || (variant == V_MEMORY && (h & 16));
        po.use_pread = variant == V_PREAD;
        predictor p;
        memset(&p, 0, sizeof p);
        p.no_copy = po.no_copy;
        p.verify = po.verify_checksums;
        p.align = po.buffer.alignment;
        if (dst != OC_OK) {
            p.st = dst;
            p.why = "the model does not decode";
        } else {
            oc_msg_visit_tensors(&onnx_ModelProto_desc, msg, predict_tensor, &p);
            predict_checksums(&p);
        }
        oc_model *m = NULL;
        oc_error err;
        oc_error_clear(&err);
        oc_status st;
        static const char *const names[NVARIANTS] = {
            "oc_model_load_file (copy)", "oc_model_load_file (no_copy)",
            "oc_model_load_memory with data_dir", "oc_model_load_file (use_pread)"};
        const char *what = names[variant];
        if (variant == V_MEMORY) {
            po.data_dir = mdir;
            st = oc_model_load_memory(data, size, &po, &m, &err);
        } else {
            st = oc_model_load_file(model_path, &po, &m, &err);
        }
        if (st != OC_OK && dst != OC_OK)
            FUZZ_CHECK(err.offset == derr.offset, "%s: decode error at %llu, expected %llu (%s)",
                       what, (unsigned long long)err.offset, (unsigned long long)derr.offset,
                       err.message);
        fuzz_buf enc = check_load(what, st, &err, m, &p, &po);
        if (variant == V_COPY) {
            copy_enc = enc;
            copy_st = st;
            copy_err = err;
        } else {
            if (st == OC_OK && copy_st == OC_OK) fuzz_check_same(what, &copy_enc, &enc);
            if (variant == V_PREAD && st != OC_OK)
                FUZZ_CHECK(st == copy_st && err.offset == copy_err.offset,
                           "use_pread: %s at %llu (%s); mapped: %s at %llu (%s)",
                           oc_status_name(st), (unsigned long long)err.offset, err.message,
                           oc_status_name(copy_st), (unsigned long long)copy_err.offset,
                           copy_err.message);
            free(enc.data);
        }
        oc_model_free(m);
        free(p.t);
    }
    free(copy_enc.data);

    /* skip_external_data: the references stay, the load is the plain decode. */
    oc_parse_options po = base;
    po.skip_external_data = 1;
    po.no_copy = (int)((h >> 5) & 1);
    po.use_pread = (int)((h >> 6) & 1);
    oc_model *m = NULL;
    oc_error err;
    oc_error_clear(&err);
    oc_status st = oc_model_load_file(model_path, &po, &m, &err);
    FUZZ_CHECK(st == dst, "skip_external_data%s: %s, plain decode %s",
               po.use_pread ? " (use_pread)" : "", oc_status_name(st), oc_status_name(dst));
    if (st == OC_OK) {
        fuzz_span_rules rules = {0, NULL, NULL, po.no_copy, 0, 0};
        fuzz_buf enc = fuzz_check_roundtrip(&onnx_ModelProto_desc, oc_model_proto(m), &po, &rules);
        fuzz_check_same("skip_external_data load == plain decode", &inline_enc, &enc);
        free(enc.data);
    } else {
        FUZZ_CHECK(err.offset == derr.offset, "skip_external_data: error at %llu, decode at %llu",
                   (unsigned long long)err.offset, (unsigned long long)derr.offset);
    }
    oc_model_free(m);
    free(inline_enc.data);
    oc_arena_free(arena);
    return 0;
}
