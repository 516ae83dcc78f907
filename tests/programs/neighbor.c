/* Neighborhood and MPI-4 persistent collectives, 4 ranks.
 * 1. a non-periodic 1-D Cartesian line 0-1-2-3: Neighbor_alltoall of 2 ints per neighbour
 *    (the ends have an MPI_PROC_NULL neighbour);
 * 2. a distributed graph, r receiving from r-1 and r-2, sending to r+1 and r+2 (mod 4):
 *    Neighbor_alltoallv, r sending r + j + 1 ints to its j-th out-neighbour, then
 *    Neighbor_alltoallw (1 int to r+1, 1 double to r+2);
 * 3. a ring graph (neighbours r-1, r+1): Ineighbor_allgatherv of 3 ints + Wait;
 * 4. persistent: Neighbor_allgather_init on the line (1 double), started twice (Start + Wait);
 *    Allreduce_init (4 ints) and Bcast_init (root 1, 8 bytes) started together twice
 *    (Startall + Waitall); every request freed. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = 4, nonper = 0, sbuf[64] = {0}, rbuf[64];
    double dbuf[8] = {0}, drbuf[8];
    MPI_Comm line, dg, ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &n, &nonper, 0, &line);
    MPI_Neighbor_alltoall(sbuf, 2, MPI_INT, rbuf, 2, MPI_INT, line);
    int src[2] = {(rank + 3) % 4, (rank + 2) % 4}, dst[2] = {(rank + 1) % 4, (rank + 2) % 4};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, MPI_UNWEIGHTED, 2, dst,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dg);
    int sc[2] = {rank + 1, rank + 2}, rc[2] = {src[0] + 1, src[1] + 2}, sd[2] = {0, 8},
        rd[2] = {0, 8};
    MPI_Neighbor_alltoallv(sbuf, sc, sd, MPI_INT, rbuf, rc, rd, MPI_INT, dg);
    int one[2] = {1, 1};
    MPI_Aint wd[2] = {0, 16};
    MPI_Datatype st[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Neighbor_alltoallw(dbuf, one, wd, st, drbuf, one, wd, st, dg);
    int index[4] = {2, 4, 6, 8}, edges[8] = {3, 1, 0, 2, 1, 3, 2, 0};
    MPI_Graph_create(MPI_COMM_WORLD, 4, index, edges, 0, &ring);
    int three[2] = {3, 3}, disp[2] = {0, 3};
    MPI_Request req[2];
    MPI_Ineighbor_allgatherv(sbuf, 3, MPI_INT, rbuf, three, disp, MPI_INT, ring, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
#if MPI_VERSION >= 4
    MPI_Neighbor_allgather_init(dbuf, 1, MPI_DOUBLE, drbuf, 1, MPI_DOUBLE, line, MPI_INFO_NULL,
                                &req[0]);
    for (int i = 0; i < 2; i++) {
        MPI_Start(&req[0]);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    }
    MPI_Request_free(&req[0]);
    int x[4] = {1, 2, 3, 4}, y[4];
    MPI_Allreduce_init(x, y, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPI_Bcast_init(dbuf, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
    for (int i = 0; i < 2; i++) {
        MPI_Startall(2, req);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
#endif
    MPI_Comm_free(&line);
    MPI_Comm_free(&dg);
    MPI_Comm_free(&ring);
    printf("neighbor rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
