"""Figures for the variability analysis (matplotlib, Agg: no display needed)."""
from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backend_bases import FigureCanvasBase  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy import stats  # noqa: E402

from . import gev  # noqa: E402
from .errors import MinitraceError  # noqa: E402
from .partitioned_model import MB  # noqa: E402

_COLORS = {"pwm": "tab:blue", "mom": "tab:orange", "mle": "tab:green", "nonparam": "tab:gray"}
_STYLE = {"inter-node": "-", "intra-node": "--", "non-parametric": ":"}


def check_plot_path(path: str) -> None:
    """Refuse a plot path that savefig would refuse, before the (long) computation it plots:
    a directory, a missing or read-only parent directory, an image format matplotlib lacks."""
    parent = os.path.dirname(os.path.abspath(path))
    ext = os.path.splitext(path)[1][1:].lower()
    formats = FigureCanvasBase.get_supported_filetypes()
    if os.path.isdir(path):
        raise MinitraceError("is a directory: give the name of the image file to write", path)
    if not os.path.isdir(parent):
        raise MinitraceError("cannot write the plot: no such directory", path)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise MinitraceError("cannot write the plot: its directory is not writable", path)
    if ext and ext not in formats:
        raise MinitraceError(f"cannot write the plot: unknown image format {ext!r} (one of "
                             f"{', '.join(sorted(formats))})", path)


def _save(fig, path: str) -> None:
    try:
        fig.savefig(path, dpi=110)
    except OSError as e:
        raise MinitraceError(f"cannot write the plot: {e.strerror or e}", path) from None
    finally:
        plt.close(fig)


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
    _save(fig, path)


def plot_partitioned(path: str, model: pd.DataFrame, compare: pd.DataFrame | None = None,
                     title: str = "") -> None:
    """Effective bandwidth against message size: model curves (partitioned and single send
    per thread count) and, if given, the measured bench points."""
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (t, g) in enumerate(model.groupby("threads")):
        g = g.sort_values("size")
        c = f"C{i}"
        ax.plot(g["size"], g.bw_effective / MB, "-", color=c, label=f"model partitioned, {t} threads")
        ax.plot(g["size"], g.bw_single / MB, ":", color=c, label=f"model single send, {t} threads")
        if compare is not None:
            m = compare[compare.threads == t]
            for mode, mk in (("partitioned", "o"), ("baseline", "x")):
                mm = m[m["mode"] == mode]
                if len(mm):
                    ax.plot(mm["size"], mm.measured_bw / MB, mk, color=c, ms=7,
                            label=f"bench {mode}, {t} threads")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(xlabel="buffer size (bytes)", ylabel="effective bandwidth (MB/s, MB = 10^6 B)",
           title=title or "Partitioned communication: model vs bench")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path)
