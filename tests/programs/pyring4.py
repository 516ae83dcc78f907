"""mpi4py program for 4 ranks: a ring with Isend/Irecv/Waitall (tag = iteration), an Alltoallv
with distinct per-peer counts (rank r sends r + 2 * j + 1 float64 to rank j), and a Split into
even/odd sub-communicators with a Bcast from sub-rank 1."""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
right, left = (rank + 1) % size, (rank - 1) % size
out, inn = np.full(16, rank, dtype=np.int32), np.empty(16, dtype=np.int32)
for it in range(3):
    reqs = [comm.Irecv(inn, source=left, tag=it), comm.Isend(out, dest=right, tag=it)]
    MPI.Request.Waitall(reqs)
    assert inn[0] == left
scounts = [rank + 2 * j + 1 for j in range(size)]
rcounts = [j + 2 * rank + 1 for j in range(size)]
sbuf = np.zeros(sum(scounts))
rbuf = np.zeros(sum(rcounts))
comm.Alltoallv([sbuf, scounts], [rbuf, rcounts])
sub = comm.Split(rank % 2, key=rank)
data = np.arange(5, dtype=np.int64)
sub.Bcast(data, root=1)
sub.Free()
print(f"pyring4 rank {rank} ok")
