/*
 * tests/fuzz/fuzz_common.c - invariants shared by the fuzz targets (see fuzz_common.h).
 */
#include "fuzz_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void (*fuzz_on_fail)(void);

void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...) {
    fprintf(stderr, "fuzz invariant violated at %s:%d: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    if (fuzz_on_fail) fuzz_on_fail();
    abort();
}

uint64_t fuzz_hash(const uint8_t *data, size_t size) {
    uint64_t h = 0xcbf29ce484222325u;
    for (size_t i = 0; i < size; i++) {
        h ^= data[i];
        h *= 0x100000001b3u;
    }
    return h;
}

static int e1_key(const oc_str *k) {
    return oc_str_eq(*k, "location") || oc_str_eq(*k, "offset") || oc_str_eq(*k, "length") ||
           oc_str_eq(*k, "checksum") || oc_str_eq(*k, "basepath");
}

void fuzz_drop_external_keys(onnx_TensorProto *t) {
    uint64_t kept = 0;
    for (uint64_t i = 0; i < t->external_data.count; i++)
        if (!e1_key(&t->external_data.items[i]->key))
            t->external_data.items[kept++] = t->external_data.items[i];
    t->external_data.count = kept;
}

typedef struct first_named {
    const void *name;
    uint64_t size;
    const onnx_TensorProto *t;
} first_named;

static oc_status find_named(void *ctx, onnx_TensorProto *t) {
    first_named *f = ctx;
    if (!f->t && t->name.size == f->size &&
        (f->size == 0 || memcmp(t->name.data, f->name, (size_t)f->size) == 0))
        f->t = t;
    return OC_OK;
}

const onnx_TensorProto *fuzz_first_named(const oc_msgdesc *desc, void *msg, const void *name,
                                         uint64_t size) {
    first_named f = {name, size, NULL};
    oc_msg_visit_tensors(desc, msg, find_named, &f);
    return f.t;
}

uint32_t fuzz_crc32(uint32_t crc, const uint8_t *data, uint64_t size) {
    static uint32_t table[256];
    if (!table[1]) {
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    }
    crc = ~crc;
    for (uint64_t i = 0; i < size; i++) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

#ifdef FUZZ_WRAP_CLOCK
/* Linked with -Wl,--wrap=clock_gettime (the libFuzzer binaries of the archive targets):
 * libonnxz keys each ZIP reader's name table with the wall clock (names.c), and libonnxcore
 * names temporary files after it, which makes the paths a run takes, and so what libFuzzer
 * learns from them, differ from one run of the same seed to the next (run_fuzzers.sh
 * --runs). For the code linked into the binary the wall clock stands still at 1; other
 * clocks pass through. */
int __real_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts);
int __wrap_clock_gettime(clockid_t id, struct timespec *ts) {
    if (id != CLOCK_REALTIME) return __real_clock_gettime(id, ts);
    ts->tv_sec = 1;
    ts->tv_nsec = 0;
    return 0;
}
#endif

/* ---- scratch directory ---- */

static char scratch[4096];

static void remove_flat_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char path[4096 + 256];
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
            if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path)
                unlink(path);
        }
        closedir(d);
    }
    rmdir(dir);
}

static void remove_scratch(void) {
    if (scratch[0]) remove_flat_dir(scratch);
    scratch[0] = '\0';
}

const char *fuzz_scratch_dir(const char *tag) {
    if (scratch[0]) return scratch;
    const char *tmp = getenv("TMPDIR");
    struct stat st;
    if (!tmp || !*tmp)
        tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0
                  ? "/dev/shm"
                  : "/tmp";
    char prefix[128];
    int plen = snprintf(prefix, sizeof prefix, "onnxz-fuzz-%s-", tag);
    FUZZ_CHECK(plen > 0 && plen < (int)sizeof prefix, "tag too long");
    DIR *d = opendir(tmp); /* directories of processes that crashed (no atexit then) */
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strncmp(e->d_name, prefix, (size_t)plen) != 0) continue;
            char *endp;
            long pid = strtol(e->d_name + plen, &endp, 10);
            if (pid <= 0 || *endp != '-' || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
            char path[4096 + 256];
            if (snprintf(path, sizeof path, "%s/%s", tmp, e->d_name) < (int)sizeof path)
                remove_flat_dir(path);
        }
        closedir(d);
    }
    int n = snprintf(scratch, sizeof scratch, "%s/%s%ld-XXXXXX", tmp, prefix, (long)getpid());
    FUZZ_CHECK(n > 0 && n < (int)sizeof scratch, "scratch path too long");
    FUZZ_CHECK(mkdtemp(scratch) != NULL, "mkdtemp %s: %s", scratch, strerror(errno));
    atexit(remove_scratch);
    if (!fuzz_on_fail) fuzz_on_fail = remove_scratch;
    return scratch;
}

void fuzz_write_file(const char *path, const uint8_t *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    FUZZ_CHECK(fd >= 0, "cannot create %s: %s", path, strerror(errno));
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, data + done, size - done);
        FUZZ_CHECK(w > 0, "cannot write %s: %s", path, strerror(errno));
        done += (size_t)w;
    }
    FUZZ_CHECK(close(fd) == 0, "cannot close %s: %s", path, strerror(errno));
}

int fuzz_is_decode_status(oc_status st) {
    return st == OC_ERR_TRUNCATED || st == OC_ERR_MALFORMED || st == OC_ERR_DEPTH ||
           st == OC_ERR_NOMEM;
}

void fuzz_check_error(oc_status st, const oc_error *err, uint64_t input_size) {
    FUZZ_CHECK(st != OC_OK, "a failure must not return OC_OK");
    FUZZ_CHECK(err->code == st, "error record says %s, call returned %s", oc_status_name(err->code),
               oc_status_name(st));
    const char *nul = memchr(err->message, '\0', sizeof err->message);
    FUZZ_CHECK(nul != NULL, "error message is not NUL-terminated");
    FUZZ_CHECK(nul != err->message, "empty error message for %s", oc_status_name(st));
    FUZZ_CHECK(!strchr(err->message, '\n') && !strchr(err->message, '\r'),
               "error message is not one line: %s", err->message);
    FUZZ_CHECK(strcmp(oc_status_name(st), "unknown status") != 0, "status %d has no name", (int)st);
    if (input_size != UINT64_MAX && fuzz_is_decode_status(st) && st != OC_ERR_NOMEM) {
        FUZZ_CHECK(err->offset != OC_NO_OFFSET && err->offset < input_size,
                   "%s: offset %llu is not inside the %llu-byte input (%s)", oc_status_name(st),
                   (unsigned long long)err->offset, (unsigned long long)input_size, err->message);
        FUZZ_CHECK(err->sys_errno == 0, "decode error with errno %d", err->sys_errno);
    }
}

void fuzz_check_same(const char *what, const fuzz_buf *a, const fuzz_buf *b) {
    if (a->size == b->size && (a->size == 0 || memcmp(a->data, b->data, (size_t)a->size) == 0))
        return;
    uint64_t i = 0, n = a->size < b->size ? a->size : b->size;
    while (i < n && a->data[i] == b->data[i]) i++;
    fuzz_fail(__FILE__, __LINE__, what,
              "encodings differ: %llu vs %llu bytes, first difference at offset %llu",
              (unsigned long long)a->size, (unsigned long long)b->size, (unsigned long long)i);
}

/* ---- tensor walk ---- */

static oc_status check_span(void *ctx, onnx_TensorProto *t) {
    fuzz_span_rules *r = ctx;
    const oc_bytes *b = &t->raw_data;
    r->tensors++;
    FUZZ_CHECK(b->mode == OC_BYTES_OWNED || b->mode == OC_BYTES_BORROWED ||
                   b->mode == OC_BYTES_SHARED,
               "span mode %d", (int)b->mode);
    if (!OC_HAS(TensorProto, t, raw_data)) {
        FUZZ_CHECK(b->size == 0 && b->data == NULL && b->mode == OC_BYTES_OWNED,
                   "raw_data absent but the span holds %llu bytes (mode %d)",
                   (unsigned long long)b->size, (int)b->mode);
        return OC_OK;
    }
    FUZZ_CHECK(b->size == 0 || b->data != NULL, "%llu-byte span without data",
               (unsigned long long)b->size);
    switch (b->mode) {
    case OC_BYTES_OWNED:
        FUZZ_CHECK(b->owner == NULL, "owned span with an owner token");
        FUZZ_CHECK(b->size == 0 || ((uintptr_t)b->data & 63u) == 0,
                   "owned span not 64-byte aligned");
        break;
    case OC_BYTES_BORROWED:
        FUZZ_CHECK(r->allow_borrowed, "borrowed span where none may be");
        FUZZ_CHECK(b->owner == NULL, "borrowed span with an owner token");
        if (r->lo && b->size) {
            FUZZ_CHECK(
                b->data >= r->lo && b->data <= r->hi && b->size <= (uint64_t)(r->hi - b->data),
                "borrowed span of %llu bytes outside its buffer", (unsigned long long)b->size);
        }
        break;
    case OC_BYTES_SHARED:
        FUZZ_CHECK(r->allow_shared, "shared span where none may be");
        FUZZ_CHECK(b->owner != NULL && oc_owner_refcount(b->owner) >= 1,
                   "shared span without a live owner");
        break;
    }
    uint64_t sum = 0;
    for (uint64_t i = 0; i < b->size; i++) sum += b->data[i]; /* ASan checks every byte */
    r->checksum += sum;
    return OC_OK;
}

/* ---- an independent tensor count, from the encoding ----
 *
 * oc_msg_visit_tensors follows only the fields that can lead to a tensor. To check that it
 * misses none, a second walk here reads a canonical encoding with tables of our own
 * (expanded from schema.def): every TensorProto reached through known message fields is
 * counted and its raw_data bytes summed, the way check_span does. */

typedef struct wfield {
    uint32_t number;
    const char *type; /* "MSG", "SPAN", ... */
    const char *sub;  /* message type for MSG */
} wfield;

#define FUZZ_X_WFIELD_(M, name, num, TYPE, LABEL, SUB) {num, #TYPE, #SUB},
#define FUZZ_X_WTABLE_(M, N)                           static const wfield wf_##M[] = {ONNX_FIELDS_##M(FUZZ_X_WFIELD_)};
ONNX_MESSAGES(FUZZ_X_WTABLE_)

typedef struct wmsg {
    const char *cname, *pname;
    const wfield *fields;
    size_t nfields;
} wmsg;

#define FUZZ_X_WMSG_(M, N) {#M, N, wf_##M, sizeof wf_##M / sizeof wf_##M[0]},
static const wmsg wmsgs[] = {ONNX_MESSAGES(FUZZ_X_WMSG_)};
#define NWMSGS (sizeof wmsgs / sizeof wmsgs[0])

static int wmsg_by_cname(const char *c) {
    for (size_t i = 0; i < NWMSGS; i++)
        if (strcmp(wmsgs[i].cname, c) == 0) return (int)i;
    return -1;
}

static int wvarint(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    *v = 0;
    for (unsigned shift = 0; shift < 70 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        if (shift < 64) *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return 1;
    }
    return 0;
}

typedef struct wcount {
    uint64_t tensors, checksum;
} wcount;

static void wwalk(int mi, const uint8_t *p, const uint8_t *end, int is_tensor, wcount *c,
                  unsigned depth) {
    FUZZ_CHECK(depth <= OC_MAX_DEPTH_HARD + 1, "our own encoding nests too deep");
    while (p < end) {
        uint64_t key, v;
        FUZZ_CHECK(wvarint(&p, end, &key), "our own encoding has a bad tag");
        uint32_t wt = (uint32_t)(key & 7);
        uint64_t num = key >> 3;
        const wfield *f = NULL;
        for (size_t i = 0; i < wmsgs[mi].nfields; i++)
            if (wmsgs[mi].fields[i].number == num) f = &wmsgs[mi].fields[i];
        switch (wt) {
        case 0:
            FUZZ_CHECK(wvarint(&p, end, &v), "our own encoding has a bad varint");
            break;
        case 1:
        case 5: {
            uint64_t n = wt == 1 ? 8 : 4;
            FUZZ_CHECK((uint64_t)(end - p) >= n, "our own encoding is truncated");
            p += n;
            break;
        }
        case 2:
            FUZZ_CHECK(wvarint(&p, end, &v) && v <= (uint64_t)(end - p),
                       "our own encoding has a bad length");
            if (f && strcmp(f->type, "MSG") == 0) {
                int sub = wmsg_by_cname(f->sub);
                FUZZ_CHECK(sub >= 0, "no message %s", f->sub);
                int t = strcmp(f->sub, "TensorProto") == 0;
                if (t) c->tensors++;
                wwalk(sub, p, p + v, t, c, depth + 1);
            } else if (f && is_tensor && strcmp(f->type, "SPAN") == 0) {
                for (uint64_t i = 0; i < v; i++) c->checksum += p[i];
            }
            p += v;
            break;
        case 3: { /* an unknown group, kept: skip to its end, nesting included */
            unsigned level = 1;
            while (level && p < end) {
                FUZZ_CHECK(wvarint(&p, end, &key), "bad tag in a group");
                switch (key & 7) {
                case 0:
                    FUZZ_CHECK(wvarint(&p, end, &v), "bad varint in a group");
                    break;
                case 1:
                    FUZZ_CHECK(end - p >= 8, "truncated group");
                    p += 8;
                    break;
                case 5:
                    FUZZ_CHECK(end - p >= 4, "truncated group");
                    p += 4;
                    break;
                case 2:
                    FUZZ_CHECK(wvarint(&p, end, &v) && v <= (uint64_t)(end - p), "bad length");
                    p += v;
                    break;
                case 3:
                    level++;
                    break;
                case 4:
                    level--;
                    break;
                default:
                    FUZZ_CHECK(0, "bad wire type in a group");
                }
            }
            FUZZ_CHECK(level == 0, "our own encoding has an unclosed group");
            break;
        }
        default:
            FUZZ_CHECK(0, "our own encoding has wire type %u", wt);
        }
    }
}

/* Counts tensors and sums their raw_data bytes in enc, an encoding of desc. */
static wcount walk_encoding(const oc_msgdesc *desc, const fuzz_buf *enc) {
    const char *name = oc_msgdesc_name(desc);
    int mi = -1;
    for (size_t i = 0; i < NWMSGS; i++)
        if (strcmp(wmsgs[i].pname, name) == 0) mi = (int)i;
    FUZZ_CHECK(mi >= 0, "unknown message %s", name);
    wcount c = {0, 0};
    int t = strcmp(name, "TensorProto") == 0;
    if (t) c.tensors++;
    wwalk(mi, enc->data, enc->data + enc->size, t, &c, 1);
    return c;
}

void fuzz_check_tensors(const oc_msgdesc *desc, void *msg, fuzz_span_rules *rules) {
    rules->tensors = 0;
    rules->checksum = 0;
    oc_status st = oc_msg_visit_tensors(desc, msg, check_span, rules);
    FUZZ_CHECK(st == OC_OK, "oc_msg_visit_tensors returned %s", oc_status_name(st));
}

/* ---- encoding ---- */

typedef struct sink {
    uint8_t *data;
    uint64_t size, cap;
    uint64_t calls;
    uint64_t fail_at; /* 1-based call that fails; 0 = never */
    int failed;       /* a call after the failure is a bug */
} sink;

static oc_status sink_write(void *ctx, const void *data, uint64_t size, oc_error *err) {
    sink *s = ctx;
    FUZZ_CHECK(!s->failed, "the encoder wrote again after its sink failed");
    FUZZ_CHECK(size > 0 && data != NULL, "sink called with %llu bytes at %p",
               (unsigned long long)size, data);
    s->calls++;
    if (s->fail_at && s->calls == s->fail_at) {
        s->failed = 1;
        err->code = OC_ERR_IO;
        err->sys_errno = 28; /* ENOSPC, as a full disk would */
        err->offset = OC_NO_OFFSET;
        snprintf(err->message, sizeof err->message, "fuzz sink full");
        return OC_ERR_IO;
    }
    if (s->size + size > s->cap) {
        uint64_t cap = s->cap ? s->cap : 256;
        while (cap < s->size + size) cap *= 2;
        uint8_t *nd = realloc(s->data, (size_t)cap);
        FUZZ_CHECK(nd != NULL, "out of memory in the test sink");
        s->data = nd;
        s->cap = cap;
    }
    memcpy(s->data + s->size, data, (size_t)size);
    s->size += size;
    return OC_OK;
}

fuzz_buf fuzz_encode(const oc_msgdesc *desc, const void *msg) {
    oc_error err;
    oc_error_clear(&err);
    uint64_t size = 0;
    oc_status st = oc_encoded_size(desc, msg, &size, &err);
    FUZZ_CHECK(st == OC_OK, "oc_encoded_size: %s: %s", oc_status_name(st), err.message);

    fuzz_buf out = {NULL, 0};
    void *mem = NULL;
    st = oc_encode_to_memory(desc, msg, &mem, &out.size, &err);
    FUZZ_CHECK(st == OC_OK, "oc_encode_to_memory: %s: %s", oc_status_name(st), err.message);
    out.data = mem;
    FUZZ_CHECK(out.size == size, "oc_encoded_size says %llu, oc_encode_to_memory wrote %llu",
               (unsigned long long)size, (unsigned long long)out.size);

    sink s;
    memset(&s, 0, sizeof s);
    st = oc_encode(desc, msg, sink_write, &s, &err);
    FUZZ_CHECK(st == OC_OK, "oc_encode: %s: %s", oc_status_name(st), err.message);
    fuzz_buf streamed = {s.data, s.size};
    fuzz_check_same("oc_encode to a sink == oc_encode_to_memory", &out, &streamed);
    uint64_t calls = s.calls;
    free(s.data);

    if (calls) { /* a sink failing part-way: its error comes back, nothing is written after */
        memset(&s, 0, sizeof s);
        s.fail_at = (calls + 1) / 2;
        oc_error_clear(&err);
        st = oc_encode(desc, msg, sink_write, &s, &err);
        FUZZ_CHECK(st == OC_ERR_IO && err.code == OC_ERR_IO && err.sys_errno == 28 &&
                       strcmp(err.message, "fuzz sink full") == 0,
                   "a failing sink gave %s (%s)", oc_status_name(st), err.message);
        free(s.data);
    }
    return out;
}

fuzz_buf fuzz_check_roundtrip(const oc_msgdesc *desc, void *msg, const oc_parse_options *opts,
                              const fuzz_span_rules *rules) {
    fuzz_span_rules r = *rules;
    fuzz_check_tensors(desc, msg, &r);
    uint64_t tensors = r.tensors, checksum = r.checksum;

    fuzz_buf enc1 = fuzz_encode(desc, msg);
    wcount wc = walk_encoding(desc, &enc1);
    FUZZ_CHECK(wc.tensors == tensors && wc.checksum == checksum,
               "oc_msg_visit_tensors saw %llu tensors (byte sum %llu), the encoding holds %llu "
               "(byte sum %llu)",
               (unsigned long long)tensors, (unsigned long long)checksum,
               (unsigned long long)wc.tensors, (unsigned long long)wc.checksum);

    /* decode(encode(m)) re-encodes to the same bytes */
    oc_error err;
    oc_error_clear(&err);
    oc_arena *a2 = oc_arena_new();
    FUZZ_CHECK(a2 != NULL, "out of memory");
    void *m2 = oc_msg_new(a2, desc);
    FUZZ_CHECK(m2 != NULL, "out of memory");
    oc_status st = oc_decode(desc, m2, enc1.data, enc1.size, a2, opts, NULL, &err);
    FUZZ_CHECK(st == OC_OK, "our own encoding does not decode: %s at offset %llu: %s",
               oc_status_name(st), (unsigned long long)err.offset, err.message);
    fuzz_span_rules r2 = {1, enc1.data, enc1.data + enc1.size, 0, 0, 0};
    r2.allow_borrowed = opts && opts->no_copy;
    fuzz_check_tensors(desc, m2, &r2);
    FUZZ_CHECK(r2.tensors == tensors && r2.checksum == checksum,
               "re-decoded tree has %llu tensors, the original %llu (or other bytes)",
               (unsigned long long)r2.tensors, (unsigned long long)tensors);
    fuzz_buf enc2 = fuzz_encode(desc, m2);
    fuzz_check_same("encode(decode(encode(m))) == encode(m)", &enc1, &enc2);
    free(enc2.data);

    /* a deep copy encodes the same */
    oc_arena *a3 = oc_arena_new();
    FUZZ_CHECK(a3 != NULL, "out of memory");
    void *copy = NULL;
    st = oc_msg_copy(desc, msg, a3, &copy, &err);
    FUZZ_CHECK(st == OC_OK, "oc_msg_copy: %s: %s", oc_status_name(st), err.message);
    fuzz_span_rules r3 = *rules;
    fuzz_check_tensors(desc, copy, &r3);
    FUZZ_CHECK(r3.tensors == tensors && r3.checksum == checksum,
               "copy has %llu tensors, the original %llu (or other bytes)",
               (unsigned long long)r3.tensors, (unsigned long long)tensors);
    fuzz_buf enc3 = fuzz_encode(desc, copy);
    fuzz_check_same("encode(copy(m)) == encode(m)", &enc1, &enc3);
    free(enc3.data);

    /* a copy of the re-decoded tree survives the arena it came from (shared and owned
     * spans; borrowed ones point into enc1, which is still alive) */
    void *copy2 = NULL;
    st = oc_msg_copy(desc, m2, a3, &copy2, &err);
    FUZZ_CHECK(st == OC_OK, "oc_msg_copy: %s: %s", oc_status_name(st), err.message);
    oc_arena_free(a2);
    fuzz_buf enc4 = fuzz_encode(desc, copy2);
    fuzz_check_same("encode(copy(decode(encode(m)))) after freeing the source", &enc1, &enc4);
    free(enc4.data);
    oc_arena_free(a3);
    return enc1;
}

oc_status fuzz_decode_and_check(const oc_msgdesc *desc, const uint8_t *data, size_t size,
                                const oc_parse_options *opts, fuzz_buf *enc, oc_error *err_out) {
    memset(enc, 0, sizeof *enc);
    oc_error_clear(err_out);
    oc_arena *arena = oc_arena_new();
    FUZZ_CHECK(arena != NULL, "out of memory");
    void *msg = oc_msg_new(arena, desc);
    FUZZ_CHECK(msg != NULL, "out of memory");
    oc_status st = oc_decode(desc, msg, data, size, arena, opts, NULL, err_out);
    fuzz_span_rules rules = {0, data, data + size, 0, 0, 0};
    rules.allow_borrowed = opts && opts->no_copy;
    if (st == OC_OK) {
        *enc = fuzz_check_roundtrip(desc, msg, opts, &rules);
    } else {
        fuzz_check_error(st, err_out, size);
        FUZZ_CHECK(fuzz_is_decode_status(st), "decoding returned %s (%s)", oc_status_name(st),
                   err_out->message);
        /* "On error msg holds what was decoded so far (still safe to free with the
         * arena)": it must also be safe to walk and to encode. */
        fuzz_check_tensors(desc, msg, &rules);
        void *out = NULL;
        uint64_t n = 0;
        oc_error e2;
        if (oc_encode_to_memory(desc, msg, &out, &n, &e2) == OC_OK) free(out);
    }
    oc_arena_free(arena);
    return st;
}

void fuzz_check_merge(const oc_msgdesc *desc, const uint8_t *data, size_t size, size_t split,
                      oc_status whole_st, const fuzz_buf *whole_enc) {
    if (split > size) split = size;
    oc_arena *arena = oc_arena_new();
    FUZZ_CHECK(arena != NULL, "out of memory");
    void *msg = oc_msg_new(arena, desc);
    FUZZ_CHECK(msg != NULL, "out of memory");
    oc_error err;
    oc_error_clear(&err);
    oc_status st = oc_decode(desc, msg, data, split, arena, NULL, NULL, &err);
    if (st == OC_OK) {
        st = oc_decode(desc, msg, data + split, size - split, arena, NULL, NULL, &err);
        if (st != OC_OK) {
            fuzz_check_error(st, &err, size - split);
            FUZZ_CHECK(whole_st != OC_OK, "%s: the whole decodes, its part [%zu, %zu) fails: %s",
                       oc_msgdesc_name(desc), split, size, err.message);
        }
    } else {
        fuzz_check_error(st, &err, split);
    }
    if (st == OC_OK) {
        FUZZ_CHECK(whole_st == OC_OK, "%s: both parts (split at %zu) decode, the whole gives %s",
                   oc_msgdesc_name(desc), split, oc_status_name(whole_st));
        fuzz_buf enc = fuzz_encode(desc, msg);
        fuzz_check_same("decode(a) then decode(b) into it == decode(a ++ b)", whole_enc, &enc);
        free(enc.data);
    }
    oc_arena_free(arena);
}
