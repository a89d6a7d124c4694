/*
 * onnxcore_shared.h - what libonnxcore and libonnxz share without it being public API:
 * reading a caller's options struct by its size. Not installed.
 *
 * Every public options struct begins with `size_t size`, set to the struct's size by its
 * *_INIT macro or *_init function (onnxcore/options.h, "Extending"). A caller compiled
 * against an older header passes a shorter struct: the library reads only the fields that
 * lie within `size` and takes the defaults for the others. A caller compiled against a
 * later header passes a longer one: accepted when what lies past the fields this library
 * knows is zero (the later fields' defaults), refused when it sets any of them, since
 * the library cannot honour an option it does not know. Public functions turn the
 * caller's pointer into one to a complete struct of this library's layout on entry
 * (OC_PARSE_OPTS ...: oc__sized_read, sized.h), so the code below them reads fields as
 * usual.
 */
#ifndef ONNXCORE_SHARED_H
#define ONNXCORE_SHARED_H

#include <stddef.h>
#include <string.h>

#include <onnxcore/crypto.h>
#include <onnxcore/http.h>
#include <onnxcore/options.h>
#include <onnxcore/status.h>

#include "internal/sized.h"

/* The descriptions and readers of libonnxcore's sized options (OC_SIZED_FLAT, sized.h):
 * oc__parse_opts, oc__serialize_opts, oc__crypt_opts, oc__http_opts, oc__s3_opts,
 * oc__hf_opts, each with its _type. */
OC_SIZED_FLAT(oc_parse_options, OC_PARSE_OPTIONS_INIT, oc__parse_opts)
OC_SIZED_FLAT(oc_serialize_options, OC_SERIALIZE_OPTIONS_INIT, oc__serialize_opts)
OC_SIZED_FLAT(oc_crypt_options, OC_CRYPT_OPTIONS_INIT, oc__crypt_opts)
OC_SIZED_FLAT(oc_http_options, OC_HTTP_OPTIONS_INIT, oc__http_opts)
OC_SIZED_FLAT(oc_s3_options, OC_S3_OPTIONS_INIT, oc__s3_opts)
OC_SIZED_FLAT(oc_hf_options, OC_HF_OPTIONS_INIT, oc__hf_opts)

#define OC_PARSE_OPTS(opts, err) OC_OPTS_ENTRY(oc_parse_options, oc__parse_opts, opts, err)
#define OC_SERIALIZE_OPTS(opts, err) \
    OC_OPTS_ENTRY(oc_serialize_options, oc__serialize_opts, opts, err)
#define OC_CRYPT_OPTS(opts, err) OC_OPTS_ENTRY(oc_crypt_options, oc__crypt_opts, opts, err)

#endif
