/*
 * onnxcore/limits.h - every limit the library enforces on input, in one place.
 */
#ifndef ONNXCORE_LIMITS_H
#define ONNXCORE_LIMITS_H

/* Message nesting accepted by default when decoding (protobuf's default as well). The
 * root message is level 1. Raise it with oc_parse_options.max_depth. */
#define OC_DEFAULT_MAX_DEPTH 100u

/* Nesting is never accepted beyond this, whatever the options say: the decoder, encoder,
 * copier and tensor walk recurse on the C stack, and 1000 levels stay within 1 MiB of it
 * even in sanitizer builds. Real models nest a few dozen levels (subgraphs in subgraphs). */
#define OC_MAX_DEPTH_HARD 1000u

#endif
