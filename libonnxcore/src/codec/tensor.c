/*
 * tensor.c - operations on all the tensors of a message tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnxcore/external.h"
#include "onnxcore/tensor.h"
#include "internal/error.h"

typedef struct plan {
    uint64_t threshold, align, size, count;
    uint8_t *base; /* NULL during the sizing walk */
    oc_owner *owner;
} plan;

static uint64_t round_up(uint64_t v, uint64_t a) { return a > 1 ? (v + a - 1) & ~(a - 1) : v; }

static int selected(const plan *p, const onnx_TensorProto *t) {
    return OC_HAS(TensorProto, t, raw_data) && t->raw_data.size >= p->threshold &&
           t->raw_data.size > 0;
}

/* The same walk sizes the buffer (base == NULL) and then fills it, so the offsets of the
 * two passes agree by construction. */
static oc_status place(void *ctx, onnx_TensorProto *t) {
    plan *p = ctx;
    if (!selected(p, t)) return OC_OK;
    uint64_t at = round_up(p->size, p->align);
    if (at < p->size || at + t->raw_data.size < at) return OC_ERR_NOMEM; /* overflow */
    p->size = at + t->raw_data.size;
    p->count++;
    if (p->base) {
        memcpy(p->base + at, t->raw_data.data, (size_t)t->raw_data.size);
        oc_bytes_set_shared(&t->raw_data, p->base + at, t->raw_data.size, p->owner);
    }
    return OC_OK;
}

static void free_buffer(void *ctx) { free(ctx); }

oc_status oc_msg_consolidate_tensors(const oc_msgdesc *desc, void *msg,
                                     const oc_tensor_buffer_options *opts, oc_owner **buffer_out,
                                     const uint8_t **base_out, uint64_t *size_out, oc_error *err) {
    if (buffer_out) *buffer_out = NULL;
    if (base_out) *base_out = NULL;
    if (size_out) *size_out = 0;
    if (!desc || !msg)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "consolidate: missing argument");
    plan p = {opts ? opts->raw_data_threshold : 0, opts ? opts->alignment : 0, 0, 0, NULL, NULL};
    if (p.align & (p.align - 1))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "alignment %llu is not a power of two", (unsigned long long)p.align);
    if (oc_msg_visit_tensors(desc, msg, place, &p) != OC_OK)
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "tensor bytes too large to consolidate");
    if (p.count == 0) return OC_OK;
    uint64_t total = p.size, align = p.align > 64 ? p.align : 64;
    void *base = NULL;
    if (total > SIZE_MAX - align ||
        posix_memalign(&base, (size_t)align, (size_t)round_up(total, align)) != 0)
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET,
                        "out of memory for a %llu-byte tensor buffer", (unsigned long long)total);
    p.owner = oc_owner_new(free_buffer, base);
    if (!p.owner) {
        free(base);
        return oc__fail(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory");
    }
    p.base = base;
    p.size = 0;
    p.count = 0;
    oc_msg_visit_tensors(desc, msg, place, &p); /* cannot fail: the sizes were checked */
    if (base_out) *base_out = base;
    if (size_out) *size_out = total;
    if (buffer_out)
        *buffer_out = p.owner; /* our creation reference becomes the caller's */
    else
        oc_owner_unref(p.owner);
    return OC_OK;
}

/* ---- payload size against dims and data_type ---- */

unsigned oc_tensor_element_bits(int32_t data_type) {
    switch (data_type) {
    case 1:
        return 32; /* FLOAT */
    case 2:
        return 8; /* UINT8 */
    case 3:
        return 8; /* INT8 */
    case 4:
        return 16; /* UINT16 */
    case 5:
        return 16; /* INT16 */
    case 6:
        return 32; /* INT32 */
    case 7:
        return 64; /* INT64 */
    case 9:
        return 8; /* BOOL */
    case 10:
        return 16; /* FLOAT16 */
    case 11:
        return 64; /* DOUBLE */
    case 12:
        return 32; /* UINT32 */
    case 13:
        return 64; /* UINT64 */
    case 14:
        return 64; /* COMPLEX64 */
    case 15:
        return 128; /* COMPLEX128 */
    case 16:
        return 16; /* BFLOAT16 */
    case 17:       /* FLOAT8E4M3FN */
    case 18:       /* FLOAT8E4M3FNUZ */
    case 19:       /* FLOAT8E5M2 */
    case 20:       /* FLOAT8E5M2FNUZ */
    case 24:
        return 8; /* FLOAT8E8M0 */
    case 21:      /* UINT4 */
    case 22:      /* INT4 */
    case 23:
        return 4; /* FLOAT4E2M1 */
    case 25:      /* UINT2 */
    case 26:
        return 2; /* INT2 */
    default:
        return 0; /* UNDEFINED, STRING, unknown */
    }
}

const char *oc_tensor_type_name(int32_t t) {
    static const char *const names[] = {
        "UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
        "INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
        "FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
        "COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
        "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0",
        "UINT2",          "INT2"};
    return t >= 0 && (size_t)t < sizeof names / sizeof names[0] ? names[t] : "type ?";
}

const char *oc_tensor_numpy_descr(int32_t t) {
    static const char *const descr[] = {
        [1] = "<f4",  [2] = "|u1",  [3] = "|i1",  [4] = "<u2",   [5] = "<i2",
        [6] = "<i4",  [7] = "<i8",  [9] = "|b1",  [10] = "<f2",  [11] = "<f8",
        [12] = "<u4", [13] = "<u8", [14] = "<c8", [15] = "<c16", [16] = "<u2",
        [17] = "|u1", [18] = "|u1", [19] = "|u1", [20] = "|u1",  [21] = "|u1",
        [22] = "|u1", [23] = "|u1", [24] = "|u1", [25] = "|u1",  [26] = "|u1",
    };
    return t > 0 && (size_t)t < sizeof descr / sizeof descr[0] ? descr[t] : NULL;
}

/* "[3, 5]", at most the first 6 dims, then "...". */
static const char *format_dims(const onnx_TensorProto *t, char *buf, size_t size) {
    size_t o = 0;
    o += (size_t)snprintf(buf, size, "[");
    for (uint64_t i = 0; i < t->dims.count && o < size; i++) {
        if (i == 6) {
            o += (size_t)snprintf(buf + o, size - o, ", ... (%llu dims)",
                                  (unsigned long long)t->dims.count);
            break;
        }
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? ", " : "",
                              (long long)t->dims.items[i]);
    }
    if (o < size) snprintf(buf + o, size - o, "]");
    return buf;
}

/* The typed field that holds a data_type's values (onnx.proto; W-42). */
typedef enum typed_field {
    TYPED_NONE, /* UNDEFINED: no field */
    TYPED_FLOAT,
    TYPED_DOUBLE,
    TYPED_INT64,
    TYPED_UINT64,
    TYPED_STRING,
    TYPED_INT32
} typed_field;

static const char *const typed_field_names[] = {
    NULL, "float_data", "double_data", "int64_data", "uint64_data", "string_data", "int32_data"};

static typed_field typed_field_of(int32_t type) {
    switch (type) {
    case 0:
        return TYPED_NONE;
    case 1:  /* FLOAT */
    case 14: /* COMPLEX64: two values an element */
        return TYPED_FLOAT;
    case 11: /* DOUBLE */
    case 15: /* COMPLEX128: two values an element */
        return TYPED_DOUBLE;
    case 7: /* INT64 */
        return TYPED_INT64;
    case 12: /* UINT32 */
    case 13: /* UINT64 */
        return TYPED_UINT64;
    case 8: /* STRING */
        return TYPED_STRING;
    default: /* every other type, as bit patterns; two 4-bit elements a value, four 2-bit */
        return TYPED_INT32;
    }
}

/* The values field f holds. */
static uint64_t typed_count(const onnx_TensorProto *t, typed_field f) {
    switch (f) {
    case TYPED_FLOAT:
        return t->float_data.count;
    case TYPED_DOUBLE:
        return t->double_data.count;
    case TYPED_INT64:
        return t->int64_data.count;
    case TYPED_UINT64:
        return t->uint64_data.count;
    case TYPED_STRING:
        return t->string_data.count;
    case TYPED_INT32:
        return t->int32_data.count;
    default:
        return 0;
    }
}

/* The values elements of type make in its typed field: two a complex element, one a
 * byte of packed 4-bit or 2-bit elements, one an element otherwise. */
static uint64_t typed_want(int32_t type, uint64_t elements) {
    unsigned bits = oc_tensor_element_bits(type);
    /* wraps only past 2^63 elements, whose 8 or 16 bytes each W-40 refuses anyway */
    if (type == 14 || type == 15) return elements * 2;
    if (bits && bits < 8) return elements / (8 / bits) + (elements % (8 / bits) != 0);
    return elements;
}

bool oc_tensor_is_typed(const onnx_TensorProto *t) {
    return t && !oc_tensor_is_external(t) && !OC_HAS(TensorProto, t, raw_data);
}

/* W-42: a tensor whose values are not in raw_data nor elsewhere: the typed field of its
 * type holds the count its dims make; no data at all for elements is a fault too. */
static oc_status check_typed(const onnx_TensorProto *t, int32_t type, uint64_t elements,
                             oc_error *err) {
    char name[OC_QUOTE_SIZE], dims[96];
    typed_field field = typed_field_of(type);
    uint64_t want = typed_want(type, elements), have = typed_count(t, field);
    uint64_t any = t->float_data.count + t->int32_data.count + t->string_data.count +
                   t->int64_data.count + t->double_data.count + t->uint64_data.count;
    if (field == TYPED_NONE || (want == 0 && any == 0)) return OC_OK;
    if (any == 0)
        return oc__fail_rule(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "W-42",
                             "tensor '%s': dims %s of %s make %llu elements, but it has no data",
                             oc_quote(t->name.data, t->name.size, name, sizeof name),
                             format_dims(t, dims, sizeof dims), oc_tensor_type_name(type),
                             (unsigned long long)elements);
    if (have != want)
        return oc__fail_rule(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "W-42",
                             "tensor '%s': dims %s of %s make %llu values in %s, but it holds %llu",
                             oc_quote(t->name.data, t->name.size, name, sizeof name),
                             format_dims(t, dims, sizeof dims), oc_tensor_type_name(type),
                             (unsigned long long)want, typed_field_names[field],
                             (unsigned long long)have);
    return OC_OK;
}

oc_status oc_tensor_check_size(const onnx_TensorProto *t, oc_error *err) {
    return oc_tensor_check_size_fetched(t, NULL, err);
}

oc_status oc_tensor_check_size_fetched(const onnx_TensorProto *t, const oc_tensor_fetch *fetch,
                                       oc_error *err) {
    if (!t)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET, "oc_tensor_check_size: no tensor");
    /* Every reference is resolved, whatever its type: one that names nothing fails. */
    uint64_t fetched = 0;
    if (fetch && !fetch->size) fetch = NULL; /* (an empty fetch: nothing to ask) */
    if (fetch && oc_tensor_is_external(t)) OC_FORWARD(fetch->size(fetch->ctx, t, &fetched, err));
    char name[OC_QUOTE_SIZE], dims[96];
    uint64_t elements = 1;
    int overflow = 0;
    for (uint64_t i = 0; i < t->dims.count; i++) {
        int64_t d = t->dims.items[i];
        if (d < 0)
            return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "W-40",
                                 "tensor '%s': dims %s: dim %llu is negative",
                                 oc_quote(t->name.data, t->name.size, name, sizeof name),
                                 format_dims(t, dims, sizeof dims), (unsigned long long)i);
        /* A zero anywhere makes the product 0, even after an overflowing prefix. */
        if (d == 0)
            elements = 0, overflow = 0;
        else if (!overflow && elements > UINT64_MAX / (uint64_t)d)
            overflow = 1;
        else if (!overflow)
            elements *= (uint64_t)d;
    }
    if (overflow)
        return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "W-40",
                             "tensor '%s': dims %s make more than 2^64 - 1 elements",
                             oc_quote(t->name.data, t->name.size, name, sizeof name),
                             format_dims(t, dims, sizeof dims));
    /* W-40: a part of a larger tensor, deprecated by ONNX, has no size of its own to check
     * and no reader puts the parts together: refused, not passed as whole */
    if (t->segment)
        return oc__fail_rule(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET, "W-40",
                             "tensor '%s' is a segment of a larger tensor (TensorProto.segment, "
                             "deprecated by ONNX), which onnxz does not read",
                             oc_quote(t->name.data, t->name.size, name, sizeof name));
    int32_t type = OC_HAS(TensorProto, t, data_type) ? t->data_type : 0;
    unsigned bits = oc_tensor_element_bits(type);
    if (!bits && type != 0 && type != 8) /* W-42: a type ONNX does not define */
        return oc__fail_rule(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET, "W-42",
                             "tensor '%s' has data_type %d, which ONNX does not define",
                             oc_quote(t->name.data, t->name.size, name, sizeof name), (int)type);
    if (oc_tensor_is_typed(t)) OC_FORWARD(check_typed(t, type, elements, err));
    if (!bits) return OC_OK;
    uint64_t need;
    if (bits >= 8) {
        uint64_t per = bits / 8;
        if (elements > UINT64_MAX / per)
            return oc__fail_rule(err, OC_ERR_MALFORMED, OC_NO_OFFSET, "W-40",
                                 "tensor '%s': dims %s of %s make more than 2^64 - 1 bytes",
                                 oc_quote(t->name.data, t->name.size, name, sizeof name),
                                 format_dims(t, dims, sizeof dims), oc_tensor_type_name(type));
        need = elements * per;
    } else {
        uint64_t per_byte = 8 / bits; /* elements packed in one byte */
        need = elements / per_byte + (elements % per_byte != 0);
    }
    uint64_t have;
    const char *what;
    if (oc_tensor_is_external(t) && fetch) {
        have = fetched;
        what = "its data holds"; /* from a file, or streamed from memory */
    } else if (oc_tensor_is_external(t)) {
        uint64_t offset, length;
        bool has_length;
        OC_FORWARD(oc_tensor_external_range(t, &offset, NULL, &length, &has_length, err));
        if (!has_length) return OC_OK;
        have = length;
        what = "its external data length is";
    } else if (OC_HAS(TensorProto, t, raw_data)) {
        have = t->raw_data.size;
        what = "its raw_data holds";
    } else {
        return OC_OK; /* typed fields: checked above */
    }
    if (have != need)
        return oc__fail_rule(err, OC_ERR_INCONSISTENT, OC_NO_OFFSET, "W-40",
                             "tensor '%s': dims %s of %s make %llu bytes, but %s %llu",
                             oc_quote(t->name.data, t->name.size, name, sizeof name),
                             format_dims(t, dims, sizeof dims), oc_tensor_type_name(type),
                             (unsigned long long)need, what, (unsigned long long)have);
    return OC_OK;
}

/* ---- typed fields as raw bytes ---- */

/* Typed fields, checked (W-40, W-42); fails for a tensor whose values have no bytes of
 * fixed-size elements: UNDEFINED, and STRING unless strings is set. */
static oc_status check_typed_read(const onnx_TensorProto *t, bool strings, oc_error *err) {
    char name[OC_QUOTE_SIZE];
    if (!oc_tensor_is_typed(t))
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "tensor '%s' does not keep its values in typed fields",
                        oc_quote(t->name.data, t->name.size, name, sizeof name));
    OC_FORWARD(oc_tensor_check_size(t, err));
    int32_t type = OC_HAS(TensorProto, t, data_type) ? t->data_type : 0;
    if (type == 0)
        return oc__fail(err, OC_ERR_UNSUPPORTED, OC_NO_OFFSET,
                        "tensor '%s' has no data_type (UNDEFINED): its values have no bytes",
                        oc_quote(t->name.data, t->name.size, name, sizeof name));
    if ((type == 8) != strings)
        return oc__fail(err, type == 8 ? OC_ERR_UNSUPPORTED : OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        type == 8 ? "tensor '%s' holds STRING values, which have no raw bytes"
                                  : "tensor '%s' does not hold STRING values",
                        oc_quote(t->name.data, t->name.size, name, sizeof name));
    return OC_OK;
}

/* Value i of field f as the unsigned number whose low bytes raw_data holds: a float's or
 * a double's IEEE 754 bits, an integer's two's complement, a BOOL's 0 or 1. */
static uint64_t typed_value(const onnx_TensorProto *t, typed_field f, int32_t type, uint64_t i) {
    uint32_t u32;
    uint64_t u64;
    switch (f) {
    case TYPED_FLOAT:
        memcpy(&u32, &t->float_data.items[i], sizeof u32);
        return u32;
    case TYPED_DOUBLE:
        memcpy(&u64, &t->double_data.items[i], sizeof u64);
        return u64;
    case TYPED_INT64:
        return (uint64_t)t->int64_data.items[i];
    case TYPED_UINT64:
        return t->uint64_data.items[i];
    default:
        return type == 9 ? t->int32_data.items[i] != 0 /* BOOL */
                         : (uint64_t)(uint32_t)t->int32_data.items[i];
    }
}

/* Bytes a typed value takes in raw_data: a complex element's parts are a float's or a
 * double's; a sub-byte type's value is one byte of packed elements. Checked counts
 * (check_typed_read) times this width are the bytes W-40 gives the dims, no more. */
static unsigned typed_width(int32_t type, typed_field f) {
    unsigned bits = oc_tensor_element_bits(type);
    return f == TYPED_FLOAT ? 4 : f == TYPED_DOUBLE ? 8 : bits >= 8 ? bits / 8 : 1;
}

oc_status oc_tensor_typed_size(const onnx_TensorProto *t, uint64_t *size, oc_error *err) {
    if (!t || !size)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_tensor_typed_size: missing argument");
    *size = 0;
    OC_FORWARD(check_typed_read(t, false, err));
    typed_field f = typed_field_of(t->data_type);
    *size = typed_count(t, f) * typed_width(t->data_type, f);
    return OC_OK;
}

oc_status oc_tensor_typed_bytes(const onnx_TensorProto *t, oc_bytes *out, oc_error *err) {
    if (!t || !out)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_tensor_typed_bytes: missing argument");
    OC_FORWARD(check_typed_read(t, false, err));
    int32_t type = t->data_type;
    typed_field f = typed_field_of(type);
    unsigned width = typed_width(type, f);
    uint64_t n = typed_count(t, f);
    oc_bytes b = {0};
    uint8_t *p;
    OC_FORWARD(oc_bytes_set_alloc(&b, n * width, &p, err));
    for (uint64_t i = 0; i < n; i++, p += width) {
        uint64_t v = typed_value(t, f, type, i);
        for (unsigned k = 0; k < width; k++) p[k] = (uint8_t)(v >> (8 * k)); /* little-endian */
    }
    oc_bytes_move(out, &b);
    return OC_OK;
}

oc_status oc_tensor_strings(const onnx_TensorProto *t, const oc_str **items, uint64_t *count,
                            oc_error *err) {
    if (!t || !items || !count)
        return oc__fail(err, OC_ERR_INVALID_ARG, OC_NO_OFFSET,
                        "oc_tensor_strings: missing argument");
    *items = NULL;
    *count = 0;
    OC_FORWARD(check_typed_read(t, true, err));
    *items = t->string_data.items;
    *count = t->string_data.count;
    return OC_OK;
}
