#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
/* after_compute_sizes: what calibrate's after-compute penalty measures, in a compiled program
   (no interpreter's cold path to subtract).  2 ranks: every rank computes D us (registers:
   multiply-add chains; memory: STREAM triad through 64 MiB), then the pair exchanges S bytes
   each way (irecv, isend, waitall), 60 repetitions after a barrier.  Per (kernel, D, S): the
   median over repetitions of the later rank's exchange time (min over the two), and of the
   two ranks' mean; S = 0 with peer MPI_PROC_NULL is the library's own cold path.
   mpicc -O2 -o after_compute_sizes after_compute_sizes.c && mpiexec -n 2 ./after_compute_sizes
   (docs/PREDICT.md, "An MPI call right after a compute"; issue 35, session 10) */
static int cmp(const void *a, const void *b) { double d = *(double *)a - *(double *)b; return (d > 0) - (d < 0); }
#define N ((64L << 20) / 24)
static double *A, *B, *C;
static long at = 0;
static void triad(void) { for (long i = 0; i < 4096; i++) A[at + i] = B[at + i] + 1.0001 * C[at + i]; at = (at + 4096) % (N - 4096); }
static volatile double sink;
static void fma_(void) { double x = 1, y = 1.0000001; for (int i = 0; i < 256; i++) x = x * y + 1e-9; sink += x; }
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int peer = 1 - rank;
  A = malloc(N * 8); B = malloc(N * 8); C = malloc(N * 8);
  for (long i = 0; i < N; i++) A[i] = B[i] = C[i] = 1;
  long sizes[] = {8, 1024, 8192, 65536};
  double Ds[] = {0, 20e-6, 100e-6, 500e-6, 2e-3};
  enum { R = 60 };
  double t[R], both[2 * R], later[R];
  char *s = calloc(1, 1 << 20), *r = calloc(1, 1 << 20);
  if (rank == 0) printf("kernel D_us S_bytes later_us mean_us\n");
  for (int kern = 0; kern < 2; kern++)
    for (int di = 0; di < 5; di++)
      for (int si = -1; si < 4; si++) {
        long S = si < 0 ? 0 : sizes[si];
        int p = si < 0 ? MPI_PROC_NULL : peer;
        for (int i = 0; i < R + 2; i++) {
          MPI_Barrier(MPI_COMM_WORLD);
          double t0 = MPI_Wtime();
          while (MPI_Wtime() - t0 < Ds[di]) { if (kern) triad(); else fma_(); }
          MPI_Request q[2];
          double a = MPI_Wtime();
          MPI_Irecv(r, S, MPI_BYTE, p, 5, MPI_COMM_WORLD, &q[0]);
          MPI_Isend(s, S, MPI_BYTE, p, 5, MPI_COMM_WORLD, &q[1]);
          MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
          if (i >= 2) t[i - 2] = MPI_Wtime() - a;
        }
        MPI_Gather(t, R, MPI_DOUBLE, both, R, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        if (rank == 0) {
          for (int i = 0; i < R; i++) later[i] = both[i] < both[R + i] ? both[i] : both[R + i];
          qsort(later, R, 8, cmp); qsort(both, R, 8, cmp); qsort(both + R, R, 8, cmp);
          printf("%-9s %5.0f %6ld %7.1f %7.1f\n", kern ? "memory" : "registers", Ds[di] * 1e6, S,
                 later[R / 2] * 1e6, (both[R / 2] + both[R + R / 2]) / 2 * 1e6);
        }
      }
  MPI_Finalize();
}
