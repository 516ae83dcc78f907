"""A calibration file (``/calibration`` of a minitrace HDF5 file, docs/FORMAT.md): the runs
:mod:`minitrace.predict.measure` measured, the fit of all of them, and what a replay needs from it
(SimGrid/SMPI options, a platform, the compute and reduction rates).

How measurements become SMPI's model (SimGrid 4.1, ``src/smpi/mpi/smpi_request.cpp``):

* a message below ``smpi/send-is-detached-thresh`` is eager: its sender sleeps ``smpi/os(s)``
  (``smpi/ois(s)`` for Isend), the transfer follows, and its receiver sleeps ``smpi/or(s)``
  after it; so the one-way ping-pong time is ``os + net + or``.  At and above the threshold
  (rendezvous), a blocking Send has no overhead and the one-way time is ``net`` alone;
* ``net(s) = L_route * lf(s + 16) + (s + 16) / (B_route * bf(s + 16))``: SMPI adds a 16-byte
  envelope to every payload and looks the latency and bandwidth factors up with it;
* an option's section ``B:...`` applies to sizes strictly above B (``FactorSet``), so a segment
  starting at size ``lo`` is written ``lo - 1`` for the overheads and ``lo + 15`` for the
  factors (the first segment is written 0);
* ``network/crosstraffic`` is off: SimGrid's default charges each flow 5% of its bandwidth on
  the reverse route, which ping-pongs cannot calibrate;
* ``network/TCP-gamma`` is 0: SimGrid's default bounds a flow's rate by a TCP window over twice
  the route's latency, then scales the bound by the bandwidth factor: a loaded machine's fit
  whose large messages all took the same time (reference bandwidth 1e15 B/s) was replayed
  up to 350x slower than fitted.  The fitted time already holds what a window costs.

Each quantity (send, receive and Isend overheads; eager and rendezvous network time) is fitted
piecewise-linearly with automatic breakpoints (:mod:`minitrace.analysis.piecewise`, relative
objective), and the network segments become the factors of a reference route whose latency is
the first segment's and whose bandwidth is the last one's.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
from dataclasses import MISSING, asdict, dataclass, field, fields

import h5py
import numpy as np

from . import after_compute, call_costs, kernels as kernel_set, under_load
from .. import checked
from ..analysis import piecewise
from ..errors import MinitraceError
from ..provenance import mpi_version
from ..replay.platforms import MAX_RANKS_PER_HOST, Cluster
from ..storage import check_file, meta_attrs, read_attrs, updating

ENVELOPE = 16
MIN_POINTS = 6
GROUP = "calibration"


KIND = "calibration"
NO_KERNELS = ("no kernel set (measured before minitrace had one): a translation to another "
              "machine has the matrix product alone; calibrate again to add it")
NO_AFTER_COMPUTE = ("no after-compute call cost (measured before minitrace had it): the replay "
                    "gives an MPI call after a compute its warm ping-pong cost; calibrate again "
                    "to add it")
#: Run columns: one row per measurement (text or numbers), and one row per rank.
_MEASUREMENTS = {"kind": "T", "size": "iu", "pair": "T", "time": "f", "t_send": "f"}
_PER_RANK = {"compute_flops": "f", "compute_cpu": "f", "compute_wall": "f",
             "reduction_rate": "f"}
#: a run's ``buffers`` attribute: large messages, the exchange and the large copy measured on
#: buffers packed just before and unpacked just after (measure.py); absent before 2026-11-28
PACKED = "packed"
#: per rank (rows) and window (columns, the run's ``windows`` attribute): thread CPU and wall
#: seconds of more of calibrate's compute phases, where background() also measures (absent
#: before 2026-11-28, session 11)
WINDOWS = ("window_cpu", "window_wall")
_OPTIONAL = {"peer": ("iu", "n"), "inner": ("iu", "n"), "copy_rate_hot": ("f", "r"),
             "copy_rate_cold": ("f", "r"), "fresh_page_rate": ("f", "r"),
             **{k: ("f", "r") for k in kernel_set.columns()},
             **{k: ("f", "d") for k in after_compute.columns()},
             after_compute.BYTES_COLUMN: ("iu", "d"),
             "exchange_size": ("iu", "e"), "exchange_time": ("f", "e"),
             "cache_size": ("iu", "c"), "cache_copy_rate": ("f", "c"),
             **{k: ("f", "r") for k in WINDOWS}}
#: Optional columns a run has all or none of: (names, whether > 0 or only >= 0, the refusal).
_GROUPS = ((kernel_set.columns(), True,
            "the kernel set's columns must all be there, finite and positive"),
           (after_compute.columns(), False,
            "the after-compute columns must all be there, finite and >= 0"),
           (["exchange_size", "exchange_time"], True,
            "exchange_size and exchange_time must both be there, finite and positive"),
           (["cache_size", "cache_copy_rate"], True,
            "cache_size and cache_copy_rate must both be there, finite and positive"),
           (list(WINDOWS), True, "window_cpu and window_wall must both be there, finite and "
                                 "positive"),
           (["fresh_page_rate"], True, "fresh_page_rate must be finite and positive"))


def append_run(path: str, run: dict) -> str:
    """Add one measured run as ``/calibration/runs/NNN`` (a locked read-modify-write through
    ``storage.updating``); returns its name."""
    with updating(path) as f:
        runs = f.require_group(f"{GROUP}/runs")
        name = f"{len(runs):03d}"
        g = runs.create_group(name)
        g.attrs.update(meta_attrs(run["attrs"]))
        for key, arr in run["columns"].items():
            arr = np.asarray(arr)
            if arr.dtype.kind in "UO":
                g.create_dataset(key, data=arr.astype(object), dtype=h5py.string_dtype())
            else:
                g.create_dataset(key, data=arr)
    return name


def check_library(path: str, library: str) -> None:
    """Refuse, before any measurement, to add a run of one MPI library to a file of another's:
    the fit would average two libraries' call costs (Debian's MPICH 4.0.2 answers a small
    message in 0.4 us, the mpich wheel's 5.0.2 in 1.1 us, on the same machine)."""
    if not os.path.exists(path):
        return
    try:
        with h5py.File(path, "r") as f:
            runs = f.get(f"{GROUP}/runs")
            held = {mpi_version(runs[n].attrs.get("mpi_library", "")) for n in runs} \
                if isinstance(runs, h5py.Group) else set()
    except (OSError, RuntimeError) as e:
        raise checked.corrupt(KIND, checked.first_line(e), path) from None
    held.discard("")
    if held and held != {mpi_version(library)}:
        raise MinitraceError(f"its runs measured {', '.join(sorted(held))}; this run's MPI is "
                             f"{mpi_version(library)}: calibrate into another file", path)


def read_runs(path: str) -> list[dict]:
    """Every stored run, ``{"name", "attrs", "columns"}``, checked (see :func:`_runs_in`)."""
    check_file(path)
    try:
        with h5py.File(path, "r") as f:
            return _runs_in(f, path)
    except (OSError, RuntimeError) as e:
        raise checked.corrupt(KIND, checked.first_line(e), path) from None


def _runs_in(f: h5py.File, path: str) -> list[dict]:
    """The runs of an open calibration file: the documented columns with their types, one
    length per measurement column and one per rank column, finite positive kernel times, the
    attributes the fit uses with their types."""
    top = checked.member(f, GROUP, KIND, path, h5py.Group, required=False)
    runs = checked.member(top, "runs", KIND, path, h5py.Group, required=False) \
        if top is not None else None
    names = checked.names(runs, KIND, path) if runs is not None else []
    if not names:
        raise MinitraceError("no calibration run in this file (minitrace calibrate writes "
                             "them)", path)
    out = []
    for name in names:
        g = checked.member(runs, name, KIND, path, h5py.Group)
        cols = {k: checked.array(g, k, KIND, path, t) for k, t in _MEASUREMENTS.items()}
        cols |= {k: checked.array(g, k, KIND, path, t) for k, t in _PER_RANK.items()}
        cols |= {k: v for k, (t, _) in _OPTIONAL.items()
                 if (v := checked.array(g, k, KIND, path, t, ndim=2 if k in WINDOWS else 1,
                                        required=False)) is not None}
        lengths = {"n": len(cols["kind"]), "r": len(cols["compute_cpu"]),
                   "d": len(cols.get("after_compute_seconds", ())),
                   "e": len(cols.get("exchange_size", ())),
                   "c": len(cols.get("cache_size", ()))}
        for k, v in cols.items():
            want = lengths["n" if k in _MEASUREMENTS else "r" if k in _PER_RANK
                           else _OPTIONAL[k][1]]
            if len(v) != want:
                raise checked.corrupt(KIND, f"run {name}: {k} has {len(v)} rows, not {want}",
                                      path)
        if lengths["r"] < 1 or not all(np.isfinite(cols[k]).all() and (cols[k] > 0).all()
                                       for k in _PER_RANK):
            raise checked.corrupt(KIND, f"run {name}: compute and reduction columns must be "
                                  "finite and positive, one per rank", path)
        for group, positive, says in _GROUPS:     # optional columns measured together
            have = [k for k in group if k in cols]
            if have and (len(have) != len(group) or not all(
                    np.isfinite(cols[k]).all()
                    and ((cols[k] > 0) if positive else (cols[k] >= 0)).all() for k in have)):
                raise checked.corrupt(KIND, f"run {name}: {says}", path)
        if (cols["size"] > 2 ** 53).any():
            raise checked.corrupt(KIND, f"run {name}: a message size beyond 2**53", path)
        attrs = read_attrs(g)
        _check_run_attrs(attrs, lengths["r"], f"run {name}", path)
        if WINDOWS[0] in cols and not (
                cols[WINDOWS[0]].shape == cols[WINDOWS[1]].shape
                and isinstance(attrs.get("windows"), list)
                and cols[WINDOWS[0]].shape[1] == len(attrs["windows"])):
            raise checked.corrupt(KIND, f"run {name}: window_cpu and window_wall must have a "
                                  "column per name of the windows attribute", path)
        out.append({"name": name, "attrs": attrs, "columns": cols})
    return out


def _check_run_attrs(attrs: dict, nranks: int, where: str, path: str) -> None:
    def bad(what: str) -> MinitraceError:
        return checked.corrupt(KIND, f"{where}: {what}", path)
    nodes, cores = attrs.get("rank_to_node"), attrs.get("cores")
    if not isinstance(nodes, list) or not nodes or \
            not all(isinstance(n, (str, int)) for n in nodes):
        raise bad("rank_to_node is not a list of node names")
    if not isinstance(cores, list) or not cores or \
            not all(checked.is_int(c) and 1 <= c <= MAX_RANKS_PER_HOST for c in cores):
        raise bad("cores is not a list of core counts")
    if len(nodes) != nranks or len(cores) != nranks:
        raise bad(f"rank_to_node and cores have {len(nodes)} and {len(cores)} entries for "
                  f"{nranks} ranks")
    t = attrs.get("eager_threshold")
    if isinstance(t, list):
        if len(t) != 2 or not all(checked.is_int(x) and 0 <= x <= 2 ** 53 for x in t):
            raise bad(f"eager_threshold = {t!r}")
    elif not isinstance(t, str):
        raise bad(f"eager_threshold = {t!r}")
    m = attrs.get("max_size")
    if not checked.is_int(m) or not 0 < m <= 2 ** 53:
        raise bad(f"max_size = {m!r}")
    costs = attrs.get("python_costs", {})
    if not isinstance(costs, dict) or not all(
            isinstance(v, (int, float)) and np.isfinite(v) and v >= 0 for v in costs.values()):
        raise bad("python_costs is not a table of finite seconds")
    if not call_costs.valid(attrs.get("call_costs", {})):
        raise bad("call_costs is not a table of posting and completion seconds")
    c = attrs.get("cold_from", 0)
    if not checked.is_int(c) or not 0 <= c <= 2 ** 53:
        raise bad(f"cold_from = {c!r}")
    v = attrs.get("kernels_version", 0)
    if not checked.is_int(v) or v < 0:
        raise bad(f"kernels_version = {v!r}")
    b = attrs.get("buffers", "")
    if b not in ("", PACKED):
        raise bad(f"buffers = {b!r}")
    if under_load.ATTR in attrs and not under_load.valid(attrs[under_load.ATTR], nodes):
        raise bad(f"{under_load.ATTR} = {attrs[under_load.ATTR]!r} (cores other work took, "
                  f"one number >= 0 per node)")


@dataclass
class Calibration:
    """What a replay needs from a calibration: SMPI options, a platform, compute rates."""

    config: dict[str, str]              # SimGrid --cfg options (network model + overheads)
    latency: float                      # s, each host's link (a route between hosts: 2 links)
    bandwidth: float                    # B/s, each host's link
    loopback_latency: float             # s, ranks on one host
    loopback_bandwidth: float           # B/s
    speed: float                        # flop/s of a host (kernel flops per CPU second)
    compute_rate: float                 # flops per second of recorded CPU time (= speed)
    reduction_rate: float               # B/s of MPI_SUM on doubles
    ranks_per_host: int                 # as in the calibrated job
    cores_per_host: int
    size_range: list[int]               # smallest and largest message measured
    eager_threshold: int                # first size sent with rendezvous
    pair: str                           # pair type the factors come from (intra / inter)
    speed_spread: float                 # (max - min) / median of the ranks' kernel speeds
    core_share: list[float]             # CPU / wall time of each rank during the kernel
    runs: int
    points: int
    notes: list[str] = field(default_factory=list)
    segments: dict = field(default_factory=dict)   # quantity -> list of Segment dicts
    path: str = ""
    # B/s of a rank's local copy in cache (64 KiB) and of 4 MiB packed before, unpacked after,
    # and a core's L2 (cold_from), which says which applies (replay.work.copy_seconds); empty
    # in calibrations made before they were measured
    copy_rates: list[float] = field(default_factory=list)
    cold_from: int = 0
    # the kernel set (minitrace.predict.kernels): name -> {"unit", "cpu_rate": work per CPU
    # second, "wall_rate": per wall second}; empty (version 0) in calibrations made before it
    kernels: dict = field(default_factory=dict)
    kernels_version: int = 0
    # an MPI call's cost after a compute (minitrace.predict.after_compute): {"seconds": [...],
    # kernel: [s, ...]}; empty in calibrations made before it was measured
    after_compute: dict = field(default_factory=dict)
    # the CPU time of posting a receive and of completing a request (minitrace.predict.
    # call_costs): {"post": s, "complete": s}; empty in calibrations made before it
    call_costs: dict = field(default_factory=dict)
    # B/s of a node's memory shared by simultaneous transfers between its ranks (two messages
    # sent at once, each way: 2 sizes / time); 0 when not measured
    node_bandwidth: float = 0.0
    # a rank's share of the caches (bytes a rank, its copies' working set up to which they
    # kept the cache's rate) and the rate of a copy from memory (B/s) beyond it
    # (cache_share()); 0 when not measured
    cache_share: int = 0
    memory_copy_rate: float = 0.0
    # B/s of a first write to memory just mapped (its page faults: what an MPI library's
    # temporary buffers that malloc maps anew at each call cost, replay.work.
    # temporary_seconds); 0 when not measured
    fresh_page_rate: float = 0.0
    # share of a node's compute time lost to other work (wall above CPU time while all ranks
    # compute, summed over the node's ranks: see background()); 0 in fits written before it
    background: float = 0.0
    # the load the runs were measured under (minitrace.predict.under_load): {"cores": cores
    # other work took on average on the most loaded node of the most loaded run, "of": that
    # node's cores, "run": its name, "measured": runs that measured it}; empty: unknown
    other_load: dict = field(default_factory=dict)
    mpi_library: str = ""       # MPI_Get_library_version of the calibrated job's MPI
    hostname: str = ""          # the calibrated machine (its provenance)

    def copies(self) -> tuple[float, float, int, int, float, float] | None:
        """(B/s in cache, B/s packed to unpacked, ``cold_from``, ``cache_share``,
        ``memory_copy_rate``, ``fresh_page_rate``) for :func:`minitrace.replay.replay`
        (:func:`minitrace.replay.work.copy_seconds`, :func:`~minitrace.replay.work.
        own_block_copies`, :func:`~minitrace.replay.work.temporary_seconds`), None when not
        measured."""
        return (*self.copy_rates, self.cold_from, self.cache_share, self.memory_copy_rate,
                self.fresh_page_rate) if len(self.copy_rates) == 2 else None

    def cluster(self, hosts: int | None = None, ranks_per_host: int | None = None) -> Cluster:
        """The calibrated machine as a generated cluster (enough hosts for the trace's ranks
        by default), ``ranks_per_host`` ranks per host (default: as calibrated)."""
        return Cluster(hosts, speed=f"{self.speed:.9g}f", bandwidth=f"{self.bandwidth:.9g}Bps",
                       latency=f"{self.latency:.9g}s",
                       ranks_per_host=ranks_per_host or self.ranks_per_host,
                       loopback_bandwidth=f"{self.loopback_bandwidth:.9g}Bps",
                       loopback_latency=f"{self.loopback_latency:.9g}s",
                       node_bandwidth=f"{self.node_bandwidth:.9g}Bps"
                       if self.node_bandwidth > 0 else None)

    def one_way(self, size) -> np.ndarray:
        """The fitted one-way ping-pong time at ``size`` bytes: send overhead + network +
        receive overhead below the eager threshold, network alone from it."""
        x = np.asarray(size, dtype=float)
        part = {k: _stored_value(v, x) for k, v in self.segments.items()}
        return np.where(x < self.eager_threshold,
                        part["send"] + part["net_eager"] + part["recv"], part["net_rendezvous"])

    def to_dict(self) -> dict:
        """The fit (the machine's identity, ``mpi_library`` and ``hostname``, is the file's
        provenance: not part of it)."""
        out = asdict(self)
        del out["mpi_library"], out["hostname"]
        return out


def _stored_value(stored: dict | None, x: np.ndarray) -> np.ndarray:
    """A stored fit's value at ``x`` (0 when that quantity had no data)."""
    if not stored:
        return np.zeros_like(x)
    segs = [piecewise.Segment(**s) for s in stored["segments"]]
    return piecewise.PiecewiseFit(segs, stored["breakpoints"], 0.0, 0.0, "", "").predict(x)


# -- fitting --------------------------------------------------------------------------------
def _fit(x, y, lo=0.0, hi=np.inf, envelope: int = 0):
    """Piecewise fit of the positive points with lo <= x < hi (a single line when few), each
    segment kept within what SMPI can express: ``y = a + b (x + envelope)`` with a, b >= 0
    (a segment that would need a negative latency or slope is refitted without it)."""
    sel = (x >= lo) & (x < hi) & np.isfinite(y) & (y > 0)
    if sel.sum() < 3:
        return None
    x, y = x[sel], y[sel]
    f = piecewise.fit(x, y, objective="log", method="top-down",
                      min_points=min(MIN_POINTS, len(x)),
                      max_breaks=0 if len(x) < 2 * MIN_POINTS else 10)
    bounds = [-np.inf, *f.breakpoints, np.inf]
    for seg, b0, b1 in zip(f.segments, bounds[:-1], bounds[1:]):
        a = seg.intercept - seg.slope * envelope       # value at x = -envelope
        if a >= 0 and seg.slope >= 0:
            continue
        m = (x >= b0) & (x < b1)
        u, w = x[m] + envelope, 1.0 / y[m] ** 2
        if seg.slope < 0 or a < 0 and np.sum(w * u * y[m]) <= 0:
            seg.slope, seg.intercept = 0.0, float(np.sum(w * y[m]) / np.sum(w))
        else:                                          # through (-envelope, 0)
            seg.slope = float(np.sum(w * u * y[m]) / np.sum(w * u * u))
            seg.intercept = seg.slope * envelope
    return f


def _split_fit(x, y, lo: int, cold_from: int):
    """The rendezvous fit from ``lo``, in two parts when ping-pongs above ``cold_from`` were
    measured apart (packed and unpacked; before 2026-11-28, session 9, on buffers out of the
    caches): a breakpoint left to the fit could put a message just above ``cold_from`` on the
    smaller messages' rate (a 4 MiB exchange at twice its cold speed)."""
    warm = _fit(x, y, lo=lo, hi=cold_from + 1, envelope=ENVELOPE) if cold_from > lo else None
    cold = _fit(x, y, lo=max(lo, cold_from + 1), envelope=ENVELOPE) if warm else None
    if warm is None or cold is None:
        return _fit(x, y, lo=lo, envelope=ENVELOPE)
    cold.segments[0].lo = cold_from + 1
    return piecewise.PiecewiseFit(warm.segments + cold.segments,
                                  [*warm.breakpoints, cold_from + 1, *cold.breakpoints],
                                  warm.rss + cold.rss, warm.bic + cold.bic, warm.objective,
                                  warm.method)


def _value(f, x):
    return np.zeros_like(np.asarray(x, float)) if f is None else f.predict(x)


def _overhead_sections(f) -> str:
    """``smpi/os``-style ``B:startup:per_byte;...`` of a fit (0 when none)."""
    if f is None:
        return "0"
    return ";".join(f"{0 if i == 0 else int(s.lo) - 1}:{s.intercept:.9g}:{s.slope:.9g}"
                    for i, s in enumerate(f.segments))


def _net_segments(eager, rdv, threshold: int) -> list[tuple[int, float, float]]:
    """(first size, intercept, slope) of the network time, eager fit below the threshold,
    rendezvous fit from it."""
    segs = []
    for f, lo_bound in ((eager, 0), (rdv, threshold)):
        if f is None:
            continue
        for i, s in enumerate(f.segments):
            segs.append((int(lo_bound if i == 0 else s.lo), s.intercept, s.slope))
    if not segs:
        raise MinitraceError("no usable ping-pong measurement to fit the network")
    segs[0] = (0, *segs[0][1:])
    return segs


def _factors(segs, latency: float, bandwidth: float) -> tuple[str, str]:
    """``network/latency-factor`` and ``network/bandwidth-factor`` making a route of
    ``latency`` and ``bandwidth`` follow the segments (16-byte envelope included).  A segment
    whose line starts below zero (a noisy fit of a loaded machine's small sizes) gets latency
    factor 0: SimGrid takes no negative latency, and the check refuses one."""
    lat, bw = [], []
    for lo, a, b in segs:
        start = 0 if lo == 0 else lo + ENVELOPE - 1
        lat.append(f"{start}:{max(a - ENVELOPE * b, 0.0) / latency:.9g}")
        bw.append(f"{start}:{1.0 / (max(b, 1e-6 / bandwidth) * bandwidth):.9g}")
    return ";".join(lat), ";".join(bw)


def _threshold(runs) -> tuple[int, list[str]]:
    """First rendezvous size: the median over runs of the probe's bracket end."""
    firsts, notes = [], []
    for r in runs:
        t = r["attrs"].get("eager_threshold")
        if isinstance(t, list):
            firsts.append(int(t[1]))
        else:
            firsts.append(int(r["attrs"]["max_size"]) + 1)
            notes.append(f"run {r['name']}: no eager/rendezvous switch found ({t}): all "
                         f"sizes eager")
    return int(np.median(firsts)), notes


def _without_python(run: dict) -> dict:
    """The run's times less what its Python loops add to each call (``python_costs``: the same
    loops on MPI_PROC_NULL), at least 5% of the measured time."""
    c = dict(run["columns"])
    cost = run["attrs"].get("python_costs") or {}
    t = c["time"].copy()
    for kind in ("pingpong", "recv", "isend"):
        m = c["kind"] == kind
        t[m] = np.maximum(t[m] - cost.get(kind, 0.0), 0.05 * t[m])
    c["time"] = t
    c["t_send"] = np.maximum(c["t_send"] - cost.get("send", 0.0), 0.05 * c["t_send"])
    return c


def fit_runs(runs: list[dict]) -> tuple[Calibration, dict]:
    """Fit every run together: the calibration, and the fits of each quantity (for plots)."""
    adjusted = [_without_python(r) for r in runs]
    cols = {k: np.concatenate([c[k] for c in adjusted])
            for k in ("kind", "size", "pair", "time", "t_send")}
    pairs = set(cols["pair"].tolist())
    main = "inter" if "inter" in pairs else "intra"
    threshold, notes = _threshold(runs)
    x = cols["size"].astype(float)

    def pick(kind, pair=main):
        sel = (cols["kind"] == kind) & (cols["pair"] == pair)
        return x[sel], cols["time"][sel], cols["t_send"][sel]

    xp, yp, ys = pick("pingpong")
    xr, yr, _ = pick("recv")
    xi, yi, _ = pick("isend")
    fits = {"send": _fit(xp, ys, hi=threshold), "recv": _fit(xr, yr, hi=threshold),
            "isend": _fit(xi, yi)}
    eager_net = yp - _value(fits["send"], xp) - _value(fits["recv"], xp)
    eager_net = np.maximum(eager_net, 0.05 * yp)
    fits["net_eager"] = _fit(xp, eager_net, hi=threshold, envelope=ENVELOPE)
    cold_from = int(runs[-1]["attrs"].get("cold_from", 0))
    if len({int(r["attrs"].get("cold_from", 0)) for r in runs}) > 1:
        notes.append(f"the runs measured large ping-pongs apart from different sizes "
                     f"(--cold-from): "
                     f"the rendezvous fit breaks at the last run's, {cold_from} B")
    fits["net_rendezvous"] = _split_fit(xp, yp, threshold, cold_from)
    segs = _net_segments(fits["net_eager"], fits["net_rendezvous"], threshold)
    latency = max(segs[0][1] - ENVELOPE * segs[0][2], 1e-9)
    bandwidth = 1.0 / max(segs[-1][2], 1e-15)     # SMPI needs a finite bandwidth
    lat_f, bw_f = _factors(segs, latency, bandwidth)
    detached = min(threshold, 2**31 - 1)
    config = {"network/model": "SMPI", "network/latency-factor": lat_f,
              "network/bandwidth-factor": bw_f, "network/crosstraffic": "0",
              "network/TCP-gamma": "0",
              "smpi/os": _overhead_sections(fits["send"]),
              "smpi/or": _overhead_sections(fits["recv"]),
              "smpi/ois": _overhead_sections(fits["isend"]),
              "smpi/send-is-detached-thresh": str(detached),
              "smpi/async-small-thresh": str(detached)}
    if main == "inter":
        link_lat, link_bw = latency / 2, bandwidth
        lb_lat, lb_bw, more = _other_route(pick("pingpong", "intra"), fits, segs, latency,
                                           bandwidth, threshold)
        notes += more
    else:
        lb_lat, lb_bw = latency, bandwidth
        link_lat, link_bw = latency / 2, bandwidth
        notes.append("no inter-node pair measured (one node): links between hosts copy the "
                     "intra-node route")
    last = runs[-1]["columns"]
    speeds = np.concatenate([r["columns"]["compute_flops"] / r["columns"]["compute_cpu"]
                             for r in runs])
    speed = float(np.median(speeds))
    share = (last["compute_cpu"] / last["compute_wall"]).tolist()
    if min(share) < 0.9:
        notes.append(f"ranks got {min(share):.0%}..{max(share):.0%} of a core during the "
                     f"compute kernel: the machine was loaded or oversubscribed")
    red = float(np.median(np.concatenate([r["columns"]["reduction_rate"] for r in runs])))
    lost = background(runs)
    measured = [r for r in runs if "copy_rate_hot" in r["columns"]]
    copy_rates = [float(np.median(np.concatenate([r["columns"][k] for r in measured])))
                  for k in ("copy_rate_hot", "copy_rate_cold")] if measured else []
    cold_from = cold_from if measured else 0
    kernels = kernel_set.fit(runs)
    if not kernels:
        notes.append(NO_KERNELS)
    after = after_compute.fit(runs)
    if not after:
        notes.append(NO_AFTER_COMPUTE)
    sent = [2.0 * r["columns"]["exchange_size"] / r["columns"]["exchange_time"]
            for r in runs if "exchange_size" in r["columns"]]
    node_bw = float(np.median(np.concatenate(sent))) if sent else 0.0
    share_bytes, memory_rate = cache_share(runs)
    fresh = [r["columns"]["fresh_page_rate"] for r in runs if "fresh_page_rate" in r["columns"]]
    nodes = runs[-1]["attrs"]["rank_to_node"]
    per_host = max(nodes.count(n) for n in set(nodes))
    cal = Calibration(
        config=config, latency=link_lat, bandwidth=link_bw, loopback_latency=lb_lat,
        loopback_bandwidth=lb_bw, speed=speed, compute_rate=speed, reduction_rate=red,
        ranks_per_host=per_host, cores_per_host=int(min(runs[-1]["attrs"]["cores"])),
        size_range=[int(x.min()), int(x.max())], eager_threshold=threshold, pair=main,
        speed_spread=float((speeds.max() - speeds.min()) / speed), core_share=share,
        runs=len(runs), points=int(len(x)), notes=notes, copy_rates=copy_rates,
        cold_from=cold_from, kernels=kernels, after_compute=after, node_bandwidth=node_bw,
        cache_share=share_bytes, memory_copy_rate=memory_rate,
        fresh_page_rate=float(np.median(np.concatenate(fresh))) if fresh else 0.0,
        call_costs=call_costs.fit(runs, float(_value(fits["recv"], 8))),
        background=lost, other_load=most_load(runs),
        kernels_version=max(int(r["attrs"].get("kernels_version", 0)) for r in runs),
        segments={k: None if f is None else {"breakpoints": f.breakpoints,
                                             "segments": [s.to_dict() for s in f.segments]}
                  for k, f in fits.items()})
    return cal, fits


def most_load(runs: list[dict]) -> dict:
    """The load of the most loaded node of the most loaded run that measured it
    (:data:`Calibration.other_load`), {} when none did: pooled or a median, a loaded run's
    times move the fit, so the worst is what a prediction is told."""
    got = [(*under_load.worst(r["attrs"][under_load.ATTR], r["attrs"]["cores"],
                              r["attrs"]["rank_to_node"]), r["name"])
           for r in runs if under_load.ATTR in r["attrs"]]
    if not got:
        return {}
    cores, of, name = max(got, key=lambda g: g[0] / g[1])
    return {"cores": cores, "of": of, "run": name, "measured": len(got)}


def cache_share(runs: list[dict]) -> tuple[int, float]:
    """(a rank's share of the caches in bytes, B/s of a copy from memory) from the runs' copies
    by working set (measure._cache_copies), or (0, 0.0) when none measured them or their rate
    did not fall.  Per working set the median rate over the runs; the memory rate is the
    slowest working set's, the share the largest working set up to it whose rate stayed above
    the geometric mean of the smallest one's (in cache) and the memory rate.  Halfway in log,
    because between the two the rate falls over a working set or two (2-core VM: 13.5 GB/s
    up to 16 MiB a rank, 10-13 at 32, 5.8-7.3 at 64-128: a share of 32 MiB).  The slowest,
    not the largest: the VM's 256 MiB copies ran at 9.4-11.2 GB/s, and with the largest one's
    rate one calibration of three saw no fall (and no memory term; session 15)."""
    got: dict[int, list[float]] = {}
    for r in runs:
        c = r["columns"]
        for size, rate in zip(c.get("cache_size", ()), c.get("cache_copy_rate", ())):
            got.setdefault(int(size), []).append(float(rate))
    if len(got) < 2:
        return 0, 0.0
    sizes = sorted(got)
    rates = np.array([np.median(got[w]) for w in sizes])
    slowest = int(np.argmin(rates))
    if not rates[slowest] < 0.75 * rates[0]:     # (no fall: every working set was cached)
        return 0, 0.0
    middle = float(np.sqrt(rates[0] * rates[slowest]))
    kept = [w for w, v in zip(sizes[:slowest], rates[:slowest]) if v > middle]
    return (max(kept) if kept else 0), float(rates[slowest])


def background(runs: list[dict]) -> float:
    """Share of a node's compute time that other work takes while all its ranks compute: per
    window of a run (the matrix-product kernel, each kernel of the kernel set and, in runs
    since session 11, the reductions, the copies and each after-compute kernel's measurements:
    :func:`windows`), each rank's wall time above its thread CPU time over the wall time,
    summed over a node's ranks (mean over the nodes); the median over the run's windows; the
    median over the runs.

    Summed, because a rank descheduled anywhere delays the ranks that wait for it at their next
    exchange: a code that synchronizes often loses every rank's lost time (the replay stretches
    each rank's compute by it, :func:`minitrace.predict.prediction.with_background`).  The
    median over windows (0.1-3 s each, about 7 s in all), because the quantity is bursty: one
    burst in one window moves the median over ten windows little, where it set the share of
    the whole 1.3 s the background was measured over before (session 10: 2.1% one hour, the
    recordings' own 0.8%).  It is the calibrated job's ranks per node that lose it: fewer ranks
    per node leave other work idle cores; many ranks per node descheduled within one iteration
    delay it once, not once each (the sum is then an upper bound); an oversubscribed
    calibration measures its own crowding (its note says when a rank got less than 90% of a
    core).  Figures: docs/PREDICT.md and benchmarks/RESULTS.md (issue 35)."""
    per_run = []
    for r in runs:
        cpu, wall = windows(r["columns"])
        lost = np.clip(1.0 - cpu / wall, 0.0, 1.0)
        per_run.append(float(np.median(node_share(lost, r["attrs"]["rank_to_node"]))))
    return float(np.median(per_run))


def node_share(lost: np.ndarray, nodes) -> np.ndarray:
    """``lost`` ([rank, ...]: each rank's share of its wall time lost) summed over each node's
    ranks, the mean over the nodes (``nodes``: each rank's node name): how :func:`background`
    counts a machine's, and the prediction a recording's."""
    _, node = np.unique(np.asarray(nodes, str), return_inverse=True)
    return np.mean([lost[node == n].sum(axis=0) for n in range(node.max() + 1)], axis=0)


def windows(columns: dict) -> tuple[np.ndarray, np.ndarray]:
    """Thread CPU and wall seconds, [rank, window], of a run's windows where every rank
    computes at once: the matrix-product kernel, each kernel of the kernel set (when measured)
    and the run's ``window_cpu``/``window_wall`` columns (when measured)."""
    cpu, wall = [columns["compute_cpu"]], [columns["compute_wall"]]
    for k in kernel_set.KERNELS:
        if f"kernel_{k}_cpu" in columns:
            cpu.append(columns[f"kernel_{k}_cpu"])
            wall.append(columns[f"kernel_{k}_wall"])
    stacked = [np.column_stack(x).astype(float) for x in (cpu, wall)]
    if WINDOWS[0] in columns:
        stacked = [np.hstack([x, columns[k]]) for x, k in zip(stacked, WINDOWS)]
    return stacked[0], stacked[1]


def _other_route(data, fits, segs, latency, bandwidth, threshold):
    """Loopback latency and bandwidth that best fit the intra-node ping-pongs under the
    factors fitted between nodes (least squares on relative errors)."""
    x, y, _ = data
    if len(x) < 3:
        return latency, bandwidth, ["no intra-node pair measured: loopback links copy the "
                                    "inter-node route"]
    eager = x < threshold
    net = y - np.where(eager, _value(fits["send"], x) + _value(fits["recv"], x), 0.0)
    starts = np.array([s[0] for s in segs])
    i = np.searchsorted(starts, x, side="right") - 1
    a = np.array([max(s[1] - ENVELOPE * s[2], 1e-12) for s in segs])[i] / latency
    b = np.array([s[2] for s in segs])[i] * bandwidth
    # net = L * a + (x + 16) * b / B: linear in (L, 1/B); relative weights
    A = np.column_stack([a, (x + ENVELOPE) * b]) / y[:, None]
    (lat, inv_bw), *_ = np.linalg.lstsq(A, net / y, rcond=None)
    return max(float(lat), 1e-12), 1.0 / max(float(inv_bw), 1e-15), []


# -- the file's fit group -----------------------------------------------------------------
def newest_runs(runs: list[dict]) -> tuple[list[dict], list[str]]:
    """The runs a fit pools, and a note on those it leaves out: runs whose large messages,
    exchange and copy were measured on buffers out of every cache (before 2026-11-28, session
    9: no ``buffers`` attribute) took them 2-3x as long as runs measured on packed and
    unpacked buffers; in a file that holds both, the newer ones only."""
    packed = [r for r in runs if r["attrs"].get("buffers", "") == PACKED]
    if not packed or len(packed) == len(runs):
        return runs, []
    return packed, [f"{len(runs) - len(packed)} run(s) measured before 2026-11-28 (large "
                    f"messages, the exchange and the copy on buffers out of every cache) left "
                    f"out of the fit: the {len(packed)} newer ones measure them packed and "
                    f"unpacked, as an application sends them"]


def refit(path: str, plot: str | None = None) -> Calibration:
    """Fit the runs in ``path`` (:func:`newest_runs`), store ``/calibration/fit`` and draw
    ``plot`` (PNG): the runs are read and the fit written under the file's lock
    (``storage.updating``)."""
    check_file(path)
    with updating(path) as f:
        runs, left_out = newest_runs(_runs_in(f, path))
        cal, fits = fit_runs(runs)
        cal.notes += left_out
        grp = f[GROUP]
        if "fit" in grp:
            del grp["fit"]
        g = grp.create_group("fit")
        g.attrs["calibration"] = json.dumps({k: v for k, v in cal.to_dict().items()
                                             if k != "path"})
        g.attrs["runs"] = json.dumps([r["name"] for r in runs])
        g.attrs["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    cal.path = path
    if plot:
        _plot(runs, cal, fits, plot)
    return cal


def load(path: str, missing_ok: bool = False) -> Calibration | None:
    """The calibration stored in ``path`` (``/calibration/fit``), every field checked for its
    type and range (:func:`_checked_fields`); None when it has none and ``missing_ok``."""
    check_file(path)
    try:
        with h5py.File(path, "r") as f:
            top = checked.member(f, GROUP, KIND, path, h5py.Group, required=False)
            g = checked.member(top, "fit", KIND, path, h5py.Group, required=False) \
                if top is not None else None
            if g is None and missing_ok:
                return None
            if g is None:
                raise MinitraceError("not a calibration file (no /calibration/fit; minitrace "
                                     "calibrate writes it)", path)
            stored = read_attrs(g).get("calibration")
            prov = f.get("provenance")
            attrs = dict(prov.attrs) if isinstance(prov, h5py.Group) else {}
            # the file's library is the one its runs measured (check_library keeps one a
            # file), not the provenance's (that of the process that last refit it)
            runs = top.get("runs")
            last = runs[max(runs, key=lambda n: (len(n), n))] \
                if isinstance(runs, h5py.Group) and len(runs) else None
            if last is not None and last.attrs.get("mpi_library"):
                attrs["mpi_library"] = last.attrs["mpi_library"]
    except (OSError, RuntimeError) as e:
        raise checked.corrupt(KIND, checked.first_line(e), path) from None
    cal = Calibration(**_checked_fields(stored, path))
    cal.path = path
    if "kernels" not in stored:         # a fit older than the kernel set
        cal.notes.append(NO_KERNELS)
    if not cal.after_compute and NO_AFTER_COMPUTE not in cal.notes:
        cal.notes.append(NO_AFTER_COMPUTE)
    for name in ("mpi_library", "hostname"):
        value = attrs.get(name, "")
        setattr(cal, name, value if isinstance(value, str) else "")
    return cal


_FLOATS_POSITIVE = ("latency", "bandwidth", "loopback_latency", "loopback_bandwidth", "speed",
                    "compute_rate", "reduction_rate")


def _finite_at_least_0(text: str) -> bool:
    try:
        return math.isfinite(float(text)) and float(text) >= 0
    except ValueError:
        return False


def _checked_fields(stored, path: str) -> dict:
    """The fields of a stored fit, refused (one line) unless each has its documented type and a
    range a replay can use."""
    def bad(what: str) -> MinitraceError:
        return checked.corrupt(KIND, f"/calibration/fit: {what}", path)
    if not isinstance(stored, dict):
        raise bad("the calibration attribute is not a JSON object")
    known = {f.name for f in fields(Calibration)} - {"path"}
    required = {f.name for f in fields(Calibration)
                if f.default is MISSING and f.default_factory is MISSING}
    if set(stored) - known or required - set(stored):
        raise bad(f"fields {sorted(set(stored) - known)} unknown, {sorted(required - set(stored))} "
                  "missing")
    d = dict(stored)
    for k in _FLOATS_POSITIVE + ("speed_spread", "node_bandwidth", "background",
                                 "memory_copy_rate", "fresh_page_rate"):
        v = d.get(k, 0.0)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or \
                v < 0 or (v == 0 and k in _FLOATS_POSITIVE):     # (math: ints beyond 2**64)
            raise bad(f"{k} = {v!r}")
    for k, hi in (("ranks_per_host", MAX_RANKS_PER_HOST), ("cores_per_host", MAX_RANKS_PER_HOST),
                  ("eager_threshold", 2 ** 53), ("runs", 2 ** 31), ("points", 2 ** 53),
                  ("cold_from", 2 ** 53), ("kernels_version", 2 ** 31),
                  ("cache_share", 2 ** 53)):
        v = d.get(k, 0)
        if not checked.is_int(v) or not (1 if k.endswith("host") else 0) <= v <= hi:
            raise bad(f"{k} = {v!r}")
    if not isinstance(d["config"], dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in d["config"].items()):
        raise bad("config is not a table of SimGrid options")
    for k, v in d["config"].items():     # piecewise factors and overheads: "size:value;..."
        if k.endswith(("-factor", "/os", "/or", "/ois")) and not all(
                _finite_at_least_0(x) for x in v.replace(";", ":").split(":")):
            raise bad(f"config {k} = {v!r}")
    if not _kernels_ok(d.get("kernels", {})):
        raise bad("kernels is not a table of kernel rates")
    if not after_compute.valid(d.get("after_compute", {})):
        raise bad("after_compute is not a table of durations and penalties")
    if not call_costs.valid(d.get("call_costs", {})):
        raise bad("call_costs is not a table of posting and completion seconds")
    if not isinstance(d["pair"], str):
        raise bad(f"pair = {d['pair']!r}")
    for k, n in (("size_range", 2), ("copy_rates", None), ("core_share", None)):
        v = d.get(k, [])
        if not isinstance(v, list) or (n is not None and len(v) != n) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                and x >= 0 for x in v):
            raise bad(f"{k} = {v!r}")
    if len(d.get("copy_rates", [])) not in (0, 2) or 0 in d.get("copy_rates", []):
        raise bad(f"copy_rates = {d['copy_rates']!r}")
    if (d.get("cache_share", 0) > 0) != (d.get("memory_copy_rate", 0.0) > 0):
        raise bad(f"cache_share = {d.get('cache_share', 0)!r} with memory_copy_rate = "
                  f"{d.get('memory_copy_rate', 0.0)!r} (both measured or neither)")
    if not _load_ok(d.get("other_load", {})):
        raise bad(f"other_load = {d['other_load']!r}")
    if not isinstance(d.get("notes", []), list) or \
            not all(isinstance(x, str) for x in d.get("notes", [])):
        raise bad("notes is not a list of text")
    segments = d.get("segments", {})
    if not isinstance(segments, dict) or not all(_segment_ok(v) for v in segments.values()):
        raise bad("segments are not fitted segments")
    missing = {"send", "recv", "net_eager", "net_rendezvous"} - set(segments)
    if missing:
        raise bad(f"no fit of {', '.join(sorted(missing))}")
    return d


def _load_ok(stored) -> bool:
    """A stored fit's ``other_load``: {} (unknown), or cores >= 0 of a node's cores, the run
    and how many runs measured it."""
    if stored == {}:
        return True
    return isinstance(stored, dict) and set(stored) == {"cores", "of", "run", "measured"} \
        and isinstance(stored["cores"], (int, float)) and not isinstance(stored["cores"], bool) \
        and math.isfinite(stored["cores"]) and stored["cores"] >= 0 \
        and checked.is_int(stored["of"]) and 1 <= stored["of"] <= MAX_RANKS_PER_HOST \
        and isinstance(stored["run"], str) and checked.is_int(stored["measured"]) \
        and 1 <= stored["measured"] <= 2 ** 31


def _kernels_ok(stored) -> bool:
    """A stored kernel set: name -> {"unit": text, "cpu_rate", "wall_rate": finite, > 0}."""
    def rate(x) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) \
            and x > 0
    return isinstance(stored, dict) and all(
        isinstance(k, str) and isinstance(v, dict) and set(v) == {"unit", "cpu_rate", "wall_rate"}
        and isinstance(v["unit"], str) and rate(v["cpu_rate"]) and rate(v["wall_rate"])
        for k, v in stored.items())


def _segment_ok(stored) -> bool:
    """A stored piecewise fit (or None): finite breakpoints, one segment more than them, each
    with finite numbers that ``piecewise.Segment`` takes."""
    if stored is None:
        return True
    if not isinstance(stored, dict) or set(stored) != {"breakpoints", "segments"}:
        return False
    bps, segs = stored["breakpoints"], stored["segments"]
    if not isinstance(bps, list) or not isinstance(segs, list) or len(segs) != len(bps) + 1:
        return False
    num = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool)   # noqa: E731
    if not all(num(b) and np.isfinite(b) for b in bps):
        return False
    names = {f.name for f in fields(piecewise.Segment)}
    return all(isinstance(s, dict) and set(s) == names and all(
        num(v) and np.isfinite(v) for v in s.values()) for s in segs)


def summary(cal: Calibration, path: str) -> str:
    """A few lines on what the calibration found."""
    lines = [f"calibration {path}: {cal.runs} run(s), {cal.points} measurements, sizes "
             f"{cal.size_range[0]}..{cal.size_range[1]} B ({cal.pair}-node pair)",
             f"  eager below {cal.eager_threshold} B; route latency "
             f"{cal.loopback_latency * 1e6:.3g} us, bandwidth {cal.loopback_bandwidth / 1e9:.3g}"
             f" GB/s (ranks on one host)"]
    for k, s in cal.segments.items():
        if s:
            bps = ", ".join(f"{b:g}" for b in s["breakpoints"])
            lines.append(f"  {k}: {len(s['segments'])} segment(s), "
                         + (f"breakpoints at {bps} B" if bps else "no breakpoint"))
    lines.append(f"  compute: {cal.speed / 1e9:.3g} Gflop/s per CPU second (spread "
                 f"{cal.speed_spread:.1%}), core share per rank "
                 + " ".join(f"{x:.2f}" for x in cal.core_share)
                 + f"; background {cal.background:.2%} of a node's compute (other work)")
    lines.append(f"  reductions (MPI_SUM, doubles): {cal.reduction_rate / 1e9:.3g} GB/s")
    if cal.copies():
        lines.append(f"  local copies: {cal.copy_rates[0] / 1e9:.3g} GB/s while source and "
                     f"destination take up to {cal.cold_from / 4:.0f} B, "
                     f"{cal.copy_rates[1] / 1e9:.3g} GB/s from {cal.cold_from} B"
                     + (f"; {cal.memory_copy_rate / 1e9:.3g} GB/s from memory, beyond a share of "
                        f"the caches of {cal.cache_share >> 20} MiB a rank (collectives whose "
                        f"working set outgrows it)" if cal.cache_share else ""))
    if cal.fresh_page_rate:
        lines.append(f"  first writes to memory just mapped (page faults): "
                     f"{cal.fresh_page_rate / 1e9:.3g} GB/s")
    if cal.kernels:
        lines.append("  kernel set (per CPU second; per wall second): " + "; ".join(
            f"{k} {v['cpu_rate']:.4g}; {v['wall_rate']:.4g} {v['unit']}/s"
            for k, v in cal.kernels.items()))
    if cal.after_compute:
        t = cal.after_compute
        us = lambda v: " ".join(f"{x * 1e6:.3g}" for x in v)      # noqa: E731
        for i, size in enumerate(t.get("bytes", [8])):
            lines.append(f"  an exchange of {size} B after a compute of " + ", ".join(
                f"{d * 1e6:g}" for d in t["seconds"]) + " us costs more by: " + "; ".join(
                f"{k} " + us(t[k][i] if "bytes" in t else t[k]) + " us"
                for k in after_compute.KERNELS))
    if cal.call_costs:
        lines.append(f"  posting a receive {cal.call_costs['post'] * 1e6:.3g} us, completing "
                     f"one {cal.call_costs['complete'] * 1e6:.3g} us beyond smpi/or (CPU time "
                     f"the replay's SMPI gives none)")
    if cal.node_bandwidth > 0:
        lines.append(f"  two messages at once between a node's ranks: "
                     f"{cal.node_bandwidth / 1e9:.3g} GB/s together (the node's memory, "
                     f"shared; one message alone: {cal.loopback_bandwidth / 1e9:.3g} GB/s)")
    lines.append(f"  platform: {cal.ranks_per_host} rank(s) per host, {cal.cores_per_host} "
                 f"cores")
    lines.append(_load_line(cal))
    lines += [f"  note: {n}" for n in cal.notes]
    lines.append("  SMPI options: " + " ".join(f"{k}:{v}" for k, v in cal.config.items()))
    if under_load.flag(cal):
        lines.append(f"  FLAGGED: {under_load.flag(cal)}")
    return "\n".join(lines)


def _load_line(cal: Calibration) -> str:
    """What the summary says of the load the runs were measured under."""
    got = cal.other_load
    if not got:
        return ("  load while calibrating: unknown (runs made before minitrace measured it, or "
                "no /proc/stat)")
    unknown = cal.runs - got["measured"]
    return (f"  load while calibrating: other processes took {got['cores']:.2g} of {got['of']} "
            f"cores on average (run {got['run']}, the most loaded of {got['measured']} "
            f"run(s)" + (f"; {unknown} run(s) unknown" if unknown > 0 else "")
            + f"; flagged above {under_load.MAX_OTHER_SHARE:.0%} of the cores)")


def _plot(runs, cal: Calibration, fits, path: str) -> None:
    """Data, fitted segments and breakpoints of each quantity, log-log."""
    from ..analysis.plotting import plt, save
    adjusted = [_without_python(r) for r in runs]
    cols = {k: np.concatenate([c[k] for c in adjusted])
            for k in ("kind", "size", "pair", "time", "t_send")}
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    sel = lambda kind: (cols["kind"] == kind) & (cols["pair"] == cal.pair)
    panels = [("one-way ping-pong time", "pingpong", "time", None),
              ("time in Send (eager: smpi/os)", "pingpong", "t_send", "send"),
              ("time in Recv of an arrived message (smpi/or)", "recv", "time", "recv"),
              ("time in Isend (smpi/ois)", "isend", "time", "isend")]
    grid = np.unique(np.geomspace(1, max(cal.size_range[1], 2), 400).astype(int)).astype(float)
    T = cal.eager_threshold
    for ax, (title, kind, col, key) in zip(axes.flat, panels):
        s = sel(kind)
        ax.loglog(cols["size"][s], cols[col][s], ".", ms=3, alpha=0.6, label="measured")
        if key is None:
            eager = grid < T
            model = np.where(eager, _value(fits["send"], grid) + _value(fits["recv"], grid)
                             + _value(fits["net_eager"], grid),
                             _value(fits["net_rendezvous"], grid))
            bps = [b for k in ("net_eager", "net_rendezvous") if fits[k]
                   for b in fits[k].breakpoints]
        else:
            f = fits[key]
            g = grid[grid < T] if key in ("send", "recv") else grid
            model = _value(f, g)
            grid_k = g
            bps = f.breakpoints if f else []
        ax.loglog(grid if key is None else grid_k, np.maximum(model, 1e-12), "-", lw=1.2,
                  label="fitted segments")
        for b in bps:
            ax.axvline(b, color="grey", lw=0.7, ls=":")
        ax.axvline(T, color="red", lw=0.8, ls="--", label=f"eager < {T} B")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("message size (B)")
        ax.set_ylabel("seconds")
        ax.legend(fontsize=8)
    fig.suptitle(f"minitrace calibration ({cal.runs} run(s), {cal.pair}-node pair; times less "
                 f"the Python loops' own cost)")
    fig.tight_layout()
    save(fig, path)
