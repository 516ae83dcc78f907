/* A periodic 1-D ring (MPI_Cart_create) whose halo sizes differ per rank and change every
 * `every` steps, as miniMD's ghost-atom counts after each reneighbouring: each rank picks a
 * new count from its rank and the block number and tells its right neighbour (a 4-byte
 * sendrecv), then each step computes and swaps that many doubles with a sendrecv.  Every
 * rank has the same calls and loops; only the message sizes tell the ranks apart.
 * Usage: ring_varsize [steps [every]] */
#include <mpi.h>
#include <stdlib.h>

static double work(int n)
{
    volatile double s = 0;
    for (int i = 0; i < n; i++) s += i * 1e-9;
    return s;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 60, every = argc > 2 ? atoi(argv[2]) : 20;
    int P, me, dims[1] = {0}, periods[1] = {1}, left, right, ns = 0, nr = 0;
    MPI_Comm ring;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Dims_create(P, 1, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    MPI_Comm_rank(ring, &me);
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    double *sb = calloc(2048, sizeof(double)), *rb = calloc(2048, sizeof(double));
    for (int step = 0; step < steps; step++) {
        if (step % every == 0) {                 /* "reneighbour": this rank's new size */
            ns = 1000 + (me * 7919 + (step / every) * 104729) % 97;
            MPI_Sendrecv(&ns, 1, MPI_INT, right, 0, &nr, 1, MPI_INT, left, 0, ring,
                         MPI_STATUS_IGNORE);
        }
        work(20000);
        MPI_Sendrecv(sb, ns, MPI_DOUBLE, right, 1, rb, nr, MPI_DOUBLE, left, 1, ring,
                     MPI_STATUS_IGNORE);
    }
    free(sb);
    free(rb);
    MPI_Comm_free(&ring);
    MPI_Finalize();
    return 0;
}
