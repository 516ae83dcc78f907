/* The C twin of halo_f.F90: the same MPI calls in the same order (tests/test_fortran.py
 * compares their recordings rank by rank). */
#include <mpi.h>

#define N 64
#define STEPS 5

int main(int argc, char **argv) {
    double u[N + 2], v[N + 2], s = 0, g = 0;
    int rank, nranks, nsize;
    MPI_Comm sub;
    MPI_Request reqs[4], req;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int left = (rank - 1 + nranks) % nranks, right = (rank + 1) % nranks;
    for (int i = 0; i < N + 2; i++) u[i] = rank;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &sub);
    MPI_Comm_size(sub, &nsize);
    for (int step = 0; step < STEPS; step++) {
        MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &reqs[0]);
        MPI_Irecv(&u[N + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &reqs[1]);
        MPI_Isend(&u[N], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &reqs[2]);
        MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &reqs[3]);
        MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE);
        s = 0;
        for (int i = 1; i <= N; i++) {
            v[i] = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1]);
            s += v[i];
        }
        for (int i = 1; i <= N; i++) u[i] = v[i];
        MPI_Iallreduce(&s, &g, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, sub);
    }
    if (rank == 0)
        for (int i = 1; i < nranks; i++)
            MPI_Recv(&g, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st);
    else
        MPI_Send(&s, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
    MPI_Bcast(&g, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Barrier(sub);
    MPI_Comm_free(&sub);
    MPI_Finalize();
    return 0;
}
