"""mpi4py program (3 ranks) using the lowercase object API, whose receives are matched probes
(MPI_Mprobe/MPI_Mrecv) or pickled irecvs, and mpi4py.util.pkl5 for a large object:

1. rank 0 sends {"i": i} to rank 1 with tag i (i < 4); rank 1 recv()s each;
2. rank 1 isend()s a list to rank 2 with tag 7; rank 2 irecv()s it, both wait();
3. a ring sendrecv(): each rank sends to the next, receives from the previous, tags 11/11;
4. bcast from 0, scatter from 1, gather to 2, allreduce (sum) of Python objects;
5. pkl5: rank 0 sends a 1 MiB numpy array to rank 2 with tag 21 (an out-of-band buffer), rank 2
   recv()s it; then a pkl5 bcast of a 300 kB bytes object from rank 1.
"""
import numpy as np
from mpi4py import MPI
from mpi4py.util import pkl5

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
assert size == 3
for i in range(4):
    if rank == 0:
        comm.send({"i": i}, dest=1, tag=i)
    elif rank == 1:
        assert comm.recv(source=0, tag=i) == {"i": i}
if rank == 1:
    comm.isend(list(range(10)), dest=2, tag=7).wait()
elif rank == 2:
    assert comm.irecv(source=1, tag=7).wait() == list(range(10))
got = comm.sendrecv(("ring", rank), dest=(rank + 1) % size, sendtag=11,
                    source=(rank - 1) % size, recvtag=11)
assert got == ("ring", (rank - 1) % size)
assert comm.bcast("hello" if rank == 0 else None, root=0) == "hello"
assert comm.scatter([10 * j for j in range(size)] if rank == 1 else None, root=1) == 10 * rank
g = comm.gather(rank * rank, root=2)
assert g == ([0, 1, 4] if rank == 2 else None)
assert comm.allreduce(rank + 1) == 6
c5 = pkl5.Intracomm(comm)
if rank == 0:
    c5.send(np.arange(1 << 17, dtype=np.float64), dest=2, tag=21)
elif rank == 2:
    assert c5.recv(source=0, tag=21)[-1] == (1 << 17) - 1
assert len(c5.bcast(b"x" * 300000 if rank == 1 else None, root=1)) == 300000
print(f"pyobjects rank {rank} ok")
