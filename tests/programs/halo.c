/* 2-D periodic halo exchange on a 2 x (P/2) grid: Irecv/Isend to 4 neighbours, Waitall,
 * compute in between (argv: iterations, work loop length); prints the loop's wall time.  North/south messages carry NX doubles (tags 0/1), east/west NY (2/3). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#define NX 16
#define NY 24
int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 5, work = argc > 2 ? atoi(argv[2]) : 1000;
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int px = 2, py = size / 2, x = rank % px, y = rank / px;
    int north = ((y + py - 1) % py) * px + x, south = ((y + 1) % py) * px + x;
    int west = y * px + (x + px - 1) % px, east = y * px + (x + 1) % px;
    double out[4][NY], in[4][NY], acc = 0;
    int peer[4] = {north, south, west, east}, len[4] = {NX, NX, NY, NY};
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        for (int i = 0; i < work; i++) acc += 1e-9 * i * (it + 1);
        for (int d = 0; d < 4; d++)
            for (int i = 0; i < NY; i++) out[d][i] = acc + d;
        MPI_Request req[8];
        /* tag = direction of travel as seen by the receiver: what comes from my north was sent
         * southwards (tag 1) by it, etc. */
        int rtag[4] = {1, 0, 3, 2}, stag[4] = {0, 1, 2, 3};
        for (int d = 0; d < 4; d++)
            MPI_Irecv(in[d], len[d], MPI_DOUBLE, peer[d], rtag[d], MPI_COMM_WORLD, &req[d]);
        for (int d = 0; d < 4; d++)
            MPI_Isend(out[d], len[d], MPI_DOUBLE, peer[d], stag[d], MPI_COMM_WORLD, &req[4 + d]);
        MPI_Waitall(8, req, MPI_STATUSES_IGNORE);
        acc += in[0][0] * 1e-12;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    printf("halo rank %d acc %.6f seconds %.6f\n", rank, acc, t);
    MPI_Finalize();
    return 0;
}
