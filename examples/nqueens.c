/* nqueens N [CUTOFF] — count the solutions of the N-queens problem (N <= 14)
 * by backtracking, with a task per queen placement above a depth cutoff.
 *
 * The search starts at row 0 in the implicit task that wins the `single`.
 * A call at row r (r queens already placed, one per row 0..r-1) tries every
 * column of row r; while r < CUTOFF each valid placement becomes a task that
 * searches rows r+1.. with its own copy of the board, followed by one
 * taskwait; at r >= CUTOFF the search goes on serially inside the grain.
 *
 * Task count (data dependent, exactly computable): a task per valid partial
 * placement of k queens in rows 0..k-1, for k = 1..min(CUTOFF, N).
 * Defaults: N = 8, CUTOFF = 3 (8 + 42 + 140 = 190 tasks).
 *
 * Output: `nqueens(N) = <solutions> verified` — or a message and exit 1 when
 * the count disagrees with the known table (OEIS A000170). */
#include "common.h"

static const char *usage = "nqueens N [CUTOFF]   (1 <= N <= 14; CUTOFF = task depth, default 3)";
static const long known[15] = {1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596};
static int n, cutoff;

typedef struct { int col[14]; } board_t;

static int ok(const board_t *b, int row, int c) {
  for (int r = 0; r < row; r++) {
    int d = b->col[r] - c;
    if (d == 0 || d == row - r || d == r - row)
      return 0;
  }
  return 1;
}

static long search(board_t b, int row) {
  if (row == n)
    return 1;
  long total = 0;
  if (row >= cutoff) {
    for (int c = 0; c < n; c++)
      if (ok(&b, row, c)) {
        b.col[row] = c;
        total += search(b, row + 1);
      }
    return total;
  }
  for (int c = 0; c < n; c++) {
    if (!ok(&b, row, c))
      continue;
    b.col[row] = c;
#pragma omp task UNTIED firstprivate(b, row) shared(total)
    {
      long s = search(b, row + 1);
#pragma omp atomic
      total += s;
    }
  }
#pragma omp taskwait
  return total;
}

int main(int argc, char **argv) {
  n = (int)arg_long(argc, argv, 1, 8, 1, 14, usage);
  cutoff = (int)arg_long(argc, argv, 2, 3, 0, 14, usage);
  long result = 0;
  board_t empty = {{0}};
#pragma omp parallel
#pragma omp single
  result = search(empty, 0);
  if (result != known[n]) {
    fprintf(stderr, "nqueens(%d) = %ld, expected %ld: WRONG\n", n, result, known[n]);
    return 1;
  }
  printf("nqueens(%d) = %ld verified\n", n, result);
  return 0;
}
