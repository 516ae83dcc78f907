/* The Intel MPI Benchmarks' IMB-NBC pattern: per message size, a non-blocking collective
 * alone (Ibcast, Wait), a compute calibrated to its time, then the collective around a
 * compute of that length (Ibcast, compute, Wait), and a Gather of the results, the one
 * collective every rank makes as often (ranks 0 and 1 first sweep on a communicator of their
 * own, as IMB runs its 2-rank sets).  argv: sizes, iterations, microseconds per size step. */
#include <mpi.h>
#include <stdlib.h>

static void spin(double seconds) {
    double end = MPI_Wtime() + seconds;
    volatile double x = 0;
    while (MPI_Wtime() < end)
        x += 1.0;
}

static void sweep(MPI_Comm comm, int sizes, int iters, double step, char *buf) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    MPI_Request req;
    for (int s = 1; s <= sizes; s++) {
        double work = step * s;
        MPI_Barrier(comm);
        for (int i = 0; i < iters; i++) {           /* the collective alone */
            MPI_Ibcast(buf, 64 * s, MPI_CHAR, 0, comm, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            MPI_Barrier(comm);
        }
        spin(work);                                 /* the calibration */
        MPI_Barrier(comm);
        for (int i = 0; i < iters; i++) {           /* the collective around a compute */
            MPI_Ibcast(buf, 64 * s, MPI_CHAR, 0, comm, &req);
            spin(work);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            MPI_Barrier(comm);
        }
        double t = work, all[64];
        MPI_Gather(&t, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int sizes = argc > 1 ? atoi(argv[1]) : 6, iters = argc > 2 ? atoi(argv[2]) : 8;
    double step = (argc > 3 ? atof(argv[3]) : 100.0) * 1e-6;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = calloc(64 * (size_t)sizes, 1);
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2, rank, &pair);
    if (rank < 2)
        sweep(pair, sizes, iters, step, buf);
    else
        for (int s = 1; s <= sizes; s++) {          /* (the Gathers of the pair's sweep) */
            double t = 0, all[64];
            MPI_Gather(&t, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        }
    sweep(MPI_COMM_WORLD, sizes, iters, step, buf);
    MPI_Comm_free(&pair);
    free(buf);
    MPI_Finalize();
    return 0;
}
