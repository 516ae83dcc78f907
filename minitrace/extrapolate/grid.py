"""Cartesian process grids: the grid a run's ranks form (from its ``cart_create`` record, else
from the peers its ranks talk to), the grid ``MPI_Dims_create`` would make at another scale,
and peers as grid offsets, so that a 2-D or 3-D stencil's ``+-px`` neighbours stay the same
neighbours when ``px`` changes with p.

Ranks are laid out as ``MPI_Cart_create`` lays them without reordering: row-major, the last
dimension varying fastest.  An offset ``(d0, d1, d2)`` is stored as one integer
(:func:`encode`), in the place of a rank-relative peer.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import numpy as np

from .. import kinds as K
from ..errors import MinitraceError

#: largest offset along one dimension an encoded peer can hold
REACH = 64
_BASE = 2 * REACH + 1
#: where a rank sits along one non-periodic dimension
LOW, MIDDLE, HIGH, ALONE = "lo", "mid", "hi", "one"


@dataclass(frozen=True)
class Grid:
    """A Cartesian grid: its extents and which dimensions wrap around."""

    dims: tuple
    periods: tuple

    @property
    def size(self) -> int:
        return int(np.prod(self.dims))

    @property
    def ndims(self) -> int:
        return len(self.dims)

    def __str__(self) -> str:
        return "x".join(map(str, self.dims)) + " (" + ", ".join(
            "periodic" if p else "open" for p in self.periods) + ")"

    def coords(self, ranks) -> np.ndarray:
        """(..., ndims) coordinates of ranks (any shape).  Computed on the flat ranks:
        numpy 2.4's ``unravel_index`` of an (n, 1) array is wrong past its first 8,192
        elements (16,384 ranks had peers one rank off)."""
        ranks = np.asarray(ranks, np.int64)
        flat = np.unravel_index(ranks.ravel(), self.dims)
        return np.stack([x.reshape(ranks.shape) for x in flat], axis=-1)

    def rank(self, coords: np.ndarray) -> np.ndarray:
        coords = np.asarray(coords)
        flat = coords.reshape(-1, coords.shape[-1])
        return np.ravel_multi_index(tuple(flat.T), self.dims).reshape(coords.shape[:-1])

    def offsets(self, ranks, peers) -> np.ndarray:
        """Grid offsets from ranks to peers, the nearer image along periodic dimensions
        (in ``(-d/2, d/2]``)."""
        diff = self.coords(peers) - self.coords(ranks)
        for k, (d, p) in enumerate(zip(self.dims, self.periods)):
            if p:
                diff[..., k] = (diff[..., k] + (d - 1) // 2) % d - (d - 1) // 2
        return diff

    def shift(self, ranks: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The ranks at ``offsets`` from ``ranks`` (broadcast), wrapped along periodic
        dimensions; MinitraceError when one falls off an open one."""
        c = self.coords(ranks) + offsets
        for k, (d, p) in enumerate(zip(self.dims, self.periods)):
            if p:
                c[..., k] %= d
            elif ((c[..., k] < 0) | (c[..., k] >= d)).any():
                raise MinitraceError(f"a peer falls off the open dimension {k} of grid {self}")
        return self.rank(c)

    def positions(self, ranks) -> list[str]:
        """Each rank's position class: per open dimension lo, mid, hi (or one when its extent
        is 1), ``*`` along periodic ones; e.g. ``(lo,mid)`` is on the low edge of dimension 0."""
        c = self.coords(ranks)
        cols = []
        for k, (d, p) in enumerate(zip(self.dims, self.periods)):
            x = c[:, k]
            cols.append(np.full(len(x), "*", object) if p else
                        np.where(d == 1, ALONE, np.where(x == 0, LOW,
                                                         np.where(x == d - 1, HIGH, MIDDLE))))
        return ["(" + ",".join(row) + ")" for row in zip(*cols)]


def describe_position(key: str) -> str:
    """``(lo,mid)`` -> ``edge``: how many open dimensions it is on the boundary of."""
    parts = key.strip("()").split(",")
    bound = sum(x in (LOW, HIGH, ALONE) for x in parts)
    if bound == 0:
        return "interior" if any(x == MIDDLE for x in parts) else "every rank"
    if len(parts) == 1:
        return "end"
    names = {1: "face" if len(parts) == 3 else "edge", 2: "edge" if len(parts) == 3 else
             "corner", 3: "corner"}
    return names[bound]


def encode(offsets: np.ndarray) -> np.ndarray:
    """Offsets (n, ndims), each within +-REACH, as non-negative integers."""
    offsets = np.asarray(offsets, np.int64)
    if (np.abs(offsets) > REACH).any():
        raise MinitraceError(f"a grid offset beyond +-{REACH} along a dimension")
    return ((offsets + REACH) * _BASE ** np.arange(offsets.shape[-1])).sum(axis=-1)


def decode(codes, ndims: int) -> np.ndarray:
    codes = np.asarray(codes, np.int64)
    return (codes[..., None] // _BASE ** np.arange(ndims)) % _BASE - REACH


def factorizations(n: int, ndims: int, largest: int | None = None):
    """Every way to write n as ndims non-increasing factors."""
    if ndims == 1:
        if largest is None or n <= largest:
            yield (n,)
        return
    for f in range(min(n, largest or n), 0, -1):
        if n % f == 0:
            for rest in factorizations(n // f, ndims - 1, f):
                yield (f,) + rest


def dims_create(nnodes: int, ndims: int) -> tuple:
    """The grid ``MPI_Dims_create(nnodes, ndims, {0...})`` makes: the non-increasing factors
    with the smallest spread, then the largest smallest factor, then the smallest sum of
    squares (the rule MPICH follows; tests/test_extrapolate_grid.py checks it against
    mpi4py's ``Compute_dims``)."""
    if nnodes < 1 or ndims < 1:
        raise MinitraceError(f"dims_create({nnodes}, {ndims}): both must be >= 1")
    return min(factorizations(nnodes, ndims),
               key=lambda c: (max(c) - min(c), -min(c), sum(x * x for x in c)))


def parse(text: str) -> tuple:
    """``--grid 8x4x4`` -> (8, 4, 4)."""
    if not re.fullmatch(r"[1-9]\d*(x[1-9]\d*){1,2}", text or ""):
        raise MinitraceError(f"--grid {text!r}: AxB or AxBxC, positive integers")
    return tuple(int(x) for x in text.split("x"))


def recorded(data) -> Grid | None:
    """The grid of the trace's ``cart_create`` (its vector ``[dims..., periods...]``) when it
    spans the world in rank order, else None."""
    a = data.actions
    rows = np.flatnonzero(a["kind"] == K.CODE["cart_create"])
    if not len(rows):
        return None
    vec = data.vector(int(rows[0]))
    if len(vec) < 2 or len(vec) % 2:
        return None
    n = len(vec) // 2
    grid = Grid(tuple(int(x) for x in vec[:n]), tuple(bool(x) for x in vec[n:]))
    members = data.comms.get(int(a["request"][rows[0]]))
    if grid.size != data.nranks or members is None or \
            not np.array_equal(members, np.arange(data.nranks)):
        return None
    return grid


def _pairs(data, relative: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct (rank, peer) pairs of the actions with a rank-relative peer."""
    rank = data.rank_of()[relative].astype(np.int64)
    peer = data.actions["peer"][relative].astype(np.int64)
    key = np.unique(rank * data.nranks + peer)
    return key // data.nranks, key % data.nranks


def _fits(dims: tuple, ranks: np.ndarray, peers: np.ndarray):
    """The periods a grid needs for every pair to be a nearest neighbour (offsets within
    +-1 per dimension), or None when some pair is not one."""
    grid = Grid(dims, (False,) * len(dims))
    raw = grid.coords(peers) - grid.coords(ranks)
    periods = []
    for k, d in enumerate(dims):
        far = np.abs(raw[:, k]) > 1
        wrapped = (raw[:, k] + (d - 1) // 2) % d - (d - 1) // 2
        if (np.abs(wrapped[far]) > 1).any():
            return None
        periods.append(bool(far.any()))
    return tuple(periods)


def infer(data, relative: np.ndarray, ndims: int | None = None) -> Grid | None:
    """The grid a run's nearest-neighbour peers fit, or None.  ``ndims`` None: the fewest dimensions from 2 on that fit, None when the peers
    are a 1-D line's (+-1) or fit no 2-D or 3-D grid.  Among the grids that fit,
    ``MPI_Dims_create``'s comes first."""
    P = data.nranks
    ranks, peers = _pairs(data, relative)
    if ndims is None:
        off = (peers - ranks) % max(P, 1)
        if np.all((off <= 1) | (off == P - 1)):
            return None
    for n in ([ndims] if ndims else [2, 3]):
        first = dims_create(P, n)
        others = (c for f in factorizations(P, n)
                  for c in sorted(set(itertools.permutations(f)), reverse=True) if c != first)
        fitting = [Grid(dims, periods) for dims in itertools.chain([first], others)
                   for periods in [_fits(dims, ranks, peers)] if periods is not None]
        if fitting:     # the fewest wrapped dimensions: x-fastest ranks on another order's
            return min(fitting, key=lambda g: sum(g.periods))   # grid need some to wrap
    return None


def run_grids(paths: list, datas: list, relatives: list, notes: list | None = None) -> list:
    """The grid of each run (None for all: a 1-D program, left to the rank-relative peers).
    A recorded ``cart_create`` wins (a 1-D one too); else the grid is inferred, its number of
    dimensions from the largest run's record or peers; where no run has a record and one fits
    no grid of as many dimensions as the largest run's inferred one, that one was a
    coincidence (set-up partners that happen to be a small grid's neighbours): no grid for
    any run, and a line in ``notes`` says why.  A dimension is periodic when some run
    shows it wrap (only extents of 3 or more can show it); one of extent 2 at most in every run is periodic when its rank
    sends as many calls to its one neighbour as a rank in the middle of a longer dimension
    to both of its own, else open."""
    largest = max(range(len(datas)), key=lambda k: datas[k].nranks)
    found = [recorded(d) for d in datas]
    if all(g is not None for g in found):
        if len({g.ndims for g in found}) > 1:
            raise MinitraceError("the runs' cart_create records have different numbers of "
                                 "dimensions: " + ", ".join(map(str, found)))
        return found
    guess = found[largest] or infer(datas[largest], relatives[largest])
    if guess is None:
        return [None] * len(datas)
    ndims = guess.ndims
    grids = []
    for path, data, rel, rec in zip(paths, datas, relatives, found):
        g = rec if rec is not None and rec.ndims == ndims else None
        if g is None:
            fitted = infer(data, rel, ndims)
            if fitted is None and all(f is None for f in found):
                if notes is not None:       # (a coincidence: Nekbone's crystal router at 8)
                    notes.append(f"the largest run's peers fit a {guess} grid but those of "
                                 f"{path} ({data.nranks} ranks) fit no {ndims}-D grid: no "
                                 "grid, peers taken relative to the rank")
                return [None] * len(datas)
            if fitted is None:
                raise MinitraceError(f"{path} ({data.nranks} ranks): "
                                     f"its peers are not nearest neighbours on any {ndims}-D grid "
                                     "(the largest run's are)")
            g = fitted
        grids.append(g)
    periods = [any(g.periods[k] for g in grids) for k in range(ndims)]
    for k in range(ndims):
        if max(g.dims[k] for g in grids) <= 2:
            periods[k] = any(_wraps_at_two(d, rel, g, k)
                             for d, rel, g in zip(datas, relatives, grids))
    return [g if recorded_ is not None else Grid(g.dims, tuple(periods))
            for g, recorded_ in zip(grids, found)]


def _wraps_at_two(data, relative: np.ndarray, grid: Grid, k: int) -> bool:
    """Whether dimension k, of extent 2, is periodic: then a rank sends to its one
    neighbour along k as many calls as a rank in the middle of a longer dimension j sends
    to both of its own (both directions reach the same rank); open, half as many."""
    longer = [j for j, d in enumerate(grid.dims) if d >= 3]
    if grid.dims[k] != 2 or not longer:
        return False
    j = longer[0]
    rank = data.rank_of()[relative]
    off = Grid(grid.dims, (False,) * grid.ndims).offsets(rank, data.actions["peer"][relative])
    middle = np.zeros(grid.ndims, np.int64)
    middle[j] = 1
    r_mid = int(grid.rank(middle))
    others = np.delete(off, [j, k], axis=1)
    quiet = np.abs(others).sum(axis=1) == 0
    along_j = (rank == r_mid) & quiet & (np.abs(off[:, j]) == 1) & (off[:, k] == 0)
    along_k = (rank == 0) & quiet & (off[:, k] == 1) & (off[:, j] == 0)
    return bool(along_k.sum()) and along_k.sum() == along_j.sum()


def target(grids: list, ranks: int, dims: tuple | None = None) -> Grid:
    """The grid at the target: ``dims`` (--grid) or MPI_Dims_create's, with the runs'
    periods; its extents in increasing order when every run's are (ranks numbered x fastest
    on MPI_Dims_create's grid: 4x2x2 is the C-order grid 2x2x4).  Refused where it spans a
    dimension along which every run has one rank (no run made its calls along it)."""
    ref = max(grids, key=lambda g: g.size)
    if dims is None:
        dims = dims_create(ranks, ref.ndims)
        rising = [tuple(sorted(dims_create(g.size, g.ndims))) for g in grids]
        if all(g.dims == r for g, r in zip(grids, rising)) and \
                any(g.dims != dims_create(g.size, g.ndims) for g in grids):
            dims = tuple(sorted(dims))      # MPI_Dims_create's extents, x fastest (HPCG's)
    if len(dims) != ref.ndims or int(np.prod(dims)) != ranks:
        raise MinitraceError(f"--grid {'x'.join(map(str, dims))}: the runs' grids have "
                             f"{ref.ndims} dimensions and the target {ranks} ranks")
    flat = [k for k in range(ref.ndims) if dims[k] > 1 and all(g.dims[k] == 1 for g in grids)]
    if flat:
        # public UK-MAC TeaLeaf at 2, 3, 5 ranks (2x1, 3x1, 5x1) -> 8 (4x2): no halo along y
        # and the reduce's root receiving nothing, written without a word
        runs = ", ".join("x".join(map(str, g.dims)) for g in grids)
        raise MinitraceError(
            f"the target grid {'x'.join(map(str, dims))} spans dimension(s) "
            f"{', '.join(str(k + 1) for k in flat)} along which every run's grid ({runs}) has "
            f"one rank: no run made its calls along it (record runs that span it, or name a "
            f"grid the runs cover with --grid)")
    return Grid(tuple(dims), ref.periods)
