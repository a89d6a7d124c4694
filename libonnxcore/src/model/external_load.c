/*
 * external_load.c - loading the bytes of EXTERNAL tensors (spec/external-data.md E-10..E-18).
 *
 * Loading resolves every EXTERNAL tensor in two passes: the first validates each
 * reference, opens each data file once as a byte source (internal/source.h: safely beneath
 * the model's directory, path_safety.c, mapped or, with use_pread, read with pread; or
 * what a caller's resolver gives) and checks offsets, lengths, alignment and checksums;
 * only when all of them are good does the second pass attach the bytes, so a failed load
 * leaves the model unchanged. Bytes of a source that maps are used in place (no_copy) or
 * copied out of the mapping in the second pass; those of any other source are read into
 * the tensors' new storage as soon as the last tensor in that file is resolved, and the
 * file is closed then (the one walk of the tree counts each location's tensors). A model whose
 * tensors name their files in turn, as every writer we know lays them out (one file, or
 * one file per tensor or per size limit, in order), holds one data file open at a time,
 * so thousands of them load with pread as they do mapped. A model that names files
 * 1..N and then 1..N again holds N open: past the process's descriptor limit it fails
 * with pread ("Too many open files") where the mapped load passes.
 */
#define _GNU_SOURCE /* O_PATH */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxcore/external.h"
#include "onnxcore/file.h"
#include "onnxcore/http.h"
#include "onnxcore/model.h"
#include "internal/nametab.h"
#include "internal/bytes.h"
#include "internal/decode.h"
#include "internal/digest.h"
#include "internal/error.h"
#include "internal/external.h"
#include "internal/external_keys.h"
#include "internal/parallel.h"
#include "internal/path_safety.h"
#include "internal/source_file.h"
#include "internal/source_http.h"
#include "internal/url.h"
#include "internal/onnxcore_shared.h"

typedef struct datafile {
    char *key; /* the location as the model spells it, NUL-terminated */
    uint64_t key_len;
    oc_source *src;       /* NULL before it is opened, and once read and closed */
    uint64_t uses;        /* tensors naming it not resolved yet (count_use counts) */
    uint64_t first, last; /* its items, linked through ext_item.next; NO_ITEM: none */
    uint64_t size;        /* its size when opened first (a deferred load opens it again) */
    char *id;             /* and its identity then (loader.opened_id), or NULL */
    int closed;
    /* A deferred load's reads at offsets (oc__external_data_read_at): a source of its own,
     * never announced, so that it fetches exactly the ranges asked; NULL until the first. */
    oc_source *ranged;
} datafile;

#define NO_ITEM UINT64_MAX

typedef struct ext_item {
    onnx_TensorProto *tensor;
    oc_bytes span;       /* the bytes in place, where the source maps (a reference), else empty */
    oc_bytes copy;       /* its copy (owned): read_file's, or attach_all's of span; else empty */
    uint64_t at, length; /* where they lie in the data file */
    uint64_t next;       /* the next item of the same file, or NO_ITEM */
    uint32_t file;
} ext_item;

typedef struct loader {
    const oc_parse_options *opts;
    oc_external_resolve_fn resolve;
    void *resolve_ctx;
    int dirfd;
    const char *base_dir;
    /* base_dir in a snapshot of the hub's cache (E-28): its repository's folder (or -1)
     * and the path from there to base_dir */
    int hub_fd;
    char hub_prefix[1024];
    oc_error *err;
    datafile *files;
    uint32_t nfiles, capfiles;
    oc_nametab *file_index; /* location -> files[] (made on first need) */
    onnx_TensorProto **ext; /* the external tensors, in model order (count_use) */
    uint64_t next, capext;
    ext_item *items;
    uint64_t nitems, capitems;
    oc_str first_location; /* for the `location` override */
    uint64_t total;        /* bytes of external data resolved so far (max_external_bytes) */
    /* The first failed read in model order (read_file), reported only once every reference
     * has passed (E-15: reads fail with the checksums, after E-10..E-14 and the limits,
     * first in model order), as the mapped load, which reads nothing before then. */
    uint64_t read_failed; /* its item, or NO_ITEM */
    oc_status read_st;
    oc_error read_err;
    /* Deferred (oc_external_data_open): references are checked, no byte is mapped or read,
     * and each file is closed after its last tensor, to be opened again when streamed;
     * but the last such file stays open (held), so that a model of one data file opens it
     * once (a remote one's tail is not asked for again). */
    int defer;
    uint32_t held; /* that file, or UINT32_MAX */
    /* Deferred, the identity of the file the last resolve opened: device, inode, size,
     * change and modification times of a file, ETag and Last-Modified of a URL. */
    char opened_id[400];
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
/* The file resolver: a location is a file beneath base_dir (E-10, E-11, E-17, E-18),
 * mapped, or read with pread (use_pread). */
static oc_status resolve_file(loader *l, const onnx_TensorProto *t, const oc_str *loc,
                              oc_source **out) {
    char name[OC_QUOTE_SIZE], shown[OC_QUOTE_SIZE];
    oc__qname(t, name);
    oc__qstr(loc, shown);
    const char *why = oc__location_problem(loc);
    if (why)
        return oc__fail(l->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET,
                        "tensor '%s': external data location %s: '%s'", name, why, shown);
    if (l->dirfd < 0) { /* opened on first need: models without external data never touch it */
        l->dirfd = open(l->base_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (l->dirfd < 0)
            return oc__fail_errno(l->err, errno, "cannot open directory %s", l->base_dir);
        l->hub_fd = oc__hub_cache_root(l->dirfd, l->hub_prefix, sizeof l->hub_prefix);
    }
    char *rel = strndup(loc->data, (size_t)loc->size);
    char *ov = rel ? override_path(l, loc) : NULL;
    if (!rel) return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (ov) oc_quote(ov, strlen(ov), shown, sizeof shown); /* the caller's path, shown too */
    oc_status s = OC_OK;
    struct stat st;
    const char *odd = NULL;
    int fd = !ov && l->hub_fd >= 0 ? oc__open_in_hub_cache(l->hub_fd, l->hub_prefix, rel, &st, &odd)
                                   : oc__open_location(l->dirfd, rel, ov, &st, &odd);
    if (odd) {
        s = oc__fail(l->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET,
                     "tensor '%s': external data file '%s' %s", name, shown, odd);
    } else if (fd < 0) {
        int e = errno;
        int hub = l->hub_fd >= 0 && !ov;
        if (hub && e == ELOOP) /* resolve_beneath gave up: more links than any repository's */
            s = oc__fail(l->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET,
                         "tensor '%s': external data file '%s' passes through a loop of symbolic "
                         "links (or a chain of more than any hub cache holds)",
                         name, shown);
        else if (e == ELOOP || e == EXDEV)
            s = oc__fail(l->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET,
                         "tensor '%s': external data file '%s' is or passes through a symbolic "
                         "link%s",
                         name, shown, hub ? " that leaves its hub cache repository" : "");
        else
            s = oc__fail_errno(l->err, e, "tensor '%s': cannot open external data file '%s'", name,
                               shown);
    } else {
        if (!ov && st.st_nlink > 1)
            s = oc__fail(l->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET,
                         "tensor '%s': external data file '%s' has several hard links", name,
                         shown);
        if (s == OC_OK) s = oc_source_file(NULL, fd, shown, oc__file_kind(l->opts), 0, out, l->err);
        if (s == OC_OK && l->defer)
            snprintf(l->opened_id, sizeof l->opened_id,
                     "device %llu, inode %llu, %llu bytes, modified %lld.%09ld, changed %lld.%09ld",
                     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                     (unsigned long long)st.st_size, (long long)st.st_mtim.tv_sec,
                     st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
        close(fd);
    }
    free(ov);
    free(rel);
    return s;
}

/* A location beside a model read from a URL: the same rules as for files (no absolute
 * location, no "..", E-5), then the URL relative to the model's, percent-encoded, so it
 * stays on the model's scheme, host and port and under its directory. */
static oc_status resolve_url(loader *l, const onnx_TensorProto *t, const oc_str *loc,
                             oc_source **out) {
    char name[OC_QUOTE_SIZE], shown[OC_QUOTE_SIZE];
    const char *why = oc__location_problem(loc);
    if (why)
        return oc__fail(l->err, OC_ERR_UNSAFE_PATH, OC_NO_OFFSET,
                        "tensor '%s': external data location %s: '%s'", oc__qname(t, name), why,
                        oc__qstr(loc, shown));
    char *url = oc__url_join(l->base_dir, loc->data, (size_t)loc->size);
    if (!url) return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_status st = oc__source_http(url, l->opts->http, out, l->err);
    if (st == OC_OK && l->defer) oc__source_http_identity(*out, l->opened_id, sizeof l->opened_id);
    free(url);
    return st;
}

/* The source of loc's bytes: the caller's resolver's "file" (memory that keeps the
 * resolver's owner, so spans in place share it as before), or a file beneath base_dir. */
static oc_status resolve_source(loader *l, const onnx_TensorProto *t, const oc_str *loc,
                                oc_source **out) {
    if (!l->resolve && oc_is_url(l->base_dir)) return resolve_url(l, t, loc, out);
    if (!l->resolve) return resolve_file(l, t, loc, out);
    oc_mapped m = {0};
    OC_FORWARD(l->resolve(l->resolve_ctx, t, loc, &m, l->err));
    char shown[OC_QUOTE_SIZE];
    oc_status st =
        oc_source_memory(m.data, m.size, NULL, NULL, m.owner, oc__qstr(loc, shown), out, l->err);
    oc_owner_unref(m.owner); /* the source took its own reference */
    return st;
}

static void file_key(const void *ctx, uint64_t i, const void **name, size_t *len) {
    const loader *l = ctx;
    *name = l->files[i].key;
    *len = (size_t)l->files[i].key_len;
}

/* The entry of loc in the table of data files, added (not opened) when absent. */
static oc_status find_datafile(loader *l, const oc_str *loc, uint32_t *index) {
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
    df->first = df->last = NO_ITEM;
    /* The key keeps every byte (a NUL too, though resolvers refuse such locations). */
    df->key = malloc((size_t)loc->size + 1);
    if (!df->key) return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (loc->size) memcpy(df->key, loc->data, (size_t)loc->size); /* data may be NULL */
    df->key[loc->size] = '\0';
    df->key_len = loc->size;
    oc_nametab_insert(l->file_index, l->nfiles, h);
    *index = l->nfiles++;
    return OC_OK;
}

/* The one walk of the tree: the external tensors, in model order, and how many of them
 * name each location (nothing is opened or checked). Resolving then runs over this list:
 * a second walk would cost as much as the first (on a graph of 100,000 nodes, about a
 * third of a load: the walk misses the cache on every node). */
static oc_status count_use(void *ctx, onnx_TensorProto *t) {
    loader *l = ctx;
    if (!oc_tensor_is_external(t)) return OC_OK;
    if (l->next == l->capext) {
        uint64_t cap = l->capext ? l->capext * 2 : 64;
        onnx_TensorProto **e =
            cap <= SIZE_MAX / sizeof *e ? realloc(l->ext, (size_t)cap * sizeof *e) : NULL;
        if (!e) return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        l->ext = e;
        l->capext = cap;
    }
    l->ext[l->next++] = t;
    const oc_str *loc = oc_tensor_external_value(t, "location");
    uint32_t fi;
    if (!loc) return OC_OK; /* resolve_tensor says what is wrong with it */
    OC_FORWARD(find_datafile(l, loc, &fi));
    l->files[fi].uses++;
    return OC_OK;
}

/* Each distinct location is resolved once per load, found again through a keyed table
 * (K-1: a load of N tensors in M files costs O(N), not O(N*M)). */
static oc_status open_datafile(loader *l, const onnx_TensorProto *t, const oc_str *loc,
                               uint32_t *index) {
    OC_FORWARD(find_datafile(l, loc, index));
    datafile *df = &l->files[*index];
    if (df->closed) /* count_use counted fewer tensors than resolving meets */
        return oc__fail(l->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                        "external data file '%s' named again after its last tensor", df->key);
    return df->src ? OC_OK : resolve_source(l, t, loc, &df->src);
}

/* Reads [at, at + n) of an item's data file (a source that does not map). A failure is
 * the tensor's, like every other of a load: it names the tensor, and its offset is
 * OC_NO_OFFSET (the source reports where in the data file it ended, which is no offset of
 * the model's input, and the mapped load reports none), the status and errno kept. */
static oc_status read_failed(const ext_item *it, oc_status st, oc_error *err) {
    if (st == OC_OK || !err) return st;
    char name[OC_QUOTE_SIZE], why[OC_ERROR_MESSAGE_MAX], rule[OC_ERROR_RULE_MAX];
    int e = err->sys_errno;
    snprintf(why, sizeof why, "%s", err->message);
    memcpy(rule, err->rule, sizeof rule); /* the source's rule, which why ends with */
    oc__fail(err, st, OC_NO_OFFSET, "tensor '%s': reading its external data: %s",
             oc__qname(it->tensor, name), why);
    err->sys_errno = e;
    memcpy(err->rule, rule, sizeof rule);
    return st;
}

static oc_status read_range(const loader *l, const ext_item *it, uint64_t at, void *dst, uint64_t n,
                            oc_error *err) {
    return read_failed(it, oc_source_read(l->files[it->file].src, at, dst, n, err), err);
}

/* The first failure in model order of jobs run on several threads (oc__parallel_for):
 * jobs after a known failure are skipped (their result cannot matter), so every job before
 * the one kept ran and passed, whatever the thread count. A failure that has an error
 * record keeps it, as it happened: trying the job again could pass (a transient I/O error
 * on a network filesystem, a file that changed), and must not turn into another error. */
typedef struct first_failure {
    atomic_uint_fast64_t job; /* lowest failed job so far; the job count: none */
    pthread_mutex_t lock;     /* orders the records below */
    oc_status st;             /* the job's status, or OC_OK (it ran but did not pass) */
    oc_error err;             /* its error when st is not OC_OK */
} first_failure;

static void first_failure_init(first_failure *f, uint64_t jobs) {
    atomic_init(&f->job, jobs);
    pthread_mutex_init(&f->lock, NULL);
    f->st = OC_OK;
}

static int first_failure_skips(first_failure *f, uint64_t job) {
    return job > atomic_load_explicit(&f->job, memory_order_relaxed);
}

static void first_failure_note(first_failure *f, uint64_t job, oc_status st, const oc_error *err) {
    pthread_mutex_lock(&f->lock);
    if (job < atomic_load_explicit(&f->job, memory_order_relaxed)) {
        atomic_store_explicit(&f->job, job, memory_order_relaxed);
        f->st = st;
        if (st != OC_OK) f->err = *err;
    }
    pthread_mutex_unlock(&f->lock);
}

/* The kept job's failure as the load's error (l->err may be NULL). */
static oc_status first_failure_report(const first_failure *f, oc_error *err) {
    if (err) *err = f->err;
    return f->st;
}

/* E-15 for every item with a checksum, once all references are resolved (E-16): up to
 * num_threads threads hash the items; the first failure in model order is reported, so
 * the result is the serial one whatever the thread count (first_failure). A failure to
 * hash (no OpenSSL, a mapped file cut short) is reported as it happened; a digest that did
 * not match is hashed again, alone, for its message. */
typedef struct hash_job {
    const ext_item *item;
    const oc_str *want;
} hash_job;

typedef struct hashing {
    const loader *l;
    hash_job *jobs;
    first_failure failed;
} hashing;

/* The SHA-1 of an item's bytes, as 40 hex digits. Bytes read from a source that does not
 * map are hashed in their copy. Bytes in place are hashed as a span (no reference taken):
 * a no_copy load keeps them in the mapping, so they are hashed with its owner, read from
 * the file with pread where a descriptor was kept, else through the pages, which may go
 * once hashed; a copy load reads them again at once, so only spans that pread will read
 * get the owner, the others are hashed through the mapping's pages, which stay for the
 * copy. */
static oc_status item_sha1(const loader *l, const ext_item *it, char got[41], oc_error *err) {
    oc_bytes v = it->copy.data ? it->copy : it->span;
    int fd;
    uint64_t at;
    if (it->copy.data || (!l->opts->no_copy && !(v.size >= OC_BYTES_READ_PIECE &&
                                                 oc__bytes_file_source(&v, &fd, &at)))) {
        v.owner = NULL;
        v.mode = OC_BYTES_BORROWED;
    }
    return oc__sha1_span_hex(&v, got, err);
}

/* 0: want is got; 1: want is not 40 hex digits (E-1: no data matches it); 2: differs. */
static int compare_digest(const oc_str *want, const char got[41]) {
    if (want->size != 40) return 1;
    int same = 1;
    for (unsigned i = 0; i < 40; i++) {
        char c = want->data[i];
        if (c >= 'A' && c <= 'F')
            c = (char)(c - 'A' + 'a');
        else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return 1;
        same = same && c == got[i];
    }
    return same ? 0 : 2;
}

static void hash_one(void *ctx, uint64_t i) {
    hashing *h = ctx;
    if (first_failure_skips(&h->failed, i)) return;
    const hash_job *j = &h->jobs[i];
    oc_error scratch;
    char got[41];
    oc_status st = item_sha1(h->l, j->item, got, &scratch);
    if (st == OC_OK && compare_digest(j->want, got) == 0) return;
    first_failure_note(&h->failed, i, st, &scratch);
}

/* The verdict on digest got of tensor t's bytes against its checksum want: OC_OK when
 * they match, else OC_ERR_CHECKSUM saying how they differ. */
static oc_status checksum_verdict(const onnx_TensorProto *t, const oc_str *want, const char got[41],
                                  oc_error *err) {
    char name[OC_QUOTE_SIZE], stored[OC_QUOTE_SIZE];
    switch (compare_digest(want, got)) {
    case 0:
        return OC_OK;
    case 1:
        return oc__fail_rule(err, OC_ERR_CHECKSUM, OC_NO_OFFSET, "E-1",
                             "tensor '%s': external data checksum '%s' is not 40 hex digits (a "
                             "SHA-1), so no data matches it",
                             oc__qname(t, name), oc__qstr(want, stored));
    default:
        return oc__fail_rule(
            err, OC_ERR_CHECKSUM, OC_NO_OFFSET, "E-15",
            "tensor '%s': external data checksum mismatch (stored %s, computed %s)",
            oc__qname(t, name), oc__qstr(want, stored), got);
    }
}

/* The failure of one job, with its message. Hashed first: without OpenSSL any checksum
 * is OC_ERR_UNSUPPORTED, well formed or not. */
static oc_status hash_failure(const loader *l, const hash_job *j) {
    const onnx_TensorProto *t = j->item->tensor;
    char name[OC_QUOTE_SIZE], got[41];
    OC_FORWARD(item_sha1(l, j->item, got, l->err));
    if (compare_digest(j->want, got) == 0) /* later items were not hashed: no success */
        return oc__fail_rule(l->err, OC_ERR_CHECKSUM, OC_NO_OFFSET, "E-15",
                             "tensor '%s': external data checksum did not match, then matched when "
                             "hashed again: its data file changed during the load",
                             oc__qname(t, name));
    return checksum_verdict(t, j->want, got, l->err);
}

/* The failed read read_file kept, if any (l->err may be NULL). */
static oc_status read_failure(loader *l) {
    if (l->read_failed == NO_ITEM) return OC_OK;
    if (l->err) *l->err = l->read_err;
    return l->read_st;
}

/* Checksums, and reads that failed: the first failure in model order (E-15). Items from
 * the failed read on are not hashed: their bytes may not have been read, and the read
 * failure comes first. */
static oc_status check_checksums(loader *l) {
    if (!l->opts->verify_checksums) return read_failure(l);
    hashing h = {.l = l};
    uint64_t n = 0;
    for (uint64_t i = 0; i < l->nitems && i < l->read_failed; i++) {
        const oc_str *want = oc_tensor_external_value(l->items[i].tensor, "checksum");
        if (!want) continue;
        if (!h.jobs && !(h.jobs = malloc((size_t)(l->nitems - i) * sizeof *h.jobs)))
            return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        h.jobs[n++] = (hash_job){&l->items[i], want};
    }
    if (!n) return read_failure(l);
    first_failure_init(&h.failed, n);
    oc__parallel_for(n, oc__resolve_threads(l->opts->num_threads), hash_one, &h);
    uint64_t failed = atomic_load(&h.failed.job);
    oc_status st = OC_OK;
    if (failed < n)
        st = h.failed.st != OC_OK ? first_failure_report(&h.failed, l->err)
                                  : hash_failure(l, &h.jobs[failed]);
    pthread_mutex_destroy(&h.failed.lock);
    free(h.jobs);
    return st == OC_OK ? read_failure(l) : st;
}

static oc_status read_file(loader *l, uint32_t fi);

static oc_status resolve_tensor(loader *l, onnx_TensorProto *t) {
    char name[OC_QUOTE_SIZE], shown[OC_QUOTE_SIZE];
    const oc_str *loc = oc_tensor_external_value(t, "location");
    if (!loc)
        return oc__fail_rule(l->err, OC_ERR_MALFORMED, OC_NO_OFFSET, "E-1",
                             "tensor '%s': external data has no location", oc__qname(t, name));
    /* E-12 first: a reference that cannot be read is refused before any file is opened. */
    uint64_t offset, length;
    bool has_length;
    OC_FORWARD(oc_tensor_external_range(t, &offset, NULL, &length, &has_length, l->err));
    if (!l->first_location.size) l->first_location = *loc;
    uint32_t fi = 0;
    OC_FORWARD(open_datafile(l, t, loc, &fi));
    oc_source *src = l->files[fi].src;
    uint64_t size = l->files[fi].size = src->size;
    if (l->defer && !l->files[fi].id && !(l->files[fi].id = strdup(l->opened_id)))
        return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    if (offset > size)
        return oc__fail(l->err, OC_ERR_TRUNCATED, OC_NO_OFFSET,
                        "tensor '%s': external data offset %llu is past the end of '%s' (%llu "
                        "bytes)",
                        oc__qname(t, name), (unsigned long long)offset, oc__qstr(loc, shown),
                        (unsigned long long)size);
    if (!has_length) length = size - offset; /* to the end of the file, as onnx does */
    if (length > size - offset)              /* overflow-safe offset + length > size */
        return oc__fail(l->err, OC_ERR_TRUNCATED, OC_NO_OFFSET,
                        "tensor '%s': external data [%llu, +%llu) runs past the end of '%s' "
                        "(%llu bytes)",
                        oc__qname(t, name), (unsigned long long)offset, (unsigned long long)length,
                        oc__qstr(loc, shown), (unsigned long long)size);
    /* The caller's caps (limits.h): one tensor, and all external data of this load. */
    char what[2 * OC_QUOTE_SIZE];
    snprintf(what, sizeof what, "tensor '%s': external data", oc__qname(t, name));
    OC_FORWARD(oc__check_size(length, l->opts->max_tensor_bytes, OC_DEFAULT_MAX_TENSOR_BYTES, what,
                              "max_tensor_bytes", OC_NO_OFFSET, l->err));
    l->total = length < UINT64_MAX - l->total ? l->total + length : UINT64_MAX;
    snprintf(what, sizeof what, "external data up to tensor '%s'", oc__qname(t, name));
    OC_FORWARD(oc__check_size(l->total, l->opts->max_external_bytes, OC_DEFAULT_MAX_EXTERNAL_BYTES,
                              what, "max_external_bytes", OC_NO_OFFSET, l->err));
    if (l->nitems == l->capitems) {
        uint64_t cap = l->capitems ? l->capitems * 2 : 64;
        ext_item *it = realloc(l->items, (size_t)cap * sizeof *it);
        if (!it) return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        l->items = it;
        l->capitems = cap;
    }
    ext_item it = {t, {0}, {0}, offset, length, NO_ITEM, fi};
    /* Bytes a source maps are used in place (no_copy) or copied from there; a source that
     * does not map is read (its tensors are copies whatever no_copy says). */
    if (length && (src->caps & OC_SOURCE_MAP) && !l->defer)
        OC_FORWARD(oc_source_map(src, offset, length, &it.span, l->err));
    uint64_t align = l->opts->buffer.alignment;
    if (l->opts->no_copy && align > 1 && it.span.data && ((uintptr_t)it.span.data % align) != 0) {
        oc_bytes_release(&it.span);
        return oc__fail(l->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                        "tensor '%s': external data offset %llu is not aligned to %llu bytes, "
                        "so it cannot be used in place (load without no_copy for an aligned copy)",
                        oc__qname(t, name), (unsigned long long)offset, (unsigned long long)align);
    }
    datafile *df = &l->files[fi];
    if (df->last == NO_ITEM)
        df->first = l->nitems;
    else
        l->items[df->last].next = l->nitems;
    df->last = l->nitems;
    l->items[l->nitems++] = it;
    /* Its last tensor: a file that does not map is read now and closed; deferred, every
     * file is closed. */
    if (df->uses) df->uses--;
    if (df->uses) return OC_OK;
    if (l->defer) {
        df->closed = 1;
        if (l->held != UINT32_MAX) {
            oc_source_unref(l->files[l->held].src);
            l->files[l->held].src = NULL;
        }
        l->held = fi;
        return OC_OK;
    }
    return (src->caps & OC_SOURCE_MAP) ? OC_OK : read_file(l, fi);
}

/* Reads of a file's items into their new storage (ext_item.copy), on several threads;
 * the first failure in model order is kept with its error (first_failure), so the error
 * reported is the serial one whatever the thread count. */
typedef struct reading {
    const loader *l;
    const uint64_t *items; /* indices into l->items */
    first_failure failed;
} reading;

static void read_one(void *ctx, uint64_t j) {
    reading *r = ctx;
    const ext_item *it = &r->l->items[r->items[j]];
    oc_error scratch;
    if (first_failure_skips(&r->failed, j)) return;
    oc_status st =
        read_range(r->l, it, it->at, (uint8_t *)(uintptr_t)it->copy.data, it->length, &scratch);
    if (st != OC_OK) first_failure_note(&r->failed, j, st, &scratch);
}

/* Reads every item of file fi (a source that does not map: no tensor names it after
 * these) into new storage, then closes it. A failed read is kept (loader.read_failed), not
 * returned: later references are checked first. */
static oc_status read_file(loader *l, uint32_t fi) {
    const oc_parse_options *o = l->opts;
    datafile *df = &l->files[fi];
    reading r = {.l = l};
    uint64_t n = 0, *items = NULL;
    oc_status st = OC_OK;
    for (uint64_t i = df->first; i != NO_ITEM; i = l->items[i].next) n++;
    if (n && !(items = malloc((size_t)n * sizeof *items)))
        return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    n = 0;
    for (uint64_t i = df->first; st == OC_OK && i != NO_ITEM; i = l->items[i].next) {
        ext_item *it = &l->items[i];
        uint8_t *p;
        if (!it->length) continue;
        st = oc_bytes_set_storage(&it->copy, it->length, o->buffer.alignment, o->storage_pool, &p,
                                  l->err);
        items[n++] = i;
    }
    if (st == OC_OK && n) {
        r.items = items;
        first_failure_init(&r.failed, n);
        oc__parallel_for(n, oc__resolve_threads(o->num_threads), read_one, &r);
        uint64_t failed = atomic_load(&r.failed.job);
        if (failed < n && items[failed] < l->read_failed) { /* kept for check_checksums */
            l->read_failed = items[failed];
            l->read_st = r.failed.st;
            l->read_err = r.failed.err;
        }
        pthread_mutex_destroy(&r.failed.lock);
    }
    free(items);
    oc_source_unref(df->src);
    df->src = NULL;
    df->closed = 1;
    return st;
}

/* Second pass: nothing changes in the model until every byte is in hand; then it cannot
 * fail. Tensors get their bytes in place (no_copy, a source that maps) or their copy
 * (ext_item.copy): made here from the mapping, in parallel, or by read_file. A failure
 * leaves the copies to load_with, which releases what no tensor took. */
static oc_status attach_all(loader *l) {
    const oc_parse_options *o = l->opts;
    if (!o->no_copy) {
        oc_arena *scratch = oc_arena_new();
        oc__copy_list copies = {0};
        int ok = scratch != NULL;
        for (uint64_t i = 0; ok && i < l->nitems; i++) {
            ext_item *it = &l->items[i];
            uint8_t *p = NULL;
            if (!it->span.data) continue; /* empty, or read_file's copy */
            ok = oc_bytes_set_storage(&it->copy, it->length, o->buffer.alignment, o->storage_pool,
                                      &p, l->err) == OC_OK &&
                 oc__copy_list_add(scratch, &copies, p, it->span.data, it->length, it->span.owner);
        }
        if (ok) oc__copy_run(&copies, oc__resolve_threads(o->num_threads));
        oc_arena_free(scratch);
        if (!ok)
            return oc__fail(l->err, OC_ERR_NOMEM, OC_NO_OFFSET,
                            "out of memory loading external data");
    }
    for (uint64_t i = 0; i < l->nitems; i++) {
        ext_item *it = &l->items[i];
        onnx_TensorProto *t = it->tensor;
        /* in place: the span's reference passes to the tensor (borrowed where the
         * resolver's bytes have no owner: its source outlives the tensors) */
        oc_bytes_move(&t->raw_data, it->copy.data ? &it->copy : &it->span);
        OC_SET_HAS(TensorProto, t, raw_data);
        /* Back to the form before the bytes were moved out (E-16): no data_location. (onnx.load
         * sets DEFAULT explicitly instead; any chain of our conversions then agrees.) */
        t->data_location = 0;
        if (l->opts->loaded_location_default)
            OC_SET_HAS(TensorProto, t, data_location);
        else
            OC_CLEAR_HAS(TensorProto, t, data_location);
        oc__external_drop_known_keys(t); /* keys we do not define stay, never acted on (E-3) */
    }
    return OC_OK;
}

/* The first pass: every reference checked, in model order. */
static oc_status resolve_all(loader *l, const oc_msgdesc *desc, void *msg) {
    const oc_parse_options *opts = l->opts;
    if (opts->buffer.alignment & (opts->buffer.alignment - 1))
        return oc__fail(l->err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "alignment %llu is not a power of two",
                        (unsigned long long)opts->buffer.alignment);
    oc_status st = oc_msg_visit_tensors(desc, msg, count_use, l);
    for (uint64_t i = 0; st == OC_OK && i < l->next; i++) st = resolve_tensor(l, l->ext[i]);
    return st;
}

static void loader_free(loader *l) {
    for (uint64_t i = 0; i < l->nitems; i++) { /* what no tensor took */
        oc_bytes_release(&l->items[i].span);
        oc_bytes_release(&l->items[i].copy);
    }
    for (uint32_t i = 0; i < l->nfiles; i++) { /* tensors hold their own references */
        oc_source_unref(l->files[i].src);
        oc_source_unref(l->files[i].ranged);
        free(l->files[i].key);
        free(l->files[i].id);
    }
    free(l->files);
    oc_nametab_free(l->file_index);
    free(l->items);
    free(l->ext);
    if (l->dirfd >= 0) close(l->dirfd);
    if (l->hub_fd >= 0) close(l->hub_fd);
}

static oc_status load_with(loader *l, const oc_msgdesc *desc, void *msg) {
    oc_status st = resolve_all(l, desc, msg);
    if (st == OC_OK) st = check_checksums(l);
    if (st == OC_OK) st = attach_all(l);
    loader_free(l);
    return st;
}

/* Runs a load whose locations `resolve` resolves with resolve_ctx, or, without it, are
 * files beneath base_dir. opts is a complete struct (OC_PARSE_OPTS). */
static void loader_init(loader *l, oc_external_resolve_fn resolve, void *resolve_ctx,
                        const char *base_dir, const oc_parse_options *opts, oc_error *err) {
    memset(l, 0, sizeof *l);
    l->opts = opts;
    l->resolve = resolve; /* NULL: files beneath base_dir */
    l->resolve_ctx = resolve_ctx;
    l->base_dir = base_dir;
    l->err = err;
    l->dirfd = -1;
    l->hub_fd = -1;
    l->read_failed = NO_ITEM;
    l->held = UINT32_MAX;
}

static oc_status load(const oc_msgdesc *desc, void *msg, oc_external_resolve_fn resolve,
                      void *resolve_ctx, const char *base_dir, const oc_parse_options *opts,
                      oc_error *err) {
    loader l;
    loader_init(&l, resolve, resolve_ctx, base_dir, opts, err);
    return load_with(&l, desc, msg);
}

oc_status oc_external_data_load(const oc_msgdesc *desc, void *msg, const char *base_dir,
                                const oc_parse_options *opts, oc_error *err) {
    if (!desc || !msg || !base_dir)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_external_data_load: missing argument");
    OC_PARSE_OPTS(opts, err);
    return load(desc, msg, NULL, NULL, base_dir, opts, err);
}

oc_status oc_external_data_load_with(const oc_msgdesc *desc, void *msg,
                                     oc_external_resolve_fn resolve, void *resolve_ctx,
                                     const oc_parse_options *opts, oc_error *err) {
    if (!desc || !msg || !resolve)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_external_data_load_with: missing argument");
    OC_PARSE_OPTS(opts, err);
    return load(desc, msg, resolve, resolve_ctx, NULL, opts, err);
}

/* ---- deferred: checked now, streamed later (oc_external_data_open) ---- */

struct oc_external_data {
    loader l;              /* the files (closed, but the last checked) and the items */
    oc_parse_options opts; /* l.opts points here */
    char *base_dir;        /* l.base_dir points here */
    oc_nametab *by_tensor; /* items by their tensor's address */
};

static void item_key(const void *ctx, uint64_t i, const void **name, size_t *len) {
    const loader *l = ctx;
    *name = &l->items[i].tensor;
    *len = sizeof l->items[i].tensor;
}

static oc_status find_item(const oc_external_data *x, const onnx_TensorProto *t, uint64_t *out,
                           oc_error *err) {
    int64_t i = oc_nametab_find(x->by_tensor, &t, sizeof t, oc_nametab_hash(&t, sizeof t));
    if (i < 0) {
        char name[OC_QUOTE_SIZE];
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "tensor '%s' is not an external tensor of the model its data was "
                        "checked for",
                        oc__qname(t, name));
    }
    *out = (uint64_t)i;
    return OC_OK;
}

static oc_status fetch_size(void *ctx, const onnx_TensorProto *t, uint64_t *n, oc_error *err) {
    const oc_external_data *x = ctx;
    uint64_t i = 0;
    OC_FORWARD(find_item(x, t, &i, err));
    *n = x->l.items[i].length;
    return OC_OK;
}

/* Announces the tensor ranges of open file fi to its source (R-11: a remote file is then
 * read in a few large requests rather than one per tensor), when a save reads them in
 * file order and without another file's between them, as writers lay them out; in any
 * other order a read-ahead window would fetch bytes read already or not yet needed, so
 * each tensor is read on its own. */
static void announce(const loader *l, uint32_t fi) {
    const datafile *df = &l->files[fi];
    uint64_t n = 0, end = 0;
    for (uint64_t i = df->first; i != NO_ITEM; i = l->items[i].next, n++) {
        const ext_item *it = &l->items[i];
        if (it->at < end || (it->next != NO_ITEM && it->next != i + 1)) return;
        end = it->at + it->length;
    }
    oc_source_range *r = n ? malloc((size_t)n * sizeof *r) : NULL;
    if (!r) return; /* advice only */
    n = 0;
    for (uint64_t i = df->first; i != NO_ITEM; i = l->items[i].next)
        if (l->items[i].length) r[n++] = (oc_source_range){l->items[i].at, l->items[i].length};
    oc_source_will_read(df->src, r, (size_t)n);
    free(r);
}

/* Data file `it` names, opened again: the same file as when it was checked (its
 * identity, so its size too), or OC_ERR_INCONSISTENT and nothing of it is read. */
static oc_status open_again(loader *l, const ext_item *it, oc_source **out) {
    datafile *df = &l->files[it->file];
    oc_str loc = {df->key, df->key_len};
    oc_source *src = NULL;
    OC_FORWARD(resolve_source(l, it->tensor, &loc, &src));
    if (src->size != df->size || strcmp(l->opened_id, df->id ? df->id : "") != 0) {
        oc_status st = oc__fail(l->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                                "external data file '%s' changed since it was checked (%llu "
                                "bytes, %s; now %llu bytes, %s)",
                                df->key, (unsigned long long)df->size, df->id ? df->id : "",
                                (unsigned long long)src->size, l->opened_id);
        oc_source_unref(src);
        return st;
    }
    *out = src;
    return OC_OK;
}

/* Opens data file fi again for streaming, its tensors announced (announce). */
static oc_status reopen(loader *l, const ext_item *it) {
    OC_FORWARD(open_again(l, it, &l->files[it->file].src));
    announce(l, it->file);
    return OC_OK;
}

/* The bytes on their way to the save's writer, hashed when a checksum is to be checked;
 * a failure of the writer is told apart from the source's. */
typedef struct stream_tee {
    oc_write_fn write;
    void *ctx;
    oc__sha1 *sha1;
    int write_failed;
} stream_tee;

static oc_status tee_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    stream_tee *t = ctx;
    if (t->sha1) OC_FORWARD(oc__sha1_update(t->sha1, data, size, err));
    oc_status st = t->write(t->ctx, data, size, err);
    if (st != OC_OK) t->write_failed = 1;
    return st;
}

/* A file stays open from its first tensor streamed to its last (in the model's order,
 * which is the save's), then closes: files laid out one after another hold one open,
 * interleaved ones each of theirs, as a load does. */
static oc_status fetch_stream(void *ctx, const onnx_TensorProto *t, oc_write_fn write,
                              void *write_ctx, oc_error *err) {
    oc_external_data *x = ctx;
    uint64_t i = 0;
    OC_FORWARD(find_item(x, t, &i, err));
    const ext_item *it = &x->l.items[i];
    datafile *df = &x->l.files[it->file];
    x->l.err = err;
    if (!df->src) OC_FORWARD(reopen(&x->l, it));
    const oc_str *want = x->opts.verify_checksums ? oc_tensor_external_value(t, "checksum") : NULL;
    oc__sha1 sha1 = {0};
    stream_tee tee = {write, write_ctx, want ? &sha1 : NULL, 0};
    if (want) OC_FORWARD(oc__sha1_begin(&sha1, err));
    oc_status st = oc_source_read_to(df->src, it->at, it->length, tee_write, &tee, err);
    if (st != OC_OK && !tee.write_failed) st = read_failed(it, st, err);
    if (st == OC_OK && want) {
        char got[41];
        st = oc__sha1_end_hex(&sha1, got, err);
        if (st == OC_OK) st = checksum_verdict(t, want, got, err);
    }
    oc__sha1_discard(&sha1);
    if (i == df->last) {
        oc_source_unref(df->src);
        df->src = NULL;
    }
    return st;
}

oc_status oc__external_data_read_at(oc_external_data *x, const onnx_TensorProto *t, uint64_t at,
                                    void *dst, uint64_t n, oc_error *err) {
    uint64_t i = 0;
    OC_FORWARD(find_item(x, t, &i, err));
    const ext_item *it = &x->l.items[i];
    if (at > it->length || n > it->length - at)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc__external_data_read_at: bytes %llu..%llu are not in the tensor's %llu",
                        (unsigned long long)at, (unsigned long long)(at + n),
                        (unsigned long long)it->length);
    datafile *df = &x->l.files[it->file];
    x->l.err = err;
    if (!df->ranged) OC_FORWARD(open_again(&x->l, it, &df->ranged));
    return read_failed(it, oc_source_read(df->ranged, it->at + at, dst, n, err), err);
}

oc_status oc__external_data_source(oc_external_data *x, const onnx_TensorProto *t, oc_source **src,
                                   uint64_t *at, oc_error *err) {
    uint64_t i = 0;
    OC_FORWARD(find_item(x, t, &i, err));
    const ext_item *it = &x->l.items[i];
    datafile *df = &x->l.files[it->file];
    x->l.err = err;
    if (!df->ranged) OC_FORWARD(open_again(&x->l, it, &df->ranged));
    *src = df->ranged;
    *at = it->at;
    return OC_OK;
}

oc_status oc_external_data_open(const oc_msgdesc *desc, const void *msg, const char *base_dir,
                                const oc_parse_options *opts, oc_external_data **out,
                                oc_error *err) {
    if (out) *out = NULL;
    if (!desc || !msg || !base_dir || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_external_data_open: missing argument");
    OC_PARSE_OPTS(opts, err);
    oc_external_data *x = calloc(1, sizeof *x);
    char *dir = strdup(base_dir);
    if (!x || !dir) {
        free(x);
        free(dir);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    x->opts = *opts;
    x->base_dir = dir;
    loader_init(&x->l, NULL, NULL, x->base_dir, &x->opts, err);
    x->l.defer = 1;
    /* Nothing of the model is written: a deferred pass only reads the references. */
    oc_status st = resolve_all(&x->l, desc, (void *)(uintptr_t)msg);
    free(x->l.ext); /* the items keep what the fetch needs */
    x->l.ext = NULL;
    if (st == OC_OK && !(x->by_tensor = oc_nametab_new(x->l.nitems, item_key, &x->l)))
        st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    for (uint64_t i = 0; st == OC_OK && i < x->l.nitems; i++) {
        const onnx_TensorProto *t = x->l.items[i].tensor;
        if (oc_nametab_reserve(x->by_tensor) != OC_OK) {
            st = oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
            break;
        }
        oc_nametab_insert(x->by_tensor, i, oc_nametab_hash(&t, sizeof t));
    }
    if (st != OC_OK) {
        oc_external_data_close(x);
        return st;
    }
    x->l.err = NULL;
    if (x->l.held != UINT32_MAX) announce(&x->l, x->l.held); /* open still */
    *out = x;
    return OC_OK;
}

void oc_external_data_fetch(oc_external_data *x, oc_tensor_fetch *fetch) {
    if (!fetch) return;
    fetch->size = x ? fetch_size : NULL;
    fetch->stream = x ? fetch_stream : NULL;
    fetch->ctx = x;
}

void oc_external_data_close(oc_external_data *x) {
    if (!x) return;
    oc_nametab_free(x->by_tensor);
    loader_free(&x->l);
    free(x->base_dir);
    free(x);
}
