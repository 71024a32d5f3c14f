/* bench_callbacks.c — the collector's cost per event on its own: a stand-in
 * OpenMP runtime that loads an OMPT tool (the collector, or the empty tool
 * for the floor), and calls its callbacks the way libomp does for fib with a
 * task per call — task_create, a switch to the child, the child's
 * completion — from THREADS threads at once, with no runtime work between.
 *
 * usage: bench_callbacks TOOL.so [tasks per thread (default 2000000)]
 *                        [threads (default 1)] [reps (default 5)]
 *
 * The threads live through every repetition (the first pays for the first
 * touch of their buffers' pages). Prints the best repetition's CPU
 * ns per event of the calling threads (the hot path, the page steps and
 * whatever a thread writes itself; the writer threads' CPU is not in it) and
 * its wall ns per event per thread. The collector writes its spool under
 * $TMPDIR (GRAINLAB_CONVERT=no) and this removes it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp-tools.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static ompt_callback_t cb[64];
static long tasks = 2000000;
static pthread_barrier_t start;

static int set_callback(ompt_callbacks_t event, ompt_callback_t fn) {
  if ((unsigned)event < 64) cb[event] = fn;
  return ompt_set_always;
}

static ompt_interface_fn_t lookup(const char *name) {
  return strcmp(name, "ompt_set_callback") == 0 ? (ompt_interface_fn_t)set_callback : 0;
}

static double seconds(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct {
  double cpu[64];
  int initial;
} worker;

static int reps = 5;

static void *work(void *arg) {
  worker *w = arg;
  ompt_data_t thread = {0}, parallel = {.value = 1}, implicit = {0};
  ((ompt_callback_thread_begin_t)cb[ompt_callback_thread_begin])(
      w->initial ? ompt_thread_initial : ompt_thread_worker, &thread);
  ((ompt_callback_implicit_task_t)cb[ompt_callback_implicit_task])(
      ompt_scope_begin, &parallel, &implicit, 1, 0, ompt_task_implicit);
  ompt_callback_task_create_t create = (ompt_callback_task_create_t)cb[ompt_callback_task_create];
  ompt_callback_task_schedule_t schedule =
      (ompt_callback_task_schedule_t)cb[ompt_callback_task_schedule];
  const void *codeptr = (const void *)&work;
  for (int rep = 0; rep < reps; rep++) {
    pthread_barrier_wait(&start);
    double t0 = seconds(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < tasks; i++) {
      ompt_data_t child = {0};
      create(&implicit, 0, &child, ompt_task_explicit, 0, codeptr);
      schedule(&implicit, ompt_task_switch, &child);
      schedule(&child, ompt_task_complete, &implicit);
    }
    w->cpu[rep] = seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
    pthread_barrier_wait(&start);
  }
  ((ompt_callback_implicit_task_t)cb[ompt_callback_implicit_task])(
      ompt_scope_end, 0, &implicit, 0, 0, ompt_task_implicit);
  ((ompt_callback_thread_end_t)cb[ompt_callback_thread_end])(&thread);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_callbacks TOOL.so [tasks] [threads] [reps]\n");
    return 2;
  }
  if (argc > 2) tasks = atol(argv[2]);
  int nthreads = argc > 3 ? atoi(argv[3]) : 1;
  if (argc > 4) reps = atoi(argv[4]);
  if (tasks < 1 || nthreads < 1 || nthreads > 256 || reps < 1 || reps > 64) return 2;
  const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  char out[512];
  snprintf(out, sizeof out, "%s/bench_callbacks.%d.parquet", tmp, (int)getpid());
  setenv("GRAINLAB_OUTPUT", out, 1);
  setenv("GRAINLAB_CONVERT", "no", 1);
  setenv("GRAINLAB_QUIET", "1", 1);
  void *tool = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!tool) {
    fprintf(stderr, "bench_callbacks: %s\n", dlerror());
    return 1;
  }
  typedef ompt_start_tool_result_t *(*start_tool_fn)(unsigned int, const char *);
  start_tool_fn start_tool = (start_tool_fn)dlsym(tool, "ompt_start_tool");
  ompt_start_tool_result_t *r = start_tool ? start_tool(201611, "bench_callbacks") : 0;
  if (!r || !r->initialize(lookup, 0, &r->tool_data)) {
    fprintf(stderr, "bench_callbacks: the tool did not start\n");
    return 1;
  }
  /* The threads live through every repetition (as a runtime's pool does):
   * the first pays for its buffers' first pages, later ones reuse them. */
  pthread_barrier_init(&start, 0, (unsigned)nthreads + 1);
  static pthread_t th[256];
  static worker w[256];
  for (int i = 0; i < nthreads; i++) {
    w[i].initial = i == 0;
    pthread_create(&th[i], 0, work, &w[i]);
  }
  double best_cpu = 1e30, best_wall = 1e30, events = 3.0 * (double)tasks * nthreads;
  for (int rep = 0; rep < reps; rep++) {
    pthread_barrier_wait(&start);
    double t0 = seconds(CLOCK_MONOTONIC);
    pthread_barrier_wait(&start);
    double wall = seconds(CLOCK_MONOTONIC) - t0, cpu = 0;
    for (int i = 0; i < nthreads; i++) cpu += w[i].cpu[rep];
    if (cpu / events < best_cpu) best_cpu = cpu / events;
    if (wall / events * nthreads < best_wall) best_wall = wall / events * nthreads;
  }
  for (int i = 0; i < nthreads; i++) pthread_join(th[i], 0);
  pthread_barrier_destroy(&start);
  r->finalize(&r->tool_data);
  char spool[600];
  snprintf(spool, sizeof spool, "%s.spool", out);
  unlink(spool);
  printf("%s: %d thread(s), %ld tasks each: cpu %.2f ns/event, wall %.2f ns/event/thread\n",
         strrchr(argv[1], '/') ? strrchr(argv[1], '/') + 1 : argv[1], nthreads, tasks,
         best_cpu * 1e9, best_wall * 1e9);
  return 0;
}
