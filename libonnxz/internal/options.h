/*
 * internal/options.h - the descriptions of libonnxz's sized structs (onnxcore/options.h,
 * "Extending"), each read by its size through libonnxcore's one mechanism
 * (oc__sized_read, internal/sized.h), in one place.
 *
 * oz_archive_options embeds an oc_serialize_options, oz_open_options an oc_parse_options
 * and oz_convert_options an oc_parse_options and an oz_archive_options: a caller compiled
 * against another version has embedded structs of another size, which moves every field
 * after them; the descriptions name them so that those fields are found where the caller
 * put them.
 */
#ifndef ONNXZ_INTERNAL_OPTIONS_H
#define ONNXZ_INTERNAL_OPTIONS_H

#include <stddef.h>

#include "internal/onnxcore_shared.h"
#include "onnxz/archive.h"
#include "onnxz/convert.h"
#include "onnxz/info.h"
#include "onnxz/metadata.h"
#include "onnxz/open.h"
#include "onnxz/read_many.h"
#include "onnxz/reader.h"
#include "onnxz/sign.h"
#include "onnxz/stub.h"
#include "onnxz/unpack.h"
#include "onnxz/zip.h"

/* Each defines a reader, oc_status name(const T **opts, T *local, oc_error *err), which
 * points *opts at a complete struct: the caller's own when it is of this version, else
 * `local` filled with the defaults and the fields the caller's struct holds (by its
 * size); and name##_type, its description. */
OC_SIZED_FLAT(oz_zip_reader_options, OZ_ZIP_READER_OPTIONS_INIT, oz__zip_opts)
OC_SIZED_NESTED(oz_archive_options, OZ_ARCHIVE_OPTIONS_INIT, oz__archive_opts,
                OC_SIZED_INNER(oz_archive_options, serialize, oc__serialize_opts_type))
OC_SIZED_NESTED(oz_convert_options, OZ_CONVERT_OPTIONS_INIT, oz__convert_opts,
                OC_SIZED_INNER(oz_convert_options, load, oc__parse_opts_type),
                OC_SIZED_INNER(oz_convert_options, save, oz__archive_opts_type))
OC_SIZED_NESTED(oz_open_options, OZ_OPEN_OPTIONS_INIT, oz__open_opts,
                OC_SIZED_INNER(oz_open_options, parse, oc__parse_opts_type))
OC_SIZED_FLAT(oz_save_options, OZ_SAVE_OPTIONS_INIT, oz__save_opts)
OC_SIZED_FLAT(oz_reader_options, OZ_READER_OPTIONS_INIT, oz__reader_opts)
OC_SIZED_FLAT(oz_stub_options, OZ_STUB_OPTIONS_INIT, oz__stub_opts)
OC_SIZED_FLAT(oz_unpack_options, OZ_UNPACK_OPTIONS_INIT, oz__unpack_opts)
OC_SIZED_FLAT(oz_metadata_options, OZ_METADATA_OPTIONS_INIT, oz__metadata_opts)
OC_SIZED_FLAT(oz_info_source, OZ_INFO_SOURCE_INIT, oz__info_source_read)
OC_SIZED_FLAT(oz_read_many_options, OZ_READ_MANY_OPTIONS_INIT, oz__read_many_opts)
OC_SIZED_FLAT(oz_sign_options, OZ_SIGN_OPTIONS_INIT, oz__sign_opts)

/* As OC_PARSE_OPTS (onnxcore_shared.h), for the oz_* options. */
#define OZ_ZIP_OPTS(opts, err)     OC_OPTS_ENTRY(oz_zip_reader_options, oz__zip_opts, opts, err)
#define OZ_ARCHIVE_OPTS(opts, err) OC_OPTS_ENTRY(oz_archive_options, oz__archive_opts, opts, err)
#define OZ_OPEN_OPTS(opts, err)    OC_OPTS_ENTRY(oz_open_options, oz__open_opts, opts, err)
#define OZ_CONVERT_OPTS(opts, err) OC_OPTS_ENTRY(oz_convert_options, oz__convert_opts, opts, err)

#endif
