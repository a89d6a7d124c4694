/*
 * encode.c - the one protobuf size/encode loop, driven by the descriptor tables.
 *
 * Output is exactly what protobuf writes for the proto2 schema: known fields in field-number
 * order (the tables are sorted), optional fields when their presence bit is set, messages
 * when their pointer is set, repeated scalars packed only for PACKED fields, then the
 * message's unknown fields verbatim.
 *
 * Encoding takes two passes over a const tree. The size pass visits messages in pre-order
 * and records each one's encoded size in a vector; the write pass visits them in the same
 * order and reads the sizes back for the length prefixes. Nothing is cached in the
 * messages, so concurrent saves of one model are safe.
 */
#include <stdlib.h>
#include <string.h>

#include "onnxcore/codec.h"
#include "internal/encode.h"
#include "internal/fetch.h"
#include "internal/error.h"
#include "internal/schema.h"
#include "internal/onnxcore_shared.h"
#include "internal/onnxcore_atomic.h"

#define OC_WRITE_BUFFER (256u * 1024u)
/* raw_data at least this large goes to the sink directly, never through the buffer. */
#define OC_DIRECT_WRITE (64u * 1024u)

void oc_serialize_options_init(oc_serialize_options *o) {
    static const oc_serialize_options defaults = OC_SERIALIZE_OPTIONS_INIT;
    *o = defaults;
}

typedef struct sizes {
    uint64_t *v;
    uint64_t n, cap;
    oc__subst_cursor subst;
} sizes;

static unsigned varint_size(uint64_t v) {
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static unsigned tag_size(const oc_field *f) { return varint_size((uint64_t)f->number << 3); }

/* The encoded size of one scalar element (int32 and enums sign-extend to 64 bits). */
static uint64_t scalar_size(const oc_field *f, const void *p) {
    switch ((oc_ftype)f->type) {
    case OC_FT_INT64:
    case OC_FT_UINT64: {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        return varint_size(v);
    }
    case OC_FT_INT32:
    case OC_FT_ENUM: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return varint_size((uint64_t)(int64_t)v);
    }
    case OC_FT_FLOAT:
        return 4;
    case OC_FT_DOUBLE:
        return 8;
    default:
        return 0;
    }
}

static uint64_t packed_payload(const oc_field *f, const oc_array_hdr *a) {
    if (f->wiretype == OC_WT_I32) return a->count * 4;
    if (f->wiretype == OC_WT_I64) return a->count * 8;
    uint64_t n = 0, es = oc__elem_size(f);
    for (uint64_t i = 0; i < a->count; i++) n += scalar_size(f, (const char *)a->items + i * es);
    return n;
}

static oc_status size_msg(const oc_msgdesc *d, const void *msg, sizes *s, uint64_t *out,
                          uint32_t depth, oc_error *err) {
    OC_RETURN_ERROR_IF(depth > OC_MAX_DEPTH_HARD, err, OC_ERR_DEPTH, OC_NO_OFFSET,
                       "%s nested deeper than %u levels: cannot encode", d->name,
                       OC_MAX_DEPTH_HARD);
    if (s->n == s->cap) {
        uint64_t cap = s->cap ? s->cap * 2 : 256;
        uint64_t *v = realloc(s->v, (size_t)(cap * sizeof *v));
        OC_RETURN_ERROR_IF(!v, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory sizing a message");
        s->v = v;
        s->cap = cap;
    }
    uint64_t slot = s->n++, total = 0;
    int64_t si = oc__subst_next(&s->subst, d, msg);
    if (si >= 0) {
        msg = s->subst.list->build(s->subst.list->ctx, (uint64_t)si);
        OC_RETURN_ERROR_IF(!msg, err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory sizing a message");
    }
    const oc_msghdr *h = oc__hdr_c(msg);
    for (uint32_t i = 0; i < d->nfields; i++) {
        const oc_field *f = &d->fields[i];
        const char *p = (const char *)msg + f->offset;
        unsigned ts = tag_size(f);
        if (oc__is_repeated(f)) {
            oc_array_hdr a = oc__array_get(msg, f);
            if (a.count == 0) continue;
            if (f->type == OC_FT_MSG) {
                void **items = a.items;
                for (uint64_t j = 0; j < a.count; j++) {
                    uint64_t sub;
                    OC_FORWARD(size_msg(f->sub, items[j], s, &sub, depth + 1, err));
                    total += ts + varint_size(sub) + sub;
                }
            } else if (f->type == OC_FT_STRING || f->type == OC_FT_BYTES) {
                const oc_str *items = a.items;
                for (uint64_t j = 0; j < a.count; j++)
                    total += ts + varint_size(items[j].size) + items[j].size;
            } else if (f->label == OC_FL_PACKED) {
                uint64_t payload = packed_payload(f, &a);
                total += ts + varint_size(payload) + payload;
            } else {
                total += a.count * ts + packed_payload(f, &a);
            }
            continue;
        }
        if (f->type == OC_FT_MSG) {
            const void *sub = oc__msg_get(msg, f);
            if (!sub) continue;
            uint64_t n;
            OC_FORWARD(size_msg(f->sub, sub, s, &n, depth + 1, err));
            total += ts + varint_size(n) + n;
            continue;
        }
        if (!((h->has >> f->index) & 1u)) continue;
        if (f->type == OC_FT_STRING || f->type == OC_FT_BYTES) {
            uint64_t n = ((const oc_str *)(const void *)p)->size;
            total += ts + varint_size(n) + n;
        } else if (f->type == OC_FT_SPAN) {
            uint64_t n = ((const oc_bytes *)(const void *)p)->size;
            total += ts + varint_size(n) + n;
        } else {
            total += ts + scalar_size(f, p);
        }
    }
    total += h->unknown.size;
    s->v[slot] = total;
    *out = total;
    return OC_OK;
}

/* ---- writer ---- */

typedef struct writer {
    uint8_t *buf;
    uint64_t pos, cap;
    oc_write_fn fn; /* NULL: buf is the whole output, sized exactly */
    void *ctx;      /* with fn oc_atomic_write, an oc_atomic_file: spans go by */
    oc_error *err;  /* oc_atomic_write_bytes (copy_file_range from a mapped file) */
    oc_status st;   /* sticky: once set, writes are dropped */
    const uint64_t *sizes;
    uint64_t next_size;
    oc__subst_cursor subst;
    const oc_tensor_fetch *fetch;
} writer;

static void flush(writer *w) {
    if (!w->fn) { /* memory mode: the buffer was sized by the size pass; running out is a bug */
        if (w->st == OC_OK)
            w->st = oc__fail(w->err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                             "internal error: output larger than its computed size");
    } else if (w->st == OC_OK && w->pos) {
        w->st = w->fn(w->ctx, w->buf, w->pos, w->err);
    }
    w->pos = 0;
}

/* Guarantees room for n <= OC_WRITE_BUFFER bytes. */
static inline uint8_t *room(writer *w, uint64_t n) {
    if (OC_UNLIKELY(w->cap - w->pos < n)) flush(w);
    return w->buf + w->pos;
}

static void put_bytes(writer *w, const void *data, uint64_t n) {
    if (n == 0) return;
    if (w->fn && n >= OC_DIRECT_WRITE) {
        flush(w);
        if (w->st == OC_OK) w->st = w->fn(w->ctx, data, n, w->err);
        return;
    }
    const uint8_t *p = data;
    while (n) {
        if (w->cap == w->pos) flush(w);
        uint64_t k = w->cap - w->pos < n ? w->cap - w->pos : n;
        memcpy(w->buf + w->pos, p, (size_t)k);
        w->pos += k;
        p += k;
        n -= k;
    }
}

static inline void put_varint(writer *w, uint64_t v) {
    uint8_t *p = room(w, 10), *q = p;
    while (v >= 0x80) {
        *q++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *q++ = (uint8_t)v;
    w->pos += (uint64_t)(q - p);
}

static inline void put_tag(writer *w, const oc_field *f, unsigned wt) {
    put_varint(w, ((uint64_t)f->number << 3) | wt);
}

static void put_le(writer *w, uint64_t v, unsigned n) {
    uint8_t *p = room(w, n);
    for (unsigned i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
    w->pos += n;
}

static void put_scalar(writer *w, const oc_field *f, const void *p) {
    switch ((oc_ftype)f->type) {
    case OC_FT_INT64:
    case OC_FT_UINT64: {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        put_varint(w, v);
        break;
    }
    case OC_FT_INT32:
    case OC_FT_ENUM: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        put_varint(w, (uint64_t)(int64_t)v);
        break;
    }
    case OC_FT_FLOAT: {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        put_le(w, v, 4);
        break;
    }
    case OC_FT_DOUBLE: {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        put_le(w, v, 8);
        break;
    }
    default:
        break;
    }
}

static void put_packed(writer *w, const oc_field *f, const oc_array_hdr *a) {
    uint64_t es = oc__elem_size(f);
    put_tag(w, f, OC_WT_LEN);
    put_varint(w, packed_payload(f, a));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (f->wiretype != OC_WT_VARINT) { /* fixed-width little-endian: the values are the bytes */
        put_bytes(w, a->items, a->count * es);
        return;
    }
#endif
    for (uint64_t i = 0; i < a->count; i++) put_scalar(w, f, (const char *)a->items + i * es);
}

static void put_len_bytes(writer *w, const oc_field *f, const void *data, uint64_t n) {
    put_tag(w, f, OC_WT_LEN);
    put_varint(w, n);
    put_bytes(w, data, n);
}

/* A tensor's bytes: large ones go to the sink straight from their storage, in pieces,
 * so a mapped input streams through with bounded memory (oc_bytes_write). */
static void put_span(writer *w, const oc_field *f, const oc_bytes *b) {
    if (!w->fn || b->size < OC_DIRECT_WRITE) {
        put_len_bytes(w, f, b->data, b->size);
        return;
    }
    put_tag(w, f, OC_WT_LEN);
    put_varint(w, b->size);
    flush(w);
    if (w->st != OC_OK) return;
    w->st = w->fn == oc_atomic_write ? oc_atomic_write_bytes(w->ctx, b, w->err)
                                     : oc_bytes_write(b, w->fn, w->ctx, w->err);
}

/* A fetched tensor's bytes (oc__subst.fetched): streamed from the fetch, never buffered. */
static void put_fetched(writer *w, const oc_field *f, const void *tensor, uint64_t n) {
    put_tag(w, f, OC_WT_LEN);
    put_varint(w, n);
    flush(w);
    if (w->st == OC_OK && !w->fn)
        w->st = oc__fail(w->err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                         "internal error: fetched tensor bytes need a sink");
    if (w->st == OC_OK) w->st = oc_tensor_write(w->fetch, tensor, n, w->fn, w->ctx, w->err);
}

static void encode_msg(writer *w, const oc_msgdesc *d, const void *msg) {
    w->next_size++; /* this message's own size slot: its caller wrote the prefix */
    int64_t si = oc__subst_next(&w->subst, d, msg);
    const void *fetched = NULL;
    if (si >= 0) {
        const oc__subst_list *l = w->subst.list;
        if (l->subs[si].fetched) fetched = msg;
        if (!(msg = l->build(l->ctx, (uint64_t)si))) {
            if (w->st == OC_OK)
                w->st = oc__fail(w->err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory encoding");
            return;
        }
    }
    const oc_msghdr *h = oc__hdr_c(msg);
    for (uint32_t i = 0; i < d->nfields && w->st == OC_OK; i++) {
        const oc_field *f = &d->fields[i];
        const char *p = (const char *)msg + f->offset;
        if (oc__is_repeated(f)) {
            oc_array_hdr a = oc__array_get(msg, f);
            if (a.count == 0) continue;
            if (f->type == OC_FT_MSG) {
                void **items = a.items;
                for (uint64_t j = 0; j < a.count; j++) {
                    put_tag(w, f, OC_WT_LEN);
                    put_varint(w, w->sizes[w->next_size]);
                    encode_msg(w, f->sub, items[j]);
                }
            } else if (f->type == OC_FT_STRING || f->type == OC_FT_BYTES) {
                const oc_str *items = a.items;
                for (uint64_t j = 0; j < a.count; j++)
                    put_len_bytes(w, f, items[j].data, items[j].size);
            } else if (f->label == OC_FL_PACKED) {
                put_packed(w, f, &a);
            } else {
                uint64_t es = oc__elem_size(f);
                for (uint64_t j = 0; j < a.count; j++) {
                    put_tag(w, f, f->wiretype);
                    put_scalar(w, f, (const char *)a.items + j * es);
                }
            }
            continue;
        }
        if (f->type == OC_FT_MSG) {
            const void *sub = oc__msg_get(msg, f);
            if (!sub) continue;
            put_tag(w, f, OC_WT_LEN);
            put_varint(w, w->sizes[w->next_size]);
            encode_msg(w, f->sub, sub);
            continue;
        }
        if (!((h->has >> f->index) & 1u)) continue;
        if (f->type == OC_FT_STRING || f->type == OC_FT_BYTES) {
            const oc_str *s = (const oc_str *)(const void *)p;
            put_len_bytes(w, f, s->data, s->size);
        } else if (f->type == OC_FT_SPAN && fetched) { /* TensorProto's one span: raw_data */
            put_fetched(w, f, fetched, ((const oc_bytes *)(const void *)p)->size);
        } else if (f->type == OC_FT_SPAN) {
            put_span(w, f, (const oc_bytes *)(const void *)p);
        } else {
            put_tag(w, f, f->wiretype);
            put_scalar(w, f, p);
        }
    }
    put_bytes(w, h->unknown.data, h->unknown.size);
}

static oc_status compute_sizes(const oc_msgdesc *d, const void *msg, const oc__subst_list *list,
                               sizes *s, uint64_t *total, oc_error *err) {
    memset(s, 0, sizeof *s);
    s->subst = (oc__subst_cursor){list, 0};
    oc_status st = size_msg(d, msg, s, total, 1, err);
    uint64_t nsubs = list ? list->count : 0;
    if (st == OC_OK && s->subst.next != nsubs)
        st = oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                      "internal error: %llu of %llu tensor substitutions used",
                      (unsigned long long)s->subst.next, (unsigned long long)nsubs);
    if (st != OC_OK) free(s->v);
    return st;
}

oc_status oc_encoded_size(const oc_msgdesc *desc, const void *msg, uint64_t *size, oc_error *err) {
    if (!desc || !msg || !size)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_encoded_size: missing argument");
    sizes s;
    OC_FORWARD(compute_sizes(desc, msg, NULL, &s, size, err));
    free(s.v);
    return OC_OK;
}

oc_status oc_encode(const oc_msgdesc *desc, const void *msg, oc_write_fn fn, void *ctx,
                    oc_error *err) {
    return oc__encode_subst(desc, msg, NULL, NULL, NULL, fn, ctx, err);
}

oc_status oc__encode_subst(const oc_msgdesc *desc, const void *msg, const oc__subst_list *list,
                           const oc_tensor_fetch *fetch, oc__sized_fn sized, oc_write_fn fn,
                           void *ctx, oc_error *err) {
    if (!desc || !msg || !fn)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_encode: missing argument");
    sizes s;
    uint64_t total;
    OC_FORWARD(compute_sizes(desc, msg, list, &s, &total, err));
    oc_status st = sized ? sized(ctx, total, err) : OC_OK;
    if (st != OC_OK) {
        free(s.v);
        return st;
    }
    uint64_t cap = total < OC_WRITE_BUFFER ? (total ? total : 1) : OC_WRITE_BUFFER;
    uint8_t *buf = malloc((size_t)cap);
    if (!buf) {
        free(s.v);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory for the write buffer");
    }
    writer w = {buf, 0, cap, fn, ctx, err, OC_OK, s.v, 0, {list, 0}, fetch};
    encode_msg(&w, desc, msg);
    flush(&w);
    free(buf);
    free(s.v);
    return w.st;
}

oc_status oc_encode_to_memory(const oc_msgdesc *desc, const void *msg, void **out, uint64_t *size,
                              oc_error *err) {
    if (!desc || !msg || !out || !size)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_encode_to_memory: missing argument");
    sizes s;
    uint64_t total;
    OC_FORWARD(compute_sizes(desc, msg, NULL, &s, &total, err));
    /* Slack so that room() for a varint near the end never needs to flush. */
    uint8_t *buf = total <= SIZE_MAX - 16 ? malloc((size_t)total + 16) : NULL;
    if (!buf) {
        free(s.v);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory for %llu bytes of output",
                        (unsigned long long)total);
    }
    /* The buffer is exactly the output: the writer never needs to flush. */
    writer w = {buf, 0, total + 16, NULL, NULL, err, OC_OK, s.v, 0, {NULL, 0}, NULL};
    encode_msg(&w, desc, msg);
    free(s.v);
    if (w.st != OC_OK) {
        free(buf);
        return w.st;
    }
    if (w.pos != total) { /* the size and write passes disagree: a bug, never silent */
        free(buf);
        return oc__fail(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET,
                        "internal error: encoded %llu bytes, expected %llu",
                        (unsigned long long)w.pos, (unsigned long long)total);
    }
    *out = buf;
    *size = total;
    return OC_OK;
}
