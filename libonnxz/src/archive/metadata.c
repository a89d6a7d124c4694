/*
 * metadata.c - a model's metadata_props by key (internal/metadata.h).
 */
#include "internal/metadata.h"

#include <string.h>

static int key_is(const onnx_StringStringEntryProto *e, const char *key, size_t klen) {
    return e && e->key.size == klen && (klen == 0 || memcmp(e->key.data, key, klen) == 0);
}

/* Drops every entry with key but `keep`; returns how many went. */
static uint64_t drop_others(onnx_ModelProto *m, const char *key, size_t klen,
                            const onnx_StringStringEntryProto *keep) {
    uint64_t kept = 0, n = m->metadata_props.count;
    for (uint64_t i = 0; i < n; i++) {
        onnx_StringStringEntryProto *e = m->metadata_props.items[i];
        if (e != keep && key_is(e, key, klen)) continue;
        m->metadata_props.items[kept++] = e;
    }
    m->metadata_props.count = kept;
    return n - kept;
}

oc_status oz__metadata_set(oc_arena *arena, onnx_ModelProto *m, const char *key, size_t klen,
                           const char *value) {
    onnx_StringStringEntryProto *e = NULL;
    for (uint64_t i = 0; i < m->metadata_props.count && !e; i++)
        if (key_is(m->metadata_props.items[i], key, klen)) e = m->metadata_props.items[i];
    if (e) {
        drop_others(m, key, klen, e);
    } else {
        e = OC_ADD(arena, StringStringEntryProto, m->metadata_props);
        if (!e || oc_str_set(arena, &e->key, key, klen) != OC_OK) return OC_ERR_NOMEM;
        OC_SET_HAS(StringStringEntryProto, e, key);
    }
    if (oc_str_set_cstr(arena, &e->value, value) != OC_OK) return OC_ERR_NOMEM;
    OC_SET_HAS(StringStringEntryProto, e, value);
    return OC_OK;
}

uint64_t oz__metadata_remove(onnx_ModelProto *m, const char *key, size_t klen) {
    return drop_others(m, key, klen, NULL);
}

const oc_str *oz__metadata_get(const onnx_ModelProto *m, const char *key, size_t klen) {
    const oc_str *value = NULL;
    for (uint64_t i = 0; i < m->metadata_props.count; i++)
        if (key_is(m->metadata_props.items[i], key, klen))
            value = &m->metadata_props.items[i]->value;
    return value;
}
