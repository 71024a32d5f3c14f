/* bench_writer.c — size and speed of the writer shim on a synthetic but
 * realistic fib event stream (what a task-per-call fib trace looks like per
 * thread: monotone tsc with small deltas, sequential task ids, three code
 * pointers, taskwait sync rows, FLUSH_BEGIN/END around every buffer).
 *
 * usage: bench_writer OUT.parquet [events (default 2000000)] [ncounters (0..3)]
 *                     [buffer events (default and max 65536)]
 * Prints dlopen time, bytes/event on disk and write throughput. */
#define _GNU_SOURCE
#include "writer_loader.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define BUFFER_EVENTS 65536 /* capacity; argv[4] may use less, as GRAINLAB_BUFFER_EVENTS */
static size_t buffer_events = BUFFER_EVENTS;
#define NTHREADS 2

typedef struct {
  uint32_t thread;
  uint64_t tsc, next_id, rng;
  uint64_t region;
  int64_t ctr[3]; /* task-clock ns, page-faults, context-switches */
  gl_event_t buf[BUFFER_EVENTS];
  int64_t cbuf[BUFFER_EVENTS * 3];
  size_t n;
} sim_thread;

static gl_writer_api api;
static gl_writer *w;
static int ncounters;
static uint64_t written;
static double write_s; /* time inside gl_writer_write/close only */
static char err[512];

static double now_s(void);

static uint64_t rnd(sim_thread *t) { /* xorshift64 */
  t->rng ^= t->rng << 13;
  t->rng ^= t->rng >> 7;
  t->rng ^= t->rng << 17;
  return t->rng;
}

static void push(sim_thread *t, uint8_t event, uint64_t task, uint64_t other,
                 uint64_t codeptr, uint32_t kind);

static void flush(sim_thread *t) {
  size_t n = t->n;
  push(t, GL_EV_FLUSH_BEGIN, 0, 0, 0, 0); /* the buffer's last row */
  t->buf[t->n - 1].count = n;
  double t0 = now_s();
  if (api.write(w, t->thread, t->buf, ncounters ? t->cbuf : NULL, t->n, err, sizeof err)) {
    fprintf(stderr, "bench_writer: %s\n", err);
    exit(1);
  }
  write_s += now_s() - t0;
  written += t->n;
  t->n = 0;
  push(t, GL_EV_FLUSH_END, 0, 0, 0, 0);
}

static void push(sim_thread *t, uint8_t event, uint64_t task, uint64_t other,
                 uint64_t codeptr, uint32_t kind) {
  uint64_t dt = 30 + rnd(t) % 300; /* 10..110 ns at ~3 GHz */
  t->tsc += dt;
  t->ctr[0] += (int64_t)(dt / 3);
  if (rnd(t) % 5000 == 0) t->ctr[1]++;
  if (rnd(t) % 50000 == 0) t->ctr[2]++;
  gl_event_t *e = &t->buf[t->n];
  memset(e, 0, sizeof *e);
  e->event = event;
  e->cpu = (uint16_t)t->thread;
  e->tsc = t->tsc;
  e->task = task;
  e->other = other;
  e->codeptr = codeptr;
  e->kind = kind;
  memcpy(&t->cbuf[t->n * ncounters], t->ctr, sizeof(int64_t) * ncounters);
  if (++t->n == buffer_events - 2) flush(t); /* room for FLUSH_BEGIN */
}

/* Task `self` runs fib(n): creates two children, waits, runs them
 * (work-first, as libomp does at a taskwait), completes. */
static void fib(sim_thread *t, int n, uint64_t self, uint64_t parent) {
  const uint64_t site_a = 0x401a3c, site_b = 0x401a88, site_wait = 0x401ab0;
  push(t, GL_EV_TASK_SCHEDULE, self, parent, 0, 7 /* switch */);
  if (n >= 2) {
    uint64_t a = (uint64_t)(t->thread + 1) << 40 | ++t->next_id;
    push(t, GL_EV_TASK_CREATE, a, self, site_a, 0x4);
    uint64_t b = (uint64_t)(t->thread + 1) << 40 | ++t->next_id;
    push(t, GL_EV_TASK_CREATE, b, self, site_b, 0x4);
    push(t, GL_EV_SYNC_BEGIN, self, t->region, site_wait, 5 /* taskwait */);
    fib(t, n - 1, a, self);
    fib(t, n - 2, b, self);
    push(t, GL_EV_SYNC_END, self, t->region, site_wait, 5);
  }
  push(t, GL_EV_TASK_SCHEDULE, parent, self, 0, 1 /* complete */);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_writer OUT.parquet [events] [ncounters 0..3]\n");
    return 1;
  }
  uint64_t target = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000000;
  ncounters = argc > 3 ? atoi(argv[3]) : 0;
  if (ncounters < 0 || ncounters > 3) ncounters = 3;
  if (argc > 4) buffer_events = strtoul(argv[4], NULL, 10);
  if (buffer_events < 16 || buffer_events > BUFFER_EVENTS) buffer_events = BUFFER_EVENTS;
  static const char *const names[] = {"task-clock", "page-faults", "context-switches"};
  if (gl_load_writer(NULL, &api) != 0) return 1;
  w = api.open(argv[1], ncounters, names, err, sizeof err);
  if (!w) {
    fprintf(stderr, "bench_writer: %s\n", err);
    return 1;
  }
  static sim_thread th[NTHREADS];
  for (int i = 0; i < NTHREADS; i++) {
    th[i].thread = i;
    th[i].rng = 0x9E3779B97F4A7C15ull * (i + 1);
    th[i].region = 1ull << 40 | 1;
  }
  /* Threads take turns running fib(20) subtrees until enough events exist. */
  for (uint64_t k = 0; written < target; k++) {
    sim_thread *t = &th[k % NTHREADS];
    uint64_t root = (uint64_t)(t->thread + 1) << 40 | ++t->next_id;
    fib(t, 20, root, 0);
  }
  const char *keys[] = {"grainlab.schema_version"};
  const char *vals[] = {"1"};
  double c0 = now_s();
  if (api.close(w, 1, keys, vals, err, sizeof err)) {
    fprintf(stderr, "bench_writer: %s\n", err);
    return 1;
  }
  write_s += now_s() - c0;
  struct stat st;
  stat(argv[1], &st);
  printf("dlopen+dlsym of libgrainwriter.so: %.2f ms\n", api.dlopen_ms);
  printf("events written: %llu in %d counters, file %lld bytes\n",
         (unsigned long long)written, ncounters, (long long)st.st_size);
  printf("bytes/event: %.3f\n", (double)st.st_size / written);
  printf("write throughput (inside gl_writer_write + close): %.2f Mevents/s (%.3f s)\n",
         written / write_s / 1e6, write_s);
  printf("row groups of %zu events: %.3f ms per gl_writer_write\n", buffer_events,
         write_s * 1e3 / ((double)written / buffer_events));
  return 0;
}
