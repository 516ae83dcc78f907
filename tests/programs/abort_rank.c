/* The endings of a run that a recording must survive (tests/test_record_endings.py): argv[1]
 * "abort": rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7) while the others wait for its message;
 * "return": every rank returns from main without MPI_Finalize.  First 5 allreduces. */
#include <mpi.h>
#include <string.h>

int main(int argc, char **argv) {
    int rank, x = 1, y;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int i = 0; i < 5; i++) MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (!strcmp(argv[1], "return")) return 0;
    if (rank == 1) MPI_Abort(MPI_COMM_WORLD, 7);
    MPI_Recv(&y, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
