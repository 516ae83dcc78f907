"""mpi4py program: pickled and buffer p2p (mpi4py 4 calls the MPI_*_c forms), bcast,
allreduce, a named region, and a paused stretch whose MPI calls must not be recorded."""
import numpy as np
from mpi4py import MPI

import minitrace

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
buf = np.zeros(10, dtype=np.float64)
with minitrace.region("exchange"):
    if rank == 0:
        comm.Send(buf[:3], dest=1, tag=5)
    elif rank == 1:
        comm.Recv(buf, source=0, tag=5)
minitrace.pause()
comm.Barrier()  # not recorded
minitrace.resume()
x = comm.bcast({"a": 1} if rank == 0 else None, root=0)
tot = np.zeros(4)
comm.Allreduce(np.ones(4), tot, op=MPI.SUM)
with minitrace.region("solve"):
    comm.Barrier()
print(f"py rank {rank} total {tot[0]:.0f} tracing {minitrace.tracing()}")
