"""Iteration sampling: replay a main loop's iterations until the simulated time per iteration is
steady, skip the rest, account for them, and replay what follows the loop for real.

The loops come from the trace's loop structure (a compressed file's stored grammar, else a loop
grammar built on each action's structure, :func:`structure_ids`; :mod:`minitrace.compress`'s
folding either way; where its loops do not dominate, the same on the trace read as steps,
each run of calls that do not wait one step, so that polls whose number and success the
timing decides do not hide a pipelined sweep's iterations: :func:`loops_of`): per loop, the
row range of each iteration on each rank (``bounds`` [nranks, iterations + 1]); a loop must be
on every rank with the same number of iterations, and is grown over the varied iterations next
to it (:func:`extend_loop`: a convergence check, an output step); a loop nested in a top-level
one that, so grown, spans it takes its place (:func:`_finer`: a step loop with a summary every
n steps); an outer loop of few iterations whose body holds a longer loop is flattened into one
loop of the inner loop's iterations where that skips more (:func:`_flatter`: steps between
output steps).  Only top-level loops are sampled (a nested loop is inside its parent's
iterations; of two that overlap in part, the larger);
successive loops are sampled one after the other. A loop is cut into **phases** where its
communication or its balance changes (the mean over a block of ``window`` iterations of the
bytes a rank moves, or of a rank's share of the compute, departs from the phase's first block
by more than ``PHASE_TOLERANCE`` and by more than three standard errors, in ``LASTING`` (4)
successive blocks: refinement phases of an AMR code, a regime change; a shorter first run is a
warm-up, no phase; a change of the compute's level on every rank alike stays in its phase, where
the line against the critical path follows it; a phase cut by a change of balance alone is
joint with the one before it: a start of one window, and the line shared with an intercept of
its own; one that comes gradually is no cut where the compute critical path through the
messages can be followed, :func:`phases_of`'s ``drifts``: the phase's skipped iterations are
then predicted as their path plus the line of what the replayed ones took beyond it).  A phase
whose iterations make the same calls as an earlier one's, sizes aside (the same solve at
another problem size), is ``like`` it (:func:`_alike_phases`): one line for all of them, an
intercept each, a start of one window, and the variants the first of them replays are not
replayed again where they move about as many bytes (:func:`_bytes_apart`; a loop cut before a
variant is cut in the first only); one whose own iterations depart from the line's slopes is
fitted alone (:func:`_apart`). In each
phase a start of ``m`` iterations is
replayed (auto: ``4 window`` first, grown by a window until ``8 window``, then doubled, until the
rule below holds; the window is a 40th of a loop of fewer than ``40 WINDOW`` iterations, at
least ``MIN_WINDOW``), and a **tail** of ``window`` iterations at its end when more than
``3 window`` would be skipped, grown back over any variant of the skipped iterations it lacks
(an iteration whose compute far exceeds the others', a hiccup, is a variant of its own:
:func:`_variant_labels`; a phase is cut before a variant it shows once or twice deep in what
it would skip where that halves what it replays: :func:`_split_at_variants`; two of each,
or one where two leave the replay under ``GAIN`` times smaller than the trace, the bound
then taking each variant fitted once at its residual left out of the line: :func:`_see_once`);
the iterations between are skipped, each starting where no request is in flight where the loop
found starts inside an exchange (:func:`_quiet_bounds`), else by whole periods of a pipeline
where requests span one iteration into the next (:func:`crossing_requests`); a loop found whose
iterations start on its ranks at other messages of a channel, of sizes that vary, is first cut
into pieces that start each on every rank at the same message (:func:`_aligned_ranks`).

**Steady rule**: iteration ``s`` starts the steady state when the mean simulated time per
iteration (beside its static cost: :func:`beside_cost`) over the three windows ``[s, s+w)``,
``[s+w, s+2w)``, ``[s+2w, s+3w)`` changes from one window to the next by at most
``tolerance`` (relative) or by at most three standard errors of the difference (what the
iterations' own spread allows, estimated from successive differences so that a trend does not
count as noise). Iterations before ``s`` are the warm-up; a window of
``w`` (12) iterations averages out alternations of period 2, 3, 4 or 6; a drift shows as a
change between windows and keeps the rule from holding until it is small.

**Skipped iterations**: predicted by a least-squares line of the replayed steady iterations'
times (the start's from the steady iteration on, the tail's but its first) against their static
cost (its compute critical path, :func:`superstep_compute`, the most calls but polls a rank
makes where they vary, and the most polls: :func:`iteration_cost`; and per phase, where
it fits them better beyond chance, a level for each rank that is the slowest in its fitted
iterations: :func:`_by_slowest`, a phase cut where a rank that none of them shows the slowest
clearly becomes it: :func:`_cut_at_unseen_slowest`): the tail
puts the skipped iterations between replayed ones, so a drift is interpolated, not
extrapolated; the tail's first, which follows the skip, is predicted with them
(:func:`_predicted_end`). Its prediction error (residual variance, the starts' or the tails'
where one is noisier beyond chance: :func:`_noisier`, inflated for residuals correlated from one
iteration to the next, plus the line's own uncertainty) gives
the **bound**: three standard deviations of the skipped time, plus SimGrid's timing precision
per skipped iteration (an iteration at a start's head that sets the line's slopes alone is left
out of the line, and the disagreement it makes added: :func:`_on_line`; skipped iterations whose
compute lies beyond the fitted ones' range, or a slope the fitted ones do not show, add how far
the time's slope against it, between 0 and 1, may take them: :func:`_outside`). Each rank's end time
is its end in the reduced replay plus the skipped time.  Where the line and a line of the
compute critical path through the messages, fitted to the same replayed start and tail, put a
phase's skipped time apart by more than one of their bounds, the ends do not pin the skipped
iterations down: ``auto`` cuts the phase in the middle of what it skips, the half after the cut
joint to the first, and replays again, a tail and a start of one window in the middle
(:func:`_middle_windows`, once, while the replay stays ``GAIN`` times smaller than the trace).
Where the bound exceeds ``tolerance`` of
the predicted time, the skipped iterations are predicted again from their compute critical path
through the messages (:mod:`.critical_path`, one pass over the trace), the prediction of
smaller bound kept; a
bound still over it has ``auto`` double the start of the least certain phase and replay
again, while the replay stays ``GAIN`` (5) times smaller than the trace (:func:`_replay_more`);
one still over it then is noted with the misfit that causes it (the replayed iterations'
spread about the line): more iterations or a full replay are then needed for a figure
within it.

Iteration times are read from the native replayer's timeline: a zero-length ``sleep`` marker is
inserted on every rank at each replayed iteration's start (it takes no simulated time)."""
from __future__ import annotations

import math
import os
import time
from collections import Counter
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .. import kinds as K
from ..errors import MinitraceError
from ..compress.grammar import build
from ..compress.loop_view import POLLS, RUN, iteration_columns, rows_of_view, step_view
from ..tested_waits import tested_waits
from ..model import assign_vec_offsets, empty_actions
from ..trace import open as open_trace
from . import critical_path
from .api import replay
from .platforms import Cluster, parse_quantity

WINDOW = 12
#: The window of a loop of fewer than ``40 WINDOW`` iterations: a 40th of them, at least this
#: (averages out alternations of period 5, or 2 and 3 nearly), so that a start of four
#: windows, a warm-up and a tail of one leave most of a 200-iteration loop to skip.
MIN_WINDOW = 5
TOLERANCE = 0.01
PHASE_TOLERANCE = 0.10
#: A phase starts where the change lasts this many blocks (48 iterations): a shorter excursion
#: of the compute (a recorded machine's transient) stays in its phase, where the skipped
#: iterations' line against their static cost accounts for it, instead of costing a phase
#: replayed whole and a new steady start.  A change in the loop's last blocks, fewer than
#: these, is no phase either (the phase's tail replays the loop's end).
LASTING = 4
#: An iteration whose compute critical path exceeds its loop's median by more than this share
#: of the loop's is replayed, not extrapolated (:func:`_variant_labels`): the replay absorbs
#: 10-20% of such a delay, which is then 1-2% of the loop.  Smaller excursions (NPB LU W
#: recorded at a load of 8: one iteration 2% of its loop above the median, replayed at the
#: line's ratio to its cost) stay on the line: replaying them grew LU's tail from 7 to 78.
HICCUP = 0.1
#: Loops covering less than this share of the actions do not dominate: the trace replays fully.
DOMINANT_SHARE = 0.5
#: SimGrid's timing precision (precision/timing, set by the replay): the error a replay may
#: have per iteration whatever we do.
PRECISION = 1e-9
_Z = 3.0
_SLEEP = K.code("sleep")
_COMPUTE = K.code("compute")
#: Calls that return only once other ranks reached theirs: the supersteps' ends.
_BLOCKING = K.COLLECTIVES | K.SENDRECVS | {"wait", "waitall", "recv"}


@dataclass
class Phase:
    """A run of a loop's iterations alike in static cost, and how it was sampled."""
    loop: int
    first: int                 # first iteration (in the loop)
    stop: int                  # one past its last
    window: int = WINDOW       # of the steady rule and the tail
    in_flight: np.ndarray | None = None   # requests in flight across the skip, paired
    replayed: int = 0          # iterations replayed at its start
    tail: int = 0              # iterations replayed at its end (after the skipped ones)
    steady_from: int | None = None   # first steady iteration (relative to ``first``)
    per_iteration: float = float("nan")   # mean simulated s per steady iteration
    spread: float = 0.0        # standard deviation of the steady iterations' times
    skipped_time: float = 0.0  # simulated s predicted for the skipped iterations
    variance: float = 0.0      # of that prediction
    misfit: float = 0.0        # sd of the fitted iterations' times about the line
    #: cut from the phase before it by a change of balance alone (the same bytes moved), or in
    #: the middle of what that one skipped (:func:`_middle_windows`): the replay goes on steady
    #: through the cut, so its start is one window, and its line shares the slopes of the
    #: phase before it with an intercept of its own (:func:`_fit`)
    joint: bool = False
    #: per iteration, its compute critical path through the messages (:mod:`.critical_path`)
    #: where the loop's phases pass over a drift of the balance (:func:`phases_of`): the
    #: skipped iterations are then predicted as their path plus the line of what the replayed
    #: ones took beyond theirs
    path: np.ndarray | None = None
    #: its ``path`` set because the balance drifts over it (:func:`_drifting`), not chosen for
    #: the smaller bound (:func:`_on_critical_path`): the start's and the tail's levels beyond
    #: the path may then lie apart whatever their costs (:func:`_level`)
    drift: bool = False
    #: s: how far the line through all the fitted iterations puts the skipped time from the
    #: line without a warm-up at the start's head that sets its slopes alone (:func:`_on_line`,
    #: whose line predicts them): added to the bound, which its variance alone would not cover
    shift: float = 0.0
    #: its iterations move different bytes (their message sizes set aside: :func:`loops_of`),
    #: which the line against their static cost does not see (:func:`_fit`)
    sized: bool = False
    #: s: where its replayed start and tail sit at levels apart beyond their noise about the
    #: line, the farthest the skipped iterations' time may lie from the line were they all at
    #: either one's level (:func:`_level`): added to the bound
    level: float = 0.0
    #: the index of an earlier phase whose iterations make the same calls (sizes aside: the same
    #: solve at another problem size, :func:`_alike_phases`): it shares that phase's line with an
    #: intercept of its own, so its start is one window, checked against its tail (:func:`_level`)
    like: int | None = None
    #: per iteration [iterations, 2], the bytes its ranks move beyond those of the phase's
    #: commonest iteration where it makes other calls (0 where it makes those), and the bytes
    #: they move: a variant replayed once, or in a phase ``like`` this one, pins its cost here
    #: only where it moves about as many bytes more (:func:`_bytes_apart`; None: not marked by
    #: :func:`_alike_phases`)
    beyond: np.ndarray | None = None
    #: s: how far its skipped iterations of a variant fitted once may lie from the line
    #: (:func:`_once`): added to the bound
    once: float = 0.0
    #: ``like`` another, but its own fitted iterations depart from the shared line's slopes
    #: beyond chance and its own line puts its skipped time beyond its bound (:func:`_apart`):
    #: it is then sampled and fitted alone
    apart: bool = False
    #: s: where its skipped iterations were fitted on their compute critical path too
    #: (:func:`_on_critical_path`), how far beyond the kept fit's bound another fit puts their
    #: time whose bound lies apart from it (:func:`_cover_disagreement`): added to the bound
    disagree: float = 0.0
    #: s: how far its skipped time may lie from the line where their compute lies beyond the
    #: fitted iterations' (:func:`_outside`): added to the bound
    outside: float = 0.0

    @property
    def follows(self) -> bool:
        """Whether its line is another phase's (``joint`` or ``like``): a start of one window."""
        return self.joint or self.like is not None

    @property
    def iterations(self) -> int:
        return self.stop - self.first

    @property
    def skipped(self) -> int:
        return self.iterations - self.replayed - self.tail


@dataclass
class SampledReplay:
    """A replay with sampled iterations: what it predicts, how much it skipped, how far off it
    may be."""
    simulated_time: float
    rank_end_times: list[float]
    bound: float                    # s: the prediction is within this of the full replay
    replayed_share: float           # of the actions
    skipped_share: float
    phases: list[Phase]
    result: object                  # the ReplayResult of the last reduced replay
    wall_time: float = 0.0          # s of host time, every replay and the bookkeeping
    replays: int = 0
    notes: list[str] = field(default_factory=list)
    loops: list = field(default_factory=list)   # the sampled (top-level) loops' bounds

    @property
    def nranks(self) -> int:
        return len(self.rank_end_times)

    def table(self) -> pd.DataFrame:
        """One row per phase: iterations, replayed, steady_from, per_iteration, spread,
        skipped_time, bound (3 sd, plus the phase's ``shift``, ``level``, ``once``,
        ``disagree`` and ``outside``: its share of the trace's bound but the timing
        precision)."""
        return pd.DataFrame([{
            "loop": p.loop, "first": p.first, "iterations": p.iterations,
            "replayed": p.replayed + p.tail, "steady_from": p.steady_from,
            "per_iteration": p.per_iteration, "spread": p.spread,
            "skipped_time": p.skipped_time, "bound": _spread([p])}
            for p in self.phases])

    def to_dict(self) -> dict:
        return {"simulated_time": self.simulated_time, "rank_end_times": self.rank_end_times,
                "bound": self.bound, "replayed_share": self.replayed_share,
                "skipped_share": self.skipped_share, "wall_time": self.wall_time,
                "replays": self.replays, "notes": self.notes,
                "phases": self.table().to_dict(orient="records")}


def load_trace(trace, source: str | None = None):
    """A minitrace trace (file, Trace or TraceColumns) as TraceColumns, which replicas and
    sampling need (a compressed file expanded: its loops are found as the uncompressed
    trace's, so both forms sample alike; its stored grammar's loops cut the iterations of
    public OSU osu_ialltoallw where its requests cross them, and the replay deadlocked)."""
    if isinstance(trace, (str, os.PathLike)):
        path = os.fspath(trace)
        if not os.path.isfile(path):
            raise MinitraceError("no such trace file", path)
        with open(path, "rb") as fh:
            if fh.read(8) != b"\x89HDF\r\n\x1a\n":
                raise MinitraceError("replicas and iteration sampling need a minitrace HDF5 "
                                     "trace (a SimGrid TI trace has no call structure to draw "
                                     "from)", path)
        with open_trace(path) as t:
            return t.data()
    if hasattr(trace, "data") and callable(trace.data):
        return trace.data()
    if not hasattr(trace, "rank_offsets"):
        raise MinitraceError(f"cannot replay a {type(trace).__name__}", source)
    return trace


def loops_of(data) -> tuple[list[np.ndarray], list[str]]:
    """:func:`_loops_found` in the trace, those whose iterations start on their ranks at other
    messages of a channel, of sizes that vary, cut into pieces that start each on every rank
    at the same message (:func:`_aligned_ranks`; the loops inside them left out)."""
    if hasattr(data, "data") and callable(data.data):
        data = data.data()                  # (expanded once)
    loops, notes = _loops_found(data)
    found = top_level(loops)
    if not found:
        return loops, notes
    flight = _per_trace(data, "in_flight", lambda: _in_flight(data))
    top = [q if (q := _quiet_bounds(data, b, flight)) is not None else b for b in found]
    got, cut = _aligned_ranks(data, top)
    if not cut:
        return loops, notes
    spans = [(min(found[li][0, 0], top[li][0, 0]), max(found[li][0, -1], top[li][0, -1]))
             for li in cut]
    rest = [b for b in loops if not any(lo < b[0, -1] and b[0, 0] < hi for lo, hi in spans)]
    pieces = [b for b in got if not any(b is t for t in top)]
    return rest + pieces, notes + [
        f"{len(cut)} loop(s) cut into pieces whose iterations start on every rank at the same "
        f"message of each channel (a rank's loops began at other messages, of other sizes; the "
        f"iterations no piece takes replayed as they are)"]


def _loops_found(data) -> tuple[list[np.ndarray], list[str]]:
    """:func:`loops_in` the trace, or, where it holds a ``testall`` that completed and the
    loops of the trace with each such test taken as the incomplete test and the ``waitall`` it
    stands for (:func:`minitrace.tested_waits.tested_waits`) let sampling skip more
    (:func:`_skippable`), those loops mapped back to the trace's rows (each inserted wait with
    the iteration it ends in): whether a rank's test completes is the arrival order's choice,
    and one waitall more or less in each iteration gives every rank a program of its own and
    its loops different iteration counts (UK-MAC TeaLeaf at 2 ranks under MPICH: its CG loop
    broken into ~25 pieces, none on both ranks alike; replayed fully)."""
    if hasattr(data, "data") and callable(data.data):
        data = data.data()                  # (expanded once)
    found = loops_in(data)
    tested, n = tested_waits(data)
    if not n:
        return found
    loops, notes = loops_in(tested)
    if _skippable(loops) <= _skippable(found[0]):
        return found
    a = tested.actions
    added = (a["kind"] == K.code("waitall")) & (a["vec_len"] > 0) & \
        (a["vec_off"] >= len(data.vectors))
    added[1:] |= added[:-1]                 # and the empty compute after each
    before = np.r_[0, np.cumsum(added)]
    loops = [b - before[b] for b in loops]
    return loops, notes + [f"loops found with each of {n} completed testall calls taken as the "
                           f"incomplete test and the waitall it stands for (as the arrival "
                           f"order chose): the iterations replayed are as recorded"]


def loops_in(data) -> tuple[list[np.ndarray], list[str]]:
    """Per loop found on every rank with the same number of iterations, its iteration bounds
    [nranks, iterations + 1] (global rows), grown over the varied iterations next to it
    (:func:`extend_loop`); and notes on loops left out.  The grammar is built on
    :func:`structure_ids` (of the trace expanded, whatever its form on disk).  Where those
    loops cover less than ``DOMINANT_SHARE`` of the actions, the search is made again on the
    trace's steps (:func:`~minitrace.compress.loop_view.step_view`: a run of calls that do not
    wait, posts, polls and computes, read as one step whatever their order and however many
    polls failed), and the bounds mapped back to the trace's rows (each iteration with its
    polls): the iterations of a pipelined sweep differ in both (SNAP).  There the loops inside
    the top-level ones are looked into too, ``MAX_DEPTH`` levels: where outer loops run a few
    times (SNAP's time steps and outer iterations), the inner one grown over its variants (the
    outer iterations' convergence checks) is the main loop, the one of most iterations among
    those that cover ``DOMINANT_SHARE`` of the actions."""
    if hasattr(data, "data") and callable(data.data):
        data = data.data()
    ids, n = structure_ids(data)
    grammar, offsets = build(ids, data.rank_offsets, n), data.rank_offsets
    table = iteration_columns(grammar, offsets)
    out, notes = _bounds(table, data.nranks)
    out = [extend_loop(ids, data.rank_offsets, b) for b in out]
    total = len(data.actions)
    if _covered(out) >= DOMINANT_SHARE * total or not total:
        levels = _Levels(grammar, offsets, lambda b: extend_loop(ids, data.rank_offsets, b))
        out = _finer(levels, ids, out)
        if not total or _skippable(out) >= FEW_SKIPPED * total:
            return _flatter(levels, out, total), notes
        out = _flatter(levels, out, total)
        aside, why = _sizes_aside(data, total)
        if _skippable(aside) > _skippable(out):
            return aside, why + [SIZES_NOTE]
        return out, notes
    best, why = _sizes_aside(data, total)
    if best:
        return best, why + [SIZES_NOTE]
    steps, n, rows, offsets = step_view(ids, data.actions["kind"], data.rank_offsets)
    if len(rows) == total:
        return out, notes
    return _most_iterated(_Levels(build(steps, offsets, n), offsets,
                                  lambda b: rows_of_view(extend_loop(steps, offsets, b, free=RUN),
                                                         rows, offsets, data.rank_offsets)),
                          total, out, notes)


class _Levels:
    """A grammar's loops at each depth (:func:`~minitrace.compress.loop_view.iterations`),
    as found (:meth:`bounds`) and grown to the trace's rows by ``grow`` (:meth:`grown`), each
    depth searched and grown once however many rules look at it (:func:`_sizes_aside` asks
    for each depth three times)."""

    def __init__(self, grammar, offsets: np.ndarray, grow):
        self.grammar, self.offsets, self.grow = grammar, offsets, grow
        self._bounds: dict = {}
        self._grown: dict = {}

    def bounds(self, depth: int) -> tuple[list[np.ndarray], list[str]] | None:
        """:func:`_bounds` of the loops ``depth`` levels inside the top-level ones; None where
        there are none."""
        if depth not in self._bounds:
            table = iteration_columns(self.grammar, self.offsets, depth=depth)
            self._bounds[depth] = _bounds(table, len(self.offsets) - 1) \
                if len(table["loop"]) else None
        return self._bounds[depth]

    def grown(self, depth: int) -> tuple[list[np.ndarray], list[str]] | None:
        """Those loops each grown by ``grow``, without those that then overlap a larger one
        (:func:`_disjoint`); None where there are none."""
        if depth not in self._grown:
            found = self.bounds(depth)
            self._grown[depth] = None if found is None else \
                (_disjoint([self.grow(b) for b in found[0]]), found[1])
        return self._grown[depth]


def _most_iterated(levels: _Levels, total: int, best: list, why: list, key=None):
    """Among ``best`` (notes ``why``) and the loops of a grammar at each depth up to
    ``MAX_DEPTH`` (``levels``), each grown to the trace's rows, the loops of the top-level loop
    of most iterations (or of the most ``key``) that cover ``DOMINANT_SHARE`` of the ``total``
    actions (and at least half of what ``best`` covers); with their notes."""
    key = key or _most
    for depth in range(MAX_DEPTH + 1):
        got = levels.grown(depth)
        if got is None:
            break
        found, whys = got
        if _covered(found) >= max(DOMINANT_SHARE * total, _covered(best) / 2) and \
                key(found) > key(best):
            best, why = found, whys
    return best, why


def _sizes_aside(columns, total: int) -> tuple[list[np.ndarray], list[str]]:
    """:func:`_most_iterated` on the grammar of the trace's structure with message sizes set
    aside: where sizes change from one iteration to the next, or every few iterations (public
    Mantevo miniMD's halo sizes at each re-neighbouring, every 20 steps), the calls still
    repeat.  Where its loops would let sampling skip less than ``FEW_SKIPPED`` of the actions
    (:func:`_skippable`), the loops that skip most among those at each depth and the top-level
    ones :func:`_flattened`."""
    shaped, n = structure_ids(columns, sizes=False)
    offsets = columns.rank_offsets
    levels = _Levels(build(shaped, offsets, n), offsets,
                     lambda b: extend_loop(shaped, offsets, b))
    best, why = _most_iterated(levels, total, [], [])
    few = _skippable(best) < FEW_SKIPPED * total
    if few:
        best, why = _most_iterated(levels, total, best, why, _skippable)
    flat = _flatter(levels, best, total, longer=not few)
    return (best, why) if flat is best else (flat, [])


def _flatter(levels: _Levels, loops: list[np.ndarray], total: int,
             longer: bool = True) -> list[np.ndarray]:
    """``loops``, or the grammar's top-level loops :func:`_flattened` (``longer``: its
    argument) where they cover ``DOMINANT_SHARE`` of the ``total`` actions and let sampling
    skip more (:func:`_skippable`): a step loop in a short outer repetition is the main loop
    even where a loop beside the outer one already leaves something to skip (public miniMD at
    2 ranks, 400 steps, sizes set aside: a thermo output every 100 steps, 3 outer iterations
    of 420 steps and the last 420 beside them; 1.3x with the outer loop replayed whole)."""
    flat = _flattened(levels, longer)
    # (where the loops found skip already, by a tenth more: :func:`_skippable` counts the
    # flattened loop's outputs, variants that each cost a replay, as steps; a step loop grown
    # over short outputs, flattened, skipped 0.49 of the actions where it skipped 0.95)
    margin = FEW_SKIPPED * total if longer else 0
    if _covered(flat) >= DOMINANT_SHARE * total and \
            _skippable(flat) > _skippable(loops) + margin:
        return flat
    return loops


def _flattened(levels: _Levels, longer: bool = False) -> list[np.ndarray]:
    """The top-level loops of a grammar (``levels``), each whose body holds a loop made one
    loop of the inner loop's iterations, each outer iteration's other calls an iteration of
    their own (a variant): where a step loop is broken every k steps by calls longer than
    twice its body, which :func:`extend_loop` does not grow over (public miniMD at 2 ranks,
    sizes set aside: each step a few exchanges and computes, every 100 steps an energy sum, 9
    outer iterations where the steps are 3,780), so that the steps are what sampling skips;
    each grown by ``levels``' ``grow``.  ``longer``: only where the inner loop runs more
    iterations than the outer one (a loop of many iterations each holding a short run, a CG
    iteration's two dot products, stays as it is: its variants would be a third of its
    iterations), as where the loops found already leave sampling something to skip."""
    nranks = len(levels.offsets) - 1
    outer, inner = ((levels.bounds(depth) or ([], []))[0] for depth in (0, 1))
    out = []
    for b in outer:
        runs = [c for c in inner if (b[:, 0] <= c[:, 0]).all() and (c[:, -1] <= b[:, 1]).all()]
        if runs and (not longer or runs[0].shape[1] > b.shape[1]):
            c = runs[0]
            off, per = c[:, :1] - b[:, :1], c[:, 1:2] - c[:, :1]
            at = b[:, :-1, None] + off[:, :, None] + per[:, :, None] * np.arange(c.shape[1])
            flat = np.concatenate([at.reshape(nranks, -1), b[:, -1:]], axis=1)
            if (flat[:, -1] == flat[:, -2]).all():    # the last outer iteration ends the loop
                flat = flat[:, :-1]
            if (np.diff(flat, axis=1) > 0).all():
                b = flat
        out.append(levels.grow(b))
    return _disjoint(out)


#: Where the loops found would let sampling skip less than this share of the actions
#: (:func:`_skippable`), :func:`loops_of` tries the loops with message sizes set aside too, and
#: ``--sample auto`` replays fully (:func:`sampled_replay`): a replay with markers that skips
#: a few percent costs more than the full one (public miniMD at 2 and 4 ranks: 50 loops of 19
#: steps, each shorter than the start the steady rule needs, 2.2-3.4x the full replay's time).
FEW_SKIPPED = 0.1


def _skippable(loops: list[np.ndarray]) -> float:
    """About how many actions sampling skips in the top-level ``loops``: per loop, the share of
    its iterations beyond the least start and tail ``auto`` replays (:func:`_least_replay`),
    of the actions it covers."""
    out = 0.0
    for b in top_level(loops):
        n = b.shape[1] - 1
        skip = n - sum(_least_replay(n, loop_window(n)))
        if skip > 0:
            out += float((b[:, -1] - b[:, 0]).sum()) * skip / n
    return out


def _least_replay(iterations: int, window: int, joint: bool = False,
                  fixed: int | None = None) -> tuple[int, int]:
    """(start, tail) a phase of ``iterations`` replays first: ``fixed`` (``--sample K``), else
    four windows (one for a joint phase), and a window's tail to interpolate to where more than
    three windows are left (0: none)."""
    start = min(iterations, fixed if fixed is not None else window if joint else 4 * window)
    return start, window if iterations - start > 3 * window else 0


#: A loop inside the top-level ones, grown over its variants, replaces them where it covers at
#: least this share of what they cover (:func:`_finer`): all but their edges, where the
#: grammar's iteration may begin a few calls before the inner loop's anchor.
FINER_SHARE = 0.9
#: ... and where, on every rank, at least this share of its iterations make the same calls (the
#: body; the rest its variants): a short body grown over every part of a loop that shares its
#: computes (NPB CG's, whose commonest iteration is 49% of them; HPCG's 27%) is no step loop,
#: and its varied iterations left the sampler nothing to skip (NPB CG 2 ranks: 1,624 of 1,679
#: replayed).  A summary every third step or rarer passes.
FINER_REPEAT = 2 / 3


def _finer(levels: _Levels, ids: np.ndarray, loops: list[np.ndarray]) -> list[np.ndarray]:
    """``loops`` (the top-level ones of a grammar, grown), or where a loop inside them
    (``levels``), grown over the iterations next to it that vary its body, spans them
    (``FINER_SHARE`` of what they cover) and repeats its body (``FINER_REPEAT``), that loop
    with the top-level ones it does not overlap: a step loop whose every n-th step also writes
    a summary (UK-MAC CloverLeaf's field summary every 10 steps) is found as a loop of n steps
    with a nested loop of n - 1, which leaves the sampler n times fewer iterations to skip
    (the steps, the variants among them, are what repeats)."""
    best = loops
    for depth in range(1, MAX_DEPTH + 1):
        got = levels.grown(depth)
        if got is None:
            break
        found = list(got[0])
        spans = [(int(b[0, 0]), int(b[0, -1])) for b in found]
        found += [b for b in top_level(best)
                  if all(z <= b[0, 0] or b[0, -1] <= a for a, z in spans)]
        if _covered(found) >= FINER_SHARE * _covered(best) and _most(found) > _most(best) and \
                _repeats(ids, max(top_level(found), key=lambda b: b.shape[1])) >= FINER_REPEAT:
            best = sorted(found, key=lambda b: int(b[0, 0]))
    return best


def _repeats(ids: np.ndarray, bounds: np.ndarray) -> float:
    """The least share, over the ranks, of a loop's iterations that make the rank's commonest
    iteration's calls (``ids``)."""
    least = 1.0
    for row in bounds:      # (Counter, not np.unique: a bytes array drops trailing zero bytes)
        counts = Counter(ids[a:z].tobytes() for a, z in zip(row[:-1], row[1:])).values()
        least = min(least, max(counts) / sum(counts))
    return least


#: Said when the loops were found with message sizes set aside (:func:`loops_of`).
SIZES_NOTE = ("loops found with message sizes set aside (they change from one iteration to "
              "the next, as ECP CoMD's atom exchanges do): each replayed iteration keeps its "
              "own sizes, the skipped ones are predicted from the replayed ones")
#: How many levels of loops inside the top-level ones :func:`loops_of` looks into.
MAX_DEPTH = 3


def _most(loops: list[np.ndarray]) -> int:
    """The most iterations of a top-level loop among ``loops`` (0: none)."""
    return max((b.shape[1] - 1 for b in top_level(loops)), default=0)


def _disjoint(loops: list[np.ndarray]) -> list[np.ndarray]:
    """``loops`` without those that overlap a larger one in part (on rank 0's rows), in order:
    grown over their neighbours (:func:`extend_loop`), two runs of one inner loop may reach
    into each other, or one may cover the other."""
    spans = [(int(b[0, 0]), int(b[0, -1])) for b in loops]
    keep: list[int] = []
    for i in sorted(range(len(loops)), key=lambda i: spans[i][0] - spans[i][1]):
        lo, hi = spans[i]
        if all(hi <= spans[j][0] or spans[j][1] <= lo for j in keep):
            keep.append(i)
    return [loops[i] for i in sorted(keep)]


def _covered(loops: list[np.ndarray]) -> int:
    """The actions the top-level loops among ``loops`` cover."""
    return sum(int((b[:, -1] - b[:, 0]).sum()) for b in top_level(loops))


#: Said of the loops left out of sampling (:func:`_bounds`, one note that starts with their
#: number).
UNEVEN = "not on every rank with the same iteration count"


def _bounds(table, nranks: int) -> tuple[list[np.ndarray], list[str]]:
    """Per loop of an iterations table (:func:`minitrace.compress.loop_view.iterations`, or
    its columns: :func:`~minitrace.compress.loop_view.iteration_columns`) on every rank with
    the same number of iterations, its bounds [nranks, iterations + 1]; and notes on the
    others."""
    out, uneven = [], {}
    loop, rank = np.asarray(table["loop"]), np.asarray(table["rank"])
    first = np.asarray(table["first_row"], np.int64)
    last = np.asarray(table["last_row"], np.int64)
    order = np.lexsort((np.asarray(table["iteration"]), rank))
    for li in np.unique(loop).tolist():
        rows = order[loop[order] == li]
        counts = np.bincount(rank[rows], minlength=nranks)
        if not (counts == counts[0]).all() or not counts[0]:
            uneven[li] = counts
            continue
        n = int(counts[0])
        out.append(np.concatenate([first[rows].reshape(nranks, n),
                                   last[rows].reshape(nranks, n)[:, -1:] + 1], axis=1))
    return out, [_uneven_note(uneven)] if uneven else []


def _uneven_note(uneven: dict[int, np.ndarray]) -> str:
    """One note for the loops whose iteration counts differ between ranks (``uneven``: each
    one's count per rank): how many, which, and their counts summarised (Quicksilver at 2
    ranks: 40 such loops, a note each before)."""
    ids = sorted(uneven)
    runs, start = [], ids[0]
    for a, b in zip(ids, ids[1:] + [None]):
        if b != a + 1:
            runs.append(f"{start}" if start == a else f"{start}-{a}")
            start = b
    counts = np.concatenate(list(uneven.values()))
    apart = [int(np.ptp(c)) for c in uneven.values()]
    one = len(ids) == 1
    whose = "its" if one else "a loop's"
    by = f"{min(apart)}" if min(apart) == max(apart) else f"{min(apart)} to {max(apart)}"
    return (f"{len(ids)} loop{'' if one else 's'} ({'loop ' if one else ''}{', '.join(runs)}) "
            f"{'is' if one else 'are'} {UNEVEN} ({int(counts.min())} to {int(counts.max())} "
            f"iterations on a rank; {whose} counts on its ranks apart by {by}): replayed as "
            f"{'it is' if one else 'they are'}")


#: An iteration variant (a convergence check, an output step, a breakdown test) may hold up to
#: this many times the loop body's actions, and must share at least half of them with it (more
#: than half with a body of two: a compute and a call share half with any compute and call).
VARIANT_LENGTH = 2.0
VARIANT_SHARE = 0.5


def extend_loop(ids: np.ndarray, rank_offsets: np.ndarray, bounds: np.ndarray,
                free: int | None = None) -> np.ndarray:
    """The loop ``bounds`` grown over the iterations next to it that vary its body: the grammar
    finds a loop only where iterations repeat call for call, so a convergence check every k
    iterations or a test that runs when the data asks for it cuts a main loop into pieces.  An
    iteration starts at the body's first action that occurs once in the body (its anchor); each
    run of actions from one anchor to the next, before or after the loop, is taken as an
    iteration while it is at most ``VARIANT_LENGTH`` bodies long and shares at least
    ``VARIANT_SHARE`` of its actions (as a multiset of structure ids; more than that with a
    body of two calls) with the body; every rank takes as many as the rank that takes
    fewest.  ``free``: an id that says nothing of where an
    iteration is (:func:`~minitrace.compress.loop_view.step_view`'s run of calls that do not
    wait, in every iteration): never the anchor, and not counted in the shares (else any step
    would be a variant of a body of two).  Skipping a varied iteration is checked like any
    other (:func:`check_separable`), and the skipped time is regressed on each iteration's
    static cost, variants included."""
    nranks = bounds.shape[0]
    ahead, behind = [], []
    for r in range(nranks):
        body = ids[bounds[r, 0]:bounds[r, 1]]
        if not len(body):
            return bounds
        anchor = _anchor(body, free)
        if anchor is None:
            return bounds
        p, n = anchor                        # the anchor's place in an iteration, its length
        lo, hi = int(rank_offsets[r]), int(rank_offsets[r + 1])
        at = _occurrences(ids[lo:hi], body[p:p + n]) + lo - p
        at = at[(at >= lo) & (at <= hi)]
        ref = np.bincount(body)
        if free is not None and free < len(ref):
            ref[free] = 0
        args = (ids, ref, len(body), free)
        # from the last iteration's start: a loop may end where no anchored run starts (its
        # next step is a variant: SNAP's convergence check), its last iteration then grown
        ends = _variants(bounds[r, -2], at[at >= bounds[r, -2]], *args)
        ahead.append(ends or [int(bounds[r, -1])])
        behind.append(_variants(bounds[r, 0], at[at <= bounds[r, 0]][::-1], *args)[::-1])
    f = min(len(x) for x in ahead)
    g = min(len(x) for x in behind)
    if f == 1 and not g and all(x[0] == b for x, b in zip(ahead, bounds[:, -1])):
        return bounds
    return np.stack([np.r_[behind[r][len(behind[r]) - g:], bounds[r, :-1], ahead[r][:f]]
                     for r in range(nranks)]).astype(np.int64)


#: The longest run of actions :func:`_anchor` tries as an iteration's anchor.
MAX_ANCHOR = 8


def _anchor(body: np.ndarray, free: int | None) -> tuple[int, int] | None:
    """(place, length) of the body's first shortest run of ids that occurs once in it, not
    starting with ``free``: a single id where one does; else a pair, a triple... (ECP CoMD's
    step on two ranks has none of its own: six computes, two exchanges with the other rank,
    four with itself, and no pair of its own: its one triple "exchange with the other rank,
    compute, exchange with the other rank" marks where a step is); None when no run of up to
    MAX_ANCHOR ids does.  Steps (``free`` given: :func:`loops_of` on a polling code) take a
    single id only: a run of steps is anchored anywhere in SNAP's sweeps."""
    base = int(body.max()) + 1
    for n in range(1, min(MAX_ANCHOR if free is None else 1, len(body)) + 1):
        grams = np.lib.stride_tricks.sliding_window_view(body, n)
        if base ** n < 2 ** 62:            # each gram as one number: a sort of numbers
            grams = grams @ base ** np.arange(n - 1, -1, -1, dtype=np.int64)
        _, inverse, counts = np.unique(grams, axis=0 if grams.ndim > 1 else None,
                                       return_inverse=True, return_counts=True)
        once = np.flatnonzero((counts[inverse.ravel()] == 1) & (body[:len(grams)] != free))
        if len(once):
            return int(once.min()), n
    return None


def _occurrences(ids: np.ndarray, gram: np.ndarray) -> np.ndarray:
    """Where the run ``gram`` starts in ``ids``."""
    if len(gram) == 1:
        return np.flatnonzero(ids == gram[0])
    if len(ids) < len(gram):
        return np.zeros(0, np.int64)
    hit = ids[:len(ids) - len(gram) + 1] == gram[0]
    for k in range(1, len(gram)):
        hit &= ids[k:len(ids) - len(gram) + 1 + k] == gram[k]
    return np.flatnonzero(hit)


def _variants(edge: int, at: np.ndarray, ids: np.ndarray, ref: np.ndarray, length: int,
              free: int | None) -> list[int]:
    """From a loop's ``edge`` (its end, or its start walking backwards through ``at``, the
    anchored iteration starts beyond it, nearest first), the far ends of the successive
    anchor-to-anchor runs that are variants of the body (``length`` ids; ``ref``: its bincount
    of ids, without ``free``); none when the edge is not at an anchor.  The runs are judged
    a block at a time (1, 2, 4...: a loop grown over thousands of runs judged them one by one
    in Python, 3 s of PENNANT's 240 k actions), up to the first that is not a variant."""
    if len(at) < 2 or at[0] != edge:
        return []
    lo, hi = np.minimum(at[:-1], at[1:]), np.maximum(at[:-1], at[1:])
    done, block = 0, 1
    while done < len(lo):
        k = slice(done, done + block)
        bad = np.flatnonzero(~_are_variants(lo[k], hi[k], ids, ref, length, free))
        if len(bad):
            return at[1:done + int(bad[0]) + 1].tolist()
        done, block = done + block, 2 * block
    return at[1:].tolist()


def _are_variants(lo: np.ndarray, hi: np.ndarray, ids: np.ndarray, ref: np.ndarray,
                  length: int, free: int | None) -> np.ndarray:
    """Whether each run ``ids[lo:hi]`` is a variant of the body (:func:`_variants`): at most
    ``VARIANT_LENGTH`` bodies long, and as a multiset of ids (``free`` left out) sharing at
    least ``VARIANT_SHARE`` of the larger of its size and the body's (more than that with a
    body of two calls, ``free`` not given: a compute and a call share half with any compute
    and call).  An id's occurrences in a run count up to the body's count of it."""
    size = hi - lo
    fits = (size > 0) & (size <= VARIANT_LENGTH * length)
    size = np.where(fits, size, 0)
    run = np.repeat(np.arange(len(lo)), size)
    val = ids[np.repeat(lo - np.cumsum(size) + size, size) + np.arange(int(size.sum()))]
    counted = val != free if free is not None else np.ones(len(val), bool)
    support = np.flatnonzero(ref)              # the body's ids, numbered 0, 1...
    place = np.full(len(ref), -1, np.int64)
    place[support] = np.arange(len(support))
    own = np.where(val < len(ref), place[np.minimum(val, len(ref) - 1)], -1)
    shared = own >= 0
    counts = np.bincount(run[shared] * len(support) + own[shared],
                         minlength=len(lo) * len(support)).reshape(len(lo), len(support))
    common = np.minimum(counts, ref[support]).sum(axis=1)
    total = np.bincount(run, counted, len(lo))
    ref_total = int(ref.sum())
    need = VARIANT_SHARE * np.maximum(total, ref_total)
    tie = (common == need) & (ref_total <= 2) & (free is None)
    return fits & ~(common < need) & ~tie


_STRUCTURE = ("kind", "tag", "comm", "bytes_sent", "bytes_recv", "vec_len")
_SIZES = ("bytes_sent", "bytes_recv")


def structure_ids(data, sizes: bool = True, timing: bool = False) -> tuple[np.ndarray, int]:
    """Per action an id of what an iteration repeats: its kind, rank-relative peer (roots of
    rooted collectives as they are), tag, communicator, bytes (unless not ``sizes``) and vector
    length, in order of first appearance, and the number of ids; ``timing``: what a replay's
    timing sees, tags aside and each communicator by its ranks (a duplicate as its original).
    Unlike the compressed trace's call signatures (:func:`minitrace.compress.signatures.encode`,
    lossless), request ids and vector contents are left out: they change every iteration and
    cost most of the encoding, and skipping iterations checks them (:func:`check_separable`).
    A 64-bit hash of the columns, checked exactly (a collision falls back to an exact
    factorization).  In a sampled replay the ids with sizes and tags are kept
    (:func:`_per_trace`) and the others, which they determine, found on the first action of
    each: the same ids, from thousands of actions instead of millions."""
    if not len(data.actions):
        return np.zeros(0, np.int64), 0
    if _MEMO.get() is None:
        return _structure(data, None, sizes, timing)[:2]
    ids, n, first = _per_trace(data, "structure", lambda: _kept(_structure(data, None, True,
                                                                           False)))
    if sizes and not timing:
        return ids, n
    if first is None:             # (ids of the exact factorization: not in order of appearance)
        return _structure(data, None, sizes, timing)[:2]
    coarse, m, _ = _structure(data, first, sizes, timing)
    return coarse[ids], m


def _kept(got: tuple) -> tuple:
    """``got`` with its arrays read-only: kept for every caller (:func:`_per_trace`)."""
    for x in got:
        if isinstance(x, np.ndarray):
            x.setflags(write=False)
    return got


def _structure(data, rows: np.ndarray | None, sizes: bool, timing: bool
               ) -> tuple[np.ndarray, int, np.ndarray | None]:
    """:func:`structure_ids` of the actions ``rows`` (sorted; None: all), and the row (of
    those) where each id first appears, None where a hash collision made the ids those of the
    exact factorization (in the order of the columns' values)."""
    import pandas as pd
    a = data.actions if rows is None else data.actions[rows]
    rank = data.rank_of(rows)
    kind = a["kind"]
    peer = a["peer"].astype(np.int64)
    rel = ~K.mask(K.ROOTED)[kind] & (peer >= 0) & (peer < data.nranks)
    fields = [f for f in _STRUCTURE
              if (sizes or f not in _SIZES) and not (timing and f == "tag")]
    cols = [np.where(rel, (peer - rank) % data.nranks, peer)] + \
        [a[f].astype(np.int64) for f in fields]
    if timing and data.comms:
        comm = fields.index("comm") + 1
        ids = np.array(sorted(data.comms), np.int64)
        same: dict[tuple, int] = {}
        alias = np.array([same.setdefault(tuple(np.asarray(data.comms[c]).tolist()), c)
                          for c in ids.tolist()], np.int64)
        c = cols[comm]
        at = np.clip(np.searchsorted(ids, c), 0, len(ids) - 1)
        cols[comm] = np.where(ids[at] == c, alias[at], c)
    h = np.zeros(len(a), np.uint64)
    with np.errstate(over="ignore"):
        for j, c in enumerate(cols):          # (in place: no array made but the shift's)
            h ^= c.view(np.uint64)
            h *= np.uint64(0x100000001B3)
            h += np.uint64(j + 0x9E3779B97F4A7C15)
            h ^= h >> np.uint64(29)
    ids, uniq = pd.factorize(h)
    first = np.zeros(len(uniq), np.int64)
    first[ids[::-1]] = np.arange(len(ids) - 1, -1, -1)
    if not all(np.array_equal(c[first][ids], c) for c in cols):
        _, ids = np.unique(np.stack(cols, 1), axis=0, return_inverse=True)
        ids = ids.ravel()
        return ids.astype(np.int64), int(ids.max()) + 1, None
    return ids.astype(np.int64), len(uniq), first if rows is None else rows[first]


def top_level(loops: list[np.ndarray]) -> list[np.ndarray]:
    """The loops not nested in another one (containment judged on rank 0's rows), in order;
    of two that overlap in part, the larger (:func:`_disjoint`): a loop grown over its variants
    may reach into another one (UK-MAC CloverLeaf on one rank: its last nine steps, grown back
    over the steps with a field summary, across its loop of 10 steps begun a few calls earlier),
    and sampling both would skip their shared iterations twice."""
    lo = np.array([b[0, 0] for b in loops], np.int64)
    hi = np.array([b[0, -1] for b in loops], np.int64)
    j = np.arange(len(loops))
    same = (lo[None, :] == lo[:, None]) & (hi[None, :] == hi[:, None])    # [i, j]
    holds = (lo[None, :] <= lo[:, None]) & (hi[:, None] <= hi[None, :]) & ~same & \
        (j[None, :] != j[:, None])
    inside = (holds | same & (j[None, :] < j[:, None])).any(axis=1)
    out = [b for b, i in zip(loops, inside.tolist()) if not i]
    return _disjoint(sorted(out, key=lambda b: int(b[0, 0])))


def static_cost(data, bounds: np.ndarray, volume=None) -> tuple[np.ndarray, np.ndarray]:
    """Per iteration: each rank's compute volume [nranks, iterations] (of ``volume``, default
    the trace's), and the bytes each rank moves [nranks, iterations]."""
    def sums():
        a = data.actions
        vol = a["volume"] if volume is None else volume
        return (np.r_[0.0, np.cumsum(np.where(a["kind"] == _COMPUTE, vol, 0.0))],
                np.r_[0, np.cumsum(a["bytes_sent"] + a["bytes_recv"])])
    comp, moved = sums() if volume is not None else _per_trace(data, "static", sums)
    c = comp[bounds[:, 1:]] - comp[bounds[:, :-1]]
    return c, moved[bounds[:, 1:]] - moved[bounds[:, :-1]]


#: What a sampled replay computes once per trace (:func:`_per_trace`): a dict from (id of the
#: trace, what) to (the trace, the value), set for the length of :func:`sampled_replay`; None
#: outside one, where each call computes its own (the functions are public, and a trace's
#: columns may change between calls).
_MEMO: ContextVar[dict | None] = ContextVar("sampling_memo", default=None)


def _per_trace(data, what: str, make):
    """``make()``, computed once per trace and ``what`` within a sampled replay (the prefix sums
    of its whole columns, which every loop and phase looks at: SNAP at 2 ranks under Open MPI,
    4.5 M actions, summed them 17 times for 5 loops of which four hold 60 actions)."""
    memo = _MEMO.get()
    if memo is None:
        return make()
    got = memo.get((id(data), what))
    if got is None or got[0] is not data:
        got = memo[(id(data), what)] = (data, make())
    return got[1]


def slowest_compute(data, bounds: np.ndarray, volume=None) -> np.ndarray:
    """Per iteration, the slowest rank's compute volume (the compute critical path of an
    iteration with no synchronisation inside)."""
    return static_cost(data, bounds, volume)[0].max(axis=0)


def slowest_rank(data, bounds: np.ndarray) -> np.ndarray:
    """Per iteration, the rank of most compute, -1 where another's is within a millionth of
    it (equal computes, their sums rounded apart): what an iteration takes beyond its compute
    critical path depends on it (:func:`_by_slowest`)."""
    return _slowest_of(static_cost(data, bounds)[0])


def _slowest_of(comp: np.ndarray) -> np.ndarray:
    """:func:`slowest_rank` of each rank's compute per iteration ``comp`` [nranks,
    iterations] (:func:`static_cost`'s, computed once for every use)."""
    if len(comp) < 2:
        return np.zeros(comp.shape[1], np.int64)
    top = np.sort(comp, axis=0)[-2:]
    return np.where(top[1] - top[0] > 1e-6 * np.abs(top[1]), comp.argmax(axis=0), -1)


def superstep_compute(data, bounds: np.ndarray) -> np.ndarray:
    """Per iteration, the sum over its supersteps of the slowest rank's compute in each: the
    iteration's critical path when every blocking call that each rank makes equally often in
    every iteration (a collective, a waitall closing a halo exchange) synchronises the ranks.
    Closer to the replayed time than the slowest rank's total when different ranks are slowest
    in different supersteps (LULESH: three exchanges and an allreduce).  Without such a call it
    is the slowest rank's compute."""
    a = data.actions
    n = bounds.shape[1] - 1
    kind = [a["kind"][b[0]:b[-1]] for b in bounds]      # each rank's rows of the loop
    sync = [np.zeros(len(k), bool) for k in kind]
    for k in np.unique(kind[0]):
        if K.NAME.get(int(k)) not in _BLOCKING:
            continue
        count = _per_iteration(bounds, [x == k for x in kind])     # [nranks, iterations]
        if (count == count[0]).all() and count[0].min() > 0:
            for s, x in zip(sync, kind):
                s |= x == k
    if not sync[0].any():
        return slowest_compute(data, bounds)
    steps = int(_per_iteration(bounds[:1], sync[:1]).max()) + 1
    cost = np.zeros((n, steps))
    for b, x, s in zip(bounds, kind, sync):
        rows = np.flatnonzero(x == _COMPUTE)                    # (from the loop's first row)
        before = np.r_[0, np.cumsum(s)]
        it = np.searchsorted(b - b[0], rows, side="right") - 1
        step = before[rows] - before[b[it] - b[0]]
        per = np.bincount(it * steps + step, a["volume"][rows + b[0]], n * steps)
        np.maximum(cost, per.reshape(n, steps), out=cost)
    return cost.sum(axis=1)


def _per_iteration(bounds: np.ndarray, rows: list[np.ndarray]) -> np.ndarray:
    """How many of each rank's loop rows (``rows``: a mask per rank of its rows from the loop's
    first to its end) each iteration holds [nranks, iterations]: counted over the loop's rows,
    not the whole trace's (SNAP's short loops beside its main one)."""
    out = [np.diff(np.r_[0, np.cumsum(x)][b - b[0]]) for b, x in zip(bounds, rows)]
    return np.array(out, np.int64).reshape(len(bounds), bounds.shape[1] - 1)


def iteration_cost(data, bounds: np.ndarray) -> np.ndarray:
    """Per iteration [iterations, 3]: its compute critical path (:func:`superstep_compute`),
    the most MPI calls but polls a rank makes (which varies where iterations do: a convergence
    check, an output step), and the most polls (tests, iprobes) a rank makes, whose number is
    the waiting's and not the program's: not a variant of the iteration, but a cost.  A
    ``testall`` that completed counts as a call too, the ``waitall`` it stands for
    (:mod:`minitrace.tested_waits`): whether it completed is the arrival order's choice, and
    one call more or less per iteration made variants of TeaLeaf's alike iterations (at 4
    ranks a start grown over them, 6.4x and a bound of 0.52%; 14.8x and 0.021% so)."""
    a = data.actions
    calls, polls = [], []
    for b in bounds:
        rows = slice(b[0], b[-1])
        kind = a["kind"][rows]
        poll = K.mask(POLLS)[kind]
        tested = (kind == K.code("testall")) & ((a["flags"][rows] & K.FLAG_COMPLETED) != 0) \
            & (a["vec_len"][rows] > 0)
        calls.append((kind != _COMPUTE) & ~poll | tested)
        polls.append(poll)
    out = [superstep_compute(data, bounds)]
    for rows in (calls, polls):
        out.append(_per_iteration(bounds, rows).max(axis=0).astype(float))
    return np.column_stack(out)


def phases_of(data, loop: int, bounds: np.ndarray, window: int,
              drifts: bool = False) -> list[Phase]:
    """Cut a loop where the mean over a block of ``window`` iterations of the bytes a rank
    moves, or of a rank's share of the compute (its compute over the ranks' mean), departs from
    its phase's first block by more than PHASE_TOLERANCE and three standard errors (a block
    mean's: from its iterations' spread, or from how the block means wander where that is more,
    :func:`wander`) in LASTING successive blocks: where the communication or the
    balance between ranks changes (an AMR code's refinement moves the load), which changes how
    long ranks wait for each other.  A change of the compute's level alone (every rank slower
    together: a recorded machine's transient, a drift) stays in its phase, whose skipped
    iterations are regressed on their compute critical path.  A phase cut by a change of
    balance alone is ``joint`` with the one before it.  ``drifts``: a change of balance alone
    that comes gradually (:func:`_drifts`: not a step from the block two before it) is no cut
    either; the caller then predicts the phase's skipped iterations from their
    critical path through the messages, which follows the balance wherever it goes."""
    n = bounds.shape[1] - 1
    nblocks = n // window
    if nblocks < 2:                   # no two blocks to compare: one phase
        return [Phase(loop, 0, n, window)]
    comp, moved = static_cost(data, bounds)
    level = comp.mean(axis=0)
    share = np.divide(comp, level, out=np.ones_like(comp), where=level > 0)
    cost = np.concatenate([share, moved]).T.astype(float)      # [iterations, 2 nranks]
    out, start = [], 0
    blocks = cost[:nblocks * window].reshape(nblocks, window, -1)
    means = blocks.mean(1)
    noise = np.maximum((np.diff(blocks, axis=1) ** 2).mean(1) / 2 / window,   # a block mean's
                       wander(means))                                         # variance
    def departs(r: int) -> np.ndarray:      # [blocks, columns]: departs from block r's mean
        allowed = np.maximum(PHASE_TOLERANCE * np.abs(means[r]), _Z * np.sqrt(noise[r] + noise))
        return np.abs(means - means[r]) > allowed
    r, change = 0, departs(0)
    joint = False
    for j in range(1, nblocks - LASTING + 1):    # a change in the last blocks does not last
        lasting = change[j:j + LASTING]
        if not lasting.any(axis=1).all():
            continue
        moved = lasting[:, len(share):].any()
        if drifts and not moved and _drifts(means, noise, max(j - 2, r), j, lasting):
            continue
        if j - start // window >= LASTING:
            out.append(Phase(loop, start, j * window, window, joint=joint))
            start = j * window
            joint = not moved                   # no bytes moved
        r, change = j, departs(j)  # a shorter first run is a warm-up: the steady rule skips it
    out.append(Phase(loop, start, n, window, joint=joint))
    return out


def _drifts(means: np.ndarray, noise: np.ndarray, before: int, j: int,
            change: np.ndarray) -> bool:
    """Whether the change that lasts from block ``j`` (LASTING blocks) came gradually: not in
    each of those blocks does a column that makes it (``change`` [LASTING, columns]: those
    that depart there from the phase's first block) depart from block ``before`` (two blocks
    back) by more than PHASE_TOLERANCE and three standard errors.  The same rule as the
    change's, any column in each block: a step that moves the load between several ranks
    (each of 6 ranks +-11%, no one rank past the threshold in all 4 blocks) is no drift.
    UK-MAC CloverLeaf recorded at 4-16 ranks
    on 2 cores: each rank's share of the compute drifts by 10-20% over tens of blocks (block
    means' lag-1 autocorrelation 0.6-0.8), 0.02-0.03 a block, a block now and then off by
    0.1 and back; a refinement that moves the load (an AMR code's phase) jumps within a block
    or two and stays."""
    later = means[j:j + LASTING]
    allowed = np.maximum(PHASE_TOLERANCE * np.abs(means[before]),
                         _Z * np.sqrt(noise[before] + noise[j:j + LASTING]))
    return not ((np.abs(later - means[before]) > allowed) & change).any(axis=1).all()


def wander(means: np.ndarray) -> np.ndarray:
    """Per column of ``means`` [blocks, columns], the variance of a block's mean as the blocks
    themselves vary: half the squared successive difference of block means, its median (a step
    between phases is one difference, not the rule), over 0.455 (the median of a chi-square of
    one degree).  A recorded machine's load moves one rank's compute for tens of iterations
    (NPB LU W under a load of 6-8: lag-1 autocorrelation 0.8 of rank 0's share), so a block's
    mean varies 3-5 times more than the spread of its iterations says (the method of batch
    means); with that spread alone, such wandering was taken for a change of balance."""
    if len(means) < 3:
        return np.zeros(means.shape[1:])
    return np.median(np.diff(means, axis=0) ** 2, axis=0) / 2 / 0.455


def loop_window(iterations: int, window: int | None = None) -> int:
    """The window of a loop of ``iterations``: ``window`` if given, else WINDOW for a long loop
    and a 40th of a shorter one, at least MIN_WINDOW."""
    if window is not None:
        return int(window)
    return int(np.clip(iterations // 40, MIN_WINDOW, WINDOW))


def steady_start(x: np.ndarray, window: int, tolerance: float) -> int | None:
    """The first iteration from which three successive windows of ``x`` agree (the steady
    rule of the module's docstring), or None."""
    w = window
    for s in range(0, len(x) - 3 * w + 1):
        blocks = x[s:s + 3 * w].reshape(3, w)
        m = blocks.mean(1)
        v = (np.diff(blocks, axis=1) ** 2).mean(1) / 2     # noise, not the trend

        ok = True
        for i in range(2):
            diff = abs(m[i + 1] - m[i])
            noise = _Z * np.sqrt((v[i] + v[i + 1]) / w)
            if diff > max(tolerance * abs(m[i + 1]), noise):
                ok = False
                break
        if ok:
            return s
    return None


def beside_cost(x: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """The replayed iterations' times ``x`` less what their static cost (``cost``
    [iterations, columns], :func:`iteration_cost`) explains: the residuals about the line
    fitted over the later half, plus that half's mean.  The steady rule is about the replay's
    own warm-up; a recorded machine's transient moves the compute, which the skipped
    iterations' line follows (NPB LU W recorded at a load of 8: the compute of its first 36
    iterations between 4.5 and 8.4 ms, the times within 41 us of the line, and the rule on the
    times themselves replayed 56 iterations before it held).  ``x`` itself where no cost
    varies."""
    half = len(x) // 2
    c = cost.reshape(len(cost), -1)
    varies = c[half:].std(0) > 1e-9 * np.maximum(np.abs(c[half:].mean(0)), 1e-300)
    use = np.flatnonzero(varies)[:max((len(x) - half - 3) // 2, 0)]
    if not len(use):
        return x
    X = np.column_stack([np.ones(len(x)), c[:, use]])
    beta, *_ = np.linalg.lstsq(X[half:], x[half:], rcond=None)
    return x - X @ beta + x[half:].mean()


def reduce_trace(data, loops: list[np.ndarray], phases: list[Phase]):
    """The trace without the skipped iterations, with a zero-length sleep marker before every
    replayed iteration of each phase and after the last of its start and of its tail.  Returns
    (reduced TraceColumns,
    original row of each reduced row (-1: marker), per rank the (phase, iteration) of each
    marker in order, removed-row mask)."""
    a = data.actions
    n = len(a)
    delta = np.zeros(n + 1, np.int64)
    marks = []                                # (row before which, phase index, j)
    for pi, p in enumerate(phases):
        b = loops[p.loop]
        lo, hi = p.first + p.replayed, p.stop - p.tail
        if hi > lo:
            np.add.at(delta, b[:, lo], 1)
            np.add.at(delta, b[:, hi], -1)
        at = list(range(p.first, lo + 1)) + (list(range(hi, p.stop + 1)) if p.tail else [])
        for j, k in enumerate(at):
            marks.append((b[:, k], pi, j))
    removed = np.cumsum(delta[:-1]) > 0
    kept = np.flatnonzero(~removed)
    kept_before = np.r_[0, np.cumsum(~removed)]    # kept rows before each row
    rows = np.concatenate([m[0] for m in marks]) if marks else np.zeros(0, np.int64)
    # a marker's rank is its place in its bounds column: a loop ending where its rank ends
    # puts a marker at the next rank's first row (or the trace's end), before that rank's own
    mark_rank = np.tile(np.arange(data.nranks), len(marks))
    order = np.lexsort((mark_rank, rows))
    rows, mark_rank = rows[order], mark_rank[order]
    tags = np.concatenate([np.stack([np.full(len(m[0]), m[1]), np.full(len(m[0]), m[2])], 1)
                           for m in marks]) if marks else np.zeros((0, 2), np.int64)
    tags = tags[order]
    acts = a[kept]                            # (a copy: indexed by an array)
    vec_rows, vec_vals = data.vector_entries(kept)
    pairs = [crossing_requests(data, _skipped_rows(loops[p.loop], p))[0]
             if p.in_flight is None else p.in_flight for p in phases]
    _complete_in_flight(data, kept, acts, vec_rows, vec_vals, np.concatenate(
        pairs or [np.zeros((0, 3), np.int64)]))
    marker = empty_actions(len(rows))
    marker["kind"] = _SLEEP
    pos = kept_before[rows]
    out = np.insert(acts, pos, marker)
    origin = np.insert(kept, pos, -1)
    assign_vec_offsets(out)
    new_offsets = np.array([kept_before[o] for o in data.rank_offsets], np.int64) + \
        np.r_[0, np.cumsum(np.bincount(mark_rank, minlength=data.nranks))]
    reduced = replace(data, actions=out, rank_offsets=new_offsets, vectors=vec_vals)
    per_rank = [tags[mark_rank == r] for r in range(data.nranks)]
    return reduced, origin, per_rank, removed


def _complete_in_flight(data, kept, acts, vec_rows, vec_vals, pairs: np.ndarray) -> None:
    """Give the completions (waits, tests, and their vectors) of the requests in flight at the
    end of a skipped block the ids of the ones in flight at its start (``pairs``, from
    :func:`crossing_requests`), in place."""
    if not len(pairs):
        return
    done = K.mask(K.COMPLETIONS)

    def remap(rows_rank, ids, where):
        key = _dense(np.r_[pairs[:, 0], rows_rank], np.r_[pairs[:, 1], ids])
        pk, k = key[:len(pairs)], key[len(pairs):]
        order = np.argsort(pk)
        j = np.minimum(np.searchsorted(pk[order], k), len(pk) - 1)
        hit = where & (pk[order][j] == k)
        return np.where(hit, pairs[order, 2][j], ids)
    acts["request"] = remap(data.rank_of(kept), acts["request"].astype(np.int64),
                            done[acts["kind"]] & (acts["request"] >= 0))
    if len(vec_rows):
        vec_vals[:] = remap(data.rank_of(vec_rows), vec_vals.astype(np.int64),
                            done[data.actions["kind"][vec_rows]])


def check_separable(data, rows: np.ndarray) -> str | None:
    """Why ``rows`` (sorted) cannot be left out of the replay (messages or requests crossing
    their boundary, collectives not removed alike on every member), or None."""
    return _separable(data, rows)[0]


def _separable(data, rows: np.ndarray) -> tuple[str | None, np.ndarray]:
    """:func:`check_separable`'s answer, and the requests in flight across the boundaries
    paired up (:func:`crossing_requests`)."""
    pairs = np.zeros((0, 3), np.int64)
    if not len(rows):
        return None, pairs
    a = data.actions
    kind, rank = a["kind"][rows], data.rank_of(rows)
    peer, tag, comm = a["peer"][rows], a["tag"][rows], a["comm"][rows]
    real = peer >= 0                     # MPI_PROC_NULL (-1): no message to match
    sends = K.mask(K.SENDS)[kind] & real
    recvs = K.mask(K.RECVS)[kind] & real
    src = np.r_[rank[sends], peer[recvs]]
    dst = np.r_[peer[sends], rank[recvs]]
    key = _dense(src, dst, np.r_[tag[sends], tag[recvs]], np.r_[comm[sends], comm[recvs]])
    n_sends = int(sends.sum())
    if not _same_multiset(key[:n_sends], key[n_sends:]):
        return "messages cross the boundaries of the skipped iterations", pairs
    if not _same_messages(data, rows):
        return ("messages cross the boundaries of the skipped iterations (as many sent as "
                "received on each channel, but receives left after them would take messages "
                "of other sizes)"), pairs
    pairs, why = crossing_requests(data, rows)
    if why:
        return why, pairs
    coll = K.mask(K.ORDERED_COLLECTIVES)[kind]
    for c in np.unique(comm[coll]):
        members = np.asarray(data.comms.get(int(c), np.arange(data.nranks)), np.int64)
        members = members[members >= 0]
        count = np.bincount(rank[coll & (comm == c)], minlength=data.nranks)[members]
        if len(count) and (count != count[0]).any():
            return "collectives are not skipped alike on every rank", pairs
    return None, pairs


def _same_messages(data, rows: np.ndarray) -> bool:
    """Whether, with ``rows`` (sorted) left out, each receive left gets a message of the size it
    got: a message is the n-th sent on its channel (source, destination, tag, communicator)
    and the n-th received on it (MPI's non-overtaking order), and where the sends and
    receives left out are as many but not the same n (a pipeline skipped by whole periods, or
    a block that starts a message later on the receiver than on the sender), a receive kept
    beside the block takes another message (one per message of shift): alike in a pipeline,
    but public PENNANT at 4 ranks gave a receive of 408 bytes a message of 816 (SimGrid's
    MPI_ERR_TRUNCATE)."""
    s, r, ks, kr, size, ns, nr = _per_trace(data, "messages", lambda: _messages(data))
    kept_s, kept_r = (~_within(rows, x) for x in (s, r))
    ms, mr = _nth(ks[kept_s], s[kept_s]), _nth(kr[kept_r], r[kept_r])
    k = kr[kept_r]
    was = _looked_up(ks, ns, size, k, nr[kept_r])
    return np.array_equal(was, _looked_up(ks[kept_s], ms, size[kept_s], k, mr))


def _messages(data) -> tuple[np.ndarray, ...]:
    """The trace's sends and receives (rows), the channel of each, the sends' sizes and each
    one's place on its channel: what :func:`_same_messages` looks up."""
    a = data.actions
    kind, rank, peer = a["kind"], data.rank_of(), a["peer"]
    s = np.flatnonzero(K.mask(K.SENDS)[kind] & (peer >= 0))
    r = np.flatnonzero(K.mask(K.RECVS)[kind] & (peer >= 0))
    key = _dense(np.r_[rank[s], peer[r]], np.r_[peer[s], rank[r]], np.r_[a["tag"][s], a["tag"][r]],
                 np.r_[a["comm"][s], a["comm"][r]])
    ks, kr = key[:len(s)], key[len(s):]
    return s, r, ks, kr, a["bytes_sent"][s], _nth(ks, s), _nth(kr, r)


def _within(rows: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Which of ``x`` are among ``rows`` (sorted)."""
    if not len(rows):
        return np.zeros(len(x), bool)
    return rows[np.minimum(np.searchsorted(rows, x), len(rows) - 1)] == x


def _nth(key: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Each row's place among the rows of its key, in row order."""
    order = np.lexsort((row, key))
    out = np.empty(len(key), np.int64)
    out[order] = np.arange(len(key)) - np.searchsorted(key[order], key[order])
    return out


def _looked_up(key: np.ndarray, nth: np.ndarray, value: np.ndarray, k: np.ndarray,
               n: np.ndarray) -> np.ndarray:
    """``value`` at each (``k``, ``n``) of the table (``key``, ``nth``); -1 where it has none."""
    code = _dense(np.r_[key, k], np.r_[nth, n])
    table, want = code[:len(key)], code[len(key):]
    order = np.argsort(table)
    j = np.minimum(np.searchsorted(table[order], want), max(len(table) - 1, 0))
    found = table[order][j] == want if len(table) else np.zeros(len(want), bool)
    return np.where(found, value[order][j] if len(table) else 0, -1)


def crossing_requests(data, rows: np.ndarray) -> tuple[np.ndarray, str | None]:
    """The requests in flight across the boundaries of ``rows`` (sorted; a block of iterations
    to skip) paired up, or why they cannot be.  A pipelined loop posts in each iteration the
    requests the next one completes: the block completes requests posted before it (in flight
    at its start) and posts requests completed after it (in flight at its end).  Skipping
    whole periods of the pipeline, the ones completed after the block are the ones in flight
    at its start: each request in flight at its end is paired with one in flight at its start
    of the same rank and call (kind, peer, tag, communicator, bytes), in the order they were
    posted.  Returns ([pairs, 3] of rank, id in flight at the end, id in flight at the start
    (the id the completions after the block are given), and None) or (empty, why)."""
    none = np.zeros((0, 3), np.int64)
    a = data.actions
    kind, rank = a["kind"][rows], data.rank_of(rows)
    (wa, ia, ra), (wc, ic, _) = (_requests(data, rows, kind, rank, act) for act in (True, False))
    key = _dense(np.r_[wa, wc], np.r_[ia, ic])
    ka, kc = key[:len(wa)], key[len(wa):]
    if _same_multiset(ka, kc):
        return none, None
    out, into = ~np.isin(ka, kc), ~np.isin(kc, ka)   # in flight at the end, at the start
    why = "requests cross the boundaries of the skipped iterations"
    if not _same_multiset(ka[~out], kc[~into]):
        return none, f"{why} unevenly (posted and completed more often in the block)"
    if out.any():          # never completed (SNAP overwrites its last send's handle): no pair
        cw, ci, _ = _all_requests(data, False)
        k = int(out.sum())
        ever = _dense(np.r_[wa[out], cw], np.r_[ia[out], ci])
        dangling = np.zeros(len(out), bool)
        dangling[out] = ~np.isin(ever[:k], ever[k:])
        out &= ~dangling
        if not out.any() and not into.any():
            return none, None
    iw, ii = wc[into], ic[into]
    first = data.rank_offsets[iw]                     # where each one's rank starts
    at = np.searchsorted(rows, data.rank_offsets[:-1])
    start = rows[np.minimum(at, len(rows) - 1)][iw]   # the block's first row on that rank
    before = np.concatenate([np.arange(f, s) for f, s in
                             sorted({(int(f), int(s)) for f, s in zip(first, start)})]) \
        if len(iw) else np.zeros(0, np.int64)
    pw, pi, pr = _requests(data, before, a["kind"][before], data.rank_of(before), True)
    kp = _dense(np.r_[pw, iw], np.r_[pi, ii])
    k_posted, k_in = kp[:len(pw)], kp[len(pw):]
    order = np.argsort(k_posted, kind="stable")
    j = np.searchsorted(k_posted[order], k_in, side="right") - 1   # the latest posting
    if len(k_in) and ((j < 0) | (k_posted[order][np.maximum(j, 0)] != k_in)).any():
        return none, f"{why}: a request completed in them was never posted"
    posted_in = pr[order][j] if len(k_in) else np.zeros(0, np.int64)
    env = [ra[out], posted_in]
    fields = ("kind", "peer", "tag", "comm", "bytes_sent", "bytes_recv")
    sig = _dense(np.r_[wa[out], iw], *(np.r_[a[f][env[0]], a[f][env[1]]] for f in fields))
    so, si = sig[:len(env[0])], sig[len(env[0]):]
    oo = np.lexsort((env[0], so))
    oi = np.lexsort((env[1], si))
    if len(so) != len(si) or not np.array_equal(so[oo], si[oi]):
        return none, (f"{why} and those in flight at its end are not the calls in flight at "
                      f"its start (not a pipeline)")
    return np.stack([wa[out][oo], ia[out][oo], ii[oi]], 1).astype(np.int64), None


def _in_flight(data) -> np.ndarray:
    """Per row x of the trace (and its end, [actions + 1]), how many requests of x's rank were
    posted before x and are completed at x or after: an iteration starting at x leaves them
    crossing its boundary.  A request's n-th activation (rank, id) is paired with its n-th
    completion; one never completed crosses nothing (SNAP overwrites a handle)."""
    a = data.actions
    (wa, ia, posted), (wc, ic, done) = (_all_requests(data, act) for act in (True, False))
    key = _dense(np.r_[wa, wc], np.r_[ia, ic])
    kp, kd = key[:len(wa)], key[len(wa):]
    ends = _looked_up(kd, _nth(kd, done), done, kp, _nth(kp, posted))   # (-1: never done)
    paired = ends >= 0
    flight = np.zeros(len(a) + 2, np.int64)
    np.add.at(flight, posted[paired] + 1, 1)
    np.add.at(flight, ends[paired] + 1, -1)
    return np.cumsum(flight)[:len(a) + 1]


def _quiet_bounds(data, b: np.ndarray, flight: np.ndarray) -> np.ndarray | None:
    """The loop ``b`` with each iteration made to start at its first row at which no request of
    its rank is in flight (``flight``: :func:`_in_flight`), where its boundaries are crossed
    and every iteration holds such a row; its iterations whose start so moved past the loop's
    end left out.  None where no move is needed or none can be made.  Iterations that
    complete the requests their predecessor posted are so many rotations of a loop that
    completes them in each (the loop found starts after the first calls of an iteration, where
    the first iteration differs), and skipping them needs no pairing of requests across the
    skipped block, which a completed test makes uneven (UK-MAC TeaLeaf: whether a rank's halo
    requests end in the test or in a wait after the boundary is the arrival order's choice)."""
    if not flight[b].any():
        return None
    quiet = np.flatnonzero(flight == 0)         # the trace's end is quiet
    moved = quiet[np.searchsorted(quiet, b)]
    if (np.diff(moved, axis=1) <= 0).any() or (moved > data.rank_offsets[1:, None]).any():
        return None
    keep = int((moved <= b[:, -1:]).all(axis=0).sum())
    return moved[:, :keep] if keep >= 2 else None


def _aligned_ranks(data, top: list[np.ndarray]) -> tuple[list[np.ndarray], list[int]]:
    """The loops ``top`` with each one whose iterations start on its ranks at other messages of
    a channel (source, destination, tag, communicator) between them, where those messages vary
    in size, cut into pieces whose iteration j starts on every rank at the same message of each
    channel, a rank's piece taken from whichever of its loops holds those messages, at
    whichever of their iterations, else from the runs of its calls anchored as the loop's
    iterations are (:func:`_anchored_runs`); the iterations no piece takes replayed as they
    are (rank 0's loops are cut, the other ranks' follow them).  Returns
    (the loops, the indices in ``top`` of those cut).  The loops are found on each rank apart
    and paired by their order: public UK-MAC TeaLeaf at 4 ranks began ranks 2 and 3's loop 31
    iterations (one period of its halo sizes, 1,016 bytes once, 4,128 thirty times) before
    ranks 0 and 1's; at 2 ranks rank 0's second, third and fourth loops held messages 2,222 to
    3,775, 3,807 to 4,379 and 4,380 to 5,685 of each channel, rank 1's 2,826 to 4,379, 4,380
    to 4,952 and 4,984 to 6,289.  A block of iterations then leaves out other messages on the
    sender than on the receiver, and the receives left beside it take messages of other sizes
    (:func:`_same_messages`)."""
    chans = _per_trace(data, "channels", lambda: _channels(data))
    if not chans:
        return top, []
    cut = [li for li, b in enumerate(top) if _misaligned(chans, b)]
    if not cut:
        return top, []
    kept = [b for li, b in enumerate(top) if li not in cut]
    pieces = []
    rows = _anchored_runs(data, top, cut)
    for li in list(cut):
        todo, found = [(0, top[li].shape[1] - 1)], []
        while todo:
            a, z = todo.pop()
            got = _piece(chans, rows, len(top), li, a, z, len(top[li]))
            if got is None:
                continue
            b, jlo, jhi = got
            found.append(b)
            todo += [x for x in ((a, a + jlo), (a + jhi, z)) if x[1] - x[0] >= 3]
        if found:
            pieces += found
        else:                           # none: the loop as it was
            kept.append(top[li])
            cut.remove(li)
    if not cut:
        return top, []
    out = list(kept)
    for b in sorted(pieces, key=lambda b: -b.shape[1]):
        if not any(((b[:, 0] < o[:, -1]) & (o[:, 0] < b[:, -1])).any() for o in out):
            out.append(b)
    return sorted(out, key=lambda b: int(b[0, 0])), cut


def _anchored_runs(data, top: list[np.ndarray], cut: list[int]) -> list[list[np.ndarray]]:
    """Per rank, the iteration starts of each loop of ``top``, then for each loop ``cut`` the
    starts of every run of the rank's calls (sizes aside) anchored as its iterations are
    (:func:`extend_loop`'s anchor), in the whole rank: where a rank's loop began at other
    messages, the other rank's matching iterations may lie in no loop found (public UK-MAC
    TeaLeaf at 2 ranks: 604 iterations of rank 1's before its second loop, as many of rank
    0's after its fourth)."""
    ids, _ = structure_ids(data, sizes=False)
    out = []
    for r in range(data.nranks):
        rows = [b[r] for b in top]
        lo, hi = int(data.rank_offsets[r]), int(data.rank_offsets[r + 1])
        for li in cut:
            body = ids[top[li][r, 0]:top[li][r, 1]]
            got = _anchor(body, None) if len(body) else None
            if got is None:
                continue
            p, n = got
            at = _occurrences(ids[lo:hi], body[p:p + n]) + lo - p
            rows.append(np.unique(np.r_[at[(at >= lo) & (at <= hi)], hi]))
        out.append(rows)
    return out


def _channels(data) -> list[tuple]:
    """Per channel with messages both sent and received: (sender, receiver, rows of its sends,
    of its receives, its messages' sizes), in order."""
    s, r, ks, kr, size, _, _ = _per_trace(data, "messages", lambda: _messages(data))
    rank = data.rank_of()
    os_, or_ = np.argsort(ks, kind="stable"), np.argsort(kr, kind="stable")
    keys, at = np.unique(ks[os_], return_index=True)
    end = np.r_[at[1:], len(os_)]
    lo, hi = np.searchsorted(kr[or_], keys), np.searchsorted(kr[or_], keys, "right")
    out = []
    for i in range(len(keys)):
        if hi[i] > lo[i]:
            sr, rr = s[os_[at[i]:end[i]]], r[or_[lo[i]:hi[i]]]
            out.append((int(rank[sr[0]]), int(rank[rr[0]]), sr, rr, size[os_[at[i]:end[i]]]))
    return out


def _misaligned(chans: list[tuple], b: np.ndarray) -> bool:
    """Whether the loop ``b`` starts an iteration on a channel's sender at another message than
    on its receiver, where the messages between vary in size."""
    for p, q, sr, rr, size in chans:
        cs, cr = np.searchsorted(sr, b[p]), np.searchsorted(rr, b[q])
        if not np.array_equal(cs, cr):
            lo, hi = min(cs[0], cr[0]), max(cs[-1], cr[-1])
            if hi > lo and np.ptp(size[lo:hi]) > 0:
                return True
    return False


def _shift(cu: np.ndarray, cq: np.ndarray) -> tuple[int, int] | None:
    """(d, how many) of the longest run, of at least 3 iterations, over which ``cu[j]`` equals
    ``cq[j + d]``, trying the shifts that line up their first values; None where none does."""
    cand = set()
    for x, y, sign in ((cu, cq, 1), (cq, cu, -1)):
        lo, hi = np.searchsorted(y, x[0]), np.searchsorted(y, x[0], "right")
        cand.update(sign * j for j in range(lo, min(hi, lo + 64)))
    best = None
    for d in sorted(cand, key=abs):
        j0, j1 = max(0, -d), min(len(cu), len(cq) - d)
        if j1 - j0 >= 4 and np.array_equal(cu[j0:j1], cq[j0 + d:j1 + d]) and \
                (best is None or j1 - j0 > best[1]):
            best = (d, j1 - j0)
    return best


def _piece(chans: list[tuple], top: list[list[np.ndarray]], loops: int, li: int, a: int,
           z: int, nranks: int) -> tuple[np.ndarray, int, int] | None:
    """The longest piece of iterations ``a`` to ``z`` (boundaries) of loop ``li`` on rank 0
    that starts each iteration on every rank at the same message of each channel (ranks
    reached through channels, from any of their loops, :func:`_aligned_ranks`; ``top``: per
    rank the iteration starts of each of the ``loops`` loops, then of the runs anchored as
    theirs, tried where no loop lines up): (its bounds, its first and last boundary counted
    from ``a``); None where there is none."""
    where = {0: (li, a)}                 # rank: (candidate, index of boundary j=0)
    jlo, jhi = 0, z - a
    todo = [0]

    def counts(rank, rows_of, lj, base):
        return np.searchsorted(rows_of, top[rank][lj][base + jlo:base + jhi + 1])
    while todo:
        u = todo.pop()
        lu, bu = where[u]
        for p, q, sr, rr, _ in chans:
            if u not in (p, q) or p == q:
                continue
            v, mine, theirs = (q, sr, rr) if u == p else (p, rr, sr)
            if v in where:
                continue
            cu = counts(u, mine, lu, bu)
            if cu[0] == cu[-1]:
                continue                 # no message of the channel in the piece
            best = None
            for lj, b in enumerate(top[v]):
                if lj == loops and best is not None:
                    break                # the anchored runs only where no loop does
                got = _shift(cu, np.searchsorted(theirs, b))
                if got is not None and (best is None or got[1] > best[2] or
                                        got[1] == best[2] and lj == li):
                    best = (lj, got[0], got[1])
            if best is None:
                return None
            lj, d, m = best
            where[v] = (lj, d - jlo)
            lo = jlo + max(0, -d)
            jlo, jhi = lo, lo + m - 1
            todo.append(v)
    if jhi - jlo < 3:
        return None
    for r in range(nranks):
        where.setdefault(r, (li, a))
    for p, q, sr, rr, _ in chans:
        if not np.array_equal(counts(p, sr, *where[p]), counts(q, rr, *where[q])):
            return None
    b = np.stack([top[r][where[r][0]][where[r][1] + jlo:where[r][1] + jhi + 1]
                  for r in range(nranks)])
    return b, jlo, jhi


def _cover_variants(p: Phase, calls: np.ndarray, elsewhere: set = frozenset(),
                    start: bool = True, need: int = 2) -> None:
    """Grow the phase's replayed iterations until those fitted (the start, the tail but its
    first), or those of the phases that share its line (``elsewhere``: :func:`_seen`), hold
    every variant of the iterations it skips, two of each (by their count of MPI calls: a
    convergence check, an output step): the skipped time of a variant no replayed iteration
    shows cannot be predicted.  The tail grows back over the last two of each, or, where fewer
    iterations do it (``start``: the start's length is not the user's), the start grows over
    the first two of each (HPCG's benchmark loop: its variants near its start, the tail grew
    from 5 to 51, now the start from 20 to 56), or over the first of each and the tail back
    over the last (NPB CG W on 8 ranks: a residual step every 26th CG iteration, a start of 40
    and a tail of 10 without one; the tail grew to 53, now the start to 52 and the tail to
    27).  No skip is left when they meet.  ``need``: how many of each (:func:`_see_once`)."""
    while p.skipped:
        lo, hi = p.replayed, p.iterations - p.tail
        seen = _seen(p, calls) | elsewhere
        skipped = calls[lo:hi]
        unseen = [np.flatnonzero(skipped == c) for c in set(skipped.tolist()) - seen]
        if not unseen:
            return
        # the tail's first iteration is not fitted: it starts one before the variants
        new_hi = lo + min(int(at[-min(len(at), need)]) for at in unseen) - 1
        ahead = lo + max(int(at[min(len(at), need) - 1]) for at in unseen) + 1
        first = lo + max(int(at[0]) for at in unseen) + 1
        last = lo + min(int(at[-1]) for at in unseen) - 1
        grow = [(hi - new_hi, 0)]
        if start:
            grow += [(ahead - lo, 1)] + ([(first - lo + hi - last, 2)] if first < last else [])
        how = min(grow)[1]
        if how == 1 and ahead < hi:
            p.replayed = ahead
            continue
        if how == 2:
            p.replayed, p.tail = first, p.iterations - last
            continue
        if new_hi <= lo:
            p.replayed, p.tail = p.iterations, 0
            return
        p.tail = p.iterations - new_hi


#: A variant of a phase's iterations that it shows at most this many times, deep in what it
#: would skip, may cut it in two (:func:`_split_at_variants`).
RARE = 2


def _split_at_variants(phases: list[Phase], cost: list[np.ndarray],
                       fixed: int | None) -> list[Phase]:
    """The phases, each cut before the iterations of a variant that it shows at most
    ``RARE`` times, deep in what it would skip, where two phases (each a start and a tail of
    its own, the variant in the second one's start) replay at most half the iterations of the
    one grown over that variant (:func:`_cover_variants`, which covers a variant seen once in
    the middle of a phase by a start or a tail that reaches it): a cut costs a second warm-up
    and two lines fitted apart, worth it where it saves that much.  UK-MAC TeaLeaf's two time
    steps are one loop of 1,891 CG iterations with the step between them two iterations of
    other calls: the start grew over 891 of them (2.1x), where two phases replay 120.  A phase
    joint to another (:func:`_groups`) is left as it is; so is one ``like`` another, whose
    variants the first of its kind replays: that one's pieces after the first are ``like``
    it, the others ``like`` it still (public Nekbone: its 11 solves of 201 iterations, a
    variant between the two CG solves of 100 iterations, are cut in one and skip it in the
    others).  A phase's pieces after the first are ``like`` the first (but a drift's, whose
    path gives their line), a start of one window each, the variant in it: the steps between
    two output steps are the steps before them (a step loop of 450 with two outputs among
    them, the start and the tail grown over the first and back over the last: 1.9x; cut in
    three, 5.0x).  A drift's phase joint to another is cut too (its pieces stay joint, each
    iteration on its path): public TeaLeaf under Open MPI at 2 ranks, a change of balance at
    iteration 180 and a drift after it, grew a tail of 694 iterations over the step between
    its CG loops (2.4x; cut, 11.0x, +0.006% from the full replay against a bound of 0.13%)."""
    out: list[Phase] = []
    joint = {pi for g in _groups(phases) if any(phases[q].joint for q in g) for pi in g}
    moved: dict[int, int] = {}              # a phase's index -> its first piece's
    for pi, p in enumerate(phases):
        moved[pi] = len(out)
        if p.like is not None:
            p.like = moved[p.like]
        if (pi in joint and p.path is None) or p.like is not None or \
                p.window * 8 > p.iterations:
            out.append(p)
            continue
        labels = _variant_labels(cost[p.loop])[p.first:p.stop]
        _, inv, count = np.unique(labels, return_inverse=True, return_counts=True)
        rare = np.flatnonzero(count[inv.reshape(-1)] <= RARE)
        rare = rare[(rare >= p.replayed + p.window) & (rare < p.iterations - p.tail - p.window)]
        cuts = rare[np.r_[True, np.diff(rare) > p.window]] if len(rare) else rare
        if not len(cuts):
            out.append(p)
            continue
        edges = np.r_[0, cuts, p.iterations] + p.first
        pieces = [replace(p, first=int(lo), stop=int(hi), replayed=0, tail=0,
                          path=None if p.path is None else p.path[lo - p.first:hi - p.first],
                          beyond=None if p.beyond is None else
                          p.beyond[lo - p.first:hi - p.first])
                  for lo, hi in zip(edges[:-1], edges[1:])]
        whole = replace(p)
        _cover_variants(whole, labels, start=fixed is None)
        for qi, q in enumerate(pieces):
            q.replayed, q.tail = _least_replay(q.iterations, q.window, qi > 0, fixed)
            _cover_variants(q, labels[q.first - p.first:q.stop - p.first], start=fixed is None)
        if sum(q.replayed + q.tail for q in pieces) * 2 <= whole.replayed + whole.tail:
            if p.path is None:
                for q in pieces[1:]:
                    q.like = moved[pi]
            out += pieces
        else:
            out.append(p)
    return out


def _cut_at_unseen_slowest(phases: list[Phase],
                           comp: list[np.ndarray]) -> tuple[list[Phase], list]:
    """The phases, each cut at the first block of ``window`` iterations it would skip whose
    slowest rank (``comp``: per loop, each rank's compute in each iteration) is clearly so but
    the slowest in fewer than two of the iterations it would replay (its start, its tail:
    :func:`_unseen_slowest`): the piece from there on is ``joint`` to the one before, with a
    start of one window that shows it.  What an iteration takes beyond its compute critical
    path depends on its slowest rank (:func:`_by_slowest`), and an iteration whose slowest
    rank no fitted one shows is put at the others' level (seed 300 of
    tests/test_sampling_switch_back.py: rank 0 the slowest in the start, rank 1 in the tail,
    rank 2 in 179 of the 546 skipped iterations, 3.9 us an iteration more than rank 0 beyond
    its path: -2.89% from the full replay against a bound of 2.82%, the start grown to 124;
    cut at 144, +0.017% against 0.678%).  Each piece is looked at again.  As a variant no
    fitted iteration shows is replayed (:func:`_cover_variants`), a cut is made whatever the
    replay's size (seed 247 there: a loop of 77 check periods, rank 3 the slowest in 8
    skipped ones, the replay already 3.3 times smaller than the trace, 2.5 times after the
    cut: -0.236% from the full replay against a bound of 0.054% before, +0.018% against
    1.205% after; none of the 56 recordings changed by it).  Phases ``like`` others, or
    others like, are left as they are (their variants' replay is shared).  Returns the
    phases and the (loop, iteration) of each cut."""
    shared = {q.like for q in phases if q.like is not None}
    out, cuts, moved = [], [], {}
    for pi, p in enumerate(phases):
        moved[pi] = len(out)
        if p.like is not None:
            p.like = moved[p.like]
        if p.like is not None or pi in shared:
            out.append(p)
            continue
        todo = [p]
        while todo:
            q = todo.pop(0)
            at = _unseen_slowest(q, comp[q.loop][:, q.first:q.stop])
            if at is None:
                out.append(q)
                continue
            a = replace(q, stop=q.first + at,
                        path=None if q.path is None else q.path[:at],
                        beyond=None if q.beyond is None else q.beyond[:at])
            a.replayed, a.tail = min(q.replayed, at), 0
            if at - a.replayed > 3 * q.window:
                a.tail = q.window
            b = replace(q, first=q.first + at, joint=True,
                        path=None if q.path is None else q.path[at:],
                        beyond=None if q.beyond is None else q.beyond[at:])
            b.replayed, b.tail = _least_replay(b.iterations, b.window, True)
            if b.tail:
                b.tail = min(max(b.tail, q.tail), b.iterations - b.replayed)
            if b.replayed + b.tail >= b.iterations:
                b.replayed, b.tail = b.iterations, 0
            cuts.append((q.loop, b.first))
            todo = [a, b] + todo
    return out, cuts


def _unseen_slowest(p: Phase, comp: np.ndarray) -> int | None:
    """The first iteration (in the phase) of the first block of ``window`` it would skip
    whose slowest rank (``comp``: each rank's compute in each of its iterations [nranks,
    iterations]) is clearly so, by more than three standard errors of the two block means'
    difference (:func:`_slowest_changes`' rule: ranks even, the slowest by chance, cut
    nothing), and the slowest (the most compute) in fewer than two of the iterations it
    would replay; None where there is none."""
    if len(comp) < 2:
        return None
    hi = p.iterations - p.tail
    slowest = comp.argmax(axis=0)
    seen = np.bincount(np.r_[slowest[:p.replayed], slowest[hi + 1:]], minlength=len(comp))
    for j in range(p.replayed, hi - p.window + 1, p.window):
        block = comp[:, j:j + p.window]
        mean, se2 = block.mean(1), block.var(1, ddof=1) / p.window
        top, second = np.argsort(-mean)[:2]
        if seen[top] < 2 and mean[top] - mean[second] > _Z * np.sqrt(se2[top] + se2[second]):
            return j
    return None


def _seen(p: Phase, calls: np.ndarray) -> set:
    """The variants (``calls``: :func:`_cover_variants`) among the phase's replayed iterations
    that are fitted."""
    return set(calls[:p.replayed].tolist()) | set(calls[p.iterations - p.tail + 1:].tolist())


def _variant_labels(cost: np.ndarray) -> np.ndarray:
    """Per iteration of a loop (``cost``: :func:`iteration_cost`), its variant for
    :func:`_cover_variants`: its count of MPI calls, or, for an iteration whose compute
    critical path exceeds the loop's median by more than HICCUP of the whole loop's, a
    variant of its own, which is then replayed: a hiccup of the recorded machine (HPCG on 8
    ranks: one iteration of 21.5 ms among ones of 1.2 ms, a quarter of its loop's compute) is
    no point on the replayed iterations' line (the replay took 18.2 ms for it: the ranks that
    waited for the slow one absorbed 15% of its delay), and extrapolated at the line's slope
    it put the run 1.4% off against a bound of 0.37%.  Where most iterations' compute is the
    same (a generated loop), the iterations of each compute are a variant: the replayed
    iterations' line has no compute column to carry one to its cost (a hiccup of 8-20 times
    the others', 3-7% of the loop, was 2.3-6.0% off against a bound of 0.005%)."""
    return _labels(_variant_rows(cost))


def _variant_rows(cost: np.ndarray, loop: int = 0) -> np.ndarray:
    """Per iteration of loop number ``loop`` what makes its variant (:func:`_variant_labels`):
    its calls and its compute, or its hiccup's own key, unique among loops."""
    excess = cost[:, 0] - np.median(cost[:, 0])
    if np.count_nonzero(excess == 0) * 2 > len(excess):
        key = cost[:, 0]
    else:
        key = np.where(excess > HICCUP * cost[:, 0].sum(),
                       -1.0 - np.arange(len(cost)) - loop * 2.0 ** 32, 0.0)
    return np.column_stack([cost[:, 1], key])


def _labels(rows: np.ndarray) -> np.ndarray:
    """A float label per row, equal for equal rows."""
    return np.unique(rows, axis=0, return_inverse=True)[1].reshape(-1).astype(float)


def _cover_group(phases: list[Phase], pi: int, cost: list[np.ndarray],
                 start: bool = True, need: int = 2) -> None:
    """:func:`_cover_variants` of phase ``pi`` with the variants the other phases of its group
    (:func:`_groups`) fit: their line is one, each phase with an intercept of its own, so a
    variant's cost is pinned by the group's replayed iterations wherever they are (UK-MAC
    CloverLeaf at 4 ranks, a field summary every 10 steps: a joint phase's tail of 7 steps
    grew to 28 for a summary the phase before had replayed).  ``start``: the start may grow
    (``--sample auto``); ``need``: :func:`_cover_variants`'s."""
    group = next(g for g in _groups(phases) if pi in g)
    calls = dict(zip(group, _group_labels(phases, group, cost, need == 1)))
    elsewhere = set().union(*(_seen(phases[q], calls[q]) for q in group if q != pi))
    _cover_variants(phases[pi], calls[pi], elsewhere, start, need)


def _group_labels(phases: list[Phase], group: list[int], cost: list[np.ndarray],
                  sizes: bool = False) -> list:
    """Per phase of the group, its iterations' variants (:func:`_variant_labels`), labelled
    alike across the group's loops; across loops (phases ``like`` one another), or where one of
    each is fitted (``sizes``: :func:`_see_once`), a variant's iterations apart where they move
    bytes apart (:func:`_bytes_apart`)."""
    loops = sorted({phases[q].loop for q in group})
    whole = {li: _variant_rows(cost[li], li) for li in loops}
    rows = [whole[p.loop][p.first:p.stop] for p in (phases[q] for q in group)]
    labels = _labels(np.concatenate(rows))
    if sizes or len(loops) > 1:
        labels = _bytes_apart(labels, np.concatenate([phases[q].beyond for q in group]))
    return np.split(labels, np.cumsum([len(r) for r in rows])[:-1])


def _bytes_apart(labels: np.ndarray, beyond: np.ndarray) -> np.ndarray:
    """``labels`` with each variant's iterations (``beyond``: :attr:`Phase.beyond` of each)
    in runs of the bytes they move beyond their phase's commonest iteration, from the fewest,
    each run within ``PHASE_TOLERANCE`` of the bytes its iterations move.  The line has no
    column for bytes, and one replayed iteration cannot show how its variant's others differ
    (two show it in their residuals), nor the first of a phase's kind another size's: a
    variant that moves more at another problem size, or later in the run, is another variant,
    replayed where it is.  A step between two solves whose broadcast grows with the size, 1-36
    MB, was -2.0% from the full replay against a bound of 0.03% where the first size's pinned
    them all; an output step every 105 iterations whose reduction grows fourfold from 64
    bytes, fitted once, -0.61% against 0.11% (fitted twice: +1.26% against 3.90%).  Within the
    tolerance, the bytes that cut phases (:func:`phases_of`): public Nekbone's step moves 16
    bytes more at every size, miniMD's thermo output at 4 ranks 79-98 k fewer a rank than the
    742 k of its commonest iterations."""
    out = labels.copy()
    for u in np.unique(labels):
        at = np.flatnonzero(labels == u)
        extra, moved = beyond[at, 0], beyond[at, 1]
        if np.ptp(extra) == 0:
            continue
        order = np.argsort(extra, kind="stable")
        run, lo, top = 0, extra[order[0]], 0.0
        for i in order:
            top = max(top, moved[i])
            if extra[i] - lo > PHASE_TOLERANCE * top:
                run, lo, top = run + 1, extra[i], moved[i]
            out[at[i]] = u + run * 0.5 ** 20
    return _labels(out[:, None])


def _alike_phases(data, loops: list[np.ndarray], phases: list[Phase]) -> None:
    """Mark each phase (not ``joint``, not a drift's) whose commonest iteration makes the same
    calls on every rank as an earlier phase's (kind, peer, communicator's ranks, vector
    length; sizes and tags aside: a multiset of them per rank) ``like`` the first such.
    Public Nekbone runs one CG loop at 11 problem sizes (two solves of 100 iterations each):
    22 phases, each a start of four windows and a tail (550 of 2,210 iterations replayed,
    3.1x fewer actions).  It is one loop: the replay turns its compute into time at one rate
    whatever the size, and what its messages take is an intercept per phase, so one line
    serves all of them, each phase after the first replaying a window at each end to pin its
    intercept and to check that its start and tail sit at one level (:func:`_level`).  Every
    phase is given its iterations' bytes beyond its commonest one's (:attr:`Phase.beyond`)."""
    ids, _ = structure_ids(data, sizes=False, timing=True)
    at = np.r_[np.uint64(0), np.cumsum(_mixed(ids, 0x9E3779B97F4A7C15), dtype=np.uint64)]
    first: dict[tuple, int] = {}
    for pi, p in enumerate(phases):
        b = loops[p.loop][:, p.first:p.stop + 1]
        with np.errstate(over="ignore"):
            calls = (at[b[:, 1:]] - at[b[:, :-1]]).T          # [iterations, nranks]
        kinds, inv, count = np.unique(calls, axis=0, return_inverse=True, return_counts=True)
        common = inv.reshape(-1) == np.argmax(count)
        moved = static_cost(data, b)[1].sum(axis=0).astype(float)
        p.beyond = np.column_stack([np.where(common, 0.0, moved - np.median(moved[common])),
                                    moved])
        if p.joint or p.path is not None:     # a drift's phases keep their path's line
            continue
        key = tuple(kinds[np.argmax(count)].tolist())
        p.like = first.get(key)
        first.setdefault(key, pi)


def _see_once(data, loops: list[np.ndarray], phases: list[Phase], cost: list[np.ndarray],
              total: int) -> list[str]:
    """Where covering two of each variant (:func:`_cover_variants`) leaves the replay under
    ``GAIN`` times smaller than the trace, cover one of each where that makes it so much
    smaller (in place, with a note; else the phases as they were): the bound then takes, for a
    variant fitted once, its skipped count times that iteration's residual left out of the
    line (:func:`_once`).  Public miniMD at 4 ranks: a thermo output step every 105 of 1,052
    iterations grew the start over the first and the tail back over the last (214 replayed,
    4.8x fewer actions); its first alone, in a start of 107 and a tail of 12.  A variant is
    then also told by the bytes it moves (:func:`_group_labels`): one whose instances move
    other bytes is one variant each."""
    was = [(p.replayed, p.tail, p.in_flight) for p in phases]
    gain = _gain(loops, phases, total)
    for p in phases:
        p.replayed, p.tail = _least_replay(p.iterations, p.window, p.follows)
    for pi in range(len(phases)):
        _cover_group(phases, pi, cost, True, need=1)
    if not any([_keep_if_inseparable(data, loops, p) for p in phases]) and \
            _gain(loops, phases, total) >= GAIN:
        return [f"one iteration of each variant replayed, not two: two left the replay "
                f"{gain:.1f}x smaller than the trace, under the {GAIN:g}x sampling aims at"]
    for p, (start, tail, flight) in zip(phases, was):
        p.replayed, p.tail, p.in_flight = start, tail, flight
    return []


def _keep_if_inseparable(data, loops: list[np.ndarray], p: Phase) -> str | None:
    """Why the phase's skipped iterations cannot be left out of the replay, checked on the
    whole block (its iterations may vary: :func:`extend_loop`), after which the phase is
    replayed whole; or None."""
    b, lo = loops[p.loop], p.first + p.replayed
    if p.skipped and _alike(data, b, lo, p.stop - p.tail):    # one iteration tells
        one = np.concatenate([np.arange(b[r, lo], b[r, lo + 1]) for r in range(len(b))])
        why, p.in_flight = _separable(data, one)
        if why is None and not len(p.in_flight):
            return None
    why, p.in_flight = _separable(data, _skipped_rows(b, p))
    if why:
        why = f"{why}{_WHICH}{p.first + p.replayed}-{p.stop - p.tail - 1} of loop {p.loop})"
        p.replayed, p.tail, p.in_flight = p.iterations, 0, None
    return why


def _alike(data, b: np.ndarray, lo: int, hi: int) -> bool:
    """Whether iterations ``lo`` to ``hi`` of the loop ``b`` repeat call for call on every rank
    (kind, peer, tag, bytes): then an iteration that keeps its messages and requests to itself
    says the same of them all (sizes too: where they change inside the block, a block started
    a message later on the receiver leaves a receive a message of the other size, which one
    iteration's check cannot see)."""
    a = data.actions
    for r in range(len(b)):
        size = np.diff(b[r, lo:hi + 1])
        if not len(size) or (size != size[0]).any():
            return False
        rows = slice(b[r, lo], b[r, hi])
        for f in ("kind", "peer", "tag", "bytes_sent", "bytes_recv"):
            x = a[f][rows].reshape(hi - lo, size[0])
            if (x != x[0]).any():
                return False
    return True


def _skipped_rows(b: np.ndarray, p: Phase) -> np.ndarray:
    """The rows of a phase's skipped iterations on every rank, sorted."""
    lo, hi = p.first + p.replayed, p.stop - p.tail
    if hi <= lo:
        return np.zeros(0, np.int64)
    return np.concatenate([np.arange(b[r, lo], b[r, hi]) for r in range(len(b))])


def _requests(data, rows, kind, rank, activations: bool) -> tuple[np.ndarray, ...]:
    """(rank, request id, row) of each request that ``rows`` activate (non-blocking calls,
    starts), or that they complete (waits, successful tests), with multiplicity: a block of
    rows leaves no request behind when the two are equal as multisets (ids are unique per
    rank)."""
    a = data.actions
    req, flags = a["request"][rows], a["flags"][rows]
    done = (flags & K.FLAG_COMPLETED) != 0
    if activations:
        one = K.mask(K.REQUEST_KINDS | {"start"})[kind] & (req >= 0)
        many = kind == K.code("startall")
    else:
        one = (K.mask({"wait", "waitany"})[kind] | (K.mask({"test", "testany"})[kind] & done)) \
            & (req >= 0)
        many = K.mask({"waitall", "waitsome", "testsome"})[kind] | \
            (K.mask({"testall"})[kind] & done)
    vrows, vals = data.vector_entries(rows[many])
    ids = np.r_[req[one], vals]
    who = np.r_[rank[one], data.rank_of(vrows)]
    where = np.r_[rows[one], vrows]
    keep = ids >= 0
    return who[keep], ids[keep], where[keep]


def _all_requests(data, activations: bool) -> tuple[np.ndarray, ...]:
    """:func:`_requests` of the whole trace (once per trace in a sampled replay)."""
    a = data.actions
    return _per_trace(data, f"requests {activations}", lambda: _requests(
        data, np.arange(len(a)), a["kind"], data.rank_of(), activations))


def _same_multiset(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two int64 arrays hold the same values with the same multiplicities: equal
    lengths and equal wrapping sums of two 64-bit mixes of the values (splitmix64's
    finalizer), in linear time; unequal multisets agree with probability ~2^-128."""
    if len(a) != len(b):
        return False
    for seed in (0x9E3779B97F4A7C15, 0xD1B54A32D192ED03):
        if _mixed(a, seed).sum(dtype=np.uint64) != _mixed(b, seed).sum(dtype=np.uint64):
            return False
    return True


def _mixed(x: np.ndarray, seed: int) -> np.ndarray:
    """The int64 values ``x`` through splitmix64's finalizer from ``seed`` (uint64): wrapping
    sums of them stand for multisets."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64) + np.uint64(seed)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def _dense(*cols) -> np.ndarray:
    """One int64 key per row of the non-negative-or-not integer columns ``cols`` (equal rows,
    equal keys): the columns' bits side by side when they fit in 63 bits, else their ranks."""
    cols = [np.asarray(c, np.int64) for c in cols]
    lo = [int(c.min()) if len(c) else 0 for c in cols]
    bits = [max(int(c.max()) - m, 0).bit_length() if len(c) else 0 for c, m in zip(cols, lo)]
    key = np.zeros(len(cols[0]), np.int64)
    if sum(bits) <= 62:
        for c, m, b in zip(cols, lo, bits):
            key = (key << b) | (c - m)
        return key
    for c in cols:
        u, inv = np.unique(c, return_inverse=True)
        key = key * len(u) + inv.ravel()
    return key


def sampled_replay(data, loops: list[np.ndarray] | None, sample="auto", *,
                   window: int | None = None, tolerance: float = TOLERANCE, replay_fn=None,
                   **replay_kw) -> SampledReplay:
    """Replay ``data`` (a TraceColumns) sampling its loops' iterations.

    Parameters
    ----------
    data : TraceColumns
    loops : list of ndarray or None
        Per loop, its iteration bounds [nranks, iterations + 1] (global rows); None: the loops
        :func:`loops_of` finds.
    sample : "auto" or int
        auto: replay each phase until the steady rule holds; K: replay K iterations of each
        phase.
    window, tolerance : int or None, float
        The steady rule's window (iterations; None: per loop, :func:`loop_window`) and
        relative tolerance.
    replay_fn : callable, optional
        ``replay_fn(trace, **kw) -> ReplayResult`` (default :func:`minitrace.replay.replay`).
    **replay_kw
        Passed to the replay (platform, cluster, compute_rate, ...).

    Returns
    -------
    SampledReplay
    """
    if replay_fn is None:     # its refusal of what SimGrid cannot replay before the analysis
        from ..converters.simgrid_ti import never_written, refuse_dropped
        refuse_dropped(never_written(data.actions["kind"]), None, replay_kw.get("lossy", False),
                       "cannot replay: ")
    token = _MEMO.set({})
    try:
        return _sample(data, loops, sample, window, tolerance, replay_fn or replay, replay_kw)
    finally:
        _MEMO.reset(token)


def _sample(data, loops, sample, window: int | None, tolerance: float, run,
            replay_kw: dict) -> SampledReplay:
    """:func:`sampled_replay`'s work, with the sums of the whole trace kept for its length
    (:func:`_per_trace`) but while it replays (the replay's own memory)."""
    t0 = time.perf_counter()
    notes: list[str] = []
    total = len(data.actions)
    why_full = None
    if loops is None:
        loops, found = loops_of(data)
        notes += found
        uneven = sum(int(n.split(" ", 1)[0]) for n in found if UNEVEN in n)
        if not loops:
            why_full = "no loop found in the trace" if not uneven else \
                (f"none of the {uneven} loops found runs the same iteration count on every "
                 f"rank (where a rank's calls depend on when its messages arrive, its ranks' "
                 f"programs differ), and sampling skips the same iterations on every rank")
    loops = [np.asarray(b, np.int64) for b in loops]
    for b in loops:
        if b.ndim != 2 or b.shape[0] != data.nranks or b.shape[1] < 2 or \
                (np.diff(b, axis=1) < 0).any():
            raise MinitraceError(f"a loop's iteration bounds must be [nranks, iterations + 1] "
                                 f"increasing rows, got shape {b.shape}")
    top = top_level(loops)
    if top:
        flight = _per_trace(data, "in_flight", lambda: _in_flight(data))
        moved = []
        for li, b in enumerate(top):
            quiet = _quiet_bounds(data, b, flight)
            if quiet is not None:
                top[li] = quiet
                moved.append(li)
        if moved:
            notes.append(f"the iterations of loop(s) {', '.join(map(str, moved))} start where "
                         f"no request is in flight (each boundary moved to its rank's next "
                         f"such row)")
    covered = sum(int((b[:, -1] - b[:, 0]).sum()) for b in top)
    if why_full is None and (not total or covered < DOMINANT_SHARE * total):
        why_full = (f"no dominant loop (loops cover {covered / max(total, 1):.0%} of the "
                    f"actions, under {DOMINANT_SHARE:.0%})")
    phases: list[Phase] = []
    need = 2                            # of each variant fitted (:func:`_see_once`: 1)
    if why_full is None:
        at: list = [_detached(replay_kw)]
        scale = _seconds_per_unit(replay_kw)
        for li, b in enumerate(top):
            w = loop_window(b.shape[1] - 1, window)
            got = _drifting(data, li, b, window or WINDOW, at, scale)
            if got[0].path is not None:
                notes.append(f"the balance between ranks drifts in loop {li}: its skipped "
                             f"iterations predicted from their critical path")
            moved = static_cost(data, b)[1].max(axis=0)
            phases += [replace(p, window=w, sized=bool(np.ptp(moved[p.first:p.stop]) > 0))
                       for p in got]
        fixed = None if sample == "auto" else int(sample)
        if fixed is not None and fixed < 1:
            raise MinitraceError(f"--sample wants auto, off or a number of iterations >= 1, "
                                 f"got {sample}")
        for p in phases:
            p.replayed, tail = _least_replay(p.iterations, p.window, p.joint, fixed)
            if tail:
                p.tail = tail
        cost = [iteration_cost(data, b) for b in top]
        comp = [static_cost(data, b)[0] for b in top]
        slowest = [_slowest_of(c) for c in comp]
        _alike_phases(data, top, phases)
        split = _split_at_variants(phases, cost, fixed)
        if len(split) > len(phases):
            cuts = sorted({(q.loop, q.first) for q in split} - {(q.loop, q.first) for q in phases})
            notes.append("phases cut before a variant of their iterations seen at most "
                         f"{RARE} times, deep in what they skip: " +
                         ", ".join(f"loop {li} at iteration {j}" for li, j in cuts))
            phases = split
        for p in phases:
            if p.like is not None:
                p.replayed, p.tail = _least_replay(p.iterations, p.window, True, fixed)
        leads = sorted({p.like for p in phases if p.like is not None})
        if leads:
            firsts = ", ".join(f"loop {phases[q].loop} from iteration {phases[q].first}"
                               for q in leads)
            notes.append(f"{sum(p.like is not None for p in phases)} phase(s) share the line "
                         f"of an earlier one whose iterations make the same calls, sizes aside "
                         f"(one solve at several sizes; the first of each kind: {firsts}), "
                         f"with an intercept and a start of one window each")
        if fixed is None:
            phases, cuts = _cut_at_unseen_slowest(phases, comp)
            if cuts:
                notes.append("phases cut where a rank that no iteration they would replay "
                             "shows as the slowest becomes it: " + ", ".join(
                                 f"loop {li} at iteration {j}" for li, j in cuts))
        for pi in range(len(phases)):
            _cover_group(phases, pi, cost, fixed is None)
        whys = [_keep_if_inseparable(data, top, p) for p in phases]
        if fixed is None and phases and not any(whys) and _gain(top, phases, total) < GAIN:
            once = _see_once(data, top, phases, cost, total)
            notes += once
            need = 1 if once else 2
        if not any(p.skipped for p in phases) and any(whys):
            why_full = f"iterations cannot be skipped: {next(w for w in whys if w)}"
            phases = []
        notes += [f"replayed whole: {w}" for w in whys if w and phases]
        share = 1 - 1 / _gain(top, phases, total) if phases else 0.0
        if fixed is None and phases and share < FEW_SKIPPED:
            why_full = (f"no loop long enough to skip: the least start and tail leave "
                        f"{share:.1%} of the actions to skip, under {FEW_SKIPPED:.0%} (the "
                        f"longest loop runs {_most(top)} iterations)")
            phases = []
    if why_full is not None:
        _MEMO.get().clear()
        res = run(data, **replay_kw)
        return SampledReplay(res.simulated_time, list(res.rank_end_times), 0.0, 1.0, 0.0, [],
                             res, time.perf_counter() - t0, 1, _one_per_reason(
                                 notes + [f"replayed fully: {why_full}"] + list(res.notes)))
    replays, regrown, more, middled = 0, [], "", False
    while True:
        reduced, origin, marks, removed = reduce_trace(data, top, phases)
        _MEMO.get().clear()
        try:
            res = run(reduced, timeline="times", **replay_kw)
        except MinitraceError as e:
            raise _sampled_error(e) from None
        replays += 1
        times = _marker_times(res.timeline, reduced, origin, marks, phases)
        grow = False
        for pi, p in enumerate(phases):
            x = times[pi][0]
            if p.follows:               # steady through the cut but its first iteration
                p.steady_from = min(1, len(x) - 1)
                continue
            c = cost[p.loop][p.first:p.first + len(x)]
            s = steady_start(beside_cost(x, c), p.window, tolerance)
            if s is None and fixed is None and p.skipped:
                step = p.window if p.replayed < 8 * p.window else p.replayed
                p.replayed = min(p.iterations - p.tail, p.replayed + step)
                if not p.skipped:
                    p.replayed, p.tail = p.iterations, 0
                _cover_group(phases, pi, cost, fixed is None, need)
                why = _keep_if_inseparable(data, top, p)
                if why:
                    notes.append(f"replayed whole: {why}")
                grow = True
                continue
            p.steady_from = s if s is not None else len(x) // 4
        if grow:
            continue
        fitted = list(phases)          # the critical path's fit replaces phases of its own
        for group in _groups(fitted):
            _fit([fitted[pi] for pi in group], [times[pi] for pi in group],
                 [cost[fitted[pi].loop][fitted[pi].first:fitted[pi].stop] for pi in group],
                 _group_labels(fitted, group, cost, need == 1), scale,
                 [slowest[fitted[pi].loop][fitted[pi].first:fitted[pi].stop] for pi in group])
        apart = [pi for pi, p in enumerate(phases) if p.apart]
        if apart:                       # sampled and fitted alone: replayed again
            def cover(qi: int) -> None:     # (--sample K: by the tail)
                _cover_group(phases, qi, cost, fixed is None, need)
                why = _keep_if_inseparable(data, top, phases[qi])
                if why:
                    notes.append(f"replayed whole: {why}")
            left = {phases[pi].like for pi in apart}
            for pi in apart:
                p = phases[pi]
                p.like, p.apart = None, False
                if fixed is None:
                    start, tail = _least_replay(p.iterations, p.window, p.joint)
                    p.replayed, p.tail = max(p.replayed, start), max(p.tail, tail)
                    if p.replayed + p.tail >= p.iterations:
                        p.replayed, p.tail = p.iterations, 0
                cover(pi)
            for group in _groups(phases):   # what they saw, those they left no longer see
                if left.intersection(group):
                    for qi in group:
                        cover(qi)
            notes.append(f"{len(apart)} phase(s) fitted alone, not on the line of those whose "
                         f"calls they make: their own replayed iterations depart from its "
                         f"slopes beyond chance (" + ", ".join(
                             f"loop {phases[pi].loop} from iteration {phases[pi].first}"
                             for pi in apart) + ")")
            continue
        ends, bound = _totals(fitted, res)
        if fixed is None and not middled:
            middled = True
            phases, cuts = _middle_windows(data, top, fitted, times, cost, slowest, at, scale,
                                           need, total)
            if cuts:
                notes.append("a line of their static cost and one of their compute critical "
                             "path put skipped iterations apart beyond a bound: a window in "
                             "the middle of what they skip replayed, its phase cut there (" +
                             ", ".join(f"loop {li} at iteration {j}" for li, j in cuts) + ")")
                continue
        on_path, changed = _on_critical_path(data, top, fitted, times, cost, slowest, at, scale,
                                             need) \
            if bound > tolerance * max(ends) else (False, False)
        if changed:
            ends, bound = _totals(fitted, res)
        if fixed is not None or bound <= tolerance * max(ends):
            break
        more = _replay_more(data, top, phases, fitted, cost, total, need)
        if isinstance(more, str):
            break
        regrown.append((more, bound / max(ends)))
        if more[3]:
            notes.append(f"replayed whole: {more[3]}")
    if on_path:
        notes.append("skipped iterations predicted from their compute critical path")
    phases = fitted
    for term, what in _BOUND_TERMS:
        added = sum(getattr(p, term) for p in phases)
        if added:
            notes.append(f"the bound takes {what}: +-{added / max(ends):.2%}")
    if regrown:
        notes.append(_regrown_note(regrown, phases, bound / max(ends), tolerance))
    n_skip = sum(p.skipped for p in phases)
    kept = int((~removed).sum())
    if n_skip == 0:
        notes.append("every iteration was replayed (no phase became steady before its end)")
    elif bound > tolerance * max(ends):
        worst = max((p for p in phases if p.skipped), key=lambda p: _spread([p]))
        where = f"loop {worst.loop}, iterations {worst.first}-{worst.stop - 1}"
        why = (f"the replayed iterations' times depart from the line of their static cost by "
               f"{worst.misfit / worst.per_iteration:.1%} each ({where}), which "
               f"{worst.replayed + worst.tail} of {worst.iterations} replayed cannot pin down")
        if worst.level > max(worst.shift, _Z * np.sqrt(worst.variance)):
            why = (f"the replayed start and tail of {where} sit at levels apart beyond their "
                   f"noise about the line of their static cost (bytes the line does not see, "
                   f"or a time that does not follow it between their costs): the skipped "
                   f"ones may lie at either level, which puts {worst.level / max(ends):.2%} on "
                   f"the bound")
        elif worst.shift > _Z * np.sqrt(worst.variance):
            why = (f"an iteration at the head of the replayed start ({where}) sets the "
                   f"line's slopes alone, and the lines with and without it put the skipped "
                   f"time {worst.shift / max(ends):.2%} apart")
        elif worst.disagree > _Z * np.sqrt(worst.variance):
            why = (f"the line of their static cost and their compute critical path put the "
                   f"skipped time of {where} apart beyond their bounds, which puts "
                   f"{worst.disagree / max(ends):.2%} on the bound")
        elif worst.outside > _Z * np.sqrt(worst.variance):
            why = (f"the compute of the skipped iterations of {where} lies beyond the replayed "
                   f"ones' range, where the time's slope against it is unknown, which puts "
                   f"{worst.outside / max(ends):.2%} on the bound")
        if fixed is None and more:
            why += f"; {more}"
        notes.append(f"bound +-{bound / max(ends):.2%} exceeds the {tolerance:.0%} tolerance: "
                     f"{why}; --sample K with a larger K, or --sample off, for a closer figure")
    notes.append(f"sampled {len(phases)} phase(s) of {len(top)} loop(s): replayed "
                 f"{sum(p.replayed + p.tail for p in phases)} of "
                 f"{sum(p.iterations for p in phases)} "
                 f"iterations ({replays} replay(s))")
    if fixed is None and n_skip and kept * GAIN > total:
        notes.append(_small_gain_note(phases, total, kept, total - covered))
    return SampledReplay(max(ends), ends, bound, kept / total, 1 - kept / total, phases, res,
                         time.perf_counter() - t0, replays,
                         _one_per_reason(notes + list(res.notes)), top)


#: How a note on a phase replayed whole says which (:func:`_keep_if_inseparable`).
_WHICH = " (iterations "


def _one_per_reason(notes: list[str]) -> list[str]:
    """``notes`` with those that say a phase was replayed whole for one reason merged into one
    (at the first's place) that names each phase's iterations, and repeats left out: a note
    per phase or loop said the same thing tens of times."""
    which: dict[str, list[str]] = {}
    for n in notes:
        head, sep, where = n.rpartition(_WHICH)
        whole = n.startswith("replayed whole: ") and sep and n.endswith(")")
        got = which.setdefault(head if whole else n, [])
        if whole and where[:-1] not in got:
            got.append(where[:-1])
    return [n if not w else f"{n}{_WHICH}{'; iterations '.join(w)})" for n, w in which.items()]


#: ``auto`` replays more of a phase whose bound is over the tolerance only while the replay
#: stays this many times smaller than the trace (its actions): the gain sampling is for.
GAIN = 5.0


#: What a full replay's MPI_ERR_TRUNCATE says of the trace (minitrace.replay.child), which a
#: sampled replay's does not: the trace it replayed is the reduced one.
_VALIDATE_HINT = "; a message larger than the receive posted for it: `minitrace validate`"


def _sampled_error(e: MinitraceError) -> MinitraceError:
    """The error of a sampled replay's SimGrid run: where a receive got a larger message
    (MPI_ERR_TRUNCATE), the skipped iterations may have left it another message than its own,
    which no check of the reduced trace saw: the trace itself may be sound (`minitrace
    validate` would find nothing), so the hint is ``--sample off``."""
    said = str(e)
    if "MPI_ERR_TRUNCATE" not in said:
        return e
    said = said.split(_VALIDATE_HINT)[0].removeprefix(f"{e.path}: " if e.path else "")
    return MinitraceError(f"{said}; in the sampled replay: the iterations it skipped may have "
                          f"left a receive another message than its own (a block skipped "
                          f"wrongly, not the trace's fault): --sample off replays it whole",
                          e.path)


#: The terms a sampled replay's bound adds beyond the line's variance (:class:`Phase`), each
#: named in a note where it adds: the attribute, and what it takes.
_BOUND_TERMS = (
    ("disagree", "the skipped time as far as the line of their cost or their critical path "
                 "puts it where the two lie apart beyond their bounds"),
    ("outside", "the skipped iterations' compute where it lies beyond the replayed ones' range, "
                "or the slope the time is given against it where they show another, at any "
                "slope between 0 (hidden behind messages) and 1"),
    ("once", "the skipped iterations of a variant the line fits once each as far from the line "
             "as that one (its residual left out of the line)"))


def _small_gain_note(phases: list[Phase], total: int, kept: int, outside: int) -> str:
    """Why ``auto`` replays more than a ``GAIN``-th of the trace's actions: the actions outside
    the loops, replayed as they are; the start and tail every phase replays at least
    (:func:`_least_replay`: a trace of many short loops, Nekbone's 11 of 201 iterations, each
    cut in two, replayed 550 of 2,210 before :func:`_alike_phases`); and what the starts grew
    beyond them (variants covered, a start not steady, a bound over the tolerance: miniMD at
    4 ranks before :func:`_see_once`, 214 of 1,052)."""
    least = sum(sum(_least_replay(p.iterations, p.window, p.follows)) for p in phases)
    replayed = sum(p.replayed + p.tail for p in phases)
    sizes = sorted(p.iterations for p in phases)
    parts = [f"{outside / total:.0%} of the actions are outside the loops"] \
        if outside >= 0.005 * total else []
    parts.append(f"{len(phases)} phase(s) of {sizes[len(sizes) // 2]} iterations (median) "
                 f"replay at least a start and a tail each: {least} iterations")
    if replayed > least:
        parts.append(f"their starts and tails grew by {replayed - least} more (to cover "
                     f"variants, to reach a steady start, or to narrow the bound)")
    return (f"replayed {kept / total:.0%} of the actions ({total / max(kept, 1):.1f}x fewer), "
            f"not the {GAIN:g}x sampling aims at: " + "; ".join(parts))


def _replay_more(data, loops: list[np.ndarray], phases: list[Phase], fitted: list[Phase],
                 cost: list[np.ndarray], total: int, need: int = 2) -> tuple | str:
    """Double the start of the phase whose skipped time is the least certain (``fitted``: the
    phases as last fitted, ``phases``' own unless the critical path's fit replaced them), or
    grow it as far as the replay stays ``GAIN`` times smaller than the trace (at least a window
    further), in place, covering its group's variants again (``need`` of each:
    :func:`_see_once`) and checking that it still skips:
    more fitted iterations and fewer skipped ones narrow the bound (public miniGhost SVAF at 4
    ranks recorded on 2 cores, 3999 iterations: a start of 48, +0.97% from the full replay
    against a bound of 1.67%, 60x fewer actions; doubled twice, a start of 192, +0.29%
    against 0.58%, 19x).  Returns (phase index, start before, start after, why it was
    replayed whole or None), or why it did not grow: none skips (""), or a window more would
    leave the replay under ``GAIN`` times smaller than the trace."""
    skipping = [pi for pi, q in enumerate(fitted) if q.skipped]
    if not skipping:
        return ""
    pi = max(skipping, key=lambda i: _spread([fitted[i]]))
    p = phases[pi]
    before = (p.replayed, p.tail, p.in_flight)

    def gains(start: int) -> bool:       # the phase's start grown to ``start``: gain enough?
        p.replayed, p.tail, p.in_flight = before
        p.replayed = min(p.iterations - p.tail, start)
        if not p.skipped:
            p.replayed, p.tail = p.iterations, 0
        _cover_group(phases, pi, cost, need=need)
        return _gain(loops, phases, total) >= GAIN
    lo, hi = before[0], 2 * before[0]
    if not gains(hi):
        while hi - lo > 1:                  # the longest start that keeps the gain
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if gains(mid) else (lo, mid)
        if lo < before[0] + p.window or not gains(lo):
            p.replayed, p.tail, p.in_flight = before
            return (f"a start a window longer in loop {p.loop}, iterations {p.first}-"
                    f"{p.stop - 1}, would leave the replay under {GAIN:g}x smaller than the "
                    f"trace")
    why = _keep_if_inseparable(data, loops, p)
    if why and _gain(loops, phases, total) < GAIN:
        p.replayed, p.tail, p.in_flight = before
        return f"iterations {p.first}-{p.stop - 1} of loop {p.loop} cannot be skipped: {why}"
    return pi, before[0], p.replayed, why


def _gain(loops: list[np.ndarray], phases: list[Phase], total: int) -> float:
    """How many times smaller than the trace (``total`` actions) the reduced trace of these
    phases is (its markers aside)."""
    skipped = sum(int((loops[q.loop][:, q.stop - q.tail] -
                       loops[q.loop][:, q.first + q.replayed]).sum())
                  for q in phases if q.skipped)
    return total / max(total - skipped, 1)


def _regrown_note(regrown: list, phases: list[Phase], bound: float, tolerance: float) -> str:
    """What :func:`_replay_more` did: the bound that called for it, the starts it replayed per
    phase, and the bound they gave."""
    starts: dict[int, list[int]] = {}
    for (pi, was, after, _), _ in regrown:
        starts.setdefault(pi, [was]).append(after)
    grown = "; ".join(f"{' -> '.join(map(str, s))} iterations (loop {phases[pi].loop}, "
                      f"iterations {phases[pi].first}-{phases[pi].stop - 1})"
                      for pi, s in starts.items())
    return (f"bound +-{regrown[0][1]:.2%} over the {tolerance:.0%} tolerance: replayed a "
            f"longer start of the least certain phase, {grown}; bound now +-{bound:.2%}")


def _seconds_per_unit(replay_kw: dict) -> float | None:
    """Simulated seconds of one unit of the trace's compute volume, as the replay turns it into
    work (:func:`.work.in_flops`: ``compute_rate`` flops a unit, none given: the unit is a
    flop) on a generated cluster's hosts (all of one speed): the scale of the compute critical
    path (:mod:`.critical_path`, in the trace's unit: recorded seconds, instructions) in the
    replay's seconds.  UK-MAC CloverLeaf at 4 ranks, its path taken for seconds at
    --compute-rate 2.5Gf: -9.7% from the full replay against a bound of 10%.  None on a
    platform file, whose hosts may differ in speed."""
    if replay_kw.get("platform") is not None:
        return None
    rate = replay_kw.get("compute_rate")
    flops = 1.0 if rate is None else parse_quantity(rate, "speed")
    return flops / parse_quantity((replay_kw.get("cluster") or Cluster()).speed, "speed")


def _drifting(data, loop: int, bounds: np.ndarray, window: int, at: list,
              scale: float | None) -> list[Phase]:
    """The loop's phases (:func:`phases_of`); where a change of balance alone cut it and the
    trace's compute critical path can be followed (``at``: its clocks, computed once for all
    loops) and turned into the replay's seconds (``scale``: :func:`_seconds_per_unit`), the
    phases that pass over the changes that came gradually, each iteration with its path (one
    pass over the trace in Python, only where it saves a phase), each cut where another rank
    becomes the slowest for a lasting run (:func:`_slowest_changes`)."""
    got = phases_of(data, loop, bounds, window)
    if scale is None or not any(p.joint for p in got):
        return got
    drifted = phases_of(data, loop, bounds, window, drifts=True)
    if [(p.first, p.stop) for p in drifted] == [(p.first, p.stop) for p in got]:
        return got
    clocks = _clocks(data, at)
    if clocks is None:
        return got
    path = critical_path.iteration_path(data, bounds, clocks) * scale
    comp = static_cost(data, bounds)[0]
    out = []
    for p in drifted:
        edges = [p.first] + _slowest_changes(comp[:, p.first:p.stop], window, p.first) + [p.stop]
        out += [replace(p, first=lo, stop=hi, path=path[lo:hi], drift=True,
                        joint=p.joint if lo == p.first else True)
                for lo, hi in zip(edges[:-1], edges[1:])]
    return out


def _slowest_changes(comp: np.ndarray, window: int, first: int) -> list[int]:
    """Where in a drift's phase (``comp``: each rank's compute per iteration [nranks,
    iterations], the first at iteration ``first``) another rank becomes the slowest for twice
    LASTING blocks of ``window`` iterations (a shorter run, cut, would replay most of itself:
    a start and a tail of one window each), each block's slowest by more than three standard
    errors of the two block means' difference (a block where none is neither breaks nor makes
    a run), after a piece of at least LASTING blocks: the iterations that start such a run.
    The path predicts the skipped iterations, and the line of what the replayed ones took
    beyond it has an intercept of their own; what an iteration takes beyond its path (its
    messages after the slowest rank's compute, the ranks' wait at a collective) depends on
    which rank is slowest, so a run of another rank, skipped between a start and a tail alike,
    is off that line (random traces of 2 ranks, one rank 1.45 times slower from iteration 373
    on, the other's share drifting by up to 49% and the slowest again in 444-732: 0.3 us an
    iteration more there, -0.10% from the full replay against a bound of 0.014%).  Cut there,
    the run is a phase ``joint`` to the one before, with a start of its own."""
    n = comp.shape[1] // window
    if n < 3 * LASTING or len(comp) < 2:
        return []
    blocks = comp[:, :n * window].reshape(len(comp), n, window)
    mean, se2 = blocks.mean(2), blocks.var(2, ddof=1) / window
    order = np.argsort(-mean, axis=0)
    top, second = order[0], order[1]
    cols = np.arange(n)
    clear = mean[top, cols] - mean[second, cols] > \
        _Z * np.sqrt(se2[top, cols] + se2[second, cols])
    slowest = np.where(clear, top, -1)
    cuts, current, start, run, run_at, last = [], None, 0, 0, 0, None
    for j in np.flatnonzero(slowest >= 0).tolist():      # (blocks without a clear slowest
        rank = slowest[j]                                 # neither break nor make a run)
        if current is None:
            current = rank
        if rank == current:
            run, last = 0, rank
            continue
        run, run_at = (run + 1, run_at) if rank == last else (1, j)
        last = rank
        if run == 2 * LASTING:
            if run_at - start >= LASTING:
                cuts.append(first + run_at * window)
                start = run_at
            current, run = rank, 0
    return cuts


def _clocks(data, at: list):
    """The trace's compute critical-path clocks (:func:`.critical_path.clocks`, None where the
    path cannot be followed), computed at the first call of a replay and kept in ``at``
    (``[the replay's detached threshold]``, :func:`_detached`, then the clocks)."""
    if len(at) == 1:
        at.append(critical_path.clocks(data, at[0]))
    return at[1]


def _detached(replay_kw: dict) -> int:
    """The replay's ``smpi/send-is-detached-thresh`` (a calibration's, given in ``config``),
    from which its sends wait for their receives: SimGrid's default where none is given."""
    value = (replay_kw.get("config") or {}).get("smpi/send-is-detached-thresh")
    return critical_path.DETACHED if value is None else int(float(value))


def _totals(phases: list[Phase], res) -> tuple[list[float], float]:
    """Each rank's predicted end (its end in the reduced replay plus the skipped time), and the
    bound."""
    skipped = sum(p.skipped_time for p in phases)
    bound = _spread(phases) + PRECISION * sum(p.skipped for p in phases)
    return [float(e + skipped) for e in res.rank_end_times], bound


def _spread(phases: list[Phase]) -> float:
    """The phases' share of the bound: three standard deviations of their predicted skipped
    time, plus each one's ``shift`` (:func:`_on_line`), ``level`` (:func:`_level`), ``once``
    (:func:`_once`), ``disagree`` (:func:`_on_critical_path`) and ``outside``
    (:func:`_outside`)."""
    return _Z * float(np.sqrt(sum(p.variance for p in phases))) + \
        sum(p.shift + p.level + p.once + p.disagree + p.outside for p in phases)


def _on_critical_path(data, loops, phases: list[Phase], times, cost, slowest, at: list,
                      scale: float | None, need: int = 2) -> tuple[bool, bool]:
    """Predict again each phase's skipped iterations from their compute critical path
    (:mod:`.critical_path`: costlier than the supersteps' cost, so only where the bound is over
    the tolerance; ``at``: its clocks where :func:`_drifting` computed them), on a line of
    their own or at slope 1 in the replay's seconds (``scale``: :func:`_seconds_per_unit`;
    their path plus the line of what the replayed iterations took beyond theirs: fitted per
    iteration, the slope is low where a slow rank's delay shows partly in the next iteration's
    time, UK-MAC CloverLeaf at 9 ranks 0.89 where block sums of 10 iterations give 1.005;
    -0.81% from the full replay, bound 2.3%, at slope 1 -0.22%, bound 0.89%), keeping per
    group the prediction of smallest bound once each fit's bound covers the others' predictions
    where the two bounds lie apart (:func:`_cover_disagreement`); whether a path's prediction
    was kept, and whether any phase's prediction or bound changed.  (The smallest of three
    estimated variances is a little optimistic as a bound: each is its own regression's
    prediction variance, not corrected for the choice.)  A drift's phases (:func:`_drifting`)
    keep their path at slope 1: their replayed iterations are at the drift's ends, the skipped
    ones in its middle, and a line of their own extrapolates there with a variance that does
    not know it (the drift test's trace at --compute-rate 0.25Gf: -5.4% against a bound of
    0.1%, at slope 1 +1.7% against 2.5%).  ``need``: of each variant fitted (:func:`_see_once`)."""
    on_path, changed = False, False
    for group, fits in _path_fits(data, loops, phases, times, cost, slowest, at, scale, need):
        fits = _cover_disagreement(fits)
        qs = min(fits[1:], key=_spread)
        if _spread(qs) >= _spread(fits[0]):
            qs = fits[0]
        on_path |= qs is not fits[0]
        changed |= qs is not fits[0] or any(q.disagree for q in qs)
        for pi, q in zip(group, qs):
            phases[pi] = q
    return on_path, changed


def _path_fits(data, loops, phases: list[Phase], times, cost, slowest, at: list,
               scale: float | None, need: int = 2, only: set | None = None
               ) -> list[tuple[list, list]]:
    """Per group of phases that skips and has no path of its own (:func:`_groups`; with
    ``only``, of those holding one of these phases), its fits: the line as fitted, and
    (copies) on the compute critical path on a line of their own and at slope 1 in the
    replay's seconds (:func:`_on_critical_path`); none without the clocks."""
    clocks = _clocks(data, at)
    if clocks is None:
        return []
    out, paths = [], {}
    for group in _groups(phases):
        if not any(phases[pi].skipped for pi in group) or phases[group[0]].path is not None \
                or only is not None and not only.intersection(group):
            continue
        for loop in {phases[pi].loop for pi in group} - set(paths):   # once per loop
            paths[loop] = critical_path.iteration_path(data, loops[loop], clocks)
        costs = []
        for pi in group:
            p = phases[pi]
            c = cost[p.loop][p.first:p.stop].copy()
            c[:, 0] = paths[p.loop][p.first:p.stop]
            costs.append(c)
        fits, labels = [], _group_labels(phases, group, cost, need == 1)
        slow = [slowest[phases[pi].loop][phases[pi].first:phases[pi].stop] for pi in group]
        for slope in (None,) if scale is None else (None, scale):
            qs = [replace(q, path=None if slope is None else
                          paths[q.loop][q.first:q.stop] * slope, disagree=0.0)
                  for q in (phases[pi] for pi in group)]
            _fit(qs, [times[pi] for pi in group], costs, labels, scale, slow)
            fits.append(qs)
        out.append((group, [[replace(phases[pi], disagree=0.0) for pi in group]] + fits))
    return out


#: A phase is cut in two where it skips at least this many windows (:func:`_middle_windows`):
#: each half then still skips more than it replays.
MIDDLE_SKIPS = 6


def _middle_windows(data, loops, phases: list[Phase], times, cost, slowest, at: list,
                    scale: float | None, need: int, total: int) -> tuple[list[Phase], list]:
    """The phases, each cut in the middle of what it skips where the line of its static cost
    and a line of its compute critical path, both fitted to its replayed start and tail, put
    its skipped time apart by more than one of their bounds (:func:`_path_fits`): the replayed
    ends then do not pin the skipped iterations down, which need not be like them (a pipelined
    sweep whose compute's jitter is smaller at the ends of the run than in its middle: the
    time's relation to the compute changes with the jitter; public NPB LU W at 2 ranks, its
    start of 28 and tail of 7 the quietest iterations: -0.53% from the full replay against a
    bound of 0.21%).  The half after the cut is ``joint`` to the first (one line, an intercept
    each), whose tail and its start of one window put fitted iterations in the middle; a cut
    is kept only where both halves still skip and the replay stays ``GAIN`` times smaller
    than the trace.  Returns the phases and the (loop, iteration) of each cut."""
    joint = {pi for g in _groups(phases) if len(g) > 1 for pi in g}
    trials = {}                         # the phases that may be cut: their two halves
    for pi, p in enumerate(phases):
        if pi in joint or p.skipped < MIDDLE_SKIPS * p.window:
            continue
        at_cut = p.first + p.replayed + p.skipped // 2
        pieces = [replace(p, stop=at_cut, tail=p.window),
                  replace(p, first=at_cut, replayed=p.window, joint=True, steady_from=None)]
        if _gain(loops, phases[:pi] + pieces + phases[pi + 1:], total) >= GAIN:
            trials[pi] = pieces
    apart = set()
    for group, fits in _path_fits(data, loops, phases, times, cost, slowest, at, scale, need,
                                  set(trials)) if trials else ():
        time = np.array([[q.skipped_time for q in qs] for qs in fits])
        bound = np.array([[_spread([q]) for q in qs] for qs in fits])
        far = np.abs(time[:, None] - time[None]) > np.minimum(bound[:, None], bound[None])
        apart |= {pi for pi, f in zip(group, far.any(axis=(0, 1))) if f}
    out, cuts, moved = [], [], {}
    for pi, p in enumerate(phases):
        moved[pi] = len(out)
        if p.like is not None:
            p.like = moved[p.like]
        pieces = trials.get(pi) if pi in apart else None
        if pieces is None or any(_keep_if_inseparable(data, loops, q) for q in pieces) or \
                _gain(loops, out + pieces + phases[pi + 1:], total) < GAIN:
            out.append(p)
            continue
        out += pieces
        cuts.append((p.loop, pieces[1].first))
    return out, cuts


def _cover_disagreement(fits: list[list[Phase]]) -> list[list[Phase]]:
    """The fits (each a group's phases, fitted), each phase's bound raised (``disagree``) to
    cover the farthest skipped time that another fit predicts where the two bounds do not
    overlap: both fit the replayed iterations, so neither rules the other out, and the skipped
    ones may follow either (a reviewer's trace, compute overlapped with a 4 MB halo exchange
    and 1.8 times the compute in the skipped iterations: the critical path at slope 1, kept for
    the smaller bound, put all of the compute's growth on their time, the line of the replayed
    ones none: +10.8% from the full replay against a bound of 0.14%; with the growth 3 times,
    the line alone -6.5% against 0.88%).  Where the bounds overlap (public NPB CG A and
    TeaLeaf at 4 ranks: the line's bound 4-5 times the difference), the fits agree within
    what they know, and each keeps its own."""
    time = np.array([[q.skipped_time for q in qs] for qs in fits])      # [fits, phases]
    bound = np.array([[_spread([q]) for q in qs] for qs in fits])
    apart = np.abs(time[:, None] - time[None])                          # [fit, other, phase]
    beyond = np.where(apart > bound[:, None] + bound[None], apart - bound[:, None], 0.0)
    for qs, more in zip(fits, beyond.max(1)):
        for q, m in zip(qs, more):
            q.disagree = float(m)
    return fits


def _marker_times(timeline, reduced, origin, marks, phases) -> list[tuple]:
    """Per phase, the simulated time of each replayed iteration at its start and in its tail:
    the mean over ranks of the time from its marker to the next."""
    if timeline is None:
        raise MinitraceError("iteration sampling needs the replay's timeline (native replayer)")
    kind = reduced.actions["kind"]
    sleeps = timeline[timeline["action"] == "sleep"]
    per = [[np.zeros(p.replayed + 1 + (p.tail + 1 if p.tail else 0)) for p in phases]
           for _ in range(reduced.nranks)]
    for r in range(reduced.nranks):
        sl = reduced.rank_slice(r)
        is_sleep = kind[sl] == _SLEEP
        starts = sleeps["start"].to_numpy()[sleeps["rank"].to_numpy() == r]
        if len(starts) != int(is_sleep.sum()):
            raise MinitraceError(f"the replay timeline of rank {r} has {len(starts)} sleeps, "
                                 f"the reduced trace {int(is_sleep.sum())}")
        at = starts[origin[sl][is_sleep] < 0]          # the markers among the sleeps
        for (pi, j), t in zip(marks[r].tolist(), at.tolist()):
            per[r][pi][j] = t
    out = []
    for pi, p in enumerate(phases):
        m = np.stack([per[r][pi] for r in range(reduced.nranks)])
        d = np.diff(m, axis=1).mean(axis=0)
        out.append((d[:p.replayed], d[p.replayed + 1:]))    # (start, tail): not the skip
    return out


def skipped_line(p: Phase, x: tuple, cost: np.ndarray):
    """The least-squares line of the phase's steady replayed iteration times (its start from the
    steady iteration on, and its tail but the first, which follows the skip) against their
    static cost (``cost`` [iterations] or [iterations, columns]: a column enters the fit where it
    varies among the fitted iterations, a constant when none does): (prediction for each
    skipped iteration, residuals, design matrix of the fit, summed design row of the
    skipped)."""
    s = p.steady_from or 0
    start, tail = x
    y = np.r_[start[s:], tail[1:]]
    hi = p.iterations - p.tail
    cost = cost.reshape(len(cost), -1)
    c = np.r_[cost[s:p.replayed], cost[hi + 1:]]
    rest = cost[p.replayed:hi]
    if len(y) < 3:
        raise MinitraceError(f"too few steady iterations ({len(y)}) to extrapolate a phase of "
                             f"loop {p.loop}: sample more iterations")
    varies = c.std(0) > 1e-9 * np.maximum(np.abs(c.mean(0)), 1e-300)
    use = np.flatnonzero(varies)[:max((len(y) - 3) // 2, 0)]    # two fitted points a column
    X = np.column_stack([np.ones(len(y)), c[:, use]])
    R = np.column_stack([np.ones(len(rest)), rest[:, use]])
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    return R @ beta, y - X @ beta, X, R.sum(0)


def _groups(phases: list[Phase]) -> list[list[int]]:
    """The phases' indexes in groups that share a line: a phase with those ``joint`` to it (the
    phase before it in its loop) or ``like`` it."""
    out: list[list[int]] = []
    of: dict[int, int] = {}
    for pi, p in enumerate(phases):
        to = p.like if p.like is not None else \
            pi - 1 if p.joint and pi and phases[pi - 1].loop == p.loop else None
        if to is None:
            of[pi] = len(out)
            out.append([pi])
        else:
            of[pi] = of[to]
            out[of[pi]].append(pi)
    return out


#: A fitted iteration whose leverage on the line's slopes (its hat value beyond its phase's
#: intercept share) exceeds this sets them alone (:func:`_on_line`).
LEVERAGE = 0.5


def _on_line(X: np.ndarray, phase: np.ndarray, lead: np.ndarray) -> np.ndarray:
    """Which fitted iterations (rows of the design ``X``, the phase of each) the
    line keeps: not one at the head of a phase's start (``lead``: the start's fitted
    iterations) that sets the line's slopes alone (its leverage beyond its phase's intercept
    share over ``LEVERAGE``), one at a time while the head's next does too: a warm-up that the
    steady rule let in because its cost explains most of its time.  Its own residual cannot
    show whether it is on the line of the others (the line passes through it), nor can their
    spread: the first iteration of a public stencil (miniGhost at 4 ranks), four times the
    others' compute, took 6.3e-5 s more than the others' line says and at leverage 0.91 set
    the slope to 1.148 where the others give 1.001: +1.45% from the full replay against a
    bound of 0.72%.  Its time is replayed and counted; the line without it predicts the
    skipped ones, with the variance of what the others pin down, and the two lines'
    disagreement is added to the bound (:attr:`Phase.shift`): left out alone (as a test of
    its residual against the others' line would), such iterations took the large residuals
    out of the variance, and three bounds that held failed (NPB LU W -0.152% against 0.141%,
    a ring in mpi4py 0.032% against 0.020%).  Elsewhere than at the head, such an iteration
    is a variant or a hiccup (:func:`_variant_labels`) and stays; so does one without which a
    column would not vary (leverage 1: no line of the others to compare)."""
    keep = np.ones(len(X), bool)
    while True:
        rows = np.flatnonzero(keep)
        Xk = X[rows]
        dof = len(rows) - np.linalg.matrix_rank(Xk) - 1
        if dof < 2:
            return keep
        inv = np.linalg.pinv(Xk.T @ Xk)
        h = np.einsum("ij,jk,ik->i", Xk, inv, Xk)
        slopes = h - 1 / np.bincount(phase[rows], minlength=phase.max() + 1)[phase[rows]]
        head = lead[rows] & np.r_[True, phase[rows][1:] != phase[rows][:-1]]
        off = head & (slopes > LEVERAGE) & (h < 1 - 1e-9)
        if not off.any():
            return keep
        keep[rows[np.argmax(np.where(off, h, -1.0))]] = False


def _fit(group: list[Phase], xs: list[tuple], costs: list[np.ndarray],
         labels: list[np.ndarray] | None = None, scale: float | None = None,
         slowest: list[np.ndarray] | None = None) -> None:
    """Predict the skipped iterations of a group of phases (one, or one with those joint to it),
    and each tail's first (:func:`_predicted_end`), from their steady replayed ones (each
    phase's start from its steady iteration on, its tail but the first): one least-squares
    line against the static cost, an intercept per phase (a change of balance moves how long
    ranks wait, not what an iteration's compute costs),
    and the variance of each phase's prediction (residual variance, inflated for correlated
    residuals, times the skipped count, plus the line's own uncertainty: each phase's share of
    the group's, its covariance with the group's prediction, none where that is negative); an
    iteration at the head of a start that sets the slopes alone is left out of the line, the
    disagreement it makes kept as the phase's ``shift`` (:func:`_on_line`); ``labels``: per
    phase its iterations' variants, for :func:`_once` (None: none); ``scale``: the replay's
    seconds of a unit of compute, for :func:`_outside` (None: no such term); ``slowest``:
    per phase its iterations' slowest rank: where a level for each (:func:`_by_slowest`)
    fits the fitted iterations better beyond chance (:func:`_explains`), the skipped time is
    that line's prediction, its bound's terms the line's without them (None: no such
    levels)."""
    ys, cs, rests, paths, computes, junctions = [], [], [], [], [], []
    for p, x, cost in zip(group, xs, costs):
        s, hi = p.steady_from or 0, p.iterations - p.tail
        end = _predicted_end(p)
        junctions.append(float(x[1][0]) if end > hi else 0.0)
        cost = cost.reshape(len(cost), -1)
        ys.append(np.r_[x[0][s:], x[1][1:]])
        p.per_iteration = float(ys[-1].mean()) if len(ys[-1]) else float("nan")
        p.spread = float(ys[-1].std(ddof=1)) if len(ys[-1]) > 1 else 0.0
        own = p.path if p.path is not None else cost[:, 0] * (scale or 0.0)
        computes.append((np.r_[own[s:p.replayed], own[hi + 1:]], own[p.replayed:end]))
        if p.path is not None:          # the path at slope 1, its compute column left out
            ys[-1] = ys[-1] - computes[-1][0]
            cost = cost[:, 1:]
        paths.append(float(p.path[p.replayed:end].sum()) if p.path is not None else 0.0)
        cs.append(np.r_[cost[s:p.replayed], cost[hi + 1:]])
        rests.append(cost[p.replayed:end])
    costs_only = cs[0].shape[1]
    if slowest is not None:
        _by_slowest(group, slowest, cs, rests)
    if not any(p.skipped for p in group):
        for p in group:     # replayed whole since an earlier fit (:func:`_apart`): none skipped
            p.skipped_time = p.variance = p.shift = p.level = p.once = p.outside = 0.0
        return
    k, y, c = len(group), np.concatenate(ys), np.concatenate(cs)
    if len(y) < k + 2:
        p = group[0]
        raise MinitraceError(f"too few steady iterations ({len(y)}) to extrapolate a phase of "
                             f"loop {p.loop}: sample more iterations")
    varies = c.std(0) > 1e-9 * np.maximum(np.abs(c.mean(0)), 1e-300)
    use = np.flatnonzero(varies)[:max((len(y) - k - 2) // 2, 0)]   # two fitted points a column

    def design(rows: list[np.ndarray]) -> np.ndarray:
        which = np.repeat(np.arange(k), [len(x) for x in rows])
        return np.column_stack([np.eye(k)[which], np.concatenate(rows)[:, use]])
    by_slowest = None               # (design, skipped rows) with the slowest ranks' levels
    if (use >= costs_only).any():
        if _explains(design(cs), y, k + int((use < costs_only).sum())):
            by_slowest = design(cs), [design([r if q is p else r[:0] for q, r in
                                              zip(group, rests)]) for p in group]
        use = use[use < costs_only]
    X = design(cs)
    lead = np.concatenate(
        [np.arange(len(x)) < p.replayed - (p.steady_from or 0) for p, x in zip(group, cs)])
    on = _on_line(X, np.repeat(np.arange(k), [len(x) for x in cs]), lead)
    rows = [design([r if q is p else r[:0] for q, r in zip(group, rests)]) for p in group]
    Xon, yon = X[on], y[on]
    line = _solved(Xon, yon)            # (the line the helpers below judge, solved once)
    times, variances, misfit = _line(Xon, yon, rows, lead[on], *line)
    shifts = np.abs(times - _line(X, y, rows, lead, *_solved(X, y))[0]) if not on.all() \
        else np.zeros(k)
    phase = np.repeat(np.arange(k), [len(x) for x in cs])
    predicted = times
    if by_slowest is not None:
        Xs = by_slowest[0][on]
        predicted = _line(Xs, yon, by_slowest[1], lead[on], *_solved(Xs, yon))[0]
    outside = _outside(group, Xon, yon, use, computes, on, line[0]) if scale else np.zeros(k)
    for i, p in enumerate(group):
        p.misfit = misfit
        p.outside = float(outside[i])
        p.skipped_time = float(predicted[i]) + paths[i] - junctions[i]
        p.variance = float(variances[i])
        p.shift = float(shifts[i])
        p.level = _level(p, Xon, yon, (phase[on] == i) & lead[on],
                         (phase[on] == i) & ~lead[on], *line)
    if labels is not None:
        fitted = np.concatenate([np.r_[v[p.steady_from or 0:p.replayed],
                                       v[p.iterations - p.tail + 1:]]
                                 for p, v in zip(group, labels)])
        for p, more in zip(group, _once(Xon, yon, fitted[on],
                                        [v[p.replayed:_predicted_end(p)]
                                         for p, v in zip(group, labels)], *line)):
            p.once = more
    for i, p in enumerate(group):
        p.apart = p.like is not None and p.skipped > 0 and \
            _apart(Xon, yon, phase[on] == i, rows[i], i, k, float(times[i]),
                   PRECISION * p.skipped, line[0])


def _by_slowest(group: list[Phase], slowest: list[np.ndarray], cs: list[np.ndarray],
                rests: list[np.ndarray]) -> None:
    """Append to each phase's fitted and skipped cost rows (``cs``, ``rests``: :func:`_fit`'s)
    a column per rank that is the slowest (``slowest``: per phase, of each iteration) in at
    least two of its fitted iterations, but the rank most often so, zero in the other phases'
    rows: what an iteration takes beyond its compute critical path (the messages after the
    slowest rank's compute, the ranks' wait at a collective, whose tree the last arrival
    climbs) depends on which rank is slowest, by as much as its own size, and the line then
    takes each such rank's iterations at a level of their own.  Random traces of ring halo
    exchanges and an allreduce, 2-4 ranks: an iteration whose slowest is rank 0 takes 4.0 us
    beyond its path, rank 1 or 2 8.1 us, rank 3 of 4 12.1 us; a start and a tail holding
    another mix of them than the skipped iterations put the skipped time off by that
    difference each (sweep seed 1057: 22 of 60 fitted iterations rank 0's, 34 of 1,132
    skipped ones; -0.60% from the full replay against a bound of 0.45%, now -0.008%).  A
    phase's own columns: the difference grows with its messages (phases alike, one solve at
    several sizes, each at its own: shared, the line fitted none of them, :func:`_apart`).
    The levels move the prediction only (:func:`_fit`): the bound's terms are those of the
    line without them, whose residuals hold the slowest ranks' scatter; with the levels'
    residuals, near zero in a simulation, a rank the slowest in a skipped iteration and in
    fewer than two fitted ones (none to set its level), or a lead so small that the next
    rank's arrival follows at once, went uncovered (sweep seed 901 at 1 Gf: -0.0049% from
    the full replay against a bound of 0.0015%; 0.64% so)."""
    for i, (p, r) in enumerate(zip(group, slowest)):
        hi = p.iterations - p.tail
        fitted = np.r_[r[p.steady_from or 0:p.replayed], r[hi + 1:]]
        skipped = r[p.replayed:_predicted_end(p)]
        ranks, count = np.unique(fitted, return_counts=True)
        if len(ranks) < 2:
            continue
        ranks = ranks[(count >= 2) & (ranks != ranks[np.argmax(count)])]
        for j in range(len(group)):
            mine = j == i
            cs[j] = np.column_stack([cs[j]] + [(fitted == k) if mine else
                                               np.zeros(len(cs[j]), bool) for k in ranks])
            rests[j] = np.column_stack([rests[j]] + [(skipped == k) if mine else
                                                     np.zeros(len(rests[j]), bool)
                                                     for k in ranks])


def _explains(X: np.ndarray, y: np.ndarray, base: int) -> bool:
    """Whether the columns of the design ``X`` from ``base`` on fit the times ``y`` better
    than those before alone beyond chance (an F test at ``APART``): the slowest ranks'
    levels (:func:`_by_slowest`) predict only where they do, so that a line where which rank
    is slowest makes no difference (ranks even, the slowest one by chance) is kept as it
    was."""
    rss = []
    for cols in (X[:, :base], X):
        beta, *_ = np.linalg.lstsq(cols, y, rcond=None)
        rss.append(float(np.sum((y - cols @ beta) ** 2)))
    r0, r = np.linalg.matrix_rank(X[:, :base]), np.linalg.matrix_rank(X)
    dof = len(y) - r
    if r <= r0 or dof < 1:
        return False
    if rss[1] <= 0:
        return rss[0] > 0
    return _f_survival(r - r0, dof, (rss[0] - rss[1]) / (r - r0) / (rss[1] / dof)) < APART


def _predicted_end(p: Phase) -> int:
    """One past the last iteration of the phase that its line predicts: the skipped ones and,
    where a tail follows them, the tail's first.  In the reduced replay that one follows the
    start's last iteration, not the skipped one before it, and its time takes the difference
    of the two (where an iteration starts at a collective, the ranks' arrivals at it follow
    their compute in the iteration before): its time in the full replay is the line's, as a
    skipped one's is, and its replayed time is taken out of the skipped time (a random trace
    of 4 ranks whose iterations start at an allreduce, a rank's compute drifting: its tail's
    first iterations took 8.7e-5 s and 5.1e-5 s less than in the full replay, -0.066% from it
    against a bound of 0.037%)."""
    hi = p.iterations - p.tail
    return hi + 1 if p.tail and p.skipped else hi


def _outside(group: list[Phase], X: np.ndarray, y: np.ndarray, use: np.ndarray,
             computes: list[tuple], on: np.ndarray, line: np.ndarray) -> np.ndarray:
    """Per phase of a fitted group, how far its skipped time may lie from the line where their
    compute (``computes``: per phase its fitted and skipped iterations' critical path or
    supersteps' compute, in the replay's seconds) lies beyond the range of its fitted
    iterations', or where the line gives it a slope they do not show (``X``, ``y``, ``use``:
    :func:`_fit`'s design, times and cost columns; ``on``: the fitted rows it keeps;
    ``line``: the coefficients of the line through them, :func:`_solved`'s).  An
    iteration's time is a maximum of sums of its computes and messages: its slope against its
    compute lies between 0 (the compute hidden behind a message) and 1, and grows with the
    compute.  Within the range of a phase's fitted iterations it is their own line's (a line
    shared with other phases, or the path at slope 1, may give another: the difference times
    the skipped iterations' compute about the fitted ones' mean); beyond it, only between
    theirs (less three of its standard errors) and 1 above, 0 and theirs (plus three) below,
    or anywhere in 0-1 where their compute does not vary apart from their other costs: the
    distance beyond times the farthest of those from the slope used (a random trace of 4
    ranks whose compute fell by 26% in the skip, its fitted slope 0.01 on 5% jitter: +1.57%
    from the full replay against a bound of 1.41%).  Reviewers' traces, 1,200 iterations overlapped with a 4 MB halo on 2
    ranks: twice the compute in 60 of the skipped iterations, outlasting the halo there only,
    -1.16% from the full replay against a bound of 0.08%; a drift of the balance whose
    compute falls under the halo's time in the skip, which the path at slope 1 follows down,
    -2.8% against 0.15%; one rising over it from ends the halo holds, +12% against 1.1%."""
    k = len(group)
    path = group[0].path is not None
    fitted = np.concatenate([c[0] for c in computes])[on]
    phase = np.repeat(np.arange(k), [len(c[0]) for c in computes])[on]
    total = y + fitted if path else y
    compute = None if path or 0 not in use else k + int(np.flatnonzero(use == 0)[0])
    others = [j for j in range(k, X.shape[1]) if j != compute]
    used = 1.0
    if not path:
        used = 0.0
        if compute is not None:
            used = float(line[compute]) * float(np.ptp(X[:, compute])) / \
                max(float(np.ptp(fitted)), 1e-300)
    out = np.zeros(k)
    for i, (_, skipped) in enumerate(computes):
        mine = phase == i
        if not mine.any() or not len(skipped):
            continue
        x = fitted[mine]
        D = np.column_stack([np.ones(mine.sum()), X[mine][:, others]])
        slope, sure = None, 0.0
        Dx = np.column_stack([D, x])
        if np.linalg.matrix_rank(Dx) > np.linalg.matrix_rank(D):
            beta, *_ = np.linalg.lstsq(Dx, total[mine], rcond=None)
            resid = total[mine] - Dx @ beta
            dof = len(resid) - np.linalg.matrix_rank(Dx)
            sure = _Z * float(np.sqrt(max(float(resid @ resid), 0.0) / max(dof, 1) *
                                      max(float(np.linalg.pinv(Dx.T @ Dx)[-1, -1]), 0.0)))
            slope = min(max(float(beta[-1]), 0.0), 1.0)
        up, down = ((0.0, 1.0), (0.0, 1.0)) if slope is None else \
            ((max(slope - sure, 0.0), 1.0), (0.0, min(slope + sure, 1.0)))
        within = 0.0 if slope is None else \
            abs(slope - used) * abs(float((np.clip(skipped, x.min(), x.max()) - x.mean()).sum()))
        out[i] = within + \
            max(abs(s - used) for s in up) * float(np.clip(skipped - x.max(), 0, None).sum()) + \
            max(abs(s - used) for s in down) * float(np.clip(x.min() - skipped, 0, None).sum())
    return out


def _apart(X: np.ndarray, y: np.ndarray, mine: np.ndarray, rest: np.ndarray, i: int, k: int,
           shared: float, precision: float, beta: np.ndarray) -> bool:
    """Whether phase ``i`` of a group of ``k`` (``mine``: its rows of the design ``X``, times
    ``y``; ``beta``: the shared line's coefficients, :func:`_solved`'s; ``rest``: the design of
    its skipped iterations, which the shared line puts at ``shared`` s) is not like the others: its own line (its intercept, the shared columns)
    fits its iterations better than the shared slopes beyond chance (an F test at ``APART``)
    and puts its skipped time further from the shared line's than three standard deviations
    of its own prediction and the replay's ``precision``.  Phases alike make the same calls,
    not at the same cost: where one overlaps its compute with messages that take longer (a
    halo of 4 MB against one of 4 KB), its time does not follow its compute, and the others'
    slope, or the compute critical path at slope 1 (:func:`_on_critical_path`, chosen for the
    smaller bound the shared line's misfit left it), put a transient of its compute, skipped,
    on its time: +4.0% from the full replay against a bound of 0.22%; alone, +0.015% against
    0.40%."""
    cols = [i] + list(range(k, X.shape[1]))
    Xi, yi = X[mine][:, cols], y[mine]
    r = int(np.linalg.matrix_rank(Xi))
    dof = len(yi) - r
    if r < 2 or dof < 2:
        return False
    own, *_ = np.linalg.lstsq(Xi, yi, rcond=None)
    rss_own = float(np.sum((yi - Xi @ own) ** 2))
    rss = float(np.sum((yi - X[mine] @ beta) ** 2))
    R = rest[:, cols]
    total = R.sum(0)
    sd = np.sqrt(rss_own / dof * (len(R) + max(float(total @ np.linalg.pinv(Xi.T @ Xi) @ total),
                                               0.0)))
    if rss <= rss_own or abs(float(R.sum(0) @ own) - shared) <= _Z * sd + precision:
        return False
    f = (rss - rss_own) / (r - 1) / max(rss_own / dof, 1e-300)
    return _f_survival(r - 1, dof, f) < APART


def _once(X: np.ndarray, y: np.ndarray, fitted: np.ndarray, skipped: list, beta: np.ndarray,
          inv: np.ndarray) -> list[float]:
    """Per phase, how far its skipped iterations of a variant that the group's line fits once
    (``fitted``: the variant of each fitted row of the design ``X``, times ``y``;
    ``skipped``: per phase its skipped iterations' variants; ``beta``, ``inv``: the line,
    :func:`_solved`'s) may lie from the line: their
    count times that iteration's residual left out of the line (its residual over one minus
    its leverage), or its whole time where it sets a column alone.  One iteration does not
    show its variant's noise, and the line passes near it: where every skipped one is off as
    far, none of the variance sees it (:func:`_see_once`, public miniMD at 4 ranks: a thermo
    output step every 105 iterations replayed once, in the start)."""
    vals, at, count = np.unique(fitted, return_index=True, return_counts=True)
    single = count == 1
    if not single.any():
        return [0.0] * len(skipped)
    rows = at[single]
    h = np.einsum("ij,jk,ik->i", X[rows], inv, X[rows])
    resid = np.abs(y[rows] - X[rows] @ beta)
    off = np.where(h < 1 - 1e-9, resid / np.maximum(1 - h, 1e-9), np.abs(y[rows]))
    return [float(sum(np.count_nonzero(v == u) * o for u, o in zip(vals[single], off)))
            for v in skipped]


#: The chance below which a phase's replayed start and tail are taken to sit at different
#: levels about the line (:func:`_level`), and a phase's own line to fit it better than the
#: shared one of phases alike (:func:`_apart`).
APART = 0.01
#: ... and only where their mean residuals are further apart than this many times the larger
#: of their iterations' standard deviations (:func:`_level`).
SEPARATE = 2.0


def _level(p: Phase, X: np.ndarray, y: np.ndarray, start: np.ndarray,
           tail: np.ndarray, beta: np.ndarray, inv: np.ndarray) -> float:
    """How far the skipped iterations' time may lie from the line (design ``X``, times ``y``)
    of a phase (``start``, ``tail``: its fitted rows of each): where the start's and the
    tail's mean residuals differ more than chance would make them (Welch's two-sided t test,
    each one's own spread, at ``APART``; an iteration whose leverage exceeds ``LEVERAGE`` left
    out: it sets a slope alone, and the line passes near it whatever its level), the skipped
    count times the larger of the two; else 0.  The line fits through both and its residuals'
    variance takes the gap for noise, but the skipped iterations may sit at either level.
    Where its iterations move different bytes (:attr:`Phase.sized`), or it shares a line
    (``like``), the bytes that made the gap are not in the line: public Intel MPI Benchmarks
    IMB-MPI1 at 2 ranks, 150 iterations sweeping message sizes, the first 24 at 0.70 ms, the
    rest at 0.50 ms, its start of 20 at the first level and its tail of 5 at the second:
    +16.2% from the full replay against a bound of 7.46%; there the gap must also exceed
    ``SEPARATE`` times the larger of their iterations' standard deviations (two levels, which
    neither one's scatter bridges): where a noisy start's mean differs from a quiet tail's by
    less (public NPB LU W, MG and HPCG at 2 ranks: 1.4-1.6 times the start's sd, significant
    at 1e-6), the bound of the residuals held (errors of 0.01-0.2 of it), and those bounds are
    kept as they were.  Elsewhere, in a phase with a line of its own (not ``joint``) whose
    start and tail lie apart in cost (:func:`_costs_apart`), the gap is the line's misfit:
    the time's relation to the cost bends between the start's costs and the tail's (an
    iteration's time a maximum of sums of its computes and messages), the line's slope is the
    long start's own, and the skipped iterations at the tail's cost lie at the tail's level,
    off the line (a random
    trace of 2 ranks, compute overlapped with a 4 MB halo, the start's about the halo's time
    and the tail's and most skipped iterations' a tenth less, under it, where their time stays
    flat: its mean residual 7.1e-6 s, 6.5 standard errors from the start's, 2.0 of its
    iterations' standard deviations; -2.4% from the full replay against a bound of 1.8%).  A
    joint phase's start is one window, its slopes the group's: public miniGhost SVAF at 2
    ranks, its last joint phase's start and tail of 11 fitted iterations each, their gap
    significant, -0.26% from the full replay against a bound of 0.73%, which the gap took to
    0.93%.  A drift's phase (:attr:`Phase.drift`, predicted on its path) takes the gap
    whatever its costs: its line is an intercept alone, what the iterations took beyond their
    path, and that moves with the balance the drift changes (random traces of 3 and 4 ranks,
    one rank's share drifting by 16-27%: the start's and the tail's levels apart beyond
    chance, the skipped iterations at the tail's, 1.1-1.7 times the bound off the full
    replay).  A phase whose path was chosen for the smaller bound keeps the rule of costs
    apart: public miniGhost SVAF at 2 ranks, 40 steps, +0.53% from the full replay against a
    bound of 1.44%, which the gap took to 3.84%."""
    if not p.skipped:
        return 0.0
    resid = y - X @ beta
    h = np.einsum("ij,jk,ik->i", X, inv, X)
    a, b = resid[start & (h <= LEVERAGE)], resid[tail & (h <= LEVERAGE)]
    if len(a) < 2 or len(b) < 2:
        return 0.0
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    gap = float(a.mean() - b.mean())
    if p.sized or p.like is not None:
        if abs(gap) <= SEPARATE * np.sqrt(max(va * len(a), vb * len(b))):
            return 0.0
    elif p.joint or not p.drift and not _costs_apart(X[start], X[tail]):
        return 0.0
    if va + vb > 0:
        dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
        if _f_survival(1, max(int(dof), 1), gap ** 2 / (va + vb)) > APART:
            return 0.0
    return p.skipped * max(abs(float(a.mean())), abs(float(b.mean())))


def _costs_apart(start: np.ndarray, tail: np.ndarray) -> bool:
    """Whether a phase's fitted start and tail (their rows of the design) lie apart in cost:
    the mean of either's cost outside the range of the other's, in some column.  Where the
    tail's cost lies within the start's range, the line is interpolated there, and a gap
    between their mean residuals is time the cost does not explain, which the residuals'
    variance covers (public PENNANT at 2 ranks on nohsq2000, 2000 cycles: its start and tail
    at one cost, their gap significant, +0.005% from the full replay against a bound of
    0.25%, which the gap took to 0.43%)."""
    def outside(x: np.ndarray, of: np.ndarray) -> np.ndarray:
        return (x.mean(0) < of.min(0)) | (x.mean(0) > of.max(0))
    return bool((outside(tail, start) | outside(start, tail)).any())


#: The chance below which the starts' and the tails' residuals are taken to differ in spread
#: (:func:`_noisier`).
NOISIER = 0.01


def _noisier(resid: np.ndarray, lead: np.ndarray) -> float:
    """The mean square residual of the starts' fitted iterations (``lead``) or of the tails',
    the larger, where the two differ more than chance would make them (a two-sided F test at
    ``NOISIER``), else 0.  The skipped iterations lie between a start and a tail, and may
    vary like either: pooled, a quiet start outweighs a noisy tail (NPB LU W at 2 ranks,
    recorded at a load of 8: its first 40 iterations take their critical path plus a constant
    0.2017 ms, the rest plus 0.18-0.30 ms; a start of 28 and a tail of 6 fitted, residual sd
    0.003 ms and 0.032 ms, pooled 0.013: -0.164% from the full replay against a bound of
    0.083%).  It is the conservative choice: public miniGhost SVAF at 2 ranks, a start of
    192 and a tail of 11 at sd 0.56 and 6.3 us, has its skipped iterations at 3.4 us (pooled
    2.1).  Its own mean square about the shared line also counts a tail's offset from the
    start's level."""
    a, b = resid[lead], resid[~lead]
    if len(a) < 3 or len(b) < 3:
        return 0.0
    va, vb = float(a @ a) / len(a), float(b @ b) / len(b)
    (hi, n_hi), (lo, n_lo) = sorted([(va, len(a)), (vb, len(b))], reverse=True)
    if hi <= 0:
        return 0.0
    if lo > 0 and 2 * _f_survival(n_hi, n_lo, hi / lo) > NOISIER:
        return 0.0
    return hi


def _f_survival(d1: int, d2: int, f: float) -> float:
    """P(F > f) for F of ``d1`` and ``d2`` degrees of freedom (``scipy.special.fdtrc``, within
    1e-11 of it): the regularized incomplete beta function I_x(d2/2, d1/2) at x = d2 / (d2 +
    d1 f), by its continued fraction (modified Lentz).  Importing scipy.special takes 0.25 s
    on an idle machine, more than the rest of a small trace's sampling (public miniMD at 2
    ranks: the whole analysis 0.1 s)."""
    a, b, x = d2 / 2.0, d1 / 2.0, d2 / (d2 + d1 * f)
    if x <= 0.0 or x >= 1.0:
        return float(x >= 1.0)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
                     + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (:func:`_f_survival`), to a
    relative step of 1e-16."""
    tiny = 1e-300

    def safe(v: float) -> float:
        return v if abs(v) > tiny else tiny
    c, d = 1.0, 1.0 / safe(1.0 - (a + b) * x / (a + 1.0))
    h = d
    for m in range(1, 10_000):
        for aa in (m * (b - m) * x / ((a - 1.0 + 2 * m) * (a + 2 * m)),
                   -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 1.0 + 2 * m))):
            d = 1.0 / safe(1.0 + aa * d)
            c = safe(1.0 + aa / c)
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _solved(X: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The least-squares line through design ``X`` and times ``y``: its coefficients and
    ``pinv(X.T @ X)``, solved once for :func:`_line` and the terms judged against it
    (:func:`_level`, :func:`_once`, :func:`_apart`, :func:`_outside`: each solved it again)."""
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    return beta, np.linalg.pinv(X.T @ X)


def _line(X: np.ndarray, y: np.ndarray, rows: list[np.ndarray], lead: np.ndarray,
          beta: np.ndarray, inv: np.ndarray):
    """:func:`_fit`'s least-squares line through the fitted iterations (design ``X``, times
    ``y``; ``lead``: those of a start, the others a tail's), per phase (``rows``: the design of
    its skipped iterations; ``beta``, ``inv``: the line, :func:`_solved`'s) the skipped time it
    predicts and that prediction's variance (of the residuals, or of the noisier of the starts'
    and the tails': :func:`_noisier`), and the residuals' standard deviation."""
    resid = y - X @ beta
    var = float(resid @ resid) / max(len(resid) - X.shape[1], 1)
    var = max(var, _noisier(resid, lead))
    if len(resid) > 2 and resid[:-1].std() > 0 and resid[1:].std() > 0:   # correlated residuals
        rho = float(np.corrcoef(resid[:-1], resid[1:])[0, 1])
        if rho > 0:
            var *= (1 + rho) / (1 - min(rho, 0.9))
    total = sum(R.sum(0) for R in rows)
    times = np.array([float((R @ beta).sum()) for R in rows])
    variances = np.array([var * (len(R) + max(float(R.sum(0) @ inv @ total), 0.0))
                          for R in rows])
    return times, variances, float(np.sqrt(var))
