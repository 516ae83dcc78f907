/* MPI-4 non-blocking sendrecv on 3 ranks: a ring Isendrecv (8 ints to the right, tag 4, from
 * the left, tag 4) + Wait, then an Isendrecv_replace of 2 doubles to the left (tag 6) from the
 * right (tag 6) + Waitall; with argument "wild", received from MPI_ANY_SOURCE / MPI_ANY_TAG. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, out[8] = {0}, in[8], wild = argc > 1 && !strcmp(argv[1], "wild");
    double d[2] = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request req;
    MPI_Isendrecv(out, 8, MPI_INT, right, 4, in, 8, MPI_INT, left, 4, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Isendrecv_replace(d, 2, MPI_DOUBLE, left, 6, wild ? MPI_ANY_SOURCE : right,
                          wild ? MPI_ANY_TAG : 6, MPI_COMM_WORLD, &req);
    MPI_Waitall(1, &req, MPI_STATUSES_IGNORE);
    printf("isendrecv rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
