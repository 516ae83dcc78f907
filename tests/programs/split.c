/* comm_split by parity (key = -rank: reversed order), a ring and an allreduce inside the
 * sub-communicator, then MPI_ANY_SOURCE receives on world rank 0 (blocking and Irecv). */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, srank, ssize;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &sub);
    MPI_Comm_rank(sub, &srank);
    MPI_Comm_size(sub, &ssize);
    int v = rank, w = 0;
    MPI_Sendrecv(&v, 1, MPI_INT, (srank + 1) % ssize, 7, &w, 1, MPI_INT,
                 (srank + ssize - 1) % ssize, 7, sub, MPI_STATUS_IGNORE);
    MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, sub);
    MPI_Comm_free(&sub);
    if (rank == 0) {
        int got[64];
        for (int i = 1; i < size; i++) MPI_Recv(got, 64, MPI_INT, MPI_ANY_SOURCE, 100,
                                                MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Request r[64];
        for (int i = 1; i < size; i++) MPI_Irecv(&got[i], 64, MPI_INT, MPI_ANY_SOURCE,
                                                 MPI_ANY_TAG, MPI_COMM_WORLD, &r[i - 1]);
        MPI_Waitall(size - 1, r, MPI_STATUSES_IGNORE);
    } else {
        int buf[64] = {0};
        MPI_Send(buf, rank, MPI_INT, 0, 100, MPI_COMM_WORLD);
        MPI_Send(buf, 2 * rank, MPI_INT, 0, 200 + rank, MPI_COMM_WORLD);
    }
    printf("split rank %d sum %d\n", rank, w);
    MPI_Finalize();
    return 0;
}
