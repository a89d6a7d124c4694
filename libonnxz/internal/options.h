/*
 * internal/options.h - reading a caller's oz_* options by their size (onnxcore/options.h,
 * "Extending"; the mechanism is in onnxcore_shared.h).
 *
 * oz_archive_options embeds an oc_serialize_options and oz_convert_options an
 * oc_parse_options and an oz_archive_options: a caller compiled against another version
 * has embedded structs of another size, which moves every field after them. Those fields
 * are read at the caller's offsets: the library's offset shifted by the difference of the
 * embedded sizes (exact, since an embedded struct's size is a multiple of its alignment
 * and no field after it needs more).
 */
#ifndef ONNXZ_INTERNAL_OPTIONS_H
#define ONNXZ_INTERNAL_OPTIONS_H

#include <stddef.h>

#include "internal/onnxcore_shared.h"
#include "onnxz/archive.h"
#include "onnxz/convert.h"
#include "onnxz/open.h"
#include "onnxz/zip.h"

/* Point *opts at a complete struct: the caller's own when it is of this version, else
 * `local` filled with the defaults and the fields the caller's struct holds (by its size).
 * A struct whose size was never set is OC_ERR_INVALID_ARG. */
oc_status oz__zip_opts(const oz_zip_reader_options **opts, oz_zip_reader_options *local,
                       oc_error *err);
oc_status oz__archive_opts(const oz_archive_options **opts, oz_archive_options *local,
                           oc_error *err);
oc_status oz__convert_opts(const oz_convert_options **opts, oz_convert_options *local,
                           oc_error *err);
oc_status oz__open_opts(const oz_open_options **opts, oz_open_options *local, oc_error *err);
/* The output oz_open_info: the fields of src that the caller's dst holds (by its size). */
void oz__open_info_put(oz_open_info *dst, const oz_open_info *src);

/* As OC_PARSE_OPTS (onnxcore_shared.h), for the oz_* options. */
#define OZ_ZIP_OPTS(opts, err)     OC_OPTS_ENTRY(oz_zip_reader_options, oz__zip_opts, opts, err)
#define OZ_ARCHIVE_OPTS(opts, err) OC_OPTS_ENTRY(oz_archive_options, oz__archive_opts, opts, err)
#define OZ_OPEN_OPTS(opts, err)    OC_OPTS_ENTRY(oz_open_options, oz__open_opts, opts, err)
#define OZ_CONVERT_OPTS(opts, err) OC_OPTS_ENTRY(oz_convert_options, oz__convert_opts, opts, err)

#endif
