"""The CPU time of posting a receive and of completing requests: calls SimGrid's replay gives no
time (issue 35, session 12).

SMPI sleeps ``smpi/os``/``smpi/ois`` in a send and ``smpi/or`` when an eager message is received
(:mod:`minitrace.predict.calibration`), but an ``MPI_Irecv`` costs nothing in its replay and a
wait on requests whose messages have arrived costs only that ``smpi/or``.  In a recorded HPCG
(2 ranks, 16^3, MPICH, 2-core VM) an Irecv took 0.25 us a call and its 3,516 waits 5.7 ms
against 2.6 ms replayed.

Measured (:func:`measure`, in ``minitrace calibrate``; rank 0 against rank 1, the others wait):

* ``post``: the time in ``Irecv`` of a message not yet sent, less the same call on
  MPI_PROC_NULL (mpi4py's and the clock's own cost, which a compiled application does not pay);
* ``complete``: per request, the time in ``Waitall`` of :data:`BATCH` receives whose messages
  have arrived (the peer's acknowledgement, sent after them, was received first), less a
  ``Waitall`` of as many MPI_PROC_NULL requests.  The message's copy is in ``smpi/or`` already.

Applied (:func:`add_to_compute`): each ``irecv`` adds ``post``, each completion call
(``wait``/``waitany``: one request; ``waitall``/``waitsome``: the requests it lists) adds
``complete`` per request, to the compute before the call on its rank (the first compute after
it when none precedes), as more compute: the calls' time is the rank's CPU time.
"""
from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .. import kinds as K

#: receives completed by each timed Waitall
BATCH = 4
REPS = 400
TERMS = ("post", "complete")
_TAG = 31
_TIMER = time.perf_counter
#: completion calls of one request / of the requests their vector lists
_ONE = frozenset({"wait", "waitany"})
_LISTED = frozenset({"waitall", "waitsome"})


def measure(comm) -> dict | None:
    """Rank 0's ``{"post": s, "complete": s}`` (medians, see the module); None elsewhere."""
    from mpi4py import MPI
    me, null = comm.rank, MPI.PROC_NULL
    bufs = [np.zeros(1, np.float64) for _ in range(BATCH)]
    ack = np.zeros(1, np.float64)
    post, done = np.empty(REPS), np.empty(REPS)
    comm.Barrier()
    if me == 0:
        for i in range(REPS):
            t0 = _TIMER()
            reqs = [comm.Irecv(bufs[0], 1, _TAG)]
            post[i] = _TIMER() - t0
            reqs += [comm.Irecv(b, 1, _TAG) for b in bufs[1:]]
            comm.Send(ack, 1, _TAG + 1)                 # (go)
            comm.Recv(ack, 1, _TAG + 1)                 # (sent after the messages)
            t0 = _TIMER()
            MPI.Request.Waitall(reqs)
            done[i] = _TIMER() - t0
        null_post, null_done = np.empty(REPS), np.empty(REPS)
        for i in range(REPS):
            t0 = _TIMER()
            reqs = [comm.Irecv(bufs[0], null, _TAG)]
            null_post[i] = _TIMER() - t0
            reqs += [comm.Irecv(b, null, _TAG) for b in bufs[1:]]
            t0 = _TIMER()
            MPI.Request.Waitall(reqs)
            null_done[i] = _TIMER() - t0
    elif me == 1:
        for _ in range(REPS):
            comm.Recv(ack, 0, _TAG + 1)
            for b in bufs:
                comm.Send(b, 0, _TAG)
            comm.Send(ack, 0, _TAG + 1)
    comm.Barrier()
    if me != 0:
        return None
    return {"post": max(float(np.median(post) - np.median(null_post)), 0.0),
            "complete": max(float(np.median(done) - np.median(null_done)) / BATCH, 0.0)}


def fit(runs: list[dict]) -> dict:
    """The median of each term over the runs that measured it; {} when none did."""
    have = [r["attrs"]["call_costs"] for r in runs if r["attrs"].get("call_costs")]
    return {k: float(np.median([c[k] for c in have])) for k in TERMS} if have else {}


def valid(stored) -> bool:
    """A fit's table: empty, or every term a finite number of seconds >= 0."""
    return isinstance(stored, dict) and (not stored or (
        set(stored) == set(TERMS) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
            and v >= 0 for v in stored.values())))


def per_call(data, costs: dict) -> np.ndarray:
    """Seconds each action of ``data`` costs by these terms (0 for other actions)."""
    a = data.actions
    kind = a["kind"]
    out = np.where(kind == K.code("irecv"), costs["post"], 0.0)
    out += np.where(K.mask(_ONE)[kind], costs["complete"], 0.0)
    out += np.where(K.mask(_LISTED)[kind], costs["complete"] * a["vec_len"], 0.0)
    return out


def add_to_compute(data, costs: dict, speed: float):
    """(``data`` with :func:`per_call`'s seconds added to the compute before each call on its
    rank, the first after it when none precedes; seconds added per rank).  ``speed``: flop/s
    of the calibrated host, for a trace whose compute is in flops."""
    cost = per_call(data, costs)
    a = data.actions.copy()
    scale = 1.0 if data.meta.get("volume_unit", "flops") == "seconds" else float(speed)
    added = np.zeros(data.nranks)
    compute = K.code("compute")
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        c = cost[sl]
        comp = np.flatnonzero(a["kind"][sl] == compute)
        paying = np.flatnonzero(c > 0)
        if not len(comp) or not len(paying):
            continue
        j = np.searchsorted(comp, paying, side="right") - 1      # the compute before
        j[j < 0] = 0                                              # (none: the first after)
        into = np.bincount(j, weights=c[paying], minlength=len(comp))
        a["volume"][sl.start + comp] += into * scale
        added[r] = into.sum()
    return replace(data, actions=a), added
