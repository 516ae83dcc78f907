/* Reduces of a small and a large vector to rank 0 between computes, as public PRK's MPI1
 * Reduce does (its vectors of 8 MiB: MPICH's reduce faults in fresh pages of its temporary
 * buffers at every call on the ranks that are not the root).
 * Usage: reduce_sizes REPS (each rep: a reduce of 64 KiB, then one of 1 MiB). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int reps = argc > 1 ? atoi(argv[1]) : 4;
    const int sizes[2] = {8192, 131072};                 /* doubles: 64 KiB, 1 MiB */
    double *v = malloc(131072 * sizeof(double)), *sum = malloc(131072 * sizeof(double));
    for (int i = 0; i < 131072; i++) v[i] = rank + 1.0;
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < sizes[k]; i++) v[i] += 1.0;
            MPI_Reduce(v, sum, sizes[k], MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        }
    if (rank == 0) printf("%g\n", sum[0]);
    free(v);
    free(sum);
    MPI_Finalize();
    return 0;
}
