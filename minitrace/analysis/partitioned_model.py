"""Model of MPI partitioned communication under thread-time variability (seed 004 ch. 4,
Algorithm 1).

T threads each compute for a normal(mu, sigma) time (sigma = mu v^2 for variability v) and
then mark their partition of one buffer ready.  Without partitions, the whole buffer is sent
after the last thread: extra time = message time(size).  With partitions, partitions of the
early threads travel while the later ones still compute:

* last thread:  T_last = EMMA of normal(mu, sigma) over T units = F^-1(0.570376002^(1/T));
* overlap window: 2 (T_last - mu) (threads finish symmetrically around mu);
* partitions hidden: min(floor(window / t(size/T)), T - 1);
* extra time: (T - hidden) t(size/T); effective bandwidth size / extra time.

Message time t(s) = latency(s) + s / bandwidth(s), from a latency/bandwidth table by message
size (shipped CSVs, a bench ``pt2pt`` suite, or constants).  Units: seconds and bytes/s
internally; sizes in MB mean 10^6 bytes and bandwidths in MB/s mean 10^6 bytes/s.  Display
convention: times in microseconds with as many decimals as it takes to recompute the
printed bandwidths (at least two), bandwidths rounded to whole MB/s.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from importlib import resources

import numpy as np
import pandas as pd
from scipy import stats

from .emma import emma
from ..errors import MinitraceError
from ..trace import open as mt_open

MB = 1e6
US = 1e-6
SHIPPED_TABLES = ("lassen", "quartz")


@dataclass
class LinkTable:
    """Latency (s) and bandwidth (bytes/s) by message size (bytes), interpolated linearly in
    log(size) (log bandwidth), clamped to the end rows outside the table."""
    size: np.ndarray
    latency: np.ndarray
    bandwidth: np.ndarray
    source: str

    @classmethod
    def constant(cls, latency_s: float, bandwidth_Bps: float) -> "LinkTable":
        """One latency and one bandwidth for every size (the thesis's worked example)."""
        return cls(np.array([1.0]), np.array([latency_s]), np.array([bandwidth_Bps]),
                   f"constant {latency_s / US:g} us, {bandwidth_Bps / MB:g} MB/s")

    def message_time(self, nbytes):
        """Seconds to send ``nbytes``: latency + size / bandwidth, interpolated in log size."""
        s = np.log(np.maximum(np.asarray(nbytes, dtype=float), 1.0))
        x = np.log(self.size)
        lat = np.interp(s, x, self.latency)
        bw = np.exp(np.interp(s, x, np.log(self.bandwidth)))
        return lat + np.asarray(nbytes, dtype=float) / bw


def _checked(size, lat, bw, source) -> LinkTable:
    order = np.argsort(size)
    size, lat, bw = (np.asarray(a, dtype=float)[order] for a in (size, lat, bw))
    if len(size) == 0 or np.any(size <= 0) or np.any(lat < 0) or np.any(bw <= 0) or \
            not np.all(np.isfinite(np.concatenate([size, lat, bw]))) or \
            len(np.unique(size)) != len(size):
        raise MinitraceError("latency/bandwidth table needs distinct positive sizes, "
                             "non-negative latencies and positive bandwidths", source)
    return LinkTable(size, lat, bw, source)


def load_table(name_or_path: str) -> LinkTable:
    """A shipped table ('lassen', 'quartz': representative, NOT the thesis's numbers), a CSV
    (size_bytes, latency_us, bandwidth_MBps; '#' comments) or a minitrace file with a bench
    ``pt2pt`` suite (ping-pong rows)."""
    if name_or_path in SHIPPED_TABLES:
        src = resources.files("minitrace") / "data" / f"{name_or_path}.csv"
        with resources.as_file(src) as p:
            return _read_csv(str(p), name_or_path)
    if not os.path.exists(name_or_path):
        raise MinitraceError(f"no such table (shipped: {', '.join(SHIPPED_TABLES)})",
                             name_or_path)
    if name_or_path.endswith(".csv"):
        return _read_csv(name_or_path, name_or_path)
    return table_from_pt2pt(name_or_path)


def _read_csv(path: str, source: str) -> LinkTable:
    try:
        df = pd.read_csv(path, comment="#")
        return _checked(df["size_bytes"], df["latency_us"] * US, df["bandwidth_MBps"] * MB,
                        source)
    except (KeyError, ValueError, pd.errors.ParserError) as e:
        raise MinitraceError(f"not a size_bytes,latency_us,bandwidth_MBps table ({e})",
                             path) from None


def table_from_pt2pt(path: str) -> LinkTable:
    """Table from measured ping-pongs: one-way time t(s) = median round trip / 2; latency =
    t at the smallest size; bandwidth(s) = s / (t(s) - latency), so that the model's message
    time equals the measured one-way time at every measured size."""
    with mt_open(path) as t:
        df = t.bench("pt2pt").table()
    if not {"kind", "size", "t_roundtrip"} <= set(df.columns):
        raise MinitraceError("pt2pt results lack kind/size/t_roundtrip columns", path)
    pp = df[df["kind"] == "pingpong"]
    if "pair" in pp.columns and (pp["pair"] == "inter").any():
        pp = pp[pp["pair"] == "inter"]              # the model is for inter-node messages
    one_way = pp.groupby("size")["t_roundtrip"].median() / 2
    if len(one_way) < 2:
        raise MinitraceError("pt2pt results need ping-pongs at two or more sizes", path)
    lat = float(one_way.iloc[0])
    sizes = one_way.index.to_numpy(dtype=float)
    extra = np.maximum(one_way.to_numpy() - lat, 1e-12)
    keep = sizes > 0
    bw = sizes[keep] / np.maximum(extra[keep], sizes[keep] / 1e15)
    return _checked(sizes[keep], np.full(keep.sum(), lat), bw, f"{path} (bench pt2pt)")


def model(threads: int, size: float, mu: float, sigma: float, table: LinkTable) -> dict:
    """Algorithm 1 for one configuration (times in s, size in bytes, bandwidths in B/s)."""
    if threads < 1 or size <= 0 or mu <= 0 or sigma < 0:
        raise ValueError("threads >= 1, size > 0, mu > 0 and sigma >= 0 are required")
    # one thread is its own maximum: E = mu (EMMA's F^-1(0.5704) is mu + 0.18 sigma there)
    t_last = float(emma(stats.norm(mu, sigma), threads)) if sigma > 0 and threads > 1 else mu
    t_single = float(table.message_time(size))
    t_part = float(table.message_time(size / threads))
    window = 2 * (t_last - mu)
    hidden = min(math.floor(window / t_part), threads - 1)
    extra = (threads - hidden) * t_part
    return dict(threads=threads, size=size, mu=mu, sigma=sigma, t_last=t_last,
                t_single=t_single, bw_single=size / t_single, t_partition=t_part,
                overlap=window, hidden=hidden, t_extra=extra, bw_effective=size / extra,
                speedup=t_single / extra)


def model_frame(threads, sizes, mu: float, sigma: float, table: LinkTable) -> pd.DataFrame:
    """The model for every (threads, size) pair, one row each, for display and plots."""
    return pd.DataFrame([model(t, s, mu, sigma, table) for t in threads for s in sizes])


TIME_COLUMNS = ("mu", "sigma", "t_last", "t_single", "t_partition", "overlap", "t_extra")


def time_decimals(df: pd.DataFrame, least: int = 2) -> int:
    """Decimals of the printed microseconds (at least ``least``, at most 9) with which every
    printed bandwidth is size / printed time, rounded: t_single for bw_single, t_extra for
    bw_effective."""
    for d in range(least, 10):
        if all(np.array_equal(np.rint(df["size"] / (np.round(df[t] / US, d) * US) / MB),
                              np.rint(df[bw] / MB))
               for t, bw in (("t_single", "bw_single"), ("t_extra", "bw_effective"))):
            return d
    return 9


def display(df: pd.DataFrame) -> pd.DataFrame:
    """The display convention: times in us rounded to ``attrs['decimals']`` decimals (enough
    to recompute the printed bandwidths, at least 2, so the worked example's T_last reads
    101121.87), bandwidths rounded to whole MB/s, MB = 10^6 bytes."""
    d = time_decimals(df)
    out = pd.DataFrame({"threads": df.threads, "size_MB": df["size"] / MB})
    for col in TIME_COLUMNS:
        out[f"{col}_us"] = np.round(df[col] / US, d)
    out["hidden"] = df.hidden
    out["bw_single_MBps"] = np.rint(df.bw_single / MB).astype(np.int64)
    out["bw_effective_MBps"] = np.rint(df.bw_effective / MB).astype(np.int64)
    out["speedup"] = df.speedup.round(2)
    out.attrs["decimals"] = d
    return out


def compare_bench(path: str, table: LinkTable) -> pd.DataFrame:
    """Measured bandwidth of a bench ``partitioned`` suite (median over runs, per mode, size
    and threads) next to the model's: partitioned -> effective, baseline -> single send."""
    with mt_open(path) as t:
        df = t.bench("partitioned").table()
    need = {"mode", "size", "threads", "mu", "v", "bandwidth"}
    if not need <= set(df.columns):
        raise MinitraceError(f"partitioned results lack columns "
                             f"{', '.join(sorted(need - set(df.columns)))}", path)
    rows = []
    for (mode, size, threads), g in df.groupby(["mode", "size", "threads"]):
        mu = float(g["mu"].median())
        sigma = mu * float(g["v"].median()) ** 2
        m = model(int(threads), float(size), mu, sigma, table)
        rows.append(dict(mode=mode, size=int(size), threads=int(threads), mu=mu, sigma=sigma,
                         runs=len(g), measured_bw=float(g["bandwidth"].median()),
                         model_bw=m["bw_effective"] if mode == "partitioned" else m["bw_single"],
                         model_hidden=m["hidden"]))
    return pd.DataFrame(rows)
