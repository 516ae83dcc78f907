/* MPI_THREAD_MULTIPLE: 4 threads per rank; thread t of rank r sends M messages of (t+1) ints
 * to rank r^1 with tag t and receives as many with tag t. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define NT 4
static int rank, M;
static void *work(void *arg) {
    int t = (int)(long)arg, peer = rank ^ 1, buf[NT] = {0}, in[NT];
    for (int i = 0; i < M; i++) {
        MPI_Request r;
        MPI_Irecv(in, NT, MPI_INT, peer, t, MPI_COMM_WORLD, &r);
        MPI_Send(buf, t + 1, MPI_INT, peer, t, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    return NULL;
}
int main(int argc, char **argv) {
    int provided;
    M = argc > 1 ? atoi(argv[1]) : 20;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) { printf("no MPI_THREAD_MULTIPLE\n"); MPI_Abort(MPI_COMM_WORLD, 3); }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pthread_t th[NT];
    for (long t = 0; t < NT; t++) pthread_create(&th[t], NULL, work, (void *)t);
    for (int t = 0; t < NT; t++) pthread_join(th[t], NULL);
    printf("threads rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
