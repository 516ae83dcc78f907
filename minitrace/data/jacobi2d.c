/* A small 2-D Jacobi solver, the demo's traced application: the grid is split in row blocks,
 * each iteration exchanges halo rows with the neighbours (Isend/Irecv/Waitall), updates the
 * interior, and every 10 iterations reduces the residual (Allreduce).
 * Usage: mpiexec -n P ./jacobi2d [N=256] [ITERATIONS=100] */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 256, iters = argc > 2 ? atoi(argv[2]) : 100;
    int rows = n / size + (rank < n % size);
    double *u = calloc((size_t)(rows + 2) * n, sizeof *u), *v = calloc((size_t)(rows + 2) * n, sizeof *v);
    if (rank == 0) for (int j = 0; j < n; j++) u[n + j] = v[n + j] = 1.0; /* hot top edge */
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    double res = 0.0;
    for (int it = 0; it < iters; it++) {
        MPI_Request req[4];
        MPI_Irecv(u, n, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(u + (size_t)(rows + 1) * n, n, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(u + n, n, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &req[2]);
        MPI_Isend(u + (size_t)rows * n, n, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &req[3]);
        MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
        double local = 0.0;
        for (int i = 1; i <= rows; i++)
            for (int j = 1; j < n - 1; j++) {
                size_t k = (size_t)i * n + j;
                v[k] = 0.25 * (u[k - n] + u[k + n] + u[k - 1] + u[k + 1]);
                local += fabs(v[k] - u[k]);
            }
        if (rank == 0) for (int j = 0; j < n; j++) v[n + j] = 1.0;
        double *t = u; u = v; v = t;
        if (it % 10 == 9) MPI_Allreduce(&local, &res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("jacobi2d: n=%d iterations=%d ranks=%d residual=%.6e\n", n, iters, size, res);
    free(u); free(v);
    MPI_Finalize();
    return 0;
}
