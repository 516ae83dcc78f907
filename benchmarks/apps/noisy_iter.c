/* An iterative program with known injected noise, for the replicas' coverage study
 * (benchmarks/bench_replica_coverage.py): every rank computes, in each of N iterations, for a
 * CPU time drawn from a Pareto law (scale MEAN*(A-1)/A, shape A: mean MEAN, heavy right tail),
 * then exchanges a halo with its neighbours and joins an allreduce.  Each run draws from its
 * own seed (time and rank), so repeated runs differ as a noisy machine's would.
 * Usage: noisy_iter [N=300] [MEAN_US=1000] [A=2.5] */
#include <mpi.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static uint64_t state;
static double uniform(void) {             /* xorshift64*, in (0, 1) */
    state ^= state >> 12; state ^= state << 25; state ^= state >> 27;
    return ((state * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0) + 1e-17;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 300;
    double mean = (argc > 2 ? atof(argv[2]) : 1000.0) * 1e-6;
    double a = argc > 3 ? atof(argv[3]) : 2.5;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    state = (uint64_t)ts.tv_nsec * 6364136223846793005ULL + (uint64_t)ts.tv_sec + 977u * rank + 1;
    double xm = mean * (a - 1) / a;
    static char out[8192], in[8192];
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double sum = 0, x = 1;
    for (int i = 0; i < n; i++) {
        double d = xm / pow(uniform(), 1.0 / a), t0 = cpu_now();
        while (cpu_now() - t0 < d) x = x * 1.0000001 + 1e-9;
        MPI_Sendrecv(out, sizeof out, MPI_BYTE, right, 0, in, sizeof in, MPI_BYTE, left, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0 && sum < 0) printf("%g\n", sum);
    MPI_Finalize();
    return 0;
}
