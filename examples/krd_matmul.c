/* krd_matmul [NB [BS [ORDER]]] — blocked matrix multiply C = A * B over NB x NB
 * blocks of BS x BS doubles, one task per block product C(i,j) += A(i,k) *
 * B(k,j), every task annotated with the three blocks it touches
 * (collector/include/graincollect.h): A(i,k) and B(k,j) in, C(i,j) inout.
 * Tasks updating the same C(i,j) are ordered by `depend(inout: C(i,j))`.
 * ORDER is the order the single thread spawns the tasks in: `row` (loops
 * i, j, k, k innermost) or `z` (Z-order, Morton: the bits of i, j and k
 * interleaved; NB must then be a power of two). `loop` has no tasks: a
 * `parallel for schedule(dynamic)` over the C blocks (i, j), row-major, each
 * iteration running its NB block products in k order, annotated the same
 * way: its grains are loop chunks (one per iteration).
 *
 * Tasks = NB^3; data accesses = 3 NB^3. Prints `krd_matmul(NB, BS, ORDER):
 * checksum <sum> verified`. Defaults 8 16 row.
 *
 * What the two orders do to reuse (docs/locality.md, tests/test_krd.py), at
 * 1 thread (every task runs as it is created, in spawn order): row-major
 * reuses C(i,j) at once (NB tasks in a row) and A's row i after each sweep
 * of j (about 2 NB blocks later), but B(k,j) only after all of B has been
 * touched (NB^2 blocks): a third of the accesses reuse at about the size of
 * a whole matrix. Z-order walks octants of the (i, j, k) cube recursively,
 * so each block comes back within the octant of a size that holds it:
 * reuses at every scale, most of them short. The documented direction:
 * with a "cache" of an eighth of one matrix, Z-order has more close reuses
 * and fewer far ones than row-major; both have the same first uses (INF:
 * the same 3 NB^2 blocks). */
#include <string.h>
#include "common.h"
#include "graincollect.h"

static const char *usage = "krd_matmul [NB [BS [row|z|loop]]]";
static int nb, bs;

static double *blk(double *m, int i, int j) { return m + ((size_t)i * nb + j) * bs * bs; }

static void block_task(double *a, double *b, double *c, int i, int j, int k) {
  size_t bytes = (size_t)bs * bs * sizeof(double);
  double *aik = blk(a, i, k), *bkj = blk(b, k, j), *cij = blk(c, i, j);
  grain_data(aik, bytes, GRAIN_IN);
  grain_data(bkj, bytes, GRAIN_IN);
  grain_data(cij, bytes, GRAIN_INOUT);
  for (int x = 0; x < bs; x++)
    for (int z = 0; z < bs; z++)
      for (int y = 0; y < bs; y++) cij[x * bs + y] += aik[x * bs + z] * bkj[z * bs + y];
}

/* The t-th block product in Z-order: bit b of k, j, i is bit 3b, 3b+1, 3b+2 of t. */
static void morton(int t, int *i, int *j, int *k) {
  *i = *j = *k = 0;
  for (int bit = 0; bit < 10; bit++) {
    *k |= ((t >> (3 * bit)) & 1) << bit;
    *j |= ((t >> (3 * bit + 1)) & 1) << bit;
    *i |= ((t >> (3 * bit + 2)) & 1) << bit;
  }
}

static double checksum(const double *a, const double *b, const double *c) {
  /* Every block of A and B is filled with its own constant, so C(i,j)'s cells
   * all equal sum_k bs * a(i,k) * b(k,j). */
  double sum = 0;
  for (int i = 0; i < nb; i++)
    for (int j = 0; j < nb; j++) {
      double want = 0;
      for (int k = 0; k < nb; k++) want += bs * a[((size_t)i * nb + k) * bs * bs] * b[((size_t)k * nb + j) * bs * bs];
      const double *cij = c + ((size_t)i * nb + j) * bs * bs;
      for (int x = 0; x < bs * bs; x++)
        if (cij[x] != want) return -1;
      sum += want * bs * bs;
    }
  return sum;
}

int main(int argc, char **argv) {
  nb = (int)arg_long(argc, argv, 1, 8, 1, 1024, usage);
  bs = (int)arg_long(argc, argv, 2, 16, 1, 1024, usage);
  const char *order = argc > 3 ? argv[3] : "row";
  int zorder = strcmp(order, "z") == 0, loop = strcmp(order, "loop") == 0;
  if (!zorder && !loop && strcmp(order, "row") != 0) {
    fprintf(stderr, "krd_matmul: bad order '%s' (row, z or loop)\nusage: %s\n", order, usage);
    return 2;
  }
  if (zorder && (nb & (nb - 1))) {
    fprintf(stderr, "krd_matmul: z order needs NB a power of two, not %d\nusage: %s\n", nb, usage);
    return 2;
  }
  size_t cells = (size_t)nb * nb * bs * bs;
  double *a = malloc(cells * sizeof *a), *b = malloc(cells * sizeof *b), *c = calloc(cells, sizeof *c);
  if (!a || !b || !c) return 1;
  for (size_t x = 0; x < cells; x++) {
    size_t blkno = x / ((size_t)bs * bs);
    a[x] = (double)(blkno % 7 + 1), b[x] = (double)(blkno % 5 + 1);
  }
  if (loop) {
#pragma omp parallel for schedule(dynamic)
    for (int t = 0; t < nb * nb; t++)
      for (int k = 0; k < nb; k++) block_task(a, b, c, t / nb, t % nb, k);
  } else {
#pragma omp parallel
#pragma omp single
    for (int t = 0; t < nb * nb * nb; t++) {
      int i = t / (nb * nb), j = t / nb % nb, k = t % nb;
      if (zorder) morton(t, &i, &j, &k);
      double *cij = blk(c, i, j);
#pragma omp task firstprivate(i, j, k) depend(inout: cij[0])
      block_task(a, b, c, i, j, k);
    }
  }
  double sum = checksum(a, b, c);
  if (sum < 0) {
    fprintf(stderr, "krd_matmul: wrong product\n");
    return 1;
  }
  printf("krd_matmul(%d, %d, %s): checksum %.1f verified\n", nb, bs, order, sum);
  free(a), free(b), free(c);
  return 0;
}
