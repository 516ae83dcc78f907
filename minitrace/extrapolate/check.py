"""The self-check: extrapolate the largest run from the smaller ones and compare, side by
side, the structure and the replayed time of the extrapolated and the recorded trace."""
from __future__ import annotations

import os
import tempfile

import numpy as np

from ..errors import MinitraceError
from ..compress import signatures as SG
from ..replay import replay
from ..validate import validate
from ..trace import open as open_trace
from . import build as B
from .canonical import canonical
from .polled import polled_waits
from ..tested_waits import tested_waits
from . import grid as GR
from . import phases as PH
from . import split_comms as SC
from . import structure as ST


def load_runs(paths: list[str]) -> list[ST.Run]:
    """Each trace file as a run (either form), smallest first, on the grid the runs form
    (:func:`.grid.run_grids`; none for a 1-D program)."""
    datas = []
    for path in paths:
        with open_trace(path) as t:
            datas.append(t.data())
    return runs_of(paths, datas)


def runs_of(paths: list[str], datas: list) -> list[ST.Run]:
    """Traces in memory as runs, smallest first, on their common kind of grid, their polls as
    the waits they stand for (:mod:`.polled`), their completed ``testall`` calls as the waits
    they stand for (:mod:`minitrace.tested_waits`), their commuting operations in canonical order
    (:mod:`.canonical`; on a grid, by grid offset)."""
    datas = [_tested(p, _polled(p, d)) for p, d in zip(paths, datas)]
    ordered = [canonical(d)[0] for d in datas]
    sigs = [SG.encode(d) for d in ordered]
    phased = None if any(GR.recorded(d) is not None for d in ordered) else \
        _phased(paths, ordered, sigs)
    if phased is not None:
        return phased
    notes: list[str] = []
    grids = GR.run_grids(paths, ordered, [s.table["peer_mode"][s.ids] == 1 for s in sigs], notes)
    for line in notes:
        print(f"note: {line}")
    if grids[0] is not None:
        ordered = [canonical(d, g)[0] for d, g in zip(datas, grids)]
        sigs = [SG.encode(d) for d in ordered]
    runs = [ST.load(p, d, g, s) for p, d, g, s in zip(paths, ordered, grids, sigs)]
    if grids[0] is None and len({tuple(sorted(r.classes)) for r in runs}) > 1 and \
            all(_open_line(d, s) for d, s in zip(ordered, sigs)):
        # the ends of an open line as grid positions, which can be composed: at 2 ranks the
        # last rank is the bulk (the middle rank) and the runs' classes differ
        grids = [GR.Grid((d.nranks,), (False,)) for d in datas]
        runs = [ST.load(p, d, g, s) for p, d, g, s in zip(paths, ordered, grids, sigs)]
    return sorted(runs, key=lambda r: r.nranks)


def _phased(paths: list[str], datas: list, sigs: list) -> list[ST.Run] | None:
    """The runs without a grid, their loops of phases folded (:mod:`.phases`), when the
    largest run has some, their counts follow the scale and the runs are then one program;
    else None.  Their partners are every rank: on a small torus all are neighbours (2x2 at 4
    ranks, 2x2x2 at 8), which is no grid."""
    largest = max(range(len(datas)), key=lambda k: datas[k].nranks)
    ref = ST.load(paths[largest], datas[largest], None, sigs[largest])
    made = PH.fold([ref])
    if not made:
        return None
    runs = [ref if k == largest else ST.load(p, d, None, s)
            for k, (p, d, s) in enumerate(zip(paths, datas, sigs))]
    for run in runs:                  # (the others folded where the largest is: PH.fold's)
        if run is not ref:
            PH.follow(ref, run)
    if ST.differences(runs, peers=False) or \
            all(PH.counts(r) == PH.counts(ref) for r in runs):
        return None
    print(f"note: {os.path.basename(ref.path)}: {made} loop(s) of phases (a block of calls "
          f"repeated with its peers and tags advancing by one step per phase: an exchange "
          f"with every rank in P - 1 phases), their counts fitted; peers taken relative to "
          f"the rank, not on a grid")
    return sorted(runs, key=lambda r: r.nranks)


def _tested(path: str, data):
    data, rewritten = tested_waits(data)
    if rewritten:
        print(f"note: {os.path.basename(path)}: {rewritten} MPI_Testall that completed taken as "
              f"incomplete and followed by the MPI_Waitall it stands for (arrival order "
              f"decides which tests complete)")
    return data


def _polled(path: str, data):
    data, failed, runs = polled_waits(data)
    if failed:
        print(f"note: {os.path.basename(path)}: {runs} runs of polls ({failed} that completed "
              f"nothing) taken as the MPI_Waitall of what they completed and the work done "
              f"between them (arrival order decides how many polls fail and which succeed)")
    return data


def _open_line(data, sig) -> bool:
    """Every rank-relative peer is a neighbour on an open line (rank +- 1, no wrap)."""
    rel = sig.table["peer_mode"][sig.ids] == 1
    step = data.actions["peer"][rel].astype(np.int64) - data.rank_of()[rel]
    return bool(rel.any()) and bool(np.all(np.abs(step) == 1))


def same_structure(a: ST.Run, b: ST.Run) -> list[str]:
    """Where two runs at the same scale differ in structure: shapes, peers, each rank's
    comm_split color and key, loop counts."""
    found = ST.differences([a, b]) + SC.differences(a, b)
    if found:
        return found
    return [f"rank class {key}: loop counts {[lp.count for lp in rc.loops]} vs "
            f"{[lp.count for lp in b.classes[key].loops]}"
            for key, rc in a.classes.items()
            if [lp.count for lp in rc.loops] != [lp.count for lp in b.classes[key].loops]]


def self_check(runs: list[ST.Run], scaling: str, threshold: float, force: bool,
               compute_rate: str, keep: str | None = None, spread: bool = True,
               seed: int = 0) -> dict:
    """Extrapolate the largest run from the others (3 or more) on the largest run's grid,
    compare structures and replay both; ``keep``: where to write the extrapolated trace
    (else a temporary file); ``spread``, ``seed``: as :func:`.build.extrapolate`'s."""
    if len(runs) < 4:
        raise MinitraceError("--check needs 4 or more runs: the largest is predicted from "
                             "the others (3 or more)")
    target = runs[-1]
    dims = None if target.grid is None else target.grid.dims
    data, parameters, forced = B.extrapolate(runs[:-1], target.nranks, scaling, force,
                                             threshold, dims, spread, seed)
    extrapolated = ST.load("extrapolated", data, target.grid)
    PH.follow(target, extrapolated)
    # forced fits may give a message one size at its send and another at its receive: SMPI
    # aborts on a receive smaller than its message (MPI_ERR_TRUNCATE), so it is not replayed
    mismatched = validate(data).counts.get("size-mismatch", 0)
    with tempfile.TemporaryDirectory() as tmp:
        path = keep or os.path.join(tmp, "extrapolated.h5")
        B.write(path, data)
        times = [None if mismatched and p == path else
                 replay(p, compute_rate=compute_rate, lossy=True).simulated_time
                 for p in (path, target.path)]
    return {"target": target, "differences": same_structure(extrapolated, target),
            "provenance": data.meta["extrapolated"], "mismatched": mismatched,
            "parameters": parameters, "forced": forced, "times": times}


def report(result: dict) -> int:
    """Print the self-check; exit status 0 when the structure is identical."""
    target = result["target"]
    B.print_table(result["parameters"], target.nranks)
    B.print_grid(result["provenance"])
    for line in result["forced"]:
        print(f"forced: {line}")
    diff = result["differences"]
    print(f"structure at {target.nranks} ranks: " +
          ("identical to the recorded run" if not diff else "differs:\n  " + "\n  ".join(diff)))
    extrapolated, recorded = result["times"]
    if extrapolated is None:
        print(f"replayed time: recorded {recorded:.6g} s; the extrapolated trace is not "
              f"replayed: {result['mismatched']} of its messages have another size at their "
              f"receive than at their send (forced fits; record more scales)")
        return 1
    gap = (extrapolated - recorded) / recorded if recorded > 0 else np.nan
    print(f"replayed time: extrapolated {extrapolated:.6g} s, recorded {recorded:.6g} s "
          f"({gap:+.2%})")
    return 0 if not diff else 1
