/* Persistent requests (send_init/recv_init, start/startall, wait, request_free) between ranks
 * 0 and 1, then partitioned ones (psend_init/precv_init, pready, pready_range, parrived). */
#include <mpi.h>
#include <stdio.h>
#define ITERS 3
#define PARTS 4
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double buf[PARTS * 8] = {0};
    if (rank < 2) {
        int other = 1 - rank;
        MPI_Request s, r;
        MPI_Send_init(buf, 5, MPI_DOUBLE, other, 11, MPI_COMM_WORLD, &s);
        MPI_Recv_init(buf + 8, 5, MPI_DOUBLE, other, 11, MPI_COMM_WORLD, &r);
        for (int i = 0; i < ITERS; i++) {
            MPI_Start(&r);
            MPI_Start(&s);
            MPI_Wait(&s, MPI_STATUS_IGNORE);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        MPI_Request both[2] = {r, s};
        MPI_Startall(2, both);
        MPI_Waitall(2, both, MPI_STATUSES_IGNORE);
        MPI_Request_free(&s);
        MPI_Request_free(&r);
        MPI_Request p;
        int flag = 0;
        if (rank == 0) {
            MPI_Psend_init(buf, PARTS, 8, MPI_DOUBLE, 1, 12, MPI_COMM_WORLD, MPI_INFO_NULL, &p);
            MPI_Start(&p);
            MPI_Pready(0, p);
            MPI_Pready_range(1, PARTS - 1, p);
            MPI_Wait(&p, MPI_STATUS_IGNORE);
        } else {
            MPI_Precv_init(buf, PARTS, 8, MPI_DOUBLE, 0, 12, MPI_COMM_WORLD, MPI_INFO_NULL, &p);
            MPI_Start(&p);
            while (!flag) MPI_Parrived(p, PARTS - 1, &flag);
            MPI_Wait(&p, MPI_STATUS_IGNORE);
        }
        MPI_Request_free(&p);
    }
    printf("persist rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
