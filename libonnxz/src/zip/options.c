/*
 * options.c - the defaults of the oz_* options (the *_init functions); reading a caller's
 * struct by its size is internal/options.h.
 */
#include "internal/options.h"

void oz_zip_reader_options_init(oz_zip_reader_options *opts) {
    static const oz_zip_reader_options defaults = OZ_ZIP_READER_OPTIONS_INIT;
    *opts = defaults;
}

void oz_archive_options_init(oz_archive_options *opts) {
    static const oz_archive_options defaults = OZ_ARCHIVE_OPTIONS_INIT;
    *opts = defaults;
}

static const oz_convert_options convert_defaults = OZ_CONVERT_OPTIONS_INIT;

void oz_convert_options_init(oz_convert_options *opts) { *opts = convert_defaults; }

void oz_open_options_init(oz_open_options *opts) {
    static const oz_open_options defaults = OZ_OPEN_OPTIONS_INIT;
    *opts = defaults;
}

void oz_open_info_init(oz_open_info *info) {
    static const oz_open_info initial = OZ_OPEN_INFO_INIT;
    *info = initial;
}
