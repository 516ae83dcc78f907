"""Which kernel's after-compute cost a program pays, fitted on its own recording (issue 35,
session 15).

The calibration measures what an exchange costs after two kernels' computes
(:mod:`.after_compute`): multiply-add chains on registers, which evict nothing, and a STREAM
triad through memory, which evicts the private caches.  A trace holds no footprint, so the
replay took the mean of the two curves, and over-predicted the programs whose compute evicts
little: session 14's self-check parts put point-to-point 1.5-3.9% of the run above the
measured on the 27-point stencil (a register loop: its 2 KiB halo after 361 us of compute took
4.6 us for the whole exchange, the mean's cost alone was 9.9 us, the registers' 4.5), the
pipeline and NPB LU (benchmarks/RESULTS.md).  On the recording machine the recording says
which its compute resembles: every exchange after a compute was timed.  The character is a
property of the program (what its compute leaves in the caches); the weights are fitted and
used on the recording machine only (a translated prediction keeps the mean: carrying them to
another machine's curves is not wired).

:func:`fit` takes the **stretches** of calls after a compute of at least the first measured
duration (:func:`.after_compute.stretches`: until the rank's next such compute) made of calls
the calibration prices (:data:`PRICED`: blocking and non-blocking sends and receives, their
completions, allreduces on MPI_COMM_WORLD, MPI_Comm_size; as many requests completed in the
stretch as posted in it; no rank's first call of a kind, whose set-up :mod:`.first_calls`
replays apart) in which the rank did not wait: every message it receives was sent (the n-th
send of its stream matched to the n-th receive; a trace with wildcard receives, sendrecvs or
persistent requests has no match) before the stretch began, every message it sends from the
eager threshold on had its receive posted before, and every other rank had entered each of
its allreduces (the n-th collective on MPI_COMM_WORLD of each rank) before (a partner that
entered and was then descheduled is not seen: a loaded recording's excess is too large).  Each
one's **excess**: its calls' recorded time, less the recorder's clock reads in them (at a
call's entry after a gap above the recorder's gate; each the rank's ``recorder_seconds`` over
its reads, as the self-check splits it), less their warm cost by the calibration
(:func:`warm_seconds`); a recording whose ranks lost their core inside their calls
(:data:`MIN_IN_CALL_SHARE`) has none.  Per **site** (the stretch's calls: kinds and bytes each
way, in any order, on any rank), the median of the excess, of the warm cost and of each
kernel's penalty (:func:`.after_compute.added_seconds`: what the replay adds) over its
stretches.  A site is used with :data:`MIN_STRETCHES` stretches or more, and where the two
kernels' penalties differ by :data:`SEPARATION` times its warm cost or more: the warm cost is
priced from the ping-pong fits, which can miss it by as much as itself.  The memory kernel's
weight w (the registers' 1 - w) minimizes the squared difference between the sites' excess and
``(1 - w) R + w M``, each site weighted by its stretches, clipped to [0, 1]: the calibrated
curves are the range, so the recording's own noise moves w within it and no further.  No
usable site: no character (the replay keeps the mean).

On session 15's pass (benchmarks/RESULTS.md): the 27-point stencil's 2 KiB exchanges after
765 us took 1.6 us above their warm cost (median), the register curve gives 3.5 us, the memory
one 9.7 (registers alone, w = 0); NPB LU W's 1,240-byte receives after 70 us, 0.21 us against
0.31 and 1.67 (registers); HPCCG's 8-byte allreduces after its 8.3 ms of sparse compute 16.9
us against 5.7 and 7.3 (memory alone).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import after_compute
from .calibration import Calibration, _stored_value
from .. import kinds as K
from ..rawlayout import CPU_READ_GATE_NS

#: the calls whose warm cost :func:`warm_seconds` prices (a stretch with any other is left
#: out): an allreduce on MPI_COMM_WORLD only, MPI_Comm_size at no cost (a local call)
PRICED = frozenset({"irecv", "isend", "send", "recv", "wait", "waitall", "allreduce",
                    "comm_size"})
#: the two kernels the weight is between (the low and the high curve)
LOW, HIGH = "registers", "memory"
#: a site is used where the kernels' penalties differ by at least this many times its warm
#: cost: that is priced from ping-pong fits, which can miss it by as much as itself (NPB LU's
#: 1,240-byte sends after a compute took 0.36 us where the Debian MPICH calibration's smpi/os
#: is 1.0 us), so a site whose curves differ by less cannot tell the kernels apart
SEPARATION = 2.0
#: the fewest stretches a site is used with (their median; fewer are one moment's noise: on
#: a loaded pass HPCG 16^3's 5-8 allreduces gave the memory kernel, then the registers)
MIN_STRETCHES = 20
#: no fit when a rank got less than this share of a core inside its MPI calls (CPU over wall
#: time there, ``in_mpi_seconds``; the libraries busy-poll): a rank descheduled while its
#: partners' calls waited for it makes their unwaited stretches look long (on a loaded pass
#: the 27-point stencil's recordings at 5% and 47% gave the memory kernel, at 99% registers)
MIN_IN_CALL_SHARE = 0.8
_GATE = CPU_READ_GATE_NS * 1e-9


@dataclass
class Character:
    """A program's after-compute character: the kernels' weights and what they were fitted on,
    or (``weights`` None: the replay takes the kernels' mean) why there is no fit."""

    weights: dict[str, float] | None    # kernel -> weight (they sum to 1); None: no fit
    sites: int = 0                      # sites the fit used
    stretches: int = 0                  # their stretches
    excess: float = 0.0                 # s, the sites' median excess times their stretches
    penalties: dict[str, float] | None = None   # kernel -> s, those sites' penalty with it
    reason: str = ""                    # why there is no fit

    def summary(self) -> str:
        """One line: the weights and what they rest on, or why the kernels' mean is taken."""
        if self.weights is None:
            return f"the mean of the calibration's kernels: no fit ({self.reason})"
        share = ", ".join(f"{w:.0%} {k}" for k, w in self.weights.items())
        alone = ", ".join(f"{k} {s:.3g}" for k, s in self.penalties.items())
        return (f"{share} (fitted on {self.stretches} exchanges after a compute at {self.sites} "
                f"call sites: {self.excess:.3g} s above their warm cost; {alone} s)")


def warm_seconds(data, cal: Calibration) -> np.ndarray:
    """Each action's warm cost by the calibration (0 for the others): an ``irecv`` the cost of
    posting it and of completing its request (``call_costs``) and of receiving its message;
    a ``recv`` of receiving it; receiving, ``smpi/or`` below the eager threshold and the
    one-way ping-pong time from it (the transfer); an ``isend`` ``smpi/ois``; a ``send``
    ``smpi/os`` below the threshold, the one-way time from it; an allreduce on MPI_COMM_WORLD
    the one-way time at its bytes per round of recursive doubling (log2 of the ranks, rounded
    up: the replay's algorithm, prediction.WORLD_ALGORITHMS).  The completions cost nothing
    more: an ``irecv``'s price holds its completion."""
    a = data.actions
    kind = a["kind"]
    out = np.zeros(len(a))
    costs = cal.call_costs or {}

    def at(name, nbytes):
        return _stored_value(cal.segments.get(name), nbytes.astype(float))
    for name, field, eager, extra in (("recv", "bytes_recv", "recv", 0.0),
                                      ("irecv", "bytes_recv", "recv",
                                       costs.get("post", 0.0) + costs.get("complete", 0.0)),
                                      ("send", "bytes_sent", "send", 0.0)):
        rows = np.flatnonzero(kind == K.code(name))
        s = np.where(a["peer"][rows] < 0, 0, a[field][rows])        # (MPI_PROC_NULL: none)
        out[rows] = extra + np.where(s < cal.eager_threshold, at(eager, s), cal.one_way(s))
    rows = np.flatnonzero(kind == K.code("isend"))
    out[rows] = at("isend", np.where(a["peer"][rows] < 0, 0, a["bytes_sent"][rows]))
    rows = np.flatnonzero((kind == K.code("allreduce")) & (a["comm"] == 0))
    rounds = np.ceil(np.log2(max(data.nranks, 2)))
    out[rows] = rounds * cal.one_way(a["bytes_sent"][rows].astype(float))
    return out


def fit(data, cal: Calibration) -> Character:
    """The character of ``data`` (a timed trace in seconds, recorded on the calibrated
    machine) against ``cal``'s after-compute curves (see the module); without weights, and
    the reason, when it cannot be fitted (no curves, no timestamps, a rank that lost its core
    in its calls, no usable site)."""
    s, reason = _sites(data, cal)
    if s is None:
        return Character(None, reason=reason)
    n, d = s["n"].to_numpy(float), (s[HIGH] - s[LOW]).to_numpy()
    w = float(np.clip(np.sum(n * (s["x"].to_numpy() - s[LOW].to_numpy()) * d)
                      / np.sum(n * d * d), 0.0, 1.0))
    return Character({LOW: 1.0 - w, HIGH: w}, len(s), int(n.sum()), float(np.sum(n * s["x"])),
                     {k: float(np.sum(n * s[k])) for k in (LOW, HIGH)})


def _sites(data, cal: Calibration) -> tuple[pd.DataFrame | None, str]:
    """Per site the fit uses (see the module): ``n`` stretches, the median over them of the
    excess ``x`` and the warm cost ``warm`` (s) and of each kernel's penalty there (columns
    :data:`LOW`, :data:`HIGH`), and ``row``, the first row of one of its stretches; when there
    is none, None and why."""
    table = cal.after_compute
    a = data.actions
    if not table:
        return None, "the calibration has no after-compute curves"
    if data.meta.get("volume_unit") != "seconds" or not len(a) \
            or not np.isfinite(a["t_start"]).all() or not np.any(a["t_end"]):
        return None, "the trace has no timestamps or no compute in seconds"
    inside = np.asarray(data.meta.get("in_mpi_seconds", []), float).reshape(-1, 2)
    if np.any(inside[:, 0] < MIN_IN_CALL_SHARE * inside[:, 1]):
        return None, (f"a rank had less than {MIN_IN_CALL_SHARE:.0%} of a core inside its "
                      f"MPI calls: its partners' waits would look like costs")
    group, _ = after_compute.stretches(data, table["seconds"][0], 1.0)
    x, warm, site, use = _excess(data, cal, group)
    if x is None:
        return None, ("no exchange after a compute that the calibration prices and in which "
                      "the rank did not wait")
    first = _first_rows(group)
    ok = np.flatnonzero(use)
    f = pd.DataFrame({"site": site[ok], "x": x[ok], "warm": warm[ok], "row": first[ok]})
    for k in (LOW, HIGH):
        rows, added, *_ = after_compute.added_seconds(data, table, 1.0, k)
        f[k] = np.bincount(group[rows], weights=added, minlength=len(first))[ok]
    out = f.groupby("site", sort=False).agg(
        n=("x", "size"), x=("x", "median"), warm=("warm", "median"),
        **{k: (k, "median") for k in (LOW, HIGH)}, row=("row", "first"))
    apart = out[HIGH] - out[LOW]
    many = out["n"] >= MIN_STRETCHES
    out = out[(apart >= SEPARATION * out["warm"]) & (apart > 0) & many]
    if len(out):
        return out.reset_index(drop=True), ""
    if not many.any():
        return None, (f"no call site with {MIN_STRETCHES} or more unwaited exchanges after a "
                      f"compute")
    return None, ("where the exchanges are, the two kernels' costs differ by less than "
                  f"{SEPARATION:g} times the exchanges' own cost: they cannot be told apart")


def _first_rows(group: np.ndarray) -> np.ndarray:
    """The first row of each stretch (rows in order: each stretch's rows in one block)."""
    return np.flatnonzero(np.r_[True, group[1:] != group[:-1]])


def _excess(data, cal: Calibration, group: np.ndarray):
    """(each stretch's excess and warm cost (s), its site's code, whether the fit may use
    it); Nones when no stretch may."""
    a = data.actions
    kind = a["kind"]
    ng = group[-1] + 1
    first = _first_rows(group)
    call = ~K.mask(K.NON_MPI)[kind]
    opened = (kind[first] == K.code("compute")) & (a["volume"][first] >= cal.after_compute[
        "seconds"][0])
    posted = K.mask({"irecv", "isend"})[kind].astype(float)
    done = np.where(kind == K.code("wait"), 1.0,
                    np.where(kind == K.code("waitall"), a["vec_len"], 0.0))
    bad = call & ~K.mask(PRICED)[kind] | ~_unwaited(data, group, first, cal.eager_threshold)
    at = np.flatnonzero(call)            # (a rank's first call of a kind: its set-up is
    firsts = np.unique(np.c_[data.rank_of(at), kind[at]], axis=0, return_index=True)[1]
    bad[at[firsts]] = True               # replayed apart, first_calls.py)
    use = opened & (np.bincount(group, weights=call, minlength=ng) > 0) \
        & (np.bincount(group, weights=bad, minlength=ng) == 0) \
        & (np.bincount(group, weights=posted - done, minlength=ng) == 0)
    if not use.any():
        return None, None, None, None
    dur = np.where(call, a["t_end"] - a["t_start"], 0.0)
    warm = np.bincount(group, weights=np.where(call, warm_seconds(data, cal), 0.0),
                       minlength=ng)
    x = np.bincount(group, weights=dur - _reads(data, call), minlength=ng) - warm
    # a site: the stretch's calls (kind, bytes each way; in any order: two ranks of an
    # exchange post their neighbours' receives in different orders), hashed
    h = np.where(call, _mix(kind.astype(np.uint64), a["bytes_sent"].astype(np.uint64),
                            a["bytes_recv"].astype(np.uint64)), np.uint64(0))
    return x, warm, np.add.reduceat(h, first), use


def _unwaited(data, group: np.ndarray, first: np.ndarray, eager: int) -> np.ndarray:
    """Per action: False for a point-to-point call whose stretch may have waited for its
    peer: a receive whose message's send (the n-th of its stream, source, destination, tag
    and communicator) had not returned when its stretch began (or not matched: a wildcard,
    a stream with sends or receives of other kinds), a send from the eager threshold whose
    receive was not posted when the send began; True elsewhere (MPI_PROC_NULL moves
    nothing)."""
    a = data.actions
    kind = a["kind"]
    out = _collectives_unwaited(data, group, first)
    rank = data.rank_of(np.arange(len(a)))
    sends = np.flatnonzero(K.mask({"send", "isend"})[kind] & (a["peer"] >= 0))
    recvs = np.flatnonzero(K.mask({"recv", "irecv"})[kind] & (a["peer"] >= 0))
    others = np.flatnonzero(K.mask(K.SENDS | K.RECVS | K.SENDRECVS | K.NONBLOCKING_SENDRECVS
                                   | K.STARTS)[kind] & ~K.mask({"send", "isend", "recv",
                                                                "irecv"})[kind])
    wild = (a["flags"] & (K.FLAG_ANY_SOURCE | K.FLAG_UNRESOLVED)) != 0
    out[recvs[wild[recvs]]] = False
    if len(others) or wild[recvs].any():       # (streams a plain n-th match may misalign)
        out[sends] = out[recvs] = False
        return out
    f = pd.concat([pd.DataFrame({"src": rank[r], "dst": a["peer"][r], "row": r, "send": True})
                   for r in [sends]] + [pd.DataFrame({"src": a["peer"][r], "dst": rank[r],
                                                      "row": r, "send": False})
                                        for r in [recvs]], ignore_index=True)
    f["tag"], f["comm"] = a["tag"][f["row"]], a["comm"][f["row"]]
    key = ["src", "dst", "tag", "comm"]
    f["n"] = f.groupby(key + ["send"], sort=False).cumcount()
    m = f[f["send"]].merge(f[~f["send"]], on=key + ["n"], how="outer", suffixes=("_s", "_r"))
    out[m["row_s"].dropna().astype(np.int64)] = False
    out[m["row_r"].dropna().astype(np.int64)] = False
    m = m.dropna(subset=["row_s", "row_r"])
    s, r = m["row_s"].to_numpy(np.int64), m["row_r"].to_numpy(np.int64)
    out[r] = a["t_end"][s] <= a["t_end"][first[group[r]]]          # (its compute's end)
    out[s] = (a["bytes_sent"][s] < eager) | (a["t_start"][r] <= a["t_start"][s])
    return out


def _collectives_unwaited(data, group: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Per action: False for a collective on a communicator other than MPI_COMM_WORLD, or one
    that another rank entered (its n-th on MPI_COMM_WORLD, every rank calling as many) after
    this one's stretch began; True elsewhere."""
    a = data.actions
    out = np.ones(len(a), bool)
    coll = K.mask(K.ALL_COLLECTIVES | K.ALL_NEIGHBOR_COLLECTIVES)[a["kind"]]
    out[coll & (a["comm"] != 0)] = False
    rows = np.flatnonzero(coll & (a["comm"] == 0))
    if not len(rows):
        return out
    rank = data.rank_of(rows)
    counts = np.bincount(rank, minlength=data.nranks)
    if data.nranks < 2 or (counts != counts[0]).any():
        out[rows] = False
        return out
    start = a["t_start"][rows].reshape(data.nranks, -1)       # (rows in order: rank-major)
    order = np.sort(start, axis=0)
    latest, second = order[-1], order[-2]
    others = np.where(start == latest, second, latest)      # the latest of the other ranks
    out[rows] = others.ravel() <= a["t_end"][first[group[rows]]]
    return out


def _mix(*columns: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each row's values (splitmix64 steps; wrapping arithmetic)."""
    out = np.zeros(len(columns[0]), np.uint64)
    with np.errstate(over="ignore"):
        for c in columns:
            z = out ^ (c + np.uint64(0x9E3779B97F4A7C15))
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            out = z ^ (z >> np.uint64(31))
    return out


def _reads(data, call: np.ndarray) -> np.ndarray:
    """Each row's recorder clock read in its duration at entry (a call after a gap since the
    rank's previous call above the recorder's gate: the rank's ``recorder_seconds`` over its
    reads, at entry and at the exit of calls above the gate, as the self-check splits it); 0
    without ``recorder_seconds``."""
    own = data.meta.get("recorder_seconds")
    a = data.actions
    out = np.zeros(len(a))
    if own is None:
        return out
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        at = np.flatnonzero(call[sl])
        if len(at) < 2:
            continue
        ra = a[sl]
        gap = ra["t_start"][at][1:] - ra["t_end"][at][:-1]
        entry = at[1:][gap > _GATE]
        leave = np.sum(((ra["t_end"] - ra["t_start"])[at] > _GATE) & (at + 1 < len(ra)))
        if len(entry) + leave and own[r] > 0:
            out[sl.start + entry] = own[r] / (len(entry) + leave)
    return out
