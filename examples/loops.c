/* loops [SCHEDULE] N — parallel-for loops over N iterations, one schedule each.
 *
 * SCHEDULE is one of
 *   static       schedule(static)        one block per thread
 *   static,C     schedule(static, C)     round-robin chunks of C
 *   dynamic,C    schedule(dynamic, C)    chunks of C handed out on demand
 *   dynamic      = dynamic,1
 *   guided[,C]   schedule(guided[, C])   shrinking chunks, at least C (default 1)
 *   all          (default) static, static,7, dynamic,7, guided, in that order
 * Each loop is its own `parallel for` region. Every iteration does a little
 * work and writes a[i]; the printed checksum is the same for every schedule. */
#include "common.h"
#include <omp.h>
#include <string.h>

static const char *usage = "loops [static|static,C|dynamic[,C]|guided[,C]|all] N   (default: all 10000)";

enum sched { STATIC, STATIC_CHUNKED, DYNAMIC, GUIDED };
static const char *const sched_name[] = {"static", "static", "dynamic", "guided"};

static unsigned long iteration(long i) { return tiny_work((unsigned long)i, 8) & 0xff; }

/* One loop instance. Each schedule is spelled out as its own clause (not
 * schedule(runtime)) because libomp runs each through a different path: plain
 * static and static,C never call the dispatcher, dynamic and guided do. */
static unsigned long run_loop(enum sched kind, long chunk, long n, unsigned long *a) {
  switch (kind) {
  case STATIC:
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++)
      a[i] = iteration(i);
    break;
  case STATIC_CHUNKED:
#pragma omp parallel for schedule(static, chunk)
    for (long i = 0; i < n; i++)
      a[i] = iteration(i);
    break;
  case DYNAMIC:
#pragma omp parallel for schedule(dynamic, chunk)
    for (long i = 0; i < n; i++)
      a[i] = iteration(i);
    break;
  case GUIDED:
#pragma omp parallel for schedule(guided, chunk)
    for (long i = 0; i < n; i++)
      a[i] = iteration(i);
    break;
  }
  unsigned long sum = 0;
  for (long i = 0; i < n; i++)
    sum += a[i];
  return sum;
}

/* "static" | "static,C" | "dynamic[,C]" | "guided[,C]" -> kind and chunk. */
static int parse_schedule(const char *s, enum sched *kind, long *chunk) {
  const char *comma = strchr(s, ',');
  size_t len = comma ? (size_t)(comma - s) : strlen(s);
  *chunk = 1;
  if (comma) {
    char *end = NULL;
    *chunk = strtol(comma + 1, &end, 10);
    if (end == comma + 1 || *end != '\0' || *chunk < 1)
      return -1;
  }
  if (len == 6 && !strncmp(s, "static", 6))
    *kind = comma ? STATIC_CHUNKED : STATIC;
  else if (len == 7 && !strncmp(s, "dynamic", 7))
    *kind = DYNAMIC;
  else if (len == 6 && !strncmp(s, "guided", 6))
    *kind = GUIDED;
  else
    return -1;
  return 0;
}

int main(int argc, char **argv) {
  const char *which = "all";
  int size_arg = 1;
  if (argc >= 3) {
    which = argv[1];
    size_arg = 2;
  } else if (argc == 2 && (argv[1][0] < '0' || argv[1][0] > '9')) {
    which = argv[1]; /* a schedule alone: default size */
    size_arg = 2;
  }
  long n = arg_long(argc, argv, size_arg, 10000, 0, 100000000, usage);

  struct { enum sched kind; long chunk; } plan[4];
  int nplan = 0;
  if (!strcmp(which, "all")) {
    plan[0].kind = STATIC, plan[0].chunk = 1;
    plan[1].kind = STATIC_CHUNKED, plan[1].chunk = 7;
    plan[2].kind = DYNAMIC, plan[2].chunk = 7;
    plan[3].kind = GUIDED, plan[3].chunk = 1;
    nplan = 4;
  } else if (parse_schedule(which, &plan[0].kind, &plan[0].chunk) == 0) {
    nplan = 1;
  } else {
    fprintf(stderr, "%s: bad schedule '%s'\nusage: %s\n", argv[0], which, usage);
    return 2;
  }

  unsigned long *a = calloc((size_t)n + 1, sizeof *a);
  if (!a) {
    fprintf(stderr, "loops: out of memory for %ld iterations\n", n);
    return 1;
  }
  for (int p = 0; p < nplan; p++) {
    unsigned long sum = run_loop(plan[p].kind, plan[p].chunk, n, a);
    if (plan[p].kind == STATIC)
      printf("loop schedule(static) n=%ld: checksum %lu\n", n, sum);
    else
      printf("loop schedule(%s,%ld) n=%ld: checksum %lu\n", sched_name[plan[p].kind],
             plan[p].chunk, n, sum);
  }
  free(a);
  return 0;
}
