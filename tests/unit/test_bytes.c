/*
 * test_bytes.c - byte spans (bytes.h): the owned, borrowed and shared modes, copy and move,
 * owner tokens and their thread safety; status names and error records (status.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <onnxcore/onnxcore.h>

#include "check.h"
#include "testdir.h"
#include "internal/onnxcore_atomic.h" /* internal: the static library's */

/* Internal (internal/bytes.h): whether a span's bytes can be read from its file. */
bool oc__bytes_file_source(const oc_bytes *span, int *fd, uint64_t *offset);

/* An owner whose release we observe. */
typedef struct probe {
    atomic_int released;
    void *buffer; /* freed by the release callback when not NULL */
} probe;

static void probe_release(void *ctx) {
    probe *p = ctx;
    atomic_fetch_add(&p->released, 1);
    free(p->buffer);
    p->buffer = NULL;
}

static int is_aligned(const void *p, uintptr_t a) { return ((uintptr_t)p % a) == 0; }

static int span_is_empty(const oc_bytes *s) {
    return s->data == NULL && s->size == 0 && s->owner == NULL && s->mode == OC_BYTES_OWNED;
}

static void test_status(void) {
    for (int c = 0; c <= OC_ERR_CANCELLED; c++) {
        const char *n = oc_status_name((oc_status)c);
        CHECK(n != NULL);
        CHECK(n && n[0] != '\0');
    }
    CHECK(oc_status_name((oc_status)999) != NULL);
    /* The names are distinct. */
    for (int a = 0; a <= OC_ERR_CANCELLED; a++)
        for (int b = a + 1; b <= OC_ERR_CANCELLED; b++)
            CHECK(strcmp(oc_status_name((oc_status)a), oc_status_name((oc_status)b)) != 0);

    oc_error err;
    memset(&err, 0x5a, sizeof err);
    oc_error_clear(&err);
    CHECK_EQ(err.code, OC_OK);
    CHECK_EQ(err.sys_errno, 0);
    CHECK_EQ(err.message[0], '\0');
    oc_error_clear(NULL);

    oc_parse_options po;
    memset(&po, 0x5a, sizeof po);
    oc_parse_options_init(&po);
    CHECK_EQ(po.buffer.raw_data_threshold, 1024);
    CHECK_EQ(po.buffer.alignment, 0);
    CHECK_EQ(po.no_copy, 0);
    CHECK_EQ(po.num_threads, 0);
    CHECK_EQ(po.max_depth, 0);
    CHECK_EQ(po.skip_raw_data, 0);
    oc_serialize_options so;
    memset(&so, 0x5a, sizeof so);
    oc_serialize_options_init(&so);
    CHECK_EQ(so.buffer.raw_data_threshold, 1024);
    CHECK_EQ(so.buffer.alignment, 0);
    CHECK_EQ(so.no_overwrite, 0);
    CHECK(strcmp(oc_version(), ONNXCORE_VERSION_STRING) == 0);
}

static void test_owned(void) {
    uint8_t src[1000];
    for (int i = 0; i < 1000; i++) src[i] = (uint8_t)(i * 7 + 3);
    oc_bytes s = {0};
    oc_error err;
    oc_error_clear(&err);
    CHECK(span_is_empty(&s));
    CHECK(!oc_bytes_is_borrowed(&s));

    CHECK_OK(oc_bytes_set_copy(&s, src, sizeof src, &err), &err);
    REQUIRE(s.data != NULL);
    CHECK(s.data != src);
    CHECK(is_aligned(s.data, 64));
    CHECK_EQ(s.size, sizeof src);
    CHECK_EQ(s.mode, OC_BYTES_OWNED);
    CHECK_PTR_EQ(s.owner, NULL);
    CHECK(!oc_bytes_is_borrowed(&s));
    CHECK_MEM_EQ(s.data, src, sizeof src);
    /* The copy is independent of the source. */
    src[0] ^= 0xff;
    CHECK_EQ(s.data[0], (uint8_t)(src[0] ^ 0xff));
    src[0] ^= 0xff;

    /* Replacing the copy with another copy. */
    CHECK_OK(oc_bytes_set_copy(&s, src + 1, 100, &err), &err);
    CHECK_EQ(s.size, 100);
    CHECK(is_aligned(s.data, 64));
    CHECK_MEM_EQ(s.data, src + 1, 100);

    oc_bytes_release(&s);
    CHECK(span_is_empty(&s));
    oc_bytes_release(&s); /* twice is fine */
    CHECK(span_is_empty(&s));

    /* An empty copy. */
    CHECK_OK(oc_bytes_set_copy(&s, NULL, 0, &err), &err);
    CHECK_EQ(s.size, 0);
    CHECK_EQ(s.mode, OC_BYTES_OWNED);
    oc_bytes_release(&s);

    /* set_alloc: zero-filled, writable, aligned. */
    uint8_t *w = NULL;
    CHECK_OK(oc_bytes_set_alloc(&s, 4097, &w, &err), &err);
    REQUIRE(w != NULL);
    CHECK_PTR_EQ(w, s.data);
    CHECK_EQ(s.size, 4097);
    CHECK_EQ(s.mode, OC_BYTES_OWNED);
    CHECK(is_aligned(w, 64));
    int nonzero = 0;
    for (int i = 0; i < 4097; i++) nonzero += w[i] != 0;
    CHECK_EQ(nonzero, 0);
    memset(w, 0xab, 4097);
    CHECK_EQ(s.data[4096], 0xab);
    oc_bytes_release(&s);
    CHECK(span_is_empty(&s));

    /* The raw buffer allocator. */
    for (uint64_t sz = 1; sz < 100000; sz = sz * 3 + 1) {
        uint8_t *b = oc_bytes_alloc_buffer(sz);
        CHECK(b != NULL);
        if (!b) continue;
        CHECK(is_aligned(b, 64));
        memset(b, 1, (size_t)sz);
        oc_bytes_free_buffer(b);
    }
    oc_bytes_free_buffer(NULL);
}

static void test_borrowed(void) {
    static const char text[] = "borrowed bytes stay where they are";
    oc_bytes s = {0};
    oc_bytes_set_borrowed(&s, text, sizeof text);
    CHECK_PTR_EQ(s.data, text);
    CHECK_EQ(s.size, sizeof text);
    CHECK_EQ(s.mode, OC_BYTES_BORROWED);
    CHECK_PTR_EQ(s.owner, NULL);
    CHECK(oc_bytes_is_borrowed(&s));
    oc_bytes_release(&s);
    CHECK(span_is_empty(&s));
    CHECK(strcmp(text, "borrowed bytes stay where they are") == 0);

    /* A borrowed span in a heap buffer: releasing does not free it (ASan would see a
     * double free below otherwise). */
    char *heap = malloc(64);
    REQUIRE(heap != NULL);
    memset(heap, 'h', 64);
    oc_bytes_set_borrowed(&s, heap, 64);
    oc_bytes_release(&s);
    CHECK_EQ(heap[63], 'h');
    free(heap);
}

static void test_shared(void) {
    probe p = {0};
    p.buffer = malloc(256);
    REQUIRE(p.buffer != NULL);
    memset(p.buffer, 0x11, 256);
    uint8_t *bytes = p.buffer;

    oc_owner *o = oc_owner_new(probe_release, &p);
    REQUIRE(o != NULL);
    CHECK_EQ(oc_owner_refcount(o), 1);
    CHECK_PTR_EQ(oc_owner_ref(NULL), NULL);
    oc_owner_unref(NULL);

    oc_bytes a = {0};
    oc_bytes_set_shared(&a, bytes + 16, 200, o);
    CHECK_EQ(oc_owner_refcount(o), 2);
    CHECK_PTR_EQ(a.data, bytes + 16);
    CHECK_EQ(a.size, 200);
    CHECK_PTR_EQ(a.owner, o);
    CHECK_EQ(a.mode, OC_BYTES_SHARED);
    CHECK(oc_bytes_is_borrowed(&a));

    oc_bytes b = {0};
    oc_error err;
    oc_error_clear(&err);
    CHECK_OK(oc_bytes_copy(&b, &a, &err), &err);
    CHECK_EQ(oc_owner_refcount(o), 3);
    CHECK_PTR_EQ(b.data, a.data);
    CHECK_EQ(b.size, 200);
    CHECK_PTR_EQ(b.owner, o);
    CHECK_EQ(b.mode, OC_BYTES_SHARED);

    CHECK_PTR_EQ(oc_owner_ref(o), o);
    CHECK_EQ(oc_owner_refcount(o), 4);
    oc_owner_unref(o);
    CHECK_EQ(oc_owner_refcount(o), 3);

    /* The creator drops its reference: the spans keep the storage alive. */
    oc_owner_unref(o);
    CHECK_EQ(oc_owner_refcount(o), 2);
    CHECK_EQ(atomic_load(&p.released), 0);
    oc_bytes_release(&b);
    CHECK(span_is_empty(&b));
    CHECK_EQ(oc_owner_refcount(o), 1);
    CHECK_EQ(atomic_load(&p.released), 0);
    CHECK_EQ(a.data[0], 0x11); /* still readable */
    oc_bytes_release(&a);
    CHECK(span_is_empty(&a));
    CHECK_EQ(atomic_load(&p.released), 1);
    CHECK_PTR_EQ(p.buffer, NULL);
    oc_bytes_release(&a);
    CHECK_EQ(atomic_load(&p.released), 1);
}

/* The span outlives the message tree ("model") it came from. */
static void test_shared_outlives_model(void) {
    probe p = {0};
    p.buffer = malloc(100);
    REQUIRE(p.buffer != NULL);
    memset(p.buffer, 0x22, 100);
    oc_owner *o = oc_owner_new(probe_release, &p);
    REQUIRE(o != NULL);

    oc_arena *arena = oc_arena_new();
    REQUIRE(arena != NULL);
    onnx_TensorProto *t = OC_NEW(arena, TensorProto);
    REQUIRE(t != NULL);
    oc_bytes_set_shared(&t->raw_data, p.buffer, 100, o);
    OC_SET_HAS(TensorProto, t, raw_data);
    oc_owner_unref(o); /* the tensor holds the only reference now */
    CHECK_EQ(oc_owner_refcount(o), 1);

    oc_bytes kept = {0};
    oc_error err;
    oc_error_clear(&err);
    CHECK_OK(oc_bytes_copy(&kept, &t->raw_data, &err), &err);
    CHECK_EQ(oc_owner_refcount(o), 2);

    oc_arena_free(arena); /* the model is gone */
    CHECK_EQ(atomic_load(&p.released), 0);
    CHECK_EQ(oc_owner_refcount(o), 1);
    CHECK_EQ(kept.size, 100);
    CHECK_EQ(kept.data[99], 0x22);
    oc_bytes_release(&kept);
    CHECK_EQ(atomic_load(&p.released), 1);
}

static void test_copy_modes(void) {
    oc_error err;
    oc_error_clear(&err);
    uint8_t src[300];
    for (int i = 0; i < 300; i++) src[i] = (uint8_t)(255 - i);

    /* owned -> duplicated */
    oc_bytes owned = {0}, dst = {0};
    CHECK_OK(oc_bytes_set_copy(&owned, src, sizeof src, &err), &err);
    CHECK_OK(oc_bytes_copy(&dst, &owned, &err), &err);
    CHECK(dst.data != owned.data);
    CHECK(dst.data != src);
    CHECK(is_aligned(dst.data, 64));
    CHECK_EQ(dst.size, 300);
    CHECK_EQ(dst.mode, OC_BYTES_OWNED);
    CHECK_PTR_EQ(dst.owner, NULL);
    CHECK_MEM_EQ(dst.data, src, 300);
    oc_bytes_release(&owned);
    CHECK_MEM_EQ(dst.data, src, 300); /* independent of the source span */

    /* borrowed -> stays borrowed (dst held an owned buffer: released first, no leak) */
    oc_bytes borrowed = {0};
    oc_bytes_set_borrowed(&borrowed, src, 10);
    CHECK_OK(oc_bytes_copy(&dst, &borrowed, &err), &err);
    CHECK_PTR_EQ(dst.data, src);
    CHECK_EQ(dst.size, 10);
    CHECK_EQ(dst.mode, OC_BYTES_BORROWED);
    CHECK_PTR_EQ(dst.owner, NULL);

    /* shared -> one more reference */
    probe p = {0};
    oc_owner *o = oc_owner_new(probe_release, &p);
    REQUIRE(o != NULL);
    oc_bytes shared = {0};
    oc_bytes_set_shared(&shared, src + 5, 20, o);
    CHECK_EQ(oc_owner_refcount(o), 2);
    CHECK_OK(oc_bytes_copy(&dst, &shared, &err), &err);
    CHECK_EQ(oc_owner_refcount(o), 3);
    CHECK_PTR_EQ(dst.data, src + 5);
    CHECK_EQ(dst.mode, OC_BYTES_SHARED);
    CHECK_PTR_EQ(dst.owner, o);

    /* dst is released first: copying an owned span over a shared dst drops its ref. */
    oc_bytes owned2 = {0};
    CHECK_OK(oc_bytes_set_copy(&owned2, src, 3, &err), &err);
    CHECK_OK(oc_bytes_copy(&dst, &owned2, &err), &err);
    CHECK_EQ(oc_owner_refcount(o), 2);
    CHECK_EQ(dst.mode, OC_BYTES_OWNED);
    CHECK_EQ(dst.size, 3);

    /* Copying an empty span gives an empty span. */
    oc_bytes empty = {0};
    CHECK_OK(oc_bytes_copy(&dst, &empty, &err), &err);
    CHECK(span_is_empty(&dst));

    /* The set_* functions replace (and release) what the span held. */
    oc_bytes_set_shared(&dst, src, 1, o);
    CHECK_EQ(oc_owner_refcount(o), 3);
    oc_bytes_set_borrowed(&dst, src, 2);
    CHECK_EQ(oc_owner_refcount(o), 2);
    CHECK_EQ(dst.mode, OC_BYTES_BORROWED);
    oc_bytes_set_shared(&dst, src, 1, o);
    CHECK_EQ(oc_owner_refcount(o), 3);
    CHECK_OK(oc_bytes_set_copy(&dst, src, 4, &err), &err);
    CHECK_EQ(oc_owner_refcount(o), 2);
    CHECK_EQ(dst.mode, OC_BYTES_OWNED);
    oc_bytes_set_shared(&dst, src, 1, o);
    uint8_t *w = NULL;
    CHECK_OK(oc_bytes_set_alloc(&dst, 8, &w, &err), &err);
    CHECK_EQ(oc_owner_refcount(o), 2);
    /* Setting a span shared with the owner it already holds keeps the count right. */
    oc_bytes_set_shared(&dst, src, 1, o);
    oc_bytes_set_shared(&dst, src + 1, 2, o);
    CHECK_EQ(oc_owner_refcount(o), 3);
    CHECK_PTR_EQ(dst.data, src + 1);

    oc_bytes_release(&dst);
    oc_bytes_release(&owned2);
    oc_bytes_release(&shared);
    CHECK_EQ(oc_owner_refcount(o), 1);
    CHECK_EQ(atomic_load(&p.released), 0);
    oc_owner_unref(o);
    CHECK_EQ(atomic_load(&p.released), 1);
}

static void test_move(void) {
    oc_error err;
    oc_error_clear(&err);
    uint8_t src[64];
    memset(src, 0x33, sizeof src);

    oc_bytes a = {0}, b = {0};
    CHECK_OK(oc_bytes_set_copy(&a, src, sizeof src, &err), &err);
    const uint8_t *pa = a.data;
    oc_bytes_move(&b, &a);
    CHECK(span_is_empty(&a));
    CHECK_PTR_EQ(b.data, pa); /* moved, not copied */
    CHECK_EQ(b.size, 64);
    CHECK_EQ(b.mode, OC_BYTES_OWNED);

    /* A shared span moves without touching the count; moving over a shared dst drops
     * dst's reference. */
    probe p1 = {0}, p2 = {0};
    oc_owner *o1 = oc_owner_new(probe_release, &p1);
    oc_owner *o2 = oc_owner_new(probe_release, &p2);
    REQUIRE(o1 && o2);
    oc_bytes s1 = {0}, s2 = {0};
    oc_bytes_set_shared(&s1, src, 10, o1);
    oc_bytes_set_shared(&s2, src, 20, o2);
    oc_owner_unref(o1);
    oc_owner_unref(o2);
    oc_bytes_move(&s2, &s1);
    CHECK(span_is_empty(&s1));
    CHECK_EQ(atomic_load(&p2.released), 1);
    CHECK_EQ(atomic_load(&p1.released), 0);
    CHECK_EQ(oc_owner_refcount(o1), 1);
    CHECK_PTR_EQ(s2.owner, o1);
    CHECK_EQ(s2.size, 10);
    CHECK_EQ(s2.mode, OC_BYTES_SHARED);

    /* Moving an owned span over the shared one releases it; the owned buffer b moves. */
    oc_bytes_move(&s2, &b);
    CHECK(span_is_empty(&b));
    CHECK_EQ(atomic_load(&p1.released), 1);
    CHECK_PTR_EQ(s2.data, pa);

    /* Moving an empty span empties dst. */
    oc_bytes empty = {0};
    oc_bytes_move(&s2, &empty);
    CHECK(span_is_empty(&s2));

    /* Borrowed moves stay borrowed. */
    oc_bytes_set_borrowed(&a, src, 5);
    oc_bytes_move(&b, &a);
    CHECK(span_is_empty(&a));
    CHECK_EQ(b.mode, OC_BYTES_BORROWED);
    CHECK_PTR_EQ(b.data, src);
    oc_bytes_release(&b);

    /* Releasing zeroed and NULL spans. */
    oc_bytes z;
    memset(&z, 0, sizeof z);
    oc_bytes_release(&z);
    CHECK(span_is_empty(&z));
    oc_bytes_release(NULL);
}

/* Owner tokens from several threads. */
enum { NTHREADS = 4, NITER = 100000 };

typedef struct thread_arg {
    oc_owner *owner;
    oc_bytes span; /* each thread holds one span sharing the owner */
} thread_arg;

static void *hammer(void *ctx) {
    thread_arg *a = ctx;
    for (int i = 0; i < NITER; i++) {
        oc_owner_ref(a->owner);
        oc_owner_unref(a->owner);
        if ((i & 1023) == 0) {
            oc_bytes tmp = {0};
            if (oc_bytes_copy(&tmp, &a->span, NULL) == OC_OK) oc_bytes_release(&tmp);
        }
    }
    /* Drop this thread's own reference: the last thread to get here runs the release. */
    oc_bytes_release(&a->span);
    return NULL;
}

static void test_threads(void) {
    static uint8_t storage[128];
    probe p = {0};
    oc_owner *o = oc_owner_new(probe_release, &p);
    REQUIRE(o != NULL);

    thread_arg args[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].owner = o;
        oc_bytes_set_shared(&args[i].span, storage, sizeof storage, o);
    }
    CHECK_EQ(oc_owner_refcount(o), NTHREADS + 1);
    /* Keep our reference while the threads run (they call oc_owner_ref on o). */
    int started = 0;
    for (int i = 0; i < NTHREADS; i++) {
        if (pthread_create(&th[i], NULL, hammer, &args[i]) == 0)
            started++;
        else {
            CHECK(!"pthread_create failed");
            oc_bytes_release(&args[i].span);
        }
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    CHECK_EQ(oc_owner_refcount(o), 1);
    CHECK_EQ(atomic_load(&p.released), 0);
    oc_owner_unref(o);
    CHECK_EQ(atomic_load(&p.released), 1);

    /* Second round: the creator drops its reference first, so the release runs in
     * whichever worker thread drops the last span. */
    probe q = {0};
    oc_owner *o2 = oc_owner_new(probe_release, &q);
    REQUIRE(o2 != NULL);
    for (int i = 0; i < NTHREADS; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].owner = o2;
        oc_bytes_set_shared(&args[i].span, storage, sizeof storage, o2);
    }
    oc_owner_unref(o2); /* the spans hold it now; workers only ref while they hold one */
    started = 0;
    for (int i = 0; i < NTHREADS; i++) {
        if (pthread_create(&th[i], NULL, hammer, &args[i]) == 0)
            started++;
        else {
            CHECK(!"pthread_create failed");
            oc_bytes_release(&args[i].span);
        }
    }
    for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
    CHECK_EQ(atomic_load(&q.released), 1);
}

/* ---- oc_bytes_write: pieces, content, and pages dropped from file mappings ---- */

typedef struct collector {
    uint8_t *buf;
    uint64_t size, pieces, fail_after; /* fail_after: fail the call after this many */
    int misaligned_piece;              /* a piece after the first not chunk-aligned */
    uint64_t largest;                  /* the largest piece */
} collector;

static oc_status collect(void *ctx, const void *data, uint64_t n, oc_error *err) {
    collector *c = ctx;
    if (c->fail_after && c->pieces == c->fail_after) {
        snprintf(err->message, sizeof err->message, "sink full");
        err->code = OC_ERR_IO;
        return OC_ERR_IO;
    }
    if (n == 0 || n > OC_BYTES_WRITE_CHUNK) c->misaligned_piece = 1;
    if (c->pieces && ((uintptr_t)data % OC_BYTES_WRITE_CHUNK) != 0) c->misaligned_piece = 1;
    if (c->buf) memcpy(c->buf + c->size, data, (size_t)n);
    if (n > c->largest) c->largest = n;
    c->size += n;
    c->pieces++;
    return OC_OK;
}

/* Sums the bytes, so every page is touched, and keeps nothing. */
static oc_status touch(void *ctx, const void *data, uint64_t n, oc_error *err) {
    (void)err;
    const uint8_t *p = data;
    uint64_t *sum = ctx;
    for (uint64_t i = 0; i < n; i += 512) *sum += p[i];
    return OC_OK;
}

static uint64_t resident_bytes(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
        fclose(f);
    }
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint8_t pattern(uint64_t i) { return (uint8_t)((i * 2654435761u) >> 13); }

/* oc_bytes_write from a file mapping: read from the file (via_file: the mapping kept a
 * descriptor) or through the mapping's pages, dropped as they are written. */
static void check_bytes_write(int via_file) {
    const uint64_t size = 40u * 1024 * 1024 + 123;
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) return;
    uint8_t *block = malloc(1u << 20);
    CHECK(block != NULL);
    if (!block) return;
    for (uint64_t at = 0; at < size; at += 1u << 20) {
        uint64_t n = size - at < (1u << 20) ? size - at : (1u << 20);
        for (uint64_t i = 0; i < n; i++) block[i] = pattern(at + i);
        CHECK_EQ(fwrite(block, 1, (size_t)n, f), n);
    }
    fflush(f);
    oc_error err;
    oc_mapped m;
    CHECK_OK(oc_map_fd(fileno(f), "pattern", &m, &err), &err);
    int fd_kept;
    uint64_t fd_off;
    oc_bytes whole;
    memset(&whole, 0, sizeof whole);
    oc_bytes_set_shared(&whole, m.data, size, m.owner);
    CHECK_EQ(oc__bytes_file_source(&whole, &fd_kept, &fd_off), via_file);
    oc_bytes_release(&whole);
    uint8_t *out = malloc((size_t)size);
    CHECK(out != NULL);
    /* Spans at awkward places in the mapping: every piece arrives in order, whole pieces
     * start on chunk-aligned addresses, and the bytes are the file's. */
    static const uint64_t offsets[] = {0, 1, 4095, 4097, 16u << 20, (16u << 20) - 1};
    static const uint64_t lengths[] = {0, 1, 4096, (16u << 20) - 1, (16u << 20) + 5, 33u << 20};
    for (unsigned i = 0; out && i < sizeof offsets / sizeof offsets[0]; i++)
        for (unsigned j = 0; j < sizeof lengths / sizeof lengths[0]; j++) {
            uint64_t off = offsets[i], len = lengths[j];
            if (off + len > size) continue;
            oc_bytes span;
            memset(&span, 0, sizeof span);
            oc_bytes_set_shared(&span, m.data + off, len, m.owner);
            collector c = {out, 0, 0, 0, 0, 0};
            CHECK_OK(oc_bytes_write(&span, collect, &c, &err), &err);
            CHECK_EQ(c.size, len);
            if (via_file && len >= OC_BYTES_READ_PIECE) { /* pieces of the read buffer */
                CHECK_EQ(c.pieces, (len + OC_BYTES_READ_PIECE - 1) / OC_BYTES_READ_PIECE);
                CHECK(c.largest <= OC_BYTES_READ_PIECE);
            } else {
                CHECK_EQ(c.misaligned_piece, 0);
                CHECK(c.pieces <= len / OC_BYTES_WRITE_CHUNK + 2);
            }
            CHECK_MEM_EQ(out, m.data + off, (size_t)len);
            /* The dropped pages read back unchanged from the file. */
            int same = 1;
            for (uint64_t k = 0; k < len && same; k += 997)
                same = m.data[off + k] == pattern(off + k);
            CHECK(same);
            oc_bytes_release(&span);
        }
    /* A failing sink stops the write and its error comes back. */
    {
        oc_bytes span;
        memset(&span, 0, sizeof span);
        oc_bytes_set_shared(&span, m.data, size, m.owner);
        collector c = {NULL, 0, 0, 1, 0, 0};
        CHECK_STATUS(oc_bytes_write(&span, collect, &c, &err), OC_ERR_IO, &err);
        CHECK_EQ(c.pieces, 1);
        oc_bytes_release(&span);
    }
    /* Streaming the whole mapping keeps the process's memory bounded: what was read is
     * dropped piece by piece (all 40 MiB touched, well under that stays resident). */
    {
        oc_mapped fresh; /* a mapping of its own, none of its pages touched yet */
        CHECK_OK(oc_map_fd(fileno(f), "pattern", &fresh, &err), &err);
        oc_bytes span;
        memset(&span, 0, sizeof span);
        oc_bytes_set_shared(&span, fresh.data, size, fresh.owner);
        oc_owner_unref(fresh.owner);
        uint64_t sum = 0, before = resident_bytes();
        CHECK_OK(oc_bytes_write(&span, touch, &sum, &err), &err);
        uint64_t after = resident_bytes();
        CHECK(after < before + (24u << 20));
        if (after >= before + (24u << 20))
            fprintf(stderr, "resident grew from %llu to %llu bytes\n", (unsigned long long)before,
                    (unsigned long long)after);
        CHECK(sum > 0);
        oc_bytes_release(&span);
    }
    /* Owned memory is never advised away: its bytes survive the write. */
    {
        oc_bytes span;
        memset(&span, 0, sizeof span);
        CHECK_OK(oc_bytes_set_copy(&span, m.data, 20u << 20, &err), &err);
        uint64_t sum = 0;
        CHECK_OK(oc_bytes_write(&span, touch, &sum, &err), &err);
        CHECK_MEM_EQ(span.data, m.data, (size_t)(20u << 20));
        oc_bytes_release(&span);
    }
    /* Read from the file: a file cut short under its mapping is an error, not a SIGBUS. */
    if (via_file) {
        CHECK_EQ(ftruncate(fileno(f), (off_t)(size / 2)), 0);
        oc_bytes span;
        memset(&span, 0, sizeof span);
        oc_bytes_set_shared(&span, m.data, size, m.owner);
        collector c = {NULL, 0, 0, 0, 0, 0};
        CHECK_STATUS(oc_bytes_write(&span, collect, &c, &err), OC_ERR_TRUNCATED, &err);
        CHECK_EQ(c.size, size / 2 / OC_BYTES_READ_PIECE * OC_BYTES_READ_PIECE);
        char at[64];
        snprintf(at, sizeof at, "cut short at offset %llu ", (unsigned long long)(size / 2));
        CHECK(strstr(err.message, at) != NULL);
        oc_bytes_release(&span);
    }
    free(out);
    free(block);
    oc_owner_unref(m.owner);
    fclose(f);
}

static void test_bytes_write(void) {
    check_bytes_write(1);
    /* While 64 mappings hold descriptors, the next keeps none: its pages are used. */
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) return;
    CHECK_EQ(ftruncate(fileno(f), 1u << 20), 0);
    oc_mapped held[64];
    oc_error err;
    for (int i = 0; i < 64; i++) CHECK_OK(oc_map_fd(fileno(f), "held", &held[i], &err), &err);
    check_bytes_write(0);
    for (int i = 0; i < 64; i++) oc_owner_unref(held[i].owner);
    fclose(f);
}

/* Work directory for files (argv[1], else /tmp). */
static const char *work_dir = "/tmp";

static int open_fds(void) {
    int n = 0;
    for (int fd = 0; fd < 4096; fd++) n += fcntl(fd, F_GETFD) != -1;
    return n;
}

static void make_pattern_file(const char *path, uint64_t size, uint64_t seed) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    for (uint64_t i = 0; i < size; i++) fputc(pattern(i + seed), f);
    fclose(f);
}

/* oc_atomic_write_bytes: spans of a file mapping (which keeps a descriptor of its file)
 * are copied by the kernel at the file position the writes before left, spans of memory
 * go through oc_bytes_write, and the result is the same bytes either way. */
static void test_atomic_write_bytes(void) {
    char dir[4096], src[4200], dst[4200];
    REQUIRE(td_make(work_dir, "atomic_bytes", dir, sizeof dir) == 0);
    snprintf(src, sizeof src, "%s/src.bin", dir);
    snprintf(dst, sizeof dst, "%s/dst.bin", dir);
    const uint64_t size = (5u << 20) + 77;
    make_pattern_file(src, size, 0);
    oc_error err;
    int fds = open_fds();
    oc_mapped m;
    CHECK_OK(oc_map_file(src, &m, &err), &err);
    CHECK_EQ(open_fds(), fds + 1); /* the mapping kept a descriptor of its file */
    static const uint64_t offsets[] = {0, 1, 4095, (1u << 20) + 3};
    static const uint64_t lengths[] = {0, 1, 4096, (2u << 20) + 5};
    oc_bytes owned;
    memset(&owned, 0, sizeof owned);
    CHECK_OK(oc_bytes_set_copy(&owned, "0123456789", 10, &err), &err);
    for (unsigned i = 0; i < 4; i++)
        for (unsigned j = 0; j < 4; j++) {
            uint64_t off = offsets[i], len = lengths[j];
            oc_bytes span;
            memset(&span, 0, sizeof span);
            oc_bytes_set_shared(&span, m.data + off, len, m.owner);
            oc_atomic_file af;
            CHECK_OK(oc_atomic_open(&af, dst, false, &err), &err);
            CHECK_OK(oc_atomic_write(&af, "head", 4, &err), &err); /* a position to append at */
            CHECK_OK(oc_atomic_write_bytes(&af, &span, &err), &err);
            CHECK_OK(oc_atomic_write_bytes(&af, &owned, &err), &err);
            CHECK_OK(oc_atomic_write_bytes(&af, &span, &err), &err); /* again, after memory */
            CHECK_EQ(af.written, 4 + 2 * len + 10);
            CHECK_OK(oc_atomic_commit(&af, &err), &err);
            oc_atomic_abort(&af);
            size_t n = 0;
            uint8_t *got = td_read(dst, &n);
            CHECK(got != NULL);
            CHECK_EQ(n, 4 + 2 * len + 10);
            if (got && n == 4 + 2 * len + 10) {
                CHECK_MEM_EQ(got, "head", 4);
                CHECK_MEM_EQ(got + 4, m.data + off, (size_t)len);
                CHECK_MEM_EQ(got + 4 + len, "0123456789", 10);
                CHECK_MEM_EQ(got + 14 + len, m.data + off, (size_t)len);
            }
            free(got);
            oc_bytes_release(&span);
        }
    oc_bytes_release(&owned);
    /* A file cut short under its mapping: a clear error, not a SIGBUS from the pages. */
    {
        oc_bytes span;
        memset(&span, 0, sizeof span);
        oc_bytes_set_shared(&span, m.data, size, m.owner);
        CHECK_EQ(truncate(src, 1u << 20), 0);
        oc_atomic_file af;
        CHECK_OK(oc_atomic_open(&af, dst, false, &err), &err);
        CHECK_STATUS(oc_atomic_write_bytes(&af, &span, &err), OC_ERR_TRUNCATED, &err);
        CHECK(strstr(err.message, "cut short at offset 1048576") != NULL);
        oc_atomic_abort(&af);
        oc_bytes_release(&span);
    }
    oc_owner_unref(m.owner);
    CHECK_EQ(open_fds(), fds); /* released with the mapping */
    /* A process that closes descriptors it does not own (closefrom) and reuses the number
     * for another file: the copy notices and reads the mapping's pages instead. */
    {
        make_pattern_file(src, size, 0);
        char other[4200];
        snprintf(other, sizeof other, "%s/other.bin", dir);
        make_pattern_file(other, size, 99);
        oc_mapped mm;
        CHECK_OK(oc_map_file(src, &mm, &err), &err);
        int kept = -1;
        for (int fd = 3; fd < 4096 && kept < 0; fd++) {
            char link[64], target[4300];
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            ssize_t k = readlink(link, target, sizeof target - 1);
            if (k > 0) {
                target[k] = '\0';
                if (strcmp(target + (size_t)k - strlen("/src.bin"), "/src.bin") == 0) kept = fd;
            }
        }
        CHECK(kept >= 0);
        int o = open(other, O_RDONLY);
        CHECK(o >= 0 && kept >= 0 && dup2(o, kept) == kept);
        close(o);
        oc_bytes span;
        memset(&span, 0, sizeof span);
        oc_bytes_set_shared(&span, mm.data, size, mm.owner);
        oc_atomic_file af;
        CHECK_OK(oc_atomic_open(&af, dst, false, &err), &err);
        CHECK_OK(oc_atomic_write_bytes(&af, &span, &err), &err);
        CHECK_OK(oc_atomic_commit(&af, &err), &err);
        oc_atomic_abort(&af);
        size_t n = 0;
        uint8_t *got = td_read(dst, &n);
        CHECK(got && n == size && memcmp(got, mm.data, (size_t)size) == 0);
        free(got);
        oc_bytes_release(&span);
        oc_owner_unref(mm.owner); /* closes `kept`, now the other file's: ours to lose */
    }
    /* At most 64 mappings keep a descriptor; the others are written through their pages,
     * with the same result. Small files keep none. */
    {
        enum { N = 70 };
        static oc_mapped maps[N];
        char name[4300];
        for (int i = 0; i < N; i++) {
            snprintf(name, sizeof name, "%s/f%d.bin", dir, i);
            make_pattern_file(name, (1u << 20) + (uint64_t)i, (uint64_t)i);
            CHECK_OK(oc_map_file(name, &maps[i], &err), &err);
        }
        CHECK_EQ(open_fds(), fds + 64);
        oc_atomic_file af;
        CHECK_OK(oc_atomic_open(&af, dst, false, &err), &err);
        for (int i = 0; i < N; i++) {
            oc_bytes span;
            memset(&span, 0, sizeof span);
            oc_bytes_set_shared(&span, maps[i].data, maps[i].size, maps[i].owner);
            CHECK_OK(oc_atomic_write_bytes(&af, &span, &err), &err);
            oc_bytes_release(&span);
        }
        CHECK_OK(oc_atomic_commit(&af, &err), &err);
        oc_atomic_abort(&af);
        size_t n = 0;
        uint64_t at = 0;
        uint8_t *got = td_read(dst, &n);
        int same = got != NULL;
        for (int i = 0; i < N && same; i++) {
            same = at + maps[i].size <= n && memcmp(got + at, maps[i].data, maps[i].size) == 0;
            at += maps[i].size;
        }
        CHECK(same && at == n);
        free(got);
        for (int i = 0; i < N; i++) {
            oc_owner_unref(maps[i].owner);
            snprintf(name, sizeof name, "%s/f%d.bin", dir, i);
            remove(name);
        }
        CHECK_EQ(open_fds(), fds);
        snprintf(name, sizeof name, "%s/small.bin", dir);
        make_pattern_file(name, 1000, 0);
        CHECK_OK(oc_map_file(name, &maps[0], &err), &err);
        CHECK_EQ(open_fds(), fds);
        oc_owner_unref(maps[0].owner);
        remove(name);
    }
    td_remove(dir);
}

int main(int argc, char **argv) {
    if (argc > 1) work_dir = argv[1];
    RUN(test_status);
    RUN(test_owned);
    RUN(test_borrowed);
    RUN(test_shared);
    RUN(test_shared_outlives_model);
    RUN(test_copy_modes);
    RUN(test_move);
    RUN(test_threads);
    RUN(test_bytes_write);
    RUN(test_atomic_write_bytes);
    return check_report("test_bytes");
}
