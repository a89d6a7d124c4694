/*
 * read_many.c - oz_reader_read_many (onnxz/read_many.h): many tensors or slices of an open
 * reader read into the caller's buffers by several threads.
 *
 * Every request is checked first (its tensor's size, W-40, its buffer's size). Then each
 * is planned as pieces, one per contiguous run of its bytes: a piece either preads the
 * file the reader opened (the descriptor its mapping keeps, so the bytes are those of the
 * file opened, L-2, without faulting the mapping's pages in), or copies from memory the
 * reader holds (a small file's mapping, converted typed fields, a decrypted file). The
 * pieces are cut into chunks of CHUNK bytes handed out to the threads (oc__parallel_for):
 * a large tensor is shared, small ones are spread. Requests whose bytes are fetched at
 * each read (a URL's, the data files of an encrypted .onnx) are read first, on the
 * calling thread, by oz_reader_read_slice_into: one ranged read per run of bytes, large
 * ones split over the connections of oc_http_options.parallel, cancelled by its cancel.
 * So is a DEFLATED entry: inflated as a stream straight into the request's buffer, up to
 * its slice's last byte (Z-79), never whole into memory of its own, so that a slice costs
 * memory in proportion to the slice, not to the tensor (a small archive of a large
 * compressible tensor would otherwise make each request hold the whole tensor).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <onnxcore/tensor.h>

#include "onnxz/read_many.h"
#include "internal/crc.h"
#include "internal/error.h"
#include "internal/open.h"
#include "internal/parallel.h"
#include "internal/options.h"
#include "internal/slice.h"
#include "internal/source.h"
#include "internal/source_file.h"

#define CHUNK   ((uint64_t)4 << 20) /* bytes a thread takes at a time */
#define POLL_NS 100000000L          /* the caller's cancel, asked this often (100 ms) */

void oz_read_many_options_init(oz_read_many_options *opts) {
    static const oz_read_many_options defaults = OZ_READ_MANY_OPTIONS_INIT;
    *opts = defaults;
}

/* One contiguous run of a request's bytes: preads of fd at off, or a copy from src. */
typedef struct piece {
    uint8_t *dst;
    uint64_t n;
    const uint8_t *src; /* NULL: pread */
    int fd;
    uint64_t off;
    const char *file; /* the file read (a source's name), for messages; NULL for memory */
    size_t req;
    uint64_t first_chunk; /* the number of the piece's first chunk */
} piece;

typedef struct many {
    oz_reader *r;
    const oz_read_request *reqs;
    const oz_read_many_options *o;
    oc_bytes *held; /* per request: the bytes r holds for its tensor (spans, or owned) */
    piece *pieces;
    size_t npieces, cap;
    uint64_t nchunks;
    pthread_t caller;
    struct timespec polled;
    atomic_int stop; /* a failure or a cancel: the chunks not begun are left */
    pthread_mutex_t mu;
    bool failed; /* under mu: the first failure's st and err */
    oc_status st;
    oc_error err;
} many;

static const onnx_TensorProto *tensor_of(const oz_read_request *q) {
    return q->slice ? oz__slice_tensor(q->slice) : q->tensor;
}

/* err (a failure about the tensor of request q) names the tensor: "tensor 'X': " put before
 * a message that does not name it already, the file it names kept pointed at. */
static oc_status name_tensor(const oz_read_request *q, oc_status st, oc_error *err) {
    const onnx_TensorProto *t = tensor_of(q);
    char name[OC_QUOTE_SIZE], quoted[OC_QUOTE_SIZE + 16], old[OC_ERROR_MESSAGE_MAX];
    if (!err || !t) return st;
    snprintf(quoted, sizeof quoted, "'%s'",
             oc_quote(t->name.data, t->name.size, name, sizeof name));
    if (strstr(err->message, quoted)) return st;
    memcpy(old, err->message, sizeof old);
    int k = snprintf(err->message, sizeof err->message, "tensor %s: %s", quoted, old);
    size_t shift = (size_t)k - strlen(old);
    if (err->file_len && (size_t)err->file_at + err->file_len + shift < sizeof err->message)
        err->file_at = (uint16_t)(err->file_at + shift);
    else
        err->file_len = 0; /* cut off */
    return st;
}

/* ---- checks and plan ---- */

/* Request i's buffer and size against the bytes it reads; the tensor checked as a read
 * checks it (W-40, a data file left unopened). */
static oc_status check_request(many *m, size_t i, oc_error *err) {
    const oz_read_request *q = &m->reqs[i];
    char name[OC_QUOTE_SIZE];
    if (!q->tensor == !q->slice)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_reader_read_many: request %zu names %s", i,
                        q->tensor ? "both a tensor and a slice" : "neither a tensor nor a slice");
    const onnx_TensorProto *t = tensor_of(q);
    const char *shown = oc_quote(t->name.data, t->name.size, name, sizeof name);
    uint64_t have = 0;
    oc_status st = oz_reader_size(m->r, t, &have, err);
    if (st != OC_OK) return name_tensor(q, st, err);
    st = oz__reader_check_entry(m->r, t, err); /* G-51: its entry's digest, first */
    if (st != OC_OK) return name_tensor(q, st, err);
    if (q->slice && have != oz__slice_whole(q->slice))
        return oc__fail_rule(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "W-40",
                             "tensor '%s': its data holds %llu bytes, its dims make %llu", shown,
                             (unsigned long long)have,
                             (unsigned long long)oz__slice_whole(q->slice));
    uint64_t want = q->slice ? oz_slice_size(q->slice) : have;
    if (q->size != want)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "tensor '%s': a buffer of %llu bytes for the %llu bytes of %s", shown,
                        (unsigned long long)q->size, (unsigned long long)want,
                        q->slice ? "its slice" : "the tensor");
    if (!q->dst && want)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "tensor '%s': no buffer", shown);
    return OC_OK;
}

/* Request q's runs, each handed to fn with its offset in the tensor, its length and
 * where it goes in q->dst: a slice's runs, adjacent ones joined; or the whole tensor. */
typedef oc_status (*run_fn)(void *ctx, size_t i, uint64_t at, uint64_t n, uint8_t *dst,
                            oc_error *err);

static oc_status each_run(const oz_read_request *q, size_t i, run_fn fn, void *ctx, oc_error *err) {
    if (!q->slice) return q->size ? fn(ctx, i, 0, q->size, q->dst, err) : OC_OK;
    uint64_t at = 0, n = 0, done = 0;
    for (uint64_t k = 0; k < oz_slice_runs(q->slice); k++) {
        uint64_t a, len;
        oz_slice_run(q->slice, k, &a, &len);
        if (n && a == at + n) {
            n += len;
            continue;
        }
        if (n) OC_FORWARD(fn(ctx, i, at, n, (uint8_t *)q->dst + done, err));
        done += n;
        at = a;
        n = len;
    }
    return n ? fn(ctx, i, at, n, (uint8_t *)q->dst + done, err) : OC_OK;
}

/* A run of request i, at `at` in the bytes m->held[i] holds: a piece to read by pread
 * or copy (run_fn). */
static oc_status add_piece(void *ctx, size_t i, uint64_t at, uint64_t n, uint8_t *dst,
                           oc_error *err) {
    many *m = ctx;
    const oc_bytes *b = &m->held[i];
    if (m->npieces == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        piece *p = realloc(m->pieces, cap * sizeof *p);
        if (!p) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        m->pieces = p;
        m->cap = cap;
    }
    piece *p = &m->pieces[m->npieces++];
    *p = (piece){dst, n, b->data + at, -1, 0, NULL, i, m->nchunks};
    uint64_t off, src_at;
    if (oc__bytes_file_source(b, &p->fd, &off)) {
        p->src = NULL;
        p->off = off + at;
        p->file = oc__bytes_source(b, &src_at)->name;
    }
    m->nchunks += (n + CHUNK - 1) / CHUNK;
    return OC_OK;
}

/* Request i's pieces: its runs (a slice's, adjacent ones joined; or the whole tensor) in
 * the bytes r holds for its tensor. */
static oc_status plan_request(many *m, size_t i, oc_error *err) {
    const oz_read_request *q = &m->reqs[i];
    oc_status st = oz_reader_read(m->r, tensor_of(q), &m->held[i], err);
    if (st != OC_OK) return name_tensor(q, st, err);
    uint64_t whole = q->slice ? oz__slice_whole(q->slice) : q->size;
    if (m->held[i].size != whole) /* oz_reader_size said otherwise a moment ago */
        return name_tensor(q,
                           oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                                    "read %llu bytes where its size is %llu",
                                    (unsigned long long)m->held[i].size, (unsigned long long)whole),
                           err);
    return each_run(q, i, add_piece, m, err);
}

/* The requests whose bytes are fetched at each read, by the source they are read from: a
 * URL's archive, a data file of a URL's or an encrypted .onnx (all opened together,
 * oz__reader_data_open). */
typedef struct group {
    oc_source *src;
    oc_external_data *files; /* holds src, or NULL (the archive's) */
    oc_source_piece *pieces;
    size_t *req; /* the request of each piece */
    size_t n, cap;
} group;

/* A request that reads a whole STORED entry of a URL's archive, and the CRC-32 the
 * central directory gives it (R-12: checked as a whole read checks it; Z-79: a part of
 * an entry is not). */
typedef struct crc_check {
    size_t req;
    const char *entry;
    uint32_t crc;
} crc_check;

static oc_status check_crc(many *m, const crc_check *c, oc_error *err) {
    const oz_read_request *q = &m->reqs[c->req];
    uint32_t got = oz__crc32(0, q->dst, q->size);
    if (got == c->crc) return OC_OK;
    char name[OC_QUOTE_SIZE];
    const char *url = oz__reader_name(m->r);
    return name_tensor(
        q,
        oc_error_file(err, url,
                      oc__fail_rule(err, OC_ERR_CHECKSUM, OC_NO_OFFSET, "R-12",
                                    "%s: the CRC-32 of entry '%s' is 0x%08x, but the central "
                                    "directory says 0x%08x",
                                    url, oc_quote(c->entry, strlen(c->entry), name, sizeof name),
                                    got, c->crc)),
        err);
}

/* A group with the offset in its source of the tensor a request reads. */
typedef struct group_at {
    group *g;
    uint64_t base;
} group_at;

/* A run of request req, at `at` in its tensor: a piece of the group (run_fn). */
static oc_status group_add(void *ctx, size_t req, uint64_t at, uint64_t n, uint8_t *dst,
                           oc_error *err) {
    group *g = ((group_at *)ctx)->g;
    at += ((group_at *)ctx)->base;
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 16;
        oc_source_piece *p = realloc(g->pieces, cap * sizeof *p);
        if (p) g->pieces = p;
        size_t *q = p ? realloc(g->req, cap * sizeof *q) : NULL;
        if (!q) return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
        g->req = q;
        g->cap = cap;
    }
    g->pieces[g->n] = (oc_source_piece){at, n, dst};
    g->req[g->n++] = req;
    return OC_OK;
}

/* Request i's runs as pieces of the group g of its source, the tensor at base in it. */
static oc_status group_request(group *g, const oz_read_request *q, size_t i, uint64_t base,
                               oc_error *err) {
    group_at ga = {g, base};
    return each_run(q, i, group_add, &ga, err);
}

/* The requests whose bytes are fetched at each read and lie nowhere they can be read in
 * parts (a DEFLATED entry, local or a URL's): reqs[idx[0..n)] (marked read here), each
 * straight into its buffer as oz_reader_read_slice_into reads it (inflated as a stream,
 * a whole one checked as a whole read is, Z-77); those of one tensor together, its
 * entry inflated once for them all (oz__reader_slices_into). */
static oc_status fetch_streamed(many *m, size_t *idx, size_t n, oc_error *err) {
    const oz_slice **ss = calloc(n ? n : 1, sizeof *ss);
    oz_slice **own = calloc(n ? n : 1, sizeof *own);
    uint8_t **dsts = calloc(n ? n : 1, sizeof *dsts);
    oc_status st =
        ss && own && dsts ? OC_OK : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    for (size_t i = 0; st == OC_OK && i < n; i++) {
        if (idx[i] == SIZE_MAX) continue; /* read with an earlier one of its tensor */
        const oz_read_request *first = &m->reqs[idx[i]];
        const onnx_TensorProto *t = tensor_of(first);
        size_t k = 0;
        for (size_t j = i; st == OC_OK && j < n; j++) {
            const oz_read_request *q = idx[j] == SIZE_MAX ? NULL : &m->reqs[idx[j]];
            if (!q || tensor_of(q) != t) continue;
            idx[j] = SIZE_MAX;
            own[k] = NULL;
            if (!q->slice) st = oz_slice_new(q->tensor, NULL, 0, &own[k], err);
            ss[k] = q->slice ? q->slice : own[k];
            dsts[k++] = q->dst;
        }
        if (st == OC_OK && m->o->cancel && m->o->cancel(m->o->cancel_ctx))
            st = oc__fail(err, OC_ERR_CANCELLED, OC_NO_OFFSET, "cancelled");
        if (st == OC_OK) st = oz__reader_slices_into(m->r, ss, dsts, k, err);
        for (size_t j = 0; j < k; j++) oz_slice_free(own[j]);
        if (st != OC_OK) st = name_tensor(first, st, err);
    }
    free(ss);
    free(own);
    free(dsts);
    return st;
}

/* The requests fetched at each read (oz__reader_fetches): planned as pieces of the
 * sources they lie in, then each source's pieces read at once (oc_source_read_pieces: from
 * a URL each run of touching pieces one request, the requests in parallel), on this
 * thread; the reader's HTTP cancel is asked meanwhile. */
static oc_status fetch_all(many *m, size_t n, oc_error *err) {
    group *gs = calloc(n ? n : 1, sizeof *gs);
    crc_check *crcs = calloc(n ? n : 1, sizeof *crcs);
    const onnx_TensorProto **ts = calloc(n ? n : 1, sizeof *ts);
    size_t *streamed = calloc(n ? n : 1, sizeof *streamed);
    oc_external_data *data = NULL;
    size_t ngs = 0, nts = 0, ncrcs = 0, nstreamed = 0;
    oc_status st = gs && ts && crcs && streamed
                       ? OC_OK
                       : oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    for (size_t i = 0; st == OC_OK && i < n; i++) { /* the tensors fetched, each once */
        const onnx_TensorProto *t = tensor_of(&m->reqs[i]);
        size_t k = 0;
        while (k < nts && ts[k] != t) k++;
        if (k == nts && oz__reader_fetches(m->r, t)) ts[nts++] = t;
    }
    if (st == OC_OK) st = oz__reader_data_open(m->r, ts, nts, &data, err);
    for (size_t i = 0; st == OC_OK && i < n; i++) {
        const oz_read_request *q = &m->reqs[i];
        if (!oz__reader_fetches(m->r, tensor_of(q))) continue;
        oc_source *src = NULL;
        oc_external_data *files = NULL;
        uint64_t base = 0;
        const char *entry = NULL;
        uint32_t crc = 0;
        st = oz__reader_ranged(m->r, tensor_of(q), data, &src, &base, &files, &entry, &crc, err);
        if (st == OC_OK && entry &&
            (!q->slice || oz_slice_size(q->slice) == oz__slice_whole(q->slice)))
            crcs[ncrcs++] = (crc_check){i, entry, crc}; /* all of the entry */
        if (st != OC_OK) {
            oc_external_data_close(files);
            st = name_tensor(q, st, err);
            break;
        }
        if (!src) { /* inflated as a stream, after this loop */
            streamed[nstreamed++] = i;
            continue;
        }
        size_t g = 0;
        while (g < ngs && (files || gs[g].src != src)) g++;
        if (g == ngs)
            gs[ngs++] = (group){src, files, NULL, NULL, 0, 0};
        else
            oc_external_data_close(files); /* never: a data file's group is its own */
        st = group_request(&gs[g], q, i, base, err);
    }
    if (st == OC_OK) st = fetch_streamed(m, streamed, nstreamed, err);
    for (size_t g = 0; st == OC_OK && g < ngs; g++) {
        size_t failed = 0;
        if (m->o->cancel && m->o->cancel(m->o->cancel_ctx))
            st = oc__fail(err, OC_ERR_CANCELLED, OC_NO_OFFSET, "cancelled");
        else
            st = oc_source_read_pieces(gs[g].src, gs[g].pieces, gs[g].n, &failed, err);
        if (st != OC_OK && gs[g].n) st = name_tensor(&m->reqs[gs[g].req[failed]], st, err);
    }
    for (size_t k = 0; st == OC_OK && k < ncrcs; k++) st = check_crc(m, &crcs[k], err);
    for (size_t g = 0; g < ngs; g++) {
        oc_external_data_close(gs[g].files);
        free(gs[g].pieces);
        free(gs[g].req);
    }
    oc_external_data_close(data);
    free(ts);
    free(streamed);
    free(crcs);
    free(gs);
    return st;
}

/* ---- the threads ---- */

static void fail(many *m, const piece *p, oc_status st, const oc_error *e) {
    pthread_mutex_lock(&m->mu);
    if (!m->failed) {
        m->failed = true;
        m->st = st;
        m->err = *e;
        name_tensor(&m->reqs[p->req], st, &m->err);
    }
    pthread_mutex_unlock(&m->mu);
    atomic_store(&m->stop, 1);
}

/* Whether the caller asked to stop: asked on its own thread, every POLL_NS at most. */
static bool cancelled(many *m) {
    struct timespec now;
    if (!m->o->cancel || !pthread_equal(pthread_self(), m->caller)) return false;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long ns = (long long)(now.tv_sec - m->polled.tv_sec) * 1000000000LL +
                   (now.tv_nsec - m->polled.tv_nsec);
    if (ns < POLL_NS) return false;
    m->polled = now;
    return m->o->cancel(m->o->cancel_ctx) != 0;
}

/* Bytes [begin, begin + n) of piece p from its file. */
static oc_status pread_range(const piece *p, uint64_t begin, uint64_t n, oc_error *err) {
    uint64_t done = 0;
    while (done < n) {
        uint64_t want = n - done;
        ssize_t k = pread(p->fd, p->dst + begin + done, want > CHUNK ? CHUNK : (size_t)want,
                          (off_t)(p->off + begin + done));
        if (k < 0 && errno == EINTR) continue;
        if (k < 0)
            return oc_error_file(err, p->file,
                                 oc__fail_errno(err, errno, "cannot read %s at offset %llu",
                                                p->file,
                                                (unsigned long long)(p->off + begin + done)));
        if (k == 0)
            return oc_error_file(err, p->file,
                                 oc__fail(err, OC_ERR_TRUNCATED, p->off + begin + done,
                                          "%s ends before the tensor's bytes do: it was cut "
                                          "short since it was opened",
                                          p->file));
        done += (uint64_t)k;
    }
    return OC_OK;
}

static void run_chunk(void *ctx, uint64_t k) {
    many *m = ctx;
    if (atomic_load(&m->stop)) return;
    size_t lo = 0, hi = m->npieces - 1; /* the last piece whose first chunk is <= k */
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        if (m->pieces[mid].first_chunk <= k)
            lo = mid;
        else
            hi = mid - 1;
    }
    const piece *p = &m->pieces[lo];
    oc_error e;
    oc_error_clear(&e);
    if (cancelled(m)) {
        fail(m, p, oc__fail(&e, OC_ERR_CANCELLED, OC_NO_OFFSET, "cancelled"), &e);
        return;
    }
    uint64_t begin = (k - p->first_chunk) * CHUNK;
    uint64_t n = p->n - begin < CHUNK ? p->n - begin : CHUNK;
    if (p->src) {
        memcpy(p->dst + begin, p->src + begin, (size_t)n);
        return;
    }
    oc_status st = pread_range(p, begin, n, &e);
    if (st != OC_OK) fail(m, p, st, &e);
}

/* ---- the call ---- */

static oc_status read_many(many *m, size_t n, oc_error *err) {
    for (size_t i = 0; i < n; i++) OC_FORWARD(check_request(m, i, err));
    OC_FORWARD(fetch_all(m, n, err)); /* fetched ones first, on this thread */
    for (size_t i = 0; i < n; i++)
        if (!oz__reader_fetches(m->r, tensor_of(&m->reqs[i]))) OC_FORWARD(plan_request(m, i, err));
    if (m->nchunks == 0) return OC_OK;
    int threads = oc__resolve_threads(m->o->num_threads);
    m->caller = pthread_self();
    m->polled = (struct timespec){0, 0}; /* asked at the first chunk, then every POLL_NS */
    if (pthread_mutex_init(&m->mu, NULL) != 0)
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc__parallel_for(m->nchunks, (uint64_t)threads > m->nchunks ? (int)m->nchunks : threads,
                     run_chunk, m);
    pthread_mutex_destroy(&m->mu);
    if (!m->failed) return OC_OK;
    if (err) *err = m->err;
    return m->st;
}

oc_status oz_reader_read_many(oz_reader *r, const oz_read_request *reqs, size_t n,
                              const oz_read_many_options *opts, oc_error *err) {
    oz_read_many_options local;
    if (!r || (!reqs && n))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oz_reader_read_many: missing argument");
    OC_FORWARD(oz__read_many_opts(&opts, &local, err)); /* by the caller's size */
    many m;
    memset(&m, 0, sizeof m);
    m.r = r;
    m.reqs = reqs;
    m.o = opts;
    atomic_init(&m.stop, 0);
    if (n && !(m.held = calloc(n, sizeof *m.held)))
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    oc_status st = read_many(&m, n, err);
    for (size_t i = 0; m.held && i < n; i++) oc_bytes_release(&m.held[i]);
    free(m.held);
    free(m.pieces);
    return st;
}
