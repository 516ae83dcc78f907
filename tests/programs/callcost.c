/* One rank, no network: ns per call of MPI_Comm_size and of an 8-byte MPI_Sendrecv to self,
 * so that the shim's own cost per call is measured without ping-pong latency noise. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000000, size, rank;
    double x = 1, y;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double t0 = MPI_Wtime();
    for (int i = 0; i < n; i++) MPI_Comm_size(MPI_COMM_WORLD, &size);
    double t1 = MPI_Wtime();
    for (int i = 0; i < n; i++)
        MPI_Sendrecv(&x, 1, MPI_DOUBLE, rank, 0, &y, 1, MPI_DOUBLE, rank, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    double t2 = MPI_Wtime();
    printf("comm_size_ns %.3f\nsendrecv_ns %.3f\n", (t1 - t0) / n * 1e9, (t2 - t1) / n * 1e9);
    MPI_Finalize();
    return 0;
}
