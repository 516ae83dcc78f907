/* FFT-like all-to-all transpose: each rank owns N/P rows of an N x N complex-like (2 doubles)
 * matrix; each step transforms its rows (a few flops per element), then transposes the matrix
 * with MPI_Alltoall (block (i, j) goes to rank j) and reorders the received blocks.
 * Usage: mpiexec -n P ./transpose [N=512] [STEPS=20] */
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
    int n = argc > 1 ? atoi(argv[1]) : 512, steps = argc > 2 ? atoi(argv[2]) : 20;
    n -= n % size;
    int rows = n / size;
    size_t elems = (size_t)rows * n * 2;
    double *a = malloc(elems * sizeof *a), *send = malloc(elems * sizeof *a), *recv = malloc(elems * sizeof *a);
    for (size_t i = 0; i < elems; i++) a[i] = (double)((i * 2654435761u) % 1000) / 1000.0;
    int block = rows * rows * 2;
    for (int s = 0; s < steps; s++) {
        for (int r = 0; r < rows; r++)         /* "transform" each row: a twiddle rotation */
            for (int c = 0; c < n; c++) {
                double *z = a + ((size_t)r * n + c) * 2, w = 2.0 * M_PI * c / n;
                double re = z[0] * cos(w) - z[1] * sin(w), im = z[0] * sin(w) + z[1] * cos(w);
                z[0] = re * 0.999; z[1] = im * 0.999;
            }
        for (int p = 0; p < size; p++)         /* pack block p: rows x (columns of rank p) */
            for (int r = 0; r < rows; r++)
                memcpy(send + (size_t)p * block + (size_t)r * rows * 2,
                       a + ((size_t)r * n + (size_t)p * rows) * 2, rows * 2 * sizeof *a);
        MPI_Alltoall(send, block, MPI_DOUBLE, recv, block, MPI_DOUBLE, MPI_COMM_WORLD);
        for (int p = 0; p < size; p++)         /* transpose each received block into place */
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < rows; c++) {
                    double *dst = a + ((size_t)c * n + (size_t)p * rows + r) * 2;
                    const double *src = recv + (size_t)p * block + ((size_t)r * rows + c) * 2;
                    dst[0] = src[0]; dst[1] = src[1];
                }
    }
    double local = 0.0, global;
    for (size_t i = 0; i < elems; i++) local += a[i];
    MPI_Reduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("transpose: n=%d steps=%d ranks=%d checksum=%e\n", n, steps, size, global);
    free(a); free(send); free(recv);
    MPI_Finalize();
    return 0;
}
