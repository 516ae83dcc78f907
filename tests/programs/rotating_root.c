/* A broadcast down a binomial tree by MPI_Send and MPI_Recv whose root moves on by one rank at
 * each step, as public HPL broadcasts each panel from the process column that owns it (panel
 * k from column k mod Q): at step k rank r is node (r - k) mod P of the tree, so each rank
 * runs the roles in another order, a program of its own (tests/test_extrapolate_phases.py). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int rank, size, steps = argc > 1 ? atoi(argv[1]) : 12;
    double buf[512] = {0};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int k = 0; k < steps; k++) {
        int root = k % size, me = (rank - root + size) % size, mask = 1;
        if (rank == root) buf[0] = k;
        while (mask < size) {                     /* receive from the parent */
            if (me & mask) {
                MPI_Recv(buf, 512, MPI_DOUBLE, (rank - mask + size) % size, 9001,
                         MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                break;
            }
            mask <<= 1;
        }
        for (mask >>= 1; mask > 0; mask >>= 1)   /* send to the children */
            if (me + mask < size)
                MPI_Send(buf, 512, MPI_DOUBLE, (rank + mask) % size, 9001, MPI_COMM_WORLD);
        for (int i = 0; i < 512; i++) buf[i] = buf[i] * 0.5 + i;
    }
    if (rank == 0) printf("%g\n", buf[1]);
    MPI_Finalize();
    return 0;
}
