/*
 * tools/interrupt.h - dying of SIGINT, SIGTERM or SIGHUP without leaving files behind.
 */
#ifndef ONNXZ_TOOLS_INTERRUPT_H
#define ONNXZ_TOOLS_INTERRUPT_H

#include <stdbool.h>
#include <stddef.h>

/* For SIGINT, SIGTERM and SIGHUP (each unless the process started with it ignored):
 * a handler that removes the libraries' temporary files (oc_cleanup_run), then
 * what the command listed in its interrupt_list, restores the default action and raises
 * the signal again, so the process dies of it and its parent sees which
 * (spec/security.md, "Signals"). */
void interrupt_install(void);

/* What a command created and must take back when it is interrupted or fails half-way
 * (unpack: files that did not exist before and directories it made), in order. Nothing
 * that existed before is ever listed. The handler reads the list installed by
 * interrupt_list_add; the list is changed only with the three signals blocked, so the
 * handler sees it whole. One list at a time, used from the main thread (the libraries'
 * threads block every signal). Start from all zeros. */
typedef struct interrupt_list {
    char **paths;
    bool *is_dir;
    size_t count, cap;
} interrupt_list;

/* Lists path (a file, or with is_dir a directory) before it is created; false when out of
 * memory (then nothing was listed). */
bool interrupt_list_add(interrupt_list *l, const char *path, bool is_dir);
/* Takes the last path off the list (it was not created after all). */
void interrupt_list_pop(interrupt_list *l);
/* Removes what is listed, newest first (so directories are empty by then). */
void interrupt_list_undo(const interrupt_list *l);
/* Forgets the list (what it names stays) and frees it. */
void interrupt_list_free(interrupt_list *l);

#endif
