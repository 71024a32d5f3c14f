/* flush.c — write full per-thread buffers as Parquet row groups through the
 * writer shim (libgrainwriter.so, next to this library), which is dlopen()ed
 * only when the first buffer must be written: runs that never fill a buffer
 * load it once, at the end. */

#include <dlfcn.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "flush.h"
#include "thread_state.h"

extern int gl_quiet;

static char out_path[PATH_MAX];
static const char *const *counter_names;

static int lock_word;
static gl_writer *writer;
static int writer_failed; /* shim missing or open failed: drop everything */
static gl_writer_open_fn w_open;
static gl_writer_write_fn w_write;
static gl_writer_close_fn w_close;
static uint64_t flushes, dropped;

void gl_flush_configure(const char *path, const char *const *names) {
  snprintf(out_path, sizeof out_path, "%s", path);
  counter_names = names;
}

void gl_writer_lock(void) {
  while (__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE))
    sched_yield(); /* flushes take milliseconds; yielding beats spinning */
}

int gl_writer_trylock(int max_ms) {
  struct timespec pause = {0, 1000000};
  for (int i = 0; i <= max_ms; i++) {
    if (!__atomic_exchange_n(&lock_word, 1, __ATOMIC_ACQUIRE)) return 1;
    nanosleep(&pause, 0);
  }
  return 0;
}

void gl_writer_unlock(void) { __atomic_store_n(&lock_word, 0, __ATOMIC_RELEASE); }

/* The shim's path: the directory this library was loaded from. */
static void shim_path(char *buf, size_t len) {
  Dl_info info;
  const char *dir = ".";
  size_t dirlen = 1;
  if (dladdr((void *)&gl_flush_configure, &info) && info.dli_fname) {
    const char *slash = strrchr(info.dli_fname, '/');
    if (slash) {
      dir = info.dli_fname;
      dirlen = (size_t)(slash - info.dli_fname);
    }
  }
  snprintf(buf, len, "%.*s/libgrainwriter.so", (int)dirlen, dir);
}

static void fail(const char *what, const char *reason) {
  if (!writer_failed)
    fprintf(stderr, "grainlab: cannot write trace to %s: %s: %s\n", out_path, what, reason);
  writer_failed = 1;
}

/* Load the shim and open the output file, once. */
static int ensure_writer(void) {
  if (writer) return 1;
  if (writer_failed) return 0;
  char lib[PATH_MAX + 32];
  shim_path(lib, sizeof lib);
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fail("cannot load writer", dlerror());
    return 0;
  }
  w_open = (gl_writer_open_fn)dlsym(h, GL_WRITER_OPEN_SYM);
  w_write = (gl_writer_write_fn)dlsym(h, GL_WRITER_WRITE_SYM);
  w_close = (gl_writer_close_fn)dlsym(h, GL_WRITER_CLOSE_SYM);
  if (!w_open || !w_write || !w_close) {
    fail("writer lacks gl_writer_open/write/close", lib);
    return 0;
  }
  char err[512] = "";
  writer = w_open(out_path, gl_ncounters, counter_names, err, sizeof err);
  if (!writer) {
    fail("open", err);
    return 0;
  }
  return 1;
}

void gl_write_rows_locked(uint32_t thread, const void *events,
                          const int64_t *counters, uint32_t n) {
  if (n == 0) return;
  if (!ensure_writer()) {
    dropped += n;
    return;
  }
  char err[512] = "";
  if (w_write(writer, thread, (const gl_event_t *)events,
              gl_ncounters ? counters : 0, n, err, sizeof err) != 0) {
    static int warned;
    if (!warned) fprintf(stderr, "grainlab: writing %s failed: %s\n", out_path, err);
    warned = 1;
    dropped += n;
    return;
  }
  flushes++;
}

int gl_close_locked(uint32_t nkv, const char *const *keys, const char *const *values) {
  if (!ensure_writer()) return -1;
  char err[512] = "";
  int rc = w_close(writer, nkv, keys, values, err, sizeof err);
  writer = 0;
  writer_failed = 1; /* closed: nothing more may be written */
  if (rc != 0) fprintf(stderr, "grainlab: closing %s failed: %s\n", out_path, err);
  return rc;
}

uint64_t gl_flush_count(void) { return flushes; }
uint64_t gl_dropped_count(void) { return dropped; }

/* Called on the thread whose buffer is full (from gl_record_at). The reserved
 * last slot takes FLUSH_BEGIN, so the row group ends with it; FLUSH_END opens
 * the next buffer. Analysis subtracts the interval between them. */
void __attribute__((noinline, cold)) gl_flush_full(gl_thread *t) {
  uint32_t n = t->pos + 1;
  t->pos = t->cap; /* write into the reserved slot below */
  t->cap++;
  gl_record(t, GL_EV_FLUSH_BEGIN, 0, 0, 0, 0, n, 0, 1);
  t->cap--;
  gl_writer_lock();
  gl_write_rows_locked(t->index, t->events, t->counters, n);
  gl_writer_unlock();
  __atomic_store_n(&t->pos, 0, __ATOMIC_RELEASE);
  gl_record(t, GL_EV_FLUSH_END, 0, 0, 0, 0, 0, 0, 1);
}
