/*
 * abi_layouts.h - every size each sized struct of both libraries has had (onnxcore/options.h,
 * "Extending"), for test_options_abi.c (the layout rule: a field appended after a size
 * starts at or past it) and test_options_cut.c (a caller's struct cut at each older size
 * gets the defaults past it). LP64 sizes.
 *
 * ABI_LAYOUTS(GREW, NOW) calls GREW(T, size, f) for each size T had before today's, with
 * f the first field appended after it, and NOW(T, size) with today's sizeof. A struct that
 * grows records its old size here, and the field appended after it.
 */
#ifndef ONNXZ_TEST_ABI_LAYOUTS_H
#define ONNXZ_TEST_ABI_LAYOUTS_H

#define ABI_LAYOUTS(GREW, NOW)                                          \
    GREW(oc_parse_options, 104, storage_pool)                           \
    GREW(oc_parse_options, 120, http)                                   \
    GREW(oc_parse_options, 128, loaded_location_default)                \
    GREW(oc_parse_options, 136, prefetch) /* after padding_132 */       \
    NOW(oc_parse_options, 144)                                          \
    GREW(oc_serialize_options, 56, progress)                            \
    GREW(oc_serialize_options, 72, fetch)                               \
    GREW(oc_serialize_options, 80, no_sync)                             \
    NOW(oc_serialize_options, 88)                                       \
    GREW(oc_crypt_options, 24, no_overwrite)                            \
    NOW(oc_crypt_options, 32)                                           \
    GREW(oc_http_options, 40, parallel)                                 \
    GREW(oc_http_options, 48, min_rate) /* after padding_48 */          \
    GREW(oc_http_options, 80, s3)                                       \
    GREW(oc_http_options, 88, hf)                                       \
    NOW(oc_http_options, 96)                                            \
    GREW(oc_s3_options, 56, problem)                                    \
    NOW(oc_s3_options, 64)                                              \
    NOW(oc_hf_options, 24)                                              \
    GREW(oz_zip_reader_options, 48, max_memory)                         \
    GREW(oz_zip_reader_options, 56, http)                               \
    NOW(oz_zip_reader_options, 64)                                      \
    GREW(oz_archive_options, 104, max_memory)                           \
    NOW(oz_archive_options, 112)                                        \
    NOW(oz_convert_options, 272)                                        \
    GREW(oz_open_options, 176, trust)                                   \
    NOW(oz_open_options, 184)                                           \
    GREW(oz_open_info, 8, kind)                                         \
    GREW(oz_open_info, 16, file_size)                                   \
    GREW(oz_open_info, 24, option)                                      \
    NOW(oz_open_info, 32)                                               \
    GREW(oz_save_options, 128, cancel)                                  \
    GREW(oz_save_options, 152, max_memory)                              \
    GREW(oz_save_options, 160, http)                                    \
    NOW(oz_save_options, 168)                                           \
    GREW(oz_convert_info, 24, in_size)                                  \
    GREW(oz_convert_info, 32, in_signed)                                \
    NOW(oz_convert_info, 40)                                            \
    NOW(oz_stub_options, 24)                                            \
    NOW(oz_sign_options, 32)                                            \
    NOW(oz_stub_info, 40)                                               \
    NOW(oz_unpack_options, 40)                                          \
    NOW(oz_unpack_info, 32)                                             \
    GREW(oz_metadata_options, 24, sign_key)                             \
    NOW(oz_metadata_options, 56)                                        \
    GREW(oz_metadata_info, 32, was_signed)                              \
    NOW(oz_metadata_info, 40)                                           \
    NOW(oz_info_source, 48)                                             \
    GREW(oz_reader_options, 48, prefetch)                               \
    GREW(oz_reader_options, 56, skip_data_files) /* after padding_52 */ \
    GREW(oz_reader_options, 64, trust)                                  \
    NOW(oz_reader_options, 72)                                          \
    NOW(oz_read_many_options, 32)

#endif
