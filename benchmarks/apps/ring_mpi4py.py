"""An mpi4py application: a 1-D diffusion on a ring of ranks, numpy for the local update, halo
values passed around the ring (Irecv, Send, Wait) and a global norm every 10 steps (Allreduce).
Usage: mpiexec -n P python ring_mpi4py.py [N=400000] [STEPS=200]"""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
n = int(sys.argv[1]) if len(sys.argv) > 1 else 400_000
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
u = np.zeros(n + 2)
u[1:-1] = np.sin(np.linspace(0, 2 * np.pi, n) + rank)
left, right = (rank - 1) % size, (rank + 1) % size
norm = np.zeros(1)
for step in range(steps):
    r0, r1 = comm.Irecv(u[0:1], left, 0), comm.Irecv(u[-1:], right, 1)
    comm.Send(u[-2:-1], right, 0)
    comm.Send(u[1:2], left, 1)
    MPI.Request.Waitall([r0, r1])
    u[1:-1] = u[1:-1] + 0.25 * (u[:-2] - 2 * u[1:-1] + u[2:])
    if step % 10 == 0:
        comm.Allreduce(np.array([np.dot(u[1:-1], u[1:-1])]), norm, op=MPI.SUM)
if rank == 0:
    print(f"ring_mpi4py: n={n} steps={steps} ranks={size} norm={norm[0]:.6e}")
