/*
 * model_stats.c - counting nodes and tensors (onnxcore/stats.h).
 */
#include "onnxcore/stats.h"

#include "onnxcore/external.h"

#include <stdlib.h>
#include <string.h>

enum { DATA_LOCATION_EXTERNAL = 1 }; /* TensorProto.DataLocation.EXTERNAL */

/* ---- nodes ------------------------------------------------------------------------- */

/* The recursion below is bounded: the decoder refused anything nested deeper than its
 * max_depth, so a hostile model cannot exhaust the stack here. */
static uint64_t graph_nodes(const onnx_GraphProto *graph);

static uint64_t attribute_nodes(const onnx_AttributeProto *attr) {
    uint64_t n = 0;
    if (!attr) return 0;
    n += graph_nodes(attr->g);
    for (uint64_t i = 0; i < attr->graphs.count; i++) n += graph_nodes(attr->graphs.items[i]);
    return n;
}

/* The nodes of a list and of every subgraph their attributes hold. */
static uint64_t node_list_nodes(onnx_NodeProto *const *nodes, uint64_t count) {
    uint64_t n = count;
    for (uint64_t i = 0; i < count; i++) {
        const onnx_NodeProto *node = nodes[i];
        if (!node) continue;
        for (uint64_t a = 0; a < node->attribute.count; a++)
            n += attribute_nodes(node->attribute.items[a]);
    }
    return n;
}

static uint64_t graph_nodes(const onnx_GraphProto *graph) {
    return graph ? node_list_nodes(graph->node.items, graph->node.count) : 0;
}

static uint64_t function_nodes(const onnx_FunctionProto *fn) {
    uint64_t n;
    if (!fn) return 0;
    n = node_list_nodes(fn->node.items, fn->node.count);
    /* attribute_proto holds default attribute values, which may be graphs too. */
    for (uint64_t a = 0; a < fn->attribute_proto.count; a++)
        n += attribute_nodes(fn->attribute_proto.items[a]);
    return n;
}

static uint64_t model_nodes(const onnx_ModelProto *model) {
    uint64_t n = graph_nodes(model->graph);
    for (uint64_t i = 0; i < model->functions.count; i++)
        n += function_nodes(model->functions.items[i]);
    for (uint64_t i = 0; i < model->training_info.count; i++) {
        const onnx_TrainingInfoProto *ti = model->training_info.items[i];
        if (ti) n += graph_nodes(ti->initialization) + graph_nodes(ti->algorithm);
    }
    return n;
}

static void count_graph(const onnx_GraphProto *graph, oc_model_stats *stats) {
    if (!graph) return;
    stats->nodes = graph->node.count;
    stats->initializers = graph->initializer.count;
    stats->sparse_initializers = graph->sparse_initializer.count;
    stats->inputs = graph->input.count;
    stats->outputs = graph->output.count;
    stats->value_infos = graph->value_info.count;
}

/* ---- external locations: gathered one per tensor, then sorted and merged ------------
 * Sorting costs O(n log n) whatever the locations are; a hash table with a fixed hash
 * let crafted locations collide and made this quadratic (spec/security.md K-1). */

typedef struct location_table {
    oc_external_location *items; /* one per external tensor until table_finish merges them */
    uint64_t count, cap;
} location_table;

static int table_add(location_table *table, oc_str location, uint64_t bytes) {
    if (table->count == table->cap) {
        uint64_t cap = table->cap ? table->cap * 2 : 16;
        oc_external_location *items = realloc(table->items, (size_t)cap * sizeof *items);
        if (!items) return 0;
        table->items = items;
        table->cap = cap;
    }
    table->items[table->count++] = (oc_external_location){location, 1, bytes};
    return 1;
}

static int compare_locations(const void *a, const void *b) {
    oc_str x = ((const oc_external_location *)a)->location;
    oc_str y = ((const oc_external_location *)b)->location;
    uint64_t n = x.size < y.size ? x.size : y.size;
    int c = n ? memcmp(x.data, y.data, (size_t)n) : 0;
    if (c != 0) return c;
    return (x.size > y.size) - (x.size < y.size);
}

/* Moves the locations into stats, sorted, one per distinct location with its totals. */
static void table_finish(location_table *table, oc_model_stats *stats) {
    uint64_t n = 0;
    if (table->count)
        qsort(table->items, (size_t)table->count, sizeof *table->items, compare_locations);
    for (uint64_t i = 0; i < table->count; i++) {
        if (n && compare_locations(&table->items[n - 1], &table->items[i]) == 0) {
            table->items[n - 1].tensors++;
            table->items[n - 1].bytes += table->items[i].bytes;
        } else {
            table->items[n++] = table->items[i];
        }
    }
    stats->locations = table->items;
    stats->nlocations = n;
    table->items = NULL;
    table->count = table->cap = 0;
}

/* ---- tensors ----------------------------------------------------------------------- */

typedef struct tensor_walk {
    oc_model_stats *stats;
    location_table table;
} tensor_walk;

static uint64_t varint_size(uint64_t v) {
    uint64_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* The bytes the typed fields take as encoded: fixed 4 or 8 per float and double,
 * varints for the integers (a negative int32 is sign-extended to 10 bytes, as protobuf
 * does), and the length of each string. */
static uint64_t typed_bytes(const onnx_TensorProto *t) {
    uint64_t n = t->float_data.count * 4 + t->double_data.count * 8;
    for (uint64_t i = 0; i < t->int32_data.count; i++)
        n += varint_size((uint64_t)(int64_t)t->int32_data.items[i]);
    for (uint64_t i = 0; i < t->int64_data.count; i++)
        n += varint_size((uint64_t)t->int64_data.items[i]);
    for (uint64_t i = 0; i < t->uint64_data.count; i++) n += varint_size(t->uint64_data.items[i]);
    for (uint64_t i = 0; i < t->string_data.count; i++) n += t->string_data.items[i].size;
    return n;
}

static int has_typed_data(const onnx_TensorProto *t) {
    return t->float_data.count || t->int32_data.count || t->string_data.count ||
           t->int64_data.count || t->double_data.count || t->uint64_data.count;
}

/* A decimal `length` value; 0 when it is not a plain decimal number that fits. */
static int parse_length(oc_str s, uint64_t *out) {
    uint64_t v = 0;
    if (s.size == 0) return 0;
    for (uint64_t i = 0; i < s.size; i++) {
        unsigned d = (unsigned)((unsigned char)s.data[i]) - (unsigned)'0';
        if (d > 9 || v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

/* Counts an external_data key onnxz does not act on and remembers a few distinct names. */
static void note_other_key(oc_model_stats *st, const oc_str *key) {
    st->external_other_keys++;
    for (unsigned i = 0; i < st->n_other_key_names; i++)
        if (st->other_key_names[i].size == key->size &&
            (key->size == 0 ||
             memcmp(st->other_key_names[i].data, key->data, (size_t)key->size) == 0))
            return;
    if (st->n_other_key_names < sizeof st->other_key_names / sizeof st->other_key_names[0])
        st->other_key_names[st->n_other_key_names++] = *key;
}

static oc_status count_external(tensor_walk *walk, const onnx_TensorProto *t) {
    static const char empty[] = "";
    oc_str location = {empty, 0};
    uint64_t length = 0;
    int known = 0, checksum = 0;
    for (uint64_t i = 0; i < t->external_data.count; i++) {
        const onnx_StringStringEntryProto *kv = t->external_data.items[i];
        if (!kv) continue;
        if (oc_str_eq(kv->key, "location"))
            location = kv->value;
        else if (oc_str_eq(kv->key, "length"))
            known = parse_length(kv->value, &length);
        else if (oc_str_eq(kv->key, "checksum"))
            checksum = 1;
        else if (!oc_external_key_is_known(&kv->key))
            note_other_key(walk->stats, &kv->key);
    }
    if (!known) {
        walk->stats->external_unknown_length++;
        length = 0;
    }
    walk->stats->external.tensors++;
    walk->stats->external_checksums += checksum ? 1u : 0u;
    walk->stats->external.bytes += length;
    return table_add(&walk->table, location, length) ? OC_OK : OC_ERR_NOMEM;
}

static oc_status visit_tensor(void *ctx, onnx_TensorProto *t) {
    tensor_walk *walk = ctx;
    oc_model_stats *stats = walk->stats;
    stats->tensors++;
    if (OC_HAS(TensorProto, t, raw_data)) {
        stats->raw.tensors++;
        stats->raw.bytes += t->raw_data.size;
    }
    if (has_typed_data(t)) {
        stats->typed.tensors++;
        stats->typed.bytes += typed_bytes(t);
    }
    if (OC_HAS(TensorProto, t, data_location) && t->data_location == DATA_LOCATION_EXTERNAL)
        return count_external(walk, t);
    return OC_OK;
}

/* ---- entry points ------------------------------------------------------------------ */

static oc_status nomem(oc_error *err) {
    return oc_error_set(err, OC_ERR_NOMEM, OC_NO_OFFSET, "out of memory while counting tensors");
}

oc_status oc_model_stats_collect(onnx_ModelProto *model, oc_model_stats **out, oc_error *err) {
    tensor_walk walk;
    oc_model_stats *stats = calloc(1, sizeof *stats);
    *out = NULL;
    if (!stats) return nomem(err);
    count_graph(model->graph, stats);
    stats->nodes_total = model_nodes(model);
    stats->functions = model->functions.count;
    stats->training_infos = model->training_info.count;
    stats->metadata_props = model->metadata_props.count;

    memset(&walk, 0, sizeof walk);
    walk.stats = stats;
    if (oc_msg_visit_tensors(&onnx_ModelProto_desc, model, visit_tensor, &walk) != OC_OK) {
        free(walk.table.items);
        free(stats);
        return nomem(err);
    }
    table_finish(&walk.table, stats);
    stats->tensor_bytes = stats->raw.bytes + stats->typed.bytes + stats->external.bytes;
    *out = stats;
    return OC_OK;
}

void oc_model_stats_free(oc_model_stats *stats) {
    if (!stats) return;
    free(stats->locations);
    free(stats);
}
