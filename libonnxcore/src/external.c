/*
 * external.c - tensors whose bytes live in other files (spec/external-data.md).
 *
 * Loading resolves every EXTERNAL tensor in two passes: the first validates each
 * reference, opens and maps each data file once (safely beneath the model's directory)
 * and checks offsets, lengths, alignment and checksums; only when all of them are good
 * does the second pass attach the bytes, so a failed load leaves the model unchanged.
 *
 * Saving places each large tensor through a sink (oc_encode_external): here the sink
 * writes LOCATION, LOCATION.1, ... through atomic files; libonnxz's sink writes archive
 * entries.
 */
#define _GNU_SOURCE /* syscall() for openat2 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#if defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define OC_HAVE_OPENAT2_H 1
#endif
#endif

#include "onnxcore/external.h"
#include "onnxcore/file.h"
#include "onnxcore/model.h"
#include "onnxcore/nametab.h"
#include "internal/bytes.h"
#include "internal/decode.h"
#include "internal/digest.h"
#include "internal/encode.h"
#include "internal/error.h"
#include "internal/external.h"
#include "internal/parallel.h"
#include "internal/testpoint.h"
#include "onnxcore_shared.h"

/* ---- reading keys ---- */

static const char *const known_keys[] = {"location", "offset", "length", "checksum", "basepath"};

bool oc_external_key_is_known(const oc_str *key) {
    for (size_t i = 0; i < sizeof known_keys / sizeof known_keys[0]; i++)
        if (oc_str_eq(*key, known_keys[i])) return true;
    return false;
}

/* Drops the entries this library manages, keeping the others in order (E-3). */
static void drop_known_keys(onnx_TensorProto *t) {
    uint64_t kept = 0;
    for (uint64_t i = 0; i < t->external_data.count; i++)
        if (!oc_external_key_is_known(&t->external_data.items[i]->key))
            t->external_data.items[kept++] = t->external_data.items[i];
    t->external_data.count = kept;
}

bool oc_tensor_is_external(const onnx_TensorProto *t) {
    return OC_HAS(TensorProto, t, data_location) && t->data_location == 1;
}

const oc_str *oc_tensor_external_value(const onnx_TensorProto *t, const char *key) {
    const oc_str *v = NULL;
    for (uint64_t i = 0; i < t->external_data.count; i++) {
        const onnx_StringStringEntryProto *e = t->external_data.items[i];
        if (oc_str_eq(e->key, key)) v = &e->value;
    }
    return v;
}

/* Strings from a model reach messages only through oc_quote (status.h). */
static const char *qname(const onnx_TensorProto *t, char buf[OC_QUOTE_SIZE]) {
    return oc_quote(t->name.data, t->name.size, buf, OC_QUOTE_SIZE);
}

static const char *qstr(const oc_str *s, char buf[OC_QUOTE_SIZE]) {
    return oc_quote(s->data, s->size, buf, OC_QUOTE_SIZE);
}

/* A decimal offset or length: digits only, at most INT64_MAX (onnx parses them with int()). */
static int parse_u63(const oc_str *s, uint64_t *out) {
    if (!s->size || s->size > 19) return 0;
    uint64_t v = 0;
    for (uint64_t i = 0; i < s->size; i++) {
        char c = s->data[i];
        if (c < '0' || c > '9') return 0;
        v = v * 10 + (uint64_t)(c - '0');
    }
    if (v > (uint64_t)INT64_MAX) return 0;
    *out = v;
    return 1;
}

oc_status oc_tensor_external_range(const onnx_TensorProto *t, uint64_t *offset,
                                   int *has_offset, uint64_t *length, int *has_length,
                                   oc_error *err) {
    if (!t || !offset || !length)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_tensor_external_range: missing argument");
    const oc_str *o = oc_tensor_external_value(t, "offset");
    const oc_str *n = oc_tensor_external_value(t, "length");
    char name[OC_QUOTE_SIZE], text[OC_QUOTE_SIZE];
    *offset = 0;
    *length = 0;
    if (has_offset) *has_offset = o != NULL;
    if (has_length) *has_length = n != NULL;
    if (o && !parse_u63(o, offset))
        return oc__fail(err, OC_ERR_MALFORMED, OC_NO_OFFSET,
                        "tensor '%s': external data offset '%s' is not a non-negative integer "
                        "(E-12)", qname(t, name), qstr(o, text));
    if (n && !parse_u63(n, length))
        return oc__fail(err, OC_ERR_MALFORMED, OC_NO_OFFSET,
                        "tensor '%s': external data length '%s' is not a non-negative integer "
                        "(E-12)", qname(t, name), qstr(n, text));
    return OC_OK;
}

/* ---- path safety ---- */

/* A location from a file must name a file beneath the base directory: relative, no `..`
 * component, no NUL. Returns NULL when fine, else why not. */
static const char *location_problem(const oc_str *loc) {
    if (loc->size == 0) return "is empty";
    if (memchr(loc->data, '\0', (size_t)loc->size)) return "contains a NUL byte";
    if (loc->data[0] == '/') return "is an absolute path";
    const char *p = loc->data, *end = loc->data + loc->size;
    while (p < end) {
        const char *slash = memchr(p, '/', (size_t)(end - p));
        const char *stop = slash ? slash : end;
        if (stop - p == 2 && p[0] == '.' && p[1] == '.') return "leaves the model directory (..)";
        p = slash ? slash + 1 : end;
    }
    if (loc->data[loc->size - 1] == '/') return "names a directory";
    /* the last component "." names the directory it is in (".", "sub/.") */
    if (loc->data[loc->size - 1] == '.' && (loc->size == 1 || loc->data[loc->size - 2] == '/'))
        return "names a directory";
    return NULL;
}

/* How a data file is opened for reading: never blocking (a FIFO), never a terminal. */
#define OC_READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)

/* Opens rel beneath dirfd without following any symbolic link, or returns -1 with errno.
 * flags: OC_READ_FLAGS, or O_PATH | O_CLOEXEC to look at the file without opening it
 * (then a symbolic link as the last component gives a descriptor of the link itself
 * where openat2 is missing: the caller checks the type). */
static int open_beneath(int dirfd, const char *rel, int flags) {
#if defined(OC_HAVE_OPENAT2_H) && defined(SYS_openat2)
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (uint64_t)(unsigned)flags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long r = syscall(SYS_openat2, dirfd, rel, &how, sizeof how);
    if (r >= 0 || (errno != ENOSYS && errno != EPERM)) return (int)r;
#endif
    /* Kernels before 5.6 (or seccomp filters refusing openat2): walk the components,
     * refusing symbolic links at each step. `..` was rejected before we got here. */
    char *copy = strdup(rel);
    if (!copy) return -1;
    int cur = dirfd, result = -1;
    char *save = NULL;
    char *comp = strtok_r(copy, "/", &save);
    while (comp) {
        char *next = strtok_r(NULL, "/", &save);
        int fd;
        if (strcmp(comp, ".") == 0) {
            comp = next;
            continue;
        }
        fd = openat(cur, comp, next ? (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                                    : (flags | O_NOFOLLOW));
        if (fd < 0 && (errno == ENOTDIR || errno == ELOOP)) {
            /* O_DIRECTORY|O_NOFOLLOW on a symlink gives ENOTDIR: say what it really is */
            struct stat lst;
            int e = errno;
            errno = fstatat(cur, comp, &lst, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(lst.st_mode)
                        ? ELOOP : e;
        }
        if (cur != dirfd) {
            int e = errno;
            close(cur);
            errno = e;
        }
        if (fd < 0) {
            cur = dirfd;
            break;
        }
        cur = fd;
        if (!next) result = fd;
        comp = next;
    }
    if (result < 0 && cur != dirfd) close(cur);
    int e = errno;
    free(copy);
    errno = e;
    return result;
}

/* ---- loading ---- */

typedef struct datafile {
    char *key;      /* the location as the model spells it, NUL-terminated */
    uint64_t key_len;
    oc_mapped map;
} datafile;

typedef struct ext_item {
    onnx_TensorProto *tensor;
    const uint8_t *data;
    uint64_t length;
    uint32_t file;
} ext_item;

typedef struct loader {
    const oc_parse_options *opts;
    oc_external_resolve_fn resolve;
    void *resolve_ctx;
    int dirfd;
    const char *base_dir;
    oc_error *err;
    datafile *files;
    uint32_t nfiles, capfiles;
    oc_nametab *file_index; /* location -> files[] (made on first need) */
    ext_item *items;
    uint64_t nitems, capitems;
    oc_str first_location; /* for the `location` override */
    uint64_t total;        /* bytes of external data resolved so far (max_external_bytes) */
} loader;


/* The override path standing for `loc`, when the caller gave one and loc is the first
 * location or one of its numbered parts; else NULL. Caller frees. */
static char *override_path(const loader *l, const oc_str *loc) {
    const char *ov = l->opts->location;
    if (!ov || !l->first_location.size) return NULL;
    const oc_str *first = &l->first_location;
    if (loc->size < first->size || memcmp(loc->data, first->data, (size_t)first->size) != 0)
        return NULL;
    const char *suffix = loc->data + first->size;
    uint64_t n = loc->size - first->size;
    if (n) { /* ".N" */
        if (n < 2 || suffix[0] != '.') return NULL;
        for (uint64_t i = 1; i < n; i++)
            if (suffix[i] < '0' || suffix[i] > '9') return NULL;
    }
    size_t len = strlen(ov) + (size_t)n + 1;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s%.*s", ov, (int)n, suffix);
    return p;
}

/* Opens the regular file that pathfd (an O_PATH descriptor) stands for, for reading,
 * after checking its type without opening it (E-18): a device, FIFO or socket is never
 * opened, since opening some devices acts (a watchdog arms, a tape rewinds). The reopen
 * goes through /proc/self/fd, which names pathfd's own inode; without /proc the name is
 * opened once more (rel beneath dir_fd, or the caller's path) and the inode must be the
 * same. Returns the descriptor, or -1 with errno, or -1 with *why set (a reason). */
static int reopen_regular(int pathfd, int dir_fd, const char *rel, const char *path,
                          struct stat *st, const char **why) {
    *why = NULL;
    if (fstat(pathfd, st) != 0) return -1;
    if (S_ISLNK(st->st_mode)) {
        errno = ELOOP;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        *why = "is not a regular file";
        return -1;
    }
    char proc[40];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", pathfd);
    int fd = open(proc, OC_READ_FLAGS);
    if (fd < 0 && errno == ENOENT) /* no /proc: by name, then the same inode */
        fd = path ? open(path, OC_READ_FLAGS) : open_beneath(dir_fd, rel, OC_READ_FLAGS);
    struct stat now;
    if (fd >= 0 && (fstat(fd, &now) != 0 || now.st_dev != st->st_dev || now.st_ino != st->st_ino)) {
        close(fd);
        *why = "changed while it was opened";
        return -1;
    }
    return fd;
}

/* The file resolver: a location is a file beneath base_dir (E-10, E-11, E-17, E-18). */
static oc_status resolve_file(void *ctx, const onnx_TensorProto *t, const oc_str *loc,
                              oc_mapped *out, oc_error *err) {
    loader *l = ctx;
    (void)err; /* the loader's own error record is the same one */
    char name[OC_QUOTE_SIZE], shown[OC_QUOTE_SIZE];
    qname(t, name);
    qstr(loc, shown);
    const char *why = location_problem(loc);
    if (why)
        return oc__fail(l->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET,
                        "tensor '%s': external data location %s: '%s'", name, why, shown);
    if (l->dirfd < 0) { /* opened on first need: models without external data never touch it */
        l->dirfd = open(l->base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (l->dirfd < 0) return oc__fail_errno(l->err, errno, "cannot open directory %s", l->base_dir);
    }
    char *rel = strndup(loc->data, (size_t)loc->size);
    char *ov = rel ? override_path(l, loc) : NULL;
    if (!rel) return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    int pathfd = ov ? open(ov, O_PATH | O_CLOEXEC) : open_beneath(l->dirfd, rel, O_PATH | O_CLOEXEC);
    if (ov) oc_quote(ov, strlen(ov), shown, sizeof shown); /* the caller's path, shown too */
    oc_status s = OC_OK;
    struct stat st;
    const char *odd = NULL;
    int fd = pathfd < 0 ? -1 : reopen_regular(pathfd, l->dirfd, rel, ov, &st, &odd);
    if (pathfd >= 0) {
        int e = errno;
        close(pathfd);
        errno = e;
    }
    if (odd) {
        s = oc__fail(l->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET,
                     "tensor '%s': external data file '%s' %s", name, shown, odd);
    } else if (fd < 0) {
        int e = errno;
        if (e == ELOOP || e == EXDEV)
            s = oc__fail(l->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET,
                         "tensor '%s': external data file '%s' is or passes through a symbolic "
                         "link", name, shown);
        else
            s = oc__fail_errno(l->err, e, "tensor '%s': cannot open external data file '%s'",
                               name, shown);
    } else {
        if (!ov && st.st_nlink > 1)
            s = oc__fail(l->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET,
                         "tensor '%s': external data file '%s' has several hard links", name,
                         shown);
        if (s == OC_OK) s = oc_map_fd(fd, shown, out, l->err);
        close(fd);
    }
    free(ov);
    free(rel);
    return s;
}

static void file_key(const void *ctx, uint64_t i, const void **name, size_t *len) {
    const loader *l = ctx;
    *name = l->files[i].key;
    *len = (size_t)l->files[i].key_len;
}

/* Each distinct location is resolved once per load, found again through a keyed table
 * (K-1: a load of N tensors in M files costs O(N), not O(N*M)). */
static oc_status open_datafile(loader *l, const onnx_TensorProto *t, const oc_str *loc,
                               uint32_t *index) {
    if (!l->file_index && !(l->file_index = oc_nametab_new(8, file_key, l)))
        return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    uint64_t h = oc_nametab_hash(loc->data, (size_t)loc->size);
    int64_t found = oc_nametab_find(l->file_index, loc->data, (size_t)loc->size, h);
    if (found >= 0) {
        *index = (uint32_t)found;
        return OC_OK;
    }
    if (l->nfiles == l->capfiles) {
        uint32_t cap = l->capfiles ? l->capfiles * 2 : 8;
        datafile *f = realloc(l->files, cap * sizeof *f);
        if (!f) return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        l->files = f;
        l->capfiles = cap;
    }
    if (oc_nametab_reserve(l->file_index) != OC_OK)
        return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    datafile *df = &l->files[l->nfiles];
    memset(df, 0, sizeof *df);
    /* The key keeps every byte (a NUL too, though resolvers refuse such locations). */
    df->key = malloc((size_t)loc->size + 1);
    if (!df->key) return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (loc->size) memcpy(df->key, loc->data, (size_t)loc->size); /* data may be NULL */
    df->key[loc->size] = '\0';
    df->key_len = loc->size;
    oc_status s = l->resolve(l->resolve_ctx, t, loc, &df->map, l->err);
    if (s != OC_OK) {
        free(df->key);
        return s;
    }
    oc_nametab_insert(l->file_index, l->nfiles, h);
    *index = l->nfiles++;
    return OC_OK;
}

/* E-15 for every item with a checksum, once all references are resolved (E-16): up to
 * num_threads threads hash the items; the first failure in model order is reported, so
 * the result is the serial one whatever the thread count. Items after a known failure are
 * not hashed (their result cannot matter); the failing item is hashed again, alone, for
 * its message. */
typedef struct hash_job {
    const ext_item *item;
    const oc_str *want;
} hash_job;

typedef struct hashing {
    const loader *l;
    hash_job *jobs;
    atomic_uint_fast64_t first_failed; /* lowest failed job so far; the job count: none */
} hashing;

/* An item's bytes as a span to hash (no reference taken). A no_copy load keeps them in
 * the mapping, so they are hashed with its owner: read from the file with pread where a
 * descriptor was kept, else through the pages, which may go once hashed. A copy load
 * reads them again at once, so only spans that pread will read get the owner; the others
 * are hashed through the mapping's pages, which stay for the copy. */
static oc_bytes hash_view(const loader *l, const ext_item *it) {
    oc_bytes v = {it->data, it->length, l->files[it->file].map.owner, OC_BYTES_SHARED};
    int fd;
    uint64_t at;
    if (!l->opts->no_copy &&
        !(v.size >= OC_BYTES_READ_PIECE && oc__bytes_file_source(&v, &fd, &at))) {
        v.owner = NULL;
        v.mode = OC_BYTES_BORROWED;
    }
    return v;
}

/* 0: want is got; 1: want is not 40 hex digits (E-1: no data matches it); 2: differs. */
static int compare_digest(const oc_str *want, const char got[41]) {
    if (want->size != 40) return 1;
    int same = 1;
    for (unsigned i = 0; i < 40; i++) {
        char c = want->data[i];
        if (c >= 'A' && c <= 'F') c = (char)(c - 'A' + 'a');
        else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return 1;
        same = same && c == got[i];
    }
    return same ? 0 : 2;
}

static void hash_one(void *ctx, uint64_t i) {
    hashing *h = ctx;
    if (i > atomic_load_explicit(&h->first_failed, memory_order_relaxed)) return;
    const hash_job *j = &h->jobs[i];
    oc_bytes v = hash_view(h->l, j->item);
    oc_error scratch;
    char got[41];
    if (oc__sha1_span_hex(&v, got, &scratch) == OC_OK && compare_digest(j->want, got) == 0)
        return;
    uint_fast64_t cur = atomic_load_explicit(&h->first_failed, memory_order_relaxed);
    while (i < cur && !atomic_compare_exchange_weak(&h->first_failed, &cur, i)) {
    }
}

/* The failure of one job, with its message. Hashed first: without OpenSSL any checksum
 * is OC_ERR_UNSUPPORTED, well formed or not. */
static oc_status hash_failure(const loader *l, const hash_job *j) {
    const onnx_TensorProto *t = j->item->tensor;
    char name[OC_QUOTE_SIZE], stored[OC_QUOTE_SIZE], got[41];
    oc_bytes v = hash_view(l, j->item);
    OC_FORWARD(oc__sha1_span_hex(&v, got, l->err));
    switch (compare_digest(j->want, got)) {
    case 0: /* later items were not hashed: this cannot pass as success */
        return oc__fail(l->err, OC_ERR_CHECKSUM, OC_NO_OFFSET,
                        "tensor '%s': external data checksum did not match, then matched when "
                        "hashed again: its data file changed during the load (E-15)",
                        qname(t, name));
    case 1:
        return oc__fail(l->err, OC_ERR_CHECKSUM, OC_NO_OFFSET,
                        "tensor '%s': external data checksum '%s' is not 40 hex digits (a SHA-1), "
                        "so no data matches it (E-1, E-15)", qname(t, name), qstr(j->want, stored));
    default:
        return oc__fail(l->err, OC_ERR_CHECKSUM, OC_NO_OFFSET,
                        "tensor '%s': external data checksum mismatch (stored %s, computed %s) "
                        "(E-15)", qname(t, name), qstr(j->want, stored), got);
    }
}

static oc_status check_checksums(loader *l) {
    if (!l->opts->verify_checksums) return OC_OK;
    hashing h = {.l = l};
    uint64_t n = 0;
    for (uint64_t i = 0; i < l->nitems; i++) {
        const oc_str *want = oc_tensor_external_value(l->items[i].tensor, "checksum");
        if (!want) continue;
        if (!h.jobs && !(h.jobs = malloc((size_t)(l->nitems - i) * sizeof *h.jobs)))
            return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        h.jobs[n++] = (hash_job){&l->items[i], want};
    }
    if (!n) return OC_OK;
    atomic_init(&h.first_failed, n);
    oc__parallel_for(n, oc__resolve_threads(l->opts->num_threads), hash_one, &h);
    uint64_t failed = atomic_load(&h.first_failed);
    oc_status st = failed < n ? hash_failure(l, &h.jobs[failed]) : OC_OK;
    free(h.jobs);
    return st;
}

static oc_status resolve_tensor(void *ctx, onnx_TensorProto *t) {
    loader *l = ctx;
    if (!oc_tensor_is_external(t)) return OC_OK;
    char name[OC_QUOTE_SIZE], shown[OC_QUOTE_SIZE];
    const oc_str *loc = oc_tensor_external_value(t, "location");
    if (!loc)
        return oc__fail(l->err, OC_ERR_MALFORMED, OC_NO_OFFSET,
                        "tensor '%s': external data has no location (E-1)", qname(t, name));
    /* E-12 first: a reference that cannot be read is refused before any file is opened. */
    uint64_t offset, length;
    int has_length;
    OC_FORWARD(oc_tensor_external_range(t, &offset, NULL, &length, &has_length, l->err));
    if (!l->first_location.size) l->first_location = *loc;
    uint32_t fi = 0;
    OC_FORWARD(open_datafile(l, t, loc, &fi));
    const oc_mapped *m = &l->files[fi].map;
    if (offset > m->size)
        return oc__fail(l->err, OC_ERR_TRUNCATED, OC_NO_OFFSET,
                        "tensor '%s': external data offset %llu is past the end of '%s' (%llu "
                        "bytes)", qname(t, name), (unsigned long long)offset, qstr(loc, shown),
                        (unsigned long long)m->size);
    if (!has_length) length = m->size - offset; /* to the end of the file, as onnx does */
    if (length > m->size - offset)              /* overflow-safe offset + length > size */
        return oc__fail(l->err, OC_ERR_TRUNCATED, OC_NO_OFFSET,
                        "tensor '%s': external data [%llu, +%llu) runs past the end of '%s' "
                        "(%llu bytes)", qname(t, name), (unsigned long long)offset,
                        (unsigned long long)length, qstr(loc, shown), (unsigned long long)m->size);
    /* The caller's caps (limits.h): one tensor, and all external data of this load. */
    char what[2 * OC_QUOTE_SIZE];
    snprintf(what, sizeof what, "tensor '%s': external data", qname(t, name));
    OC_FORWARD(oc__check_size(length, l->opts->max_tensor_bytes, OC_DEFAULT_MAX_TENSOR_BYTES,
                              what, "max_tensor_bytes", OC_NO_OFFSET, l->err));
    l->total = length < UINT64_MAX - l->total ? l->total + length : UINT64_MAX;
    snprintf(what, sizeof what, "external data up to tensor '%s'", qname(t, name));
    OC_FORWARD(oc__check_size(l->total, l->opts->max_external_bytes,
                              OC_DEFAULT_MAX_EXTERNAL_BYTES, what, "max_external_bytes",
                              OC_NO_OFFSET, l->err));
    const uint8_t *data = length ? m->data + offset : NULL;
    uint64_t align = l->opts->buffer.alignment;
    if (l->opts->no_copy && align > 1 && ((uintptr_t)data % align) != 0)
        return oc__fail(l->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                        "tensor '%s': external data offset %llu is not aligned to %llu bytes, "
                        "so it cannot be used in place (load without no_copy for an aligned copy)",
                        qname(t, name), (unsigned long long)offset, (unsigned long long)align);
    if (l->nitems == l->capitems) {
        uint64_t cap = l->capitems ? l->capitems * 2 : 64;
        ext_item *it = realloc(l->items, (size_t)cap * sizeof *it);
        if (!it) return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        l->items = it;
        l->capitems = cap;
    }
    l->items[l->nitems++] = (ext_item){t, data, length, fi};
    return OC_OK;
}

/* Second pass: cannot fail except for memory, checked before anything changes. */
static oc_status attach_all(loader *l) {
    const oc_parse_options *o = l->opts;
    oc_bytes *copied = NULL; /* copy loads: each tensor's new storage, filled in parallel */
    oc_arena *scratch = NULL;
    oc__copy_list copies = {0};
    if (!o->no_copy && l->nitems) {
        copied = calloc((size_t)l->nitems, sizeof *copied);
        scratch = oc_arena_new();
        int ok = copied && scratch;
        for (uint64_t i = 0; ok && i < l->nitems; i++) {
            uint8_t *p = NULL;
            if (!l->items[i].length) continue;
            ok = oc_bytes_set_storage(&copied[i], l->items[i].length, o->buffer.alignment,
                                      o->storage_pool, &p, l->err) == OC_OK;
            ok = ok && oc__copy_list_add(scratch, &copies, p, l->items[i].data, l->items[i].length,
                                         l->files[l->items[i].file].map.owner);
        }
        if (!ok) {
            for (uint64_t i = 0; copied && i < l->nitems; i++) oc_bytes_release(&copied[i]);
            free(copied);
            oc_arena_free(scratch);
            return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory loading external data");
        }
        oc__copy_run(&copies, oc__resolve_threads(o->num_threads));
    }
    for (uint64_t i = 0; i < l->nitems; i++) {
        ext_item *it = &l->items[i];
        onnx_TensorProto *t = it->tensor;
        if (o->no_copy) /* owner NULL: the resolver's source outlives the tensors (borrowed) */
            oc_bytes_set_shared(&t->raw_data, it->data, it->length, l->files[it->file].map.owner);
        else
            oc_bytes_move(&t->raw_data, &copied[i]);
        OC_SET_HAS(TensorProto, t, raw_data);
        /* Back to the form before the bytes were moved out (E-16): no data_location. (onnx.load
         * sets DEFAULT explicitly instead; any chain of our conversions then agrees.) */
        t->data_location = 0;
        OC_CLEAR_HAS(TensorProto, t, data_location);
        drop_known_keys(t); /* keys we do not define stay, never acted on (E-3) */
    }
    free(copied);
    oc_arena_free(scratch);
    return OC_OK;
}

static oc_status load_with(loader *l, const oc_msgdesc *desc, void *msg) {
    const oc_parse_options *opts = l->opts;
    if (opts->buffer.alignment & (opts->buffer.alignment - 1))
        return oc__fail(l->err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "alignment %llu is not a power of two",
                        (unsigned long long)opts->buffer.alignment);
    oc_status st = oc_visit_tensors(desc, msg, resolve_tensor, l);
    if (st == OC_OK) st = check_checksums(l);
    if (st == OC_OK) st = attach_all(l);
    for (uint32_t i = 0; i < l->nfiles; i++) { /* tensors hold their own references */
        oc_owner_unref(l->files[i].map.owner);
        free(l->files[i].key);
    }
    free(l->files);
    oc_nametab_free(l->file_index);
    free(l->items);
    if (l->dirfd >= 0) close(l->dirfd);
    return st;
}

static const oc_parse_options *or_defaults(const oc_parse_options *opts, oc_parse_options *d) {
    if (opts) return opts;
    oc_parse_options_init(d);
    return d;
}

oc_status oc_load_external_data(const oc_msgdesc *desc, void *msg, const char *base_dir,
                                const oc_parse_options *opts, oc_error *err) {
    if (!desc || !msg || !base_dir)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_load_external_data: missing argument");
    OC_PARSE_OPTS(opts, err);
    oc_parse_options defaults;
    loader l;
    memset(&l, 0, sizeof l);
    l.opts = or_defaults(opts, &defaults);
    l.resolve = resolve_file;
    l.resolve_ctx = &l;
    l.base_dir = base_dir;
    l.err = err;
    l.dirfd = -1;
    return load_with(&l, desc, msg);
}

oc_status oc_load_external_data_with(const oc_msgdesc *desc, void *msg,
                                     oc_external_resolve_fn resolve, void *resolve_ctx,
                                     const oc_parse_options *opts, oc_error *err) {
    if (!desc || !msg || !resolve)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_load_external_data_with: missing argument");
    OC_PARSE_OPTS(opts, err);
    oc_parse_options defaults;
    loader l;
    memset(&l, 0, sizeof l);
    l.opts = or_defaults(opts, &defaults);
    l.resolve = resolve;
    l.resolve_ctx = resolve_ctx;
    l.err = err;
    l.dirfd = -1;
    return load_with(&l, desc, msg);
}

/* ---- writing: the generic part ---- */

typedef struct externalizer {
    uint64_t threshold;
    oc_external_put_fn put;
    void *put_ctx;
    oc_arena *scratch;
    oc__subst *subs;
    uint64_t nsubs, capsubs;
    oc_error *err;
} externalizer;


static int add_entry(oc_arena *a, onnx_TensorProto *t, const char *key, const char *value) {
    onnx_StringStringEntryProto *e = OC_ADD(a, StringStringEntryProto, t->external_data);
    if (!e || oc_str_set_cstr(a, &e->key, key) || oc_str_set_cstr(a, &e->value, value)) return 0;
    OC_SET_HAS(StringStringEntryProto, e, key);
    OC_SET_HAS(StringStringEntryProto, e, value);
    return 1;
}

/* A reference tensor: the original's fields, no raw_data, EXTERNAL, with the entries onnx
 * writes (location, offset, length, checksum) after any keys we do not manage. */
static oc_status make_reference(externalizer *x, const onnx_TensorProto *t,
                                const oc_external_ref *ref) {
    oc_arena *a = x->scratch;
    onnx_TensorProto *r = oc_arena_alloc(a, sizeof *r); /* not oc_msg_new: it owns no span */
    if (!r) return OC_ERR_NOMEM;
    memcpy(r, t, sizeof *r);
    memset(&r->raw_data, 0, sizeof r->raw_data);
    OC_CLEAR_HAS(TensorProto, r, raw_data);
    r->data_location = 1;
    OC_SET_HAS(TensorProto, r, data_location);
    memset(&r->external_data, 0, sizeof r->external_data);
    for (uint64_t i = 0; i < t->external_data.count; i++) {
        const onnx_StringStringEntryProto *e = t->external_data.items[i];
        if (oc_external_key_is_known(&e->key)) continue;
        void **slot = oc_array_push(a, &r->external_data, sizeof(void *));
        if (!slot) return OC_ERR_NOMEM;
        memcpy(slot, &e, sizeof e);
    }
    char num[24];
    if (!add_entry(a, r, "location", ref->location)) return OC_ERR_NOMEM;
    snprintf(num, sizeof num, "%llu", (unsigned long long)ref->offset);
    if (ref->has_offset && !add_entry(a, r, "offset", num)) return OC_ERR_NOMEM;
    snprintf(num, sizeof num, "%llu", (unsigned long long)ref->length);
    if (!add_entry(a, r, "length", num)) return OC_ERR_NOMEM;
    if (ref->checksum && !add_entry(a, r, "checksum", ref->checksum)) return OC_ERR_NOMEM;
    if (x->nsubs == x->capsubs) {
        uint64_t cap = x->capsubs ? x->capsubs * 2 : 64;
        oc__subst *s = realloc(x->subs, (size_t)cap * sizeof *s);
        if (!s) return OC_ERR_NOMEM;
        x->subs = s;
        x->capsubs = cap;
    }
    x->subs[x->nsubs++] = (oc__subst){t, r};
    return OC_OK;
}

static oc_status externalize_one(void *ctx, onnx_TensorProto *t) {
    externalizer *x = ctx;
    /* E-27: an empty tensor never leaves the model, at any threshold (a reference of
     * length 0 reads as "to the end of the file" in ONNX Runtime and onnx.load). */
    if (!OC_HAS(TensorProto, t, raw_data) || t->raw_data.size == 0 ||
        t->raw_data.size < x->threshold || oc_tensor_is_external(t))
        return OC_OK;
    oc_external_ref ref = {NULL, 0, 0, t->raw_data.size, NULL};
    OC_FORWARD(x->put(x->put_ctx, t, &ref, x->err));
    if (make_reference(x, t, &ref) != OC_OK)
        return oc__fail(x->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    return OC_OK;
}

oc_status oc_encode_external(const oc_msgdesc *desc, const void *msg, uint64_t threshold,
                             oc_external_put_fn put, void *put_ctx, oc_write_fn write,
                             void *write_ctx, oc_error *err) {
    if (!desc || !msg || !put || !write)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_encode_external: missing argument");
    externalizer x = {threshold, put, put_ctx, oc_arena_new(), NULL, 0, 0, err};
    if (!x.scratch) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    /* The walk only reads: the cast lets it share oc_visit_tensors with mutating users. */
    oc_status st = oc_visit_tensors(desc, (void *)(uintptr_t)msg, externalize_one, &x);
    if (st == OC_OK) st = oc__encode_subst(desc, msg, x.subs, x.nsubs, write, write_ctx, err);
    free(x.subs);
    oc_arena_free(x.scratch);
    return st;
}

/* ---- writing: data files beside the model ---- */

typedef struct part {
    oc_atomic_file af;
    char *location;
    uint64_t size;
    int existed; /* a file had the part's name before the commit renamed it into place */
} part;

typedef struct data_writer {
    const oc_serialize_options *opts;
    char *dir;          /* the model's directory, with a trailing slash or empty */
    const char *model_path;
    char *location;     /* the first part's location */
    part *parts;
    uint32_t nparts;
    char checksum[41];
    oc_progress progress; /* across the data files and the model */
} data_writer;

static char *dir_prefix(const char *path) {
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) + 1 : 0;
    return strndup(path, n);
}

/* Whether paths a and b name the same directory entry: the same last component in the
 * same directory (by device and inode, so "k/./x" and "k/sub/../x" are "k/x"). That is
 * what a rename replaces; a link elsewhere to the same file is another name. */
static int same_name(const char *a, const char *b) {
    const char *ba = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
    const char *bb = strrchr(b, '/') ? strrchr(b, '/') + 1 : b;
    if (strcmp(ba, bb) != 0) return 0;
    char *da = dir_prefix(a), *db = dir_prefix(b);
    struct stat sa, sb;
    int same = da && db && stat(da[0] ? da : ".", &sa) == 0 && stat(db[0] ? db : ".", &sb) == 0 &&
               sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    free(da);
    free(db);
    return same;
}

/* The path of a part: the model's directory and the part's location. NULL: no memory. */
static char *part_path(const data_writer *w, const char *location) {
    size_t n = strlen(w->dir) + strlen(location) + 1;
    char *path = malloc(n);
    if (path) snprintf(path, n, "%s%s", w->dir, location);
    return path;
}

static oc_status open_part(data_writer *w, oc_error *err) {
    part *p = realloc(w->parts, (w->nparts + 1) * sizeof *p);
    if (!p) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    w->parts = p;
    part *np = &p[w->nparts];
    memset(np, 0, sizeof *np);
    np->af.fd = -1;
    size_t n = strlen(w->location) + 16;
    np->location = malloc(n);
    if (!np->location) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (w->nparts)
        snprintf(np->location, n, "%s.%u", w->location, w->nparts);
    else
        snprintf(np->location, n, "%s", w->location);
    char *path = part_path(w, np->location);
    if (!path) {
        free(np->location);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    /* D1 of the review: a part renamed over the model's own name ("./x.onnx", or x.1 for
     * a model named x.1) would be replaced by the model, or the model by it. Refused here,
     * before any file is renamed into place (E-25). */
    oc_status st = same_name(path, w->model_path)
                       ? oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                                  "external data file %s would be the model file %s itself",
                                  path, w->model_path)
                       : oc_atomic_open(&np->af, path, w->opts->overwrite, err);
    free(path);
    if (st != OC_OK) {
        free(np->location);
        return st;
    }
    np->af.progress = &w->progress;
    w->nparts++;
    return OC_OK;
}

/* Writes to a data file and, with checksums, hashes the same bytes on the way. */
typedef struct tee_sink {
    oc_atomic_file *af;
    oc__sha1 *sha1; /* NULL: no checksum */
} tee_sink;

static oc_status tee_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    tee_sink *t = ctx;
    if (t->sha1) OC_FORWARD(oc__sha1_update(t->sha1, data, size, err));
    return oc_atomic_write(t->af, data, size, err);
}

static oc_status put_in_file(void *ctx, const onnx_TensorProto *t, oc_external_ref *ref,
                             oc_error *err) {
    data_writer *w = ctx;
    uint64_t n = t->raw_data.size, align = w->opts->buffer.alignment;
    if (!w->nparts) OC_FORWARD(open_part(w, err));
    part *p = &w->parts[w->nparts - 1];
    uint64_t at = align > 1 ? (p->size + align - 1) & ~(align - 1) : p->size;
    uint64_t max = w->opts->max_external_file_size;
    if (max && p->size > 0 && (at > max || n > max - at)) { /* a new part; big ones alone */
        OC_FORWARD(open_part(w, err));
        p = &w->parts[w->nparts - 1];
        at = 0;
    }
    static const uint8_t zeros[4096];
    while (p->size < at) {
        uint64_t k = at - p->size < sizeof zeros ? at - p->size : sizeof zeros;
        OC_FORWARD(oc_atomic_write(&p->af, zeros, k, err));
        p->size += k;
    }
    tee_sink sink = {&p->af, NULL};
    oc__sha1 sha;
    if (w->opts->checksum) {
        OC_FORWARD(oc__sha1_begin(&sha, err));
        sink.sha1 = &sha;
    }
    oc_status st = sink.sha1 ? oc_bytes_write(&t->raw_data, tee_write, &sink, err)
                             : oc_atomic_write_bytes(&p->af, &t->raw_data, err);
    if (st == OC_OK && sink.sha1) {
        st = oc__sha1_end_hex(&sha, w->checksum, err);
        ref->checksum = w->checksum; /* copied into the reference before the next put */
    } else if (sink.sha1) {
        oc__sha1_discard(&sha);
    }
    OC_FORWARD(st);
    p->size += n;
    ref->location = p->location;
    ref->offset = at;
    ref->has_offset = 1;
    ref->length = n;
    return OC_OK;
}

/* ---- one pair: the commit of a multi-file save (E-25, E-26) ---- */

int oc__pair_lock(const char *model_path, int exclusive) {
    char *dir = dir_prefix(model_path);
    if (!dir) return -1;
    int fd = open(dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd < 0) return -1;
    /* D5 of the review: a blocking flock would let any process holding the directory's
     * lock (a foreign `flock DIR cmd`, a stopped writer) hang every reader and writer of
     * every model there. Try without blocking, with a growing pause (10 ms doubling up to
     * 250 ms), for about OC__PAIR_LOCK_WAIT_MS in all. */
    long waited = 0, pause = 10;
    for (;;) {
        if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == 0) return fd;
        if (errno == EINTR) continue;
        if (errno != EWOULDBLOCK) break; /* no flock here: nothing is serialized */
        if (waited == 0) oc__test_point("pair-busy");
        if (waited >= OC__PAIR_LOCK_WAIT_MS) {
            close(fd);
            return OC__PAIR_BUSY;
        }
        struct timespec ts = {0, pause * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
        waited += pause;
        pause = pause * 2 > 250 ? 250 : pause * 2;
    }
    close(fd);
    return -1;
}

oc_status oc__pair_busy(const char *model_path, oc_error *err) {
    char *dir = dir_prefix(model_path);
    oc_status st = oc__fail(err, OC_ERR_IO, OC_NO_OFFSET,
                            "busy: another process holds the lock of directory '%s' (E-25); "
                            "try again", dir && dir[0] ? dir : ".");
    free(dir);
    return st;
}

void oc__pair_unlock(int fd) {
    if (fd >= 0) close(fd); /* closing the only descriptor releases the flock */
}

/* E-26: the numbered parts (`LOCATION.N`, N >= 1, as E-22 names them) that the model
 * being replaced references and this save does not write: only those, whatever else the
 * old model names (another location may be shared with other models). */
typedef struct stale_parts {
    const char *location; /* this save's first location */
    uint32_t nparts;      /* parts this save writes: LOCATION, .1 .. .(nparts-1) */
    oc_arena *arena;
    char **names;
    uint32_t n, cap;
} stale_parts;

static oc_status note_stale(void *ctx, onnx_TensorProto *t) {
    stale_parts *sp = ctx;
    const oc_str *loc = oc_tensor_is_external(t) ? oc_tensor_external_value(t, "location") : NULL;
    size_t ll = strlen(sp->location);
    if (!loc || location_problem(loc) || loc->size < ll + 2 || memcmp(loc->data, sp->location, ll) ||
        loc->data[ll] != '.' || loc->data[ll + 1] < '1' || loc->data[ll + 1] > '9' || loc->size - ll > 11)
        return OC_OK;
    uint64_t num = 0;
    for (uint64_t i = ll + 1; i < loc->size; i++) {
        if (loc->data[i] < '0' || loc->data[i] > '9') return OC_OK;
        num = num * 10 + (uint64_t)(loc->data[i] - '0');
    }
    if (num < sp->nparts) return OC_OK; /* written again by this save */
    for (uint32_t i = 0; i < sp->n; i++)
        if (oc_str_eq(*loc, sp->names[i])) return OC_OK;
    if (sp->n == sp->cap) {
        uint32_t cap = sp->cap ? sp->cap * 2 : 8;
        char **p = realloc(sp->names, cap * sizeof *p);
        if (!p) return OC_ERR_NOMEM;
        sp->names = p;
        sp->cap = cap;
    }
    char *name = oc_arena_alloc(sp->arena, (size_t)loc->size + 1);
    if (!name) return OC_ERR_NOMEM;
    memcpy(name, loc->data, (size_t)loc->size);
    name[loc->size] = '\0';
    sp->names[sp->n++] = name;
    return OC_OK;
}

/* What decoding the replaced model may cost (D4 of the review): it runs under the
 * exclusive pair lock, and the old file is whatever is there. */
#define STALE_SCAN_MAX_MEMORY (64u << 20)

/* Reads the model at path (the one being replaced, if any) for its stale parts, without
 * its tensor bytes and within STALE_SCAN_MAX_MEMORY. Conservative: a file that does not
 * decode as a model within that budget, or whose scan fails, has none we may remove. */
static void find_stale_parts(const char *path, stale_parts *sp) {
    void *old = NULL;
    oc_parse_options po;
    oc_parse_options_init(&po);
    po.no_copy = 1;
    po.skip_raw_data = 1;
    po.max_memory = STALE_SCAN_MAX_MEMORY;
    if (!sp->arena) return;
    if (oc_message_load_file(&onnx_ModelProto_desc, path, sp->arena, &po, &old, NULL) == OC_OK &&
        oc_visit_tensors(&onnx_ModelProto_desc, old, note_stale, sp) != OC_OK)
        sp->n = 0; /* a partial list is still correct, but keep the rule simple: none */
}

/* Whether path is one this save has just put in place: the model or one of its parts. */
static int written_by_save(const data_writer *w, const char *path) {
    if (same_name(path, w->model_path)) return 1;
    for (uint32_t i = 0; i < w->nparts; i++) {
        char *p = part_path(w, w->parts[i].location);
        int same = !p || same_name(path, p); /* no memory: keep the file */
        free(p);
        if (same) return 1;
    }
    return 0;
}

/* Removes them (regular files only, beneath the model's directory) once the new model is
 * in place, never a file this save wrote (D2 of the review: the new model itself may be
 * named LOCATION.N, honestly or by a hostile old model naming itself). */
static void remove_stale_parts(const data_writer *w, const stale_parts *sp) {
    for (uint32_t i = 0; i < sp->n; i++) {
        char *p = part_path(w, sp->names[i]);
        struct stat st;
        if (!p) return;
        if (lstat(p, &st) == 0 && S_ISREG(st.st_mode) && !written_by_save(w, p)) unlink(p);
        free(p);
    }
}

/* Without overwrite, fails if any file of the pair (a part or the model) already has its
 * name, before anything is renamed (D1 of the review): a refused save leaves nothing. */
static oc_status check_none_exists(const data_writer *w, const oc_atomic_file *model,
                                   oc_error *err) {
    struct stat st;
    for (uint32_t i = 0; i < w->nparts; i++)
        if (lstat(w->parts[i].af.path, &st) == 0)
            return oc__fail(err, OC_ERR_EXISTS, OC_NO_OFFSET, "%s already exists",
                            w->parts[i].af.path);
    if (lstat(model->path, &st) == 0)
        return oc__fail(err, OC_ERR_EXISTS, OC_NO_OFFSET, "%s already exists", model->path);
    return OC_OK;
}

/* The model's rename failed after the parts were renamed: removes the parts whose names
 * were new, so nothing of this save remains. A part that replaced a file cannot give it
 * back (E-25). */
static void take_back_parts(const data_writer *w, uint32_t renamed) {
    for (uint32_t i = 0; i < renamed; i++) {
        if (w->parts[i].existed) continue;
        char *p = part_path(w, w->parts[i].location);
        if (p) unlink(p);
        free(p);
    }
}

/* Data files, then the model, renamed under the pair lock with the signals that end the
 * process held back (a handler must not run between two renames), then the stale parts
 * of the replaced model removed. */
static oc_status commit_pair(data_writer *w, oc_atomic_file *model, const char *path,
                             oc_error *err) {
    stale_parts sp = {w->location, w->nparts, NULL, NULL, 0, 0};
    sigset_t fatal, saved;
    sigemptyset(&fatal);
    sigaddset(&fatal, SIGINT);
    sigaddset(&fatal, SIGTERM);
    sigaddset(&fatal, SIGHUP);
    int lock = oc__pair_lock(path, 1);
    oc_status st = lock == OC__PAIR_BUSY ? oc__pair_busy(path, err) : OC_OK;
    oc__test_point("pair-locked");
    if (st == OC_OK && !w->opts->overwrite) st = check_none_exists(w, model, err);
    if (st == OC_OK && w->opts->overwrite) {
        sp.arena = oc_arena_new();
        find_stale_parts(path, &sp);
    }
    int masked = pthread_sigmask(SIG_BLOCK, &fatal, &saved) == 0;
    uint32_t renamed = 0;
    for (uint32_t i = 0; i < w->nparts; i++) {
        struct stat old;
        if (st == OC_OK) {
            w->parts[i].existed = lstat(w->parts[i].af.path, &old) == 0;
            st = oc_atomic_commit(&w->parts[i].af, err);
            renamed += st == OC_OK;
        } else {
            oc_atomic_abort(&w->parts[i].af);
        }
    }
    if (st == OC_OK)
        st = oc_atomic_commit(model, err);
    else
        oc_atomic_abort(model);
    if (st == OC_OK)
        remove_stale_parts(w, &sp);
    else
        take_back_parts(w, renamed);
    if (masked) pthread_sigmask(SIG_SETMASK, &saved, NULL);
    if (lock >= 0) oc__pair_unlock(lock);
    free(sp.names);
    oc_arena_free(sp.arena);
    return st;
}

oc_status oc__save_external(const oc_msgdesc *desc, const void *msg, const char *path,
                            const oc_serialize_options *opts, oc_error *err) {
    uint64_t align = opts->buffer.alignment;
    if (align & (align - 1))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "alignment %llu is not a power of two", (unsigned long long)align);
    /* An absolute location is reduced to its file name, so the files can move together. */
    const char *loc = opts->external_data;
    if (loc[0] == '/') loc = strrchr(loc, '/') + 1;
    oc_str ls = {loc, strlen(loc)};
    const char *why = location_problem(&ls);
    if (why)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "external data location '%s' %s",
                        opts->external_data, why);
    data_writer w;
    memset(&w, 0, sizeof w);
    w.opts = opts;
    w.dir = dir_prefix(path);
    w.model_path = path;
    w.location = strdup(loc);
    if (!w.dir || !w.location) {
        free(w.dir);
        free(w.location);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    oc_status st = OC_OK; /* a location naming the model itself: open_part refuses it */
    oc_atomic_file model;
    model.fd = -1;
    model.tmp_path = model.path = NULL;
    if (st == OC_OK) st = oc_progress_start_save(&w.progress, desc, msg, opts, err);
    if (st == OC_OK) st = oc_atomic_open(&model, path, opts->overwrite, err);
    model.progress = &w.progress;
    if (st == OC_OK)
        st = oc_encode_external(desc, msg, opts->buffer.raw_data_threshold, put_in_file, &w,
                                oc_atomic_write, &model, err);
    /* Data first, then the model: a model file never names data that is not in place. */
    if (st == OC_OK) {
        st = commit_pair(&w, &model, path, err);
    } else {
        for (uint32_t i = 0; i < w.nparts; i++) oc_atomic_abort(&w.parts[i].af);
        oc_atomic_abort(&model);
    }
    for (uint32_t i = 0; i < w.nparts; i++) free(w.parts[i].location);
    if (st == OC_OK) oc_progress_finish(&w.progress);
    free(w.parts);
    free(w.dir);
    free(w.location);
    return st;
}
