/* Tiled LU factorization without pivoting (right-looking; the matrix is diagonally dominant)
 * with OpenMP tasks and depend clauses on whole tiles: GETRF, the two TRSMs and GEMM written
 * out (no BLAS), for minitrace's task recorder and simulator (benchmarks/bench_tasks.py,
 * tests/test_tasks_lu.py).  Usage: omp_lu [TILES] [TILE_SIZE]
 * Step k: getrf(Akk) inout Akk; for j > k trsm_u(Akk, Akj) in Akk inout Akj; for i > k
 * trsm_l(Akk, Aik) in Akk inout Aik; for i, j > k gemm(Aik, Akj, Aij) in Aik, Akj inout Aij.
 * Prints the task region's wall time and process CPU time (s) and a residual check. */
#define _GNU_SOURCE
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int nt = 8, b = 128;
#define T(i, j) (A[(size_t)(i) * nt + (j)])

static void getrf(double *a) {   /* a = L U in place, unit lower L */
    for (int k = 0; k < b; k++)
        for (int i = k + 1; i < b; i++) {
            a[i * b + k] /= a[k * b + k];
            for (int j = k + 1; j < b; j++) a[i * b + j] -= a[i * b + k] * a[k * b + j];
        }
}

static void trsm_u(const double *lu, double *a) {   /* a = L^-1 a (L unit lower of lu) */
    for (int k = 0; k < b; k++)
        for (int i = k + 1; i < b; i++)
            for (int j = 0; j < b; j++) a[i * b + j] -= lu[i * b + k] * a[k * b + j];
}

static void trsm_l(const double *lu, double *a) {   /* a = a U^-1 (U upper of lu) */
    for (int i = 0; i < b; i++)
        for (int k = 0; k < b; k++) {
            a[i * b + k] /= lu[k * b + k];
            for (int j = k + 1; j < b; j++) a[i * b + j] -= a[i * b + k] * lu[k * b + j];
        }
}

static void gemm(const double *l, const double *u, double *c) {   /* c -= l u */
    for (int i = 0; i < b; i++)
        for (int k = 0; k < b; k++) {
            double x = l[i * b + k];
            for (int j = 0; j < b; j++) c[i * b + j] -= x * u[k * b + j];
        }
}

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double entry(int gi, int gj, int n) { return (gi == gj ? n : 0) + 1.0 / (1 + abs(gi - gj) + gi % 3); }

int main(int argc, char **argv) {
    if (argc > 1) nt = atoi(argv[1]);
    if (argc > 2) b = atoi(argv[2]);
    double **A = malloc(sizeof(double *) * nt * nt);
    int n = nt * b;
    for (int i = 0; i < nt; i++)
        for (int j = 0; j < nt; j++) {
            T(i, j) = malloc(sizeof(double) * b * b);
            for (int x = 0; x < b; x++)
                for (int y = 0; y < b; y++) T(i, j)[x * b + y] = entry(i * b + x, j * b + y, n);
        }
    double t0 = omp_get_wtime(), c0 = cpu_now();
    #pragma omp parallel
    #pragma omp single
    for (int k = 0; k < nt; k++) {
        double *akk = T(k, k);
        #pragma omp task depend(inout: akk[0:b*b])
        getrf(akk);
        for (int j = k + 1; j < nt; j++) {
            double *akj = T(k, j);
            #pragma omp task depend(in: akk[0:b*b]) depend(inout: akj[0:b*b])
            trsm_u(akk, akj);
        }
        for (int i = k + 1; i < nt; i++) {
            double *aik = T(i, k);
            #pragma omp task depend(in: akk[0:b*b]) depend(inout: aik[0:b*b])
            trsm_l(akk, aik);
        }
        for (int i = k + 1; i < nt; i++)
            for (int j = k + 1; j < nt; j++) {
                double *aik = T(i, k), *akj = T(k, j), *aij = T(i, j);
                #pragma omp task depend(in: aik[0:b*b], akj[0:b*b]) depend(inout: aij[0:b*b])
                gemm(aik, akj, aij);
            }
    }
    double t1 = omp_get_wtime(), c1 = cpu_now();
    /* check: row 0 of L U (L's row 0 is e0: U's row 0) and column 0 (L's column 0 times U00) */
    double err = 0;
    for (int y = 0; y < n; y++) {
        double row = T(0, y / b)[y % b], col = T(y / b, 0)[(y % b) * b] * (y ? T(0, 0)[0] : 1);
        err = fmax(err, fabs(row - entry(0, y, n)) + fabs(col - entry(y, 0, n)));
    }
    printf("region %.6f s, cpu %.6f s, tiles %d x %d, residual %.2e, threads %d\n", t1 - t0,
           c1 - c0, nt, b, err, omp_get_max_threads());
    return err < 1e-9 * n ? 0 : 1;
}
