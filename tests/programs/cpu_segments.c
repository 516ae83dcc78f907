/* 60 computes of the same work (a fixed count of dependent multiply-adds, ~1 ms here; no clock
 * read of its own), each followed by a barrier: every compute has the same CPU time. */
#include <mpi.h>

static volatile double sink;

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    double x = 1.0;
    for (int i = 0; i < 60; i++) {
        for (long k = 0; k < 400000; k++) x = x * 0.9999999 + 1e-9;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    sink = x;
    MPI_Finalize();
    return 0;
}
