/* counters_probe.c — drives counters.c the way the collector does, without
 * OpenMP: init from argv[1] (GRAINLAB_COUNTERS syntax), then on this thread
 * and on a second pthread: start, read, do work that the software counters
 * see (burn CPU, touch fresh pages, yield the CPU by sleeping), read again.
 * Prints JSON lines: {"init": n, "names": [...], "metadata": <json>} then
 * {"thread": k, "before": [...], "after": [...], "wall_ns": n} (null for INT64_MIN;
 * wall_ns: CLOCK_MONOTONIC from just before the first read to just after the last).
 * Exit status 2 when init returns -1 (after its one-line message). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "clock.h"
#include "counters.h"

static int n;

static void print_values(const int64_t *v) {
  printf("[");
  for (int i = 0; i < n; i++) {
    if (v[i] == INT64_MIN) printf("%snull", i ? ", " : "");
    else printf("%s%lld", i ? ", " : "", (long long)v[i]);
  }
  printf("]");
}

static void work(void) {
  volatile double x = 0; /* ~20 ms of CPU */
  struct timespec t0, t1;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  do {
    for (int i = 0; i < 100000; i++) x += i * 0.5;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
  } while ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec) < 20e6);
  size_t len = 256 * 4096; /* 256 fresh pages: at least 256 minor faults */
  char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p != MAP_FAILED) {
    for (size_t i = 0; i < len; i += 4096) p[i] = 1;
    munmap(p, len);
  }
  for (int i = 0; i < 3; i++) nanosleep(&(struct timespec){0, 1000000}, NULL); /* 3 switches */
}

static void *run(void *arg) {
  int k = (int)(intptr_t)arg;
  gl_counters_thread t;
  int64_t before[GL_MAX_COUNTERS], after[GL_MAX_COUNTERS];
  gl_counters_thread_start(&t);
  struct timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  gl_counters_read(&t, gl_clock_raw(), before);
  work();
  gl_counters_read(&t, gl_clock_raw(), after);
  clock_gettime(CLOCK_MONOTONIC, &w1);
  gl_counters_thread_stop(&t);
  static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&out);
  printf("{\"thread\": %d, \"before\": ", k);
  print_values(before);
  printf(", \"after\": ");
  print_values(after);
  printf(", \"wall_ns\": %lld}\n",
         (long long)((w1.tv_sec - w0.tv_sec) * 1000000000LL + (w1.tv_nsec - w0.tv_nsec)));
  fflush(stdout);
  pthread_mutex_unlock(&out);
  return NULL;
}

int main(int argc, char **argv) {
  n = gl_counters_init(argc > 1 ? argv[1] : NULL);
  if (n < 0) return 2;
  const char *const *names = gl_counters_names();
  printf("{\"init\": %d, \"names\": [", n);
  for (int i = 0; i < n; i++) printf("%s\"%s\"", i ? ", " : "", names[i]);
  printf("], \"metadata\": %s}\n", gl_counters_metadata_json());
  fflush(stdout);
  run((void *)0);
  pthread_t th;
  pthread_create(&th, NULL, run, (void *)1);
  pthread_join(th, NULL);
  gl_counters_shutdown();
  return 0;
}
