/* The v-collectives on a communicator split from MPI_COMM_WORLD (all ranks, as the Intel MPI
 * Benchmarks run every benchmark), with per-member counts that differ: gatherv, scatterv,
 * allgatherv, reduce_scatter, igatherv, and an alltoallv whose exchange is not uniform. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm sub;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &sub);
    MPI_Comm_size(sub, &P);
    int *a = calloc(4096, sizeof(int)), *b = calloc(4096, sizeof(int));
    int sc[16], rc[16], sd[16], rd[16];
    for (int i = 0; i < P; i++) { rc[i] = 2 * i + 1; rd[i] = i * 16; }
    MPI_Gatherv(a, 2 * rank + 1, MPI_INT, b, rc, rd, MPI_INT, 0, sub);
    for (int i = 0; i < P; i++) { sc[i] = i + 2; sd[i] = i * 16; }
    MPI_Scatterv(a, sc, sd, MPI_INT, b, rank + 2, MPI_INT, P - 1, sub);
    for (int i = 0; i < P; i++) { rc[i] = i + 3; rd[i] = i * 16; }
    MPI_Allgatherv(a, rank + 3, MPI_INT, b, rc, rd, MPI_INT, sub);
    for (int i = 0; i < P; i++) rc[i] = i + 1;
    MPI_Reduce_scatter(a, b, rc, MPI_INT, MPI_SUM, sub);
    MPI_Request q;
    for (int i = 0; i < P; i++) { rc[i] = 3 * i + 1; rd[i] = i * 16; }
    MPI_Igatherv(a, 3 * rank + 1, MPI_INT, b, rc, rd, MPI_INT, 1 % P, sub, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    /* rank r sends (r + 2j) % 3 + 1 ints to j: not proportional to the totals */
    for (int j = 0; j < P; j++) { sc[j] = (rank + 2 * j) % 3 + 1; rc[j] = (j + 2 * rank) % 3 + 1;
                                  sd[j] = rd[j] = 64 * j; }
    MPI_Alltoallv(a, sc, sd, MPI_INT, b, rc, rd, MPI_INT, sub);
    printf("vcolls_sub rank %d ok\n", rank);
    MPI_Comm_free(&sub);
    MPI_Finalize();
    return 0;
}
