/*
 * internal/schema.h - the descriptor tables expanded from schema.def.
 */
#ifndef ONNXCORE_INTERNAL_SCHEMA_H
#define ONNXCORE_INTERNAL_SCHEMA_H

#include <stdint.h>
#include <string.h>

#include "onnxcore/messages.h"

typedef enum oc_ftype {
    OC_FT_INT64,
    OC_FT_INT32,
    OC_FT_UINT64,
    OC_FT_FLOAT,
    OC_FT_DOUBLE,
    OC_FT_ENUM,
    OC_FT_STRING,
    OC_FT_BYTES,
    OC_FT_SPAN,
    OC_FT_MSG
} oc_ftype;

typedef enum oc_flabel { OC_FL_OPT, OC_FL_REP, OC_FL_PACKED, OC_FL_ONEOF } oc_flabel;

/* Protobuf wire types. */
enum {
    OC_WT_VARINT = 0,
    OC_WT_I64 = 1,
    OC_WT_LEN = 2,
    OC_WT_SGROUP = 3,
    OC_WT_EGROUP = 4,
    OC_WT_I32 = 5
};

typedef struct oc_field {
    uint32_t number;
    uint8_t type;               /* oc_ftype */
    uint8_t label;              /* oc_flabel */
    uint8_t index;              /* presence bit */
    uint8_t wiretype;           /* wire type of one element */
    uint32_t offset;            /* of the member in the C struct */
    const oc_msgdesc *sub;      /* OC_FT_MSG */
    int32_t enum_min, enum_max; /* OC_FT_ENUM */
    const char *name;
} oc_field;

/* Message types, numbered in ONNX_MESSAGES order. */
#define OC_X_MSGINDEX_(M, N) OC_MSG_##M,
enum { ONNX_MESSAGES(OC_X_MSGINDEX_) OC_MSG__COUNT };
#undef OC_X_MSGINDEX_

/* Field numbers below this are found through a direct index. */
#define OC_FIELD_LOOKUP 32

struct oc_msgdesc {
    const char *name;
    uint32_t size; /* sizeof the C struct */
    uint32_t nfields;
    const oc_field *fields;             /* ascending field numbers */
    uint32_t oneof_mask;                /* presence bits of the oneof members */
    uint8_t has_span;                   /* has a SPAN field (needs an arena cleanup) */
    uint8_t index;                      /* position in ONNX_MESSAGES, for per-type tables */
    uint8_t by_number[OC_FIELD_LOOKUP]; /* field index + 1, or 0 */
};

static inline int oc__is_repeated(const oc_field *f) {
    return f->label == OC_FL_REP || f->label == OC_FL_PACKED;
}

/* The layout every OC_ARRAY(T) member shares; accessed through memcpy, never by cast. */
typedef struct oc_array_hdr {
    void *items;
    uint64_t count;
    uint64_t cap;
} oc_array_hdr;

static inline oc_array_hdr oc__array_get(const void *msg, const oc_field *f) {
    oc_array_hdr a;
    memcpy(&a, (const char *)msg + f->offset, sizeof a);
    return a;
}
static inline void oc__array_put(void *msg, const oc_field *f, const oc_array_hdr *a) {
    memcpy((char *)msg + f->offset, a, sizeof *a);
}
static inline void *oc__msg_get(const void *msg, const oc_field *f) {
    void *p;
    memcpy(&p, (const char *)msg + f->offset, sizeof p);
    return p;
}
static inline void oc__msg_put(void *msg, const oc_field *f, void *sub) {
    memcpy((char *)msg + f->offset, &sub, sizeof sub);
}
static inline oc_msghdr *oc__hdr(void *msg) { return (oc_msghdr *)msg; }
static inline const oc_msghdr *oc__hdr_c(const void *msg) { return (const oc_msghdr *)msg; }

/* Size in bytes of one element of a scalar or string field in its C array (inline: the
 * decoder asks for every element it stores). */
static inline uint32_t oc__elem_size(const oc_field *f) {
    switch ((oc_ftype)f->type) {
    case OC_FT_INT64:
        return sizeof(int64_t);
    case OC_FT_UINT64:
        return sizeof(uint64_t);
    case OC_FT_INT32:
    case OC_FT_ENUM:
        return sizeof(int32_t);
    case OC_FT_FLOAT:
        return sizeof(float);
    case OC_FT_DOUBLE:
        return sizeof(double);
    case OC_FT_STRING:
    case OC_FT_BYTES:
        return sizeof(oc_str);
    case OC_FT_SPAN:
        return sizeof(oc_bytes);
    case OC_FT_MSG:
        return sizeof(void *);
    }
    return 0;
}

#endif
