"""Back-test the projections on the user's own run, and recommend one of them.

A run at n ranks is the only truth a user has: each method projects from subsets of its ranks
(n/8, n/4, n/2 ranks) to all n, and its error against the measured mean per-iteration maximum
says how well it extrapolates on this machine and workload.  Subsets keep the node layout
where they can (fewer ranks on every node, else fewer nodes), so both parametric models still
see nodes and slots.  The recommendation is the unflagged method with the fewest back-tests
inconsistent with the measurement and then the smallest mean error (if every method is
flagged, the one with a finite, positive interval that back-tests best, said to be flagged).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

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


def recommend(bt: pd.DataFrame, proj: pd.DataFrame, scale: int) -> tuple[pd.Series, str] | None:
    """The projection row at ``scale`` to trust, and why: among the (method, model) pairs
    whose row at that scale has no flag (all of them if every row is flagged), the one with
    the fewest back-tests inconsistent with the measurement, then the smallest mean |error|.
    When every row is flagged, only rows with a finite, positive interval compete.  None when
    there is no back-test (a run of one rank) or nothing usable."""
    if bt.empty:
        return None
    rows = proj[proj.scale == scale].set_index(["method", "model"])
    score = bt.groupby(["method", "model"]).agg(
        missed=("consistent", lambda c: int((~c).sum())), tests=("consistent", "size"),
        err=("error_pct", lambda e: float(np.mean(np.abs(e)))))
    score = score[score.index.isin(rows.index)]
    at = rows.loc[score.index]
    clean = score[at["flags"].to_numpy() == ""]
    usable = score[(np.isfinite(at.hi) & (at.lo > 0)).to_numpy()]
    pool = clean if len(clean) else usable
    if pool.empty:
        return None
    best = pool.sort_values(["missed", "err"]).index[0]
    s = pool.loc[best]
    tests, missed = int(s.tests), int(s.missed)
    why = (f"{best[0]} {best[1]}: smallest back-test error on this run (mean |error| "
           f"{s.err:.2g}% of the measured maximum over {tests} subset(s), "
           f"{tests - missed} of {tests} consistent with the measurement)")
    why += ", no flag at this scale" if len(clean) else \
        "; every method is flagged at this scale, so read the flags before trusting it"
    return rows.loc[best], why
