/* alltoall_parts: where a 2-rank all-to-all's time goes in an application's buffer state
   (issue 35, session 12; docs/PREDICT.md "Local copies").  As benchmarks/apps/transpose.c:
   each repetition "transforms" the rank's rows of an N x N matrix of pairs of doubles, packs the
   blocks into the send buffer, then (after a barrier) times one of: MPI_Alltoall; the copy of
   the rank's own block (memcpy) and MPI_Sendrecv of the other block; the Sendrecv alone; the
   copy alone; and reads the receive buffer.  Rank 0's median and minimum over R repetitions.
   mpicc -O2 -o alltoall_parts alltoall_parts.c -lm && mpiexec -n 2 ./alltoall_parts [N=1024] [R=40]
   (block = (N/2)^2 * 16 bytes: N = 256, 362, 512, 724, 1024 give 256 KiB .. 4 MiB) */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { double x = *(double *)a, y = *(double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) { if (rank == 0) fprintf(stderr, "alltoall_parts: run on 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
    int n = argc > 1 ? atoi(argv[1]) : 1024, reps = argc > 2 ? atoi(argv[2]) : 40;
    if (reps > 400) reps = 400;
    int rows = n / 2, block = rows * rows * 2, peer = 1 - rank;
    size_t elems = (size_t)rows * n * 2;
    double *a = malloc(elems * 8), *send = calloc(elems, 8), *recv = calloc(elems, 8);
    for (size_t i = 0; i < elems; i++) a[i] = i % 7;
    static double t[4][400];
    const char *names[4] = {"alltoall", "copy+sendrecv", "sendrecv", "copy"};
    double sink = 0;
    for (int r = 0; r < reps; r++)
        for (int v = 0; v < 4; v++) {
            for (size_t i = 0; i < elems; i++) a[i] = a[i] * 0.999 + 0.001 * cos((double)(i & 1023));
            for (int p = 0; p < 2; p++)
                for (int q = 0; q < rows; q++)
                    memcpy(send + (size_t)p * block + (size_t)q * rows * 2, a + ((size_t)q * n + (size_t)p * rows) * 2, rows * 16);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (v == 0) MPI_Alltoall(send, block, MPI_DOUBLE, recv, block, MPI_DOUBLE, MPI_COMM_WORLD);
            if (v == 1 || v == 3) memcpy(recv + (size_t)rank * block, send + (size_t)rank * block, (size_t)block * 8);
            if (v == 1 || v == 2)
                MPI_Sendrecv(send + (size_t)peer * block, block, MPI_DOUBLE, peer, 0, recv + (size_t)peer * block, block,
                             MPI_DOUBLE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            t[v][r] = MPI_Wtime() - t0;
            for (size_t i = 0; i < elems; i += 8) sink += recv[i];
        }
    for (int v = 0; v < 4; v++) {
        qsort(t[v], reps, sizeof(double), cmp);
        if (rank == 0) printf("block %d B  %-14s median %8.1f us  min %8.1f us\n", block * 8, names[v], 1e6 * t[v][reps / 2], 1e6 * t[v][0]);
    }
    if (sink == 1.2345) printf("%g\n", sink);
    free(a); free(send); free(recv);
    MPI_Finalize();
    return 0;
}
