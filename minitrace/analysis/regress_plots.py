"""Evolution plots of a non-regression history: each metric over time with its reference mean
and prediction ribbon (what the next run was expected within), change points as vertical
lines, flagged runs in colour.  Twelve metrics per page: a PDF gets one page each, another
format one file each (``name.png``, ``name-2.png``, ...)."""
from __future__ import annotations

import os

import matplotlib.dates as mdates
import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from ..outputs import replacing_file
from . import regress as R
from .plotting import plt, save

PER_PAGE = 12
_STYLE = {R.OK: ("0.25", "ok"), R.NO_REFERENCE: ("0.7", "no reference yet"),
          R.REGRESSION: ("tab:red", "regression"), R.IMPROVEMENT: ("tab:green", "improvement"),
          R.CHANGED: ("tab:orange", "changed")}


def pages_of(select: list[int]) -> int:
    """Pages drawn for the metrics ``select``."""
    return max(1, -(-len(select) // PER_PAGE))


def page_paths(path: str, pages: int) -> list[str]:
    """The files written for ``pages`` pages (one file when it is a PDF)."""
    if path.lower().endswith(".pdf") or pages <= 1:
        return [path]
    stem, ext = os.path.splitext(path)
    return [path] + [f"{stem}-{k}{ext}" for k in range(2, pages + 1)]


def _times(dates) -> tuple[np.ndarray, str]:
    """The x axis: the runs' dates when every one parses, else the run numbers."""
    t = pd.to_datetime(pd.Series(list(dates), dtype=object), utc=True, errors="coerce",
                       format="ISO8601")
    if len(t) and not t.isna().any():
        return t.dt.tz_localize(None).to_numpy(), "date (UTC)"
    return np.arange(len(dates)), "run"


def plot_evolution(path: str, names: list[str], dates, values: np.ndarray,
                   a: R.Assessment, change_points: list[int], select: list[int],
                   gamma: float) -> list[str]:
    """Draw the metrics ``select`` (indices into ``names``); returns the files written.
    Pages of the same shape are drawn on one figure in turn (its axes and their ticks are
    made once: making them was most of the time of a many-page history)."""
    x, xlabel = _times(dates)
    pages = [select[k:k + PER_PAGE] for k in range(0, len(select), PER_PAGE)] or [[]]
    paths = page_paths(path, pages_of(select))
    figures: dict = {}
    try:
        if path.lower().endswith(".pdf") and len(pages) > 1:
            from matplotlib.backends.backend_pdf import PdfPages
            with replacing_file(path, "wb") as f, PdfPages(f) as pdf:
                for page in pages:
                    pdf.savefig(_draw(figures, names, x, xlabel, values, a, change_points, page,
                                      gamma))
            return paths
        for page, p in zip(pages, paths):
            save(_draw(figures, names, x, xlabel, values, a, change_points, page, gamma), p,
                 close=False)
        return paths
    finally:
        for fig, _ in figures.values():
            plt.close(fig)


def _figure(figures: dict, n: int, xlabel: str, dated: bool):
    """The figure (and its axes) of a page of ``n`` metrics, made at the first such page."""
    cols = min(3, max(1, n))
    rows = max(1, -(-n // cols))
    if (rows, cols) not in figures:
        # one x axis (the runs' dates) labelled under each column only
        fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.0 * rows + 0.6),
                                 squeeze=False, sharex=True)
        for c in range(n % cols and cols):    # a column ending above an empty slot
            axes[-2, c].xaxis.set_tick_params(labelbottom=c >= n % cols)
        # fixed margins (inches) and titles at a fixed height: tight_layout and the automatic
        # title placement measured every tick label of every axes
        h, w = fig.get_size_inches()[::-1]
        fig.subplots_adjust(left=0.55 / w, right=1 - 0.15 / w, top=1 - 0.3 / h,
                            bottom=0.85 / h, wspace=0.25, hspace=0.45)
        fig.text(0.5, 0.4 / h, f"x: {xlabel}", ha="center", fontsize=7)
        for ax in axes.ravel():
            ax.xaxis.set_label_coords(0.5, -0.1)    # (no axis labels: not placed either)
            ax.yaxis.set_label_coords(-0.1, 0.5)
            ax.yaxis.set_major_locator(MaxNLocator(5))
            ax.tick_params(labelsize=7)
            if dated:
                locator = mdates.AutoDateLocator(maxticks=6)
                ax.xaxis.set_major_locator(locator)
                ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        figures[rows, cols] = fig, axes
    return figures[rows, cols]


def _draw(figures, names, x, xlabel, values, a, change_points, page, gamma):
    fig, axes = _figure(figures, len(page), xlabel,
                        np.issubdtype(np.asarray(x).dtype, np.datetime64))
    for legend in list(fig.legends):
        legend.remove()
    for k, ax in enumerate(axes.ravel()):
        for artist in [*ax.lines, *ax.collections]:
            artist.remove()
        ax.ignore_existing_data_limits = True
        ax.set_visible(k < len(page))
    for ax, j in zip(axes.ravel(), page):
        mean, hw = a.ref_mean[:, j], a.half_width[:, j]
        ax.fill_between(x, mean - hw, mean + hw, step="mid", color="tab:blue", alpha=0.2,
                        lw=0, label=f"{100 * gamma:g}% prediction interval")
        ax.plot(x, mean, color="tab:blue", lw=0.9, drawstyle="steps-mid",
                label="reference mean")
        for code, (color, label) in _STYLE.items():
            sel = a.verdict[:, j] == code
            if sel.any():
                big = code in (R.REGRESSION, R.IMPROVEMENT, R.CHANGED)
                ax.plot(x[sel], values[sel, j], "o" if big else ".", ms=5 if big else 3,
                        color=color, label=f"{label} ({int(sel.sum())})", zorder=3)
        for k, cp in enumerate(change_points):
            ax.axvline(x[cp], color="tab:purple", ls="--", lw=0.9,
                       label="change point" if k == 0 else None)
        ax.set_title(names[j], fontsize=8, y=1.0, pad=3)
        ax.autoscale_view()
    if page:
        handles, labels = {}, {}
        for ax in axes.ravel()[:len(page)]:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                key = lab.split(" (")[0]
                handles.setdefault(key, h)
                labels.setdefault(key, key)
        fig.legend(list(handles.values()), list(labels.values()), loc="lower center",
                   ncol=len(handles), fontsize=8, frameon=False)
    return fig
