"""Figure of the variability analysis: fitted GEV densities, QQ plots and projections."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import ticker
from scipy import stats

from . import gev
from .plotting import plt, save

_COLORS = {"pwm": "tab:blue", "mom": "tab:orange", "mle": "tab:green", "nonparam": "tab:gray"}
_STYLE = {"inter-node": "-", "intra-node": "--", "stragglers": "-.", "non-parametric": ":"}
SPLIT_RATIO = 10      # methods whose projections differ by more than this get a panel each


def projection_panels(proj: pd.DataFrame) -> list[list[str]]:
    """Methods per projection panel: all in one, or one panel per method when their largest
    finite upper bounds differ by more than ``SPLIT_RATIO`` (one would flatten the others)."""
    top = proj.replace([np.inf, -np.inf], np.nan).groupby("method", sort=False).hi.max()
    top = top[top > 0]
    methods = list(dict.fromkeys(proj.method))
    if len(top) > 1 and top.max() / top.min() > SPLIT_RATIO:
        return [[m] for m in methods]
    return [methods]


def plot_gev(path: str, var, fits: pd.DataFrame, proj: pd.DataFrame, checks=(),
             ci: float = 0.95) -> None:
    """Histogram of the per-iteration maxima with the fitted GEV densities (drawn on
    non-negative times only), QQ plot per estimator (limits hold every point), and the
    projected estimate and CI against ranks on log axes, from the measured scale on, with
    the measured point(s)."""
    x = var.maxima
    good = fits[fits.ok]
    panels = projection_panels(proj)
    fig, axes = plt.subplots(1, 2 + len(panels), figsize=(5.4 * (2 + len(panels)), 4.8),
                             squeeze=False)
    ax = axes[0]
    ax[0].hist(x, bins=min(60, max(10, len(x) // 15)), density=True, color="0.8",
               edgecolor="0.6", label=f"measured ({len(x)} iterations)")
    grid = np.linspace(max(0.0, x.min() - 0.1 * np.ptp(x)), x.max() + 0.1 * np.ptp(x), 400)
    for r in good.itertuples():
        ax[0].plot(grid, stats.genextreme.pdf(grid, r.shape, loc=r.loc, scale=r.scale),
                   color=_COLORS[r.method],
                   label=f"{r.method}: k={r.shape:+.3f} (type {r.type})")
    ax[0].set(title="Per-iteration maximum over all ranks", xlabel="seconds", ylabel="density")
    ax[0].legend(fontsize=8)

    ends = [x.min(), x.max()]
    for r in good.itertuples():
        theo, xs = gev.qq(x, r.loc, r.scale, r.shape)
        ax[1].plot(theo, xs, ".", ms=3, color=_COLORS[r.method],
                   label=f"{r.method} (KS {r.ks:.3f}, p_ad {r.p_ad:.2g})")
        ends += [np.nanmin(theo[np.isfinite(theo)]), np.nanmax(theo[np.isfinite(theo)])]
    lo, hi = min(ends), max(ends)
    pad = 0.03 * (hi - lo)
    ax[1].plot([lo, hi], [lo, hi], color="k", lw=0.8, label="y = x")
    ax[1].set(title="QQ plot against the fitted GEVs", xlim=(lo - pad, hi + pad),
              ylim=(lo - pad, hi + pad), xlabel="fitted quantile (s)",
              ylabel="measured quantile (s)")
    ax[1].legend(fontsize=8)

    for a, methods in zip(ax[2:], panels):
        _projection_panel(a, var, proj[proj.method.isin(methods)], checks, ci)
    fig.tight_layout()
    save(fig, path)


def _projection_panel(a, var, proj: pd.DataFrame, checks, ci: float) -> None:
    """Estimate and CI band per method and model against ranks (log-log; infinite bounds
    left out, bands cut at half the smallest time), the measured mean at the run's own
    scale and the check runs."""
    proj = proj.replace([np.inf, -np.inf], np.nan)
    measured = var.maxima.mean()
    log = measured > 0 and proj.estimate.min() > 0
    floor = min(measured, proj.estimate.min()) / 2 if log else -np.inf   # a time is > 0
    for (method, model), g in proj.groupby(["method", "model"], sort=False):
        g = g.sort_values("scale")
        c = _COLORS[method]
        a.plot(g.scale, g.estimate, _STYLE[model], marker="o", ms=3, color=c,
               label=f"{method} {model}" + (" (flagged)" if (g["flags"] != "").any() else ""))
        a.fill_between(g.scale, np.maximum(g.lo, floor), g.hi, color=c, alpha=0.12)
    a.plot([var.nranks], [var.maxima.mean()], "k*", ms=11,
           label=f"measured ({var.nranks} ranks)")
    for v in checks:
        a.plot([v.nranks], [v.maxima.mean()], "rD", ms=7)
    if len(checks):
        a.plot([], [], "rD", label="measured (check runs)")
    a.set_xscale("log", base=2)
    if log:
        a.set_yscale("log")
        plain = ticker.FuncFormatter(lambda v, _: f"{v:.4g}")
        a.yaxis.set_major_formatter(plain)
        lo, hi = a.get_ylim()
        a.yaxis.set_minor_formatter(plain if hi / lo < 10 else ticker.NullFormatter())
    a.set(title=f"Projected mean max per iteration: estimate, {ci:.0%} CI",
          xlabel="ranks", ylabel="seconds")
    a.legend(fontsize=8)
