/* Reference ping-pong and windowed bandwidth in C, the loops of minitrace.bench.pt2pt without
   Python.  Built as a shared library with mpicc and called through ctypes from the same
   mpi4py process, so both run on the same 2 ranks, in the same MPI job, interleaved. */
#include <mpi.h>

/* `iters` round trips of `size` bytes with `peer`; `first` sends first.  Total seconds;
   samples[i] = i-th round trip. */
double ref_pingpong(int peer, int first, char *buf, int size, int iters, double *samples) {
    double t0 = MPI_Wtime(), prev = t0;
    for (int i = 0; i < iters; i++) {
        if (first) {
            MPI_Send(buf, size, MPI_BYTE, peer, 11, MPI_COMM_WORLD);
            MPI_Recv(buf, size, MPI_BYTE, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, size, MPI_BYTE, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, size, MPI_BYTE, peer, 11, MPI_COMM_WORLD);
        }
        double now = MPI_Wtime();
        samples[i] = now - prev;
        prev = now;
    }
    return prev - t0;
}

/* OSU-style window of `window` (<= 256) non-blocking messages then a 1-byte ack;
   samples[i] = i-th window. */
double ref_bandwidth(int peer, int first, char *buf, int size, int iters, int window,
                     char *ack, double *samples) {
    MPI_Request reqs[256];
    double t0 = MPI_Wtime(), prev = t0;
    for (int i = 0; i < iters; i++) {
        for (int w = 0; w < window; w++) {
            if (first)
                MPI_Isend(buf, size, MPI_BYTE, peer, 13, MPI_COMM_WORLD, &reqs[w]);
            else
                MPI_Irecv(buf, size, MPI_BYTE, peer, 13, MPI_COMM_WORLD, &reqs[w]);
        }
        MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
        if (first)
            MPI_Recv(ack, 1, MPI_BYTE, peer, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Send(ack, 1, MPI_BYTE, peer, 14, MPI_COMM_WORLD);
        double now = MPI_Wtime();
        samples[i] = now - prev;
        prev = now;
    }
    return prev - t0;
}
