/* Ring: each rank sends ROUNDS messages of 8*(rank+1) bytes to rank+1 with tag = round. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 3;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double buf[64] = {0};
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    for (int r = 0; r < rounds; r++) {
        if (rank == 0) {
            MPI_Send(buf, rank + 1, MPI_DOUBLE, next, r, MPI_COMM_WORLD);
            MPI_Recv(buf, 64, MPI_DOUBLE, prev, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, 64, MPI_DOUBLE, prev, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, rank + 1, MPI_DOUBLE, next, r, MPI_COMM_WORLD);
        }
    }
    printf("rank %d done\n", rank);
    MPI_Finalize();
    return 0;
}
