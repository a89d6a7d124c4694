/*
 * internal/edit.h - a seam for tests of in-place editing (tests/archive_edit): the editor
 * calls the hook, when one is set, at each step of spec/onnxz.md A-54, with the step's
 * name ("journaled", "appending", "appended", "committed", "compacting", "compacted",
 * "truncated"). A test sets it in a child process and has it kill the process there, to
 * look at what a crash at that step leaves. Nothing else sets it. It exists in test
 * builds only (ONNXZ_TEST_POINTS, onnxcore_private.h).
 */
#ifndef ONNXZ_INTERNAL_EDIT_H
#define ONNXZ_INTERNAL_EDIT_H

#ifdef ONNXZ_TEST_POINTS
extern void (*oz__edit_test_hook)(const char *step);
#endif

#endif
