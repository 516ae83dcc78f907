"""Figure of the variability analysis: fitted GEV densities, QQ plots and projections."""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from . import gev
from .plotting import plt, save

_COLORS = {"pwm": "tab:blue", "mom": "tab:orange", "mle": "tab:green", "nonparam": "tab:gray"}
_STYLE = {"inter-node": "-", "intra-node": "--", "non-parametric": ":"}


def plot_gev(path: str, var, fits: pd.DataFrame, proj: pd.DataFrame, checks=(),
             ci: float = 0.95) -> None:
    """Three panels: histogram of the per-iteration maxima with the fitted GEV densities,
    QQ plot per estimator, projected median and CI against scale with measured points."""
    x = var.maxima
    good = fits[fits.ok]
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.8))
    ax[0].hist(x, bins=min(60, max(10, len(x) // 15)), density=True, color="0.8",
               edgecolor="0.6", label=f"measured ({len(x)} iterations)")
    grid = np.linspace(x.min() - 0.1 * np.ptp(x), x.max() + 0.1 * np.ptp(x), 400)
    for r in good.itertuples():
        ax[0].plot(grid, stats.genextreme.pdf(grid, r.shape, loc=r.loc, scale=r.scale),
                   color=_COLORS[r.method], label=f"{r.method}: k={r.shape:+.3f} (type {r.type})")
    ax[0].set(title="Per-iteration maximum over all ranks", xlabel="seconds", ylabel="density")
    ax[0].legend(fontsize=8)

    pad = 0.15 * np.ptp(x)
    lo, hi = x.min() - pad, x.max() + pad      # a heavy fitted tail would squash the rest
    for r in good.itertuples():
        theo, xs = gev.qq(x, r.loc, r.scale, r.shape)
        ax[1].plot(theo, xs, ".", ms=3, color=_COLORS[r.method],
                   label=f"{r.method} (KS {r.ks:.3f})")
    ax[1].plot([lo, hi], [lo, hi], color="k", lw=0.8, label="y = x")
    ax[1].set(title="QQ plot against the fitted GEVs", xlim=(lo, hi), ylim=(lo, hi),
              xlabel="fitted quantile (s; clipped to the measured range)",
              ylabel="measured quantile (s)")
    ax[1].legend(fontsize=8)

    for (method, model), g in proj.groupby(["method", "model"], sort=False):
        g = g.sort_values("scale")
        c = _COLORS[method]
        ax[2].plot(g.scale, g["median"], _STYLE[model], marker="o", ms=3, color=c,
                   label=f"{method} {model}")
        ax[2].fill_between(g.scale, g.lo, g.hi, color=c, alpha=0.12)
    ax[2].plot([var.nranks], [x.mean()], "k*", ms=11, label=f"measured ({var.nranks} ranks)")
    for v in checks:
        ax[2].plot([v.nranks], [v.maxima.mean()], "rD", ms=7)
    if len(checks):
        ax[2].plot([], [], "rD", label="measured (check runs)")
    ax[2].set_xscale("log", base=2)
    ax[2].set(title=f"Projected mean max per iteration: median, {ci:.0%} CI",
              xlabel="ranks", ylabel="seconds")
    ax[2].legend(fontsize=8)
    fig.tight_layout()
    save(fig, path)
