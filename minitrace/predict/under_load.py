"""The load a calibration ran under, and the flag a prediction from a loaded one carries.

A calibration made while other processes take the cores measures a slower machine: its ranks
wait for each other's turns on a core, so its network times come out long and its background
(:func:`minitrace.predict.calibration.background`) large, and every prediction made with it
comes out high.  Its ranks cannot see that load in their own times, so it is measured beside
them: on each node, the CPU time all of its CPUs were busy while the calibration measured
(``/proc/stat``: user, nice, system, irq, softirq and steal, the hypervisor's share, all
processes counted), less the CPU time of the calibration's own ranks on that node (their
``getrusage``), over the wall time: the cores other work took on average
(:func:`start`/:func:`stop`).  The launcher's own processes are counted as other work: they
sleep while the ranks measure.

The run stores it per node (``other_load``, docs/PREDICT.md); the fit keeps the most loaded
node of the most loaded run (``Calibration.other_load``) and :func:`flag` says, with every
prediction made with it, when other work took more than :data:`MAX_OTHER_SHARE` of its cores.
"""
from __future__ import annotations

import math
import os
import resource
import time

#: Above this share of a node's cores taken by other work on average while a calibration
#: measured, its predictions are flagged.  An idle machine's daemons and the launcher, asleep,
#: take a few percent; one busy process beside a 2-rank calibration on 2 cores takes a third
#: of them when the scheduler weighs the three alike.
MAX_OTHER_SHARE = 0.25
#: the run attribute: per node (in the order of ``rank_to_node``'s indices), cores other work
#: took on average while the run measured; absent in runs made before it (2026-12-02) and
#: where ``/proc/stat`` cannot be read (the load is then unknown)
ATTR = "other_load"
STAT = "/proc/stat"


def busy_seconds() -> float | None:
    """CPU seconds this machine's CPUs were busy since boot, all processes together (the
    ``cpu`` line of ``/proc/stat``: every field but idle and iowait), None where it cannot be
    read (not Linux)."""
    try:
        with open(STAT) as f:
            fields = f.readline().split()
        ticks = [int(x) for x in fields[1:9]]
    except (OSError, ValueError):
        return None
    if fields[:1] != ["cpu"] or len(ticks) < 8:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = ticks
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def own_seconds() -> float:
    """CPU seconds this process (every thread of it) has taken, user and system."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def start(comm, leader: bool) -> tuple:
    """Open the window on every rank at once (``leader``: the rank that reads its node's
    ``/proc/stat``, one per node): what :func:`stop` takes."""
    comm.Barrier()
    return own_seconds(), busy_seconds() if leader else None, time.monotonic()


def stop(comm, started: tuple, nodes: list) -> list[float] | None:
    """Close the window opened by :func:`start` on every rank: on rank 0, per node (``nodes``:
    each rank's node, in order of first appearance) the cores other work took on average, the
    node's busy CPU time less its ranks' over the wall time; None on the other ranks, and on
    rank 0 when a node could not read ``/proc/stat``."""
    own0, busy0, wall0 = started
    comm.Barrier()
    own, busy, wall = own_seconds() - own0, None, time.monotonic() - wall0
    if busy0 is not None:
        now = busy_seconds()
        busy = now - busy0 if now is not None else None
    got = comm.gather((own, busy, wall), root=0)
    if got is None:
        return None
    out = []
    for node in dict.fromkeys(nodes):
        mine = [g for g, n in zip(got, nodes) if n == node]
        read = [(b, w) for _, b, w in mine if b is not None]
        if len(read) != 1 or not read[0][1] > 0:
            return None
        busy, wall = read[0]
        out.append(max(busy - sum(o for o, _, _ in mine), 0.0) / wall)
    return out


def worst(loads: list[float], cores: list[int], nodes: list) -> tuple[float, int]:
    """(cores other work took, cores of that node) of the node whose share of its cores was
    the largest (``loads``: per node in order of first appearance in ``nodes``, each rank's
    node; ``cores``: per rank)."""
    of = [cores[nodes.index(n)] for n in dict.fromkeys(nodes)]
    i = max(range(len(loads)), key=lambda n: loads[n] / of[n])
    return float(loads[i]), int(of[i])


def valid(stored, nodes: list) -> bool:
    """A run's stored :data:`ATTR`: one finite number >= 0 per node of ``nodes``."""
    return isinstance(stored, list) and len(stored) == len(set(nodes)) and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0
        for x in stored)


def flag(cal) -> str:
    """The line a prediction made with calibration ``cal`` carries when other work took more
    than :data:`MAX_OTHER_SHARE` of a node's cores while it measured; "" when it took less or
    the load is unknown (calibrations made before it was measured)."""
    got = cal.other_load
    if not got or not got["cores"] > MAX_OTHER_SHARE * got["of"]:
        return ""
    return (f"{cal.path}: calibrated under load (other processes took {got['cores']:.2g} of "
            f"{got['of']} cores on average while run {got['run']} measured): its rates are "
            f"low, predictions high; calibrate again on a quieter machine")
