/*
 * internal/private.h - OC_PRIVATE, the mark of what libonnxcore.so exports to libonnxz.so
 * only: internals under the symbol version ONNXCORE_PRIVATE (libonnxcore/libonnxcore.map,
 * ARCHITECTURE.md), as glibc's GLIBC_PRIVATE. No promise holds for them between releases;
 * the two libraries are built and shipped together. Every name marked here is listed in
 * the map's private node, and the reverse (test arch.symbols).
 */
#ifndef ONNXCORE_INTERNAL_PRIVATE_H
#define ONNXCORE_INTERNAL_PRIVATE_H

#ifndef OC_PRIVATE /* tests/arch defines it to find the marked declarations */
#if defined(__GNUC__) || defined(__clang__)
#define OC_PRIVATE __attribute__((visibility("default")))
#else
#define OC_PRIVATE
#endif
#endif

#endif
