"""The CPU time of posting a receive and of completing requests: calls SimGrid's replay gives no
time (issue 35, session 12).

SMPI sleeps ``smpi/os``/``smpi/ois`` in a send and ``smpi/or`` when an eager message is received
(:mod:`minitrace.predict.calibration`; ``smpi/or`` is calibrated on a ``Recv`` of a message
an ``Iprobe`` already took in), but an ``MPI_Irecv`` costs nothing in its replay and a wait
costs only that ``smpi/or``.  In a recorded HPCG (2 ranks, 16^3, MPICH, 2-core VM) the rank
that arrived later took 0.76 us a wait (median) where the replay gave 0.29 us, and its Irecvs
0.25 us a call (mean) where it gave none.

Measured (:func:`measure`, in ``minitrace calibrate``; rank 0 and the first other rank on its
node, the others wait):

* ``post``: the time in ``Irecv`` of a message not yet sent, less the same call on
  MPI_PROC_NULL (mpi4py's and the clock's own cost, which a compiled application does not pay);
* ``complete``: per request, the time in ``Waitall`` of :data:`BATCH` 8-byte receives whose
  messages arrived while the rank made no MPI call (as while an application computes: the
  peer says they are sent through a shared-memory flag, not through MPI, so the library has
  not taken them in), less a ``Waitall`` of as many MPI_PROC_NULL requests; the fit takes
  out ``smpi/or`` at 8 bytes, which the replay gives each eager receive already.

Applied (:func:`add_to_compute`): each ``irecv`` adds ``post``, each completion call
(``wait``/``waitany``: its request; ``waitall``/``waitsome``: the requests it lists) adds
``complete`` per receive request it completes, to the compute before the call on its rank (the first compute after
it when none precedes), as more compute: the calls' time is the rank's CPU time.
"""
from __future__ import annotations

import os
import tempfile
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


def measure(comm, partner: int | None) -> dict | None:
    """Rank 0's ``{"post": s, "complete": s}`` (medians, see the module; ``complete`` before
    ``smpi/or`` is taken out); None elsewhere, and on rank 0 without a ``partner`` on its node
    (the flag is shared memory)."""
    from mpi4py import MPI
    me, null = comm.rank, MPI.PROC_NULL
    path = None
    if me == 0 and partner is not None:
        fd, path = tempfile.mkstemp(prefix="minitrace-flag-",
                                    dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        os.write(fd, bytes(8))
        os.close(fd)
    path = comm.bcast(path, root=0)
    out = None
    if path is not None and me in (0, partner):
        flag = np.memmap(path, np.int64, "r+", shape=(1,))
        out = _pair(comm, MPI, partner if me == 0 else 0, me == 0, flag, null)
        del flag
    comm.Barrier()
    if me == 0 and path is not None:
        os.unlink(path)
    return out


def _pair(comm, MPI, peer: int, first: bool, flag, null) -> dict | None:
    bufs = [np.zeros(1, np.float64) for _ in range(BATCH)]
    ack = np.zeros(1, np.float64)
    if not first:
        for i in range(REPS):
            comm.Recv(ack, peer, _TAG + 1)
            for b in bufs:
                comm.Send(b, peer, _TAG)
            flag[0] = i + 1                             # (sent: no MPI call tells rank 0)
        return None

    def go(i):                                          # (the peer sends, rank 0 waits)
        comm.Send(ack, peer, _TAG + 1)
        while flag[0] != i + 1:
            pass
    post, done = _rounds(comm, MPI, bufs, peer, go)
    null_post, null_done = _rounds(comm, MPI, bufs, null)
    return {"post": max(float(np.median(post) - np.median(null_post)), 0.0),
            "complete": max(float(np.median(done) - np.median(null_done)) / BATCH, 0.0)}


def _rounds(comm, MPI, bufs, source: int, ready=lambda i: None):
    """Seconds in the first ``Irecv`` from ``source`` and in the ``Waitall`` of all
    :data:`BATCH`, each of :data:`REPS` rounds; ``ready(i)`` between (not timed)."""
    post, done = np.empty(REPS), np.empty(REPS)
    for i in range(REPS):
        t0 = _TIMER()
        reqs = [comm.Irecv(bufs[0], source, _TAG)]
        post[i] = _TIMER() - t0
        reqs += [comm.Irecv(b, source, _TAG) for b in bufs[1:]]
        ready(i)
        t0 = _TIMER()
        MPI.Request.Waitall(reqs)
        done[i] = _TIMER() - t0
    return post, done


def fit(runs: list[dict], recv_overhead: float = 0.0) -> dict:
    """The median of each term over the runs that measured it, ``complete`` less
    ``recv_overhead`` (``smpi/or`` at 8 bytes: the replay gives it already; not below 0); {}
    when no run measured them."""
    have = [r["attrs"]["call_costs"] for r in runs if r["attrs"].get("call_costs")]
    if not have:
        return {}
    out = {k: float(np.median([c[k] for c in have])) for k in TERMS}
    out["complete"] = max(out["complete"] - recv_overhead, 0.0)
    return out


def valid(stored) -> bool:
    """A fit's table: empty, or every term a finite number of seconds >= 0."""
    return isinstance(stored, dict) and (not stored or (
        set(stored) == set(TERMS) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
            and v >= 0 for v in stored.values())))


def per_call(data, costs: dict) -> np.ndarray:
    """Seconds each action of ``data`` costs by these terms: ``post`` for an ``irecv``,
    ``complete`` for each receive request (an ``irecv``'s) a completion call completes (a
    send's request is left out: its message left at the send, ``smpi/ois``); 0 elsewhere."""
    a = data.actions
    kind = a["kind"]
    rows = np.arange(len(a))
    recv = kind == K.code("irecv")
    out = np.where(recv, costs["post"], 0.0)
    rank = data.rank_of(rows)
    span = int(max(a["request"].max(initial=0), 0)) + 1

    def key(ranks, ids):                 # (ids are per rank; a negative one, MPI_REQUEST_NULL
        ids = np.asarray(ids, dtype=np.int64)            # or one unknown, names no receive)
        return np.where(ids >= 0, ranks.astype(np.int64) * span + ids, -1)
    received = key(rank[recv], a["request"][recv])
    received = received[received >= 0]
    one = np.flatnonzero(K.mask(_ONE)[kind])
    hit = np.isin(key(rank[one], a["request"][one]), received)
    out[one[hit]] += costs["complete"]
    listed = np.flatnonzero(K.mask(_LISTED)[kind])
    if len(listed):
        at, ids = data.vector_entries(listed)
        hit = np.isin(key(rank[at], ids), received)
        np.add.at(out, at[hit], costs["complete"])
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
