/* Conjugate gradient on a 3-D 7-point Laplacian, the grid split in z slabs: each matrix-vector
 * product exchanges one halo plane with each neighbour (Irecv/Isend/Waitall), each iteration reduces
 * two dot products (MPI_Allreduce of one double).
 * Usage: mpiexec -n P ./cg3d [N=64] [ITERATIONS=100]   (N^3 points in all) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int n, nz, rank, size;
#define IDX(i, j, k) (((size_t)(k) * n + (j)) * n + (i))

static void halo(double *x) {
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    size_t plane = (size_t)n * n;
    MPI_Request req[4];
    MPI_Irecv(x, (int)plane, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(x + (size_t)(nz + 1) * plane, (int)plane, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(x + plane, (int)plane, MPI_DOUBLE, up, 0, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(x + (size_t)nz * plane, (int)plane, MPI_DOUBLE, down, 1, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
}

static void matvec(double *x, double *y) {   /* y = A x, x with halo planes 0 and nz+1 */
    halo(x);
    for (int k = 1; k <= nz; k++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                double s = 6.0 * x[IDX(i, j, k)] - x[IDX(i, j, k - 1)] - x[IDX(i, j, k + 1)];
                if (i > 0) s -= x[IDX(i - 1, j, k)];
                if (i < n - 1) s -= x[IDX(i + 1, j, k)];
                if (j > 0) s -= x[IDX(i, j - 1, k)];
                if (j < n - 1) s -= x[IDX(i, j + 1, k)];
                y[IDX(i, j, k)] = s;
            }
}

static double dot(const double *a, const double *b) {
    double local = 0.0, global;
    size_t plane = (size_t)n * n;
    for (size_t p = plane; p < plane * (nz + 1); p++) local += a[p] * b[p];
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return global;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    n = argc > 1 ? atoi(argv[1]) : 64;
    int iters = argc > 2 ? atoi(argv[2]) : 100;
    nz = n / size + (rank < n % size);
    size_t total = (size_t)n * n * (nz + 2);
    double *x = calloc(total, sizeof *x), *r = calloc(total, sizeof *r), *p = calloc(total, sizeof *p),
           *q = calloc(total, sizeof *q);
    size_t plane = (size_t)n * n;
    for (size_t i = plane; i < plane * (nz + 1); i++) r[i] = p[i] = 1.0; /* b = 1, x0 = 0 */
    double rr = dot(r, r);
    for (int it = 0; it < iters; it++) {
        matvec(p, q);
        double alpha = rr / dot(p, q);
        for (size_t i = plane; i < plane * (nz + 1); i++) { x[i] += alpha * p[i]; r[i] -= alpha * q[i]; }
        double rr_new = dot(r, r);
        for (size_t i = plane; i < plane * (nz + 1); i++) p[i] = r[i] + rr_new / rr * p[i];
        rr = rr_new;
    }
    if (rank == 0) printf("cg3d: n=%d iterations=%d ranks=%d residual=%e\n", n, iters, size, rr);
    free(x); free(r); free(p); free(q);
    MPI_Finalize();
    return 0;
}
