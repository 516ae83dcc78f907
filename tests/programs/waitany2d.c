/* A halo exchanged as miniGhost (Mantevo/miniGhost, MG_BSPMA.F) exchanges it: one dimension
 * at a time, an irecv from each neighbour along it, an isend to each, then one MPI_Waitany
 * per request, a receive's face unpacked as soon as it is returned; then a sum over the grid
 * (allreduce) per variable.  The process grid is the application's (PX PY, ranks x fastest,
 * open, no Cartesian communicator).  Which request each waitany returns is the arrival
 * order's; ranks with an odd x coordinate list their sends first, so that the order differs
 * between ranks of one position even on a quiet machine.
 * Usage: waitany2d STEPS PX PY CELLS (CELLS x CELLS per rank). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 10;
    int px = argc > 2 ? atoi(argv[2]) : size, py = argc > 3 ? atoi(argv[3]) : 1;
    int n = argc > 4 ? atoi(argv[4]) : 64;
    if (px * py != size) {
        if (rank == 0) fprintf(stderr, "waitany2d: %d x %d is not %d ranks\n", px, py, size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int x = rank % px, y = rank / px;
    int nb[2][2] = {{x > 0 ? rank - 1 : -1, x < px - 1 ? rank + 1 : -1},
                    {y > 0 ? rank - px : -1, y < py - 1 ? rank + px : -1}};
    double *grid = calloc((size_t)n * n, sizeof(double));
    double *buf = calloc((size_t)8 * n, sizeof(double)), sum = 0.0;
    for (int step = 0; step < steps; step++) {
        for (long j = 0; j < 40L * n * n; j++) grid[j % (n * n)] += 1e-9 * (double)(j & 7);
        for (int d = 0; d < 2; d++) {
            MPI_Request recvs[2], sends[2], all[4];
            int nr = 0, ns = 0;
            for (int s = 0; s < 2; s++)
                if (nb[d][s] >= 0)
                    MPI_Irecv(buf + (2 * s) * n, n, MPI_DOUBLE, nb[d][s], 10 * d + 1 - s,
                              MPI_COMM_WORLD, &recvs[nr++]);
            for (int s = 0; s < 2; s++)
                if (nb[d][s] >= 0)
                    MPI_Isend(buf + (2 * s + 1) * n, n, MPI_DOUBLE, nb[d][s], 10 * d + s,
                              MPI_COMM_WORLD, &sends[ns++]);
            int k = 0;
            for (int i = 0; i < (x % 2 ? ns : nr); i++) all[k++] = x % 2 ? sends[i] : recvs[i];
            for (int i = 0; i < (x % 2 ? nr : ns); i++) all[k++] = x % 2 ? recvs[i] : sends[i];
            for (int i = 0; i < k; i++) {
                int which;
                MPI_Waitany(k, all, &which, MPI_STATUS_IGNORE);
                if ((x % 2) == (which >= (x % 2 ? ns : nr)))     /* a receive: unpack it */
                    for (int j = 0; j < n; j++) grid[j] += buf[j];
            }
        }
        for (int v = 0; v < 2; v++) {
            double mine = grid[v] + sum, total;
            MPI_Allreduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            sum += 1e-12 * total;
        }
    }
    if (rank == 0) printf("%d x %d %g\n", px, py, sum);
    free(grid);
    free(buf);
    MPI_Finalize();
    return 0;
}
