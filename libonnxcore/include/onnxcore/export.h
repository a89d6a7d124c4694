/*
 * onnxcore/export.h - OC_API marks the functions and objects libonnxcore exports.
 *
 * The library is built with -fvisibility=hidden: only declarations marked OC_API in the
 * public headers (the onnxcore headers) are visible outside libonnxcore.so, so internal helpers
 * (the oc__ names of internal/) are not part of its ABI. A static build exports
 * nothing by itself and the mark changes nothing for it.
 *
 * Stable and experimental (docs/api.md): the declarations a header always makes are the
 * stable API, exported under the symbol version ONNXCORE_0; those inside
 * `#ifdef ONNXZ_EXPERIMENTAL` are the experimental API, under ONNXCORE_EXPERIMENTAL, which
 * may change in any release. A program that uses it defines ONNXZ_EXPERIMENTAL before it
 * includes any header of these libraries, and is rebuilt with each release.
 *
 * OC_DEPRECATED(why), after a declaration's parameters, marks a function kept for the
 * programs that call it: it works as it did for one more release, and a compiler warns
 * with `why`, which names its replacement.
 */
#ifndef ONNXCORE_EXPORT_H
#define ONNXCORE_EXPORT_H

#ifndef OC_API /* tests/api defines it to find the marked declarations */
#if defined(__GNUC__) || defined(__clang__)
#define OC_API __attribute__((visibility("default")))
#else
#define OC_API
#endif
#endif

#ifndef OC_DEPRECATED /* tests/api defines it to find the marked declarations */
#if defined(__GNUC__) || defined(__clang__)
#define OC_DEPRECATED(why) __attribute__((deprecated(why)))
#else
#define OC_DEPRECATED(why)
#endif
#endif

#endif
