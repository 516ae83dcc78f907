/* An open line of ranks, each owning a block of n cells (n not a multiple of the ranks: the
 * low ranks own one cell more, as PRK Stencil's tiles), that each step computes on its block
 * and passes it to its right neighbour: rank r sends its own block's size and receives its
 * left neighbour's, so the message sizes tell the ranks apart by one cell.
 * Usage: uneven_blocks [cells [steps]] */
#include <mpi.h>
#include <stdlib.h>

static double work(int n)
{
    volatile double s = 0;
    for (int i = 0; i < n; i++) s += i * 1e-9;
    return s;
}

static int cells(int n, int P, int r)
{
    return n / P + (r < n % P);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1003, steps = argc > 2 ? atoi(argv[2]) : 5, P, me;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    int mine = cells(n, P, me), left = me > 0 ? cells(n, P, me - 1) : 0;
    double *block = calloc(mine, sizeof(double)), *got = calloc(left + 1, sizeof(double));
    for (int step = 0; step < steps; step++) {
        work(100 * mine);
        if (me > 0)
            MPI_Recv(got, left, MPI_DOUBLE, me - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (me < P - 1)
            MPI_Send(block, mine, MPI_DOUBLE, me + 1, 0, MPI_COMM_WORLD);
    }
    free(block);
    free(got);
    MPI_Finalize();
    return 0;
}
