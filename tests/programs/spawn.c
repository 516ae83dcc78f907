/* MPI_Comm_spawn: the 2 parents spawn 2 copies of this program ("child"); parent 0 sends 4 ints
 * (tag 3) to child 0 over the intercommunicator, then a Barrier on it; the children (not traced)
 * receive and join the barrier. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, buf[4] = {1, 2, 3, 4};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm inter;
    if (argc > 1 && !strcmp(argv[1], "child")) {
        MPI_Comm_get_parent(&inter);
        if (rank == 0) MPI_Recv(buf, 4, MPI_INT, 0, 3, inter, MPI_STATUS_IGNORE);
        MPI_Barrier(inter);
        MPI_Comm_disconnect(&inter);
        MPI_Finalize();
        return 0;
    }
    char *args[] = {"child", NULL};
    int errs[2];
    MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, errs);
    if (rank == 0) MPI_Send(buf, 4, MPI_INT, 0, 3, inter);
    MPI_Barrier(inter);
    MPI_Comm_disconnect(&inter);
    printf("spawn rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
