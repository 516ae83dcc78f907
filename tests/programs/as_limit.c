/* A program under an address-space limit (ulimit -v, RLIMIT_AS) that it nearly fills, as a job
 * sized to its nodes' limit does (tests/test_shim_limits.py).  argv[1]: the limit in MiB, set
 * before MPI_Init (0: none); argv[2]: MiB it maps after MPI_Init (malloc: one mapping).
 * Prints "vm RANK KIB" (its VmSize after MPI_Init) and "big RANK ok|failed". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

int main(int argc, char **argv) {
    unsigned long limit = strtoul(argv[1], NULL, 10), big = strtoul(argv[2], NULL, 10);
    if (limit) {
        struct rlimit r = {limit << 20, limit << 20};
        setrlimit(RLIMIT_AS, &r);
    }
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f && fscanf(f, "%lu", &pages) != 1) pages = 0;
    if (f) fclose(f);
    printf("vm %d %lu\n", rank, pages * 4);
    char *p = big ? malloc(big << 20) : NULL;
    if (p) memset(p, 1, big << 20);
    printf("big %d %s\n", rank, p || !big ? "ok" : "failed");
    free(p);
    double x = rank, sum = 0;
    for (int i = 0; i < 3; i++) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return p || !big ? 0 : 1;
}
