/*
 * stream.c - loading a file with pread instead of a mapping (network filesystems, where a
 * mapping can fault unpredictably), in bounded memory beyond the model itself.
 *
 * Parsing is compositional (internal/decode.h): decoding consecutive fragments of a
 * message into the same C message gives what decoding it whole gives. So this layer only
 * walks the large messages field by field: a run of small fields is read with one pread
 * and handed to the ordinary decoder as a fragment; a large submessage (the graph, a big
 * tensor) is walked the same way one level down; a large raw_data is read with pread
 * straight into the tensor's own buffer. Every tensor byte is copied once, from the file
 * into its final storage, and no buffer ever holds the whole file.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnxcore/codec.h"
#include "internal/bytes.h"
#include "internal/decode.h"
#include "internal/error.h"
#include "internal/stream.h"

/* Submessages and raw_data at least this large are streamed rather than read whole. */
#define OC_STREAM_BIG (1u << 20)
/* A field header (tag and length varints) fits in this many bytes. */
#define OC_FIELD_HEADER_MAX 20u

typedef struct sctx {
    int fd;
    const char *path;
    uint64_t size;
    oc_arena *arena;
    const oc_parse_options *opts;
    uint32_t max_depth;
    oc_error *err;
    uint8_t *frag; /* the fragment buffer, grown as needed */
    uint64_t frag_cap;
} sctx;

/* Reads exactly n bytes at `at`; the file was measured, so a short read means it shrank. */
static oc_status sread(sctx *s, uint64_t at, void *dst, uint64_t n) {
    uint8_t *p = dst;
    while (n) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
        ssize_t r = pread(s->fd, p, chunk, (off_t)at);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return oc__fail_errno(s->err, errno, "cannot read %s", s->path);
        if (r == 0)
            return oc__fail(s->err, OC_ERR_TRUNCATED, at, "%s ended while being read", s->path);
        p += r;
        at += (uint64_t)r;
        n -= (uint64_t)r;
    }
    return OC_OK;
}

static oc_status frag_reserve(sctx *s, uint64_t n) {
    if (n <= s->frag_cap) return OC_OK;
    uint64_t cap = s->frag_cap ? s->frag_cap : 1u << 16;
    while (cap < n) cap *= 2;
    uint8_t *p = cap <= SIZE_MAX ? realloc(s->frag, (size_t)cap) : NULL;
    if (!p) return oc__fail(s->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory reading %s", s->path);
    s->frag = p;
    s->frag_cap = cap;
    return OC_OK;
}

/* Decodes [from, to) of the file into msg as one fragment. */
static oc_status flush_run(sctx *s, const oc_msgdesc *d, void *msg, uint64_t from, uint64_t to,
                           uint32_t depth) {
    if (from == to) return OC_OK;
    OC_FORWARD(frag_reserve(s, to - from));
    OC_FORWARD(sread(s, from, s->frag, to - from));
    return oc__decode_at(d, msg, s->frag, to - from, from, depth, s->arena, s->opts, NULL, s->err);
}

/* The end of the field at pos (whose header is in h[0..n)), for fields read whole. */
static oc_status field_end(sctx *s, const uint8_t *h, uint64_t n, uint64_t pos, uint64_t end,
                           uint64_t *out, uint32_t *wt_out, uint64_t *num_out, uint64_t *len_out,
                           uint64_t *hdr_len) {
    const uint8_t *p = h, *e = h + n;
    uint64_t key, v = 0;
    int r = oc__read_varint(&p, e, &key);
    OC_RETURN_ERROR_IF(r == 0, s->err, OC_ERR_TRUNCATED, pos, "input ends inside a tag");
    OC_RETURN_ERROR_IF(r < 0, s->err, OC_ERR_MALFORMED, pos, "tag varint longer than 10 bytes");
    uint32_t wt = (uint32_t)(key & 7);
    uint64_t num = key >> 3;
    OC_RETURN_ERROR_IF(num == 0 || num > OC_MAX_FIELD_NUMBER || wt == 4 || wt > 5, s->err,
                       OC_ERR_MALFORMED, pos, "invalid tag (field %llu, wire type %u)",
                       (unsigned long long)num, wt);
    uint64_t len = 0;
    if (wt == 0 || wt == 2) {
        r = oc__read_varint(&p, e, &v);
        OC_RETURN_ERROR_IF(r == 0, s->err, OC_ERR_TRUNCATED, pos, "input ends inside a varint");
        OC_RETURN_ERROR_IF(r < 0, s->err, OC_ERR_MALFORMED, (uint64_t)(p - h) + pos,
                           "varint longer than 10 bytes");
        if (wt == 2) len = v;
    } else if (wt == 1 || wt == 5) {
        len = wt == 1 ? 8 : 4;
    }
    uint64_t at = pos + (uint64_t)(p - h);
    *hdr_len = (uint64_t)(p - h);
    *wt_out = wt;
    *num_out = num;
    *len_out = len;
    if (wt == 3) { /* a group: its end is only known by parsing it; say "to the end" */
        *out = end;
        return OC_OK;
    }
    OC_RETURN_ERROR_IF(len > end - at, s->err, OC_ERR_TRUNCATED, pos,
                       "field %llu: length %llu runs past the end of its message",
                       (unsigned long long)num, (unsigned long long)len);
    *out = at + len;
    return OC_OK;
}

static oc_status stream_msg(sctx *s, const oc_msgdesc *d, void *msg, uint64_t pos,
                            uint64_t end, uint32_t depth) {
    uint64_t run = pos; /* start of the pending run of small fields */
    while (pos < end) {
        uint8_t h[OC_FIELD_HEADER_MAX];
        uint64_t n = end - pos < sizeof h ? end - pos : sizeof h;
        OC_FORWARD(sread(s, pos, h, n));
        uint64_t next = 0, num = 0, len = 0, hdr = 0;
        uint32_t wt = 0;
        oc_status bad = field_end(s, h, n, pos, end, &next, &wt, &num, &len, &hdr);
        if (bad != OC_OK) {
            /* The fields before this one come first in the file: a fault among them is the
             * one to report, as the mapped decoder would. */
            OC_FORWARD(flush_run(s, d, msg, run, pos, depth));
            return bad;
        }
        const oc_field *f = wt == 2 ? oc__find_field(d, num) : NULL;
        int big_msg = f && f->type == OC_FT_MSG && len >= OC_STREAM_BIG;
        int big_span = f && f->type == OC_FT_SPAN && len >= OC_STREAM_BIG;
        if (!big_msg && !big_span) {
            pos = next; /* part of the run; a group takes the rest of the message with it */
            continue;
        }
        OC_FORWARD(flush_run(s, d, msg, run, pos, depth));
        uint64_t value = pos + hdr;
        if (big_msg) {
            OC_RETURN_ERROR_IF(depth + 1 > s->max_depth, s->err, OC_ERR_DEPTH, pos,
                               "%s nested deeper than %u levels", oc_msgdesc_name(f->sub),
                               s->max_depth);
            void *sub = oc__field_message(s->arena, d, msg, f);
            if (!sub) return oc__fail(s->err, OC_ERR_NOMEM, pos, "out of memory");
            OC_FORWARD(stream_msg(s, f->sub, sub, value, value + len, depth + 1));
        } else {
            oc_bytes *span = (oc_bytes *)(void *)((char *)msg + f->offset);
            if (s->opts->skip_raw_data) {
                oc_bytes_release(span);
            } else {
                OC_FORWARD(oc__check_size(len, s->opts->max_tensor_bytes,
                                          OC_DEFAULT_MAX_TENSOR_BYTES, "raw_data",
                                          "max_tensor_bytes", pos, s->err));
                uint8_t *dst;
                if (oc_bytes_set_storage(span, len, 64, s->opts->storage_pool, &dst, s->err) !=
                    OC_OK)
                    return oc__fail(s->err, OC_ERR_NOMEM, pos, "out of memory for %llu bytes",
                                    (unsigned long long)len);
                oc__hdr(msg)->has |= 1u << f->index;
                oc_status st = sread(s, value, dst, len); /* straight into the tensor */
                if (st != OC_OK) {
                    oc_bytes_release(span);
                    return st;
                }
            }
        }
        pos = run = value + len;
    }
    return flush_run(s, d, msg, run, end, depth);
}

oc_status oc__load_pread(const char *path, const oc_msgdesc *desc, void *msg, oc_arena *arena,
                         const oc_parse_options *opts, oc_error *err) {
    oc_parse_options copy_opts;
    if (opts) {
        copy_opts = *opts;
    } else {
        oc_parse_options_init(&copy_opts);
    }
    copy_opts.no_copy = 0; /* nothing to borrow from: every byte is read into its place */
    sctx s;
    memset(&s, 0, sizeof s);
    s.path = path;
    s.arena = arena;
    s.opts = &copy_opts;
    s.err = err;
    s.max_depth = copy_opts.max_depth ? copy_opts.max_depth : OC_DEFAULT_MAX_DEPTH;
    if (s.max_depth > OC_MAX_DEPTH_HARD) s.max_depth = OC_MAX_DEPTH_HARD;
    s.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (s.fd < 0) return oc__fail_errno(err, errno, "cannot open %s", path);
    struct stat st;
    oc_status r = OC_OK;
    if (fstat(s.fd, &st) != 0)
        r = oc__fail_errno(err, errno, "cannot stat %s", path);
    else if (!S_ISREG(st.st_mode))
        r = oc__fail(err, OC_ERR_IO, OC_NO_OFFSET, "%s is not a regular file", path);
    if (r == OC_OK) {
        s.size = (uint64_t)st.st_size;
        r = oc__check_size(s.size, copy_opts.max_model_bytes, OC_DEFAULT_MAX_MODEL_BYTES,
                           "the serialized model", "max_model_bytes", OC_NO_OFFSET, err);
        if (r == OC_OK) {
            uint64_t previous = oc__budget_begin(arena, &copy_opts);
            r = stream_msg(&s, desc, msg, 0, s.size, 1);
            r = oc__budget_end(arena, previous, &copy_opts, r, err);
        }
    }
    free(s.frag);
    close(s.fd);
    return r;
}
