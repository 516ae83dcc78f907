/* MPI_Comm_split whose color and key are laws of the rank (NPB FT's pattern): a split with
 * key = rank (color 0: the world), and the rows (color = r / d1, key = r % d1) and columns
 * (color = r % d1, key = r / d1) of MPI_Dims_create(P, 2)'s d0 x d1 grid, as FT makes its
 * row and column communicators from its grid coordinates; per step some work, an alltoall
 * on the world's split, an allreduce on the row, one on the column.  argv: steps (default 5). */
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 5;
    MPI_Init(&argc, &argv);
    int rank, size, dims[2] = {0, 0};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 2, dims);
    MPI_Comm all, row, col;
    MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &all);
    MPI_Comm_split(MPI_COMM_WORLD, rank / dims[1], rank % dims[1], &row);
    MPI_Comm_split(MPI_COMM_WORLD, rank % dims[1], rank / dims[1], &col);
    int n = 256;
    double *a = malloc(sizeof(double) * n * size), *b = malloc(sizeof(double) * n * size);
    for (int i = 0; i < n * size; i++) a[i] = rank + i;
    double sum = 0;
    for (int s = 0; s < steps; s++) {
        for (int k = 0; k < 200000; k++) sum += 1e-9 * (k % 7);
        MPI_Alltoall(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, all);
        for (int i = 0; i < n * size; i++) sum += b[i];
        MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, row);
        MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, col);
    }
    MPI_Comm_free(&col);
    MPI_Comm_free(&row);
    MPI_Comm_free(&all);
    free(a); free(b);
    MPI_Finalize();
    return sum < 0;
}
