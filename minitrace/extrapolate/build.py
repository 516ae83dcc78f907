"""A trace at N ranks from runs at three or more smaller scales: every loop count, message size
and compute volume of every call, per rank class, fitted as a function of p
(:mod:`.fit`) and evaluated at N; the rank-relative program of each class written for each
of its ranks at N (peers mapped back modulo N, roots kept) and compressed.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field as dataclass_field

import numpy as np
import pandas as pd

from .. import kinds as K
from ..compress import signatures as SG
from ..compress.files import write_compressed
from ..errors import MinitraceError
from ..model import ACTION_DTYPE, NONE, TraceColumns, empty_actions
from . import agree as AG
from . import compose as CO
from . import fit as F
from . import grid as GR
from . import grid_comms as GC
from . import grid_laws as GL
from . import grid_peers as GP
from . import per_member as PM
from . import phases as PH
from . import split_comms as SC
from . import stamped as SS
from . import structure as ST

#: farthest a target may be from the largest recorded run
MAX_FACTOR = 64
#: a call whose volumes are less than this share of its class's total volume (in every run)
#: is negligible: a poor fit of it is flagged, not refused (microseconds between MPI calls)
NEGLIGIBLE = 0.01
_LEAF_PARAMETERS = ("bytes_sent", "bytes_recv", "volume")
#: the volumes replay executes (compute, sleep); those of MPI calls are the time inside them,
#: mostly waiting, which the simulation models itself: their fits are not refused
_EXECUTED = K.mask(K.WORK)


@dataclass
class Parameter:
    """One fitted quantity: where it is, its recorded values and its model."""

    rank_class: str
    name: str
    values: np.ndarray
    model: F.Model
    at_target: float
    negligible: bool = False
    clamped: bool = False        # the law predicts less than the least the quantity can be
    waiting: bool = False        # a volume inside an MPI call: replay does not execute it
    intervals: dict = dataclass_field(default_factory=dict, repr=False)

    def interval(self, ranks: int) -> tuple[float, float]:
        """The model's 95 % bootstrap interval at ``ranks``, computed once (the table and
        the file's provenance both give it; 400 searches each)."""
        if ranks not in self.intervals:
            self.intervals[ranks] = self.model.interval(ranks)
        return self.intervals[ranks]


@dataclass
class Extrapolated(TraceColumns):
    """The extrapolated trace, and its actions' call signatures when :func:`build` could
    stamp them per rank class (:mod:`.stamped`; None: writing it encodes every action)."""

    signatures: SG.Signatures | None = None


@dataclass
class ClassPlan:
    """What a rank class becomes at the target: loop counts, leaf parameters (leaf order)."""

    counts: np.ndarray
    leaves: dict


def _class_volumes(run: ST.Run, rc: ST.RankClass) -> np.ndarray:
    """(ranks, actions): the volumes of the class's ranks (of a composed class, its one
    composed sequence's)."""
    if rc.parts is not None:
        return np.asarray(rc.parts, float)[None, :]
    return np.stack([run.data.actions["volume"][run.data.rank_slice(int(r))]
                     for r in rc.ranks]).astype(float)


def _leaf_volumes(run: ST.Run, rc: ST.RankClass) -> np.ndarray:
    """Typical volume of each leaf, the fitted quantity: the median over the class's ranks
    and iterations.  A spike (one call of one rank slowed 100x) stays whole in the ratios to
    it (:func:`_rank_ratios`); a mean would carry a share of it into the law, which the runs
    without a spike there average away."""
    volumes = _class_volumes(run, rc)
    nleaves = len(rc.leaves)
    stream = np.broadcast_to(ST.leaf_stream(rc.tree), volumes.shape).ravel()
    ordered = volumes.ravel()[np.lexsort((volumes.ravel(), stream))]
    counts = np.bincount(stream, minlength=nleaves)
    start = np.cumsum(counts) - counts
    low = ordered[np.minimum(start + (counts - 1) // 2, max(len(ordered) - 1, 0))] \
        if len(ordered) else np.zeros(nleaves)
    high = ordered[np.minimum(start + counts // 2, max(len(ordered) - 1, 0))] \
        if len(ordered) else np.zeros(nleaves)
    return np.where(counts > 0, (low + high) / 2, 0.0)


def _rank_ratios(run: ST.Run, rc: ST.RankClass) -> np.ndarray:
    """(ranks, actions): each recorded rank's volumes relative to their leaf's typical
    volume (:func:`_leaf_volumes`; 1 where it is 0); a composed class has one row."""
    volumes = _class_volumes(run, rc)
    typical = _leaf_volumes(run, rc)[ST.leaf_stream(rc.tree)]
    return np.where(typical > 0, volumes / np.where(typical > 0, typical, 1.0), 1.0)


def _source_index(target: np.ndarray, source: np.ndarray, nleaves: int) -> np.ndarray:
    """For each action of the ``target`` stream (leaf numbers), the action of the ``source``
    stream at the same point of the program: the same leaf's occurrence at the same share of
    its occurrences (the k-th of n at the target is the floor(k m / n)-th of m in the
    source; the same one when the loop counts are); -1 for a leaf the source lacks."""
    n = np.bincount(target, minlength=nleaves)
    m = np.bincount(source, minlength=nleaves)
    by_leaf_t = np.argsort(target, kind="stable")
    by_leaf_s = np.argsort(source, kind="stable")
    k = np.empty(len(target), np.int64)
    k[by_leaf_t] = np.arange(len(target)) - (np.cumsum(n) - n)[target[by_leaf_t]]
    has = m[target] > 0
    at = (np.cumsum(m) - m)[target] + k * m[target] // np.maximum(n[target], 1)
    return np.where(has, by_leaf_s[np.minimum(at, len(source) - 1)], -1)


def _steps(node: ST.Node) -> np.ndarray:
    """Per action of the tree's expansion, the iteration of its largest loop (the most
    actions in all: the time steps) the action is in, -1 outside that loop."""
    sizes = {}

    def size(n: ST.Node) -> int:
        if n.leaf:
            return 1
        sizes[id(n)] = sum(size(c) for c in n.children)
        return sizes[id(n)] * n.count
    size(node)
    loops = [n for n in _nodes(node) if not n.leaf and n is not node]
    largest = max(loops, key=lambda n: sizes[id(n)] * n.count, default=None)

    def expand(n: ST.Node) -> np.ndarray:
        parts = []
        for c in n.children:
            if c.leaf:
                parts.append(np.full(1, -1, np.int64))
            elif c is largest:
                parts.append(np.repeat(np.arange(c.count, dtype=np.int64), sizes[id(c)]))
            else:
                parts.append(np.tile(expand(c), c.count))
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return expand(node)


def _nodes(node: ST.Node):
    yield node
    for c in node.children:
        yield from _nodes(c)


def _pool(ratios: np.ndarray, index: np.ndarray, steps: np.ndarray) -> tuple:
    """What :func:`_spread` draws from: the recorded ``ratios`` (:func:`_rank_ratios`) with a
    last column of ones (for an ``index`` of -1: an action the source lacks), the source
    action of each action (:func:`_source_index`) and the draw column of each action: its
    time step + 1 (:func:`_steps`; 0 outside them)."""
    ratios = np.concatenate([ratios, np.ones((len(ratios), 1))], axis=1)
    return ratios, index, np.where(index >= 0, steps[index], -1) + 1


def _draws(pool: tuple, nranks: int, rng) -> np.ndarray:
    """(nranks, time steps + 1): the recorded rank (a row of the pool's ratios) each rank
    takes its ratios from in each time step (column 0: outside them), drawn from ``rng``."""
    ratios, _, step = pool
    return rng.integers(0, len(ratios), (nranks, int(step.max(initial=0)) + 1))


def _spread(volumes: np.ndarray, pool: tuple, drawn: np.ndarray) -> np.ndarray:
    """(len(drawn), actions): ``volumes`` (the fitted typical volumes of one rank's actions)
    times recorded ratios: for each rank and each iteration of the recorded program's time
    steps (once for the actions outside them), those of the recorded rank ``drawn`` for it
    (:func:`_draws`) from the pool (:func:`_pool`): a rank's slow stretches stay together, as
    recorded."""
    ratios, index, step = pool
    return volumes[None, :] * ratios[drawn[:, step], index[None, :]]


def _leaf_name(row, k: int) -> str:
    return f"call {k + 1} ({K.NAME[int(row['kind'])]})"


def _negligible(runs: list[ST.Run], classes: list, volumes: np.ndarray,
                executed: np.ndarray) -> np.ndarray:
    """Per leaf: its volumes are below NEGLIGIBLE of its class's total of ``executed`` ones
    (compute, sleep: not the time inside MPI calls, mostly waiting) in every run."""
    shares = []
    for run, rc, v in zip(runs, classes, volumes):
        total = np.where(executed, v, 0.0) * np.bincount(ST.leaf_stream(rc.tree),
                                                         minlength=len(rc.leaves))
        shares.append(total / max(total.sum(), np.finfo(float).tiny))
    return np.all(np.array(shares) < NEGLIGIBLE, axis=0) & executed


def _role(key: str) -> str:
    if "@" in key:
        return "pinned in " + GR.describe_position(key.split("@")[0])
    return GR.describe_position(key) if key.startswith("(") else \
        "bulk" if key == "bulk" else "anchored"


def _having(runs: list[ST.Run], keys, why: dict | None = None) -> dict:
    """The runs (smallest first) that have each class; MinitraceError naming the first
    :data:`SHOWN` classes that fewer than 3 runs have (no law can be fitted to them), and
    ``why`` each could not be composed (:mod:`.compose`), and counting the others."""
    runs = sorted(runs, key=lambda r: r.nranks)
    having = {key: [r for r in runs if key in r.classes] for key in keys}
    why = why or {}
    short = [f"rank class {key} ({_role(key)}) is in {len(h)} run(s) "
             f"({', '.join(f'{r.nranks} ranks' for r in h) or 'none'}"
             f"{_left_out(runs, key)}): 3 are needed to fit it"
             + (f" (not composed: {why[key]})" if key in why else "")
             for key, h in having.items() if len(h) < 3]
    if short:
        hint = (" (record scales whose grid has it, e.g. extents of 3 or more along every open "
                "dimension for an interior)" if any(k.startswith("(") for k, h in having.items()
                                                     if len(h) < 3) else "")
        left = len(short) - SHOWN
        more = [f"and {left} more rank class{'es' if left > 1 else ''} in fewer than 3 runs"] \
            if left > 0 else []
        raise MinitraceError("not extrapolated: " + "; ".join(short[:SHOWN] + more) + hint)
    return having


def _left_out(runs: list[ST.Run], key: str) -> str:
    """``; left out of 2, 3 ranks: ...``: the runs whose class of that name --force left out
    (its program is another one, which the name alone would not say), and why."""
    out = [r for r in runs if key in r.left_out]
    return f"; left out of {', '.join(str(r.nranks) for r in out)} ranks: " \
        f"{out[0].left_out[key]}" if out else ""


#: Classes a refusal names (a 3-D grid recorded at 2 and 4 ranks misses up to 26: their
#: reasons, each a sentence, made one line of ~3,000 characters).
SHOWN = 3


def fit_parameters(runs: list[ST.Run], ranks: int, scaling: str,
                   threshold: float = F.DEFAULT_THRESHOLD, keys=None,
                   grid: GR.Grid | None = None, why: dict | None = None):
    """Fit every parameter that is not the same in all runs having its class; (table of
    Parameter, plan per class).  ``keys``: the classes at the target (default: the largest
    run's).  On the target ``grid``, the size of a message along one dimension is tried as a
    face of the block first (:mod:`.grid_laws`).  Parameters equal in every run are kept as
    they are (not listed)."""
    ref = max(runs, key=lambda r: r.nranks)
    having = _having(runs, list(ref.classes) if keys is None else keys, why)
    found, plans = [], {}
    rims: list = []          # rimmed face laws found, for classes seen with fewer faces
    # the classes recorded at the most scales first: their laws hold for the others' calls
    for key, members in sorted(having.items(), key=lambda kv: -len(kv[1])):
        ref = members[-1]
        ref_rc = ref.classes[key]
        classes = [r.classes[key] for r in members]
        p = np.array([r.nranks for r in members])

        def model(name: str, values: np.ndarray, integer: bool, low: float,
                  negligible: bool = False, axis: int = -1, waiting: bool = False) -> float:
            if np.all(values == values[0]):
                return float(values[0])
            m = GL.face_law(values, members, axis, grid, threshold, rims) if grid else None
            # microseconds between calls are noise without a law (their steep "laws" would
            # grow them 100x at 64x): the simplest law only; so is a fit that finds no law
            m = m or F.fit(p, values, scaling, threshold, null_only=negligible,
                           steady=(min(p.min(), ranks), max(p.max(), ranks)))
            # (nor one that turns from the smallest run on: public PRK stencil's corner
            # compute at 4, 6, 8 ranks fell, and a law turning at 7.4 rose to 5.6x at 64)
            if isinstance(m, F.Model) and not m.null_only and \
                    (m.flagged or m.turns_between(min(p.min(), ranks), max(p.max(), ranks))):
                m = F.fit(p, values, scaling, threshold, null_only=True)
            predicted = float(m(ranks))
            value = max(low, predicted)
            value = float(np.rint(value)) if integer else value
            found.append(Parameter(key, name, values, m, value, negligible, predicted < low,
                                   waiting))
            return value

        counts = np.array([[lp.count for lp in rc.loops] for rc in classes])
        plan_counts = np.array([model(f"loop {k + 1}: iterations", counts[:, k], True, 1)
                                for k in range(counts.shape[1])], np.int64)
        leaves = {}
        for field in _LEAF_PARAMETERS:
            if field == "volume":
                values = np.stack([_leaf_volumes(r, rc) for r, rc in zip(members, classes)])
            else:
                values = np.stack([r.sig.table[rc.leaves][field]
                                   for r, rc in zip(members, classes)])
            rows = ref.sig.table[ref_rc.leaves]
            executed = _EXECUTED[rows["kind"]]
            small = _negligible(members, classes, values, executed) if field == "volume" \
                else np.zeros(values.shape[1], bool)
            waiting = ~executed if field == "volume" else np.zeros(values.shape[1], bool)
            axis = GL.axes(rows, grid.ndims) if grid and field != "volume" else \
                np.full(len(rows), -1)
            leaves[field] = np.array([model(f"{_leaf_name(rows[k], k)}: {field}", values[:, k],
                                            field != "volume", 0, small[k], axis[k],
                                            waiting[k])
                                      for k in range(values.shape[1])])
        plans[key] = ClassPlan(plan_counts, leaves)
    order = {k: i for i, k in enumerate(having)}
    found.sort(key=lambda x: order[x.rank_class])         # the classes' own order
    return found, {k: plans[k] for k in having}


def _flag(x: Parameter) -> str:
    if not x.model.flagged:
        return ""
    return " (over threshold, negligible)" if x.negligible else \
        " (over threshold, inside an MPI call: not replayed)" if x.waiting else \
        " (over threshold)"


def table(parameters: list[Parameter], ranks: int) -> pd.DataFrame:
    """The printed table: parameter, model, LOO error, value at the target and the range of
    the 95 % bootstrap interval there (the search redone on perturbed values, ``fit.py``)."""
    return pd.DataFrame({
        "rank class": [x.rank_class for x in parameters],
        "parameter": [x.name for x in parameters],
        "recorded": [" ".join(f"{v:.4g}" for v in x.values) for x in parameters],
        "model": [str(x.model) for x in parameters],
        "LOO error": [f"{x.model.loo_error:.2%}" + _flag(x) for x in parameters],
        f"at {ranks}": [f"{x.at_target:.6g}" + (" (law below it)" if x.clamped else "")
                        for x in parameters],
        f"95% interval at {ranks}": ["{:.4g} .. {:.4g}".format(*x.interval(ranks))
                                     for x in parameters],
    })


def print_table(parameters: list[Parameter], ranks: int) -> None:
    if not parameters:
        print("every parameter is the same in all runs: nothing fitted")
        return
    with pd.option_context("display.width", 250, "display.max_columns", 20,
                           "display.max_colwidth", 60):
        print(table(parameters, ranks).to_string(index=False))
    short = three_scale_noise(parameters)
    if short:
        print(f"note: {short} parameter(s) fitted from 3 scales follow no exact law: their 95% "
              "intervals are too narrow (they held the truth in 67-86% of noisy cases, "
              "benchmarks/bench_extrapolate_fit.py); a 4th scale makes them hold it")


def three_scale_noise(parameters: list[Parameter]) -> int:
    """How many fits rest on 3 scales with noise: the case whose intervals under-cover."""
    return sum(1 for x in parameters
               if len(x.values) == 3 and np.any(getattr(x.model, "noise", 0) > 0))


def class_ranks(ref: ST.Run, ranks: int, grid: GR.Grid | None = None) -> dict:
    """Each class's ranks at the target: anchored ones at their signed ranks, the rest the
    bulk (1-D) or their position on the target ``grid`` (pinned places in a position first:
    ``position@(0,*)`` holds the position's ranks whose first coordinate is 0)."""
    out, taken = {}, np.zeros(ranks, bool)
    for key in ref.classes:
        if not ST.anchored(key):
            continue
        r = np.array([int(s) % ranks for s in key.split(",")], np.int64)
        if taken[r].any():
            raise MinitraceError(f"rank class {key} collides with another at {ranks} ranks")
        taken[r] = True
        out[key] = r
    if grid is None:
        out["bulk"] = np.flatnonzero(~taken)
        return out
    where = np.array(grid.positions(np.arange(ranks)), object)
    for key in ref.classes:                  # pinned places in a position: row roots
        if "@" in key:
            r = ST.pinned_ranks(key, grid, np.flatnonzero((where == key.split("@")[0]) &
                                                          ~taken))
            taken[r] = True
            out[key] = r
    for pos in sorted(set(where)):
        r = np.flatnonzero((where == pos) & ~taken)
        if len(r):
            out[pos] = r
    return out


def _new_tokens(table: np.ndarray, vec_offsets: np.ndarray, vec_values: np.ndarray):
    """New request ids each signature names (its request column and its request vector)."""
    out = (table["req_mode"] == SG.REQ_NEW).astype(np.int64)
    for k, v in enumerate(table["vec"]):
        if v >= 0 and vec_values[vec_offsets[v]] == SG.VEC_REQUESTS:
            out[k] += int((vec_values[vec_offsets[v] + 1:vec_offsets[v + 1]:2] ==
                           SG.REQ_NEW).sum())
    return out


def _class_program(sigs: np.ndarray, stream: np.ndarray, ranks: int, ref: ST.Run):
    """A class's actions and vectors as rank 0 runs them, and where they name a rank-relative
    peer (those rank 1 names differently): rank r's are (rank 0's + r) mod N, or on a grid
    rank 0's are the encoded offsets themselves."""
    nnew = int(_new_tokens(sigs, ref.sig.vec_offsets, ref.sig.vec_values)[stream].sum())
    size = ranks if ref.grid is None else GP.UNWRAPPED
    decoded = [SG.decode(sigs, stream, r, size, ref.sig.vec_offsets, ref.sig.vec_values,
                         np.arange(nnew, dtype=np.int64)) for r in range(min(size, 2))]
    rows, vec = decoded[0]
    a = empty_actions(len(rows))
    for name in ACTION_DTYPE.names:
        if name not in ("t_start", "t_end", "vec_off"):
            a[name] = rows[name]
    if size < 2:
        return a, vec, np.zeros(len(a), bool), np.zeros(len(vec), bool)
    return a, vec, rows["peer"] != decoded[1][0]["peer"], vec != decoded[1][1]


def _place(values: np.ndarray, relative: np.ndarray, ranks: np.ndarray, nranks: int,
           grid: GR.Grid | None) -> np.ndarray:
    """(len(ranks), len(values)): each rank's copy, its relative entries made its peers."""
    out = np.tile(values, (len(ranks), 1))
    if not relative.any():
        return out
    if grid is None:
        out[:, relative] = (values[relative] + ranks[:, None]) % nranks
    else:
        out[:, relative] = grid.shift(ranks[:, None],
                                      GR.decode(values[relative], grid.ndims)[None])
    return out


def _world_like(runs: list[ST.Run]) -> list[int]:
    """The communicators besides WORLD, which must be the world in rank order in every run
    (a dup, a Cartesian grid without reordering); MinitraceError naming any other."""
    ids = set()
    for run in runs:
        a = run.data.actions
        for cid, members in run.data.comms.items():
            if cid in run.comm_labels:
                continue
            if cid == 0 or np.array_equal(members, np.arange(run.nranks)):
                ids.add(cid)
                continue
            made = np.flatnonzero(K.mask(K.NEW_COMM_KINDS)[a["kind"]] & (a["request"] == cid))
            how = K.NAME[int(a["kind"][made[0]])] if len(made) else "unknown creation"
            raise MinitraceError(
                f"{run.path}: communicator {cid} ({how}, {len(members)} of {run.nranks} ranks) "
                "is not the whole world in rank order: sub-communicators (but a grid's "
                "cart_sub rows) and reordered grids are not extrapolated")
    return sorted(ids - {0})


@dataclass
class ClassProgram:
    """One rank class at the target: its program as rank 0 of a class would run it (actions,
    vector entries; :func:`_class_program`), which entries name rank-relative peers, the pool
    its volumes are spread from (:func:`_spread`; None: the actions hold the means) and its
    ranks.  Every rank of the class runs it with its peers placed (:meth:`peers`)."""

    actions: np.ndarray
    vectors: np.ndarray
    peer_rel: np.ndarray
    vec_rel: np.ndarray
    pool: tuple | None
    ranks: np.ndarray
    #: (where in ``vectors``, [color, key] of every rank at the target) of each comm_split
    splits: list = dataclass_field(default_factory=list)
    #: the splits at the target (:func:`.split_comms.fit`), for roots on their communicators
    made: dict = dataclass_field(default_factory=dict)

    def peers(self, at: np.ndarray, nranks: int, grid: GR.Grid | None) -> np.ndarray:
        """(len(at), actions): the peer column of the class's ranks at positions ``at``."""
        r = self.ranks[at]
        placed = _place(self.actions["peer"].astype(np.int64), self.peer_rel, r, nranks, grid)
        placed = SC.place_roots(placed, self.actions["comm"], r, self.made)
        return placed if grid is None else GC.place_roots(placed, r, grid)

    def vector_rows(self, at: np.ndarray, nranks: int, grid: GR.Grid | None) -> np.ndarray:
        """(len(at), entries): the vector entries of the class's ranks at positions ``at``."""
        out = _place(self.vectors, self.vec_rel, self.ranks[at], nranks, grid)
        for start, values in self.splits:
            out[:, start:start + 2] = values[self.ranks[at]]
        return out

    def volumes(self, drawn: np.ndarray | None) -> np.ndarray:
        """(ranks, actions): the volumes of the ranks whose draws (:func:`_draws`) are the
        rows of ``drawn``; without a pool, the means, one row (broadcast)."""
        if self.pool is None:
            return self.actions["volume"][None, :]
        return _spread(self.actions["volume"], self.pool, drawn)

    def table(self) -> tuple[np.ndarray, np.ndarray]:
        """(values, column): every volume a rank of the class can have, (pool rows, actions),
        and the draw column of each action: the rank whose draws (:func:`_draws`) are ``d``
        has at action j ``values[d[column[j]], j]``, the value :meth:`volumes` gives it (the
        same product); without a pool, one row (the means) and column 0."""
        volume = self.actions["volume"]
        if self.pool is None:
            return volume[None, :], np.zeros(len(volume), np.int64)
        ratios, index, step = self.pool
        return volume[None, :] * ratios[:, index], step


@dataclass
class Programs:
    """The trace at the target before any rank's actions are made: each class's program
    (in class order), the communicators, and what the file's metadata says."""

    classes: list[ClassProgram]
    nranks: int
    grid: GR.Grid | None
    comms: dict                  # id -> members (the world-like ones, the grid's rows, splits')
    sub_ids: dict                # cart_sub or split label -> each rank's communicator id
    meta: dict
    seed: int = 0

    def which(self) -> np.ndarray:
        """The class (index into ``classes``) of each rank."""
        out = np.zeros(self.nranks, np.int64)
        for k, c in enumerate(self.classes):
            out[c.ranks] = k
        return out

    def lengths(self) -> tuple[np.ndarray, np.ndarray]:
        """(actions, vector entries) of each rank."""
        n = np.array([len(c.actions) for c in self.classes] + [0], np.int64)
        v = np.array([len(c.vectors) for c in self.classes] + [0], np.int64)
        which = self.which()
        return n[which], v[which]

    def draws(self) -> list:
        """Per class, the recorded rank each of its ranks takes its ratios from in each
        time step (:func:`_draws`; None without a pool), drawn from ``seed`` in class order."""
        rng = np.random.default_rng(self.seed)
        return [_draws(c.pool, len(c.ranks), rng) if c.pool is not None else None
                for c in self.classes]

    def per_rank_communicators(self) -> bool:
        """Whether a class names a cart_sub row or a split's communicator: its ranks'
        communicator columns differ."""
        return any(GC.is_label(c.actions["comm"]).any() or GC.is_label(c.actions["request"])
                   .any() for c in self.classes)


def programs(runs: list[ST.Run], ranks: int, plans: dict, grid: GR.Grid | None = None,
             peers: dict | None = None, spread: bool = True, seed: int = 0,
             splits: dict | None = None) -> Programs:
    """Each class's program with its planned counts and parameters, decoded once (on
    ``grid``, the target grid: peers and sendrecv sources are the grid offsets
    ``peers[class]`` from each rank, :func:`.grid_peers.resolve`).  With ``spread``, each
    action's volume will be its call's fitted typical volume times the recorded ratio to it
    of one rank of the class in the largest run that has it, drawn (``seed``) for each rank
    and time step (:func:`_spread`): the imbalance between ranks, a rank's slow stretches
    kept together; else the actions hold the means.  ``splits``: each comm_split at the
    target (:func:`.split_comms.fit`), its [color, key] and communicators per rank."""
    ref = max(runs, key=lambda r: r.nranks)
    splits = splits or {}
    comms = _world_like(runs)
    owner = class_ranks(ref, ranks, grid)
    classes = []
    for key in owner:
        source = max((r for r in runs if key in r.classes), key=lambda r: r.nranks)
        rc, plan = source.classes[key], plans[key]
        sigs = source.sig.table[rc.leaves].copy()
        rel = sigs["peer_mode"] == 1
        # (without a grid: the other runs of the class, largest first, to sign offsets by)
        aligned = [] if grid is not None else [
            r for r in sorted(runs, key=lambda r: -r.nranks) if r is not source and
            key in r.classes and len(r.classes[key].leaves) == len(rc.leaves)]
        if grid is None:
            # (a root that is each run's last rank is the target's: ST.last_roots)
            last = ~rel & (len(aligned) > 0)
            for r in aligned:
                last &= ST.last_roots(sigs["peer"], source,
                                      r.sig.table["peer"][r.classes[key].leaves], r)
            sigs["peer"] = np.where(rel, ST.signed_by_runs(
                [sigs["peer"]] + [r.sig.table["peer"][r.classes[key].leaves] for r in aligned],
                [source.nranks] + [r.nranks for r in aligned]) % ranks,
                np.where(last, ranks - 1, sigs["peer"]))
        else:
            sigs["peer"] = np.where(rel, peers[key][0], sigs["peer"])
        for field in ("bytes_sent", "bytes_recv"):
            sigs[field] = plan.leaves[field].astype(np.int64)
        stream = ST.leaf_stream(rc.tree, plan.counts.tolist())
        a, vec, peer_rel, vec_rel = _class_program(sigs, stream, ranks, source)
        a["volume"] = plan.leaves["volume"][stream]
        if grid is not None:
            _set_cart_dims(a, vec, grid)
            _set_sources(a, vec, peers[key][1][stream])
        else:                   # rank 0's source: the signed offset modulo the target's size
            recorded = GP.sendrecv_source(source.sig, rc.leaves)
            offsets = ST.signed_by_runs(
                [recorded] + [GP.sendrecv_source(r.sig, r.classes[key].leaves) for r in aligned],
                [source.nranks] + [r.nranks for r in aligned])
            _set_sources(a, vec, np.where(recorded >= 0, offsets % ranks, -1)[stream])
        if any(lp.phased for lp in rc.loops):        # each phase's peers, tags and sources
            PH.move(a, vec, PH.shifts(rc.tree, plan.counts.tolist()), ranks)
        ratios = _rank_ratios(source, rc)
        pool = None
        if spread:
            pool = _pool(ratios, _source_index(stream, ST.leaf_stream(rc.tree),
                                               len(rc.leaves)), _steps(rc.tree))
        else:               # the means: the typical volume times its leaf's mean ratio
            recorded = np.broadcast_to(ST.leaf_stream(rc.tree), ratios.shape).ravel()
            a["volume"] *= (np.bincount(recorded, ratios.ravel(), len(rc.leaves)) /
                            np.maximum(np.bincount(recorded, minlength=len(rc.leaves)),
                                       1))[stream]
        classes.append(ClassProgram(a, vec, peer_rel, vec_rel, pool, owner[key],
                                    _split_entries(a, vec, splits), splits))
    used = sorted({int(c) for p in classes for c in np.unique(p.actions["comm"][
        GC.is_label(p.actions["comm"]) & ~SC.is_split_label(p.actions["comm"])])})
    sub_ids, sub_comms = GC.target(grid, used, max(comms + [0]) + 1) if used else ({}, {})
    next_id = max(comms + list(sub_comms) + [0]) + 1
    for n, split in splits.items():           # a communicator per color, at each rank its own
        sub_ids[SC.SPLIT_BASE + n] = np.where(split.comm >= 0, next_id + split.comm, -1)
        sub_comms.update({next_id + j: m for j, m in enumerate(split.members)})
        next_id += len(split.members)
    world = np.arange(ranks, dtype=np.int32)
    return Programs(classes, ranks, grid, {**{c: world for c in [0] + comms}, **sub_comms},
                    sub_ids, {"volume_unit": ref.data.meta.get("volume_unit", "seconds"),
                              "nranks": ranks}, seed)


def _split_entries(a: np.ndarray, vec: np.ndarray, splits: dict) -> list:
    """(where in ``vec``, [color, key] of every rank) of each comm_split of a class's program
    (its vector the placeholder ``[MARK, n]`` of the rank's n-th split)."""
    starts = np.cumsum(a["vec_len"]) - a["vec_len"]
    rows = np.flatnonzero((a["kind"] == K.CODE["comm_split"]) & (a["vec_len"] == 2))
    return [(int(starts[k]), splits[int(vec[starts[k] + 1])].values) for k in rows
            if vec[starts[k]] == SC.MARK]


def materialize(progs: Programs) -> Extrapolated:
    """Every rank's actions: each class's columns that differ between its ranks made once,
    (its ranks, actions), then every rank's rows stamped out from them in rank order; the
    signatures stamped per class (:mod:`.stamped`) where no class names a cart_sub row."""
    ranks, grid = progs.nranks, progs.grid
    lengths, vec_lengths = progs.lengths()
    vec_offsets = np.concatenate([[0], np.cumsum(vec_lengths)]).astype(np.int64)
    which = progs.which()
    place = np.zeros(ranks, np.int64)
    copies = []
    for p, drawn in zip(progs.classes, progs.draws()):
        a, everyone = p.actions, np.arange(len(p.ranks))
        place[p.ranks] = everyone
        volume = np.broadcast_to(p.volumes(drawn), (len(p.ranks), len(a)))
        comm, request = _sub_communicators(a, p.ranks, progs.sub_ids)
        local = np.where(a["vec_len"] > 0, np.cumsum(a["vec_len"]) - a["vec_len"], NONE)
        copies.append((a, volume, p.peers(everyone, ranks, grid), comm, request,
                       p.vector_rows(everyone, ranks, grid), local))
    stamps = list(zip(which.tolist(), place.tolist()))
    actions = np.concatenate([copies[k][0] for k, _ in stamps]) if ranks else \
        empty_actions(0)
    for column, field in ((1, "volume"), (2, "peer"), (3, "comm"), (4, "request")):
        if any(c[column] is not None for c in copies):
            actions[field] = np.concatenate([copies[k][column][i] if copies[k][column] is
                                             not None else copies[k][0][field]
                                             for k, i in stamps])
    actions["vec_off"] = np.concatenate([np.where(copies[k][6] >= 0, copies[k][6] + base, NONE)
                                         for (k, _), base in zip(stamps,
                                                                 vec_offsets[:-1].tolist())])
    vectors = np.concatenate([copies[k][5][i] for k, i in stamps] +
                             [np.zeros(0, np.int64)]).astype(np.int64)
    sig = None
    if all(c[3] is None and c[4] is None for c in copies):   # no communicator per rank
        sig = SS.signatures([(c[0], c[2], c[5]) for c in copies],
                            [p.ranks for p in progs.classes], which, ranks)
    return Extrapolated(actions, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
                        vectors, dict(progs.comms), meta=dict(progs.meta), signatures=sig)


def _sub_communicators(a: np.ndarray, ranks: np.ndarray, sub_ids: dict):
    """(comm, request) of a class's ranks, (ranks, actions), when its program names a
    cart_sub or comm_split label (each rank's communicator of that label, ``sub_ids``); else
    (None, None)."""
    if not GC.is_label(a["comm"]).any() and not GC.is_label(a["request"]).any():
        return None, None
    comm = np.tile(a["comm"], (len(ranks), 1))
    request = np.tile(a["request"], (len(ranks), 1))
    made = K.mask(K.NEW_COMM_KINDS)[a["kind"]]
    for label, ids in sub_ids.items():
        mine = ids[ranks][:, None]
        comm = np.where(comm == label, mine, comm)
        request = np.where(made & (request == label), mine, request)
    return comm, request


def _set_sources(a: np.ndarray, vec: np.ndarray, sources: np.ndarray) -> None:
    """Each sendrecv's source (its vector's first entry, where ``sources`` >= 0): rank 0's
    (a grid offset on a grid)."""
    starts = np.cumsum(a["vec_len"]) - a["vec_len"]
    has = sources >= 0
    vec[starts[has]] = sources[has]


def _set_cart_dims(a: np.ndarray, vec: np.ndarray, grid: GR.Grid) -> None:
    """cart_create's vector at the target: its extents and periods."""
    starts = np.cumsum(a["vec_len"]) - a["vec_len"]
    for k in np.flatnonzero((a["kind"] == K.CODE["cart_create"]) &
                            (a["vec_len"] == 2 * grid.ndims)):
        vec[starts[k]:starts[k] + 2 * grid.ndims] = list(grid.dims) + [int(p) for p in
                                                                       grid.periods]


#: A law steeper than p log2(p) fitted from this few scales ...
FEW_SCALES = 3
#: ... that takes its quantity more than this many times beyond the runs' largest value is
#: refused (--force takes it): three noisy values of a constant 21 us compute (1-3 ranks, the
#: third oversubscribed) fitted c0 + c1 * p^3 * log2(p)^2 within 0.49%, and made it 0.33 s, 15,600x,
#: at 64 ranks (helper QA, session 31).
LEAP = 10.0
#: ... where the runs' values spread less than this factor (an exact p^2 from 4, 8, 16 ranks
#: spreads 16x: taken; the 21 us compute 11%).
FLAT = 2.0


def _leaps(x: Parameter, ranks: int) -> float:
    """How many times a steep law from few scales takes ``x`` beyond its largest recorded
    value at ``ranks`` (0 when the law is not such a law, or stays within :data:`LEAP`)."""
    m = x.model
    if not isinstance(m, F.Model) or m.null_only or len(m.p) > FEW_SCALES \
            or not (m.i > 1 or (m.i == 1 and m.j >= 2)):
        return 0.0
    low, top = float(np.min(np.abs(m.values))), float(np.max(np.abs(m.values)))
    if top > FLAT * low:        # (values that do spread: a steep law may be what they show)
        return 0.0
    factor = abs(float(m(ranks))) / top if top > 0 else 0.0
    return factor if factor > LEAP else 0.0


def refusals(parameters: list[Parameter], ranks: int, largest: int) -> list[str]:
    """What the fits do not support: a target too far, fits over their LOO threshold, steep
    laws from few scales that leap far beyond the runs, laws that fall below what the
    quantity can be at the target (a negative volume, no loop)."""
    out = []
    if ranks > MAX_FACTOR * largest:
        out.append(f"{ranks} ranks is more than {MAX_FACTOR}x the largest run ({largest})")
    out += [f"rank class {x.rank_class}, {x.name}: {x.model} has a leave-one-out error of "
            f"{x.model.loo_error:.1%} (threshold {x.model.threshold:.0%})"
            for x in parameters if x.model.flagged and not (x.negligible or x.waiting)]
    out += [f"rank class {x.rank_class}, {x.name}: {x.model} takes it from at most "
            f"{np.max(np.abs(x.model.values)):.4g} in the runs to {x.model(ranks):.4g} at {ranks} "
            f"ranks ({_leaps(x, ranks):.0f}x): a law steeper than p log2(p) from "
            f"{len(x.model.p)} scales is more likely their noise"
            for x in parameters if _leaps(x, ranks) and not (x.negligible or x.waiting)]
    out += [f"rank class {x.rank_class}, {x.name}: {x.model} predicts {x.model(ranks):.4g} "
            f"at {ranks} ranks, below what it can be (taken as {x.at_target:.4g})"
            for x in parameters if x.clamped and not (x.negligible or x.waiting)]
    return out


def extrapolate(runs: list[ST.Run], ranks: int, scaling: str = "weak", force: bool = False,
                threshold: float = F.DEFAULT_THRESHOLD, dims: tuple | None = None,
                spread: bool = True, seed: int = 0):
    """Check, fit and build: (TraceColumns at ``ranks``, fitted parameters, what was
    overridden by ``force``).  On a grid the target grid is ``dims`` (--grid) or
    MPI_Dims_create's.  :func:`plan` without the trace in memory."""
    progs, parameters, refused = plan(runs, ranks, scaling, force, threshold, dims, spread,
                                      seed)
    return materialize(progs), parameters, refused


def plan(runs: list[ST.Run], ranks: int, scaling: str = "weak", force: bool = False,
         threshold: float = F.DEFAULT_THRESHOLD, dims: tuple | None = None,
         spread: bool = True, seed: int = 0):
    """Check and fit: (the class :class:`Programs` at ``ranks``, their provenance in its
    ``meta["extrapolated"]``; fitted parameters; what was overridden by ``force``), as
    :func:`extrapolate` builds them (:mod:`.direct` writes them without building)."""
    sizes = [r.nranks for r in runs]
    if len(set(sizes)) < len(sizes):
        twice = sorted({n for n in sizes if sizes.count(n) > 1})
        raise MinitraceError(f"several runs at {twice} ranks: give one run per scale")
    if len(sizes) < 3:
        raise MinitraceError("extrapolation needs runs at 3 or more different scales")
    if ranks < 1:
        raise MinitraceError(f"--ranks {ranks}: at least 1")
    grid = None
    if runs[0].grid is not None:
        try:
            grid = GR.target([r.grid for r in runs], ranks, dims)
        except MinitraceError as e:
            raise MinitraceError(f"{e}{_without_grid(runs)}") from None
    elif dims is not None:
        raise MinitraceError("--grid: the runs are not on a 2-D or 3-D grid (their peers are "
                             "a 1-D line's or fit no grid)")
    found = ST.check(runs, force)
    splits, split_notes, split_forced = SC.fit(runs, ranks, grid, force)
    ref = max(runs, key=lambda r: r.nranks)
    keys = list(class_ranks(ref, ranks, grid))
    notes, why = CO.compose(runs, keys)
    try:
        parameters, plans = fit_parameters(runs, ranks, scaling, threshold, keys, grid, why)
    except MinitraceError as e:
        raise MinitraceError(f"{e}{_without_grid(runs)}") from None
    offsets = {}
    if grid is not None:
        for key in keys:
            *offsets[key], said = GP.resolve(
                sorted((r for r in runs if key in r.classes), key=lambda r: r.nranks), key)
            notes += said
    refused = found + split_forced + PM.sparse(runs) + \
        refusals(parameters, ranks, max(r.nranks for r in runs))
    if refused and not force:
        raise MinitraceError("not extrapolated (--force to extrapolate anyway):\n  "
                             + "\n  ".join(refused))
    progs = programs(runs, ranks, plans, grid, offsets, spread, seed, splits)
    PM.per_member(progs)
    agreed = AG.agree(progs)
    progs.meta["extrapolated"] = {
        "from": [os.path.abspath(r.path) for r in runs], "ranks": [r.nranks for r in runs],
        "target": ranks, "scaling": scaling, "forced": refused,
        "spread": f"drawn from the largest run's (seed {seed})" if spread else "none: means",
        "grid": None if grid is None else {"dims": list(grid.dims),
                                           "periods": list(grid.periods), "notes": notes},
        "splits": split_notes,
        # calls whose size became their matching send's or receive's (:mod:`.agree`)
        "sizes_agreed": agreed,
        "models": [{"class": x.rank_class, "parameter": x.name, "model": str(x.model),
                    "loo_error": x.model.loo_error, "value": x.at_target,
                    "interval_95": list(x.interval(ranks))}
                   for x in parameters]}
    return progs, parameters, refused


def _without_grid(runs: list[ST.Run]) -> str:
    """Why the runs are not one program without their grid either, when no run records it and
    without it every rank of the largest is a class of its own (public HPL at 2, 4, 6, 8
    ranks: its partners at 8 are neighbours on 2x2x2, and its grid positions were refused as
    seen in one run: "record scales whose grid has it"); else empty."""
    if runs[0].grid is None or any(GR.recorded(r.data) is not None for r in runs):
        return ""
    plain = [ST.load(r.path, r.data) for r in runs]
    ref = max(plain, key=lambda r: r.nranks)
    found = ST.differences(plain, peers=False)
    return "; the grids were inferred from the peers (no run records a cart_create), and " \
        f"without one the runs are not one program either: {found[0]}" \
        if found and ST.each_its_own(ref) else ""


def write(path: str, data: TraceColumns) -> None:
    """The extrapolated trace, compressed (its provenance in the file's ``extrapolated``)."""
    meta = dict(data.meta)
    meta["extrapolated"] = json.dumps(meta["extrapolated"])
    data.meta = meta
    write_compressed(path, data, volumes="exact", sig=getattr(data, "signatures", None))


def print_grid(provenance: dict) -> None:
    """The target grid and how directions were found, when the program is on one; the laws
    of each comm_split's color and key."""
    if isinstance(provenance, (str, bytes)):
        provenance = json.loads(provenance)
    for note in provenance.get("splits", []):
        print(f"note: {note}")
    grid = provenance.get("grid")
    if grid:
        print("grid: " + str(GR.Grid(tuple(grid["dims"]), tuple(grid["periods"]))))
        for note in grid["notes"]:
            print(f"note: {note}")


def extrapolation_line(stored) -> str:
    """How ``info`` says a file was extrapolated (its ``extrapolated`` metadata)."""
    e = json.loads(stored) if isinstance(stored, (str, bytes)) else stored
    text = (f"extrapolated: {e['target']} ranks, {e['scaling']} scaling, from runs at "
            f"{e['ranks']} ranks ({', '.join(e['from'])}); {len(e['models'])} fitted parameters")
    if e.get("grid"):
        text += "; grid " + str(GR.Grid(tuple(e["grid"]["dims"]), tuple(e["grid"]["periods"])))
    return text + (f"; FORCED past {len(e['forced'])} refusals" if e["forced"] else "")
