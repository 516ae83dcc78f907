"""Communicators made by ``MPI_Comm_split(comm, color, key)`` whose color and key are laws of
the rank: NPB FT splits its world into the rows and columns of its process grid (color and
key its grid coordinates), most codes pass key = rank.  The recorded ``[color, key]`` differs
on every rank, and so do the ids of the communicators made, which made every rank a class of
its own (refused).  Here a rank's n-th split is named by what it is, the same on every rank
and at every scale: its vector a placeholder, the communicator it makes (and every call on
it) a label; the recorded values are kept per rank.  Across the runs each of color and key
must be one law of the rank (:class:`Law`); at the target the law gives every rank its
values, and the ranks of one color, ordered by key then rank, one communicator.  The root of
a rooted collective on one (a world rank, another in each row) is named by its place in the
communicator, counted from both ends (0 its first rank, -1 its last), and made the rank at
that place of each rank's communicator at the target.

A law is ``s * f(r) + b`` (``s`` = +-1, ``b`` the same at every scale) where ``f`` is, in
order of preference: 0 (a constant), the rank, or the row-major index of some consecutive
coordinates (one coordinate, or a row's) of the rank on a grid: the run's own grid
(:mod:`.grid`), ``MPI_Dims_create(P, 2)``'s, one whose first or last extent is the same at
every scale (``q x P/q``; ``P/q x q``, rounded up: ``r % q`` and ``r // q`` whatever P is, a
parity), or ``MPI_Dims_create(P, 3)``'s.  A key whose values are no law may be one by its
order (MPI uses only that): ``P-1-r`` orders each color's ranks as ``-r`` does.  The first
law that gives every rank's value in every run is taken; when it is a coordinate and others
that fit the runs too make other communicators at the target, the split is refused (the
runs cannot tell which: at 2, 3, 4 ranks a row of MPI_Dims_create(P, 2)'s grid is one of
(P, 3)'s too, at 2, 4, 8 halves of the world are coordinate 0 of 2 x P/2 and of (P, 3)'s),
saying the smallest scale that tells them apart; ``--force`` takes the first.  A constant
or the rank is taken over coordinates that coincide with it in the runs."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .. import kinds as K
from ..compress import signatures as SG
from ..errors import MinitraceError
from . import grid as GR
from . import grid_comms as GC

#: labels of split communicators: SPLIT_BASE + n, the rank's n-th split (above cart_sub's)
SPLIT_BASE = GC.LABEL_BASE + (1 << 20)
#: a split's vector in the signatures: [MARK, n] in place of [color, key]
MARK = -(1 << 40)
#: roots on split communicators: ROOT + place (above cart_sub's roots, grid_comms.ROOT_BASE)
ROOT = 1 << 30
_ROOTED = K.mask(K.ROOTED)
_SPLIT = K.CODE["comm_split"]
_ENTRIES = ("color", "key")


@dataclass
class Splits:
    """A run's splits: per ordinal n (the rank's n-th split), each rank's ``[color, key]``
    (``values[n]``, (P, 2)), which ranks made it (``made[n]``) and the communicator each
    split (``parents[n]``, ids as recorded)."""

    values: dict = field(default_factory=dict)
    made: dict = field(default_factory=dict)
    parents: dict = field(default_factory=dict)


def is_split_label(values) -> np.ndarray:
    return (np.asarray(values) >= SPLIT_BASE) & (np.asarray(values) < SPLIT_BASE + (1 << 20))


def rewrite(data, sig: SG.Signatures) -> tuple[SG.Signatures, dict, Splits]:
    """(signatures with each rank's n-th comm_split named ``[MARK, n]``, its communicator
    ``SPLIT_BASE + n`` wherever it is used, the roots of rooted collectives on it their
    places in it; {communicator id: label}; the recorded :class:`Splits`).  Unchanged
    without a comm_split of ``[color, key]``."""
    a = data.actions
    rows = np.flatnonzero((a["kind"] == _SPLIT) & (a["vec_len"] == 2))
    out = Splits()
    if not len(rows):
        return sig, {}, out
    rank = data.rank_of(rows)
    first = np.searchsorted(rank, rank)                    # rows are rank-major
    ordinal = np.arange(len(rows)) - first
    labels: dict = {}
    P = data.nranks
    for row, r, n in zip(rows.tolist(), rank.tolist(), ordinal.tolist()):
        if n not in out.values:
            out.values[n] = np.zeros((P, 2), np.int64)
            out.made[n] = np.zeros(P, bool)
            out.parents[n] = set()
        out.values[n][r] = data.vector(row)
        out.made[n][r] = True
        out.parents[n].add(int(a["comm"][row]))
        cid = int(a["request"][row])
        if cid >= 0:
            labels.setdefault(cid, SPLIT_BASE + n)
    table = sig.table[sig.ids]
    cols = {f: np.ascontiguousarray(table[f]) for f in SG.SIGNATURE_DTYPE.names}
    rooted = np.flatnonzero(_ROOTED[cols["kind"]] & np.isin(cols["comm"], list(labels)) &
                            (cols["peer"] >= 0))
    cols["peer"] = cols["peer"].copy()
    pairs, which = np.unique(np.stack([cols["comm"][rooted], cols["peer"][rooted]], axis=1),
                             axis=0, return_inverse=True)
    for k, (cid, root) in enumerate(pairs.tolist()):       # each root of each communicator
        members = np.asarray(data.comms.get(cid, ()))
        at = np.flatnonzero(members == root)
        if len(at):
            m, i = len(members), int(at[0])
            cols["peer"][rooted[which.ravel() == k]] = ROOT + (i if i < (m + 1) // 2 else i - m)
    cols["comm"] = GC.relabel(cols["comm"], labels)
    made = K.mask(K.NEW_COMM_KINDS)[cols["kind"]]
    cols["request"] = np.where(made, GC.relabel(cols["request"], labels), cols["request"])
    nvec = len(sig.vec_offsets) - 1
    count = int(ordinal.max()) + 1
    cols["vec"] = cols["vec"].copy()
    cols["vec"][rows] = nvec + ordinal
    contents = np.array([[SG.VEC_RAW, MARK, n] for n in range(count)], np.int64).ravel()
    off = np.concatenate([sig.vec_offsets, sig.vec_offsets[-1] + 3 * np.arange(1, count + 1)])
    table, ids = SG.factorize(cols, len(sig.ids))
    return replace(sig, table=table, ids=ids, vec_offsets=off,
                   vec_values=np.concatenate([sig.vec_values, contents])), labels, out


@dataclass(frozen=True)
class Law:
    """``sign * f(rank) + offset``; ``f`` the index of coordinates ``lo:hi`` (row-major) on
    the grid ``family`` names at P ranks (:meth:`dims`): ``const`` (f = 0), ``rank``,
    ``grid`` (the run's), ``dims2``/``dims3`` (MPI_Dims_create's), ``first``/``last`` (an
    extent ``q`` fixed first or last); ``order``: a key's law by its order only."""

    family: str
    lo: int = 0
    hi: int = 0
    q: int = 0
    sign: int = 1
    offset: int = 0
    order: bool = False

    def dims(self, P: int, grid: GR.Grid | None) -> tuple | None:
        """The extents of the law's grid at P ranks (None: it has none there)."""
        if self.family == "grid":
            return None if grid is None else tuple(grid.dims)
        if self.family in ("dims2", "dims3"):
            return GR.dims_create(P, int(self.family[-1]))
        if self.family == "last":                  # r % q and r // q whatever P is
            return (-(-P // self.q), self.q)
        return None if P % self.q else (self.q, P // self.q)

    def feature(self, ranks: np.ndarray, P: int, grid: GR.Grid | None) -> np.ndarray | None:
        ranks = np.asarray(ranks, np.int64)
        if self.family == "const":
            return np.zeros_like(ranks)
        if self.family == "rank":
            return ranks
        dims = self.dims(P, grid)
        if dims is None:
            return None
        below = int(np.prod(dims[self.hi:]))
        return (ranks // below) % int(np.prod(dims[self.lo:self.hi]))

    def __call__(self, ranks, P: int, grid: GR.Grid | None) -> np.ndarray | None:
        f = self.feature(ranks, P, grid)
        return None if f is None else self.sign * f + self.offset

    def __str__(self) -> str:
        if self.family == "const":
            return str(self.offset)
        if self.family == "rank":
            f = "rank"
        else:
            where = {"grid": "the run's grid", "dims2": "MPI_Dims_create(P, 2)",
                     "dims3": "MPI_Dims_create(P, 3)", "first": f"{self.q} x P/{self.q}",
                     "last": f"P/{self.q} x {self.q}"}[self.family]
            coords = f"coordinate {self.lo}" if self.hi == self.lo + 1 else \
                f"index of coordinates {self.lo}-{self.hi - 1}"
            f = f"{coords} on {where}"
        sign = "-" if self.sign < 0 else ""
        text = f"{sign}{f}" + (f" {'+' if self.offset > 0 else '-'} {abs(self.offset)}"
                               if self.offset else "")
        return f"in the order of {text}" if self.order else text


def _candidates(runs: list) -> list[Law]:
    """Every law's form (offset 0), in order of preference."""
    forms = [Law("const"), Law("rank")]
    sizes = [r.nranks for r in runs]
    common = [q for q in range(2, min(sizes) + 1) if all(p % q == 0 for p in sizes)]
    grids = ([("grid", 0, runs[0].grid.ndims)] if runs[0].grid is not None else []) + \
        [("dims2", 0, 2)] + [("first", q, 2) for q in common] + \
        [("last", q, 2) for q in range(2, min(sizes) + 1)] + [("dims3", 0, 3)]
    for family, q, ndims in grids:
        for lo in range(ndims):
            for hi in range(lo + 1, ndims + 1):
                if (lo, hi) != (0, ndims):         # all of them: the rank
                    forms.append(Law(family, lo, hi, q))
    return [replace(f, sign=s) for f in forms for s in ((1,) if f.family == "const"
                                                        else (1, -1))]


def _fits(form: Law, runs: list, n: int, k: int) -> Law | None:
    """``form`` with the offset that gives entry ``k`` of every rank's split ``n`` in every
    run, or None."""
    offset = None
    for run in runs:
        made = run.splits.made[n]
        ranks = np.flatnonzero(made)
        f = form(ranks, run.nranks, run.grid)
        if f is None:
            return None
        rest = run.splits.values[n][ranks, k] - f
        if offset is None:
            offset = int(rest[0])
        if not (rest == offset).all():
            return None
    return replace(form, offset=offset)


@dataclass
class Split:
    """What a split is at the target: its laws, each rank's ``[color, key]`` and, per rank,
    the index of its communicator in ``members`` (-1: none)."""

    laws: tuple
    values: np.ndarray
    comm: np.ndarray
    members: list


def _in_order(form: Law, runs: list, n: int) -> Law | None:
    """``form`` as a key's law of order (MPI uses only the order of the keys): in every run
    it orders the ranks of each color of split ``n`` as their keys do (ties by rank), or
    None."""
    for run in runs:
        ranks = np.flatnonzero(run.splits.made[n])
        f = form(ranks, run.nranks, run.grid)
        if f is None:
            return None
        color, key = run.splits.values[n][ranks].T
        if not np.array_equal(np.lexsort((ranks, key, color)), np.lexsort((ranks, f, color))):
            return None
    return replace(form, order=True)


def _made(law: Law, k: int, P: int, grid: GR.Grid | None, color: Law | None) -> bytes | None:
    """What ``law`` of entry ``k`` makes at ``P`` ranks: a color its values, a key the order
    of the ranks by ``color``'s values then it (None: it or the color has no value there)."""
    everyone = np.arange(P)
    v = law(everyone, P, grid)
    if v is None or k == 0:
        return None if v is None else v.tobytes()
    c = color(everyone, P, grid)
    return None if c is None else np.lexsort((everyone, v, c)).tobytes()


def _apart(laws: list, k: int, runs: list, ranks: int, color: Law | None) -> int:
    """The smallest scale not recorded below the target (else the target) where ``laws``
    make all other communicators: a run there would tell them apart (the run's own grid
    known there only when it is MPI_Dims_create's in every run)."""
    recorded = {r.nranks for r in runs}
    grids = [r.grid for r in runs if r.grid is not None]
    created = len(grids) == len(runs) and all(
        tuple(g.dims) == GR.dims_create(g.size, g.ndims) for g in grids)
    for P in range(2, min(ranks, 4096)):
        grid = GR.Grid(GR.dims_create(P, grids[0].ndims), grids[0].periods) if created \
            else None
        made = [_made(law, k, P, grid, color) for law in laws]
        if P not in recorded and None not in made and len(set(made)) == len(made):
            return P
    return ranks


def fit(runs: list, ranks: int, grid: GR.Grid | None,
        force: bool = False) -> tuple[dict, list[str], list[str]]:
    """({n: :class:`Split` at ``ranks`` on the target ``grid``}, notes, what ``force``
    overrode); MinitraceError naming the runs when a split is made in some run only, splits
    a communicator that is not the world, leaves some ranks out (MPI_UNDEFINED), has a color
    or key (its order) that no law gives, or one that several laws give in every run which
    make other communicators at the target (unless ``force``: the first is taken)."""
    ordinals = sorted({n for r in runs for n in r.splits.values})
    names = ", ".join(r.path for r in runs)
    out, notes, forced = {}, [], []
    forms = _candidates(runs) if ordinals else []
    everyone = np.arange(ranks)
    for n in ordinals:
        what = f"comm_split {n + 1} of each rank"
        lacking = [r.path for r in runs if n not in r.splits.values]
        if lacking:
            raise MinitraceError(f"{', '.join(lacking)}: no {what} (made in the other runs)")
        for run in runs:
            bad = sorted(c for c in run.splits.parents[n] if c != 0 and not np.array_equal(
                run.data.comms.get(c, ()), np.arange(run.nranks)))
            if bad:
                raise MinitraceError(f"{run.path}: {what} splits communicator {bad[0]}, not "
                                     "the world: splits of sub-communicators are not "
                                     "extrapolated")
            color = run.splits.values[n][run.splits.made[n], 0]
            if (color < 0).any() and (color >= 0).any():
                raise MinitraceError(
                    f"{run.path}: the color of {what} is MPI_UNDEFINED (negative) on some "
                    f"ranks only (rank {int(np.flatnonzero(run.splits.made[n])[color < 0][0])}"
                    "): splits that leave ranks out are not extrapolated")
        laws = []
        for k, entry in enumerate(_ENTRIES):
            found = [law for law in (_fits(f, runs, n, k) for f in forms) if law is not None]
            if not found and k == 1:            # MPI uses only the keys' order
                found = [law for law in (_in_order(f, runs, n) for f in forms
                                         if f.family != "const") if law is not None]
            if not found:
                alone = [r.path for r in runs
                         if not any(_fits(f, [r], n, k) for f in forms)]
                raise MinitraceError(
                    f"{', '.join(alone) or names}: the {entry} of {what} is "
                    f"{'no' if alone else 'not one'} law of the rank or its grid coordinates"
                    f"{'' if alone else ' at every scale'} (e.g. "
                    f"{runs[-1].splits.values[n][:8, k].tolist()} at {runs[-1].nranks} "
                    "ranks): not extrapolated")
            chosen = found[0]
            color = laws[0] if k else None
            want = _made(chosen, k, ranks, grid, color)
            if want is None:
                raise MinitraceError(f"{names}: the {entry} of {what} is {chosen}, which "
                                     f"has no value at {ranks} ranks")
            rivals = {}                         # one law per other outcome at the target
            for law in ([] if chosen.family in ("const", "rank") else found[1:]):
                made = _made(law, k, ranks, grid, color)
                if made is not None and made != want:
                    rivals.setdefault(made, law)
            other = list(rivals.values())
            if other:
                at = _apart([chosen] + other, k, runs, ranks, color)
                count = "" if k else " (" + " and ".join(
                    str(len(np.unique(v[v >= 0]))) for v in (law(everyone, ranks, grid)
                                                             for law in [chosen] + other[:2])) \
                    + " communicators)"
                line = (f"{names}: the {entry} of {what} may be "
                        f"{' or '.join(str(law) for law in [chosen] + other[:2])}: each fits "
                        f"every run, but they make other communicators at {ranks} ranks"
                        f"{count}; a run at {at} ranks would tell them apart")
                if not force:
                    raise MinitraceError(f"{line} (--force takes {chosen})")
                forced.append(line)
            notes.append(f"{what}: {entry} {'= ' if not chosen.order else ''}{chosen}" + (
                " (its values are no law, its order is: these values written)"
                if chosen.order else "") + (
                f" (taken by --force: the runs fit {', '.join(map(str, other[:3]))} too, "
                f"which make other communicators at {ranks} ranks)" if other else ""))
            laws.append(chosen)
        values = np.stack([law(everyone, ranks, grid) for law in laws], axis=1)
        out[n] = _communicators(tuple(laws), values)
    return out, notes, forced


def _communicators(laws: tuple, values: np.ndarray) -> Split:
    """The communicators a split of these ``[color, key]`` makes: one per color (none for a
    negative one, MPI_UNDEFINED), its ranks by key then rank."""
    color, key = values[:, 0], values[:, 1]
    ranks = np.flatnonzero(color >= 0)
    order = ranks[np.lexsort((ranks, key[ranks], color[ranks]))]
    colors, index = np.unique(color[order], return_index=True)
    comm = np.full(len(values), -1, np.int64)
    comm[ranks] = np.searchsorted(colors, color[ranks])
    members = [m.astype(np.int32) for m in np.split(order, index[1:])] if len(order) else []
    return Split(laws, values, comm, members)


def place_roots(peers: np.ndarray, comm: np.ndarray, ranks: np.ndarray,
                splits: dict) -> np.ndarray:
    """``peers`` (len(ranks), actions) with each root code on a split's communicator (its
    label in ``comm``, the class's communicator column) made the world rank at that place
    of each rank's communicator of that split at the target (``splits``, :func:`fit`)."""
    if not peers.size:
        return peers
    coded = np.flatnonzero((peers[0] >= ROOT - (1 << 20)) & is_split_label(comm))
    if not len(coded):
        return peers
    out = peers.copy()
    for j in coded.tolist():
        split = splits[int(comm[j]) - SPLIT_BASE]
        sizes = np.array([len(m) for m in split.members], np.int64)
        start = np.cumsum(sizes) - sizes
        mine = split.comm[ranks]
        out[:, j] = np.concatenate(split.members)[start[mine] + (int(peers[0, j]) - ROOT) %
                                                  sizes[mine]]
    return out


def _places(values: np.ndarray) -> np.ndarray:
    """(P, 2): each rank's color and place in its communicator (by key then rank; -1 for a
    negative color, which makes none)."""
    color, key = values[:, 0], values[:, 1]
    order = np.lexsort((np.arange(len(values)), key, color))
    first = np.searchsorted(color[order], color[order])
    place = np.empty(len(values), np.int64)
    place[order] = np.arange(len(values)) - first
    return np.stack([color, np.where(color < 0, -1, place)], axis=1)


def differences(a, b) -> list[str]:
    """Where two runs at one scale make other splits: a rank's color, or its place in its
    communicator (the keys' values aside, MPI uses only their order)."""
    out = []
    for n in sorted(set(a.splits.values) | set(b.splits.values)):
        x, y = a.splits.values.get(n), b.splits.values.get(n)
        if x is None or y is None:
            out.append(f"comm_split {n + 1} of each rank: made in one run only")
            continue
        apart = np.flatnonzero((_places(x) != _places(y)).any(axis=1))
        if len(apart):
            out.append(f"comm_split {n + 1} of each rank: [color, key] differ (its color or "
                       f"its place in its communicator): rank {int(apart[0])}")
    return out
