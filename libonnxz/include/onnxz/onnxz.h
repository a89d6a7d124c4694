/*
 * onnxz/onnxz.h - libonnxz and libonnxcore: include this header for the whole public API
 * of both libraries (the .onnxz archive, its ZIP layer, conversion, encrypted archives,
 * and everything of onnxcore/onnxcore.h).
 */
#ifndef ONNXZ_ONNXZ_H
#define ONNXZ_ONNXZ_H

#include <onnxcore/onnxcore.h>

#include "archive.h"
#include "convert.h"
#include "encrypted.h"
#include "export.h"
#include "info.h"
#include "limits.h"
#include "listing.h"
#include "metadata.h"
#include "open.h"
#include "read_many.h"
#include "reader.h"
#include "sign.h"
#include "slice.h"
#include "stub.h"
#include "unpack.h"
#include "verify.h"
#include "zip.h"

#endif
