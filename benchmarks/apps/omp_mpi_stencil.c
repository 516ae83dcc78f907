/* An MPI+OpenMP 1-D Jacobi stencil: each rank holds BLOCKS blocks of BLOCK_SIZE doubles; every
 * step exchanges halos with its two neighbours (MPI_Sendrecv, periodic ring, outside the
 * parallel region: MPI_THREAD_FUNNELED), then runs SUBSTEPS sweeps as OpenMP tasks, one per
 * block and sweep, each depending on its block and its two neighbours of the previous sweep
 * (double buffering).  For minitrace's hybrid recording (record --openmp -- mpiexec ...).
 * Usage: omp_mpi_stencil [BLOCKS] [BLOCK_SIZE] [STEPS] [SUBSTEPS]
 * Per rank and parallel region, the task graph is known: sweep s > 0's task on block i depends
 * on sweep s-1's tasks on blocks i-1, i, i+1 (those that exist); none across regions. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int nb = argc > 1 ? atoi(argv[1]) : 4, bs = argc > 2 ? atoi(argv[2]) : 4096;
    int steps = argc > 3 ? atoi(argv[3]) : 2, sub = argc > 4 ? atoi(argv[4]) : 2;
    double **u[2], halo[2] = {0, 0};
    for (int s = 0; s < 2; s++) {
        u[s] = malloc(sizeof(double *) * nb);
        for (int i = 0; i < nb; i++) {
            u[s][i] = malloc(sizeof(double) * bs);
            for (int x = 0; x < bs; x++) u[s][i][x] = (rank * nb * bs + i * bs + x) % 7;
        }
    }
    int left = (rank + size - 1) % size, right = (rank + 1) % size, cur = 0;
    double t0 = MPI_Wtime();
    for (int t = 0; t < steps; t++) {
        /* halos: my first value to the left, my last to the right */
        MPI_Sendrecv(&u[cur][0][0], 1, MPI_DOUBLE, left, 0, &halo[1], 1, MPI_DOUBLE, right, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[cur][nb - 1][bs - 1], 1, MPI_DOUBLE, right, 1, &halo[0], 1,
                     MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        #pragma omp parallel
        #pragma omp single
        for (int s = 0; s < sub; s++) {
            double **src = u[(cur + s) % 2], **dst = u[(cur + s + 1) % 2];
            for (int i = 0; i < nb; i++) {
                double *l = src[i > 0 ? i - 1 : i], *c = src[i], *r = src[i < nb - 1 ? i + 1 : i];
                double *o = dst[i];
                double lh = i == 0 ? halo[0] : l[bs - 1], rh = i == nb - 1 ? halo[1] : r[0];
                #pragma omp task depend(in: l[0:bs], c[0:bs], r[0:bs]) depend(out: o[0:bs]) \
                    firstprivate(lh, rh)
                {
                    o[0] = (lh + c[0] + c[1]) / 3;
                    for (int x = 1; x < bs - 1; x++) o[x] = (c[x - 1] + c[x] + c[x + 1]) / 3;
                    o[bs - 1] = (c[bs - 2] + c[bs - 1] + rh) / 3;
                }
            }
        }
        cur = (cur + sub) % 2;
    }
    double t1 = MPI_Wtime(), sum = 0, total = 0;
    for (int i = 0; i < nb; i++) sum += u[cur][i][bs / 2];
    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("region %.6f s, ranks %d, blocks %d x %d, steps %d x %d, checksum %.6f, "
               "threads %d\n", t1 - t0, size, nb, bs, steps, sub, total, omp_get_max_threads());
    MPI_Finalize();
    return 0;
}
