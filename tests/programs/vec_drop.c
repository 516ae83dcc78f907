/* Calls whose records need large buffers of the recorder, between calls that need small ones
 * (tests/test_shim_limits.py): with MINITRACE_SCRATCH_MAX set low, or under an address-space
 * limit, the shim cannot have them, and the program must run as untraced all the same.
 * 2 ranks exchange with each other:
 *   a waitall of 2 (an irecv and an isend), as every halo exchange;
 *   a waitall of 2 x argv[1] (that many irecvs then isends, statuses ignored): its scratch is
 *   76 bytes a request under MPICH, its vector 8;
 *   an alltoallv (a vector of 4);
 *   a Cartesian communicator of argv[2] dimensions of 1 (a vector of 2 x argv[2] values; the
 *   ranks but 0 get MPI_COMM_NULL);
 *   the waitall of 2 again.
 * Prints "sum RANK S" (what the large exchange received: argv[1] * (argv[1] - 1) / 2 from the
 * other rank), "a2a RANK X Y" and "done RANK". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void pair(int peer) {
    int in = -1, out = peer;
    MPI_Request r[2];
    MPI_Irecv(&in, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &r[0]);
    MPI_Isend(&out, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, &r[1]);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int n = argc > 1 ? atoi(argv[1]) : 1000, ndims = argc > 2 ? atoi(argv[2]) : 300;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int peer = (rank + 1) % size;
    pair(peer);

    int *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
    MPI_Request *r = malloc(sizeof(MPI_Request) * 2 * (size_t)n);
    for (int i = 0; i < n; i++) {
        out[i] = i;
        MPI_Irecv(&in[i], 1, MPI_INT, peer, 2, MPI_COMM_WORLD, &r[i]);
    }
    for (int i = 0; i < n; i++) MPI_Isend(&out[i], 1, MPI_INT, peer, 2, MPI_COMM_WORLD, &r[n + i]);
    MPI_Waitall(2 * n, r, MPI_STATUSES_IGNORE);
    long long sum = 0;
    for (int i = 0; i < n; i++) sum += in[i];
    printf("sum %d %lld\n", rank, sum);

    int c[2] = {1, 1}, d[2] = {0, 1}, sb[2] = {rank, rank}, rb[2] = {-1, -1};
    MPI_Alltoallv(sb, c, d, MPI_INT, rb, c, d, MPI_INT, MPI_COMM_WORLD);
    printf("a2a %d %d %d\n", rank, rb[0], rb[1]);

    int *dims = malloc(sizeof(int) * (size_t)ndims), *periods = calloc((size_t)ndims, sizeof(int));
    for (int d = 0; d < ndims; d++) dims[d] = 1;
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &cart);
    if (cart != MPI_COMM_NULL) MPI_Comm_free(&cart);

    pair(peer);
    printf("done %d\n", rank);
    free(in), free(out), free(r), free(dims), free(periods);
    MPI_Finalize();
    return 0;
}
