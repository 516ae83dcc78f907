"""Back-test the projections on the user's own run, and recommend one of them.

A run at n ranks is the only truth a user has: each method projects from subsets of its ranks
(n/8, n/4, n/2 ranks) to all n, and its error against the measured mean per-iteration maximum
says how well it extrapolates on this machine and workload.  Subsets keep the node layout
where they can (fewer ranks on every node, else fewer nodes), so both parametric models still
see nodes and slots.  The recommendation is the unflagged method with the fewest back-tests
inconsistent with the measurement and then the smallest mean error; none when every method
is flagged at the scale, or when excursions too rare to be seen in the run could touch too
many of the iterations there (``recommend``).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from . import stragglers
from .projection import Variability, project

DIVISORS = (8, 4, 2)


def subsets(var: Variability) -> list[tuple[int, Variability]]:
    """(divisor d, the run restricted to n/d of its ranks) for each d of ``DIVISORS`` the
    layout allows: local ranks below r/d on every node when the r ranks per node divide by d,
    else the first nodes/d nodes, else none."""
    nodes = np.unique(var.node)
    per = max(int((var.node == j).sum()) for j in nodes)
    out = []
    for d in DIVISORS:
        if per % d == 0:
            out.append((d, var.ranks(var.local_rank < per // d)))
        elif len(nodes) % d == 0:
            out.append((d, var.ranks(np.isin(var.node, nodes[:len(nodes) // d]))))
    return out


def backtest(var: Variability, methods, replicas: int | None = None, ci: float = 0.95,
             seed: int | None = 0) -> pd.DataFrame:
    """One row per (subset, method, model): the projection from the subset to all n ranks
    against the measured mean per-iteration maximum (``measured``, standard error ``se``).
    ``error`` is estimate - measured, ``error_pct`` in % of the measured value;
    ``consistent``: the interval widened by 2 standard errors holds the measurement."""
    measured = float(var.maxima.mean())
    se = float(var.maxima.std(ddof=1) / np.sqrt(var.iterations))
    rows = []
    for d, sub in subsets(var):
        df = project(sub, [var.nranks], methods, replicas, ci, seed)
        for r in df.itertuples():
            rows.append(dict(ranks=sub.nranks, divisor=d, method=r.method, model=r.model,
                             factor=var.nranks / sub.nranks, estimate=r.estimate, lo=r.lo,
                             hi=r.hi, measured=measured, se=se, error=r.estimate - measured,
                             error_pct=100 * (r.estimate - measured) / measured,
                             consistent=bool(r.lo - 2 * se <= measured <= r.hi + 2 * se),
                             flags=r.flags))
    return pd.DataFrame(rows)


def recommend(bt: pd.DataFrame, proj: pd.DataFrame, scale: int, iterations: int, ranks: int,
              ci: float = 0.95) -> tuple[pd.Series | None, str]:
    """The projection row at ``scale`` to trust and why, or None and why not.

    Parameters
    ----------
    bt : DataFrame
        ``backtest`` of the run.
    proj : DataFrame
        ``project`` of the run, with rows at ``scale``.
    scale : int
        Ranks of the recommended projection.
    iterations, ranks : int
        Size of the run.
    ci : float, optional
        Confidence level of the bound on unseen excursions.

    Returns
    -------
    row : Series or None
        Among the (method, model) rows with no flag at ``scale``: the fewest back-tests
        inconsistent with the measurement, then the smallest mean |error| (rows without a
        back-test come last).  None when every row is flagged (the coverage study shows
        flagged rows failing: they are never recommended) or when excursions too rare to
        appear in the run's rank-iterations could touch more than
        ``stragglers.UNSEEN_SHARE`` of the iterations at ``scale``
        (``stragglers.unseen_share``): no projection from this run can be checked against
        them.
    why : str
        The reason, printed by ``minitrace gev``.
    """
    cells = iterations * ranks
    unseen = float(stragglers.unseen_share(cells, scale, ci))
    if unseen > stragglers.UNSEEN_SHARE:
        need = _iterations_needed(cells, scale, ci)
        return None, (f"excursions too rare to show up in this run's {cells:,} rank-iterations "
                      f"(rate below {float(stragglers.jeffreys_interval(0, cells, ci)[1]):.2g}"
                      f" per rank-iteration, {ci:.0%} bound) could still touch {unseen:.0%} of "
                      f"the iterations at {scale:,} ranks, more than "
                      f"{stragglers.UNSEEN_SHARE:.0%}: no projection from this run can be "
                      f"checked against them; about {need:,} rank-iterations (e.g. "
                      f"{-(-need // ranks):,} iterations at {ranks:,} ranks) are needed to "
                      f"recommend one at this scale")
    rows = proj[proj.scale == scale].set_index(["method", "model"])
    clean = rows[rows["flags"] == ""]
    if clean.empty:
        return None, (f"every projection is flagged at {scale:,} ranks (the FLAG lines say "
                      f"why; the coverage study shows flagged rows failing)")
    if bt.empty:
        score = pd.DataFrame({"missed": 0, "tests": 0, "err": np.inf}, index=clean.index)
    else:
        score = bt.groupby(["method", "model"]).agg(
            missed=("consistent", lambda c: int((~c).sum())), tests=("consistent", "size"),
            err=("error_pct", lambda e: float(np.mean(np.abs(e)))))
        score = score.reindex(clean.index).fillna({"missed": 0, "tests": 0, "err": np.inf})
    best = score.sort_values(["missed", "err"]).index[0]
    s = score.loc[best]
    tests, missed = int(s.tests), int(s.missed)
    if tests:
        why = (f"{best[0]} {best[1]}: no flag at this scale and the smallest back-test error "
               f"on this run (mean |error| {s.err:.2g}% of the measured maximum over {tests} "
               f"subset(s), {tests - missed} of {tests} consistent with the measurement)")
    else:
        why = f"{best[0]} {best[1]}: no flag at this scale (no back-test)"
    return rows.loc[best], why


def _iterations_needed(cells: int, scale: int, ci: float) -> int:
    """Rank-iterations from which unseen excursions touch at most UNSEEN_SHARE of the
    iterations at ``scale`` (bisection on the monotone bound)."""
    lo, hi = cells, cells
    while stragglers.unseen_share(hi, scale, ci) > stragglers.UNSEEN_SHARE:
        lo, hi = hi, hi * 2
    while hi - lo > max(1, lo // 1000):
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if stragglers.unseen_share(mid, scale, ci) > \
            stragglers.UNSEEN_SHARE else (lo, mid)
    return int(hi)
