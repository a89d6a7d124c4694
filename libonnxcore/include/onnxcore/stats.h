/*
 * onnxcore/stats.h - the figures of a ModelProto (`onnxz info`, File.info() in Python):
 * counts of nodes and other graph parts, and where the tensors' bytes live, gathered in
 * one pass before anything is printed. Callers format them.
 *
 * The struct may grow at its end; it is allocated by the library (callers
 * never declare one), so a caller built against an older header keeps working.
 */
#ifndef ONNXCORE_STATS_H
#define ONNXCORE_STATS_H

#include "export.h"

#include <stdint.h>

#include "codec.h"
#include "status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Tensors whose bytes live in one place, and how many bytes that is. */
typedef struct oc_tensor_share {
    uint64_t tensors;
    uint64_t bytes;
} oc_tensor_share;

/* External data in one file (the `location` key; empty when the key is missing). The
 * string points into the model: it is valid while the model lives. */
typedef struct oc_external_location {
    oc_str location;
    uint64_t tensors;
    uint64_t bytes;
} oc_external_location;

typedef struct oc_model_stats {
    /* Counts in the main graph (0 when the model has none). */
    uint64_t nodes;
    uint64_t initializers;
    uint64_t sparse_initializers;
    uint64_t inputs;
    uint64_t outputs;
    uint64_t value_infos;
    /* Every NodeProto in the model: main graph, subgraphs in attributes at any depth,
     * functions, and training graphs. */
    uint64_t nodes_total;
    uint64_t functions;
    uint64_t training_infos;
    uint64_t metadata_props;

    /* Every TensorProto at any depth (oc_msg_visit_tensors). A tensor is counted in each
     * share that holds some of its bytes; tensor_bytes is the sum of the three. */
    uint64_t tensors;
    uint64_t tensor_bytes;
    oc_tensor_share raw;              /* raw_data inside the file */
    oc_tensor_share typed;            /* float_data ... string_data: their bytes as encoded */
    oc_tensor_share external;         /* data_location EXTERNAL: the `length` keys */
    uint64_t external_unknown_length; /* external tensors without a usable `length` */
    uint64_t external_checksums;      /* external tensors with a `checksum` key */
    /* external_data entries whose key onnxz does not define (never acted on, spec E-3),
     * and the first few distinct key names (pointing into the model) */
    uint64_t external_other_keys;
    oc_str other_key_names[4];
    unsigned n_other_key_names;
    oc_external_location *locations; /* sorted by location, one per distinct location */
    uint64_t nlocations;
} oc_model_stats;

/* Counts model's parts into a new *out (NULL after a failure), which oc_model_stats_free
 * releases; its strings point into model. Fails only when out of memory. */
OC_API oc_status oc_model_stats_collect(onnx_ModelProto *model, oc_model_stats **out,
                                        oc_error *err);
/* Frees what oc_model_stats_collect returned. NULL is accepted. */
OC_API void oc_model_stats_free(oc_model_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
