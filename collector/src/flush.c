/* flush.c — a full per-thread buffer goes to the spool (spool.c): handed to
 * the writer thread (writer.c), or with no writer thread encoded and appended
 * here, with one writev() and no lock. The flush is recorded as FLUSH_BEGIN
 * (the buffer's last row) and FLUSH_END (the next buffer's first) so analysis
 * can discount it. */
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include "flush.h"
#include "shutdown.h"
#include "spool.h"
#include "writer.h"

/* The run is ending (gl_finish has started): its code writes every buffer,
 * this one included, so the thread leaves it alone and waits (bounded) until
 * that is done; the rows it records afterwards are not written. */
static void leave_buffer_to_shutdown(gl_thread *t) {
  __atomic_store_n(&t->flushing, 0, __ATOMIC_SEQ_CST);
  struct timespec pause = {0, 1000000};
  for (int i = 0; i < 5000 && !gl_finish_is_done(); i++) nanosleep(&pause, 0);
  __atomic_store_n(&t->pos, 0, __ATOMIC_RELEASE);
}

/* Give the full buffer to the writer thread and go on in a buffer of the
 * pool that is not queued; wait only if there is none (a stall, which the
 * FLUSH_BEGIN .. FLUSH_END rows around this record). */
static void hand_over(gl_thread *t, uint32_t n) {
  int k = t->current;
  t->pool_n[k] = n;
  t->pool_seq[k] = ++t->handed;
  __atomic_store_n(&t->pool_state[k], GL_BUF_QUEUED, __ATOMIC_RELEASE);
  gl_writer_wake();
  struct timespec pause = {0, 20000};
  int added = 0;
  for (;;) {
    for (int j = 1; j < gl_pool_size; j++) {
      int c = (k + j) % gl_pool_size;
      if (c != k && __atomic_load_n(&t->pool_state[c], __ATOMIC_ACQUIRE) == GL_BUF_OWNED) {
        t->current = c;
        t->events = t->pool_events[c];
        t->counters = t->pool_counters[c];
        __atomic_store_n(&t->pos, 0, __ATOMIC_RELEASE);
        return;
      }
    }
    /* The pool is full: the writers do not keep up; one more, if there is
     * a CPU for it. Write our own oldest buffers now unless a writer is at
     * it (then it is about to free one). */
    if (!added) gl_writer_add(), added = 1;
    if (gl_writer_drain_thread(t) < 0) nanosleep(&pause, 0);
  }
}

/* No core for the writer: queue this buffer behind any it still holds of
 * this thread (blocks stay in order) and write them all here, now. */
static void write_own(gl_thread *t, uint32_t n) {
  int k = t->current;
  t->pool_n[k] = n;
  t->pool_seq[k] = ++t->handed;
  __atomic_store_n(&t->pool_state[k], GL_BUF_QUEUED, __ATOMIC_RELEASE);
  /* While the writer holds this thread's lock it writes every queued
   * buffer, ours too; once we hold it we write what is left. Either way,
   * when the drain succeeds, buffer k is written and ours again. */
  struct timespec pause = {0, 20000};
  while (gl_writer_drain_thread(t) < 0) nanosleep(&pause, 0);
  __atomic_store_n(&t->pos, 0, __ATOMIC_RELEASE);
}

/* The buffer is not full, but its resident pages end here: the next ones,
 * between FLUSH_BEGIN and FLUSH_END rows of kind GL_FLUSH_PAGES. */
static void touch_ahead(gl_thread *t) {
  t->limit = t->cap; /* the two rows below are resident (gl_touch_ahead) */
  gl_record(t, (gl_row){.event = GL_EV_FLUSH_BEGIN, .kind = GL_FLUSH_PAGES}, GL_READ_COUNTERS);
  gl_touch_ahead(t);
  gl_record(t, (gl_row){.event = GL_EV_FLUSH_END, .kind = GL_FLUSH_PAGES}, GL_READ_COUNTERS);
}

/* Called from gl_record_at at pos == limit: the buffer is full, or only its
 * resident pages end. The reserved last slot takes FLUSH_BEGIN, so the block
 * ends with it. */
void __attribute__((noinline, cold)) gl_flush_full(gl_thread *t) {
  if (t->pos < t->cap) {
    touch_ahead(t);
    return;
  }
  uint32_t n = t->pos + 1;
  t->pos = t->cap; /* write into the reserved slot below */
  t->limit = t->cap + 1;
  gl_record(t, (gl_row){.event = GL_EV_FLUSH_BEGIN, .count = n}, GL_READ_COUNTERS);
  /* SIGINT/SIGTERM/SIGHUP wait until the block is written: a handler running
   * on this thread could not tell whether the writev had happened, and would
   * write the buffer twice or not at all. (Two syscalls per buffer.) */
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  /* Dekker with gl_finish: it clears gl_recording, then waits for `flushing`
   * to drop; we set `flushing`, then look at gl_recording (both seq_cst). */
  __atomic_store_n(&t->flushing, 1, __ATOMIC_SEQ_CST);
  if (!__atomic_load_n(&gl_recording, __ATOMIC_SEQ_CST)) {
    leave_buffer_to_shutdown(t);
    gl_touch_ahead(t);
    pthread_sigmask(SIG_SETMASK, &old, 0);
    return;
  }
  if (gl_writer_running() && gl_writer_has_core()) {
    hand_over(t, n);
  } else if (gl_writer_running()) {
    write_own(t, n);
  } else {
    gl_spool_append_block(t->index, t->events, t->counters, n);
    __atomic_store_n(&t->pos, 0, __ATOMIC_RELEASE);
  }
  gl_touch_ahead(t); /* the buffer now filled: its first step, if new */
  __atomic_store_n(&t->flushing, 0, __ATOMIC_SEQ_CST);
  pthread_sigmask(SIG_SETMASK, &old, 0);
  gl_record(t, (gl_row){.event = GL_EV_FLUSH_END}, GL_READ_COUNTERS);
}
