/* One-sided communication on 4 ranks (r's right is r+1, its left r-1, mod 4), window 0 from
 * Win_allocate (64 doubles, disp_unit 8):
 * 1. fence epoch: Put 2 doubles to the right at disp 4, Get 1 double from the left at disp 0,
 *    Accumulate 3 doubles to the right at disp 8; fence;
 * 2. Win_lock(exclusive, right): Get_accumulate (1 double, 1 result) at disp 1, Fetch_and_op
 *    (1 long) at disp 2, Compare_and_swap (1 long) at disp 3; Win_unlock(right);
 * 3. Win_lock_all: Rput 4 doubles to r+2 at disp 16 + Wait, Rget 2 doubles from r+2 at disp 20
 *    + Wait, Raccumulate and Rget_accumulate (1 double) to r+2 at disp 24 + Waitall, Win_flush(r+2),
 *    Win_flush_all, Win_flush_local(r+2), Win_flush_local_all, Win_sync; Win_unlock_all;
 * 4. PSCW: even r starts an access epoch to r+1 (Put 1 double at disp 30, Win_complete); odd r
 *    posts an exposure epoch to r-1 and ends it with Win_wait;
 * 5. window 1 from Win_create over 16 ints (disp_unit 4) with two fences; window 2 from
 *    Win_create_dynamic; all three freed. */
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, far = (rank + 2) % size;
    double *mem, buf[8] = {1, 2, 3, 4, 5, 6, 7, 8}, res[8];
    long one = 1, old = 0, cmp = 0;
    MPI_Win win, win2, win3;
    MPI_Win_allocate(64 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &mem,
                     &win);
    MPI_Win_fence(0, win);
    MPI_Put(buf, 2, MPI_DOUBLE, right, 4, 2, MPI_DOUBLE, win);
    MPI_Get(res, 1, MPI_DOUBLE, left, 0, 1, MPI_DOUBLE, win);
    MPI_Accumulate(buf, 3, MPI_DOUBLE, right, 8, 3, MPI_DOUBLE, MPI_SUM, win);
    MPI_Win_fence(0, win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Get_accumulate(buf, 1, MPI_DOUBLE, res, 1, MPI_DOUBLE, right, 1, 1, MPI_DOUBLE, MPI_SUM,
                       win);
    MPI_Fetch_and_op(&one, &old, MPI_LONG, right, 2, MPI_SUM, win);
    MPI_Compare_and_swap(&one, &cmp, &old, MPI_LONG, right, 3, win);
    MPI_Win_unlock(right, win);
    MPI_Request req[2];
    MPI_Win_lock_all(0, win);
    MPI_Rput(buf, 4, MPI_DOUBLE, far, 16, 4, MPI_DOUBLE, win, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Rget(res, 2, MPI_DOUBLE, far, 20, 2, MPI_DOUBLE, win, &req[0]);
    MPI_Wait(&req[0], MPI_STATUS_IGNORE);
    MPI_Raccumulate(buf, 1, MPI_DOUBLE, far, 24, 1, MPI_DOUBLE, MPI_SUM, win, &req[0]);
    MPI_Rget_accumulate(buf, 1, MPI_DOUBLE, res, 1, MPI_DOUBLE, far, 24, 1, MPI_DOUBLE, MPI_SUM,
                        win, &req[1]);
    MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    MPI_Win_flush(far, win);
    MPI_Win_flush_all(win);
    MPI_Win_flush_local(far, win);
    MPI_Win_flush_local_all(win);
    MPI_Win_sync(win);
    MPI_Win_unlock_all(win);
    MPI_Group world, peer;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int other = rank % 2 ? left : right;
    MPI_Group_incl(world, 1, &other, &peer);
    if (rank % 2 == 0) {
        MPI_Win_start(peer, 0, win);
        MPI_Put(buf, 1, MPI_DOUBLE, right, 30, 1, MPI_DOUBLE, win);
        MPI_Win_complete(win);
    } else {
        MPI_Win_post(peer, 0, win);
        MPI_Win_wait(win);
    }
    MPI_Group_free(&peer);
    MPI_Group_free(&world);
    int local[16];
    MPI_Win_create(local, sizeof local, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win2);
    MPI_Win_fence(0, win2);
    MPI_Win_fence(0, win2);
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win3);
    MPI_Win_free(&win);
    MPI_Win_free(&win2);
    MPI_Win_free(&win3);
    printf("rma rank %d ok\n", rank);
    MPI_Finalize();
    return 0;
}
