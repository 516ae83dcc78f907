"""A few lines per bench suite for ``minitrace info``: the headline numbers computed from the
stored raw arrays, so that a file can be judged without loading it in Python.  Times are
printed in microseconds, bandwidths in MB/s (10^6 B/s), every number with 6 significant digits."""
from __future__ import annotations

import warnings

import numpy as np

from ..checked import corrupt, first_line
from ..errors import MinitraceError


def num(x: float) -> str:
    """The one number format of the summaries (tests parse it back)."""
    return f"{float(x):.6g}"


def variability(b) -> list[str]:
    """Iterations, ranks, workload; the per-iteration maxima (what a bulk-synchronous step
    costs) and the mean per-rank time (what the work alone costs)."""
    times, maxima = b["times"], b["maxima"]
    a = b.attrs
    rank_means = times.mean(axis=0)
    return [f"{a['workload']}{' + halo' if a.get('halo') else ''}, {times.shape[0]} iterations"
            f" x {times.shape[1]} ranks",
            f"per-iteration max (us): mean {num(maxima.mean() * 1e6)} median "
            f"{num(np.median(maxima) * 1e6)} max {num(maxima.max() * 1e6)}",
            f"mean per-rank time (us): {num(times.mean() * 1e6)} (rank means "
            f"{num(rank_means.min() * 1e6)} to {num(rank_means.max() * 1e6)})"]


def pt2pt_message_time(b, rows: np.ndarray) -> np.ndarray:
    """Seconds per message of ``rows`` (one kind): half the round trip (pingpong), the
    iteration (pingping: both directions at once), the iteration over the window (bandwidth)."""
    kind = b["kind"][rows[0]]
    if kind == "pingpong":
        return b["t_roundtrip"][rows] / 2
    if kind == "pingping":
        return b["t_iter"][rows]
    return b["t_iter"][rows] / b.attrs["window"]


def pt2pt(b) -> list[str]:
    """Per pair and kind: latency at the smallest size, bandwidth at the largest (medians over
    repetitions), plus the design and the number of measurements."""
    a = b.attrs
    out = [f"{a['design']} design, {a['order']} order, {len(b['size'])} measurements"]
    for pair in dict.fromkeys(b["pair"].tolist()):
        for kind in dict.fromkeys(b["kind"].tolist()):
            rows = np.nonzero((b["pair"] == pair) & (b["kind"] == kind))[0]
            if not len(rows):
                continue
            sizes = b["size"][rows]
            lo, hi = rows[sizes == sizes.min()], rows[sizes == sizes.max()]
            lat = np.median(pt2pt_message_time(b, lo))
            bw = (np.median(b["bandwidth"][hi]) if kind == "bandwidth"
                  else np.median(b["size"][hi] / pt2pt_message_time(b, hi)))
            out.append(f"{pair} {kind}: latency {num(lat * 1e6)} us at {sizes.min()} B, "
                       f"bandwidth {num(bw / 1e6)} MB/s at {sizes.max()} B ({len(rows)} "
                       f"measurements)")
    return out


def collectives(b) -> list[str]:
    """Per op: the median over iterations of the slowest rank's time (t_max) at the smallest
    and the largest size."""
    a = b.attrs
    out = [f"{a['nranks']} ranks, {a['iterations']} iterations per (op, size), {a['sync']} "
           f"sync, {a['order']} order"]
    for op in dict.fromkeys(b["op"].tolist()):
        sel = b["op"] == op
        sizes = b["size"][sel]
        parts = []
        for s in dict.fromkeys([int(sizes.min()), int(sizes.max())]):
            parts.append(f"{num(np.median(b['t_max'][sel & (b['size'] == s)]) * 1e6)} us at "
                         f"{s} B")
        out.append(f"{op}: median t_max {', '.join(parts)}")
    return out


def partitioned(b) -> list[str]:
    """Per mode: the median effective bandwidth at the largest size; whether the partitioned
    mode was the library's MPI-4 implementation or the emulation."""
    a = b.attrs
    how = ("emulated (one Isend per partition)" if a["emulated"]
           else "native MPI-4 Psend_init/Precv_init")
    out = [f"{a['threads']} threads, mu {num(a['mu'])} s, v {num(a['v'])}, {how}"]
    big = int(b["size"].max())
    for mode in dict.fromkeys(b["mode"].tolist()):
        sel = (b["mode"] == mode) & (b["size"] == big)
        out.append(f"{mode}: median bandwidth {num(np.median(b['bandwidth'][sel]) / 1e6)} "
                   f"MB/s at {big} B ({int(sel.sum())} runs)")
    return out


def thresholds(b) -> list[str]:
    """Each probe's bracket [last size without the switch, first size with it], or the stored
    "no switch found" result."""
    out = []
    for probe in b.attrs["probes"]:
        res = b.attrs[f"{probe}_threshold"]
        n = int((b["probe"] == probe).sum())
        what = (f"switch between {res[0]} and {res[1]} B" if isinstance(res, list) else res)
        out.append(f"{probe}: {what} ({n} probes)")
    return out


SUMMARIES = {"variability": variability, "pt2pt": pt2pt, "collectives": collectives,
             "partitioned": partitioned, "thresholds": thresholds}


def summarize(b, path: str) -> list[str]:
    """The summary lines of one suite's results (none for a suite this version does not know);
    a group missing a column it should have is a one-line error naming the file."""
    f = SUMMARIES.get(b.name)
    if f is None:
        return []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # e.g. the mean of an empty slice
            return f(b)
    except KeyError as e:
        raise MinitraceError(f"bench/{b.name} lacks {e}: not written by a complete run", path) \
            from None
    except (ValueError, IndexError, RuntimeWarning):  # statistics of an empty column
        raise MinitraceError(f"bench/{b.name} holds no measurements", path) from None
    except (TypeError, AttributeError) as e:   # a column or parameter of another type
        raise corrupt("benchmark results", f"bench/{b.name}: a column or parameter of the "
                      f"wrong type ({first_line(e)})", path) from None
