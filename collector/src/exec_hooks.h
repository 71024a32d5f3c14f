/* exec_hooks.h — the table through which libgrainexec.so (exec.c, preloaded)
 * reaches the collector, which fills it in at start-up (tool.c). */
#ifndef GRAINLAB_EXEC_HOOKS_H
#define GRAINLAB_EXEC_HOOKS_H

typedef struct gl_exec_hooks {
  int (*before)(void);  /* the image is about to be replaced: 1 if the trace was closed */
  void (*failed)(void); /* exec returned: it failed, after `before` closed the trace */
  /* CLOCK_MONOTONIC ns when libgrainexec.so's constructor ran (this image
   * loaded): an upper bound of the process's start (clock.c). */
  unsigned long long image_start_ns;
} gl_exec_hooks;

#define GL_EXEC_HOOKS_SYMBOL "grainlab_exec_hooks"
#endif
