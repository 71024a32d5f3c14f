/* shutdown.c — end the trace once, whichever way the run ends.
 *
 *  - OMPT finalize (normal end): complete=true, end_reason=finalize.
 *  - exit() called where libomp will not finalize (from inside a parallel
 *    region, or from a non-initial thread): ended by the atexit hook. A plain
 *    return from main also runs atexit hooks *before* libomp finalizes, so the
 *    hook leaves that case alone; the library destructor is the last resort.
 *  - SIGINT SIGTERM SIGHUP SIGSEGV SIGBUS SIGFPE SIGILL SIGABRT: the handler
 *    appends what it can reach and a trailer with complete=false, starts the
 *    converter, chains to the handler that was installed before ours, then
 *    restores the default disposition and re-raises so the process ends as it
 *    would have.
 *
 * Ending = append every thread's buffer to the spool, append the trailer,
 * start grainlab-convert (spool.c). All of it is async-signal-safe: the
 * signal path differs only in writing its blocks raw (no encoding scratch to
 * allocate), reusing the start-up load map (the dynamic loader's lock may be
 * held) and printing fixed strings. */

#include <omp-tools.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "clock.h"
#include "counters.h"
#include "flush.h"
#include "meta.h"
#include "shutdown.h"
#include "spool.h"
#include "thread_state.h"
#include "writer.h"

extern int gl_quiet;
gl_run_info gl_run;

static int finish_started, finish_done, buffers_done;

int gl_finish_is_done(void) { return __atomic_load_n(&buffers_done, __ATOMIC_ACQUIRE); }

/* Threads in the middle of appending a block finish it first (bounded: a
 * block is a few MiB into the page cache). Ours cannot be one of them: the
 * signals we handle are blocked during a flush (flush.c). */
static void wait_for_flushes(void) {
  struct timespec pause = {0, 1000000};
  uint32_t n = gl_thread_count();
  for (uint32_t i = 0; i < n; i++) {
    gl_thread *t = gl_thread_get(i);
    for (int k = 0; t && k < 2000 && gl_flush_busy(t); k++) nanosleep(&pause, 0);
  }
}

static void write_all_buffers(void) {
  uint32_t n = gl_thread_count();
  for (uint32_t i = 0; i < n; i++) {
    gl_thread *t = gl_thread_get(i);
    if (!t || gl_flush_busy(t)) continue; /* stuck in a flush: its block is on its way */
    uint32_t pos = __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE);
    gl_spool_append_block(t->index, t->events, t->counters, pos);
    __atomic_store_n(&t->pos, 0, __ATOMIC_RELEASE);
  }
}

/* One line about the trace (not from a signal handler). */
static void report(int complete, const char *end_reason, int rc, double seconds) {
  const char *out = gl_run.output_path;
  enum gl_convert_mode mode = gl_spool_convert_mode();
  if (rc != 0) {
    if (mode == GL_CONVERT_WAIT)
      fprintf(stderr, "grainlab: converting %s failed; the run is kept in %s\n", out,
              gl_spool_path());
    return;
  }
  if (gl_quiet) return;
  unsigned long long events = (unsigned long long)gl_spool_events();
  const char *how = complete ? "complete" : end_reason;
  if (mode == GL_CONVERT_WAIT)
    fprintf(stderr, "grainlab: trace written to %s (%s; %llu events, converted in %.2f s)\n",
            out, how, events, seconds);
  else if (mode == GL_CONVERT_NO)
    fprintf(stderr, "grainlab: run spooled to %s (%s; %llu events); `grainlab convert` "
                    "writes the trace\n", gl_spool_path(), how, events);
  else
    fprintf(stderr, "grainlab: writing trace %s in the background (%s; %llu events)\n", out,
            how, events);
}

/* Append the end record: how the run (or this image) ended, the threads,
 * exact counts, a fresh load map unless in a signal handler. A full disk
 * overrides how it ended. Returns `complete` as written. */
static int write_trailer(int complete, const char **reason, int from_signal) {
  const char *end_reason = *reason;
  char threads[24], dropped[24], kept[24], writers[24];
  gl_utoa(gl_thread_count(), threads, sizeof threads);
  gl_utoa((uint64_t)gl_writer_count(), writers, sizeof writers);
  gl_utoa(gl_spool_dropped(), dropped, sizeof dropped);
  gl_utoa(gl_spool_events(), kept, sizeof kept);
  /* A full disk stopped the recording: that is how this trace ended, whatever
   * ended the program. */
  if (gl_spool_disk_full()) {
    complete = 0;
    end_reason = "disk full";
  }
  /* The load map can change after start-up (dlopen); recompute it unless in a
   * signal handler, where the dynamic loader's lock may be held: the
   * converter then keeps the start-up map from the spool header. */
  char *loadmap = from_signal ? 0 : gl_meta_loadmap_json();
  const char *keys[] = {"grainlab.complete",       "grainlab.end_reason",
                        "grainlab.threads",        "grainlab.dropped_events",
                        "grainlab.recorded_events", "grainlab.writers",
                        "grainlab.loadmap"};
  const char *values[] = {complete ? "true" : "false", end_reason, threads, dropped, kept,
                          writers, loadmap};
  size_t nkv = sizeof keys / sizeof keys[0] - (loadmap ? 0 : 1);
  if (gl_spool_write_trailer(nkv, keys, values) != 0 && !from_signal)
    fprintf(stderr, "grainlab: cannot finish %s: its end record was not written\n",
            gl_spool_path());
  free(loadmap);
  *reason = end_reason;
  return complete;
}

/* ---- exec ---- */

/* The image is about to be replaced (exec.c): stop recording, end what is
 * open on every thread (implicit tasks innermost first, then the thread) as
 * the runtime would have at its end, and append every buffer. No end record:
 * the new image continues the spool (spool.c, "exec"). Returns 1 when it did. */
int gl_before_exec(void) {
  if (getpid() != gl_run.pid || !__atomic_load_n(&gl_recording, __ATOMIC_ACQUIRE) ||
      __atomic_load_n(&finish_started, __ATOMIC_ACQUIRE))
    return 0;
  __atomic_store_n(&gl_recording, 0, __ATOMIC_SEQ_CST);
  wait_for_flushes();
  gl_writer_stop(); /* what the writer thread holds goes first, in order */
  uint32_t n = gl_thread_count();
  for (uint32_t i = 0; i < n; i++) {
    gl_thread *t = gl_thread_get(i);
    if (!t || gl_flush_busy(t)) continue;
    int own = t == gl_self_tls; /* other threads' counters are theirs to read */
    for (int k = t->nsync - 1; k >= 0; k--) {
      if (k >= GL_NEST) continue;
      gl_sync *y = &t->sync[k];
      gl_record(t, (gl_row){.event = GL_EV_SYNC_END,
                            .task = y->task,
                            .other = y->region,
                            .codeptr = y->codeptr,
                            .kind = y->kind}, own ? GL_READ_COUNTERS : GL_NO_COUNTERS);
    }
    t->nsync = 0;
    for (int k = t->nimplicit - 1; k >= 0; k--) {
      if (k >= GL_NEST) continue;
      gl_implicit *m = &t->implicit[k];
      uint32_t flags = m->region ? (uint32_t)ompt_task_implicit : (uint32_t)ompt_task_initial;
      gl_record(t, (gl_row){.event = GL_EV_IMPLICIT_END,
                            .task = m->id,
                            .value = m->index,
                            .count = m->team,
                            .kind = flags},
                own ? GL_READ_COUNTERS : GL_NO_COUNTERS);
    }
    t->nimplicit = 0;
    gl_record(t, (gl_row){.event = GL_EV_THREAD_END}, GL_NO_COUNTERS);
  }
  write_all_buffers();
  /* An end record that says "exec": the next image continues after it; if
   * that image runs no OpenMP (or is not traced), the trace ends here, whole. */
  const char *reason = "exec";
  write_trailer(1, &reason, 0);
  return 1;
}

/* exec failed and this image goes on: its trace so far is closed; say so once.
 * The end of the run still writes the end record and converts. */
void gl_after_failed_exec(void) {
  if (!gl_quiet)
    fprintf(stderr, "grainlab: exec failed; the rest of this run is not recorded\n");
}

void gl_finish(int complete, const char *end_reason, int from_signal) {
  /* A child made by fork() inherits our hooks and state; the trace is its
   * parent's, and the child's own end must not touch it. */
  if (getpid() != gl_run.pid) {
    __atomic_store_n(&gl_recording, 0, __ATOMIC_SEQ_CST);
    return;
  }
  if (__atomic_exchange_n(&finish_started, 1, __ATOMIC_ACQ_REL)) return;
  /* A handler neither allocates nor encodes: what it writes is written raw. */
  if (from_signal) gl_spool_raw_only();
  __atomic_store_n(&gl_recording, 0, __ATOMIC_SEQ_CST); /* callbacks record nothing more */
  wait_for_flushes();
  gl_writer_stop(); /* what the writer thread holds goes first, in order */
  write_all_buffers();

  complete = write_trailer(complete, &end_reason, from_signal);
  __atomic_store_n(&buffers_done, 1, __ATOMIC_RELEASE);
  /* The converter inherits our stderr: say our line before it may speak. */
  double seconds = 0;
  int rc;
  if (from_signal) {
    rc = gl_spool_start_converter(1, &seconds);
  } else {
    if (gl_spool_convert_mode() != GL_CONVERT_WAIT && !gl_quiet) report(complete, end_reason, 0, 0);
    rc = gl_spool_start_converter(0, &seconds);
    if (gl_spool_convert_mode() == GL_CONVERT_WAIT || rc != 0)
      report(complete, end_reason, rc, seconds);
    gl_counters_shutdown();
  }
  __atomic_store_n(&finish_done, 1, __ATOMIC_RELEASE);
}

/* ---- signals ---- */

static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGSEGV,
                             SIGBUS, SIGFPE,  SIGILL, SIGABRT};
static struct sigaction previous[sizeof caught / sizeof caught[0]];

static void on_signal(int sig, siginfo_t *info, void *uctx) {
  if (getpid() == gl_run.pid && !__atomic_load_n(&finish_started, __ATOMIC_ACQUIRE)) {
    char reason[48] = "signal:SIG";
    const char *abbrev = sigabbrev_np(sig); /* a table look-up */
    size_t n = strlen(reason);
    for (const char *c = abbrev ? abbrev : "UNKNOWN"; *c && n + 1 < sizeof reason; c++)
      reason[n++] = *c;
    reason[n] = '\0';
    gl_finish(0, reason, 1);
  }
  /* Another thread may be closing the trace (two threads crashing, or a
   * signal during finalize): give it a bounded time before the process ends. */
  struct timespec pause = {0, 1000000};
  for (int i = 0; i < 2000 && getpid() == gl_run.pid &&
                  !__atomic_load_n(&finish_done, __ATOMIC_ACQUIRE);
       i++)
    nanosleep(&pause, 0);
  for (size_t i = 0; i < sizeof caught / sizeof caught[0]; i++) {
    if (caught[i] != sig) continue;
    struct sigaction *p = &previous[i];
    if (p->sa_flags & SA_SIGINFO) {
      if (p->sa_sigaction) p->sa_sigaction(sig, info, uctx);
    } else if (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN) {
      p->sa_handler(sig);
    }
  }
  signal(sig, SIG_DFL);
  raise(sig); /* delivered when this handler returns (sig is blocked meanwhile) */
}

/* ---- exit ---- */

static void on_exit_hook(void) {
  /* Returning from main (initial thread, no parallel region active besides the
   * initial task) is followed by libomp's finalize: leave it to that. */
  gl_thread *t = gl_self_tls;
  if (t && t->index == gl_spool_thread_base() && t->nimplicit <= 1) return;
  gl_finish(0, "exit", 0);
}

__attribute__((destructor)) static void on_unload(void) {
  /* libomp finalizes before this library is unloaded; if it never did
   * (e.g. exit() while libomp skipped finalize), close now. */
  if (__atomic_load_n(&gl_recording, __ATOMIC_SEQ_CST)) gl_finish(0, "exit", 0);
}

/* The child of fork() records nothing: its buffers are copies of the
 * parent's, and it must not hold the parent's spool lock. */
static void on_fork_child(void) {
  __atomic_store_n(&gl_recording, 0, __ATOMIC_SEQ_CST);
  gl_writer_forget_in_child();
  gl_spool_forget_in_child();
}

void gl_install_shutdown_hooks(void) {
  pthread_atfork(0, 0, on_fork_child);
  for (size_t i = 0; i < sizeof caught / sizeof caught[0]; i++) {
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* stack overflow: see thread_state.c */
    sigemptyset(&sa.sa_mask);
    if (sigaction(caught[i], 0, &old) == 0 && old.sa_handler == SIG_IGN &&
        !(old.sa_flags & SA_SIGINFO))
      continue; /* the application ignores it (e.g. nohup): so do we */
    sigaction(caught[i], &sa, &previous[i]);
  }
  atexit(on_exit_hook);
}
