/* writer.c — the writer threads: the application never waits for I/O.
 *
 * A thread whose buffer fills hands it over (flush.c) and goes on filling
 * another buffer of its pool (GL_POOL per thread); a writer thread encodes
 * the handed-over buffers (compact spool blocks, spool_codec.c) and appends
 * them to the spool, each thread's in the order they were handed over. An
 * application thread waits only when every buffer of its pool is still
 * queued or being written — the FLUSH_BEGIN .. FLUSH_END rows around the
 * hand-over then record that stall, and the analysis discounts it.
 *
 * The first writer starts at the first hand-over. One encodes ~90 million
 * rows a second; many threads of fine-grained tasks fill buffers faster than
 * that, and their pools fill up: threads then wrote their own blocks, inside
 * the run.
 * So a thread that finds its pool full starts another writer (gl_writer_add),
 * up to GL_WRITERS, while traced threads and writers together leave a CPU to
 * each. Writers take any thread's queue (one appender per thread at a time,
 * t->wlock, keeps its blocks in order).
 *
 * Writers sleep on a futex when there is nothing to write; a hand-over costs
 * one atomic increment, and a FUTEX_WAKE only when a writer sleeps (while
 * they write, they see the new buffer on their next pass). They block every
 * signal, so a handler never runs on them. GRAINLAB_WRITER=0 turns them off
 * (each thread then writes its own buffers, as before: for comparison). */
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

#define GL_WRITERS 4

static int running;  /* a writer thread exists and takes buffers (atomic) */
static int stopping; /* gl_writer_stop asked them to end (atomic) */
static int nwriters; /* writer threads started (atomic) */
static int adding;   /* a thread is starting one (atomic) */
/* Bumped at every hand-over (the futex word), and how many writers sleep
 * or are about to: written by every thread once per block, so on a cache line
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

static void futex_wake(int *word, int n) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, 0, 0, 0);
}

/* Append every queued buffer of `t`, oldest first, if nobody else is
 * appending t's buffers right now (t->wlock: one appender per thread keeps
 * its blocks in order in the spool). Returns how many, or -1 when another
 * appender holds the thread. Called by the writer thread, by an application
 * thread whose pool is full (it then writes its own oldest buffer rather than
 * wait for a writer busy elsewhere: never worse than writing inline), and by
 * the end of the run. */
int gl_writer_drain_thread(gl_thread *t) {
  /* Nothing queued: leave the lock alone (a buffer being written: its
   * appender holds it). A writer's pass looks at every thread; taking each
   * one's lock would write to a line of every thread's state, and a writer
   * preempted (SCHED_IDLE) while holding a lock for nothing would make that
   * thread wait for it. */
  int queued = 0, writing = 0;
  for (int k = 0; k < gl_pool_size; k++) {
    int state = __atomic_load_n(&t->pool_state[k], __ATOMIC_ACQUIRE);
    queued |= state == GL_BUF_QUEUED;
    writing |= state == GL_BUF_WRITING;
  }
  if (!queued) return writing ? -1 : 0;
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
  /* Writers start their passes at different threads: not all at one lock. */
  uint32_t first = (uint32_t)(uintptr_t)arg;
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
    for (uint32_t j = 0; j < n; j++) {
      gl_thread *t = gl_thread_get((first + j) % n);
      if (t && gl_writer_drain_thread(t) > 0) done++;
    }
    if (done) continue;
    if (__atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) return 0;
    /* Dekker with gl_writer_wake (both seq_cst): either it sees `sleeping`
     * and wakes one of us, or we see its new `seq` and do not sleep. */
    __atomic_add_fetch(&wake.sleeping, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&wake.seq, __ATOMIC_SEQ_CST) == seen)
      futex_wait(&wake.seq, seen, 100000000L); /* 100 ms: a lost wake costs no more */
    __atomic_sub_fetch(&wake.sleeping, 1, __ATOMIC_RELAXED);
  }
}

/* The CPUs the process could use at start-up: a writer started later by an
 * application thread that the runtime has bound to one CPU (OMP_PROC_BIND)
 * must not inherit that binding and compete with it. */
static cpu_set_t process_cpus;

/* Start writer number `k`; 0 when it could not be. */
static int start_writer(int k) {
  pthread_t writer;
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return 0;
  pthread_attr_setaffinity_np(&attr, sizeof process_cpus, &process_cpus);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer inherits: no handler on it */
  int rc = pthread_create(&writer, &attr, writer_main, (void *)(uintptr_t)k);
  pthread_sigmask(SIG_SETMASK, &old, 0);
  pthread_attr_destroy(&attr);
  if (rc != 0) return 0;
  pthread_setname_np(writer, "grainlab-write");
  pthread_detach(writer);
  return 1;
}

void gl_writer_start(void) {
  const char *mode = getenv("GRAINLAB_WRITER");
  if (mode && strcmp(mode, "0") == 0) return;
  always = mode && strcmp(mode, "1") == 0;
  if (sched_getaffinity(0, sizeof process_cpus, &process_cpus) == 0) {
    cpus = CPU_COUNT(&process_cpus);
  } else {
    cpus = 1;
    for (int c = 0; c < CPU_SETSIZE; c++) CPU_SET(c, &process_cpus);
  }
  __atomic_store_n(&running, 1, __ATOMIC_RELEASE); /* the first writer: at the first hand-over */
}

/* The first hand-over starts the first writer, not the start of the run: a
 * run that never fills a buffer has none, and so never waits for one as the
 * process exits (every thread must run to exit, and a SCHED_IDLE thread on a
 * busy machine was scheduled 60-190 ms late: `fib 2` took 62-200 ms instead
 * of 12). If it cannot be started, threads write their own buffers. */
static void start_first_writer(void) {
  if (__atomic_exchange_n(&adding, 1, __ATOMIC_ACQ_REL)) return; /* another thread is at it */
  if (__atomic_load_n(&nwriters, __ATOMIC_ACQUIRE) == 0) {
    if (start_writer(0))
      __atomic_store_n(&nwriters, 1, __ATOMIC_RELEASE);
    else
      __atomic_store_n(&running, 0, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&adding, 0, __ATOMIC_RELEASE);
}

/* Called by a thread whose pool is full: the writers do not keep up. One
 * more, if traced threads and writers still leave each a CPU (with
 * GRAINLAB_WRITER=1 regardless) and no other thread is starting one. */
void gl_writer_add(void) {
  int n = __atomic_load_n(&nwriters, __ATOMIC_ACQUIRE);
  if (n == 0 || n >= GL_WRITERS || __atomic_load_n(&stopping, __ATOMIC_ACQUIRE)) return;
  if (!always && gl_thread_count() + (uint32_t)n + 1 > (uint32_t)cpus) return;
  if (__atomic_exchange_n(&adding, 1, __ATOMIC_ACQ_REL)) return;
  if (start_writer(n)) __atomic_store_n(&nwriters, n + 1, __ATOMIC_RELEASE);
  __atomic_store_n(&adding, 0, __ATOMIC_RELEASE);
}

int gl_writer_count(void) { return __atomic_load_n(&nwriters, __ATOMIC_ACQUIRE); }

int gl_writer_running(void) { return __atomic_load_n(&running, __ATOMIC_ACQUIRE); }

/* A writer on a core the application's threads fill preempts one of them
 * for each block it encodes and writes (~0.8 ms for 65536 events): that
 * time lands inside a grain, unmarked, and on the critical path it can
 * triple a span. So with as many traced threads as CPUs, threads write
 * their own buffers (a recorded, discounted stall) and the writer only
 * catches up when it can. */
int gl_writer_has_core(void) { return always || gl_thread_count() < (uint32_t)cpus; }

void gl_writer_wake(void) {
  if (__builtin_expect(__atomic_load_n(&nwriters, __ATOMIC_ACQUIRE) == 0, 0))
    start_first_writer();
  __atomic_add_fetch(&wake.seq, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&wake.sleeping, __ATOMIC_SEQ_CST)) futex_wake(&wake.seq, 1);
}

/* End the writers, and write whatever is queued from here (each thread's in
 * order), from normal code or a signal handler (only atomics, futex and
 * nanosleep besides the appends). Threads hand nothing over afterwards. This
 * waits for a writer thread only while it appends a thread's blocks, not
 * for it to wake up and leave: at SCHED_IDLE on a busy machine that can take
 * seconds. A writer that wakes later finds nothing queued. */
void gl_writer_stop(void) {
  if (__atomic_exchange_n(&running, 0, __ATOMIC_ACQ_REL)) {
    __atomic_store_n(&stopping, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&wake.seq, 1, __ATOMIC_SEQ_CST);
    futex_wake(&wake.seq, GL_WRITERS); /* all of them: each leaves */
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
