/* Message sizes that drift every step, as ECP CoMD's atom exchange (redistributeAtoms,
 * haloExchange.c) sends them: per step and dimension x, y, z, an MPI_Sendrecv to the minus
 * neighbour (receiving from the plus one) then one to the plus neighbour, each of the atoms
 * that crossed that face (a count that changes from step to step: 56 bytes an atom); the
 * ranks on a periodic line along x, themselves along y and z (CoMD -i P -j 1 -k 1).  Every
 * 10 steps the energies are summed (two allreduces), as CoMD's printRate does.
 * Usage: md_drift STEPS. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ATOM 56

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 100;
    int most = 600;
    char *snd = calloc((size_t)most, ATOM), *rcv = calloc((size_t)most, ATOM);
    double work = 0.0;
    for (int step = 0; step < steps; step++) {
        for (long j = 0; j < 400000L; j++) work += 1e-9 * (double)(j & 7);   /* the forces */
        for (int dim = 0; dim < 3; dim++) {
            int minus = dim == 0 ? (rank + size - 1) % size : rank;
            int plus = dim == 0 ? (rank + 1) % size : rank;
            for (int side = 0; side < 2; side++) {
                /* the atoms that crossed: slowly drifting with the step, alike on all ranks */
                int n = 400 + (step * 7 + dim * 31 + side * 17) % 97;
                MPI_Sendrecv(snd, n * ATOM, MPI_BYTE, side ? plus : minus, 0, rcv,
                             most * ATOM, MPI_BYTE, side ? minus : plus, 0, MPI_COMM_WORLD,
                             MPI_STATUS_IGNORE);
            }
        }
        if (step % 10 == 0) {
            double e[2] = {work, 1.0}, sum[2];
            int atoms = 1000, all;
            MPI_Allreduce(e, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            MPI_Allreduce(&atoms, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) printf("md_drift %d steps %g\n", steps, work);
    free(snd);
    free(rcv);
    MPI_Finalize();
    return 0;
}
