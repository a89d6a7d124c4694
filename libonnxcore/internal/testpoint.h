/*
 * internal/testpoint.h - named points where a test can stop the process, in test builds
 * only.
 *
 * Built with ONNXZ_TEST_POINTS (the CMake option of the same name, which the test suite
 * turns on; off by default), oc__test_point("name") raises SIGSTOP when the environment
 * variable ONNXZ_TEST_STOP is "name" (at its first pass) or "name:N" (at its Nth pass). A
 * test starts a command with it, waits for the stop (waitpid WUNTRACED), then sends
 * signals, runs another process, and continues it with SIGCONT: interleavings are forced,
 * never timed. The variable can only stop the process that has it (spec/security.md,
 * "Signals"). Without the option every call compiles to nothing: a release library
 * neither reads the variable nor holds its name.
 */
#ifndef ONNXCORE_INTERNAL_TESTPOINT_H
#define ONNXCORE_INTERNAL_TESTPOINT_H

#include "internal/private.h"

#ifdef ONNXZ_TEST_POINTS
OC_PRIVATE void oc__test_point(const char *name);
#else
#define oc__test_point(name) ((void)(name))
#endif

#endif
