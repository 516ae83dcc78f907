/* A hydrodynamics proxy's main loop as UK-MAC CloverLeaf (clover.f90, hydro.f90) writes it: the
 * set-up ends with a halo update and a field summary; each step takes a time step (allreduce of
 * the least dt) and updates two halos (1-D, left and right: an irecv and an isend to each
 * neighbour, one waitall; one rank has none and waits on no request), each after its compute;
 * every PERIOD steps and at the last one, a field summary (five reduces to rank 0).
 * Usage: summary_steps STEPS PERIOD */
#include <mpi.h>
#include <stdlib.h>

static double work(long n, double s) {
    for (long j = 0; j < n; j++) s += 1e-9 * (double)(j & 7);
    return s;
}

static void halo(int rank, int size, double *buf, int n) {
    MPI_Request req[4];
    int count = 0;
    if (rank > 0) {
        MPI_Irecv(buf, n, MPI_DOUBLE, rank - 1, 1, MPI_COMM_WORLD, &req[count++]);
        MPI_Isend(buf + n, n, MPI_DOUBLE, rank - 1, 2, MPI_COMM_WORLD, &req[count++]);
    }
    if (rank < size - 1) {
        MPI_Irecv(buf + 2 * n, n, MPI_DOUBLE, rank + 1, 2, MPI_COMM_WORLD, &req[count++]);
        MPI_Isend(buf + 3 * n, n, MPI_DOUBLE, rank + 1, 1, MPI_COMM_WORLD, &req[count++]);
    }
    MPI_Waitall(count, req, MPI_STATUSES_IGNORE);
}

static double summary(double s) {
    double mine = s, total;
    for (int k = 0; k < 5; k++)
        MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return s + work(20000, 0.0);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = argc > 1 ? atoi(argv[1]) : 300, period = argc > 2 ? atoi(argv[2]) : 10;
    double *buf = calloc(4 * 256, sizeof(double)), s = work(50000, 0.0), dt = 1.0, least;
    halo(rank, size, buf, 256);
    s = summary(s);
    for (int step = 1; step <= steps; step++) {
        MPI_Allreduce(&dt, &least, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
        s = work(40000, s);
        halo(rank, size, buf, 256);
        s = work(20000, s);
        halo(rank, size, buf, 256);
        if (step % period == 0 || step == steps)
            s = summary(s);
    }
    free(buf);
    MPI_Finalize();
    return s < 0;
}
