/* shutdown.h — end the trace: normally at OMPT finalize, otherwise at exit()
 * or on a fatal/terminating signal (then marked incomplete). */
#ifndef GRAINLAB_SHUTDOWN_H
#define GRAINLAB_SHUTDOWN_H

/* Run-context metadata computed at start-up (command, topology, load map at
 * start, runtime JSON); kept so a signal handler need not compute them. */
typedef struct gl_run_info {
  char *command_json, *topology_json, *loadmap_json;
  char runtime_json[8192];
  char output_path[4096];
  int pid; /* the traced process; a fork()ed child must not touch the trace */
} gl_run_info;
extern gl_run_info gl_run;

/* Append every thread's buffer and the trailer to the spool, then start the
 * converter. Runs once; later calls return at once. from_signal: only
 * async-signal-safe work (the start-up load map stands). */
void gl_finish(int complete, const char *end_reason, int from_signal);
/* gl_finish has done its work (buffers and trailer written). */
int gl_finish_is_done(void);

/* exec (exec.c): close this image's part of the trace for the next image to
 * continue; 1 when it did. After a failed exec, say the rest is untraced. */
int gl_before_exec(void);
void gl_after_failed_exec(void);

/* Install the signal handlers (chaining to previous ones) and the exit hooks. */
void gl_install_shutdown_hooks(void);
#endif
