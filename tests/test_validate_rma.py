"""validate() on one-sided communication: operations inside access epochs, epochs closed."""
from __future__ import annotations

import pytest

from minitrace.model import TraceBuilder
from minitrace.validate import validate


def _rank0(*actions) -> TraceBuilder:
    """2 ranks; rank 0 allocates window 0 then does ``actions`` (kind, peer[, vector]), rank 1
    only allocates it; both free it."""
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "win_allocate", tag=0, vector=[64, 8])
    for kind, peer, *vec in actions:
        b.add(0, kind, peer=peer, tag=0, bytes_sent=8 if kind == "put" else 0,
              vector=vec[0] if vec else None)
    for r in range(2):
        b.add(r, "win_free", tag=0)
        b.add(r, "finalize")
    return b


@pytest.mark.parametrize("actions", [
    [("win_fence", -1), ("put", 1), ("win_fence", -1)],
    [("win_lock", 1, [1]), ("put", 1), ("win_flush", 1), ("win_unlock", 1)],
    [("win_lock_all", -1), ("put", 1), ("win_flush_all", -1), ("win_unlock_all", -1)],
    [("win_start", -1, [1]), ("put", 1), ("win_complete", -1)],
    [("put", -1)],                        # MPI_PROC_NULL target: no epoch needed
])
def test_valid_epochs(actions):
    assert validate(_rank0(*actions).build()).ok


@pytest.mark.parametrize("actions,category,msg", [
    ([("put", 1)], "rma-outside-epoch", "put to 1 on window 0 outside any access epoch to it"),
    ([("win_lock", 0, [1]), ("put", 1), ("win_unlock", 0)], "rma-outside-epoch",
     "put to 1 on window 0 outside any access epoch to it"),
    ([("win_start", -1, [0]), ("put", 1), ("win_complete", -1)], "rma-outside-epoch",
     "put to 1 on window 0"),
    ([("win_flush", 1)], "rma-outside-epoch", "win_flush to 1 on window 0"),
    ([("win_unlock", 1)], "rma-epoch-mismatch", "win_unlock on window 0: 1 is not locked"),
    ([("win_lock", 1, [0]), ("win_lock", 1, [0])], "rma-epoch-mismatch", "1 is already locked"),
    ([("win_complete", -1)], "rma-epoch-mismatch", "no start epoch is open"),
    ([("win_wait", -1)], "rma-epoch-mismatch", "no exposure epoch (post) is open"),
    ([("win_lock", 1, [1])], "rma-epoch-not-closed",
     "win_free frees window 0 while epochs are open: lock of 1"),
    ([("win_post", -1, [1])], "rma-epoch-not-closed", "epochs are open: post"),
])
def test_bad_epochs(actions, category, msg):
    rep = validate(_rank0(*actions).build())
    found = [p for p in rep.problems if p.category == category]
    assert len(found) >= 1 and msg in found[0].message and found[0].rank == 0, str(rep)


def test_unknown_window_and_epoch_open_at_finalize():
    b = TraceBuilder(1)
    b.add(0, "init")
    b.add(0, "put", peer=0, tag=3, bytes_sent=8)
    b.add(0, "win_create", tag=0, vector=[8, 8])
    b.add(0, "win_lock_all", tag=0)
    b.add(0, "finalize")
    rep = validate(b.build())
    assert rep.counts["rma-unknown-window"] == 1 and rep.counts["rma-epoch-not-closed"] == 1
    assert "finalize ends the rank with window 0 while epochs are open: lock_all" in str(rep)
