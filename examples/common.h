/* common.h — helpers shared by the grainlab example programs.
 *
 * The examples exist to be recorded: each has a task/chunk shape fixed by its
 * command-line sizes (documented with exact counts in examples/README.md), and
 * a tiny, nonzero amount of work per grain so runs stay short but every grain
 * has a measurable body. */
#ifndef GRAINLAB_EXAMPLES_COMMON_H
#define GRAINLAB_EXAMPLES_COMMON_H
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* UNTIED: the `untied` clause in the task-creating examples' task constructs
 * when built as their `<name>_untied` variants (-DGRAINLAB_UNTIED=1), as every
 * task of the BOTS suite is; empty otherwise. OpenMP pragmas are macro
 * expanded. Untied tasks may be suspended at their task scheduling points and
 * resumed on another thread: the variants exist to record exactly that. */
#if GRAINLAB_UNTIED
#define UNTIED untied
#else
#define UNTIED
#endif

/* Parse argv[i] as a non-negative integer in [lo, hi], or return `dflt` when the
 * argument is absent. A malformed value prints a one-line usage error and
 * exits with status 2, so a mistyped size never silently becomes 0. */
static inline long arg_long(int argc, char **argv, int i, long dflt, long lo,
                            long hi, const char *usage) {
  if (i >= argc)
    return dflt;
  char *end = NULL;
  errno = 0;
  long v = strtol(argv[i], &end, 10);
  if (errno || end == argv[i] || *end != '\0' || v < lo || v > hi) {
    fprintf(stderr, "%s: bad argument '%s' (expected an integer in [%ld, %ld])\nusage: %s\n",
            argv[0], argv[i], lo, hi, usage);
    exit(2);
  }
  return v;
}

/* argv[i] (already parsed as n) must be a power of two, and nothing may
 * follow argv[last]: else a one-line usage error, exit 2. */
static inline void require_pow2_and_no_more(long n, int argc, char **argv, int i, int last,
                                            const char *usage) {
  if (n & (n - 1)) {
    fprintf(stderr, "%s: bad argument '%s' (N must be a power of two)\nusage: %s\n", argv[0],
            argv[i], usage);
    exit(2);
  }
  if (argc > last + 1) {
    fprintf(stderr, "%s: too many arguments\nusage: %s\n", argv[0], usage);
    exit(2);
  }
}

/* A few dozen cycles of integer mixing the compiler cannot remove: the body of
 * a grain. Returns a value that callers fold into their printed result. */
static inline unsigned long tiny_work(unsigned long seed, int rounds) {
  unsigned long x = seed * 0x9E3779B97F4A7C15ul + 1;
  for (int r = 0; r < rounds; r++) {
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ul;
    x ^= x >> 32;
  }
  __asm__ volatile("" : "+r"(x)); /* keep the loop: its result is "used" */
  return x;
}

/* Monotonic wall-clock time in milliseconds. */
static inline double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Busy for `ms` milliseconds of wall time (a grain of known length, whatever
 * the machine's speed); returns a bit of the work for the caller to fold into
 * its printed result. */
static inline unsigned long spin(double ms, unsigned long seed) {
  double end = now_ms() + ms;
  unsigned long x = seed;
  while (now_ms() < end) x = tiny_work(x, 16);
  return x & 1;
}

#endif
