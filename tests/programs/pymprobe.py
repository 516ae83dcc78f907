"""mpi4py program (2 ranks): the matched-probe API by hand.

Rank 0 sends, in order: 32 B (tag 1), a pickled object (tag 2), 8 B then 16 B (both tag 5),
an object of 10 kB with Isend (tag 6).  Rank 1 receives them with
  Mprobe + Recv (MPI_Mprobe, MPI_Mrecv_c), improbe polls + irecv (MPI_Improbe, MPI_Imrecv),
  two Mprobes of tag 5 received in reverse order, Improbe + Irecv into a buffer (MPI_Imrecv_c),
and probes MPI_PROC_NULL once (MPI_MESSAGE_NO_PROC received by Mrecv).
"""
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
assert comm.Get_size() == 2
if rank == 0:
    comm.Send(np.arange(4, dtype=np.float64), dest=1, tag=1)
    comm.send({"two": 2}, dest=1, tag=2)
    comm.Send(np.zeros(1, dtype=np.float64), dest=1, tag=5)
    comm.Send(np.zeros(2, dtype=np.float64), dest=1, tag=5)
    comm.Isend(np.zeros(10000, dtype=np.uint8), dest=1, tag=6).Wait()
else:
    buf = np.empty(4, dtype=np.float64)
    comm.Mprobe(source=0, tag=1).Recv(buf)
    assert buf[3] == 3
    m = None
    while m is None:
        m = comm.improbe(source=0, tag=2)
    assert m.irecv().wait() == {"two": 2}
    first = comm.Mprobe(source=0, tag=5)
    second = comm.Mprobe(source=0, tag=5)
    b16, b8 = np.empty(2), np.empty(1)
    second.Recv(b16)
    first.Recv(b8)
    m = None
    while m is None:
        m = comm.Improbe(source=0, tag=6)
    big = np.empty(10000, dtype=np.uint8)
    m.Irecv(big).Wait()
    m = comm.Mprobe(source=MPI.PROC_NULL)
    m.Recv(None)
print(f"pymprobe rank {rank} ok")
