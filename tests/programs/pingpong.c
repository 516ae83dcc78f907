/* Tight 8-byte ping-pong between ranks 0 and 1: prints ns per MPI call (each iteration is
 * one send and one receive per rank), measured with MPI_Wtime after a warm-up. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 100000, rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x = 0, t0 = 0;
    for (int i = 0; i < iters + 1000; i++) {
        if (i == 1000) { MPI_Barrier(MPI_COMM_WORLD); t0 = MPI_Wtime(); }
        if (rank == 0) {
            MPI_Send(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&x, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&x, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    if (rank == 0) printf("ns_per_call %.3f\n", t / (2.0 * iters) * 1e9);
    MPI_Finalize();
    return 0;
}
