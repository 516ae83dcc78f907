"""Polling written as the waits it stands for, so that a rank's program does not depend on when
its messages arrived.

SNAP (lanl/SNAP) sweeps its grid in a pipeline: each rank polls its upstream faces with
``MPI_Testsome`` and its previous sends with ``MPI_Test`` until they complete, with computes
between the polls.  How many polls fail, and which poll sees which request complete (one
testsome completing both faces or two completing one each, a send's test before or after a
face's), is the arrival order's choice: no two scales, and no two sweeps, make the same calls,
and the runs are "not one program".  Here each run of polls (from a rank's first poll after a
call that is not one, to its next call that is neither a poll nor a compute, the computes
between included) becomes one ``waitall`` of the requests its polls completed, in the order
they were posted (none when they completed nothing), then one compute of the work done in it:
the computes right after a poll that completed nothing (a failed test, testany, testsome or
iprobe, a test of MPI_REQUEST_NULL) are the time the rank spun, which a replay
simulates as the wait, and are left out.  The waitall returns when the last request does, as
the polls did; the work done while polling is moved after it (the program's own order between
them is the arrival order's).  A successful iprobe ends a run and is kept as recorded (the
message it found is received after it), and so does a ``testall`` (:mod:`.tested`).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import kinds as K
from ..compress.loop_view import POLLS
from ..model import NONE, TraceColumns, empty_actions

_WAITALL, _COMPUTE, _TEST = K.code("waitall"), K.code("compute"), K.code("test")
#: ``testall`` is left to :mod:`.tested` (it completes all its requests or none, and the
#: program's waitall for the ones it did not is where the waitall goes).
_POLLED = POLLS - {"testall"}
_POLL, _TESTS = K.mask(_POLLED), K.mask(_POLLED & K.TESTS)
_LISTS = K.mask({"testsome"})
_PROBES = K.mask({"iprobe", "improbe"})


def polled_waits(data: TraceColumns) -> tuple[TraceColumns, int, int]:
    """``data`` with each run of polls made one ``waitall`` of what they completed and one
    compute of the work between them (the module's docstring).

    Returns
    -------
    (TraceColumns, int, int)
        The trace (``data`` itself when it has no poll that completed nothing), the polls
        that completed nothing, and the runs rewritten.
    """
    a = data.actions
    kind, n = a["kind"], len(a)
    done = (a["flags"] & K.FLAG_COMPLETED) != 0
    null = (kind == _TEST) & (a["request"] < 0)
    poll = _POLL[kind] & ~(_PROBES[kind] & done)
    failed = poll & (~done | null)
    if not failed.any():
        return data, 0, 0
    comp = kind == _COMPUTE
    edge = ~(poll | comp)
    edge[data.rank_offsets[:-1][data.rank_offsets[:-1] < n]] = True
    segment = np.cumsum(edge)                     # runs of polls and computes, per rank
    polls = np.cumsum(poll)
    at_edge = np.flatnonzero(edge)
    before = polls[at_edge][segment - 1] - poll[at_edge][segment - 1]
    inside = (poll | comp) & (polls - before > 0)   # from the segment's first poll on
    head = inside & (~np.r_[False, inside[:-1]] | edge)    # (a rank's first row: an edge)
    run = np.cumsum(head) - 1                       # of each row inside a run
    nrun = int(head.sum())
    success = _TESTS[kind] & done & ~null & inside
    work = comp & inside & ~np.r_[False, failed[:-1]]
    # the requests each run completed, in the order they were posted (ids grow with it)
    tests = np.flatnonzero(success)
    single = ~_LISTS[kind[tests]] & (a["request"][tests] >= 0)
    vrows, vals = data.vector_entries(tests[_LISTS[kind[tests]]])
    owner = np.r_[run[tests[single]], run[vrows]]
    ids = np.r_[a["request"][tests][single], vals].astype(np.int64)
    order = np.lexsort((ids, owner))
    owner, ids = owner[order], ids[order]
    count = np.bincount(owner, minlength=nrun)
    ends = np.full(nrun, np.nan)
    np.fmax.at(ends, run[tests], a["t_end"][tests])
    rows = np.flatnonzero(head)
    waits = a[rows].copy()
    waits["kind"], waits["flags"], waits["request"], waits["comm"] = _WAITALL, 0, NONE, 0
    waits["peer"] = waits["tag"] = NONE
    waits["volume"] = waits["bytes_sent"] = waits["bytes_recv"] = 0
    waits["vec_len"] = count
    waits["vec_off"] = len(data.vectors) + np.cumsum(count) - count
    waits["t_end"] = np.fmax(ends, waits["t_start"])
    last = np.zeros(nrun, np.int64)
    np.maximum.at(last, run[inside], np.flatnonzero(inside))
    gaps = empty_actions(nrun)
    gaps["kind"], gaps["comm"] = _COMPUTE, NONE     # as the recorder writes a compute
    gaps["volume"] = np.bincount(run[work], a["volume"][work], minlength=nrun)
    gaps["t_start"], gaps["t_end"] = waits["t_end"], a["t_end"][last]
    some = count > 0
    outside = np.flatnonzero(~inside)
    where = np.searchsorted(outside, rows)
    added = np.concatenate([waits[some], gaps])
    order = np.argsort(np.r_[2 * where[some], 2 * where + 1], kind="stable")
    actions = np.insert(a[outside], np.r_[where[some], where][order], added[order])
    per_rank = np.bincount(data.rank_of(outside), minlength=data.nranks) + \
        np.bincount(data.rank_of(rows), minlength=data.nranks) + \
        np.bincount(data.rank_of(rows[some]), minlength=data.nranks)
    offsets = np.r_[0, np.cumsum(per_rank)].astype(np.int64)
    vectors = np.concatenate([data.vectors, ids.astype(data.vectors.dtype)])
    return (replace(data, actions=actions, rank_offsets=offsets, vectors=vectors),
            int(failed.sum()), nrun)
