/* 1-D periodic halo exchange with a residual allreduce, for extrapolation (bench_extrapolate):
 * per iteration Irecv left/right (tags 0/1), Isend right/left, Waitall, compute, Allreduce of
 * one double.  argv: iterations, work (loop length per rank; "strong": divided by the size). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define HALO 1024
int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 10;
    long work = argc > 2 ? atol(argv[2]) : 1000000;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 3 && strcmp(argv[3], "strong") == 0) work /= size;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    static double out[2][HALO], in[2][HALO];
    double acc = 0, res;
    for (int it = 0; it < iters; it++) {
        MPI_Request req[4];
        MPI_Irecv(in[0], HALO, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(in[1], HALO, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(out[0], HALO, MPI_DOUBLE, right, 0, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(out[1], HALO, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        for (long i = 0; i < work; i++) acc += 1e-9 * (double)i;
        out[0][0] = out[1][0] = acc + in[0][0] + in[1][0];
        MPI_Allreduce(&acc, &res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("halo1d %d ranks acc %g\n", size, res);
    MPI_Finalize();
    return 0;
}
