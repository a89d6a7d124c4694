/*
 * internal/path.h - file name arithmetic shared by libonnxcore, libonnxz and the tool
 * (which link the static libraries): the one definition of "the directory of a path".
 */
#ifndef ONNXCORE_INTERNAL_PATH_H
#define ONNXCORE_INTERNAL_PATH_H

#include "internal/private.h"

/* The directory part of path, malloc'd: "." when path has no '/', "/" for "/x", else
 * everything before the last '/' ("a/b/c" -> "a/b"). For an http(s) URL, the same of its
 * path, without query or fragment ("https://h/m/a.onnx?s=1" -> "https://h/m"; no path:
 * "https://h"). NULL when out of memory. */
OC_PRIVATE char *oc__path_dir(const char *path);

/* The part of path after its last '/' (path itself when there is none); points into path. */
OC_PRIVATE const char *oc__path_base(const char *path);

#endif
