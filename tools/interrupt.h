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

/* While deferred (interrupt_defer(1)), the first of those signals is only recorded: a
 * job that must talk to a server to undo itself (an S3 upload, which is aborted so that
 * no part stays stored and billed) polls interrupt_cancel and ends, then
 * interrupt_defer(0) dies of the recorded signal after oc_cleanup_run. A second signal
 * while deferred dies at once, as without. */
void interrupt_defer(int on);
/* Nonzero once a signal was recorded while deferred: an oc_http_options.cancel. */
int interrupt_cancel(void *ctx);

#endif
