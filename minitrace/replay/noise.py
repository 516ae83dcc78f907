"""Noise for replicas: each replica draws every compute action's volume from a distribution, so
that replaying many replicas gives an interval of run times instead of one number.

Two sources, one idea: a compute action belongs to a **call site** (its rank and the MPI
calls around it: :func:`call_sites`) and to an **iteration** (its occurrence number at that
site: the k-th time a rank computes between the same two calls is the k-th iteration of the
loop around them).  A site's **shape** is the same computation on every rank (matched by
time, calls and order: :func:`_shapes`).

* ``trace``: the trace's own volumes.  A replica first draws the law of each (rank, call site)
  with its estimation uncertainty (:mod:`.volume_law`: a Bayesian bootstrap of the site's
  volumes with a generalized Pareto tail refitted to each draw, so replicas may exceed the
  recorded maximum), then each action's volume from it, through a Gaussian copula whose
  latent value is ``a G[s, k] + b H[node, s, k] + c E``: G shared by every rank at shape s in
  iteration k, H by the ranks of one node, E the action's own.  ``a^2`` and ``a^2 + b^2`` are
  the correlations measured between ranks on different nodes and on the same node (normal
  scores of the same shape and iteration), each shape's own where it has SITE_PAIRS pairs,
  else the one over all shapes; a correlation below three standard errors is not supported
  by the data and set to 0.  With all of them 0 the actions of a replica are independent
  draws of its laws.
* a **variability benchmark** file (``/bench/variability``, docs/BENCH.md): its per-rank,
  per-iteration times, rescaled to the application: a replica draws one benchmark iteration
  (a row: every rank at once, so the benchmark's correlations between ranks and nodes are kept
  as measured) for each application iteration k and multiplies the compute of rank r in
  iteration k by ``times[row, r] / mean(times)``; a rank slower on average in the benchmark
  stays slower.
* a **recorded run** of the program (a minitrace trace file, any number of ranks and
  iterations: for a trace extrapolated to N ranks, whose volumes are fitted laws (times
  independent draws of one run's spread), one of the runs it was extrapolated from): each compute volume is multiplied by a draw of the
  run's relative spread (its volumes over their call site's mean, pooled over the sites that
  hold at least 1% of its compute; one law, drawn per replica like a site's), through the
  same copula, with the correlations between ranks the run supports.
* ``none``: the volumes as recorded (every replica is the plain replay).

Successive iterations and different shapes are drawn independently (said in
:attr:`NoiseModel.assumptions`, with the lag-1 autocorrelation the trace shows)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtr, ndtri

from .. import kinds as K
from ..errors import MinitraceError
from .sampling import load_trace
from .volume_law import MAX_SHAPE, MIN_TAIL_SITE, TAIL_SHARE, SiteVolumes

#: A variability run needs at least this many iterations to be a distribution to draw from.
MIN_BENCH_ITERATIONS = 10
#: Correlations are estimated on at most this many ranks (pairs grow as its square).
_CORR_RANKS = 256
_COMPUTE = K.code("compute")


def call_sites(data, shapes: bool = False):
    """For every compute action: (row, site, iteration) -- its row, an id of its (rank, call
    site: the kind and bytes of the MPI calls that end it and that precede it, and of the
    nearest ones on either side that move bytes; within that, its volume's group and its
    phase in a period) and its occurrence number at that site (0, 1, ...).  With the call that
    ends it alone, HPCCG's two computes before an 8-byte allreduce (0.3 us and 934 us, median)
    were one site, and drawing them from one law put its big volumes anywhere: replicas 9-22%
    above the plain replay.  ``shapes``: also each site's shape, the same id for the same
    call site on every rank (its key without the rank)."""
    a = data.actions
    kind = a["kind"]
    rows = np.flatnonzero(kind == _COMPUTE)
    if not len(rows):
        return (rows, rows.copy(), rows.copy()) + ((rows.copy(),) if shapes else ())
    n = len(a)
    rank = data.rank_of(rows)
    call = kind != _COMPUTE
    # the first MPI call after each row (within the rank; past its end: none)
    nxt = np.minimum.accumulate(np.where(call, np.arange(n), n)[::-1])[::-1]
    q = nxt[rows]
    size = (a["bytes_sent"] + a["bytes_recv"]).astype(np.int64)
    at = np.minimum(q, n - 1)
    qk = np.where(q < data.rank_offsets[rank + 1],
                  kind[at].astype(np.int64) * (1 << 40) + size[at], -1)
    # and the last MPI call before it: the compute before an allreduce that follows a halo
    # exchange (a sparse matrix-vector product) is not the one between two allreduces
    prv = np.maximum.accumulate(np.where(call, np.arange(n), -1))
    p = prv[rows]
    bp = np.maximum(p, 0)
    pk = np.where(p >= data.rank_offsets[rank],
                  kind[bp].astype(np.int64) * (1 << 40) + size[bp], -1)
    # and the nearest calls on either side that move bytes: between a wait and an
    # MPI_Comm_size (no bytes either), HPCG's smoother at every multigrid level was one site
    # (1 us to 200 us), told apart by its halo's size
    moves = call & (size > 0)
    nm = np.minimum.accumulate(np.where(moves, np.arange(n), n)[::-1])[::-1][rows]
    pm = np.maximum.accumulate(np.where(moves, np.arange(n), -1))[rows]
    nmk = np.where(nm < data.rank_offsets[rank + 1],
                   kind[np.minimum(nm, n - 1)].astype(np.int64) * (1 << 40)
                   + size[np.minimum(nm, n - 1)], -1)
    pmk = np.where(pm >= data.rank_offsets[rank],
                   kind[np.maximum(pm, 0)].astype(np.int64) * (1 << 40)
                   + size[np.maximum(pm, 0)], -1)
    key = np.stack([rank, qk, pk, nmk, pmk], 1)
    base = _row_ids(*key.T)
    vol = a["volume"][rows]
    site = _periodic_phases(_volume_groups(base, vol), vol)
    occ = _occurrences(site)
    if not shapes:
        return rows, site, occ
    # a site's place among its base site's groups and phases, with the key without the rank
    first = np.full(int(base.max()) + 1, np.iinfo(np.int64).max)
    np.minimum.at(first, base, site)
    kid = _row_ids(*key[:, 1:].T, site - first[base])
    return rows, site, occ, _shapes(site, occ, rank, kid, a["t_start"][rows], vol)


#: Sites whose occurrences started within this share of their period (median, each rank's
#: time from its first compute) are the same computation on two ranks.
SAME_TIME = 0.25


def _shapes(site, occ, rank, kid, t, vol) -> np.ndarray:
    """Per site, an id shared by the same computation on every rank: each rank's site of
    WARM_MIN_SITE occurrences or more is matched with one of the previous rank of about as
    many (within 2%) and of a median volume within SITE_GAP of its own, preferring the one of
    the same calls (``kid``), then one that runs at the same time (its occurrences started
    within SAME_TIME of a period of this one's, each rank's time from its first compute),
    then the nearest in time, then in order (one
    assignment, scipy's ``linear_sum_assignment``, of the sites the calls leave).  By the
    calls alone, jacobi2d's sweep
    ended at an irecv of 0 bytes on rank 0 (its neighbour PROC_NULL) and of 4096 on rank 1; by
    order alone, a rank with one site more (HPCG's rank 0) had every later one matched with
    another; by absolute time first, ranks on two nodes' clocks, or out of step by a share of
    an iteration, swapped sites of the same calls; by the calls first, whatever the volumes,
    jacobi2d's 120 us sweep on rank 1 was matched with a 1 us compute of rank 0."""
    from scipy.optimize import linear_sum_assignment
    nsites = int(site.max()) + 1
    owner = np.zeros(nsites, np.int64)
    owner[site] = rank
    count = np.bincount(site, minlength=nsites)
    skey = np.zeros(nsites, np.int64)
    skey[site] = kid
    srt = np.lexsort((occ, site))                # rows by site, then occurrence
    first = np.r_[0, np.cumsum(count)[:-1]]
    by_volume = np.lexsort((vol, site))
    median = np.zeros(nsites)
    has = count > 0
    median[has] = vol[by_volume[first[has] + count[has] // 2]]
    timed = bool(len(t)) and bool(np.isfinite(t).all()) and np.ptp(t) > 0
    if timed:
        origin = np.full(int(rank.max()) + 1, np.inf)
        np.minimum.at(origin, rank, t)
        t = t - origin[rank]
        steps = np.diff(t[srt])
        period = np.ones(nsites)
        for x in np.flatnonzero(count >= 2):
            period[x] = max(float(np.median(steps[first[x]:first[x] + count[x] - 1])), 1e-12)
    eligible = np.flatnonzero(count >= WARM_MIN_SITE)
    by_rank = eligible[np.argsort(owner[eligible], kind="stable")]
    bounds = np.r_[0, np.flatnonzero(np.diff(owner[by_rank])) + 1, len(by_rank)]
    groups = [by_rank[b:e] for b, e in zip(bounds[:-1], bounds[1:]) if e > b]
    parent = np.arange(nsites)
    for theirs, mine in zip(groups[:-1], groups[1:]):
        # the same calls and about as many occurrences: matched at once (most sites of an
        # SPMD code); the assignment below would pick them first too
        _, i, j = np.intersect1d(skey[mine], skey[theirs], assume_unique=True,
                                 return_indices=True)
        near = (np.abs(count[mine[i]] - count[theirs[j]]) <= np.maximum(1, count[mine[i]] // 50)) \
            & _alike(median[mine[i]], median[theirs[j]])
        parent[mine[i[near]]] = parent[theirs[j[near]]]
        mine = np.delete(mine, i[near])
        theirs = np.delete(theirs, j[near])
        if not len(mine) or not len(theirs):
            continue
        place = np.arange(len(mine)) / len(mine)
        their_place = np.arange(len(theirs)) / len(theirs)
        cost = np.full((len(mine), len(theirs)), np.inf)
        for i, a in enumerate(mine):
            ok = (np.abs(count[theirs] - count[a]) <= max(1, count[a] // 50)) \
                & _alike(median[theirs], median[a])
            if not ok.any():
                continue
            b = theirs[ok]
            gap = np.ones(len(b))
            if timed:
                m = int(min(count[a], count[b].min()))
                tb = t[srt[first[b][:, None] + np.arange(m)]]
                gap = np.median(np.abs(t[srt[first[a] + np.arange(m)]] - tb), axis=1) / period[a]
            cost[i, ok] = (8.0 * (skey[b] != skey[a]) + 4.0 * (gap > SAME_TIME)
                           + 2.0 * np.minimum(gap, 1.0) + np.abs(place[i] - their_place[ok]))
        finite = np.isfinite(cost)
        if not finite.any():
            continue
        rows, cols = linear_sum_assignment(np.where(finite, cost, 1e9))
        for i, j in zip(rows, cols):
            if finite[i, j]:
                parent[mine[i]] = parent[theirs[j]]
    _, out = np.unique(parent, return_inverse=True)
    return out.ravel()


def _alike(x: np.ndarray, y) -> np.ndarray:
    """Volumes within SITE_GAP of each other (both 0: alike)."""
    hi, lo = np.maximum(x, y), np.minimum(x, y)
    return hi <= SITE_GAP * lo


def _row_ids(*columns: np.ndarray) -> np.ndarray:
    """Dense ids of the rows of integer ``columns``, in their lexicographic order (what
    ``np.unique(axis=0, return_inverse=True)`` gives, column by column: 3.8 s to 0.4 s on
    HPCG's 1.6 M actions)."""
    ids = np.zeros(len(columns[0]), np.int64)
    for col in columns:
        _, code = np.unique(col, return_inverse=True)
        _, ids = np.unique(ids * (int(code.max()) + 1 if len(code) else 1) + code.ravel(),
                           return_inverse=True)
        ids = ids.ravel()
    return ids


def _occurrences(site: np.ndarray) -> np.ndarray:
    """Each row's occurrence number at its site (rows in order)."""
    order = np.argsort(site, kind="stable")          # rows within a site stay in order
    starts = np.r_[0, np.flatnonzero(np.diff(site[order])) + 1]
    counts = np.diff(np.r_[starts, len(order)])
    occ = np.empty(len(site), np.int64)
    occ[order] = np.arange(len(order)) - np.repeat(starts, counts)
    return occ


#: Periods looked for in a site's successive volumes, and the share of their (log) variance
#: the phases must explain to split the site: HPCG's 45 us and 110 us computes alternate
#: between the same calls (2.4x apart: one volume group), and replicas that drew them from one
#: law, unaligned between ranks, sat 7% above the plain replay.
PERIODS, PHASE_SHARE = (2, 3, 4), 0.5
#: Fewest occurrences of a site split into phases (per phase at least this many over PERIODS).
PHASE_MIN_SITE = 20


def _periodic_phases(site: np.ndarray, volume: np.ndarray) -> np.ndarray:
    """``site`` ids refined by the phase ``k mod p`` of each occurrence k, for the shortest
    period p of :data:`PERIODS` whose phases explain :data:`PHASE_SHARE` of the site's log
    volumes' variance (a site with fewer than PHASE_MIN_SITE occurrences a phase is left)."""
    occ = _occurrences(site)
    nsites = int(site.max()) + 1
    v = np.log(np.maximum(volume, 1e-300))
    n = np.bincount(site, minlength=nsites).astype(float)
    mean = np.bincount(site, v, minlength=nsites) / np.maximum(n, 1)
    total = np.bincount(site, (v - mean[site]) ** 2, minlength=nsites)
    period = np.zeros(nsites, np.int64)
    for p in PERIODS:
        key = site * p + occ % p
        m = np.bincount(key, v, minlength=nsites * p) / np.maximum(
            np.bincount(key, minlength=nsites * p), 1)
        within = np.bincount(site, (v - m[key]) ** 2, minlength=nsites)
        split = (period == 0) & (n >= PHASE_MIN_SITE * p) & (total > 0) & \
            (within <= (1 - PHASE_SHARE) * total)
        period[split] = p
    if not period.any():
        return site
    phase = np.where(period[site] > 0, occ % np.maximum(period[site], 1), 0)
    return _row_ids(site, phase)


#: Volumes of one call site more than this factor apart, with none between and at least
#: GROUP_SHARE of the site's volumes on each side, are different computes that end at the
#: same calls (a multigrid's levels, a CG's dot product and its vector update between two
#: allreduces of 8 bytes): each group is a site of its own.  A spike or a tail (a few
#: volumes far above the rest) stays in its site's law.
SITE_GAP, GROUP_SHARE = 4.0, 0.1


def _volume_groups(site: np.ndarray, volume: np.ndarray) -> np.ndarray:
    """``site`` ids refined by the groups of each site's volumes (sorted; a new group after
    each gap of more than :data:`SITE_GAP` with :data:`GROUP_SHARE` of the site's volumes on
    either side): drawn from one law, HPCG's and NPB CG's sites put their big volumes
    anywhere, and 100 replicas' median sat 17-19% above 12 runs' (session 13)."""
    if not len(site):
        return site
    order = np.lexsort((volume, site))
    v = np.log(np.maximum(volume[order], 1e-300))
    s = site[order]
    first = np.r_[True, s[1:] != s[:-1]]
    start = np.flatnonzero(first)
    size = np.diff(np.r_[start, len(s)])
    at = np.arange(len(s)) - np.repeat(start, size)          # place within the site
    n = np.repeat(size, size)
    gap = np.r_[False, v[1:] - v[:-1] > np.log(SITE_GAP)] & ~first
    new = first | (gap & (at >= GROUP_SHARE * n) & (n - at >= GROUP_SHARE * n))
    out = np.empty(len(site), np.int64)
    out[order] = np.cumsum(new) - 1
    return out


@dataclass
class NoiseModel:
    """How replicas draw compute volumes; :meth:`volumes` gives one replica's."""

    source: str                      # "none", "trace" or the benchmark file
    assumptions: list[str] = field(default_factory=list)
    rows: np.ndarray = None          # compute rows
    site: np.ndarray = None          # their (rank, call site) id
    iteration: np.ndarray = None     # their occurrence number at that site
    rank: np.ndarray = None
    node: np.ndarray = None          # node of each rank
    weights: tuple = (0.0, 0.0, 1.0)  # (a, b, c) of the copula's latent value: scalars, or
                                     # per compute row (its call site's correlations)
    shape: np.ndarray = None         # per site, its call site's id on every rank
    shared: np.ndarray = None        # per compute row, its latent G: (call site, iteration)
    node_shared: np.ndarray = None   # per compute row, its latent H: (node, site, iteration)
    sites: SiteVolumes = None        # the recorded volumes of each site (trace)
    multipliers: SiteVolumes = None  # relative volumes of a recorded run, one law (run file)
    factors: np.ndarray = None       # [iterations, nranks] multipliers (benchmark)
    means: np.ndarray = None         # per compute row its site's mean, drawn from instead of
                                     # the row's volume (an extrapolated trace: its spread
                                     # is a draw already)
    fixed: np.ndarray = None         # rows replayed as recorded in every replica (warm-up)

    def volumes(self, data, rng: np.random.Generator) -> np.ndarray:
        """One replica's ``volume`` column of ``data`` (a new array; only compute changes)."""
        vol = data.actions["volume"].copy()
        if self.source != "none" and len(self.rows):
            vol[self.rows] = self.draw(vol[self.rows], rng)
        return vol

    def draw(self, recorded: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One replica's volumes of the compute rows (``rows`` order), ``recorded`` being
        theirs in the trace."""
        if self.source == "none" or not len(self.rows):
            return recorded.copy()
        if self.means is not None:
            recorded = self.means
        it = self.iteration
        niter = int(it.max()) + 1
        if self.factors is not None:
            pick = rng.integers(len(self.factors), size=niter)
            return recorded * self.factors[pick[it], self.rank]
        a, b, c = self.weights
        if np.any(a) or np.any(b):
            z = c * rng.standard_normal(len(self.rows))
            if np.any(a):
                z += a * rng.standard_normal(int(self.shared.max()) + 1)[self.shared]
            if np.any(b):
                z += b * rng.standard_normal(int(self.node_shared.max()) + 1)[self.node_shared]
            u = ndtr(z)
        else:                        # independent: the copula's uniform drawn directly
            u = rng.random(len(self.rows))
        if self.multipliers is not None:
            return recorded * self.multipliers.law(rng).quantile(np.zeros(len(u), np.int64), u)
        law = self.sites.law(rng)
        if self.fixed is None:
            return law.quantile(self.site, u)
        out = recorded.copy()
        free = ~self.fixed
        out[free] = law.quantile(self.site[free], u[free])
        return out


def noise_model(data, noise: str, source: str | None = None) -> NoiseModel:
    """The noise model ``noise`` ("trace", "none", a variability benchmark file or a recorded
    run of the program) of ``data`` (a TraceColumns; ``source`` names it in errors)."""
    rows, site, occ, shape = call_sites(data, shapes=True)
    rank = data.rank_of(rows)
    node, known = _nodes(data)
    base = dict(rows=rows, site=site, iteration=occ, rank=rank, node=node, shape=shape)
    if len(rows):
        base.update(_latents(site, occ, rank, node, shape))
    if noise == "none":
        return NoiseModel("none", ["no noise: every replica replays the recorded volumes"],
                          **base)
    if not len(rows):
        raise MinitraceError("the trace has no compute actions: nothing to draw noise for",
                             source)
    if noise == "trace":
        return _trace_model(data, base, known)
    if os.path.isfile(noise) and _holds_trace(noise):
        model = _run_model(noise, load_trace(noise, noise), data, base, known)
    else:
        model = _bench_model(noise, data, base, known)
    if data.meta.get("extrapolated") is not None:
        vol = data.actions["volume"][rows]
        model.means = (np.bincount(site, vol) / np.maximum(np.bincount(site), 1))[site]
        model.assumptions.append("the extrapolated trace's own spread (one draw) is replaced "
                                 "by each call site's mean before the noise is drawn")
    return model


def _holds_trace(path: str) -> bool:
    """Whether an HDF5 file holds a minitrace trace (``/trace``) rather than a benchmark."""
    import h5py
    try:
        with h5py.File(path, "r") as f:
            return "trace" in f
    except OSError:
        return False


def _nodes(data) -> tuple[np.ndarray, bool]:
    """Node index of each rank (the trace's ``rank_to_node``), else one node per rank."""
    nodes = data.meta.get("rank_to_node")
    if nodes is not None and len(nodes) == data.nranks:
        return np.asarray(nodes, np.int64), True
    return np.arange(data.nranks, dtype=np.int64), False


def _by_site(vol: np.ndarray, site: np.ndarray, nsites: int = 0):
    """(order sorting the volumes by site then value, volumes per site, first index of each
    site, normal score of each volume within its site (mid-ranks))."""
    order = np.lexsort((vol, site))
    count = np.bincount(site, minlength=nsites)
    start = np.r_[0, np.cumsum(count)[:-1]]
    pos = np.empty(len(vol), np.int64)
    pos[order] = np.arange(len(vol)) - np.repeat(start, count)
    return order, count, start, ndtri((pos + 0.5) / count[site])


def _copula(score, site, occ, rank, node, shape, known_nodes: bool, what: str,
            per_site: bool = False):
    """The copula's weights (a, b, c) from the correlations the volumes' normal scores
    support, and the notes that say which were kept and which assumed 0.  ``per_site``: also
    each call site's own (by its ``shape``: :func:`call_sites`) where it has SITE_PAIRS
    pairs, as a dict; over all sites, HPCG's 0.59 was mostly its many small
    sites', its big ones' 0.88-0.97, and replicas drawn with 0.59 sat 5% above the plain
    replay (correlation 1: 1% below)."""
    pooled, sites, lag1, n_lag = _correlations(score, site, occ, rank, node, shape, per_site)
    r_node, n_node, r_other, n_other = pooled
    notes = []
    between = "between ranks of one node in an iteration" + \
        ("" if known_nodes else " (no node map: one node per rank)")
    for r, n, name in ((r_other, n_other, "between ranks of different nodes in an iteration"),
                       (r_node, n_node, between)):
        if n < 3:
            notes.append(f"correlation {name}: not measurable here (assumed 0)")
        elif _supported(r, n) == 0:
            notes.append(f"correlation {name}: {r:+.3f} over {n} pairs, not supported by the "
                         f"data (assumed 0)")
        else:
            notes.append(f"correlation {name}: {r:.3f} over {n} pairs (kept)")
    weights = _weights(_supported(r_node, n_node), _supported(r_other, n_other))
    own = {}
    if per_site:
        own = {s: _weights(_supported(rn, nn), _supported(ro, no))
               for s, (rn, nn, ro, no) in sites.items() if max(nn, no) >= SITE_PAIRS}
        if own:
            rho = np.array([1 - w[2] ** 2 for w in own.values()])
            kept = rho > 0
            notes.append(f"per call site: {len(own)} site(s) with {SITE_PAIRS} pairs or more "
                         f"take their own correlation ("
                         + (f"{rho[kept].min():.2f}-{rho[kept].max():.2f} on {kept.sum()}"
                            if kept.any() else "none supported")
                         + (f", {int((~kept).sum())} assumed 0" if (~kept).any() else "")
                         + "), the others the one over all sites")
    lag = (f"{lag1:+.3f} over {n_lag} pairs" if n_lag >= 3 else "not measurable")
    notes.append(f"successive iterations and different call sites drawn independently (lag-1 "
                 f"autocorrelation in {what}: {lag})")
    return weights, own, notes


#: A call site with this many pairs of ranks' volumes (at one iteration) takes its own
#: correlation; one with fewer the correlation over all sites.
SITE_PAIRS = 30


def _supported(r: float, n: int) -> float:
    """A correlation ``r`` over ``n`` pairs, or 0 where the data do not support it (fewer than
    3 pairs, or below three standard errors)."""
    return float(min(r, 1.0)) if n >= 3 and r >= 3 / np.sqrt(n) else 0.0


def _weights(rho_node: float, rho_other: float) -> tuple[float, float, float]:
    """The copula's (a, b, c) for correlations within a node and between nodes."""
    rho_node = max(rho_node, rho_other)
    return (np.sqrt(rho_other), np.sqrt(rho_node - rho_other), np.sqrt(max(1.0 - rho_node, 0.0)))


def _between_alike_calls(data, rows: np.ndarray) -> int:
    """How many computes of ``rows`` sit between the same kinds of MPI calls (the next and the
    previous, bytes aside) as WARM_MIN_SITE or more computes of ``rows`` on their rank: a loop
    whose messages change size is a site a step.  ECP CoMD's atom exchange sends other sizes
    every step: its 100 steps were 631 sites of one or two volumes (all of its compute),
    replayed as recorded, 20 replicas within 1.3e-5 s of 1.9 s, under a note of set-up phases;
    NPB BT's one-off computes (tests/programs/one_offs.c) sit between other calls each."""
    kind = data.actions["kind"]
    n = len(kind)
    call = kind != _COMPUTE
    nxt = np.minimum.accumulate(np.where(call, np.arange(n), n)[::-1])[::-1][rows]
    prv = np.maximum.accumulate(np.where(call, np.arange(n), -1))[rows]
    rank = data.rank_of(rows)
    nk = np.where(nxt < data.rank_offsets[rank + 1], kind[np.minimum(nxt, n - 1)], -1)
    pk = np.where(prv >= data.rank_offsets[rank], kind[np.maximum(prv, 0)], -1)
    ids = _row_ids(rank, nk.astype(np.int64), pk.astype(np.int64))
    return int((np.bincount(ids)[ids] >= WARM_MIN_SITE).sum())


def _trace_model(data, base: dict, known_nodes: bool) -> NoiseModel:
    """Per-site laws and the correlations the trace supports."""
    rows, site, occ, rank, node = (base[k] for k in ("rows", "site", "iteration", "rank",
                                                     "node"))
    vol = data.actions["volume"][rows]
    if data.meta.get("extrapolated") is not None:
        raise MinitraceError("an extrapolated trace's volumes are fitted laws (times "
                             "independent draws of one run's spread), not measurements: no "
                             "correlations to draw replicas from; give --noise a "
                             "recorded run of the program (e.g. one of the runs it was "
                             "extrapolated from) or a variability benchmark file")
    warm = warm_up(vol, site, occ)
    few = np.bincount(site)[site] < WARM_MIN_SITE     # one-off phases: set-up, assembly, output
    lone = lone_volumes(vol, site) & ~few & ~warm
    fixed = warm | few | lone
    keep = ~fixed
    v, st = vol[keep], site[keep]
    order, count, start, score = _by_site(v, st, int(site.max()) + 1)
    shape = base["shape"]
    pooled, own, notes = _copula(score, st, occ[keep], rank[keep], node, shape, known_nodes,
                                 "the trace", per_site=True)
    w = np.array([own.get(int(x), pooled) for x in range(int(shape.max()) + 1)])
    weights = tuple(w[shape[site], i] for i in range(3))
    sites = SiteVolumes.of(v[order], start, count,
                           tail_ok=_big_sites(v, st, rank[keep], len(count)))
    head = (f"noise from the trace: each compute action drawn from the law of its rank and "
            f"call site ({len(count)} sites, {len(rows)} volumes), each replica's laws drawn "
            f"with their estimation uncertainty (Bayesian bootstrap)")
    if few.any():
        share = float(vol[few].sum() / vol.sum()) if vol.sum() > 0 else 0.0
        alike = _between_alike_calls(data, rows[few])
        what = ("one-off phases such as a set-up or an assembly, not repetitions of one law"
                if 2 * alike <= few.sum() else
                f"{alike} of them between the same kinds of calls as {WARM_MIN_SITE} or more "
                f"others of their rank: repetitions told apart by the bytes of the calls "
                f"around them, as a loop whose messages change size from step to step; the "
                f"replicas' spread leaves this compute out")
        notes.insert(0, f"{len(np.unique(site[few]))} site(s) with fewer than {WARM_MIN_SITE} "
                        f"volumes ({int(few.sum())} volumes, {share:.0%} of the compute: "
                        f"{what}): replayed as recorded in every replica")
    if lone.any():
        notes.insert(0, f"{int(lone.sum())} volume(s) each over {LONE_SHARE:.0%} of its call "
                        f"site's compute ({float(vol[lone].sum() / vol.sum()):.0%} of the "
                        f"compute: a one-off phase inside a loop, not a draw of the site's "
                        f"law): replayed as recorded in every replica")
    if warm.any():
        notes.insert(0, f"warm-up: {int(warm.sum())} volume(s) among the first {WARM_MAX} of "
                        f"{len(np.unique(site[warm]))} site(s) above the {WARM_QUANTILE:.0%} "
                        f"quantile of the site's later ones (first touch of the "
                        f"data, caches and connections set up): replayed as recorded in every "
                        f"replica, not drawn, and left out of the sites' laws")
    return NoiseModel("trace", [head, _tail_note(sites), *notes], weights=weights,
                      sites=sites, fixed=fixed if fixed.any() else None, **base)


#: Only the first occurrences of a call site may be its warm-up ...
WARM_MAX = 5
#: ... each above this quantile of the site's later volumes.
WARM_QUANTILE = 0.99
#: A site with fewer volumes is a one-off phase (a set-up, an assembly), replayed as recorded:
#: resampled, miniFE's 100 ms assembly and four 1 us steps put 0-3 assemblies in a replica
#: (+30%).  Such a site has no warm-up.
WARM_MIN_SITE = 20


#: A volume holding more than this share of its call site's compute is a one-off phase inside
#: a loop, replayed as recorded (:func:`lone_volumes`).
LONE_SHARE = 0.25


def lone_volumes(vol: np.ndarray, site: np.ndarray) -> np.ndarray:
    """Rows whose volume holds more than :data:`LONE_SHARE` of its site's compute.  Public PRK
    MPI1 Random computes 9.7 ms once among 120 steps of ~5 us at one call site (94% of the
    site's compute): drawn as the site's law it fell in a replica or two of twenty, and the
    95% interval lay below the noiseless replay (QA, session 33)."""
    total = np.bincount(site, weights=vol)
    return vol > LONE_SHARE * total[site]


def warm_up(vol: np.ndarray, site: np.ndarray, occ: np.ndarray) -> np.ndarray:
    """Rows of the warm-up: per site (with WARM_MIN_SITE occurrences or more), those of its
    first WARM_MAX occurrences whose volume exceeds the WARM_QUANTILE quantile of the site's
    later volumes.  A transient (the first sweeps' page faults: 5-9x a recorded solver's
    median sweep, in its 2nd and 3rd), not a draw of the site's law: fitted as one, it made
    tails of shape xi > 1 and replicas far above the runs.

    Parameters
    ----------
    vol, site, occ : ndarray
        Each compute row's volume, call site and occurrence number at its site.

    Returns
    -------
    ndarray of bool
        The warm-up rows.
    """
    nsites = int(site.max()) + 1 if len(site) else 0
    count = np.bincount(site, minlength=nsites)
    later = occ >= WARM_MAX
    order = np.lexsort((vol[later], site[later]))
    sv, ss = vol[later][order], site[later][order]
    n = np.bincount(ss, minlength=nsites)
    first = np.r_[0, np.cumsum(n)[:-1]]
    q = np.full(nsites, np.inf)
    ok = (count >= WARM_MIN_SITE) & (n > 0)
    q[ok] = sv[first[ok] + np.floor(WARM_QUANTILE * (n[ok] - 1)).astype(np.int64)]
    return ~later & (vol > q[site])


#: A recorded run's call sites holding less than this share of its compute are left out of its
#: relative noise (the microseconds between two MPI calls: noise without a law).
RUN_SITE_SHARE = 0.01


def _run_model(path: str, run, data, base: dict, known_nodes: bool) -> NoiseModel:
    """Multipliers from a recorded run of the program (any number of ranks and iterations):
    its compute volumes over their call site's mean, pooled over the sites holding at least
    RUN_SITE_SHARE of its compute, as one law drawn per replica (:mod:`.volume_law`), with
    the correlations between ranks the run supports."""
    rows, site, occ, shape = call_sites(run, shapes=True)
    if not len(rows):
        raise MinitraceError("the noise run has no compute actions", path)
    vol = run.actions["volume"][rows]
    total, count = np.bincount(site, vol), np.bincount(site)
    mean = total / np.maximum(count, 1)
    big = _big_sites(vol, site, run.rank_of(rows), len(count)) & (mean > 0) & (count >= 2)
    keep = big[site]
    m = vol[keep] / mean[site[keep]]
    if len(m) < MIN_BENCH_ITERATIONS or np.ptp(m) < 1e-9:       # equal but for rounding
        raise MinitraceError(f"the noise run's compute volumes do not vary at its call sites "
                             f"({len(m)} volumes): no spread to draw from", path)
    _, _, _, score = _by_site(vol[keep], site[keep])
    node, known = _nodes(run)
    weights, _, notes = _copula(score, site[keep], occ[keep], run.rank_of(rows[keep]), node,
                                shape, known, "the run")
    law = SiteVolumes.of(np.sort(m), np.zeros(1, np.int64), np.array([len(m)]))
    head = (f"noise from the recorded run {path} ({run.nranks} ranks): each compute volume "
            f"times a multiplier drawn from the run's volumes over their call site's mean "
            f"({len(m)} multipliers from its {int(big.sum())} call sites holding >= "
            f"{RUN_SITE_SHARE:.0%} of its compute; sd {m.std():.1%}), the law drawn per "
            f"replica with its estimation uncertainty; correlations measured on the run's "
            f"ranks, applied to the trace's {data.nranks}")
    return NoiseModel(path, [head, _tail_note(law), *notes], weights=weights,
                      multipliers=law, **base)


def _big_sites(vol: np.ndarray, site: np.ndarray, rank: np.ndarray, nsites: int) -> np.ndarray:
    """Sites holding at least RUN_SITE_SHARE of their rank's compute (a site is one rank's:
    against the whole trace's, every site of a 128-rank run fell below 1%)."""
    total = np.bincount(site, vol, minlength=nsites)
    owner = np.zeros(nsites, np.int64)
    owner[site] = rank
    per_rank = np.bincount(owner, total)
    return total >= RUN_SITE_SHARE * per_rank[owner]


def _tail_note(sites: SiteVolumes) -> str:
    """What the volume laws' tails rest on: how many sites have a fitted tail, their shapes,
    how many have too few volumes for one."""
    few = int((sites.count < MIN_TAIL_SITE).sum())
    small = int(((sites.count >= MIN_TAIL_SITE) & ~sites.tail_ok).sum())
    failed = int(((sites.count >= MIN_TAIL_SITE) & sites.tail_ok & ~sites.tailed).sum())
    if small:
        few_note = (f"; {small} site(s) holding less than {RUN_SITE_SHARE:.0%} of their rank's "
                    f"compute (microseconds between two MPI calls, where an interrupt is a 30x "
                    f"outlier): bootstrap only")
    else:
        few_note = ""
    if failed:
        few_note += f"; {failed} site(s) whose tail fit failed: bootstrap only"
    if not sites.tailed.any():
        return (f"tails: no site has a fitted tail ({MIN_TAIL_SITE} volumes or more and "
                f"{RUN_SITE_SHARE:.0%} of the compute): replicas never exceed a site's "
                f"recorded maximum (bootstrap only)")
    xi = sites.xi[np.isfinite(sites.xi)]
    out = (f"tails: generalized Pareto above each site's {1 - TAIL_SHARE:.0%} quantile on "
           f"{len(xi)} site(s), shape xi {np.median(xi):+.2f} (median; range {xi.min():+.2f} "
           f"to {xi.max():+.2f}, each replica's drawn from the fit's uncertainty, capped at "
           f"{MAX_SHAPE})")
    if few:
        out += (f"; {few} site(s) with fewer than {MIN_TAIL_SITE} volumes: bootstrap only, "
                f"never above their recorded maximum")
    return out + few_note


def _correlations(score, site, occ, rank, node, shape, per_site: bool = False):
    """Correlations of normal scores between ranks at the same (call site, iteration), over
    all sites and (``per_site``) per site, each as (r within a node, pairs, r between nodes,
    pairs); and lag-1 within a site.  Sites are matched across ranks by their ``shape``
    (:func:`call_sites`): matched by their order instead, a rank with one site more than the
    other compared every later site with another one (HPCG: 0.05 for 0.9).  Only (shape,
    iteration) columns that two ranks or more hold are kept: unmatched sites' own columns
    had grown the matrix toward ranks x rows (1.6 GB at 64 ranks).  No volume drawn (every
    call site a one-off, NPB BT/SP on one rank): none measurable."""
    if not len(occ):
        return (0.0, 0, 0.0, 0), {}, 0.0, 0
    ranks = np.unique(rank)
    if len(ranks) > _CORR_RANKS:
        ranks = np.sort(np.random.default_rng(0).choice(ranks, _CORR_RANKS, replace=False))
    keep = np.isin(rank, ranks)
    width = int(occ.max()) + 1
    key = shape[site] * width + occ
    ukey, kc, held = np.unique(key[keep], return_inverse=True, return_counts=True)
    shared = held[kc.ravel()] >= 2            # (a rank holds a (shape, iteration) once)
    keep[np.flatnonzero(keep)[~shared]] = False
    ci = np.searchsorted(ranks, rank[keep])
    # one column per (site shape, iteration), one row per rank
    ukey, kc = np.unique(key[keep], return_inverse=True)
    M = np.full((len(ranks), len(ukey)), np.nan)
    M[ci, kc.ravel()] = score[keep]
    nd = node[ranks]
    sites = {}
    if per_site and len(ukey):
        col_site = ukey // width
        bounds = np.r_[0, np.flatnonzero(np.diff(col_site)) + 1, len(col_site)]
        sites = {int(col_site[b]): _pair_means(M[:, b:e], nd)
                 for b, e in zip(bounds[:-1], bounds[1:])}
    # lag-1: the same rank and site, iterations k and k+1
    o = np.lexsort((occ, site))
    s, sc = site[o], score[o]
    nb = s[1:] == s[:-1]
    n_lag = int(nb.sum())
    lag1 = float(np.corrcoef(sc[:-1][nb], sc[1:][nb])[0, 1]) if n_lag >= 3 and \
        sc[:-1][nb].std() > 0 and sc[1:][nb].std() > 0 else 0.0
    return _pair_means(M, nd), sites, lag1, n_lag


def _pair_means(M: np.ndarray, nd: np.ndarray) -> tuple[float, int, float, int]:
    """Mean correlation between the rows (ranks, on nodes ``nd``) of ``M`` over the columns
    both have (NaN: none), weighted by those columns: (same node, its pairs, other nodes,
    theirs)."""
    have = np.isfinite(M)
    Z = np.where(have, M, 0.0)
    H = have.astype(float)
    S = Z @ Z.T                      # sum of products over shared columns
    N = H @ H.T                      # number of shared columns
    Q = (Z ** 2) @ H.T               # sum of squares of row i over columns shared with j
    with np.errstate(divide="ignore", invalid="ignore"):
        C = S / np.sqrt(Q * Q.T)
    same = (nd[:, None] == nd[None, :]) & ~np.eye(len(nd), dtype=bool)
    other = nd[:, None] != nd[None, :]
    ok = np.isfinite(C) & (N >= 3)

    def mean(mask):
        m = mask & ok
        return (float(np.average(C[m], weights=N[m])) if m.any() else 0.0,
                int(N[m].sum() // 2))
    return (*mean(same), *mean(other))


def _latents(site, occ, rank, node, shape) -> dict:
    """Each compute row's shared latent values of the copula: G, one per (call site,
    iteration) for all ranks, and H, one per (node, call site, iteration).  The correlation
    measured is between ranks at one site and iteration; none is measured between sites, and
    none is drawn (with G per iteration alone, every site of an iteration moved together)."""
    key = shape[site] * (int(occ.max()) + 1) + occ
    _, shared = np.unique(key, return_inverse=True)
    return dict(shared=shared.ravel(), node_shared=_row_ids(node[rank], key))


def _bench_model(path: str, data, base: dict, known_nodes: bool) -> NoiseModel:
    """Multipliers from a variability benchmark's per-rank, per-iteration times."""
    if not os.path.isfile(path):
        raise MinitraceError("no such noise file (give trace, none or a variability "
                             "benchmark file)", path)
    from ..analysis.projection import load_variability
    try:
        v = load_variability(path)
    except KeyError:
        raise MinitraceError("no variability benchmark (/bench/variability) in the noise file",
                             path) from None
    unit = str(v.attrs.get("timer_unit", v.attrs.get("time_unit", "seconds")))
    if unit not in ("s", "seconds"):
        raise MinitraceError(f"the variability times are in {unit}, not seconds", path)
    if v.nranks != data.nranks:
        raise MinitraceError(f"the variability run has {v.nranks} ranks and the trace "
                             f"{data.nranks}: they must match rank for rank", path)
    if v.iterations < MIN_BENCH_ITERATIONS:
        raise MinitraceError(f"the variability run has {v.iterations} iterations, fewer than "
                             f"the {MIN_BENCH_ITERATIONS} needed to draw from", path)
    if (v.times <= 0).any():
        raise MinitraceError("the variability times must be positive seconds", path)
    notes = [f"noise from {path}: compute of each rank in each iteration scaled by a "
             f"benchmark iteration's time over the mean ({v.iterations} iterations x "
             f"{v.nranks} ranks, {v.attrs.get('workload', '?')} workload; spread "
             f"{v.times.std() / v.times.mean():.1%})",
             "correlations between ranks and nodes in an iteration: as measured (a benchmark "
             "iteration is drawn for all ranks at once); successive iterations independent"]
    nodes = data.meta.get("rank_to_node")
    if known_nodes and list(np.unique(v.node, return_inverse=True)[1].ravel()) != \
            list(np.unique(np.asarray(nodes), return_inverse=True)[1].ravel()):
        notes.append("the benchmark's ranks were placed on nodes otherwise than the trace's")
    return NoiseModel(path, notes, factors=v.times / v.times.mean(), **base)
