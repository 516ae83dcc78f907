"""The MPI job a command runs in, found without importing MPI when there is none, and the one
rule every collective step follows: a worker's error is everyone's (no worker is left waiting
in a collective for one that failed)."""
from __future__ import annotations

import os
from typing import Callable, TypeVar

from ..errors import MinitraceError

T = TypeVar("T")

#: What the launchers tell each process: MPICH's Hydra (PMI), Open MPI, a PMIx launcher.
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE")


def launched_size() -> int:
    """Processes of the MPI job this one was started in by mpiexec (1 when not started by one),
    from the launcher's environment: MPI is imported only for a job of two or more."""
    for var in _SIZE_VARS:
        v = os.environ.get(var, "")
        if v.isdigit():
            return int(v)
    return 1


class World:
    """MPI_COMM_WORLD of the job: ``rank``, ``size`` and the collectives the parallel steps
    use, on Python objects (mpi4py's pickled lowercase forms: small things) or numpy arrays."""

    def __init__(self):
        from mpi4py import MPI
        self.comm = MPI.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()

    @property
    def root(self) -> bool:
        return self.rank == 0

    def allgather(self, obj):
        return self.comm.allgather(obj)

    def gather(self, obj):
        return self.comm.gather(obj, root=0)

    def bcast(self, obj):
        return self.comm.bcast(obj, root=0)

    def alltoall(self, objs: list):
        """``objs[w]`` to worker w; this worker's own item stays here, not pickled through
        MPI (with the merge's split of ranks by owner, a worker's share of its own frames is
        most of them): it gets that object itself back, not a copy."""
        out = self.comm.alltoall([None if w == self.rank else o for w, o in enumerate(objs)])
        out[self.rank] = objs[self.rank]
        return out

    def node_sum(self, value: int) -> int:
        """``value`` summed over the workers of this one's node (which share its memory)."""
        from mpi4py import MPI
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            return node.allreduce(value)
        finally:
            node.Free()

    def step(self, fn: Callable[[], T], what: str) -> T:
        """Run ``fn`` on every worker; if it fails on any, raise on every one a MinitraceError
        saying which workers failed and why (one line each)."""
        try:
            out, err = fn(), None
        except MinitraceError as e:
            out, err = None, str(e)
        except (MemoryError, OSError, ValueError, RuntimeError) as e:
            out, err = None, f"{type(e).__name__}: {e}"
        errors: dict[str, list[int]] = {}          # (the same error on several: said once)
        for w, e in enumerate(self.allgather(err)):
            if e:
                errors.setdefault(e, []).append(w)
        if errors:
            raise MinitraceError(f"{what} failed on " + "; ".join(
                f"worker{'s' * (len(ws) > 1)} {', '.join(map(str, ws))}: {e}"
                for e, ws in errors.items()))
        return out
