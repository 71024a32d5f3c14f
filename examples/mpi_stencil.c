/* mpi_stencil.c — a hybrid MPI + OpenMP tasks program: a 2-D Jacobi stencil,
 * domain-decomposed by rows across MPI ranks, with OpenMP tasks inside each
 * rank and a halo exchange between phases.
 *
 *   mpirun -np 4 grainlab record -o run.%r.parquet -- \
 *       ./build/examples/mpi_stencil ROWS COLS ITERS BLOCK [IMBALANCE]
 *
 * Each rank owns ROWS x COLS interior points. Every iteration:
 *   1. halo exchange with the neighbour ranks (MPI_Sendrecv, outside OpenMP);
 *   2. one parallel region: a single producer makes ROWS/BLOCK block tasks,
 *      and each block task makes two child tasks (its upper and lower half):
 *      ROWS/BLOCK * 3 explicit tasks per iteration and rank;
 *   3. the residual's MPI_Allreduce (outside OpenMP).
 * IMBALANCE = k > 1 gives rank 0 k times the work per point (a sweep repeated
 * k times), so every other rank waits for it at each halo exchange: the
 * imbalance `grainlab ranks` shows. Prints the final residual. */
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"

static const char *USAGE = "mpi_stencil ROWS COLS ITERS BLOCK [IMBALANCE]";

static double sweep_rows(const double *u, double *v, long cols, long r0, long r1, int repeat) {
  double res = 0.0;
  for (int k = 0; k < repeat; k++) {
    res = 0.0;
    for (long i = r0; i < r1; i++)
      for (long j = 1; j <= cols; j++) {
        long p = i * (cols + 2) + j;
        v[p] = 0.25 * (u[p - 1] + u[p + 1] + u[p - (cols + 2)] + u[p + (cols + 2)]);
        res += fabs(v[p] - u[p]);
      }
  }
  return res;
}

static void halo_exchange(double *u, long rows, long cols, int rank, int size) {
  long w = cols + 2;
  int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  MPI_Sendrecv(u + 1 * w, (int)w, MPI_DOUBLE, up, 0, u + (rows + 1) * w, (int)w, MPI_DOUBLE, down,
               0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  MPI_Sendrecv(u + rows * w, (int)w, MPI_DOUBLE, down, 1, u, (int)w, MPI_DOUBLE, up, 1,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* One phase: block tasks, each split into two child tasks. */
static double phase(const double *u, double *v, long rows, long cols, long block, int repeat) {
  double total = 0.0;
#pragma omp parallel
#pragma omp single
  for (long b = 1; b <= rows; b += block) {
    long e = b + block <= rows + 1 ? b + block : rows + 1;
#pragma omp task UNTIED firstprivate(b, e) shared(total)
    {
      long mid = b + (e - b) / 2;
      double lo = 0.0, hi = 0.0;
#pragma omp task UNTIED shared(lo)
      lo = sweep_rows(u, v, cols, b, mid, repeat);
#pragma omp task UNTIED shared(hi)
      hi = sweep_rows(u, v, cols, mid, e, repeat);
#pragma omp taskwait
#pragma omp atomic
      total += lo + hi;
    }
  }
  return total;
}

int main(int argc, char **argv) {
  int provided, rank, size;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long rows = arg_long(argc, argv, 1, 256, 1, 1L << 20, USAGE);
  long cols = arg_long(argc, argv, 2, 256, 1, 1L << 20, USAGE);
  long iters = arg_long(argc, argv, 3, 10, 1, 1L << 20, USAGE);
  long block = arg_long(argc, argv, 4, 32, 1, 1L << 20, USAGE);
  long imbalance = arg_long(argc, argv, 5, 1, 1, 100, USAGE);
  int repeat = rank == 0 ? (int)imbalance : 1;
  size_t n = (size_t)(rows + 2) * (size_t)(cols + 2);
  double *u = calloc(n, sizeof *u), *v = calloc(n, sizeof *v);
  if (!u || !v) {
    fprintf(stderr, "mpi_stencil: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (rank == 0) /* a hot top edge: heat flows down through the ranks */
    for (long j = 0; j < cols + 2; j++) u[j] = v[j] = 1.0;
  double residual = 0.0;
  for (long it = 0; it < iters; it++) {
    halo_exchange(u, rows, cols, rank, size);
    double local = phase(u, v, rows, cols, block, repeat);
    MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double *t = u;
    u = v, v = t;
  }
  if (rank == 0) printf("mpi_stencil: %d ranks, residual %.6g\n", size, residual);
  free(u), free(v);
  MPI_Finalize();
  return 0;
}
