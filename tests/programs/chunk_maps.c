/* How much of the recording's raw file the rank has mapped after argv[1] MPI calls
 * (tests/test_shim_limits.py): the header and each chunk mapped (the current one, those the
 * shim's helper keeps ready, spent ones not yet given back).  Prints "mapped RANK KIB". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    long n = atol(argv[1]);
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (long i = 0; i < n; i++) MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned long kib = 0, lo, hi;
    char line[4096];
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, ".mtr") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) kib += (hi - lo) >> 10;
    if (f) fclose(f);
    printf("mapped %d %lu\n", rank, kib);
    MPI_Finalize();
    return 0;
}
