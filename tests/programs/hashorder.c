/* A 1-D halo whose ranks post their receives in an order that depends on the rank, as HPCCG's
 * neighbour list (built from a hash of matrix columns) makes them, receives the neighbours'
 * sizes from MPI_ANY_SOURCE first, as its set-up does, then iterates: irecv from each
 * neighbour, a blocking send to each, a wait per request in posting order, a reduction.
 * Usage: hashorder ITERATIONS N (doubles per halo, per rank: weak scaling). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 20, n = argc > 2 ? atoi(argv[2]) : 1000;
    int nb[2], k = 0;
    /* the "hash" order: right neighbour first on ranks where (7 r) mod 3 == 1 */
    int right_first = (7 * rank) % 3 == 1;
    if (right_first && rank + 1 < size) nb[k++] = rank + 1;
    if (rank > 0) nb[k++] = rank - 1;
    if (!right_first && rank + 1 < size) nb[k++] = rank + 1;
    double *buf = calloc((size_t)(2 + 2) * n, sizeof(double)), sum = 0.0;
    MPI_Request req[2];
    int sizes[2];
    for (int i = 0; i < k; i++)      /* set-up: how much each neighbour sends (any source) */
        MPI_Irecv(&sizes[i], 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &req[i]);
    for (int i = 0; i < k; i++) MPI_Send(&n, 1, MPI_INT, nb[i], 7, MPI_COMM_WORLD);
    for (int i = 0; i < k; i++) MPI_Wait(&req[i], MPI_STATUS_IGNORE);
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < k; i++)
            MPI_Irecv(buf + (size_t)(2 + i) * n, n, MPI_DOUBLE, nb[i], 9, MPI_COMM_WORLD, &req[i]);
        for (int i = 0; i < k; i++)
            MPI_Send(buf + (size_t)i * n, n, MPI_DOUBLE, nb[i], 9, MPI_COMM_WORLD);
        for (int i = 0; i < k; i++) MPI_Wait(&req[i], MPI_STATUS_IGNORE);
        for (int j = 0; j < 4 * n; j++) sum += buf[j] * 1e-9 + j;
        double local = sum, global;
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("%g\n", sum);
    free(buf);
    MPI_Finalize();
    return 0;
}
