"""The metrics of one run for the non-regression history: a few numbers per benchmark size or
operation, read from the ``/bench/<suite>`` groups of a minitrace file.

Each metric has a name ``suite/.../statistic`` (metrics differing only in the statistic form a
group that is also tested jointly), a value, and a direction: +1 when higher is worse (times,
spreads), -1 when higher is better (bandwidths), 0 when neither is (a protocol switch size, or
any number of a group this module does not know: its changes are reported as changes).
"""
from __future__ import annotations

import warnings

import numpy as np

from .bench_summary import pt2pt_message_time
from ..errors import MinitraceError

HISTORY_SUITE = "history"  # the group holding a history (never a run's metrics)
_GENERIC_ELEMENTS = 16  # an unknown group's datasets up to this size: one metric per element


def _mean_sd(prefix: str, x: np.ndarray, direction: int) -> list[tuple[str, float, int]]:
    """``prefix/mean`` (with ``direction``) and ``prefix/sd`` (higher is worse; needs 2
    finite values) of the finite values of ``x``."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if not len(x):
        return []
    out = [(f"{prefix}/mean", float(x.mean()), direction)]
    if len(x) > 1:
        out.append((f"{prefix}/sd", float(x.std(ddof=1)), 1))
    return out


def variability(b) -> list:
    """The per-iteration maxima (what a bulk-synchronous step costs) and every rank's
    per-iteration times (what the work costs): mean and spread of each."""
    a = b.attrs
    tag = f"variability/{a['workload']}{'+halo' if a.get('halo') else ''}/np{a['nranks']}"
    return _mean_sd(f"{tag}/maxima", b["maxima"], 1) + _mean_sd(f"{tag}/times", b["times"], 1)


def pt2pt(b) -> list:
    """Per pair, kind and size: the time per message (as ``minitrace info`` defines it) over
    the repetitions.  The random design draws the same sizes for the same ``--seed`` only."""
    out = []
    for pair in dict.fromkeys(b["pair"].tolist()):
        for kind in dict.fromkeys(b["kind"].tolist()):
            sel = (b["pair"] == pair) & (b["kind"] == kind)
            for size in np.unique(b["size"][sel]):
                rows = np.nonzero(sel & (b["size"] == size))[0]
                out += _mean_sd(f"pt2pt/{pair}/{kind}/{int(size)}", pt2pt_message_time(b, rows),
                                1)
    return out


def collectives(b) -> list:
    """Per operation and size: the slowest rank's time per iteration (``t_max``)."""
    a = b.attrs
    out = []
    for op in dict.fromkeys(b["op"].tolist()):
        for size in np.unique(b["size"][b["op"] == op]):
            sel = (b["op"] == op) & (b["size"] == size)
            out += _mean_sd(f"collectives/{a['sync']}/np{a['nranks']}/{op}/{int(size)}",
                            b["t_max"][sel], 1)
    return out


def partitioned(b) -> list:
    """Per mode and size: the effective bandwidth (higher is better) over the runs."""
    out = []
    for mode in dict.fromkeys(b["mode"].tolist()):
        for size in np.unique(b["size"][b["mode"] == mode]):
            sel = (b["mode"] == mode) & (b["size"] == size)
            out += _mean_sd(f"partitioned/t{b.attrs['threads']}/{mode}/{int(size)}",
                            b["bandwidth"][sel], -1)
    return out


def thresholds(b) -> list:
    """Per probe: the first size where the protocol switched (absent when none was found);
    neither direction is worse, so a move is a change."""
    out = []
    for probe in b.attrs["probes"]:
        res = b.attrs[f"{probe}_threshold"]
        if isinstance(res, list):
            out.append((f"thresholds/{probe}/switch", float(res[1]), 0))
    return out


def generic(b) -> list:
    """A group this module does not know (e.g. a calibration's fitted coefficients): each
    element of a small numeric dataset is a metric, a larger one gives mean and spread; the
    direction is unknown (0)."""
    out = []
    for name, arr in sorted(b.arrays.items()):
        if arr.dtype.kind not in "iuf":
            continue
        flat = arr.astype(float).ravel()
        if flat.size <= _GENERIC_ELEMENTS:
            out += [(f"{b.name}/{name}" + (f"/{i}" if flat.size > 1 else ""), float(x), 0)
                    for i, x in enumerate(flat) if np.isfinite(x)]
        else:
            out += [(n, v, 0) for n, v, _ in _mean_sd(f"{b.name}/{name}", flat, 0)]
    return out


EXTRACTORS = {"variability": variability, "pt2pt": pt2pt, "collectives": collectives,
              "partitioned": partitioned, "thresholds": thresholds}


def run_metrics(t) -> dict[str, tuple[float, int]]:
    """name -> (value, direction) over every bench group of an open minitrace file ``t``; a
    file without any is a one-line error."""
    out: dict[str, tuple[float, int]] = {}
    suites = [s for s in t.suites if s != HISTORY_SUITE]
    if not suites:
        raise MinitraceError("holds no benchmark results (/bench/<suite>) to test", t.path)
    for suite in suites:
        b = t.bench(suite)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                metrics = EXTRACTORS.get(suite, generic)(b)
        except (KeyError, IndexError, ValueError, RuntimeWarning) as e:
            raise MinitraceError(f"bench/{suite}: cannot extract metrics ({e!r}): not written "
                                 "by a complete run", t.path) from None
        for name, value, direction in metrics:
            out[name] = (value, direction)
    return out
