/*
 * decode.c - the one protobuf decode loop, driven by the descriptor tables.
 *
 * Input is a byte source (internal/source.h). One that maps (memory, a mapped file) is
 * decoded as one contiguous buffer, its large payloads pointing into the mapping (no_copy)
 * or copied (read around the mapping where the source can). One that cannot (a file read
 * with pread, a remote file) is decoded through a window: the same loop runs over the
 * window, and a field that does not fit in it suspends the loop at its tag (decode_msg's
 * only frame that may suspend is the window's own message, before the field changed
 * anything); the driver (decode_window) then refills the window from that tag, walks a
 * large submessage through the source one level down, or reads a large payload straight
 * into the tensor's storage. Parsing is compositional (W-11), so decoding a message in
 * consecutive pieces gives what decoding it whole gives.
 *
 * Every length is compared with the bytes remaining before any pointer arithmetic; every
 * fault names the offset of the field (its tag) where it was found. Semantics follow
 * protobuf's proto2 parser:
 *  - repeated scalars are accepted packed or unpacked;
 *  - a field seen again: scalars and strings take the last value, messages merge,
 *    repeated fields append; a oneof member clears its siblings;
 *  - unknown field numbers, known fields with an unexpected wire type, and closed-enum
 *    values outside the enum are kept verbatim as unknown fields.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "onnxcore/codec.h"
#include "internal/bytes.h"
#include "internal/decode.h"
#include "internal/arena.h"
#include "internal/error.h"
#include "internal/message.h"
#include "internal/parallel.h"
#include "internal/schema.h"
#include "internal/source.h"
#include "internal/onnxcore_shared.h"

/* Payloads at least this large are copied by the thread pool when num_threads > 1. */
#define OC_DEFER_COPY (64u * 1024u)
/* The window of a source that cannot map starts this large. */
#define OC_WINDOW (1u << 20)

/* decode_msg stopped at a field that runs past the window (never returned to callers). */
#define OC__SUSPEND ((oc_status)-1)

/* Where decode_msg suspended: the field's tag, and when the header was read whole, the
 * length of its header and value and the field (NULL: unknown). */
typedef struct suspension {
    uint64_t at, hdr, len;
    int has_len;
    const oc_field *f;
} suspension;

typedef struct dctx {
    const uint8_t *base;  /* start of the input: offsets are reported from here */
    uint64_t base_offset; /* offset of base in the whole input (fragments, see stream.c) */
    oc_arena *arena;
    oc_error *err;
    oc_owner *owner;    /* what keeps the input alive, or NULL: no_copy spans share it,
                         * copies may read its file instead (internal/parallel.h) */
    uint64_t threshold; /* no_copy: borrow raw_data of at least this many bytes */
    uint32_t max_depth;
    int no_copy;
    int skip_raw_data;
    int alias_strings;     /* no_copy: strings point into the input instead of the arena */
    int threads;           /* > 1: payload copies are deferred to `copies`, run in parallel */
    oc_storage_pool *pool; /* where copied payloads get their storage, or NULL */
    uint64_t max_tensor;   /* oc_parse_options.max_tensor_bytes */
    oc__copy_list copies;
    /* Window decoding only (decode_window): */
    uint32_t susp_depth; /* the depth of the window's own message (0: never suspend) */
    int cut;             /* the window ends before that message does */
    uint64_t msg_end;    /* the offset where that message ends */
    suspension susp;
} dctx;

/* Unknown-field bytes of the message being decoded, gathered with a capacity so that
 * many unknown fields cost linear time. */
typedef struct unk_buf {
    char *data;
    uint64_t size, cap;
} unk_buf;

void oc_parse_options_init(oc_parse_options *o) {
    static const oc_parse_options defaults = OC_PARSE_OPTIONS_INIT;
    *o = defaults;
}

static uint64_t off(const dctx *c, const uint8_t *p) {
    return c->base_offset + (uint64_t)(p - c->base);
}

static oc_status nomem(dctx *c, const uint8_t *at) {
    return oc__fail(c->err, OC_ERR_NOMEM, off(c, at), "out of memory while decoding");
}

int oc__read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        if (p >= end) return 0;
        uint8_t b = *p++;
        if (shift < 64) v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 1;
        }
    }
    return -1;
}

static oc_status varint_slow(dctx *c, const uint8_t **p, const uint8_t *end, uint64_t *out,
                             const uint8_t *field, const char *what) {
    const uint8_t *start = *p;
    int r = oc__read_varint(p, end, out);
    if (r > 0) return OC_OK;
    if (r == 0)
        return oc__fail(c->err, OC_ERR_TRUNCATED, off(c, field),
                        "input ends inside the %s varint that starts at offset %llu", what,
                        (unsigned long long)off(c, start));
    return oc__fail(c->err, OC_ERR_MALFORMED, off(c, start), "%s varint longer than 10 bytes",
                    what);
}

/* Most tags and lengths are one or two bytes (a node's length is two): those inline, the
 * rest out of line. */
static inline oc_status varint_or_fail(dctx *c, const uint8_t **p, const uint8_t *end,
                                       uint64_t *out, const uint8_t *field, const char *what) {
    const uint8_t *q = *p;
    if (OC_LIKELY(q < end && q[0] < 0x80)) {
        *out = q[0];
        *p = q + 1;
        return OC_OK;
    }
    if (OC_LIKELY(end - q >= 2 && q[1] < 0x80)) {
        *out = (uint64_t)(q[0] & 0x7f) | (uint64_t)q[1] << 7;
        *p = q + 2;
        return OC_OK;
    }
    return varint_slow(c, p, end, out, field, what);
}

/* Out of the hot loop: these run only on a fault or at a window's edge. */
#if defined(__GNUC__)
#define OC_COLD __attribute__((cold, noinline))
#else
#define OC_COLD
#endif

/* A truncation found in the window's own message while the window ends before it:
 * suspends at the field's tag instead (nothing of the field was kept yet). */
static OC_COLD oc_status suspend_or(dctx *c, oc_status st, const uint8_t *field, uint32_t depth) {
    if (st != OC_ERR_TRUNCATED || !c->cut || depth != c->susp_depth) return st;
    memset(&c->susp, 0, sizeof c->susp);
    c->susp.at = off(c, field);
    return OC__SUSPEND;
}

static OC_COLD oc_status len_past_end(dctx *c, const uint8_t *p, const uint8_t *end, uint64_t len,
                                      const uint8_t *field, const oc_msgdesc *d, const oc_field *f,
                                      uint32_t depth) {
    uint64_t left = (uint64_t)(end - p);
    if (c->cut && depth == c->susp_depth) {
        left = c->msg_end - off(c, p); /* what the message really has left */
        if (len <= left) {
            c->susp.at = off(c, field);
            c->susp.hdr = (uint64_t)(p - field);
            c->susp.len = len;
            c->susp.has_len = 1;
            c->susp.f = f;
            return OC__SUSPEND;
        }
    }
    return oc__fail(c->err, OC_ERR_TRUNCATED, off(c, field),
                    "%s.%s: length %llu runs past the end of its message (%llu bytes left)",
                    d->name, f->name, (unsigned long long)len, (unsigned long long)left);
}

/* Reads a length prefix and checks the bytes are there. */
static inline oc_status read_len(dctx *c, const uint8_t **p, const uint8_t *end, uint64_t *len,
                                 const uint8_t *field, const oc_msgdesc *d, const oc_field *f,
                                 uint32_t depth) {
    oc_status st = varint_or_fail(c, p, end, len, field, "length");
    if (OC_UNLIKELY(st != OC_OK)) return suspend_or(c, st, field, depth);
    if (OC_UNLIKELY(*len > (uint64_t)(end - *p)))
        return len_past_end(c, *p, end, *len, field, d, f, depth);
    return OC_OK;
}

static oc_status unk_append(dctx *c, unk_buf *u, const uint8_t *from, uint64_t n) {
    if (u->size + n > u->cap) {
        uint64_t cap = u->cap ? u->cap : 64;
        while (cap < u->size + n) cap *= 2;
        char *nd = oc__arena_alloc_raw(c->arena, cap);
        if (!nd) return nomem(c, from);
        if (u->size) memcpy(nd, u->data, (size_t)u->size);
        u->data = nd;
        u->cap = cap;
    }
    memcpy(u->data + u->size, from, (size_t)n);
    u->size += n;
    return OC_OK;
}

static oc_status unk_varint(dctx *c, unk_buf *u, uint64_t v, const uint8_t *at) {
    uint8_t tmp[10], *q = tmp;
    while (v >= 0x80) {
        *q++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *q++ = (uint8_t)v;
    (void)at;
    return unk_append(c, u, tmp, (uint64_t)(q - tmp));
}

/* Copies one unknown field whose tag was already read into u, the way protobuf writes it
 * back: tag, varints and lengths in their shortest form, groups field by field (W-14). */
static oc_status keep_unknown(dctx *c, unk_buf *u, const uint8_t **pp, const uint8_t *end,
                              uint32_t wt, uint64_t number, const uint8_t *field, uint32_t depth) {
    const uint8_t *p = *pp;
    uint64_t v;
    OC_FORWARD(unk_varint(c, u, number << 3 | wt, field));
    switch (wt) {
    case OC_WT_VARINT:
        OC_FORWARD(varint_or_fail(c, &p, end, &v, field, "value"));
        OC_FORWARD(unk_varint(c, u, v, field));
        break;
    case OC_WT_I64:
    case OC_WT_I32: {
        uint64_t n = wt == OC_WT_I64 ? 8 : 4;
        OC_RETURN_ERROR_IF((uint64_t)(end - p) < n, c->err, OC_ERR_TRUNCATED, off(c, field),
                           "field %llu: fixed-size value runs past the end",
                           (unsigned long long)number);
        OC_FORWARD(unk_append(c, u, p, n));
        p += n;
        break;
    }
    case OC_WT_LEN:
        OC_FORWARD(varint_or_fail(c, &p, end, &v, field, "length"));
        OC_RETURN_ERROR_IF(v > (uint64_t)(end - p), c->err, OC_ERR_TRUNCATED, off(c, field),
                           "field %llu: length %llu runs past the end (%llu bytes left)",
                           (unsigned long long)number, (unsigned long long)v,
                           (unsigned long long)(end - p));
        OC_FORWARD(unk_varint(c, u, v, field));
        OC_FORWARD(unk_append(c, u, p, v));
        p += v;
        break;
    case OC_WT_SGROUP:
        OC_RETURN_ERROR_IF(depth >= c->max_depth, c->err, OC_ERR_DEPTH, off(c, field),
                           "groups nested deeper than %u levels", c->max_depth);
        for (;;) {
            const uint8_t *inner = p;
            uint64_t key;
            OC_RETURN_ERROR_IF(p >= end, c->err, OC_ERR_TRUNCATED, off(c, field),
                               "group %llu is not closed", (unsigned long long)number);
            OC_FORWARD(varint_or_fail(c, &p, end, &key, inner, "tag"));
            uint32_t iwt = (uint32_t)(key & 7);
            uint64_t inum = key >> 3;
            if (iwt == OC_WT_EGROUP) {
                OC_RETURN_ERROR_IF(inum != number, c->err, OC_ERR_MALFORMED, off(c, inner),
                                   "group %llu closed by end-group %llu",
                                   (unsigned long long)number, (unsigned long long)inum);
                OC_FORWARD(unk_varint(c, u, number << 3 | OC_WT_EGROUP, inner));
                break;
            }
            OC_RETURN_ERROR_IF(inum == 0 || inum > OC_MAX_FIELD_NUMBER || iwt > OC_WT_I32, c->err,
                               OC_ERR_MALFORMED, off(c, inner),
                               "invalid tag (field %llu, wire type %u)", (unsigned long long)inum,
                               iwt);
            OC_FORWARD(keep_unknown(c, u, &p, end, iwt, inum, inner, depth + 1));
        }
        break;
    default:
        return oc__fail(c->err, OC_ERR_MALFORMED, off(c, field),
                        "invalid wire type %u for field %llu", wt, (unsigned long long)number);
    }
    *pp = p;
    return OC_OK;
}

/* Clears the other members of a oneof when one is set: only the oneof's members are
 * visited (a field's presence bit is its position in d->fields), each zeroed with a store
 * of its own width rather than a memset call. */
static inline void oneof_clear_others(const oc_msgdesc *d, void *msg, const oc_field *keep) {
    oc_msghdr *h = oc__hdr(msg);
    uint32_t others = d->oneof_mask & ~(1u << keep->index);
    h->has &= ~others;
    for (; others; others &= others - 1) {
        const oc_field *f = &d->fields[__builtin_ctz(others)];
        char *at = (char *)msg + f->offset;
        uint32_t n = f->type == OC_FT_MSG ? (uint32_t)sizeof(void *) : oc__elem_size(f);
        if (n == 16)
            memset(at, 0, 16);
        else if (n == 8)
            memset(at, 0, 8);
        else
            memset(at, 0, n);
    }
}

/* Stores a scalar read from the wire: 8-byte types (int64, uint64, double) keep the 64
 * bits as read; 4-byte types keep the low 32 (int32 and enums as protobuf truncates them,
 * float bits). Two's complement makes the int64 and int32 cases plain bit copies. */
static void store_scalar(void *dst, const oc_field *f, uint64_t v) {
    if (oc__elem_size(f) == sizeof v) {
        memcpy(dst, &v, sizeof v);
    } else {
        uint32_t x = (uint32_t)v;
        memcpy(dst, &x, sizeof x);
    }
}

static uint64_t load_le(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Reads one scalar element of f's own wire type at *p. */
static oc_status read_scalar(dctx *c, const uint8_t **p, const uint8_t *end, const oc_field *f,
                             const uint8_t *field, const oc_msgdesc *d, uint64_t *v) {
    if (f->wiretype == OC_WT_VARINT) return varint_or_fail(c, p, end, v, field, f->name);
    unsigned n = f->wiretype == OC_WT_I64 ? 8u : 4u;
    OC_RETURN_ERROR_IF((uint64_t)(end - *p) < n, c->err, OC_ERR_TRUNCATED, off(c, field),
                       "%s.%s: %u-byte value runs past the end", d->name, f->name, n);
    *v = load_le(*p, n);
    *p += n;
    return OC_OK;
}

/* Protobuf reads an enum as int32 (the low 32 bits), then checks it is in the enum. */
static int enum_in_range(const oc_field *f, uint64_t v) {
    int32_t x = (int32_t)(uint32_t)v;
    return x >= f->enum_min && x <= f->enum_max;
}

/* An out-of-range closed-enum value goes to the unknown fields the way protobuf puts it
 * there: re-encoded from its int32 value (sign-extended), not copied. */
static oc_status unk_append_enum(dctx *c, unk_buf *u, const oc_field *f, uint64_t v,
                                 const uint8_t *field) {
    OC_FORWARD(unk_varint(c, u, (uint64_t)f->number << 3 | OC_WT_VARINT, field));
    return unk_varint(c, u, (uint64_t)(int64_t)(int32_t)(uint32_t)v, field);
}

/* A packed run of scalars: count, reserve once, then fill. */
static oc_status decode_packed(dctx *c, void *msg, const oc_field *f, const uint8_t *p,
                               const uint8_t *end, const uint8_t *field, const oc_msgdesc *d) {
    uint64_t n;
    if (f->wiretype == OC_WT_VARINT) {
        n = 0;
        for (const uint8_t *q = p; q < end; q++) n += !(*q & 0x80);
    } else {
        uint64_t w = f->wiretype == OC_WT_I64 ? 8 : 4;
        OC_RETURN_ERROR_IF((uint64_t)(end - p) % w != 0, c->err, OC_ERR_MALFORMED, off(c, field),
                           "%s.%s: packed length %llu is not a multiple of %llu", d->name, f->name,
                           (unsigned long long)(end - p), (unsigned long long)w);
        n = (uint64_t)(end - p) / w;
    }
    if (n == 0) return OC_OK;
    if (oc__array_reserve(c->arena, msg, f, n) != OC_OK) return nomem(c, field);
    oc_array_hdr a = oc__array_get(msg, f);
    uint32_t es = oc__elem_size(f);
    char *dst = (char *)a.items + a.count * es;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (f->wiretype != OC_WT_VARINT) { /* fixed-width little-endian: the bytes are the values */
        if (c->threads <= 1 || n * es < OC_DEFER_COPY)
            oc__copy_one(dst, p, n * es, c->owner);
        else if (!oc__copy_list_add(c->arena, &c->copies, dst, p, n * es, c->owner))
            return nomem(c, field);
        a.count += n;
        oc__array_put(msg, f, &a);
        return OC_OK;
    }
#endif
    for (uint64_t i = 0; i < n; i++) {
        uint64_t v;
        OC_FORWARD(read_scalar(c, &p, end, f, field, d, &v));
        store_scalar(dst + i * es, f, v);
    }
    OC_RETURN_ERROR_IF(p != end, c->err, OC_ERR_MALFORMED, off(c, field),
                       "%s.%s: packed varints run past their length", d->name, f->name);
    a.count += n;
    oc__array_put(msg, f, &a);
    return OC_OK;
}

/* fresh: msg was zeroed by this decode and nothing but this call writes it (a oneof then
 * needs clearing only once one of its members is present). */
static oc_status decode_msg(dctx *c, const oc_msgdesc *d, void *msg, const uint8_t *p,
                            const uint8_t *end, uint32_t depth, int fresh);

/* A string field's value: aliased into the input with no_copy (W-18), else an arena copy. */
static inline oc_status set_str(dctx *c, oc_str *s, const uint8_t *val, uint64_t len) {
    if (c->alias_strings || len == 0) {
        s->data = len ? (const char *)val : "";
        s->size = len;
        return OC_OK;
    }
    char *p = oc__arena_alloc_raw(c->arena, len);
    if (!p) {
        s->data = ""; /* a slot push took holds no earlier arena's bytes */
        s->size = 0;
        return OC_ERR_NOMEM;
    }
    memcpy(p, val, (size_t)len);
    s->data = p;
    s->size = len;
    return OC_OK;
}

/* Storage of len bytes for a copied payload, at field_off; *dst receives it. */
static oc_status span_storage(dctx *c, oc_bytes *s, uint64_t len, uint64_t field_off,
                              const oc_field *f, const oc_msgdesc *d, uint8_t **dst) {
    if (oc_bytes_set_storage(s, len, 64, c->pool, dst, c->err) != OC_OK)
        return oc__fail(c->err, OC_ERR_NOMEM, field_off, "%s.%s: out of memory for %llu bytes",
                        d->name, f->name, (unsigned long long)len);
    return OC_OK;
}

static oc_status decode_span(dctx *c, void *msg, const oc_field *f, const uint8_t *p, uint64_t len,
                             const uint8_t *field, const oc_msgdesc *d) {
    oc_bytes *s = (oc_bytes *)(void *)((char *)msg + f->offset);
    if (c->skip_raw_data) {
        oc_bytes_release(s);
        return OC_OK;
    }
    OC_FORWARD(oc__check_size(len, c->max_tensor, OC_DEFAULT_MAX_TENSOR_BYTES, "raw_data",
                              "max_tensor_bytes", off(c, field), c->err));
    if (c->no_copy && len >= c->threshold) {
        if (c->owner)
            oc_bytes_set_shared(s, p, len, c->owner);
        else
            oc_bytes_set_borrowed(s, p, len);
    } else {
        /* Allocate now; copy now, or later with other threads when the payload is big. */
        uint8_t *dst = NULL;
        int defer = c->threads > 1 && len >= OC_DEFER_COPY;
        OC_FORWARD(span_storage(c, s, len, off(c, field), f, d, &dst));
        if (!defer) {
            if (len) oc__copy_one(dst, p, len, c->owner);
        } else if (!oc__copy_list_add(c->arena, &c->copies, dst, p, len, c->owner)) {
            return nomem(c, field);
        }
    }
    oc__hdr(msg)->has |= 1u << f->index;
    return OC_OK;
}

void *oc__field_message(oc_arena *arena, const oc_msgdesc *d, void *msg, const oc_field *f) {
    if (f->label == OC_FL_ONEOF) {
        oneof_clear_others(d, msg, f);
        oc__hdr(msg)->has |= 1u << f->index;
    }
    if (oc__is_repeated(f)) return oc_array_add_msg(arena, (char *)msg + f->offset, f->sub);
    void *sub = oc__msg_get(msg, f); /* a message seen again merges into the first */
    if (!sub) {
        sub = oc_msg_new(arena, f->sub);
        if (sub) oc__msg_put(msg, f, sub);
    }
    return sub;
}

const oc_field *oc__find_field(const oc_msgdesc *d, uint64_t number) {
    if (number < OC_FIELD_LOOKUP) {
        uint8_t i = d->by_number[number];
        return i ? &d->fields[i - 1] : NULL;
    }
    return NULL; /* the schema has no field numbers this high */
}

/* Bytes of input run_length looks at: what is likely in cache already (a long run, as a
 * graph's nodes, grows by doubling instead: hopping over 27 MB of nodes costs a cache
 * miss per node). */
#define OC_RUN_SCAN 1024u

/* How many fields from `field` on carry the same tag (taglen bytes at field) one after
 * the other, each read through its value, within OC_RUN_SCAN bytes; at least 1. Encoders
 * write the elements of a repeated field in one run, so for the short ones (a node's
 * inputs, a shape's dims) this is the array's final length, reserved at once: no
 * regrowth, no copies and no capacity left over in the decoded tree. A hint only: stops
 * at anything it cannot read (the decoder reports it when it gets there). */
static uint64_t run_length(const uint8_t *field, const uint8_t *end, size_t taglen, uint32_t wt) {
    const uint8_t *p = field;
    uint64_t n = 0;
    if ((uint64_t)(end - field) > OC_RUN_SCAN) end = field + OC_RUN_SCAN;
    /* The usual run first: one-byte tags and one-byte lengths (names, dims). */
    if (taglen == 1 && wt == OC_WT_LEN)
        while (end - p >= 2 && p[0] == field[0] && p[1] < 0x80 && p[1] <= end - p - 2) {
            p += 2 + p[1];
            n++;
        }
    while ((size_t)(end - p) > taglen && p[0] == field[0]) { /* tags are 1 or 2 bytes */
        size_t i = 1;
        while (i < taglen && p[i] == field[i]) i++;
        if (i < taglen) break;
        const uint8_t *q = p + taglen;
        uint64_t v;
        if (wt == OC_WT_LEN) {
            if (oc__read_varint(&q, end, &v) <= 0 || v > (uint64_t)(end - q)) break;
            q += v;
        } else if (wt == OC_WT_VARINT) {
            if (oc__read_varint(&q, end, &v) <= 0) break;
        } else {
            uint64_t w = wt == OC_WT_I64 ? 8 : 4;
            if (w > (uint64_t)(end - q)) break;
            q += w;
        }
        p = q;
        n++;
    }
    return n ? n : 1;
}

/* A repeated field out of room: grown to the run of elements that starts at `field` (or
 * doubled when that is more), then one slot taken. The header's members are read and
 * written one by one, as in push: a copy of the whole header through the stack stalls
 * on store forwarding. */
static void *push_grow(dctx *c, void *array, uint64_t elem, const uint8_t *field,
                       const uint8_t *end, size_t taglen, uint32_t wt) {
    char *h = array, *old;
    uint64_t count, cap;
    memcpy(&old, h + offsetof(oc_array_hdr, items), sizeof old);
    memcpy(&count, h + offsetof(oc_array_hdr, count), sizeof count);
    memcpy(&cap, h + offsetof(oc_array_hdr, cap), sizeof cap);
    uint64_t want = run_length(field, end, taglen, wt);
    if (want < cap) want = cap; /* at least doubles */
    /* Elements are at most 255 bytes: cap * elem cannot overflow, and no division (a
     * slow instruction) on this path. */
    if (elem > 255 || want > (UINT64_MAX >> 9) - cap) return NULL;
    cap += want;
    char *items = oc__arena_alloc_raw(c->arena, cap * elem); /* slots written as taken */
    if (!items) return NULL;
    if (count) memcpy(items, old, (size_t)(count * elem));
    memcpy(h + offsetof(oc_array_hdr, items), &items, sizeof items);
    memcpy(h + offsetof(oc_array_hdr, cap), &cap, sizeof cap);
    count++;
    memcpy(h + offsetof(oc_array_hdr, count), &count, sizeof count);
    return items + (count - 1) * elem;
}

/* One more element of a repeated field: the common case (room left) inline. The header's
 * members are read and written one by one: a whole-struct copy through the stack made
 * the compiler store count alone and reload all 24 bytes at once, a store-forwarding
 * stall on every element (14% of decode_msg's samples on a 100,000-node graph). */
static inline void *push(dctx *c, void *array, uint64_t elem, const uint8_t *field,
                         const uint8_t *end, size_t taglen, uint32_t wt) {
    char *h = array;
    uint64_t count, cap;
    memcpy(&count, h + offsetof(oc_array_hdr, count), sizeof count);
    memcpy(&cap, h + offsetof(oc_array_hdr, cap), sizeof cap);
    if (OC_LIKELY(count < cap)) {
        char *items;
        memcpy(&items, h + offsetof(oc_array_hdr, items), sizeof items);
        count++;
        memcpy(h + offsetof(oc_array_hdr, count), &count, sizeof count);
        return items + (count - 1) * elem;
    }
    return push_grow(c, array, elem, field, end, taglen, wt);
}

/* A new zeroed message (as oc_msg_new), inline unless it needs an arena cleanup. */
static inline void *new_msg(dctx *c, const oc_msgdesc *sub) {
    return sub->has_span ? oc_msg_new(c->arena, sub) : oc__arena_alloc(c->arena, sub->size);
}

/* A new element of a repeated message field (as oc_array_add_msg), inline. */
static inline void *add_msg(dctx *c, void *array, const oc_msgdesc *sub, const uint8_t *field,
                            const uint8_t *end, size_t taglen) {
    void *m = new_msg(c, sub);
    if (!m) return NULL;
    void **slot = push(c, array, sizeof(void *), field, end, taglen, OC_WT_LEN);
    if (!slot) return NULL;
    memcpy(slot, &m, sizeof m);
    return m;
}

/* The message of a singular message field (optional, or a oneof member whose siblings the
 * caller cleared), inline: the one seen before, into which this one merges, or a new one
 * (*fresh set). */
static inline void *opt_msg(dctx *c, void *msg, const oc_field *f, int *fresh) {
    void *sub = oc__msg_get(msg, f);
    if (sub) return sub;
    sub = new_msg(c, f->sub);
    if (sub) oc__msg_put(msg, f, sub);
    *fresh = 1;
    return sub;
}

static oc_status decode_submsg(dctx *c, void *msg, const oc_field *f, const uint8_t *p,
                               uint64_t len, const uint8_t *field, const uint8_t *end,
                               size_t taglen, uint32_t depth) {
    int fresh = f->label == OC_FL_REP;
    void *sub = fresh ? add_msg(c, (char *)msg + f->offset, f->sub, field, end, taglen)
                      : opt_msg(c, msg, f, &fresh);
    if (!sub) return nomem(c, field);
    OC_RETURN_ERROR_IF(depth + 1 > c->max_depth, c->err, OC_ERR_DEPTH, off(c, field),
                       "%s nested deeper than %u levels", f->sub->name, c->max_depth);
    return decode_msg(c, f->sub, sub, p, p + len, depth + 1, fresh);
}

static oc_status decode_msg(dctx *c, const oc_msgdesc *d, void *msg, const uint8_t *p,
                            const uint8_t *end, uint32_t depth, int fresh) {
    oc_msghdr *h = oc__hdr(msg);
    /* A fresh message has no unknown fields yet: its header, just zeroed, is not read
     * back (a load right behind the zeroing stalls on store forwarding). */
    unk_buf unk = {NULL, 0, 0};
    if (!fresh)
        unk = (unk_buf){(char *)(uintptr_t)h->unknown.data, h->unknown.size, h->unknown.size};
    oc_status st = OC_OK;
    while (p < end) {
        const uint8_t *field = p;
        uint64_t key;
        st = varint_or_fail(c, &p, end, &key, field, "tag");
        if (OC_UNLIKELY(st != OC_OK)) {
            st = suspend_or(c, st, field, depth);
            break;
        }
        size_t taglen = (size_t)(p - field);
        uint32_t wt = (uint32_t)(key & 7);
        uint64_t number = key >> 3;
        /* A field of the schema in its own wire type, the usual case, is a valid tag by
         * construction; anything else is checked here. */
        const oc_field *f = number < OC_FIELD_LOOKUP && d->by_number[number]
                                ? &d->fields[d->by_number[number] - 1]
                                : NULL;
        int known = f && wt == f->wiretype;
        if (OC_UNLIKELY(!known) &&
            (number == 0 || number > OC_MAX_FIELD_NUMBER || wt == OC_WT_EGROUP || wt > OC_WT_I32)) {
            st = oc__fail(c->err, OC_ERR_MALFORMED, off(c, field),
                          "%s: invalid tag (field %llu, wire type %u)", d->name,
                          (unsigned long long)number, wt);
            break;
        }
        if (!known) /* a repeated scalar packed */
            known = f && wt == OC_WT_LEN && oc__is_repeated(f) && f->wiretype != OC_WT_LEN;
        if (!known) {
            uint64_t mark = unk.size;
            st = keep_unknown(c, &unk, &p, end, wt, number, field, depth);
            if (OC_UNLIKELY(st != OC_OK)) {
                st = suspend_or(c, st, field, depth);
                if (st == OC__SUSPEND) unk.size = mark; /* read again after the refill */
                break;
            }
            continue;
        }
        if (wt == OC_WT_LEN) {
            uint64_t len;
            st = read_len(c, &p, end, &len, field, d, f, depth);
            if (st != OC_OK) break;
            const uint8_t *val = p;
            p += len;
            if (f->label == OC_FL_ONEOF) {
                if (!fresh || (h->has & d->oneof_mask)) oneof_clear_others(d, msg, f);
                h->has |= 1u << f->index;
            }
            switch ((oc_ftype)f->type) {
            case OC_FT_STRING:
            case OC_FT_BYTES: {
                oc_str *s;
                if (oc__is_repeated(f)) {
                    s = push(c, (char *)msg + f->offset, sizeof(oc_str), field, end, taglen, wt);
                } else {
                    s = (oc_str *)(void *)((char *)msg + f->offset);
                    h->has |= 1u << f->index;
                }
                if (!s || set_str(c, s, val, len) != OC_OK) st = nomem(c, field);
                break;
            }
            case OC_FT_SPAN:
                st = decode_span(c, msg, f, val, len, field, d);
                break;
            case OC_FT_MSG:
                st = decode_submsg(c, msg, f, val, len, field, end, taglen, depth);
                break;
            default: /* packed scalars */
                st = decode_packed(c, msg, f, val, p, field, d);
                break;
            }
            if (st != OC_OK) break;
            continue;
        }
        uint64_t v;
        st = read_scalar(c, &p, end, f, field, d, &v);
        if (OC_UNLIKELY(st != OC_OK)) {
            st = suspend_or(c, st, field, depth);
            break;
        }
        if (f->type == OC_FT_ENUM && !enum_in_range(f, v)) {
            st = unk_append_enum(c, &unk, f, v, field); /* closed enum */
            if (st != OC_OK) break;
            continue;
        }
        if (oc__is_repeated(f)) {
            void *slot = push(c, (char *)msg + f->offset, oc__elem_size(f), field, end, taglen, wt);
            if (!slot) {
                st = nomem(c, field);
                break;
            }
            store_scalar(slot, f, v);
        } else {
            if (f->label == OC_FL_ONEOF && (!fresh || (h->has & d->oneof_mask)))
                oneof_clear_others(d, msg, f);
            store_scalar((char *)msg + f->offset, f, v);
            h->has |= 1u << f->index;
        }
    }
    if (unk.size || !fresh) {
        h->unknown.data = unk.data;
        h->unknown.size = unk.size;
    }
    return st;
}

static void unref_owner(void *owner) { oc_owner_unref(owner); }

oc_status oc__check_size(uint64_t size, uint64_t option_value, uint64_t default_cap,
                         const char *what, const char *option, uint64_t offset, oc_error *err) {
    uint64_t cap = option_value ? option_value : default_cap;
    if (size <= cap) return OC_OK;
    return oc__fail(err, OC_ERR_LIMIT, offset,
                    "%s of %llu bytes is over the %s limit of %llu bytes", what,
                    (unsigned long long)size, option, (unsigned long long)cap);
}

/* The decode context of opts (NULL: defaults) for an input kept by owner. */
static oc_status ctx_init(dctx *c, const oc_parse_options *opts, oc_arena *arena, oc_owner *owner,
                          uint64_t base_offset, oc_error *err) {
    oc_parse_options defaults;
    if (!opts) {
        oc_parse_options_init(&defaults);
        opts = &defaults;
    }
    memset(c, 0, sizeof *c);
    c->base_offset = base_offset;
    c->arena = arena;
    c->err = err;
    c->owner = owner;
    c->threshold = opts->buffer.raw_data_threshold;
    c->max_depth = opts->max_depth ? opts->max_depth : OC_DEFAULT_MAX_DEPTH;
    if (c->max_depth > OC_MAX_DEPTH_HARD) c->max_depth = OC_MAX_DEPTH_HARD;
    c->no_copy = opts->no_copy;
    c->skip_raw_data = opts->skip_raw_data;
    c->threads = oc__resolve_threads(opts->num_threads);
    c->pool = opts->storage_pool;
    c->max_tensor = opts->max_tensor_bytes;
    /* Strings alias the input with no_copy; an owner (a file mapping) is then also kept by
     * the arena, so the model's strings outlive the loader like its tensors do. */
    c->alias_strings = opts->no_copy;
    if (c->alias_strings && owner) {
        if (oc_arena_add_cleanup(arena, unref_owner, owner) != OC_OK)
            return oc__fail(err, OC_ERR_NOMEM, base_offset, "out of memory");
        oc_owner_ref(owner);
    }
    return OC_OK;
}

oc_status oc__decode_at(const oc_msgdesc *desc, void *msg, const void *data, uint64_t size,
                        uint64_t base_offset, uint32_t depth, oc_arena *arena,
                        const oc_parse_options *opts, oc_owner *owner, oc_error *err) {
    dctx c;
    OC_FORWARD(ctx_init(&c, opts, arena, owner, base_offset, err));
    static const uint8_t empty[1];
    const uint8_t *p = size ? (const uint8_t *)data : empty; /* no arithmetic on NULL */
    c.base = p;
    oc_status st = decode_msg(&c, desc, msg, p, p + size, depth, 0);
    /* Deferred copies run even after an error: their sources were bounds-checked and the
     * partly decoded message must not hold uninitialised bytes. */
    oc__copy_run(&c.copies, c.threads);
    return st;
}

/* ---- through a window, for sources that cannot map ---- */

typedef struct window {
    oc_source *src;
    uint8_t *buf;
    uint64_t cap;
    uint64_t budget; /* max_memory: the window counts against it too (M-1) */
} window;

/* Runs the copies deferred from the window before it is read over. */
static void flush_copies(dctx *c) {
    oc__copy_run(&c->copies, c->threads);
    c->copies.count = 0;
    c->copies.bytes = 0;
}

static oc_status window_grow(dctx *c, window *w, uint64_t need) {
    if (need <= w->cap) return OC_OK;
    /* A long string or packed run is read whole into the window: never past the memory
     * budget, which the mapped path enforces on the arena copy of the same field. */
    if (need > w->budget)
        return oc__error_rule(c->err, "M-1",
                              oc__fail(c->err, OC_ERR_LIMIT, OC_NO_OFFSET,
                                       "decoding needs more memory than the budget of %llu "
                                       "bytes (max_memory, M-1)",
                                       (unsigned long long)w->budget));
    uint64_t cap = w->cap * 2 > need ? w->cap * 2 : need;
    if (cap > w->budget) cap = w->budget;
    uint8_t *p = cap <= SIZE_MAX ? realloc(w->buf, (size_t)cap) : NULL;
    if (!p)
        return oc__fail(c->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory reading %s",
                        w->src->name);
    w->buf = p;
    w->cap = cap;
    return OC_OK;
}

/* A payload that does not fit in the window: read from the source straight into the
 * tensor's own storage (the payload hook of a source that cannot map). */
static oc_status span_from_source(dctx *c, window *w, void *msg, const oc_field *f,
                                  const oc_msgdesc *d, uint64_t field_off, uint64_t at,
                                  uint64_t len) {
    oc_bytes *s = (oc_bytes *)(void *)((char *)msg + f->offset);
    if (c->skip_raw_data) {
        oc_bytes_release(s);
        return OC_OK;
    }
    OC_FORWARD(oc__check_size(len, c->max_tensor, OC_DEFAULT_MAX_TENSOR_BYTES, "raw_data",
                              "max_tensor_bytes", field_off, c->err));
    uint8_t *dst;
    OC_FORWARD(span_storage(c, s, len, field_off, f, d, &dst));
    oc__hdr(msg)->has |= 1u << f->index;
    oc_status st = oc_source_read(w->src, at, dst, len, c->err);
    if (st != OC_OK) oc_bytes_release(s);
    return st;
}

/* Decodes [pos, end) of the source into msg, a window at a time. */
static oc_status decode_window(dctx *c, window *w, const oc_msgdesc *d, void *msg, uint64_t pos,
                               uint64_t end, uint32_t depth) {
    while (pos < end) {
        uint64_t n = end - pos < w->cap ? end - pos : w->cap;
        flush_copies(c);
        OC_FORWARD(oc_source_read(w->src, pos, w->buf, n, c->err));
        c->base = w->buf;
        c->base_offset = pos;
        c->susp_depth = depth;
        c->cut = pos + n < end;
        c->msg_end = end;
        oc_status st = decode_msg(c, d, msg, w->buf, w->buf + n, depth, 0);
        c->susp_depth = 0;
        if (st == OC_OK) {
            pos += n;
            continue;
        }
        if (st != OC__SUSPEND) return st;
        suspension s = c->susp;
        if (s.has_len && s.hdr + s.len > w->cap) {
            uint64_t value = s.at + s.hdr;
            const oc_field *f = s.f;
            if (f && f->type == OC_FT_MSG) { /* walked through the source, one level down */
                void *sub = oc__field_message(c->arena, d, msg, f);
                if (!sub)
                    return oc__fail(c->err, OC_ERR_NOMEM, s.at, "out of memory while decoding");
                OC_RETURN_ERROR_IF(depth + 1 > c->max_depth, c->err, OC_ERR_DEPTH, s.at,
                                   "%s nested deeper than %u levels", f->sub->name, c->max_depth);
                OC_FORWARD(decode_window(c, w, f->sub, sub, value, value + s.len, depth + 1));
                pos = value + s.len;
                continue;
            }
            if (f && f->type == OC_FT_SPAN) {
                flush_copies(c);
                OC_FORWARD(span_from_source(c, w, msg, f, d, s.at, value, s.len));
                pos = value + s.len;
                continue;
            }
            flush_copies(c);
            OC_FORWARD(window_grow(c, w, s.hdr + s.len)); /* a long string, packed run ... */
        } else if (!s.has_len && s.at == pos) {
            /* A field as long as the whole window whose length is only known by reading
             * it (a group): a larger window, up to the message. */
            flush_copies(c);
            OC_FORWARD(window_grow(c, w, w->cap * 2 < end - pos ? w->cap * 2 : end - pos));
        }
        pos = s.at;
    }
    return OC_OK;
}

oc_status oc__decode_source(const oc_msgdesc *desc, void *msg, oc_source *src, oc_arena *arena,
                            const oc_parse_options *opts, oc_error *err) {
    return oc__decode_source_window(desc, msg, src, arena, opts, 0, err);
}

oc_status oc__decode_source_window(const oc_msgdesc *desc, void *msg, oc_source *src,
                                   oc_arena *arena, const oc_parse_options *opts,
                                   uint64_t window_size, oc_error *err) {
    if ((src->caps & OC_SOURCE_MAP) && !window_size) { /* one contiguous buffer: the fast path */
        oc_bytes whole;
        memset(&whole, 0, sizeof whole);
        OC_FORWARD(oc_source_map(src, 0, src->size, &whole, err));
        oc_owner *owner = whole.mode == OC_BYTES_SHARED ? whole.owner : NULL;
        oc_status st = oc_decode(desc, msg, whole.data, whole.size, arena, opts, owner, err);
        oc_bytes_release(&whole);
        return st;
    }
    oc_parse_options copy_opts;
    if (opts)
        copy_opts = *opts;
    else
        oc_parse_options_init(&copy_opts);
    copy_opts.no_copy = 0; /* nothing to borrow from: every byte is read into its place */
    OC_FORWARD(oc__check_size(src->size, copy_opts.max_model_bytes, OC_DEFAULT_MAX_MODEL_BYTES,
                              "the serialized model", "max_model_bytes", OC_NO_OFFSET, err));
    dctx c;
    OC_FORWARD(ctx_init(&c, &copy_opts, arena, NULL, 0, err));
    window w = {src, NULL, 0, oc__budget_of(&copy_opts)};
    /* err is left as it was on success: a field cut by a window's edge is recorded as a
     * truncation before it turns into a suspension (suspend_or). */
    oc_error saved;
    if (err) saved = *err;
    uint64_t first = window_size ? window_size : OC_WINDOW;
    oc_status st = window_grow(&c, &w, src->size < first ? (src->size ? src->size : 1) : first);
    if (st == OC_OK) {
        uint64_t previous = oc__budget_begin(arena, &copy_opts);
        st = decode_window(&c, &w, desc, msg, 0, src->size, 1);
        oc__copy_run(&c.copies, c.threads);
        st = oc__budget_end(arena, previous, &copy_opts, st, err);
    }
    free(w.buf);
    if (st == OC_OK && err) *err = saved;
    return st;
}

oc_status oc_decode(const oc_msgdesc *desc, void *msg, const void *data, uint64_t size,
                    oc_arena *arena, const oc_parse_options *opts, oc_owner *owner, oc_error *err) {
    if (!desc || !msg || !arena || (!data && size))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_decode: missing argument");
    OC_PARSE_OPTS(opts, err);
    OC_FORWARD(oc__check_size(size, opts ? opts->max_model_bytes : 0, OC_DEFAULT_MAX_MODEL_BYTES,
                              "the serialized model", "max_model_bytes", OC_NO_OFFSET, err));
    uint64_t previous = oc__budget_begin(arena, opts);
    oc_status st = oc__decode_at(desc, msg, data, size, 0, 1, arena, opts, owner, err);
    return oc__budget_end(arena, previous, opts, st, err);
}

uint64_t oc__budget_of(const oc_parse_options *opts) {
    return opts && opts->max_memory ? opts->max_memory : OC_DEFAULT_MAX_MEMORY;
}

uint64_t oc__budget_begin(oc_arena *arena, const oc_parse_options *opts) {
    return oc__arena_cap(arena, oc__budget_of(opts));
}

oc_status oc__budget_end(oc_arena *arena, uint64_t previous, const oc_parse_options *opts,
                         oc_status st, oc_error *err) {
    int hit = arena->hit_cap;
    oc__arena_uncap(arena, previous);
    if (st != OC_ERR_NOMEM || !hit) return st;
    return oc__error_rule(
        err, "M-1",
        oc__fail(err, OC_ERR_LIMIT, err ? err->offset : OC_NO_OFFSET,
                 "decoding needs more memory than the budget of %llu bytes (max_memory, M-1)",
                 (unsigned long long)oc__budget_of(opts)));
}
