/* sort N [SORT_CUTOFF] [MERGE_CUTOFF] [INSERTION_CUTOFF] — BOTS-style parallel
 * mergesort ("cilksort") of N pseudo-random ints, verified sorted with the same
 * multiset checksum as the input.
 *
 * sort(n): if n < SORT_CUTOFF, a sequential quicksort (median-of-three) that
 * hands ranges shorter than INSERTION_CUTOFF to insertion sort. Otherwise the
 * range is cut into quarters of q = n/4, q, q and n - 3q elements, each sorted
 * by a task (then a taskwait); two tasks merge quarters 1+2 (2q elements) and
 * 3+4 (n - 2q) into a temporary (taskwait); the final merge of the two halves
 * (n elements) runs in the current grain.
 *
 * merge(n = n1 + n2 elements): if n < MERGE_CUTOFF a sequential merge;
 * otherwise the output is split at rank k = n/2 (a "merge path" binary search
 * finds how many of the k smallest come from each input), and two tasks merge
 * the lower k and the upper n - k elements (then a taskwait). Splitting by
 * output rank (not by a pivot value, as BOTS does) makes the task count a
 * function of N and the cutoffs only:
 *
 *   M(n) = 0 if n < MERGE_CUTOFF, else 2 + M(n/2) + M(n - n/2)
 *   S(n) = 0 if n < SORT_CUTOFF,  else 4 + S(q) + S(q) + S(q) + S(n - 3q)
 *                                       + 2 + M(2q) + M(n - 2q) + M(n)
 *   tasks = S(N)
 *
 * Defaults (BOTS): N = 65536, SORT_CUTOFF = 2048, MERGE_CUTOFF = 2048,
 * INSERTION_CUTOFF = 20. Output: `sort(N): sorted, checksum <c> verified`. */
#include "common.h"

static const char *usage =
    "sort N [SORT_CUTOFF] [MERGE_CUTOFF] [INSERTION_CUTOFF]   (SORT_CUTOFF >= 4, MERGE_CUTOFF >= 2)";
static long sort_cutoff, merge_cutoff, insertion_cutoff;
typedef int elm;

static void insertion(elm *a, long n) {
  for (long i = 1; i < n; i++) {
    elm v = a[i];
    long j = i - 1;
    while (j >= 0 && a[j] > v) {
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = v;
  }
}

static void seqquick(elm *a, long n) {
  while (n >= insertion_cutoff && n > 2) {
    elm x = a[0], y = a[n / 2], z = a[n - 1];
    elm pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
    long i = 0, j = n - 1;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        elm t = a[i]; a[i] = a[j]; a[j] = t;
        i++; j--;
      }
    }
    /* recurse on the smaller side, loop on the larger */
    if (j + 1 < n - i) {
      seqquick(a, j + 1);
      a += i; n -= i;
    } else {
      seqquick(a + i, n - i);
      n = j + 1;
    }
  }
  insertion(a, n);
}

static void seqmerge(const elm *a, long na, const elm *b, long nb, elm *dest) {
  long i = 0, j = 0;
  while (i < na && j < nb) *dest++ = a[i] <= b[j] ? a[i++] : b[j++];
  while (i < na) *dest++ = a[i++];
  while (j < nb) *dest++ = b[j++];
}

/* How many of the k smallest elements of a ∪ b come from a (ties from a first). */
static long corank(long k, const elm *a, long na, const elm *b, long nb) {
  long lo = k > nb ? k - nb : 0, hi = k < na ? k : na;
  while (lo < hi) {
    long i = (lo + hi) / 2, j = k - i;
    if (j > 0 && a[i] <= b[j - 1]) lo = i + 1;
    else hi = i;
  }
  return lo;
}

static void merge(const elm *a, long na, const elm *b, long nb, elm *dest) {
  long n = na + nb;
  if (n < merge_cutoff) {
    seqmerge(a, na, b, nb, dest);
    return;
  }
  long k = n / 2, i = corank(k, a, na, b, nb), j = k - i;
#pragma omp task UNTIED
  merge(a, i, b, j, dest);
#pragma omp task UNTIED
  merge(a + i, na - i, b + j, nb - j, dest + k);
#pragma omp taskwait
}

static void sort(elm *a, elm *tmp, long n) {
  if (n < sort_cutoff) {
    seqquick(a, n);
    return;
  }
  long q = n / 4;
  elm *A = a, *B = a + q, *C = a + 2 * q, *D = a + 3 * q;
  elm *tA = tmp, *tC = tmp + 2 * q;
#pragma omp task UNTIED
  sort(A, tA, q);
#pragma omp task UNTIED
  sort(B, tmp + q, q);
#pragma omp task UNTIED
  sort(C, tC, q);
#pragma omp task UNTIED
  sort(D, tmp + 3 * q, n - 3 * q);
#pragma omp taskwait
#pragma omp task UNTIED
  merge(A, q, B, q, tA);
#pragma omp task UNTIED
  merge(C, q, D, n - 3 * q, tC);
#pragma omp taskwait
  merge(tA, 2 * q, tC, n - 2 * q, a);
}

int main(int argc, char **argv) {
  long n = arg_long(argc, argv, 1, 65536, 1, 100000000, usage);
  sort_cutoff = arg_long(argc, argv, 2, 2048, 4, 100000000, usage);
  merge_cutoff = arg_long(argc, argv, 3, 2048, 2, 100000000, usage);
  insertion_cutoff = arg_long(argc, argv, 4, 20, 1, 100000000, usage);
  if (argc > 5) {
    fprintf(stderr, "%s: too many arguments\nusage: %s\n", argv[0], usage);
    return 2;
  }
  elm *a = malloc(sizeof(elm) * (size_t)n), *tmp = malloc(sizeof(elm) * (size_t)n);
  unsigned long seed = 42, sum_in = 0, sq_in = 0, sum_out = 0, sq_out = 0;
  for (long i = 0; i < n; i++) {
    seed = tiny_work(seed, 1);
    a[i] = (elm)(seed >> 40) - (1 << 23); /* 24-bit values: many distinct, some equal */
    sum_in += (unsigned long)(long)a[i];
    sq_in += (unsigned long)((long)a[i] * a[i]);
  }
#pragma omp parallel
#pragma omp single
  sort(a, tmp, n);
  for (long i = 0; i < n; i++) {
    if (i > 0 && a[i - 1] > a[i]) {
      fprintf(stderr, "sort(%ld): not sorted at %ld (%d > %d)\n", n, i, a[i - 1], a[i]);
      return 1;
    }
    sum_out += (unsigned long)(long)a[i];
    sq_out += (unsigned long)((long)a[i] * a[i]);
  }
  if (sum_in != sum_out || sq_in != sq_out) {
    fprintf(stderr, "sort(%ld): checksum changed: not a permutation of the input\n", n);
    return 1;
  }
  printf("sort(%ld): sorted, checksum %lx verified\n", n, sum_out ^ sq_out);
  free(a);
  free(tmp);
  return 0;
}
