/* A 1-D Jacobi stencil in blocks, one task per block and step, each depending on its block
 * and its two neighbours of the previous step (double buffering), for minitrace's task
 * recorder and simulator.  Usage: omp_stencil [BLOCKS] [BLOCK_SIZE] [STEPS] [SWEEPS]
 * (SWEEPS: passes over a block per task, the task's work).  Prints the task region's time. */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {   /* the process's CPU time: the region's cost on a loaded machine */
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
    int nb = argc > 1 ? atoi(argv[1]) : 16, bs = argc > 2 ? atoi(argv[2]) : 32768;
    int steps = argc > 3 ? atoi(argv[3]) : 20, sweeps = argc > 4 ? atoi(argv[4]) : 4;
    double **u[2];
    for (int s = 0; s < 2; s++) {
        u[s] = malloc(sizeof(double *) * nb);
        for (int i = 0; i < nb; i++) {
            u[s][i] = malloc(sizeof(double) * bs);
            for (int x = 0; x < bs; x++) u[s][i][x] = (i * bs + x) % 7;
        }
    }
    double t0 = omp_get_wtime(), c0 = cpu_now();
    #pragma omp parallel
    #pragma omp single
    for (int t = 0; t < steps; t++) {
        double **src = u[t % 2], **dst = u[(t + 1) % 2];
        for (int i = 0; i < nb; i++) {
            double *l = src[i > 0 ? i - 1 : i], *c = src[i], *r = src[i < nb - 1 ? i + 1 : i];
            double *o = dst[i];
            #pragma omp task depend(in: l[0:bs], c[0:bs], r[0:bs]) depend(out: o[0:bs])
            for (int s = 0; s < sweeps; s++) {
                o[0] = (l[bs - 1] + c[0] + c[1]) / 3;
                for (int x = 1; x < bs - 1; x++) o[x] = (c[x - 1] + c[x] + c[x + 1]) / 3 + s * 1e-12;
                o[bs - 1] = (c[bs - 2] + c[bs - 1] + r[0]) / 3;
            }
        }
    }
    double t1 = omp_get_wtime(), c1 = cpu_now();
    double sum = 0;
    for (int i = 0; i < nb; i++) sum += u[steps % 2][i][bs / 2];
    printf("region %.6f s, cpu %.6f s, blocks %d x %d, steps %d, checksum %.6f, threads %d\n", t1 - t0, c1 - c0, nb,
           bs, steps, sum, omp_get_max_threads());
    return 0;
}
