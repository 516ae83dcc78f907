/* Embarrassingly parallel: each rank integrates its share of a Monte-Carlo estimate (a
 * xorshift generator, no memory traffic), one reduction at the end of every batch.
 * Usage: ep BATCHES SAMPLES_PER_BATCH */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int batches = argc > 1 ? atoi(argv[1]) : 20;
    long samples = argc > 2 ? atol(argv[2]) : 1000000;
    uint64_t x = 88172645463325252ULL + (uint64_t)rank * 7919;
    double total = 0;
    for (int b = 0; b < batches; b++) {
        long in = 0;
        for (long i = 0; i < samples; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            double u = (double)(x >> 11) * 0x1.0p-53;
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            double v = (double)(x >> 11) * 0x1.0p-53;
            in += u * u + v * v <= 1.0;
        }
        double mine = 4.0 * (double)in / (double)samples, sum;
        MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        total += sum;
    }
    if (rank == 0) printf("pi ~ %.6f\n", total / batches / size);
    MPI_Finalize();
    return 0;
}
