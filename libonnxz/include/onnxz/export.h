/*
 * onnxz/export.h - OZ_API marks the functions libonnxz exports.
 *
 * As onnxcore/export.h: libonnxz is built with -fvisibility=hidden and only declarations
 * marked OZ_API in the onnxz headers are visible outside libonnxz.so; the stable ones
 * under the symbol version ONNXZ_0, those inside `#ifdef ONNXZ_EXPERIMENTAL` under
 * ONNXZ_EXPERIMENTAL (docs/api.md).
 *
 * OZ_DEPRECATED(why) marks a stable function kept for the programs that call it: it works
 * as it did for one more release, and a compiler warns with `why`, which names its
 * replacement.
 */
#ifndef ONNXZ_EXPORT_H
#define ONNXZ_EXPORT_H

#ifndef OZ_API /* tests/api defines it to find the marked declarations */
#if defined(__GNUC__) || defined(__clang__)
#define OZ_API __attribute__((visibility("default")))
#else
#define OZ_API
#endif
#endif

#ifndef OZ_DEPRECATED /* tests/api defines it to find the marked declarations */
#if defined(__GNUC__) || defined(__clang__)
#define OZ_DEPRECATED(why) __attribute__((deprecated(why)))
#else
#define OZ_DEPRECATED(why)
#endif
#endif

#endif
