#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* buffer_states SIZE: a Sendrecv exchange of SIZE bytes each way (2 ranks), and a memcpy of
   SIZE, with the buffers in four states, interleaved round by round, medians of 30 rounds:
   hot = the same two buffers every time, untouched between calls (a ping-pong's);
   cold = slots of a 960 MiB pool taken in turn (the calibration's cold pool);
   written = slots of the pool taken in turn, both written just before the call;
   app = as an all-to-all transpose: the same send buffer packed (written) before each call,
         the same receive buffer read (unpacked) after it.
   mpicc -O2 -o buffer_states buffer_states.c && mpiexec -n 2 ./buffer_states 4194304
   (docs/PREDICT.md, "Large messages": why calibrate measures large messages the app's way) */
static int cmp(const void *a, const void *b) { double d = *(double *)a - *(double *)b; return (d > 0) - (d < 0); }
static volatile long sink;
static void readbuf(const char *p, long n) { long s = 0; for (long i = 0; i < n; i += 64) s += p[i]; sink += s; }
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank); int peer = 1 - rank;
  long B = atol(argv[1]), pool = 960L << 20, slots = pool / B;
  char *p = malloc(pool); memset(p, 1, pool);
  char *hs = malloc(B), *hr = malloc(B); memset(hs, 1, B); memset(hr, 1, B);
  enum { R = 30 };
  double t[2][4][R];
  for (int i = 0; i < R + 2; i++)
    for (int op = 0; op < 2; op++)
      for (int m = 0; m < 4; m++) {
        char *s = hs, *r = hr;
        if (m == 1 || m == 2) { s = p + ((2 * i) % slots) * B; r = p + ((2 * i + 1) % slots) * B; }
        if (m == 2) { memset(s, i, B); memset(r, i, B); }
        if (m == 3) memset(s, i, B);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (op == 0) MPI_Sendrecv(s, B, MPI_BYTE, peer, 0, r, B, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else memcpy(r, s, B);
        double dt = MPI_Wtime() - t0;
        if (m == 3) readbuf(r, B);
        if (i >= 2) t[op][m][i - 2] = dt;
      }
  if (rank == 0)
    for (int op = 0; op < 2; op++) {
      printf("%ld B %-9s", B, op ? "memcpy" : "sendrecv");
      const char *name[] = {"hot", "cold", "written", "app"};
      for (int m = 0; m < 4; m++) { qsort(t[op][m], R, 8, cmp); printf(" %s %.0f us", name[m], 1e6 * t[op][m][R / 2]); }
      printf("\n");
    }
  MPI_Finalize();
}
