"""validate() on intercommunicators: the order of collectives is checked, roots and sizes (which
follow the intercommunicator rules) are not; one to untraced processes is skipped."""
from __future__ import annotations

import numpy as np

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.validate import validate

F = K.FLAG_INTERCOMM


def _trace(kind3: str = "bcast", members=(0, 1, 2, 3)) -> TraceBuilder:
    """Intercomm 1 between {0, 2} and {1, 3}: a bcast from world rank 0 (root passes MPI_ROOT:
    peer -1; its group's other member MPI_PROC_NULL: peer -1; the remote group the root's
    rank), rank 3 calling ``kind3``."""
    b = TraceBuilder(4)
    b.add_comm(1, np.array(members))
    for r in range(4):
        b.add(r, "init")
        kind = kind3 if r == 3 else "bcast"
        b.add(r, kind, comm=1, flags=F, peer=-1 if r in (0, 2) else 0,
              bytes_sent=8 if r == 0 else 0, bytes_recv=0 if r in (0, 2) else 8)
        b.add(r, "finalize")
    return b


def test_roots_and_sizes_are_not_checked():
    assert validate(_trace().build()).ok


def test_order_is_checked():
    rep = validate(_trace(kind3="barrier").build())
    assert rep.counts["collective-mismatch"] == 1 and rep.problems[0].rank == 3


def test_untraced_remote_group_is_skipped():
    assert validate(_trace(kind3="barrier", members=(-32766, -32766)).build()).ok
