/* A program under an address-space limit (ulimit -v, RLIMIT_AS) that it nearly fills, as a job
 * sized to its nodes' limit does (tests/test_shim_limits.py).  argv[1]: the limit in MiB, set
 * before MPI_Init (0: none); argv[2]: MiB it maps after MPI_Init (malloc: one mapping);
 * argv[3] (optional): requests of an MPI_Waitall it makes then, MPI_REQUEST_NULL but the last
 * two (an irecv and an isend with the next rank), statuses ignored: 4 bytes a request for the
 * program (MPICH's handles), 76 for the recorder's scratch.
 * Prints "vm RANK KIB" (its VmSize after MPI_Init), "big RANK ok|failed" and, with argv[3],
 * "waitall RANK VALUE" (what the irecv got: the next rank's number). */
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
    long n = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
    if (n >= 2) {
        int size, got = -1;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        MPI_Request *r = malloc(sizeof(MPI_Request) * (size_t)n);
        for (long i = 0; i < n - 2; i++) r[i] = MPI_REQUEST_NULL;
        MPI_Irecv(&got, 1, MPI_INT, (rank + 1) % size, 3, MPI_COMM_WORLD, &r[n - 2]);
        MPI_Isend(&rank, 1, MPI_INT, (rank + size - 1) % size, 3, MPI_COMM_WORLD, &r[n - 1]);
        MPI_Waitall((int)n, r, MPI_STATUSES_IGNORE);
        printf("waitall %d %d\n", rank, got);
        free(r);
    }
    double x = rank, sum = 0;
    for (int i = 0; i < 3; i++) MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return p || !big ? 0 : 1;
}
