/* Polls that find nothing, in runs (docs/RECORDER.md, failed polls folded): rank 0 polls 50
 * times with a small compute between polls, each poll sure to fail (rank 1 sends nothing
 * before rank 0's "go"), then sends "go" and polls until rank 1's message arrives.  Modes:
 * test (MPI_Test of an irecv), testany, testsome (of that one), testall (MPI_Testall of two
 * irecvs), iprobe (MPI_Iprobe: first
 * 50 on a tag never sent, then 50 on the tag sent: two runs), improbe (MPI_Improbe, then
 * MPI_Mrecv), cycle (MPI_Iprobe and MPI_Test of an irecv in turn, as public AMG's hypre polls:
 * the irecv's message is sent after the probed one arrived), cycle5 (MPI_Iprobe of the tag
 * sent and of 4 tags never sent in turn: a cycle of 5, as public Branson's rank with two
 * neighbours tests 2 sends, 2 receives and an iallreduce).  Rank 0 prints how many of its polls found nothing: "failed polls N". */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static volatile double sink;

static void compute(void) {
    double x = 0;
    for (int i = 0; i < 2000; i++) x += i * 0.5;
    sink = x;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *mode = argc > 1 ? argv[1] : "test";
    int buf[2] = {0, 0}, go = 1;
    if (rank == 1) {
        MPI_Recv(&go, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&buf[0], 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        if (!strcmp(mode, "testall")) MPI_Send(&buf[1], 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
        if (!strcmp(mode, "cycle")) {
            MPI_Recv(&go, 1, MPI_INT, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&buf[1], 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
        }
    } else if (rank == 0) {
        long failed = 0;
        int flag = 0;
        MPI_Request rq[2];
        if (!strcmp(mode, "cycle")) {
            int got = 0;
            MPI_Irecv(&buf[1], 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &rq[0]);
            for (int k = 0; !flag; k++) {
                if (k == 50) MPI_Send(&go, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
                compute();
                MPI_Iprobe(1, 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                failed += !flag;
                if (flag) break;
                compute();
                MPI_Test(&rq[0], &got, MPI_STATUS_IGNORE);
                failed += !got;
            }
            MPI_Recv(&buf[0], 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&go, 1, MPI_INT, 1, 4, MPI_COMM_WORLD);
            MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        } else if (!strcmp(mode, "cycle5")) {
            static const int tags[5] = {1, 11, 12, 13, 14};
            for (int k = 0; !flag; k++) {
                if (k == 50) MPI_Send(&go, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
                for (int t = 0; t < 5 && !flag; t++) {
                    compute();
                    MPI_Iprobe(1, tags[t], MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                    failed += !flag;
                }
            }
            MPI_Recv(&buf[0], 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (!strcmp(mode, "iprobe") || !strcmp(mode, "improbe")) {
            MPI_Message msg;
            for (int i = 0; i < 50; i++) {              /* a tag never sent */
                compute();
                if (mode[1] == 'p') MPI_Iprobe(1, 7, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                else MPI_Improbe(1, 7, MPI_COMM_WORLD, &flag, &msg, MPI_STATUS_IGNORE);
                failed += !flag;
            }
            for (int k = 0; !flag; k++) {
                if (k == 50) MPI_Send(&go, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
                compute();
                if (mode[1] == 'p') MPI_Iprobe(1, 1, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                else MPI_Improbe(1, 1, MPI_COMM_WORLD, &flag, &msg, MPI_STATUS_IGNORE);
                failed += !flag;
            }
            if (mode[1] == 'p') MPI_Recv(&buf[0], 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            else MPI_Mrecv(&buf[0], 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
        } else {
            int n = !strcmp(mode, "testall") ? 2 : 1;
            MPI_Irecv(&buf[0], 1, MPI_INT, 1, 1, MPI_COMM_WORLD, &rq[0]);
            if (n == 2) MPI_Irecv(&buf[1], 1, MPI_INT, 1, 3, MPI_COMM_WORLD, &rq[1]);
            for (int k = 0; !flag; k++) {
                if (k == 50) MPI_Send(&go, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
                compute();
                int idx[1];
                if (n == 2) MPI_Testall(2, rq, &flag, MPI_STATUSES_IGNORE);
                else if (!strcmp(mode, "testany")) MPI_Testany(1, rq, idx, &flag, MPI_STATUS_IGNORE);
                else if (!strcmp(mode, "testsome")) {
                    int out = 0;
                    MPI_Testsome(1, rq, &out, idx, MPI_STATUSES_IGNORE);
                    flag = out > 0;
                } else MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
                failed += !flag;
            }
        }
        printf("failed polls %ld\n", failed);
    }
    MPI_Finalize();
    return 0;
}
