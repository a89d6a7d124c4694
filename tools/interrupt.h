/*
 * tools/interrupt.h - dying of SIGINT, SIGTERM or SIGHUP without leaving files behind.
 */
#ifndef ONNXZ_TOOLS_INTERRUPT_H
#define ONNXZ_TOOLS_INTERRUPT_H

/* For SIGINT, SIGTERM and SIGHUP (each unless the process started with it ignored):
 * a handler that removes what the libraries registered for it (oc_cleanup_run: the
 * temporary files of saves, what an unpack has created so far), restores the default
 * action and raises the signal again, so the process dies of it and its parent sees
 * which (spec/security.md, "Signals"). */
void interrupt_install(void);

#endif
