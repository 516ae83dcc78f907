/* What SimGrid's TI replay cannot say as it is, for the lowering tests (4 ranks): collectives on
 * an MPI_Comm_split sub-communicator, MPI_Iallreduce, MPI_Ssend, persistent requests started
 * with MPI_Startall and completed with MPI_Waitany, MPI_Request_free, MPI_Comm_free. */
#include <mpi.h>

#define ITERS 20

int main(int argc, char **argv)
{
    int rank, size, i;
    double x[64] = {0}, y[64] = {0}, s = 1.0, r = 0.0;
    MPI_Comm half;
    MPI_Request pers[2], req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Send_init(x, 64, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &pers[0]);
    MPI_Recv_init(y, 64, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &pers[1]);
    for (i = 0; i < ITERS; i++) {
        MPI_Allreduce(x, y, 16, MPI_DOUBLE, MPI_SUM, half);
        MPI_Bcast(x, 32, MPI_DOUBLE, 0, half);
        MPI_Iallreduce(&s, &r, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
        if (rank % 2 == 0) {
            MPI_Ssend(x, 8, MPI_DOUBLE, right, 3, MPI_COMM_WORLD);
            MPI_Recv(y, 8, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(y, 8, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Ssend(x, 8, MPI_DOUBLE, right, 3, MPI_COMM_WORLD);
        }
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Startall(2, pers);
        int done, k;
        for (k = 0; k < 2; k++)
            MPI_Waitany(2, pers, &done, MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&pers[0]);
    MPI_Request_free(&pers[1]);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
