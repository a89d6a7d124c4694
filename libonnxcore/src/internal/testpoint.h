/*
 * internal/testpoint.h - named points where a test can stop the process.
 *
 * oc__test_point("name") raises SIGSTOP when the environment variable ONNXZ_TEST_STOP is
 * "name" (at its first pass) or "name:N" (at its Nth pass). A test starts a command with
 * it, waits for the stop (waitpid WUNTRACED), then sends signals, runs another process,
 * and continues it with SIGCONT: interleavings are forced, never timed. Without the
 * variable a point costs one getenv per call. The variable can only stop the process
 * that has it (spec/security.md, "Signals").
 */
#ifndef ONNXCORE_INTERNAL_TESTPOINT_H
#define ONNXCORE_INTERNAL_TESTPOINT_H

void oc__test_point(const char *name);

#endif
