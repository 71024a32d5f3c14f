/* alignment [NSEQ [LEN]] — pairwise global alignment scores (Needleman-Wunsch,
 * match +2, mismatch -1, gap -2) of NSEQ deterministic random DNA sequences of
 * LEN letters, as BOTS alignment: a `for schedule(dynamic)` loop over the
 * first sequence of each pair, whose iterations create one task per pair
 * (i, j > i). Pairs are independent: the only synchronisation is the end.
 *
 * Tasks = NSEQ (NSEQ - 1) / 2; loop chunks = NSEQ (dynamic,1; one loop
 * instance). Prints `alignment(NSEQ, LEN): score sum <s> verified` (checked
 * against the same scores computed sequentially). Defaults NSEQ = 40, LEN = 120. */
#include <string.h>
#include "common.h"

static const char *usage = "alignment [NSEQ [LEN]]";

static int score(const char *a, const char *b, int len, int *row) {
  /* one row of the dynamic-programming table, reused */
  for (int j = 0; j <= len; j++) row[j] = -2 * j;
  for (int i = 1; i <= len; i++) {
    int diag = row[0];
    row[0] = -2 * i;
    for (int j = 1; j <= len; j++) {
      int up = row[j];
      int best = diag + (a[i - 1] == b[j - 1] ? 2 : -1);
      if (up - 2 > best) best = up - 2;
      if (row[j - 1] - 2 > best) best = row[j - 1] - 2;
      diag = up;
      row[j] = best;
    }
  }
  return row[len];
}

int main(int argc, char **argv) {
  int nseq = (int)arg_long(argc, argv, 1, 40, 2, 2000, usage);
  int len = (int)arg_long(argc, argv, 2, 120, 1, 100000, usage);
  char *seq = malloc((size_t)nseq * (size_t)len);
  long *scores = calloc((size_t)nseq * (size_t)nseq, sizeof *scores);
  if (!seq || !scores) return 1;
  unsigned long s = 12345;
  for (long k = 0; k < (long)nseq * len; k++) {
    s = s * 6364136223846793005ul + 1442695040888963407ul;
    seq[k] = "ACGT"[(s >> 33) & 3];
  }
#pragma omp parallel
#pragma omp for schedule(dynamic)
  for (int i = 0; i < nseq; i++) {
    for (int j = i + 1; j < nseq; j++) {
#pragma omp task UNTIED firstprivate(i, j)
      {
        int *row = malloc(((size_t)len + 1) * sizeof *row);
        scores[(long)i * nseq + j] = score(seq + (long)i * len, seq + (long)j * len, len, row);
        free(row);
      }
    }
  }
  long sum = 0, expect = 0;
  int *row = malloc(((size_t)len + 1) * sizeof *row);
  for (int i = 0; i < nseq; i++)
    for (int j = i + 1; j < nseq; j++) {
      long want = score(seq + (long)i * len, seq + (long)j * len, len, row);
      if (scores[(long)i * nseq + j] != want) {
        fprintf(stderr, "alignment: pair (%d, %d) scored %ld, expected %ld\n", i, j,
                scores[(long)i * nseq + j], want);
        return 1;
      }
      sum += want, expect += want;
    }
  printf("alignment(%d, %d): score sum %ld verified\n", nseq, len, sum);
  free(row), free(seq), free(scores);
  (void)expect;
  return 0;
}
