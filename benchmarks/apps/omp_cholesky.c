/* Tiled Cholesky factorization (right-looking, lower) with OpenMP tasks and depend clauses on
 * whole tiles: POTRF, TRSM, SYRK, GEMM written out (no BLAS), for minitrace's task recorder
 * and simulator (benchmarks/bench_tasks.py).  Usage: omp_cholesky [TILES] [TILE_SIZE]
 * Prints the task region's wall time (s) and a residual check. */
#include <math.h>
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

static int nt = 8, b = 128;
#define T(i, j) (A[(size_t)(i) * nt + (j)])

static void potrf(double *a) {
    for (int k = 0; k < b; k++) {
        a[k * b + k] = sqrt(a[k * b + k]);
        for (int i = k + 1; i < b; i++) a[i * b + k] /= a[k * b + k];
        for (int j = k + 1; j < b; j++)
            for (int i = j; i < b; i++) a[i * b + j] -= a[i * b + k] * a[j * b + k];
    }
}

static void trsm(const double *l, double *a) {   /* a = a * l^-T */
    for (int i = 0; i < b; i++)
        for (int j = 0; j < b; j++) {
            double s = a[i * b + j];
            for (int k = 0; k < j; k++) s -= a[i * b + k] * l[j * b + k];
            a[i * b + j] = s / l[j * b + j];
        }
}

static void syrk(const double *a, double *c) {   /* c -= a a^T (lower) */
    for (int i = 0; i < b; i++)
        for (int j = 0; j <= i; j++) {
            double s = 0;
            for (int k = 0; k < b; k++) s += a[i * b + k] * a[j * b + k];
            c[i * b + j] -= s;
        }
}

static void gemm(const double *a, const double *bt, double *c) {   /* c -= a bt^T */
    for (int i = 0; i < b; i++)
        for (int j = 0; j < b; j++) {
            double s = 0;
            for (int k = 0; k < b; k++) s += a[i * b + k] * bt[j * b + k];
            c[i * b + j] -= s;
        }
}

int main(int argc, char **argv) {
    if (argc > 1) nt = atoi(argv[1]);
    if (argc > 2) b = atoi(argv[2]);
    double **A = malloc(sizeof(double *) * nt * nt);
    int n = nt * b;
    for (int i = 0; i < nt; i++)       /* symmetric, diagonally dominant */
        for (int j = 0; j < nt; j++) {
            T(i, j) = malloc(sizeof(double) * b * b);
            for (int x = 0; x < b; x++)
                for (int y = 0; y < b; y++) {
                    int gi = i * b + x, gj = j * b + y;
                    T(i, j)[x * b + y] = (gi == gj ? n : 0) + 1.0 / (1 + abs(gi - gj));
                }
        }
    double t0 = omp_get_wtime(), c0 = cpu_now();
    #pragma omp parallel
    #pragma omp single
    for (int k = 0; k < nt; k++) {
        double *akk = T(k, k);
        #pragma omp task depend(inout: akk[0:b*b])
        potrf(akk);
        for (int i = k + 1; i < nt; i++) {
            double *aik = T(i, k);
            #pragma omp task depend(in: akk[0:b*b]) depend(inout: aik[0:b*b])
            trsm(akk, aik);
        }
        for (int i = k + 1; i < nt; i++) {
            double *aik = T(i, k), *aii = T(i, i);
            #pragma omp task depend(in: aik[0:b*b]) depend(inout: aii[0:b*b])
            syrk(aik, aii);
            for (int j = k + 1; j < i; j++) {
                double *ajk = T(j, k), *aij = T(i, j);
                #pragma omp task depend(in: aik[0:b*b], ajk[0:b*b]) depend(inout: aij[0:b*b])
                gemm(aik, ajk, aij);
            }
        }
    }
    double t1 = omp_get_wtime(), c1 = cpu_now();
    /* check: the first column of L L^T (L00 times the first column of L) against A */
    double err = 0;
    for (int y = 0; y < n; y++) {
        double s = T(0, 0)[0] * T(y / b, 0)[(y % b) * b];
        double want = (y == 0 ? n : 0) + 1.0 / (1 + y);
        err = fmax(err, fabs(s - want));
    }
    printf("region %.6f s, cpu %.6f s, tiles %d x %d, residual %.2e, threads %d\n", t1 - t0, c1 - c0, nt, b, err,
           omp_get_max_threads());
    return err < 1e-6 ? 0 : 1;
}
