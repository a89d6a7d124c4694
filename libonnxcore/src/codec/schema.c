/*
 * schema.c - the descriptor tables of every message, expanded from schema.def.
 * This file has no logic of its own beyond name lookup: the codec walks these tables.
 */
#include <stddef.h>
#include <string.h>

#include "internal/schema.h"

/* Enum ranges: ONNX_ENUM_MIN_<Name> / ONNX_ENUM_MAX_<Name>. */
#define OC_X_ENUM_(E, lo, hi) ONNX_ENUM_MIN_##E = (lo), ONNX_ENUM_MAX_##E = (hi),
enum { ONNX_ENUMS(OC_X_ENUM_) ONNX_ENUM__UNUSED };
#undef OC_X_ENUM_

/* Per-type table entries. */
#define OC_SUB_MSG(S)   &onnx_##S##_desc
#define OC_SUB_OTHER(S) NULL
#define OC_SUB_INT64    OC_SUB_OTHER
#define OC_SUB_INT32    OC_SUB_OTHER
#define OC_SUB_UINT64   OC_SUB_OTHER
#define OC_SUB_FLOAT    OC_SUB_OTHER
#define OC_SUB_DOUBLE   OC_SUB_OTHER
#define OC_SUB_ENUM     OC_SUB_OTHER
#define OC_SUB_STRING   OC_SUB_OTHER
#define OC_SUB_BYTES    OC_SUB_OTHER
#define OC_SUB_SPAN     OC_SUB_OTHER

#define OC_ENUM_RANGE_ENUM(S)  ONNX_ENUM_MIN_##S, ONNX_ENUM_MAX_##S
#define OC_ENUM_RANGE_OTHER(S) 0, 0
#define OC_ENUM_RANGE_INT64    OC_ENUM_RANGE_OTHER
#define OC_ENUM_RANGE_INT32    OC_ENUM_RANGE_OTHER
#define OC_ENUM_RANGE_UINT64   OC_ENUM_RANGE_OTHER
#define OC_ENUM_RANGE_FLOAT    OC_ENUM_RANGE_OTHER
#define OC_ENUM_RANGE_DOUBLE   OC_ENUM_RANGE_OTHER
#define OC_ENUM_RANGE_STRING   OC_ENUM_RANGE_OTHER
#define OC_ENUM_RANGE_BYTES    OC_ENUM_RANGE_OTHER
#define OC_ENUM_RANGE_SPAN     OC_ENUM_RANGE_OTHER
#define OC_ENUM_RANGE_MSG      OC_ENUM_RANGE_OTHER

#define OC_WIRE_INT64  OC_WT_VARINT
#define OC_WIRE_INT32  OC_WT_VARINT
#define OC_WIRE_UINT64 OC_WT_VARINT
#define OC_WIRE_ENUM   OC_WT_VARINT
#define OC_WIRE_FLOAT  OC_WT_I32
#define OC_WIRE_DOUBLE OC_WT_I64
#define OC_WIRE_STRING OC_WT_LEN
#define OC_WIRE_BYTES  OC_WT_LEN
#define OC_WIRE_SPAN   OC_WT_LEN
#define OC_WIRE_MSG    OC_WT_LEN

#define OC_IS_ONEOF_OPT    0u
#define OC_IS_ONEOF_REP    0u
#define OC_IS_ONEOF_PACKED 0u
#define OC_IS_ONEOF_ONEOF  1u
#define OC_IS_SPAN_SPAN    1u
#define OC_IS_SPAN_INT64   0u
#define OC_IS_SPAN_INT32   0u
#define OC_IS_SPAN_UINT64  0u
#define OC_IS_SPAN_FLOAT   0u
#define OC_IS_SPAN_DOUBLE  0u
#define OC_IS_SPAN_ENUM    0u
#define OC_IS_SPAN_STRING  0u
#define OC_IS_SPAN_BYTES   0u
#define OC_IS_SPAN_MSG     0u

#define OC_X_FIELD_(M, name, num, TYPE, LABEL, SUB) \
    {(num),                                         \
     OC_FT_##TYPE,                                  \
     OC_FL_##LABEL,                                 \
     onnx_##M##_##name##_IDX,                       \
     OC_WIRE_##TYPE,                                \
     (uint32_t)offsetof(onnx_##M, name),            \
     OC_SUB_##TYPE(SUB),                            \
     OC_ENUM_RANGE_##TYPE(SUB),                     \
     #name},
#define OC_X_BYNUM_(M, name, num, TYPE, LABEL, SUB) [num] = onnx_##M##_##name##_IDX + 1,
#define OC_X_ONEOF_(M, name, num, TYPE, LABEL, SUB) \
    | (OC_IS_ONEOF_##LABEL << onnx_##M##_##name##_IDX)
#define OC_X_SPAN_(M, name, num, TYPE, LABEL, SUB) | OC_IS_SPAN_##TYPE

#define OC_X_DESC_(M, N)                                                    \
    static const oc_field oc_fields_##M[] = {ONNX_FIELDS_##M(OC_X_FIELD_)}; \
    const oc_msgdesc onnx_##M##_desc = {                                    \
        N,                                                                  \
        (uint32_t)sizeof(onnx_##M),                                         \
        (uint32_t)(sizeof oc_fields_##M / sizeof oc_fields_##M[0]),         \
        oc_fields_##M,                                                      \
        0u ONNX_FIELDS_##M(OC_X_ONEOF_),                                    \
        (uint8_t)(0u ONNX_FIELDS_##M(OC_X_SPAN_)),                          \
        (uint8_t)OC_MSG_##M,                                                \
        {ONNX_FIELDS_##M(OC_X_BYNUM_)}};
ONNX_MESSAGES(OC_X_DESC_)

/* Presence bits are a uint32_t and the direct lookup covers numbers < OC_FIELD_LOOKUP. */
#define OC_X_CHECK_(M, N) \
    _Static_assert(onnx_##M##__NFIELDS <= 32, #M " has too many fields for uint32_t has");
ONNX_MESSAGES(OC_X_CHECK_)
_Static_assert(sizeof(OC_ARRAY(int64_t)) == sizeof(oc_array_hdr), "array layout");
_Static_assert(OC_MSG__COUNT <= 255, "message index is a uint8_t");
_Static_assert(offsetof(onnx_TensorProto, hdr) == 0, "header first");

static const oc_msgdesc *const oc_all_descs[] = {
#define OC_X_ALL_(M, N) &onnx_##M##_desc,
    ONNX_MESSAGES(OC_X_ALL_)
#undef OC_X_ALL_
};

const char *oc_msgdesc_name(const oc_msgdesc *desc) { return desc ? desc->name : "?"; }

const oc_msgdesc *oc_msgdesc_find(const char *name) {
    if (!name) return NULL;
    /* The proto spelling ("TypeProto.Tensor"), with or without the package
     * ("onnx.ModelProto"), or the C one ("TypeProto_Tensor"). */
    if (strncmp(name, "onnx.", 5) == 0) name += 5;
    for (size_t i = 0; i < sizeof oc_all_descs / sizeof oc_all_descs[0]; i++) {
        const char *a = oc_all_descs[i]->name, *b = name;
        while (*a && (*a == *b || (*a == '.' && *b == '_'))) a++, b++;
        if (!*a && !*b) return oc_all_descs[i];
    }
    return NULL;
}
