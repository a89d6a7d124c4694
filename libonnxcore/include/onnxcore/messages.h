/*
 * onnxcore/messages.h - the ONNX messages as C structs, expanded from schema.def.
 *
 * Every message struct starts with an oc_msghdr (presence bits and unknown fields), then
 * has one member per schema field, named as in the .proto:
 *   optional scalar   int64_t / int32_t / uint64_t / float / double (enums as int32_t)
 *   optional string   oc_str                (presence: OC_HAS)
 *   raw_data          oc_bytes              (presence: OC_HAS)
 *   optional message  onnx_X *              (presence: pointer is not NULL)
 *   repeated field    struct { T *items; uint64_t count, cap; }  (T = scalar, oc_str, onnx_X *)
 * Messages, strings and arrays live in an oc_arena; create them with OC_NEW and OC_ADD
 * (experimental, as the descriptors and the codec are: reading the structs is stable).
 *
 * Examples:
 *   onnx_TensorProto *t = OC_ADD(arena, TensorProto, graph->initializer);
 *   t->data_type = 1; OC_SET_HAS(TensorProto, t, data_type);
 *   if (OC_HAS(TensorProto, t, raw_data)) use(t->raw_data.data, t->raw_data.size);
 */
#ifndef ONNXCORE_MESSAGES_H
#define ONNXCORE_MESSAGES_H

#include "export.h"

#include <stdint.h>

#include "arena.h"
#include "bytes.h"
#include "schema.def"

#ifdef __cplusplus
extern "C" {
#endif

/* The common head of every message. */
typedef struct oc_msghdr {
    uint32_t has;   /* presence bit per field index (optional and oneof fields) */
    uint32_t flags; /* reserved, zero */
    oc_str unknown; /* unknown fields, verbatim, written back after the known ones */
} oc_msghdr;

/* A message type's descriptor (its field table); opaque. */
typedef struct oc_msgdesc oc_msgdesc;

#define OC_ARRAY(T)     \
    struct {            \
        T *items;       \
        uint64_t count; \
        uint64_t cap;   \
    }

/* C type of a field, by label and type. */
#define OC_CTYPE_OPT_INT64(S)     int64_t
#define OC_CTYPE_OPT_INT32(S)     int32_t
#define OC_CTYPE_OPT_UINT64(S)    uint64_t
#define OC_CTYPE_OPT_FLOAT(S)     float
#define OC_CTYPE_OPT_DOUBLE(S)    double
#define OC_CTYPE_OPT_ENUM(S)      int32_t
#define OC_CTYPE_OPT_STRING(S)    oc_str
#define OC_CTYPE_OPT_BYTES(S)     oc_str
#define OC_CTYPE_OPT_SPAN(S)      oc_bytes
#define OC_CTYPE_OPT_MSG(S)       struct onnx_##S *
#define OC_CTYPE_ONEOF_INT64(S)   int64_t
#define OC_CTYPE_ONEOF_STRING(S)  oc_str
#define OC_CTYPE_ONEOF_MSG(S)     struct onnx_##S *
#define OC_CTYPE_REP_INT64(S)     OC_ARRAY(int64_t)
#define OC_CTYPE_REP_FLOAT(S)     OC_ARRAY(float)
#define OC_CTYPE_REP_STRING(S)    OC_ARRAY(oc_str)
#define OC_CTYPE_REP_BYTES(S)     OC_ARRAY(oc_str)
#define OC_CTYPE_REP_MSG(S)       OC_ARRAY(struct onnx_##S *)
#define OC_CTYPE_PACKED_INT64(S)  OC_ARRAY(int64_t)
#define OC_CTYPE_PACKED_INT32(S)  OC_ARRAY(int32_t)
#define OC_CTYPE_PACKED_UINT64(S) OC_ARRAY(uint64_t)
#define OC_CTYPE_PACKED_FLOAT(S)  OC_ARRAY(float)
#define OC_CTYPE_PACKED_DOUBLE(S) OC_ARRAY(double)

#define OC_X_TYPEDEF_(M, N) typedef struct onnx_##M onnx_##M;
ONNX_MESSAGES(OC_X_TYPEDEF_)
#undef OC_X_TYPEDEF_

#define OC_X_MEMBER_(M, name, num, TYPE, LABEL, SUB) OC_CTYPE_##LABEL##_##TYPE(SUB) name;
#define OC_X_STRUCT_(M, N)            \
    struct onnx_##M {                 \
        oc_msghdr hdr;                \
        ONNX_FIELDS_##M(OC_X_MEMBER_) \
    };
ONNX_MESSAGES(OC_X_STRUCT_)
#undef OC_X_STRUCT_
#undef OC_X_MEMBER_

/* Field indices: onnx_<Message>_<field>_IDX, in schema order; onnx_<Message>__NFIELDS. */
#define OC_X_INDEX_(M, name, num, TYPE, LABEL, SUB) onnx_##M##_##name##_IDX,
#define OC_X_INDICES_(M, N)                         enum { ONNX_FIELDS_##M(OC_X_INDEX_) onnx_##M##__NFIELDS };
ONNX_MESSAGES(OC_X_INDICES_)
#undef OC_X_INDICES_
#undef OC_X_INDEX_

/* Presence of optional and oneof fields (messages: test the pointer instead). */
#define OC_HAS(M, msg, field)       ((((msg)->hdr.has) >> onnx_##M##_##field##_IDX) & 1u)
#define OC_SET_HAS(M, msg, field)   ((msg)->hdr.has |= (1u << onnx_##M##_##field##_IDX))
#define OC_CLEAR_HAS(M, msg, field) ((msg)->hdr.has &= ~(1u << onnx_##M##_##field##_IDX))

#ifdef ONNXZ_EXPERIMENTAL /* experimental: docs/api.md */
/* Descriptors: onnx_<Message>_desc. */
#define OC_X_DESC_(M, N) extern OC_API const oc_msgdesc onnx_##M##_desc;
ONNX_MESSAGES(OC_X_DESC_)
#undef OC_X_DESC_

/* Allocates a zeroed message of a descriptor's type in the arena (NULL when out of memory).
 * A TensorProto is registered so that the arena releases its raw_data span. */
OC_API void *oc_msg_new(oc_arena *arena, const oc_msgdesc *desc);

/* Appends one zeroed element to a repeated field and returns a pointer to it (NULL when
 * out of memory). array is the address of the field; elem_size the size of one item. */
OC_API void *oc_array_push(oc_arena *arena, void *array, uint64_t elem_size);

/* Typed helpers. OC_NEW(arena, TensorProto) -> onnx_TensorProto *;
 * OC_ADD(arena, TensorProto, graph->initializer) allocates a message, appends it to the
 * repeated field and returns it (NULL when out of memory). */
#define OC_NEW(arena, M)        ((onnx_##M *)oc_msg_new((arena), &onnx_##M##_desc))
#define OC_ADD(arena, M, field) ((onnx_##M *)oc_array_add_msg((arena), &(field), &onnx_##M##_desc))
OC_API void *oc_array_add_msg(oc_arena *arena, void *array, const oc_msgdesc *desc);

/* The message name of a descriptor ("TensorProto", "TypeProto.Tensor", ...). */
OC_API const char *oc_msgdesc_name(const oc_msgdesc *desc);
/* The descriptor of a message by name ("ModelProto", "TensorProto", "SequenceProto",
 * "TypeProto.Tensor"...), or NULL. */
OC_API const oc_msgdesc *oc_msgdesc_find(const char *name);
#endif

#ifdef __cplusplus
}
#endif

#endif
