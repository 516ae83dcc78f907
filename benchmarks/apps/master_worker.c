/* Master-worker: rank 0 hands out TASKS tasks of varying cost, one at a time, receiving results
 * from whichever worker is done first (MPI_ANY_SOURCE); a task of cost c is c x 100k steps of
 * an integer kernel.  With one rank, rank 0 does every task itself.
 * Usage: mpiexec -n P ./master_worker [TASKS=200] [COST=4] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long work(int task, int cost) {
    unsigned long x = 88172645463325252ul + (unsigned long)task;
    long steps = 100000L * (1 + (task * 7) % cost);
    for (long i = 0; i < steps; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; }
    return x;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int tasks = argc > 1 ? atoi(argv[1]) : 200, cost = argc > 2 ? atoi(argv[2]) : 4;
    unsigned long sum = 0;
    if (size == 1) {
        for (int t = 0; t < tasks; t++) sum ^= work(t, cost);
    } else if (rank == 0) {
        int next = 0, active = 0;
        for (int w = 1; w < size; w++) {        /* one task (or a stop, -1) to each worker */
            int t = next < tasks ? next++ : -1;
            MPI_Send(&t, 1, MPI_INT, w, 0, MPI_COMM_WORLD);
            active += t >= 0;
        }
        while (active > 0) {
            unsigned long result[2];
            MPI_Status st;
            MPI_Recv(result, 2, MPI_UNSIGNED_LONG, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &st);
            sum ^= result[1];
            int t = next < tasks ? next++ : -1;
            MPI_Send(&t, 1, MPI_INT, st.MPI_SOURCE, 0, MPI_COMM_WORLD);
            active -= t < 0;
        }
    } else {
        for (;;) {
            int t;
            MPI_Recv(&t, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (t < 0) break;
            unsigned long result[2] = {(unsigned long)t, work(t, cost)};
            MPI_Send(result, 2, MPI_UNSIGNED_LONG, 0, 1, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) printf("master_worker: tasks=%d ranks=%d checksum=%lu\n", tasks, size, sum);
    MPI_Finalize();
    return 0;
}
