/*
 * internal/open_unsigned.h - the loads of open.c that open_signed.c puts its signature
 * check before.
 */
#ifndef ONNXZ_INTERNAL_OPEN_UNSIGNED_H
#define ONNXZ_INTERNAL_OPEN_UNSIGNED_H

#include <onnxz/open.h>

/* oz_open and oz_open_deferred with opts->trust not looked at: open_signed.c checks the
 * signature (spec/signing.md G-55) and then calls these. */
oc_status oz__open_unsigned(const char *path, const oz_open_options *opts, oc_model **out,
                            oz_open_info *info, oc_error *err);
oc_status oz__open_deferred_unsigned(const char *path, const oz_open_options *opts, oc_model **out,
                                     oz_weights **weights, oz_open_info *info, oc_error *err);

#endif
