/* writer.c — the writer thread: the application never waits for I/O.
 *
 * A thread whose buffer fills hands it over (flush.c) and goes on filling
 * another buffer of its pool (GL_POOL per thread); this thread encodes the
 * handed-over buffers (compact spool blocks, spool_codec.c) and appends them
 * to the spool, each thread's in the order they were handed over. An application thread waits only when every buffer of its
 * pool is still queued or being written — the FLUSH_BEGIN .. FLUSH_END rows
 * around the hand-over then record that stall, and the analysis discounts it.
 *
 * The writer sleeps on a futex when there is nothing to write; a hand-over
 * costs one atomic increment, and a FUTEX_WAKE only when the writer sleeps
 * (while it is writing, it sees the new buffer on its next pass). It blocks
 * every signal, so a handler never runs on it. GRAINLAB_WRITER=0 turns it off (each thread then
 * writes its own buffers, as before: for comparison). */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "spool.h"
#include "thread_state.h"
#include "writer.h"

static pthread_t writer;
static int running;  /* the writer thread exists and takes buffers (atomic) */
static int stopping; /* gl_writer_stop asked it to end (atomic) */
/* Bumped at every hand-over (the futex word), and whether the writer sleeps
 * or is about to: written by every thread once per block, so on a cache line
 * of their own, apart from the read-mostly globals each event reads. */
static struct {
  _Alignas(64) int seq;
  int sleeping;
} wake;
static int always;   /* GRAINLAB_WRITER=1: hand over even with no core free */
static int cpus;     /* CPUs this process may run on */

static void futex_wait(int *word, int seen, long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, &ts, 0, 0);
}

static void futex_wake(int *word) { syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0); }

/* Append every queued buffer of `t`, oldest first, if nobody else is
 * appending t's buffers right now (t->wlock: one appender per thread keeps
 * its blocks in order in the spool). Returns how many, or -1 when another
 * appender holds the thread. Called by the writer thread, by an application
 * thread whose pool is full (it then writes its own oldest buffer rather than
 * wait for a writer busy elsewhere: never worse than writing inline), and by
 * the end of the run. */
int gl_writer_drain_thread(gl_thread *t) {
  int unlocked = 0;
  if (!__atomic_compare_exchange_n(&t->wlock, &unlocked, 1, 0, __ATOMIC_ACQUIRE,
                                   __ATOMIC_RELAXED))
    return -1;
  int done = 0;
  for (;;) {
    int pick = -1;
    for (int k = 0; k < gl_pool_size; k++)
      if (__atomic_load_n(&t->pool_state[k], __ATOMIC_ACQUIRE) == GL_BUF_QUEUED &&
          (pick < 0 || t->pool_seq[k] < t->pool_seq[pick]))
        pick = k;
    if (pick < 0) break;
    __atomic_store_n(&t->pool_state[pick], GL_BUF_WRITING, __ATOMIC_RELEASE);
    gl_spool_append_block(t->index, t->pool_events[pick], t->pool_counters[pick],
                          t->pool_n[pick]);
    __atomic_store_n(&t->pool_state[pick], GL_BUF_OWNED, __ATOMIC_RELEASE);
    done++;
  }
  __atomic_store_n(&t->wlock, 0, __ATOMIC_RELEASE);
  return done;
}

static void *writer_main(void *arg) {
  (void)arg;
  /* Yield to anything else that wants the core (other programs too): an
   * application thread the writer preempts carries the writer's time
   * inside a grain, where nothing marks it. Starved, the writer leaves the
   * pool full and threads write their own buffers (between FLUSH_BEGIN and
   * FLUSH_END, which the analysis discounts). */
  struct sched_param idle = {0};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);
  for (;;) {
    int seen = __atomic_load_n(&wake.seq, __ATOMIC_ACQUIRE);
    int done = 0;
    uint32_t n = gl_thread_count();
    for (uint32_t i = 0; i < n; i++) {
      gl_thread *t = gl_thread_get(i);
      if (t && gl_writer_drain_thread(t) > 0) done++;
    }
    if (done) continue;
    if (__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) return 0;
    /* Dekker with gl_writer_wake (both seq_cst): either it sees `sleeping`
     * and wakes us, or we see its new `seq` and do not sleep. */
    __atomic_store_n(&wake.sleeping, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&wake.seq, __ATOMIC_SEQ_CST) == seen)
      futex_wait(&wake.seq, seen, 100000000L); /* 100 ms: a lost wake costs no more */
    __atomic_store_n(&wake.sleeping, 0, __ATOMIC_RELAXED);
  }
}

void gl_writer_start(void) {
  const char *mode = getenv("GRAINLAB_WRITER");
  if (mode && strcmp(mode, "0") == 0) return;
  always = mode && strcmp(mode, "1") == 0;
  cpu_set_t set;
  cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer inherits: no handler on it */
  int rc = pthread_create(&writer, 0, writer_main, 0);
  pthread_sigmask(SIG_SETMASK, &old, 0);
  if (rc != 0) return; /* threads write their own buffers */
  pthread_setname_np(writer, "grainlab-write");
  pthread_detach(writer);
  __atomic_store_n(&running, 1, __ATOMIC_RELEASE);
}

int gl_writer_running(void) { return __atomic_load_n(&running, __ATOMIC_ACQUIRE); }

/* A writer on a core the application's threads fill preempts one of them
 * for each block it encodes and writes (~0.8 ms for 65536 events): that
 * time lands inside a grain, unmarked, and on the critical path it can
 * triple a span. So with as many traced threads as CPUs, threads write
 * their own buffers (a recorded, discounted stall) and the writer only
 * catches up when it can. */
int gl_writer_has_core(void) { return always || gl_thread_count() < (uint32_t)cpus; }

void gl_writer_wake(void) {
  __atomic_add_fetch(&wake.seq, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&wake.sleeping, __ATOMIC_SEQ_CST)) futex_wake(&wake.seq);
}

/* End the writer, and write whatever is queued from here (each thread's in
 * order), from normal code or a signal handler (only atomics, futex and
 * nanosleep besides the appends). Threads hand nothing over afterwards. This
 * waits for the writer thread only while it appends a thread's blocks, not
 * for it to wake up and leave: at SCHED_IDLE on a busy machine that can take
 * seconds. A writer that wakes later finds nothing queued. */
void gl_writer_stop(void) {
  if (__atomic_exchange_n(&running, 0, __ATOMIC_ACQ_REL)) {
    __atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
    gl_writer_wake();
  }
  uint32_t n = gl_thread_count();
  struct timespec pause = {0, 1000000};
  for (uint32_t i = 0; i < n; i++) {
    gl_thread *t = gl_thread_get(i);
    /* another appender (the writer, a thread writing its own) finishes first (bounded) */
    for (int k = 0; t && k < 5000 && gl_writer_drain_thread(t) < 0; k++) nanosleep(&pause, 0);
  }
}

void gl_writer_forget_in_child(void) {
  /* fork(): the child has no writer thread and records nothing */
  __atomic_store_n(&running, 0, __ATOMIC_RELEASE);
}
