/* NPB IS's exchange: each rank's random keys bucketed by destination, the counts by alltoall,
 * the keys by alltoallv, whose sizes depend on the data; then the data-dependent sizes of the
 * other vector collectives: an allgatherv, a gatherv and a scatterv at rank 0, and a
 * reduce_scatter of agreed counts.  argv: keys in all, iterations, and "neighbours" to send
 * the keys to the two neighbouring ranks only (a pattern of neighbours in an alltoallv), or
 * "split" to sum the counts on a communicator split from the world after the first exchange
 * (a split's entries among the vectors the extrapolation lays out again). */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    long total = argc > 1 ? atol(argv[1]) : 1 << 16;
    int iters = argc > 2 ? atoi(argv[2]) : 4;
    int neighbours = argc > 3 && !strcmp(argv[3], "neighbours");
    int split = argc > 3 && !strcmp(argv[3], "split");
    MPI_Comm sub = MPI_COMM_NULL;
    long n = total / P;
    int *keys = malloc(n * sizeof(int)), *got = malloc(2 * n * sizeof(int) + 64 * P);
    int *all = malloc((2 * n + 64) * P * sizeof(int));
    int *sc = calloc(P, sizeof(int)), *rc = calloc(P, sizeof(int));
    int *sd = calloc(P, sizeof(int)), *rd = calloc(P, sizeof(int));
    int *counts = calloc(P, sizeof(int)), *displs = calloc(P, sizeof(int));
    srand(rank + 1);
    for (int it = 0; it < iters; it++) {
        for (long i = 0; i < n; i++)
            keys[i] = rand() % (1 << 16);
        memset(sc, 0, P * sizeof(int));
        for (long i = 0; i < n; i++) {
            int to = (int)((long)keys[i] * P >> 16);
            if (neighbours)
                to = (rank + (keys[i] & 1 ? 1 : P - 1)) % P;
            sc[to]++;
        }
        MPI_Alltoall(sc, 1, MPI_INT, rc, 1, MPI_INT, MPI_COMM_WORLD);
        for (int p = 1; p < P; p++) {
            sd[p] = sd[p - 1] + sc[p - 1];
            rd[p] = rd[p - 1] + rc[p - 1];
        }
        MPI_Alltoallv(keys, sc, sd, MPI_INT, got, rc, rd, MPI_INT, MPI_COMM_WORLD);
        int mine = rd[P - 1] + rc[P - 1] - (int)n + 64;    /* a data-dependent count */
        if (mine < 1) mine = 1;
        MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
        for (int p = 1; p < P; p++)
            displs[p] = displs[p - 1] + counts[p - 1];
        MPI_Allgatherv(got, mine, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
        MPI_Gatherv(got, mine, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Scatterv(all, counts, displs, MPI_INT, got, mine, MPI_INT, 0, MPI_COMM_WORLD);
        MPI_Reduce_scatter(all, got, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (split && it == 0)        /* (after vectors whose sizes the target changes) */
            MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &sub);
        if (sub != MPI_COMM_NULL)
            MPI_Allreduce(MPI_IN_PLACE, &mine, 1, MPI_INT, MPI_SUM, sub);
    }
    if (sub != MPI_COMM_NULL)
        MPI_Comm_free(&sub);
    free(keys); free(got); free(all); free(sc); free(rc); free(sd); free(rd);
    free(counts); free(displs);
    MPI_Finalize();
    return 0;
}
