/* A pipeline (rank r sends to r + 1 each step) whose result is reduced to the last rank
 * (MPI_Reduce's root size - 1), as public PRK MPI1 Synch_p2p reduces to its "final" rank:
 * the root is the last rank at every scale (tests/test_extrapolate_recorded.py). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size;
    double v[256] = {0}, t = 0, tmax;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int it = 0; it < 20; it++) {
        if (rank > 0)
            MPI_Recv(v, 256, MPI_DOUBLE, rank - 1, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < 256; i++) v[i] = v[i] * 0.5 + i;
        if (rank < size - 1) MPI_Send(v, 256, MPI_DOUBLE, rank + 1, it, MPI_COMM_WORLD);
        t += v[0];
    }
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1) printf("%g\n", tmax);
    MPI_Finalize();
    return 0;
}
