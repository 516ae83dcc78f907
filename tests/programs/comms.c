/* Communicator creations for 4 ranks, each followed by one collective on the new communicator:
 * a 2x2 Cart_create and its Cart_sub (rows: {0,1}, {2,3}) with a Bcast; Comm_idup + Wait and
 * an Allreduce on the copy; Comm_dup_with_info + Barrier; Comm_create_from_group of the world
 * (MPI-4) + Barrier; Graph_create, Dist_graph_create_adjacent and Dist_graph_create (rings)
 * + Barrier each; then an intercommunicator between the even and odd ranks (Comm_split by
 * parity + Intercomm_create, tag 99): even local rank i sends 4 ints to odd local rank i (tag
 * 5), a Barrier on the intercomm, and Intercomm_merge (odd ranks high) + Allreduce. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, x = 1, y = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int dims[2] = {2, 2}, periods[2] = {1, 1}, keep[2] = {0, 1};
    MPI_Comm cart, row, copy, dup, fromg, graph, dgraph, dgraph2, half, inter, merged;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    MPI_Cart_sub(cart, keep, &row);
    MPI_Bcast(&x, 1, MPI_INT, 0, row);
    MPI_Request req;
    MPI_Comm_idup(MPI_COMM_WORLD, &copy, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, copy);
    MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &dup);
    MPI_Barrier(dup);
#if MPI_VERSION >= 4
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Comm_create_from_group(world, "minitrace.comms", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL,
                               &fromg);
    MPI_Group_free(&world);
#else
    MPI_Comm_dup(MPI_COMM_WORLD, &fromg);
#endif
    MPI_Barrier(fromg);
    int index[4] = {2, 4, 6, 8}, edges[8] = {1, 3, 0, 2, 1, 3, 2, 0};
    MPI_Graph_create(MPI_COMM_WORLD, 4, index, edges, 0, &graph);
    MPI_Barrier(graph);
    int left = (rank + size - 1) % size, right = (rank + 1) % size, one = 1;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right,
                                   MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &dgraph);
    MPI_Barrier(dgraph);
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, &one, &right, MPI_UNWEIGHTED,
                          MPI_INFO_NULL, 0, &dgraph2);
    MPI_Barrier(dgraph2);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 99, &inter);
    int buf[4] = {0}, lrank;
    MPI_Comm_rank(half, &lrank);
    if (rank % 2 == 0)
        MPI_Send(buf, 4, MPI_INT, lrank, 5, inter);
    else
        MPI_Recv(buf, 4, MPI_INT, lrank, 5, inter, MPI_STATUS_IGNORE);
    MPI_Barrier(inter);
    MPI_Intercomm_merge(inter, rank % 2, &merged);
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, merged);
    MPI_Comm *all[] = {&cart, &row, &copy, &dup, &fromg, &graph, &dgraph, &dgraph2, &half,
                       &inter, &merged};
    for (int i = 0; i < (int)(sizeof all / sizeof *all); i++) MPI_Comm_free(all[i]);
    printf("comms rank %d sum %d\n", rank, y);
    MPI_Finalize();
    return 0;
}
