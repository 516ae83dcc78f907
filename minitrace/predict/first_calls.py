"""The one-time set-up of a rank's first MPI call of each kind, replayed at the cost the recording
shows (issue 35, session 11).

An MPI library sets things up the first time a kind of call is made: the shared-memory cells of
a connection, a collective's schedule and scratch buffers, the first touch of the pages it
copies through.  Calibrate measures warmed-up calls (two untimed iterations before every timed
one), so the replay gives a first call its steady cost.  On the 2-core VM the first 4 MiB-block
all-to-all of a transpose took 1.6-2.3% of its run above its later ones on the rank that
arrived last (its 24 MiB of buffers touched for the first time), and the transpose's
self-check moved from -3.0..-5.9% to -1.2..-3.7% with this term (66 recordings of 11 programs;
benchmarks/RESULTS.md).

The cost is the trace's own: per kind, each rank's first call's duration above the median
duration of its calls of that kind, the smallest over the ranks (the rank that arrived last
paid it without waiting for another; what the others spent above it was waiting, which the
replay draws from the compute before).  A kind not every rank called is left out (a first
point-to-point call of one rank cannot be told from its wait for a partner).  The cost is
added to the compute that precedes each rank's first call of the kind (none when no compute
precedes it).  Only for a prediction on the machine the trace was recorded on: another
machine's set-up is not this one's."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import kinds as K

#: kinds that are not MPI calls (their time is the trace's, not a call's)
_NOT_CALLS = K.NON_MPI | {"init", "finalize"}


def setup_costs(data) -> dict[int, float]:
    """``{kind code: seconds}``: each kind's first-call set-up (see the module), for the kinds
    every rank called (a timed trace; an untimed one has none)."""
    a = data.actions
    if not len(a) or not np.isfinite(a["t_start"]).all() or not np.any(a["t_end"]):
        return {}
    calls = ~K.mask(_NOT_CALLS)[a["kind"]]
    excess: dict[int, list[float]] = {}
    for r in range(data.nranks):
        ra = a[data.rank_slice(r)]
        mine = calls[data.rank_slice(r)]
        dur = ra["t_end"] - ra["t_start"]
        for k in np.unique(ra["kind"][mine]):
            d = dur[ra["kind"] == k]
            excess.setdefault(int(k), []).append(max(float(d[0] - np.median(d)), 0.0))
    return {k: min(e) for k, e in excess.items() if len(e) == data.nranks and min(e) > 0}


def with_first_calls(data):
    """(``data`` with each kind's set-up cost added to the compute before every rank's first
    call of that kind, seconds added per rank), for a trace whose compute is in seconds;
    ``data`` itself and zeros when there is nothing to add."""
    added = np.zeros(data.nranks)
    places = placed(data)
    if not places:
        return data, added
    a = data.actions.copy()
    for row, _, cost in places:
        a["volume"][row] += cost
    np.add.at(added, data.rank_of(np.array([p[0] for p in places])), [p[2] for p in places])
    return replace(data, actions=a), added


def placed(data) -> list[tuple[int, int, float]]:
    """(compute row, kind code, seconds) of each set-up cost :func:`with_first_calls` adds: the
    compute before each rank's first call of each kind :func:`setup_costs` gives (a trace in
    seconds; none where no compute precedes that call)."""
    costs = setup_costs(data) if data.meta.get("volume_unit") == "seconds" else {}
    out = []
    compute = K.code("compute")
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        kind = data.actions["kind"][sl]
        for k, c in costs.items():
            first = int(np.flatnonzero(kind == k)[0])
            before = np.flatnonzero(kind[:first] == compute)
            if len(before):
                out.append((sl.start + int(before[-1]), k, c))
    return out
