/* A taskwait and a taskgroup whose waits OpenMP defines exactly (simulator test), in order:
 *   T2 { G2 }; taskwait        waits for the child T2, not for the grandchild G2
 *   M; taskwait                waits for M
 *   L; taskgroup { T { G } }   waits for T and its descendant G, not for L (created before)
 *   N; taskwait                waits for the children N and L, not for G2
 * Each task spins 1 ms of its thread's CPU time (what the recorder measures). */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static void spin(double ms) {
    double t = cpu_now();
    volatile double x = 0;
    while (cpu_now() - t < ms * 1e-3) x += 1;
}

int main(void) {
    #pragma omp parallel
    #pragma omp single
    {
        #pragma omp task
        {                              /* T2 */
            #pragma omp task
            spin(1);                   /* G2 */
        }
        #pragma omp taskwait
        #pragma omp task
        spin(1);                       /* M */
        #pragma omp taskwait
        #pragma omp task
        spin(1);                       /* L */
        #pragma omp taskgroup
        {
            #pragma omp task
            {                          /* T */
                spin(1);
                #pragma omp task
                spin(1);               /* G */
            }
        }
        #pragma omp task
        spin(1);                       /* N */
        #pragma omp taskwait
    }
    printf("done\n");
    return 0;
}
