/* A ping-pong swept over 150 message sizes, 5 repetitions each (the Intel MPI Benchmarks'
 * pattern): 150 loops, each under 1% of a rank's actions. */
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = calloc(150 * 8, 1);
    for (int s = 1; s <= 150; s++)
        for (int i = 0; i < 5; i++) {
            if (rank == 0) {
                MPI_Send(buf, 8 * s, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, 8 * s, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, 8 * s, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, 8 * s, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
            }
        }
    free(buf);
    MPI_Finalize();
    return 0;
}
