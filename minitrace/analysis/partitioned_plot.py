"""Figure of the partitioned-communication model: effective bandwidth against message size,
model curves and measured bench points."""
from __future__ import annotations

import pandas as pd

from .partitioned_model import MB
from .plotting import plt, save


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
    save(fig, path)
