/* Collectives on an intercommunicator (QA of session 31: their roots and sizes were lost
 * through OTF2).  4 ranks: the even and the odd ranks (Comm_split by parity) joined by
 * Intercomm_create (tag 99); a Bcast of 4 ints from world rank 0 (local rank 0 of the even
 * group passes MPI_ROOT, world rank 2 MPI_PROC_NULL, the odd ranks root 0), a Reduce of 2
 * doubles to world rank 1 (the odd group's root), an Allreduce of 3 ints, a Barrier, a
 * Gather of 1 int to world rank 0 and an Ibcast of 8 bytes from world rank 1 completed by a
 * Wait. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, lrank, v[4] = {1, 2, 3, 4}, x[3] = {1, 1, 1}, y[3], g[4];
    double d[2] = {1, 2}, e[2];
    char c[8] = "abcdefg";
    MPI_Comm half, inter;
    MPI_Request q;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &lrank);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 99, &inter);
    int even = rank % 2 == 0;
    int from_even = even ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int to_odd = even ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL);
    MPI_Bcast(v, 4, MPI_INT, from_even, inter);
    MPI_Reduce(d, e, 2, MPI_DOUBLE, MPI_SUM, to_odd, inter);
    MPI_Allreduce(x, y, 3, MPI_INT, MPI_SUM, inter);
    MPI_Barrier(inter);
    MPI_Gather(&rank, 1, MPI_INT, g, 1, MPI_INT, from_even, inter);
    MPI_Ibcast(c, 8, MPI_CHAR, to_odd, inter, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
    printf("intercoll rank %d %d %d\n", rank, v[3], y[0]);
    MPI_Finalize();
    return 0;
}
