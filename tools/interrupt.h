/*
 * tools/interrupt.h - dying of SIGINT, SIGTERM or SIGHUP without leaving files behind.
 */
#ifndef ONNXZ_TOOLS_INTERRUPT_H
#define ONNXZ_TOOLS_INTERRUPT_H

/* For SIGINT, SIGTERM and SIGHUP (each unless the process started with it ignored):
 * a handler that removes what the libraries and the commands registered for cleanup
 * (oc_cleanup_run: temporary files, an unpack's new files and directories), restores
 * the default action and raises the signal again, so the process dies of it and its
 * parent sees which (spec/security.md, "Signals"). */
void interrupt_install(void);

#endif
