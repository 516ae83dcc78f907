/* Every collective once on MPI_COMM_WORLD (plus a few non-blocking and in-place forms).
 * Counts are chosen so that each rank's bytes are distinct and checkable. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int *a = calloc(4096, sizeof(int)), *b = calloc(4096, sizeof(int));
    int sc[16], rc[16], sd[16], rd[16], root = P - 1;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(a, 10, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Reduce(a, b, 7, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Allreduce(a, b, 5, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, b, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < P; i++) rc[i] = i + 1;
    MPI_Reduce_scatter(a, b, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce_scatter_block(a, b, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Scan(a, b, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(a, b, 6, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Gather(a, 3, MPI_INT, b, 3, MPI_INT, 1, MPI_COMM_WORLD);
    for (int i = 0; i < P; i++) { rc[i] = 2 * i + 1; rd[i] = i * 16; }
    MPI_Gatherv(a, 2 * rank + 1, MPI_INT, b, rc, rd, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Scatter(a, 5, MPI_INT, b, 5, MPI_INT, 0, MPI_COMM_WORLD);
    for (int i = 0; i < P; i++) { sc[i] = i + 2; sd[i] = i * 16; }
    MPI_Scatterv(a, sc, sd, MPI_INT, b, rank + 2, MPI_INT, root, MPI_COMM_WORLD);
    MPI_Allgather(a, 4, MPI_INT, b, 4, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < P; i++) { rc[i] = i + 3; rd[i] = i * 16; }
    MPI_Allgatherv(a, rank + 3, MPI_INT, b, rc, rd, MPI_INT, MPI_COMM_WORLD);
    MPI_Alltoall(a, 2, MPI_INT, b, 2, MPI_INT, MPI_COMM_WORLD);
    /* alltoallv: rank r sends (r+1)*(j+1) ints to j, so receives (j+1)*(r+1) from j */
    for (int j = 0; j < P; j++) { sc[j] = (rank + 1) * (j + 1); rc[j] = (j + 1) * (rank + 1);
                                  sd[j] = rd[j] = 64 * j; }
    MPI_Alltoallv(a, sc, sd, MPI_INT, b, rc, rd, MPI_INT, MPI_COMM_WORLD);
    MPI_Datatype st[16], rt[16];
    for (int j = 0; j < P; j++) { st[j] = rt[j] = MPI_DOUBLE; sd[j] = rd[j] = 256 * j; }
    MPI_Alltoallw(a, sc, sd, st, b, rc, rd, rt, MPI_COMM_WORLD);
    MPI_Request r[3];
    MPI_Ibarrier(MPI_COMM_WORLD, &r[0]);
    MPI_Ibcast(a, 9, MPI_INT, 0, MPI_COMM_WORLD, &r[1]);
    MPI_Iallreduce(a, b, 11, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[2]);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    MPI_Request one;
    MPI_Ialltoallv(a, sc, sd, MPI_INT, b, rc, rd, MPI_INT, MPI_COMM_WORLD, &one);
    MPI_Wait(&one, MPI_STATUS_IGNORE);
    printf("colls rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
