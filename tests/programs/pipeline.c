/* A main loop as real solvers write it, for iteration sampling (tests/test_sampling_real.py):
 * pipelined halo exchange (each iteration posts the receive and send of the next iteration's
 * halo and waits for the ones the previous iteration posted: requests span one iteration into
 * the next), a convergence check (an extra allreduce) when the data asks for it (here: at
 * iterations chosen by a hash, irregularly), an output step (a reduce to rank 0) every 50
 * iterations, and a nested smoother loop of 3 sweeps.
 * Usage: pipeline ITERATIONS [pipelined: 1 (default) or 0] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 2048

static double work(double *v, int sweeps)
{
    double s = 0;
    for (int k = 0; k < sweeps; k++)
        for (int i = 1; i < N - 1; i++) {
            v[i] = 0.25 * (v[i - 1] + 2 * v[i] + v[i + 1]);
            s += v[i];
        }
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 200;
    int pipelined = argc > 2 ? atoi(argv[2]) : 1;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double *v = calloc(N, sizeof(double)), halo[2][64], out[2][64], norm = 1, sum;
    for (int i = 0; i < N; i++)
        v[i] = (double)((i * 7 + rank) % 13);
    MPI_Request req[2];
    int cur = 0;
    if (pipelined) {
        MPI_Irecv(halo[cur], 64, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(out[cur], 64, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
    }
    for (int it = 0; it < iters; it++) {
        if (!pipelined) {
            MPI_Irecv(halo[cur], 64, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(out[cur], 64, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
        }
        for (int s = 0; s < 3; s++)                 /* nested smoother sweeps */
            sum = work(v, 2);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        cur = 1 - cur;
        if (pipelined && it + 1 < iters) {          /* the next iteration's halo, in flight */
            MPI_Irecv(halo[cur], 64, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(out[cur], 64, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[1]);
        }
        MPI_Allreduce(&sum, &norm, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if ((it * 2654435761u) % 7 < 2)             /* a convergence check, irregularly */
            MPI_Allreduce(MPI_IN_PLACE, &norm, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (it % 50 == 49)                          /* output every 50 iterations */
            MPI_Reduce(&sum, &norm, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    }
    if (rank == 0)
        printf("pipeline: %d iterations, %g\n", iters, norm);
    free(v);
    MPI_Finalize();
    return 0;
}
