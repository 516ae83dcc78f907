/* Slow stretches that stay together: a 1-D periodic ring whose ranks compute in four phases
 * per iteration (between them an irecv from the left, a send to the right, a wait), a rank being slow (4x the
 * work) in all four phases of some iterations and fast in all of the others, as a rank that
 * loses its cache or its core for a while is (which of them: a hash of rank and iteration).
 * Each iteration ends with an allreduce.
 * Usage: slowsteps ITERATIONS WORK (the work of a fast phase, in loop steps). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

static void work(long n) {
    double s = 0.0;
    for (long j = 0; j < n; j++) s += 1e-9 * (double)(j & 7);
    sink += s;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    long base = argc > 2 ? atol(argv[2]) : 200000;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double out[64] = {0}, in[64];
    for (int it = 0; it < iters; it++) {
        unsigned h = (unsigned)(rank * 2654435761u) ^ (unsigned)(it * 40503u);
        h ^= h >> 13;
        long n = (h % 3 == 0) ? 4 * base : base;          /* slow in all four phases */
        for (int phase = 0; phase < 4; phase++) {
            work(n);
            MPI_Request req;
            MPI_Irecv(in, 64, MPI_DOUBLE, left, phase, MPI_COMM_WORLD, &req);
            MPI_Send(out, 64, MPI_DOUBLE, right, phase, MPI_COMM_WORLD);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        double local = sink, global;
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("%g\n", sink);
    MPI_Finalize();
    return 0;
}
