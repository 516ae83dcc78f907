/* A matrix transpose exchanged in phases, as public PRK MPI1 Transpose exchanges its blocks:
 * at phase j = 1 .. P-1 rank r receives from r + j and sends to r - j (mod P), tag j, a block
 * of (n/P)^2 doubles; a warm-up iteration, a barrier, then the timed ones; a reduction to
 * rank 0 (tests/test_extrapolate_phases.py).  argv: iterations, order, and "sync" for one
 * MPI_Sendrecv per phase (PRK built with -DSYNCHRONOUS) instead of irecv, isend, two waits. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, size, iterations = 3, sync;
    long order = 480;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 1) iterations = atoi(argv[1]);
    if (argc > 2) order = atol(argv[2]);
    sync = argc > 3 && !strcmp(argv[3], "sync");
    MPI_Bcast(&order, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    MPI_Bcast(&iterations, 1, MPI_INT, 0, MPI_COMM_WORLD);
    long b = order / size, block = b * b;          /* a column block: order rows, b columns */
    double *a = malloc(order * b * sizeof *a), *t = calloc(order * b, sizeof *t);
    double *in = malloc(block * sizeof *in), *out = malloc(block * sizeof *out);
    for (long i = 0; i < order * b; i++) a[i] = (double)(rank * order * b + i);
    for (int it = 0; it <= iterations; it++) {
        if (it == 1) MPI_Barrier(MPI_COMM_WORLD);
        for (long i = 0; i < b; i++)               /* the rank's own block */
            for (long j = 0; j < b; j++) t[rank * b + i + j * order] += a[rank * b + j + i * order];
        for (int phase = 1; phase < size; phase++) {
            int from = (rank + phase) % size, to = (rank - phase + size) % size;
            MPI_Request req[2];
            if (!sync) MPI_Irecv(in, (int)block, MPI_DOUBLE, from, phase, MPI_COMM_WORLD, &req[0]);
            for (long i = 0; i < b; i++)
                for (long j = 0; j < b; j++) out[i + j * b] = a[to * b + j + i * order];
            if (sync) {
                MPI_Sendrecv(out, (int)block, MPI_DOUBLE, to, phase, in, (int)block, MPI_DOUBLE,
                             from, phase, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Isend(out, (int)block, MPI_DOUBLE, to, phase, MPI_COMM_WORLD, &req[1]);
                MPI_Wait(&req[0], MPI_STATUS_IGNORE);
                MPI_Wait(&req[1], MPI_STATUS_IGNORE);
            }
            for (long i = 0; i < block; i++) t[from * b + i % b + (i / b) * order] += in[i];
        }
    }
    double sum = 0, total = 0;
    for (long i = 0; i < order * b; i++) sum += t[i];
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%g\n", total);
    free(a); free(t); free(in); free(out);
    MPI_Finalize();
    return 0;
}
