/*
 * onnxz/export.h - OZ_API marks the functions libonnxz exports.
 *
 * As onnxcore/export.h: libonnxz is built with -fvisibility=hidden and only declarations
 * marked OZ_API in the onnxz headers are visible outside libonnxz.so.
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

#endif
