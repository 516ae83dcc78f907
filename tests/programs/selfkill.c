/* Rank 1 sends to rank 0 forever; after K sends it writes K to argv[2] and SIGKILLs itself.
 * Rank 0 receives with MPI_ANY_SOURCE until it is killed by the launcher. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int k = atoi(argv[1]), rank, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        for (int i = 0;; i++) {
            if (i == k) {
                FILE *f = fopen(argv[2], "w");
                fprintf(f, "%d\n", i);
                fclose(f);
                raise(SIGKILL);
            }
            MPI_Send(&i, 1, MPI_INT, 0, i % 5, MPI_COMM_WORLD);
        }
    } else if (rank == 0) {
        for (;;) MPI_Recv(&x, 1, MPI_INT, 1, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
