/* AMR-like irregular exchange: every 5 iterations the "mesh" is refined, so each rank's set of
 * neighbours and the size of each message change; within a refinement period the exchange
 * repeats (Irecv from each neighbour, Isend to each, Waitall), then a load-balance Allreduce
 * and, at each refinement, an Alltoall of block counts.  argv: iterations (default 20). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define MAXN 8
int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 20;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static double out[MAXN][4096], in[MAXN][4096];
    int *counts = calloc((size_t)size, sizeof(int)), *got = calloc((size_t)size, sizeof(int));
    double load = 0;
    for (int it = 0; it < iters; it++) {
        int level = it / 5;                   /* refinement level: neighbours and sizes */
        int nn = 1 + level % (size - 1 < 1 ? 1 : size - 1 > MAXN ? MAXN : size - 1);
        if (it % 5 == 0) {
            for (int p = 0; p < size; p++) counts[p] = (rank + p + level) % 7;
            MPI_Alltoall(counts, 1, MPI_INT, got, 1, MPI_INT, MPI_COMM_WORLD);
        }
        MPI_Request req[2 * MAXN];
        int k = 0;
        /* rank sends to rank + d and receives from rank - d, d = 1..nn; each sender's block
         * size depends on its rank and the level (the receiver posts the largest) */
        for (int d = 1; d <= nn && d < size; d++) {
            int to = (rank + d) % size, from = (rank - d + size) % size;
            int n = 256 * (1 + (level + d + rank) % 16);
            MPI_Irecv(in[d - 1], 4096, MPI_DOUBLE, from, d, MPI_COMM_WORLD, &req[k++]);
            MPI_Isend(out[d - 1], n, MPI_DOUBLE, to, d, MPI_COMM_WORLD, &req[k++]);
        }
        MPI_Waitall(k, req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < 20000 * (1 + rank % 3); i++) load += 1e-9 * i;
        double total;
        MPI_Allreduce(&load, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("amr done %g\n", load);
    free(counts);
    free(got);
    MPI_Finalize();
    return 0;
}
