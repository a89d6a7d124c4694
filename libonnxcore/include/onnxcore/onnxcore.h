/*
 * onnxcore/onnxcore.h - libonnxcore: read and write ONNX models without protobuf.
 * Include this header for the whole public API.
 */
#ifndef ONNXCORE_ONNXCORE_H
#define ONNXCORE_ONNXCORE_H

#include "export.h"

#include "arena.h"
#include "bytes.h"
#include "cleanup.h"
#include "codec.h"
#include "crypto.h"
#include "crypto_model.h"
#include "external.h"
#include "file.h"
#include "http.h"
#include "json.h"
#include "limits.h"
#include "messages.h"
#include "model.h"
#include "options.h"
#include "status.h"
#include "stats.h"
#include "tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ONNXCORE_VERSION_MAJOR  0
#define ONNXCORE_VERSION_MINOR  1
#define ONNXCORE_VERSION_PATCH  0
#define ONNXCORE_VERSION_STRING "0.1.0"

/* The library's version string (may differ from the header's when linked dynamically). */
OC_API const char *oc_version(void);

#ifdef __cplusplus
}
#endif

#endif
