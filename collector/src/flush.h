/* flush.h — a full per-thread buffer goes to the spool (flush.c); the end of
 * the run (shutdown.c) must not write a buffer its thread is flushing. */
#ifndef GRAINLAB_FLUSH_H
#define GRAINLAB_FLUSH_H
#include "thread_state.h"

/* Whether thread `t` is inside gl_flush_full right now. */
static inline int gl_flush_busy(const gl_thread *t) {
  return __atomic_load_n(&t->flushing, __ATOMIC_SEQ_CST);
}
#endif
