/*
 * internal/nametab.h - finding things by name in input chosen by strangers.
 *
 * A table of names (any bytes) that maps each to an index the caller chose: entries of an
 * archive, data files of a model, tensors. It holds no copy of the names: it asks the
 * caller for the name at an index when it needs to compare. Hashes are SipHash-1-3 under
 * a key drawn once per process from the system's random source, so names chosen by an
 * attacker cannot be made to collide in bulk: every operation takes expected constant
 * time (plus the length of the name), whatever the names (spec/security.md K-2).
 *
 * Not thread-safe for writers: one thread at a time, or any number of readers. Exported to
 * libonnxz under ONNXCORE_PRIVATE (private.h).
 */
#ifndef ONNXCORE_INTERNAL_NAMETAB_H
#define ONNXCORE_INTERNAL_NAMETAB_H

#include <stddef.h>
#include <stdint.h>

#include "onnxcore_private.h"
#include "onnxcore/status.h"

typedef struct oc_nametab oc_nametab;

/* Where the table finds the name of the thing at index (any bytes, len of them). Called
 * only for indices that were inserted; the name must not change while it is in the table. */
typedef void (*oc_nametab_name_fn)(const void *ctx, uint64_t index, const void **name, size_t *len);

/* The most names a table holds (indices are below it). */
#define OC_NAMETAB_MAX ((uint64_t)UINT32_MAX - 1)

/* A table sized for `expected` names (it grows past that), reading names through
 * name_of(ctx, ...). NULL when out of memory. */
OC_PRIVATE oc_nametab *oc_nametab_new(uint64_t expected, oc_nametab_name_fn name_of,
                                      const void *ctx);
/* Frees the table (not the names). NULL is accepted. */
OC_PRIVATE void oc_nametab_free(oc_nametab *t);
/* The number of names in the table. */
uint64_t oc_nametab_count(const oc_nametab *t);

/* The keyed hash of a name, for find and insert (computed once, used for both). */
OC_PRIVATE uint64_t oc_nametab_hash(const void *name, size_t len);
/* The index of the name equal to name (hash from oc_nametab_hash), or -1. */
OC_PRIVATE int64_t oc_nametab_find(const oc_nametab *t, const void *name, size_t len,
                                   uint64_t hash);
/* Makes room for one more name, so that the next insert cannot fail. OC_ERR_NOMEM, or
 * OC_ERR_LIMIT past OC_NAMETAB_MAX names. */
OC_PRIVATE oc_status oc_nametab_reserve(oc_nametab *t);
/* Inserts index under the name it has (hash: its oc_nametab_hash). The caller reserved
 * room and found no equal name. */
OC_PRIVATE void oc_nametab_insert(oc_nametab *t, uint64_t index, uint64_t hash);

/* Find, and insert index when the name is not there yet: returns the index of the equal
 * name already in the table, or index when it was inserted; -1 when out of room (as
 * reserve). */
int64_t oc_nametab_add(oc_nametab *t, const void *name, size_t len, uint64_t index);

#endif
