/*
 * tools/model_stats.h - the facts `onnxz info` reports, gathered in one pass over a
 * loaded model before anything is printed.
 */
#ifndef ONNXZ_TOOLS_MODEL_STATS_H
#define ONNXZ_TOOLS_MODEL_STATS_H

#include <stdint.h>

#include <onnxcore/onnxcore.h>

/* Tensors whose bytes live in one place, and how many bytes that is. */
typedef struct tensor_share {
    uint64_t tensors;
    uint64_t bytes;
} tensor_share;

/* External data in one file (the `location` key; empty when the key is missing). The
 * string points into the model: it is valid while the model lives. */
typedef struct external_location {
    oc_str location;
    uint64_t tensors;
    uint64_t bytes;
} external_location;

typedef struct model_stats {
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
    tensor_share raw;                 /* raw_data inside the file */
    tensor_share typed;               /* float_data ... string_data: their bytes as encoded */
    tensor_share external;            /* data_location EXTERNAL: the `length` keys */
    uint64_t external_unknown_length; /* external tensors without a usable `length` */
    /* external_data entries whose key onnxz does not define (never acted on, spec E-3),
     * and the first few distinct key names (pointing into the model) */
    uint64_t external_other_keys;
    oc_str other_key_names[4];
    unsigned n_other_key_names;
    external_location *locations; /* sorted by location; malloc'd */
    uint64_t nlocations;
} model_stats;

/* Fills *stats (zeroed first) from model. Fails only when out of memory. */
oc_status model_stats_collect(onnx_ModelProto *model, model_stats *stats, oc_error *err);
/* Frees what collect allocated. */
void model_stats_free(model_stats *stats);

#endif
