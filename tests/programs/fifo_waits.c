/* Two exchanges completed in posting order across two arrays, as TeaLeaf's halo exchange does:
 * each rank of a ring posts left-right (isend, irecv into lr[]), tests it, posts up-down (into
 * ud[]), waits for left-right if the test found it incomplete, then for up-down.  The messages
 * are small: MPICH completes both isends at once and hands them one shared handle, so when the
 * first waitall comes the handle it holds has two live requests, the newer one up-down's.  Odd
 * ranks spin SPIN steps before sending (default 20000), so that their neighbours' tests find
 * left-right incomplete more often; with 0 every rank runs one program, and which of its tests
 * complete is the arrival order's choice.
 * usage: fifo_waits ITERATIONS [SPIN] */
#include <mpi.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 100, spin = argc > 2 ? atoi(argv[2]) : 20000;
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double out[2][8] = {{0}}, in[2][8];
    volatile double x = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Request lr[2], ud[2];
        int done;
        if (rank % 2)
            for (int i = 0; i < spin; i++) x += i * 1e-9;
        MPI_Isend(out[0], 8, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &lr[0]);
        MPI_Irecv(in[0], 8, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &lr[1]);
        MPI_Testall(2, lr, &done, MPI_STATUSES_IGNORE);
        MPI_Isend(out[1], 8, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &ud[0]);
        MPI_Irecv(in[1], 8, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &ud[1]);
        if (!done) MPI_Waitall(2, lr, MPI_STATUSES_IGNORE);
        MPI_Waitall(2, ud, MPI_STATUSES_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
