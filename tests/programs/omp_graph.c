/* A task graph known in advance, for the OMPT recorder's test: six tasks on three arrays of
 * different sizes (A 800 B, B 1600 B, C 4000 B) with every dependence mode clang passes on.
 *   t1 out(A)  t2 out(B)  t3 in(A) inout(B)  t4 in(A)  t5 mutexinoutset(C)  t6 in(B) in(C)
 * Edges: t1->t3, t2->t3, t1->t4, t3->t6, t5->t6.  Each task spins 1 ms of its thread's CPU
 * time (what the recorder measures tasks in, however loaded the machine). */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <time.h>

static double A[100], B[200], C[500];

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void spin(double *x, int n) {
    double t = cpu_now();
    while (cpu_now() - t < 1e-3)
        for (int i = 0; i < n; i++) x[i] += 1e-9;
}

int main(void) {
    #pragma omp parallel
    #pragma omp single
    {
        #pragma omp task depend(out: A)
        spin(A, 100);
        #pragma omp task depend(out: B)
        spin(B, 200);
        #pragma omp task depend(in: A) depend(inout: B)
        spin(B, 200);
        #pragma omp task depend(in: A)
        spin(C, 1);
        #pragma omp task depend(mutexinoutset: C)
        spin(C, 500);
        #pragma omp task depend(in: B, C)
        spin(A, 1);
        #pragma omp taskwait
    }
    printf("%g\n", A[0] + B[0] + C[0]);
    return 0;
}
