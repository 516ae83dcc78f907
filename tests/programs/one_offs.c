/* A run whose computes are each done once (NPB BT and SP on one rank: set-up, one timed solve,
 * verification, each between collectives, no loop of MPI calls): no call site repeats, so a
 * noise model has no site with a spread to draw.  argv: none.
 */
#include <mpi.h>
#include <stdio.h>
static double work(long n, double x) {
    for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
    return x;
}
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x = work(2000000, rank), y = 0;
    MPI_Bcast(&x, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    x = work(8000000, x);
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    y = work(1000000, y);
    MPI_Reduce(&y, &x, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("%g\n", x);
    MPI_Finalize();
    return 0;
}
