/* Persistent receives whose completions the recorder cannot pair by their order alone.
 * argv[1]:
 *   null:   a receive from MPI_PROC_NULL (a non-periodic halo's edge) started and waited twice
 *           (MPICH gives its status the source MPI_ANY_SOURCE, as an inactive request's);
 *   cancel: an ANY_SOURCE/ANY_TAG receive started and cancelled, then restarted twice to
 *           receive tag 0 (10 B) and tag 1 (11 B) from rank 0;
 *   thread: an ANY_TAG receive whose first completion is waited in a second thread and its
 *           second in the main thread (MPI_THREAD_MULTIPLE), of tag 0 (10 B) and tag 1 (11 B);
 *   pause:  the receive started, its tag-0 message waited while recording is paused
 *           (minitrace_pause), then, recording again, waited again (inactive: an empty status)
 *           and started and waited for tag 1;
 *   startall: two ANY_SOURCE/ANY_TAG receives started by one MPI_Startall receive tag 0 (10 B)
 *           and tag 1 (11 B), then the second, restarted by MPI_Start, tag 2 (12 B). */
#include <mpi.h>
#include <pthread.h>
#include <string.h>
static MPI_Request r;
int minitrace_pause(void) __attribute__((weak));
int minitrace_resume(void) __attribute__((weak));
static void *waiter(void *a) { MPI_Wait(&r, MPI_STATUS_IGNORE); return a; }
int main(int argc, char **argv) {
    int rank, prov;
    char buf[64], buf2[64], msg[64] = "x";
    const char *how = argc > 1 ? argv[1] : "null";
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &prov);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (!strcmp(how, "null")) {
        MPI_Recv_init(buf, 64, MPI_CHAR, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &r);
        for (int i = 0; i < 2; i++) { MPI_Start(&r); MPI_Wait(&r, MPI_STATUS_IGNORE); }
        MPI_Request_free(&r);
    } else if (!strcmp(how, "startall")) {
        MPI_Request rr[2];
        if (rank == 1) {
            MPI_Recv_init(buf, 64, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &rr[0]);
            MPI_Recv_init(buf2, 64, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD,
                          &rr[1]);
            MPI_Startall(2, rr);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            for (int t = 0; t < 3; t++) MPI_Send(msg, 10 + t, MPI_CHAR, 1, t, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Waitall(2, rr, MPI_STATUSES_IGNORE);
            MPI_Start(&rr[1]);
            MPI_Wait(&rr[1], MPI_STATUS_IGNORE);
            MPI_Request_free(&rr[0]);
            MPI_Request_free(&rr[1]);
        }
    } else {
        if (rank == 1) {
            MPI_Recv_init(buf, 64, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r);
            if (!strcmp(how, "cancel")) {
                MPI_Start(&r);
                MPI_Cancel(&r);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Send(msg, 10, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
            MPI_Send(msg, 11, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        } else if (rank == 1) {
            pthread_t t;
            MPI_Start(&r);
            if (!strcmp(how, "thread")) {
                pthread_create(&t, NULL, waiter, NULL);
                pthread_join(t, NULL);
            } else if (!strcmp(how, "pause")) {
                if (minitrace_pause) minitrace_pause();
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                if (minitrace_resume) minitrace_resume();
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            }
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Request_free(&r);
        }
    }
    MPI_Finalize();
    return 0;
}
