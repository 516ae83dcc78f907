/* A periodic ring exchanged with MPI_Sendrecv, as LAMMPS and miniMD swap their atoms: per
 * iteration a sendrecv to the right from the left (tag 0), one to the left from the right (tag
 * 1), a compute and an allreduce.  The source is rank - 1 mod P, so it must be extrapolated as
 * a neighbour, not as the stored (source - rank) mod P.  argv: iterations, work per rank,
 * distance (default 1; 2: to rank + 2 from rank - 2, one rank at 4 ranks). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define HALO 512
int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 6;
    long work = argc > 2 ? atol(argv[2]) : 200000;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int dist = argc > 3 ? atoi(argv[3]) : 1;
    int left = ((rank - dist) % size + size) % size, right = (rank + dist) % size;
    static double out[HALO], in[HALO];
    double acc = 0, res = 0;
    for (int it = 0; it < iters; it++) {
        MPI_Sendrecv(out, HALO, MPI_DOUBLE, right, 0, in, HALO, MPI_DOUBLE, left, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(out, HALO, MPI_DOUBLE, left, 1, in, HALO, MPI_DOUBLE, right, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (long i = 0; i < work; i++) acc += 1e-9 * (double)i;
        out[0] = acc + in[0];
        MPI_Allreduce(&acc, &res, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("sendrecv_ring %d ranks %g\n", size, res);
    MPI_Finalize();
    return 0;
}
