/* shutdown.c — close the trace once, whichever way the run ends.
 *
 *  - OMPT finalize (normal end): complete=true, end_reason=finalize.
 *  - exit() called where libomp will not finalize (from inside a parallel
 *    region, or from a non-initial thread): closed by the atexit hook. A plain
 *    return from main also runs atexit hooks *before* libomp finalizes, so the
 *    hook leaves that case alone; the library destructor is the last resort.
 *  - SIGINT SIGTERM SIGHUP SIGSEGV SIGBUS SIGFPE SIGILL SIGABRT: the handler
 *    writes what it can reach, closes with complete=false, chains to the
 *    handler that was installed before ours, then restores the default
 *    disposition and re-raises so the process ends as it would have. */

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
#include "thread_state.h"

#define GL_COLLECTOR_VERSION "0.1.0"

extern int gl_quiet;
gl_run_info gl_run;

static int finish_started, finish_done;

static void write_all_buffers(void) {
  uint32_t n = gl_thread_count();
  for (uint32_t i = 0; i < n; i++) {
    gl_thread *t = gl_thread_get(i);
    if (!t) continue;
    uint32_t pos = __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE);
    gl_write_rows_locked(t->index, t->events, t->counters, pos);
    __atomic_store_n(&t->pos, 0, __ATOMIC_RELEASE);
  }
}

void gl_finish(int complete, const char *end_reason, int from_signal) {
  /* A child made by fork() inherits our hooks and state; the trace is its
   * parent's, and the child's own end must not overwrite it. */
  if (getpid() != gl_run.pid) {
    gl_recording = 0;
    return;
  }
  if (__atomic_exchange_n(&finish_started, 1, __ATOMIC_ACQ_REL)) return;
  gl_recording = 0; /* callbacks from here on record nothing */
  if (from_signal) {
    /* The lock's holder may be the very thread this signal interrupted. */
    if (!gl_writer_trylock(500)) {
      fprintf(stderr, "grainlab: %s: writer busy, trace left without footer\n",
              gl_run.output_path);
      __atomic_store_n(&finish_done, 1, __ATOMIC_RELEASE);
      return;
    }
  } else {
    gl_writer_lock();
  }
  write_all_buffers();

  char clock_json[256], pid[32], threads[32], buffer[32], flushes[32], dropped[32];
  gl_clock_metadata_json(clock_json, sizeof clock_json);
  snprintf(pid, sizeof pid, "%d", (int)getpid());
  snprintf(threads, sizeof threads, "%u", gl_thread_count());
  snprintf(buffer, sizeof buffer, "%u", gl_buffer_events);
  snprintf(flushes, sizeof flushes, "%llu", (unsigned long long)gl_flush_count());
  snprintf(dropped, sizeof dropped, "%llu", (unsigned long long)gl_dropped_count());
  /* The load map can change after start-up (dlopen); recompute it unless in a
   * signal handler, where the dynamic loader's lock may be held. */
  char *loadmap = from_signal ? 0 : gl_meta_loadmap_json();
  const char *keys[] = {
      "grainlab.schema_version", "grainlab.complete", "grainlab.end_reason",
      "grainlab.command",        "grainlab.pid",      "grainlab.threads",
      "grainlab.clock",          "grainlab.counters", "grainlab.runtime",
      "grainlab.topology",       "grainlab.loadmap",  "grainlab.buffer_events",
      "grainlab.flushes",        "grainlab.dropped_events", "grainlab.collector",
  };
  const char *values[] = {
      "1",
      complete ? "true" : "false",
      end_reason,
      gl_run.command_json ? gl_run.command_json : "[]",
      pid,
      threads,
      clock_json,
      gl_counters_metadata_json(),
      gl_run.runtime_json,
      gl_run.topology_json ? gl_run.topology_json : "{}",
      loadmap ? loadmap : (gl_run.loadmap_json ? gl_run.loadmap_json : "[]"),
      buffer,
      flushes,
      dropped,
      GL_COLLECTOR_VERSION,
  };
  _Static_assert(sizeof keys / sizeof keys[0] == sizeof values / sizeof values[0],
                 "metadata keys and values");
  int rc = gl_close_locked(sizeof keys / sizeof keys[0], keys, values);
  gl_writer_unlock();
  if (rc == 0 && !gl_quiet)
    fprintf(stderr, "grainlab: trace written to %s (%s)\n", gl_run.output_path,
            complete ? "complete" : end_reason);
  free(loadmap);
  if (!from_signal) gl_counters_shutdown();
  __atomic_store_n(&finish_done, 1, __ATOMIC_RELEASE);
}

/* ---- signals ---- */

static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGSEGV,
                             SIGBUS, SIGFPE,  SIGILL, SIGABRT};
static struct sigaction previous[sizeof caught / sizeof caught[0]];

static void on_signal(int sig, siginfo_t *info, void *uctx) {
  if (getpid() == gl_run.pid && !__atomic_load_n(&finish_started, __ATOMIC_ACQUIRE)) {
    char reason[48];
    const char *abbrev = sigabbrev_np(sig);
    snprintf(reason, sizeof reason, "signal:SIG%s", abbrev ? abbrev : "UNKNOWN");
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
  if (t && t->index == 0 && t->nimplicit <= 1) return;
  gl_finish(0, "exit", 0);
}

__attribute__((destructor)) static void on_unload(void) {
  /* libomp finalizes before this library is unloaded; if it never did
   * (e.g. exit() while libomp skipped finalize), close now. */
  if (gl_recording) gl_finish(0, "exit", 0);
}

/* The child of fork() records nothing: its buffers and the open file are
 * copies of the parent's, and writing them would corrupt the parent's trace. */
static void on_fork_child(void) { gl_recording = 0; }

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
