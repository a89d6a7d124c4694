/*
 * internal/decode.h - decoding a fragment of a larger input.
 */
#ifndef ONNXCORE_INTERNAL_DECODE_H
#define ONNXCORE_INTERNAL_DECODE_H

#include "onnxcore/codec.h"
#include "internal/schema.h"

/* Protobuf field numbers are 29 bits. */
#define OC_MAX_FIELD_NUMBER 536870911u

/* Reads a varint of at most 10 bytes. Returns 1 on success, 0 if the input ends first,
 * -1 if it is longer than 10 bytes (protobuf drops bits past 64, as we do). */
int oc__read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out);

/* The field of d with this number, or NULL. */
const oc_field *oc__find_field(const oc_msgdesc *d, uint64_t number);

/* The message a MSG field's next occurrence decodes into: a new element of a repeated
 * field, or the optional one (created if absent: repeats merge); a oneof member clears its
 * siblings first. NULL when out of memory. */
void *oc__field_message(oc_arena *arena, const oc_msgdesc *d, void *msg, const oc_field *f);

/* As oc_decode for size bytes that sit at base_offset of a larger input (error offsets
 * are reported in the larger input) and belong to a message at nesting level depth.
 * Decoding consecutive fragments of a message's encoding into the same message gives
 * what decoding it whole gives: protobuf's merge rules (W-11) make parsing compositional. */
oc_status oc__decode_at(const oc_msgdesc *desc, void *msg, const void *data, uint64_t size,
                        uint64_t base_offset, uint32_t depth, oc_arena *arena,
                        const oc_parse_options *opts, oc_owner *owner, oc_error *err);

/* Decodes the whole of src into msg (as oc_decode). A source that maps is decoded as one
 * buffer, kept by its owner (no_copy spans and strings share it); any other through a
 * window, large submessages walked through the source and large payloads read straight
 * into their storage (no_copy does not apply). */
struct oc_source;
oc_status oc__decode_source(const oc_msgdesc *desc, void *msg, struct oc_source *src,
                            oc_arena *arena, const oc_parse_options *opts, oc_error *err);
/* The same through a window that starts at window_size bytes (> 0: whatever the source
 * can do; tests use small windows to make every field cross one). */
oc_status oc__decode_source_window(const oc_msgdesc *desc, void *msg, struct oc_source *src,
                                   oc_arena *arena, const oc_parse_options *opts,
                                   uint64_t window_size, oc_error *err);

/* OC_OK when size is within the cap an option sets (0: the default cap), else OC_ERR_LIMIT:
 * "WHAT of SIZE bytes is over the OPTION limit of CAP bytes", at offset. */
oc_status oc__check_size(uint64_t size, uint64_t option_value, uint64_t default_cap,
                         const char *what, const char *option, uint64_t offset, oc_error *err);

/* The memory budget of a decode (M-1): opts->max_memory (0: the default), which
 * oc__budget_begin sets as the arena's cap beyond what it holds, returning the previous
 * cap. oc__budget_end restores it and turns an OC_ERR_NOMEM that the cap caused into
 * OC_ERR_LIMIT naming the budget; other statuses pass through. */
uint64_t oc__budget_of(const oc_parse_options *opts);
uint64_t oc__budget_begin(oc_arena *arena, const oc_parse_options *opts);
oc_status oc__budget_end(oc_arena *arena, uint64_t previous, const oc_parse_options *opts,
                         oc_status st, oc_error *err);

#endif
