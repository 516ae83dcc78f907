/* LAMMPS's step as its brick communication makes it (comm_brick.cpp, verlet.cpp), reduced: a set-up
 * of many broadcasts (the input, line by line), then steps, each a forward communication (per
 * swap: MPI_Irecv, a pack of the atoms to send, MPI_Send, MPI_Wait), the force kernel, and the
 * reverse communication (per swap, in reverse order: MPI_Irecv, MPI_Send, MPI_Wait, an unpack of
 * the forces received).  The reverse swaps' messages are the forward ones' (the same peer, tag
 * and size where a dimension has two ranks), so the kernel and the unpacks sit between the same
 * calls (a wait, then an irecv): one call site, whose computes are ~1 us or milliseconds.  The
 * kernel's work grows over the steps (the neighbour lists as the lattice melts); every 20 steps
 * the atoms are re-exchanged (new message sizes), every 50 an allreduce sums the energies.
 * Usage: lj_swaps STEPS KERNEL_ITERATIONS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define MOST 4096
static double buf[2][MOST], w;

static void work(long n) {
    for (long j = 0; j < n; j++) w += 1e-9 * (double)(j & 7);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, P, steps = argc > 1 ? atoi(argv[1]) : 100;
    long kernel = argc > 2 ? atol(argv[2]) : 1000000L;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    int dims[2] = {0, 0}, periods[2] = {1, 1}, send[4], recv[4], n[4];
    MPI_Comm grid;
    MPI_Dims_create(P, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    /* swaps: per dimension with more than one rank, to the minus side then to the plus side */
    int nswap = 0;
    for (int d = 0; d < 2; d++) {
        if (dims[d] < 2) continue;
        int minus, plus;
        MPI_Cart_shift(grid, d, 1, &minus, &plus);
        send[nswap] = minus, recv[nswap++] = plus;
        send[nswap] = plus, recv[nswap++] = minus;
    }
    for (int i = 0; i < 200; i++) {                       /* the input, broadcast */
        char line[64] = "";
        MPI_Bcast(line, 64, MPI_CHAR, 0, grid);
    }
    for (int step = 0; step < steps; step++) {
        if (step % 20 == 0) {           /* re-neighbouring: new counts, alike on every rank */
            for (int s = 0; s < nswap; s++) {
                n[s] = 300 + (step * 13 + s * 7) % 50;
                int got;
                MPI_Sendrecv(&n[s], 1, MPI_INT, send[s], 1, &got, 1, MPI_INT, recv[s], 1, grid,
                             MPI_STATUS_IGNORE);
            }
        }
        for (int s = 0; s < nswap; s++) {                 /* forward: positions */
            MPI_Request q;
            MPI_Irecv(buf[1], 3 * n[s], MPI_DOUBLE, recv[s], 0, grid, &q);
            work(300);                                    /* pack */
            MPI_Send(buf[0], 3 * n[s], MPI_DOUBLE, send[s], 0, grid);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        /* the forces: their work grows with the step, a little more on some ranks */
        work(kernel + kernel * step / steps + kernel * (rank % 3) / 10);
        for (int s = nswap - 1; s >= 0; s--) {            /* reverse: forces */
            MPI_Request q;
            MPI_Irecv(buf[1], 3 * n[s], MPI_DOUBLE, send[s], 0, grid, &q);
            MPI_Send(buf[0], 3 * n[s], MPI_DOUBLE, recv[s], 0, grid);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            work(300);                                    /* unpack */
        }
        if (step % 50 == 49) {
            double e = w, sum;
            MPI_Allreduce(&e, &sum, 1, MPI_DOUBLE, MPI_SUM, grid);
        }
    }
    if (rank == 0) printf("lj_swaps %d steps %g\n", steps, w);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
