"""What every analysis figure shares: matplotlib without a display (Agg), the early check of
the image path (before a long computation) and the save that turns an OS error into one line."""
from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backend_bases import FigureCanvasBase  # noqa: E402

from ..errors import MinitraceError  # noqa: E402
from ..outputs import check_output_file, replacing_file  # noqa: E402


def check_plot_path(path: str) -> None:
    """Refuse a plot path that savefig would refuse, before the (long) computation it plots:
    what ``outputs.check_output_file`` refuses, and an image format matplotlib lacks."""
    ext = os.path.splitext(path)[1][1:].lower()
    formats = FigureCanvasBase.get_supported_filetypes()
    check_output_file(path)
    if ext and ext not in formats:
        raise MinitraceError(f"cannot write the plot: unknown image format {ext!r} (one of "
                             f"{', '.join(sorted(formats))})", path)


def save(fig, path: str, close: bool = True) -> None:
    """Write ``fig`` to ``path`` whole or not at all (a temporary renamed into place) and close
    it (unless ``close`` is False: the caller draws it again); a write failure is one line
    naming the file."""
    ext = os.path.splitext(path)[1][1:].lower()
    fmt = ext or matplotlib.rcParams["savefig.format"]
    try:   # (without an extension, savefig(path) would have added the format's)
        with replacing_file(path if ext else f"{path}.{fmt}", "wb") as f:
            fig.savefig(f, format=fmt, dpi=110)
    finally:
        if close:
            plt.close(fig)
