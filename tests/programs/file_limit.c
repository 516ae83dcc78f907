/* A program under a file-size limit (ulimit -f, RLIMIT_FSIZE) that its own files respect, as a
 * batch system's may set (tests/test_shim_limits.py): argv[1] the limit in MiB, set before
 * MPI_Init; argv[2] MPI calls made after it.  Prints "done RANK" at the end. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

int main(int argc, char **argv) {
    unsigned long limit = strtoul(argv[1], NULL, 10);
    long n = atol(argv[2]);
    struct rlimit r = {limit << 20, limit << 20};
    setrlimit(RLIMIT_FSIZE, &r);
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (long i = 0; i < n; i++) MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("done %d\n", rank);
    MPI_Finalize();
    return 0;
}
