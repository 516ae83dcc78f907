"""A test that completed, written as the test that did not and the wait it would have led to,
so that a rank's program does not depend on when its messages arrived.

TeaLeaf (UK-MAC/TeaLeaf_ref) posts its left-right halo messages, calls ``MPI_Testall`` on
them, posts its bottom-top messages, and waits for the first ones (``MPI_Waitall``) only if
the test found them incomplete, then for the second ones.  How many waitalls a rank calls is
the arrival order's choice: at 8 ranks 201-244 per rank for the same 129 tests, every rank a
program of its own.  A ``testall`` that completed its requests is taken here as one that did
not, followed by a ``waitall`` of the same requests (and an empty compute) just before the
rank's next completion call, where the incomplete ones' waitall is: a wait that returns at
once, as the replay of the recorded trace would also have to wait for the messages it
simulates.  Only ``testall``: it completes all its requests or none.  A completed test with
no completion call after it on its rank is left as recorded (TeaLeaf's exchanges all end in a
waitall).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from . import kinds as K
from .model import NONE, TraceColumns, empty_actions

_TESTALL, _WAITALL, _COMPUTE = K.code("testall"), K.code("waitall"), K.code("compute")
_COMPLETION = K.mask(K.COMPLETIONS)
_NOT_COMPLETED = np.uint8(~K.FLAG_COMPLETED & 0xFF)


def tested_waits(data: TraceColumns) -> tuple[TraceColumns, int]:
    """``data`` with every completed ``testall`` made incomplete and followed, before its
    rank's next completion call, by a ``waitall`` of its requests.

    Returns
    -------
    (TraceColumns, int)
        The trace, and how many tests were rewritten (0: ``data`` itself).
    """
    a = data.actions
    rank = data.rank_of()
    done = np.flatnonzero((a["kind"] == _TESTALL) & ((a["flags"] & K.FLAG_COMPLETED) != 0) &
                          (a["vec_len"] > 0))
    if not len(done):
        return data, 0
    completions = np.flatnonzero(_COMPLETION[a["kind"]])
    after = np.searchsorted(completions, done, side="right")
    nxt = completions[after.clip(max=len(completions) - 1)]
    keep = (after < len(completions)) & (rank[nxt] == rank[done])
    done, nxt = done[keep], nxt[keep]
    if not len(done):
        return data, 0
    # before each ``nxt``: the waitall (the test's row, its requests' list copied) and an
    # empty compute, both at the time ``nxt`` starts
    wait = a[done].copy()           # its communicator and list; no time, no bytes of its own
    wait["kind"] = _WAITALL
    wait["flags"] &= _NOT_COMPLETED
    wait["volume"] = wait["bytes_sent"] = wait["bytes_recv"] = 0
    wait["vec_off"] = len(data.vectors) + np.cumsum(wait["vec_len"]) - wait["vec_len"]
    gap = empty_actions(len(done))
    gap["kind"], gap["comm"] = _COMPUTE, NONE      # as the recorder writes a compute
    added = empty_actions(2 * len(done))
    added[0::2], added[1::2] = wait, gap
    added["t_start"] = added["t_end"] = np.repeat(a["t_start"][nxt], 2)
    actions = np.insert(a, np.repeat(nxt, 2), added)
    actions["flags"][done + 2 * np.searchsorted(nxt, done, side="right")] &= _NOT_COMPLETED
    lists = [data.vectors[o:o + n] for o, n in zip(a["vec_off"][done].tolist(),
                                                    a["vec_len"][done].tolist())]
    per_rank = np.bincount(rank[done], minlength=data.nranks)
    offsets = data.rank_offsets + 2 * np.r_[0, np.cumsum(per_rank)]
    return replace(data, actions=actions, rank_offsets=offsets.astype(np.int64),
                   vectors=np.concatenate([data.vectors, *lists]).astype(data.vectors.dtype)), \
        len(done)
