/*
 * internal/bytes.h - span operations only the library needs.
 */
#ifndef ONNXCORE_INTERNAL_BYTES_H
#define ONNXCORE_INTERNAL_BYTES_H

#include "onnxcore/bytes.h"

/* Makes the span own a new buffer of size bytes whose contents the caller fills before
 * anyone reads them (the decoder copies into it, possibly from other threads). */
oc_status oc__bytes_set_uninit(oc_bytes *span, uint64_t size, uint8_t **out);

/* Makes the span own buffer (from posix_memalign or oc_bytes_alloc_buffer), size bytes. */
void oc__bytes_adopt(oc_bytes *span, uint8_t *buffer, uint64_t size);

/* The ctx of an owner made with this release function, or NULL (another kind of owner, or
 * owner NULL). Lets a layer above recognise its own owners (oc__source_of_owner) without
 * the spans knowing what they are. */
void *oc__owner_ctx(const oc_owner *owner, void (*release)(void *ctx));

#endif
