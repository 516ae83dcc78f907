"""Damage campaign of the readers of every file kind (issue 21), run on two installations
(before/after) over the same damaged corpus, with mutators of its own (not tests/fuzz's).

Kinds: ``calibration`` (refit, predict), ``bench`` (gev, info), ``history`` (regress),
``trace`` (info, validate, export: the kind index and the columns), ``ti`` (import, replay of
SimGrid TI text) and ``overlap`` (every command with an output that is one of its inputs).
Each case runs the real command line in a child forked by a server of the installation under
test (its Python, its minitrace), under a timeout and RLIMIT_AS, and is classified: ``ok`` /
``error`` (one line) are fine; ``internal`` (an uncaught exception), ``noisy``, ``crash``,
``hang`` (the timeout), ``silent-wrong`` (exit 0 on damage that changes what the file says:
a value out of its type's range, a shape the format forbids, an index that disagrees with the
columns) and ``overwritten`` (an input changed by the command) are findings.

Issue 33's kinds, on the inputs ``minitrace demo`` writes (``--demo DIR``): ``vds`` (a column
made a virtual dataset over its own file, its own name or another file's virtual dataset;
parts of a parallel merge swapped), ``nonfinite`` (NaN/inf in every float column: volumes and
times of the column form and of both compressed forms, bench times, calibration fit values),
``finalize`` (actions after finalize, a second init/finalize pair, cut-short SimGrid text),
``cycle`` (task graphs with cycles, infinite durations or threads), ``options`` (every numeric
option of the commands given non-finite, negative, huge and malformed values) and
``signals`` (SIGTERM to the process group once or twice, SIGINT, at random moments of a real
``python -m minitrace`` process: one line and 143/130, or the command's own result).

Usage: python benchmarks/damage_campaign.py --python /path/to/venv/bin/python [--python ...]
       [--cases 200] [--work DIR] [--timeout 40] [--kinds K,...] [--demo DIR]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

KINDS = ("calibration", "bench", "history", "trace", "ti", "overlap", "vds", "nonfinite",
         "finalize", "cycle", "options", "signals")
#: Issue 33's kinds: their cases come from ``issue33_case`` (inputs of ``minitrace demo``).
KINDS_33 = ("vds", "nonfinite", "finalize", "cycle", "options")
FINE = ("ok", "error")
REPO = Path(__file__).resolve().parents[1]


# -- seeds (made with the installation running this script) ---------------------------------

def make_seeds(d: Path) -> dict[str, Path]:
    from minitrace.analysis import regress_history as H
    from minitrace.predict import calibration as C
    from minitrace.storage import write_bench, write_trace
    from tests.support.synthetic import calibration_run, loop_trace
    d.mkdir(parents=True, exist_ok=True)
    s = {k: d / f"{k}.h5" for k in ("calibration", "bench", "history", "trace")}
    if not s["calibration"].exists():
        for k in range(2):
            C.append_run(str(s["calibration"]), calibration_run(k))
        C.refit(str(s["calibration"]))
    rng = np.random.default_rng(0)
    if not s["bench"].exists():
        t = 1e-3 * (1 + rng.gamma(2, 0.05, (60, 4)))
        write_bench(str(s["bench"]), "variability",
                    {"times": t, "maxima": t.max(axis=1), "work": np.ones((60, 4)),
                     "node": np.array([0, 0, 1, 1], np.int32),
                     "local_rank": np.array([0, 1, 0, 1], np.int32)},
                    attrs={"workload": "ftq", "iterations": 60, "unit": "s"})
    if not s["history"].exists():
        n, m = 200, 6
        v = 1 + 0.01 * rng.standard_normal((n, m))
        v[120:, :2] *= 1.05
        H.write(str(s["history"]), H.History(
            [f"s/m{j // 2}/{('mean', 'sd')[j % 2]}" for j in range(m)],
            np.array([1, 1, -1, -1, 0, 0], np.int8), v,
            {"date": np.array([f"2026-{1 + i // 28 % 12:02d}-{1 + i % 28:02d}T00:00:00+00:00"
                               for i in range(n)], dtype=object),
             "host": np.full(n, "n1", dtype=object), "source": np.full(n, "/r.h5", dtype=object),
             "command_line": np.full(n, "bench", dtype=object),
             "provenance_index": np.zeros(n, np.int32)}, ["{}"]))
    if not s["trace"].exists():
        write_trace(str(s["trace"]), loop_trace(4, 400, timed=True))
    s["ti"] = d / "ti.txt"
    shutil.copy(REPO / "tests" / "data" / "ti" / "p2p.txt", s["ti"])
    return s


# -- mutators --------------------------------------------------------------------------------

def _zero_page(p: Path, rng) -> bool:
    size = p.stat().st_size
    page = rng.randrange(max(size // 4096, 1))
    with open(p, "r+b") as fh:
        fh.seek(page * 4096)
        fh.write(bytes(min(4096, size - page * 4096)))
    return False


def _flip(p: Path, rng) -> bool:
    b = bytearray(p.read_bytes())
    for _ in range(rng.choice((1, 3, 10))):
        i = rng.randrange(len(b))
        b[i] = rng.choice((0, 0xFF, b[i] ^ (1 << rng.randrange(8))))
    p.write_bytes(bytes(b))
    return False


def _datasets(f) -> list[str]:
    import h5py
    out = []
    f.visititems(lambda n, o: out.append(n) if isinstance(o, h5py.Dataset) else None)
    return out


def _relink(p: Path, rng, under: str) -> bool:
    """A dataset under ``under`` replaced by a group or a link (self, elsewhere, external)."""
    import h5py
    with h5py.File(p, "r+") as f:
        names = [n for n in _datasets(f) if n.startswith(under)]
        n = rng.choice(names)
        del f[n]
        what = rng.randrange(4)
        if what == 0:
            f.create_group(n)
        elif what == 1:
            f[n] = h5py.SoftLink("/" + n)
        elif what == 2:
            f[n] = h5py.SoftLink("/" + rng.choice(names))
        else:
            f[n] = h5py.ExternalLink(str(p), "/" + rng.choice(names))
    return False


def _reshape(p: Path, rng, under: str, readers) -> bool | tuple:
    """A dataset rewritten transposed, flattened, cut by one, or a numeric one as text;
    ``readers(name)``: the commands that must refuse that dataset so changed."""
    import h5py
    with h5py.File(p, "r+") as f:
        n = rng.choice([n for n in _datasets(f) if n.startswith(under)])
        v = np.asarray(f[n][()])
        how = rng.randrange(4)
        if how == 0 and v.ndim == 2 and v.shape[0] != v.shape[1]:
            v = v.T
        elif how == 1 and v.ndim == 2:
            v = v.reshape(-1)
        elif how == 2 and v.ndim >= 1 and len(v) > 1:
            v = v[:-1]
        elif v.dtype != object:
            v = np.array(["x"] * max(v.size, 1), dtype=object)
        else:
            return False
        del f[n]
        if v.dtype == object:
            f.create_dataset(n, data=v, dtype=h5py.string_dtype())
        else:
            f[n] = v
    return readers(n)


def _set(p: Path, name: str, fn) -> None:
    import h5py
    with h5py.File(p, "r+") as f:
        v = np.asarray(f[name][()])
        v = fn(v)
        del f[name]
        if v.dtype == object:
            f.create_dataset(name, data=v, dtype=h5py.string_dtype())
        else:
            f[name] = v


def _fit_field(p: Path, rng) -> bool:
    import h5py
    with h5py.File(p, "r+") as f:
        d = json.loads(f["calibration/fit"].attrs["calibration"])
        k = rng.choice(["ranks_per_host", "cores_per_host", "latency", "bandwidth", "speed",
                        "compute_rate", "config", "segments", "size_range", "copy_rates",
                        "eager_threshold", "core_share", "pair", "notes"])
        d[k] = rng.choice([2 ** 63, -1, 0, float("nan"), "x", {}, None, [1e308] * 3,
                           {"send": {"breakpoints": [1, 2], "segments": []}}])
        if rng.random() < 0.2:     # (a field without a default: notes, copy_rates... have one)
            del d[rng.choice(["latency", "config", "speed", "ranks_per_host", "pair"])]
        f["calibration/fit"].attrs["calibration"] = json.dumps(d)
    return ("info", "predict")      # (a refit recomputes the fit: right to succeed)


def _run_attr(p: Path, rng) -> bool:
    import h5py
    with h5py.File(p, "r+") as f:
        g = f["calibration/runs/001"]
        k = rng.choice(["rank_to_node", "cores", "eager_threshold", "max_size", "python_costs",
                        "cold_from"])
        g.attrs[k] = rng.choice([json.dumps([]), json.dumps([2 ** 63]), -5,
                                 json.dumps({"pingpong": "x"}), json.dumps([1, 2, 3])])
    return ("info", "calibrate")    # (predict reads the fit only)


def _history_semantic(p: Path, rng) -> bool:
    import h5py
    which = rng.randrange(5)
    g = "bench/history/"
    if which == 0:
        _set(p, g + "values", lambda v: v.T)
    elif which == 1:
        _set(p, g + "values", lambda v: v.reshape(-1)[:-1].reshape(1, -1))
    elif which == 2:
        _set(p, g + "metric", lambda v: np.array([v[0]] * len(v), dtype=object))
    elif which == 3:
        _set(p, g + "direction", lambda v: np.full_like(v, 5))
    else:
        _set(p, g + "provenance_index", lambda v: v + 7)
    return h5py is not None


def _bench_semantic(p: Path, rng) -> bool:
    which = rng.randrange(4)
    g = "bench/variability/"
    if which == 0:
        _set(p, g + "times", lambda v: v[:2])
    elif which == 1:
        _set(p, g + "times", lambda v: v.T)
    elif which == 2:
        _set(p, g + "node", lambda v: v[:-1])
    else:
        _set(p, g + "times", lambda v: v.reshape(-1))
    return ("gev",)    # (info shows the arrays as they are: right to succeed)


def _trace_semantic(p: Path, rng) -> bool:
    which = rng.randrange(6)
    g = "trace/"
    if which == 0:
        def f(v):
            v = v.astype(np.int16)
            v[rng.randrange(len(v))] = rng.choice((258, 300, -1))
            return v
        _set(p, g + "actions/kind", f)
    elif which == 1:
        def f(v):
            v = v.astype(np.int64)
            v[rng.randrange(len(v))] = rng.choice((2 ** 32 + 1, -2 ** 40))
            return v
        _set(p, g + "actions/peer", f)
    elif which == 2:
        def f(v):
            v = v.copy()
            v[rng.randrange(v.shape[0]), rng.randrange(v.shape[1])] += rng.choice((1, 10 ** 9))
            return v
        _set(p, g + "index/kind_counts", f)
        return ("info",)   # (the index: only info reads it)
    elif which == 3:
        _set(p, g + "index/kind_codes", lambda v: np.roll(v, 1))
        return ("info",)
    elif which == 4:
        import h5py
        with h5py.File(p, "r+") as fh:
            k = rng.choice(sorted(fh[g + "index/kind_rows"]))
            del fh[g + "index/kind_rows/" + k]
        return False    # (a command that never asks for that kind is right to succeed)
    else:
        _set(p, g + "index/kind_rows/compute", lambda v: v[::-1].copy())
        return False
    return True


_TI_BAD = ["0\u2003compute 10", "0 compute\x1c10", "0 compute \u0661\u0660", "0 compute 1_0",
           "0 send 1 0 \uff11\uff10", "0\x0bcompute 5"]


def _ti(p: Path, rng) -> tuple[bool, list[str] | None]:
    """A line with a separator or digits SimGrid does not accept (must fail), or a rank far
    beyond the world for replay (must fail before allocating)."""
    lines = p.read_text().splitlines()
    if rng.random() < 0.3:
        lines.insert(rng.randrange(1, len(lines)), f"{rng.choice((2 ** 31, 2 ** 63 - 1))} "
                                                   "compute 5")
        return True, ["replay", "{in}", "--compute-rate", "1Gf", "--timeout", "30"]
    lines.insert(rng.randrange(1, len(lines)), rng.choice(_TI_BAD))
    p.write_text("\n".join(lines) + "\n")
    return True, None


def mutate(kind: str, p: Path, rng) -> tuple[bool | tuple, list[str] | None]:
    """Damage ``p`` in place; (whether exit 0 would be a silent wrong result: True, or the
    commands for which it would be; a command to use instead of the kind's own)."""
    if kind == "ti":
        return _ti(p, rng)
    under = {"calibration": "calibration", "bench": "bench", "history": "bench",
             "trace": "trace"}[kind]
    semantic = {"calibration": lambda: rng.choice([_fit_field, _run_attr])(p, rng),
                "bench": lambda: _bench_semantic(p, rng),
                "history": lambda: _history_semantic(p, rng),
                "trace": lambda: _trace_semantic(p, rng)}[kind]
    r = rng.random()
    if r < 0.2:
        return _zero_page(p, rng), None
    if r < 0.35:
        return _flip(p, rng), None
    if r < 0.55:
        return _relink(p, rng, under), None
    if r < 0.7:
        readers = {"calibration": lambda n: ("info", "calibrate"),
                   "bench": lambda n: ("gev",) if n.rsplit("/", 1)[1] in
                   ("times", "node", "local_rank") else False,
                   "history": lambda n: True,
                   "trace": lambda n: True if n.startswith("trace/actions/") else
                   ("info",) if n.startswith("trace/index/kind_c") else False}[kind]
        return _reshape(p, rng, under, readers), None
    return semantic(), None


def commands(kind: str, k: int, trace: Path) -> list[list[str]]:
    return {"calibration": [["info", "{in}"], ["calibrate", "-o", "{in}", "--plot", "{out}.png"],
                            ["predict", str(trace), "--calibration", "{in}", "--timeout", "30"]],
            "bench": [["gev", "{in}", "--method", "pwm", "--replicas", "20", "--no-backtest",
                       "--scale", "8"], ["info", "{in}"]],
            "history": [["regress", "{in}", "--permutations", "99", "--alpha", "0.05"]],
            "trace": [["info", "{in}"], ["validate", "{in}"],
                      ["export", "{in}", "--format", "csv", "-o", "{out}.csv"]],
            "ti": [["import", "{in}", "-o", "{out}.h5"]]}[kind]


def overlap_cases(seeds: dict, work: Path) -> list[tuple[list[str], list[Path]]]:
    """(command, inputs that must stay as they were) where an output is an input."""
    from tests.test_convert_tau import osu_like
    d = work / "overlap-src"
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    tau = d / "tau"
    tau.mkdir()
    trc = Path(osu_like(tau))
    h5 = d / "t.h5"
    shutil.copy(seeds["trace"], h5)
    otf2 = d / "otf2"
    subprocess.run([sys.executable, "-m", "minitrace", "convert", str(h5), "--to", "otf2", "-o",
                    str(otf2)], check=True, capture_output=True)
    ti = d / "a.txt"
    shutil.copy(seeds["ti"], ti)
    raw = d / "raw"
    raw.mkdir()
    (raw / "rank-000000.mtr").write_bytes(b"raw")
    cal, var, hist = (d / f"{k}.h5" for k in ("cal", "var", "hist"))
    shutil.copy(seeds["calibration"], cal)
    shutil.copy(seeds["bench"], var)
    shutil.copy(seeds["history"], hist)
    side = d / "x.txt_files"
    side.mkdir()
    shutil.copy(h5, side / "in.h5")
    return [(["import", ti, "-o", ti], [ti]),
            (["convert", trc, "-o", trc], [tau]), (["convert", trc, "-o", tau / "tau.edf"], [tau]),
            (["convert", otf2 / "traces.otf2", "-o", otf2 / "traces.def"], [otf2]),
            (["export", h5, "--format", "csv", "-o", h5], [h5]),
            (["export", h5, "--format", "ti", "-o", h5], [h5]),
            (["export", h5, "--format", "perfetto", "-o", h5], [h5]),
            (["export", side / "in.h5", "--format", "ti", "-o", d / "x.txt"], [side / "in.h5"]),
            (["replay", h5, "--compute-rate", "1Gf", "--perfetto", h5], [h5]),
            (["replay", h5, "--compute-rate", "1Gf", "--plot", h5], [h5]),
            (["merge", raw, "-o", raw / "rank-000000.mtr"], [raw]),
            (["predict", h5, "--calibration", cal, "--timeline", cal], [cal]),
            (["gev", var, "--plot", var], [var]),
            (["regress", hist, "--plot", hist], [hist]),
            (["calibrate", "-o", cal, "--plot", cal], [cal])]


# -- issue 33's kinds (inputs of `minitrace demo`) -----------------------------------------------

def _column_virtual(p: Path, rng, how: str) -> None:
    """A column of /trace/actions made a virtual dataset over this file (``.`` or its name) or
    over another file's virtual dataset that reads this one."""
    import h5py
    with h5py.File(p, "r+") as f:
        col = "trace/actions/" + rng.choice(sorted(f["trace/actions"]))
        if how == "chain":
            other = p.with_name("other.h5")
            shutil.copy(p, other)
            with h5py.File(other, "r+") as g:
                _virtualize(g, col, p.name, col)
            _virtualize(f, col, other.name, col)
        else:
            _virtualize(f, col, "." if how == "dot" else p.name, col)


def _virtualize(f, name: str, source_file: str, source: str) -> None:
    import h5py
    shape, dtype = f[name].shape, f[name].dtype
    del f[name]
    layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
    layout[:] = h5py.VirtualSource(source_file, source, shape=shape)
    f.create_virtual_dataset(name, layout)


_BAD_FLOATS = (float("nan"), float("inf"), float("-inf"))


def _float_column(p: Path, rng) -> bool:
    """One value of a float column of /trace/actions NaN or infinite (stored as float64);
    whether the trace is then wrong (a time may be NaN: not recorded)."""
    import h5py
    with h5py.File(p, "r+") as f:
        g = f["trace/actions"]
        name = rng.choice([n for n in ("volume", "t_start", "t_end") if n in g])
        if g[name].attrs.get("encoding") is not None:      # (delta-coded times: the volume)
            name = "volume"
        q = g[name].attrs.get("quantum")
        v = g[name][()].astype(np.float64) * (q if q is not None else 1.0)
        bad = rng.choice(_BAD_FLOATS)
        v[rng.randrange(len(v))] = bad
        del g[name]
        g[name] = v
    return name == "volume" or not np.isnan(bad)


def _side_float(p: Path, rng) -> None:
    """One value of a float side array of a compressed form NaN or infinite (the exact
    volumes stored as floats first when they are integer codes)."""
    import h5py
    with h5py.File(p, "r+") as f:
        g = f["trace"]
        mode = g.attrs["volumes"]
        if mode == "exact" and "volume_divisor" in g.attrs and rng.random() < 0.5:
            v = g["exact/volume"][()] / g.attrs["volume_divisor"]
            del g["exact/volume"], g.attrs["volume_divisor"]
            g["exact/volume"] = v
        names = []
        g[mode].visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) and
                           o.dtype.kind == "f" and o.shape and o.shape[0] else None)
        ds = g[mode][rng.choice(names)]
        v = ds[()]
        v[rng.randrange(len(v))] = rng.choice(_BAD_FLOATS)
        ds[...] = v


def _ti_lines(text: str, rng) -> str:
    """SimGrid text with work after a finalize, a second init/finalize pair, or cut short."""
    lines = text.splitlines()
    fins = [i for i, ln in enumerate(lines) if ln.split()[1:2] == ["finalize"]]
    i = rng.choice(fins)
    r = lines[i].split()[0]
    how = rng.randrange(3)
    if how == 0:
        lines.insert(i + 1, f"{r} compute {rng.choice((1, 1e6, 1e9))}")
    elif how == 1:
        lines[i + 1:i + 1] = [f"{r} init", f"{r} compute 1000", f"{r} finalize"]
    else:
        lines = lines[:rng.randrange(2, len(lines) - 1)]
    return "\n".join(lines) + "\n"


def _task_graph(p: Path, rng) -> None:
    """A task graph with a cycle (somewhere, with tasks downstream), an infinite or negative
    duration, or an infinite thread."""
    sys.path.insert(0, str(REPO))
    from minitrace.tasks.graph import from_tasks
    from minitrace.tasks.taskfile import write_tasks
    n = rng.randrange(3, 30)
    durations = {t: 1e-3 * (1 + rng.random()) for t in range(1, n + 1)}
    edges = [(a, b) for a in range(1, n + 1) for b in range(a + 1, n + 1) if rng.random() < 0.2]
    how = rng.randrange(3)
    if how == 0:
        a, b = sorted(rng.sample(range(1, n + 1), 2))
        edges.append((b, a) if (a, b) in edges else (a, b))
        edges.append((b, a))
    elif how == 1:
        durations[rng.randrange(1, n + 1)] = rng.choice((float("inf"), -1.0))
    g = from_tasks(durations, edges=edges)
    if how == 2:
        g.tasks["thread"] = g.tasks["thread"].astype(np.float64)
        g.tasks.loc[rng.randrange(n), "thread"] = float("inf")
    write_tasks(str(p), g)


#: (command, numeric options) of the commands given extreme values; {t}: a trace, {v}: a
#: variability bench file, {c}: a calibration, {g}: a task graph, {o}: an output path
_OPTIONS = [
    (["replay", "{t}"], ["--timeout", "--cluster", "--ranks-per-host", "--np", "--sample",
                         "--replicas", "--seed", "--workers"]),
    (["predict", "{j}", "--calibration", "{c}"], ["--timeout", "--cluster",
                                                  "--ranks-per-node", "--measured"]),
    (["validate", "{t}"], ["--max"]),
    (["compress", "{t}", "-o", "{o}"], ["--precision"]),
    (["extrapolate", "{t}", "-o", "{o}"], ["--ranks", "--threshold", "--seed"]),
    (["gev", "{v}", "--no-backtest"], ["--replicas", "--ci", "--seed", "--tol", "--scale"]),
    (["regress", "{h}"], ["--gamma", "--min-reference", "--min-segment", "--alpha",
                          "--permutations", "--seed"]),
    (["simulate-tasks", "{g}", "--threads", "2"], ["--threads", "--rank", "--overlap"]),
    (["partitioned-model"], ["--threads", "--size", "--v"]),
    (["numa-platform", "-o", "{o}"], ["--bandwidth", "--synthetic"]),
]
_VALUES = ["nan", "inf", "-inf", "-1", "0", "1e400", "1e30", "1e11", "10000000000", "abc",
           "9223372036854775808", "-0", "1e-300", "2.5", "4,abc", ""]


def _option_value(option: str, rng) -> str:
    v = rng.choice(_VALUES)
    if option == "--bandwidth":
        return f"{rng.choice(('core', 'memory', 'l3'))}={v}"
    if option == "--synthetic":
        return rng.choice(("pack:100000 core:100000 pu:1", f"core:{v} pu:1", "pack:2 core:4"))
    return v


def issue33_case(kind: str, k: int, rng, case: Path, demo: Path, seeds: dict):
    """(argv with {in} filled, must_fail: exit 0 would be a silent wrong result) of case ``k``
    of an issue-33 kind, its input made in ``case``."""
    t = case / "t.h5"
    shutil.copy(demo / rng.choice(("demo.h5", "jacobi.h5")), t)
    if kind == "vds":
        _column_virtual(t, rng, rng.choice(("dot", "name", "chain")))
        cmd = rng.choice([["info"], ["validate"], ["export", "--format", "csv", "-o", "x.csv"],
                          ["pack", "-o", "x.h5"], ["compress", "-o", "x.h5"],
                          ["replay", "--compute-rate", "1Gf", "--timeout", "30"]])
        return [cmd[0], str(t), *cmd[1:]], True
    if kind == "nonfinite":
        what = rng.randrange(4)
        wrong = True
        if what == 0:
            wrong = _float_column(t, rng)
        elif what == 1:
            c = case / "c.h5"
            subprocess.run([sys.executable, "-m", "minitrace", "compress", str(t), "-o", str(c),
                            "--volumes", rng.choice(("exact", "model")), "--unpacked"],
                           check=True, capture_output=True)     # (each array a dataset)
            _side_float(c, rng)
            t = c
        elif what == 2:
            v = case / "v.h5"
            shutil.copy(demo / "variability.h5", v)
            _set(v, "bench/variability/times",
                 lambda x: np.where(np.arange(x.size).reshape(x.shape) == rng.randrange(x.size),
                                    rng.choice(_BAD_FLOATS), x))
            return ["gev", str(v), "--no-backtest", "--replicas", "20"], True
        else:
            c = case / "m.h5"
            shutil.copy(demo / "machine.h5", c)
            import h5py
            with h5py.File(c, "r+") as f:
                d = json.loads(f["calibration/fit"].attrs["calibration"])
                key = rng.choice(sorted(k for k, v in d.items() if isinstance(v, (int, float))))
                d[key] = rng.choice(("NaN", "Infinity", 2 ** 70))
                f["calibration/fit"].attrs["calibration"] = json.dumps(d).replace(
                    '"NaN"', "NaN").replace('"Infinity"', "Infinity")
            return ["predict", str(demo / "jacobi.h5"), "--calibration", str(c), "--timeout",
                    "60"], d[key] != 2 ** 70
        cmd = rng.choice([["validate"], ["replay", "--compute-rate", "1Gf", "--timeout", "30"],
                          ["expand", "-o", "x.h5"], ["compress", "-o", "y.h5"],
                          ["export", "--format", "ti", "-o", "x.txt"]])
        if cmd[0] == "expand" and t.name == "t.h5":
            cmd = ["info"]
        return [cmd[0], str(t), *cmd[1:]], wrong and cmd[0] != "info"
    if kind == "finalize":
        ti = case / "d.txt"
        ti.write_text(_ti_lines((REPO / "minitrace" / "data" / "demo_ring4.txt").read_text(),
                                rng))
        return ["import", str(ti), "-o", str(case / "d.h5")], False   # (see _said_valid)
    if kind == "cycle":
        g = case / "g.h5"
        _task_graph(g, rng)
        cmd = rng.choice([["validate"], ["simulate-tasks", "--threads", "2"]])
        return [cmd[0], str(g), *cmd[1:]], True
    # options
    base, options = rng.choice(_OPTIONS)
    option = rng.choice(options)
    h = seeds["history"]
    g = case / "g.h5"
    if "{g}" in base:
        sys.path.insert(0, str(REPO))
        from minitrace.tasks.graph import from_tasks
        from minitrace.tasks.taskfile import write_tasks
        write_tasks(str(g), from_tasks({1: 1e-3, 2: 2e-3}, edges=[(1, 2)]))
    fill = {"{t}": str(t), "{j}": str(demo / "jacobi.h5"), "{c}": str(demo / "machine.h5"),
            "{v}": str(demo / "variability.h5"), "{g}": str(g), "{h}": str(h),
            "{o}": str(case / "out.xml" if base[0] == "numa-platform" else case / "out.h5")}
    argv = [fill.get(a, a) for a in base] + [f"{option}={_option_value(option, rng)}"]
    if base[0] == "replay":
        argv += ["--compute-rate", "1Gf"]
    return argv, False


def said_valid(case: Path) -> bool:
    """Whether the trace an import of damaged SimGrid text wrote validates (then its exit 0 was
    a silent wrong result: work after finalize, a second init, a cut are no valid run)."""
    from minitrace import open as open_trace
    from minitrace.validate import validate
    with open_trace(str(case / "d.h5")) as t:
        return validate(t.data()).ok


def signal_case(python: str, rng, demo: Path, case: Path) -> tuple[str, str]:
    """A real ``python -m minitrace`` in a process group of its own, signalled at random: the
    outcome (``ok`` when it ended as it should: its own result, or one line and 143 / 130)
    and its stderr."""
    cmd = rng.choice([["replay", str(demo / "jacobi.h5"), "--compute-rate", "1Gf"],
                      ["compress", str(demo / "jacobi.h5"), "--volumes", "model", "-o",
                       str(case / "c.h5")],
                      ["validate", str(demo / "jacobi.h5")], ["info", str(demo / "demo.h5")]])
    plan = [(rng.uniform(0.02, 1.5), rng.choice((signal.SIGTERM, signal.SIGINT)))]
    if plan[0][1] == signal.SIGTERM and rng.random() < 0.6:
        plan.append((rng.choice((0, 0.001, 0.005, 0.02, 0.1)), signal.SIGTERM))
    p = subprocess.Popen([python, "-m", "minitrace", *cmd], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=case)
    for wait, sig in plan:
        time.sleep(wait)
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            break
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return "hang", ""
    want = {143: "minitrace: terminated\n", 130: "minitrace: interrupted\n"}
    if p.returncode in want:
        return ("ok" if err == want[p.returncode] else "noisy"), err
    if p.returncode == -plan[0][1] and not err and plan[0][0] < 0.1:
        return "ok", err    # (before the interpreter ran minitrace's first line: the signal's
        #                     default action, which a shell reports as 143 / 130 too)
    return classify(p.returncode, err, False), f"rc {p.returncode} after {plan}: {err}"


# -- running (a fork server per installation) -------------------------------------------------

def serve() -> None:
    """In the installation under test: fork a child per JSON job, report [status, seconds]."""
    os.environ["TQDM_DISABLE"] = "1"
    import minitrace.cli  # noqa: F401
    from minitrace import cli
    from minitrace.commands import (calibrate, convert, export, gev, import_, info,  # noqa
                                    merge, predict, regress, replay, validate, compress, expand,
                                    pack, simulate_tasks, numa_platform, partitioned_model,
                                    extrapolate)
    import minitrace.analysis.plotting  # noqa: F401
    for line in sys.stdin:
        argv, cwd, timeout = json.loads(line)
        err = Path(cwd) / "stderr"
        t0 = time.monotonic()
        pid = os.fork()
        if pid == 0:
            try:
                os.chdir(cwd)
                fd = os.open(str(err), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
                os.dup2(fd, 2)
                os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
                sys.stderr = os.fdopen(2, "w", buffering=1)
                sys.stdout = open(os.devnull, "w")
                resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
                os._exit(cli.main(argv))
            except BaseException as e:  # noqa: BLE001
                os.write(2, f"harness: {type(e).__name__}: {e}\n".encode())
                os._exit(99)
        status = None
        while time.monotonic() - t0 < timeout:
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(st)
                break
            time.sleep(0.005)
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        print(json.dumps([status, time.monotonic() - t0]), flush=True)


class Server:
    def __init__(self, python: str):
        self.p = subprocess.Popen([python, __file__, "--serve"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, cwd="/",
                                  env={**os.environ, "PYTHONPATH": ""})

    def run(self, argv: list[str], cwd: Path, timeout: float) -> tuple[int | None, str, float]:
        self.p.stdin.write(json.dumps([argv, str(cwd), timeout]) + "\n")
        self.p.stdin.flush()
        rc, secs = json.loads(self.p.stdout.readline())
        err = cwd / "stderr"
        return rc, err.read_text(errors="replace") if err.exists() else "", secs


def classify(rc, err: str, must_fail: bool) -> str:
    if rc is None:
        return "hang"
    if "internal error" in err or "Traceback" in err or "harness:" in err:
        return "internal"
    if rc not in (0, 1, 3):
        return "crash"
    lines = [ln for ln in err.split("\n") if ln.strip() and "%|" not in ln and
             not ln.startswith(("minitrace: warning:", "minitrace: note:"))]
    if rc == 1:
        return "error" if len(lines) == 1 and lines[0].startswith("minitrace: error:") else \
            ("ok" if not lines else "noisy")
    if lines:
        return "noisy"
    return "silent-wrong" if must_fail else "ok"


def digest(paths) -> list[str]:
    out = []
    for p in paths:
        p = Path(p)
        files = sorted(q for q in p.rglob("*") if q.is_file()) if p.is_dir() else [p]
        out += [hashlib.sha256(f.read_bytes()).hexdigest() if f.exists() else "gone"
                for f in files]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", action="append", required=True,
                    help="interpreter of an installation to test (repeat: before, after)")
    ap.add_argument("--cases", type=int, default=200, help="cases per file kind [200]")
    ap.add_argument("--work", default="/tmp/damage-campaign")
    ap.add_argument("--timeout", type=float, default=40.0)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--kinds", default=",".join(KINDS), help="kinds to run [all]")
    ap.add_argument("--demo", help="output directory of `minitrace demo` (issue 33's kinds)")
    ap.add_argument("--per-kind", default="", metavar="K=N,...",
                    help="cases of some kinds, the others --cases")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    work = Path(args.work)
    seeds = make_seeds(work / "seeds")
    trace = seeds["trace"]
    results = {}
    kinds = [k for k in args.kinds.split(",") if k]
    per_kind = {k: int(n) for k, _, n in (x.partition("=") for x in args.per_kind.split(",")
                                          if x)}
    demo = Path(args.demo) if args.demo else None
    for python in args.python:
        srv = Server(python)
        table = {k: Counter() for k in kinds}
        findings = []
        t_start = time.monotonic()
        for kind in kinds:
            n_cases = per_kind.get(kind, args.cases)
            if kind == "signals":
                rng = random.Random(f"{args.seed}-{kind}")
                for k in range(n_cases):
                    case = work / "cases" / f"{kind}-{k}"
                    shutil.rmtree(case, ignore_errors=True)
                    case.mkdir(parents=True)
                    out, err = signal_case(python, rng, demo, case)
                    table[kind][out] += 1
                    if out not in FINE:
                        findings.append((kind, f"#{k}", out, err.strip()[-200:]))
                continue
            if kind in KINDS_33:
                rng = random.Random(f"{args.seed}-{kind}")
                for k in range(n_cases):
                    case = work / "cases" / f"{kind}-{k}"
                    shutil.rmtree(case, ignore_errors=True)
                    case.mkdir(parents=True)
                    argv, must_fail = issue33_case(kind, k, rng, case, demo, seeds)
                    before = digest([demo])
                    rc, err, _ = srv.run(argv, case, args.timeout)
                    out = classify(rc, err, must_fail)
                    if kind == "finalize" and out == "ok" and said_valid(case):
                        out = "silent-wrong"
                    if digest([demo]) != before:
                        out = "overwritten"
                    table[kind][out] += 1
                    if out not in FINE:
                        findings.append((kind, f"#{k} {' '.join(argv)}", out,
                                         err.strip()[-200:]))
                    shutil.rmtree(case, ignore_errors=True)
                continue
            if kind == "overlap":
                for argv, inputs in overlap_cases(seeds, work):
                    before = digest(inputs)
                    rc, err, _ = srv.run([str(a) for a in argv], work, args.timeout)
                    out = "overwritten" if digest(inputs) != before else \
                        classify(rc, err, False)
                    table[kind][out] += 1
                    if out not in FINE:
                        findings.append((kind, " ".join(map(str, argv)), out, err[-200:]))
                continue
            rng = random.Random(f"{args.seed}-{kind}")
            cmds = commands(kind, 0, trace)
            for k in range(n_cases):
                case = work / "cases" / f"{kind}-{k}"
                shutil.rmtree(case, ignore_errors=True)
                case.mkdir(parents=True)
                inp = case / seeds[kind].name
                shutil.copy(seeds[kind], inp)
                try:
                    must_fail, own = mutate(kind, inp, rng)
                except Exception as e:  # noqa: BLE001 (a mutation that does not apply)
                    must_fail, own = False, None
                    print(f"  (mutation of {kind}#{k} skipped: {e})", file=sys.stderr)
                argv = [a.replace("{in}", str(inp)).replace("{out}", str(case / "out"))
                        for a in (own or cmds[k % len(cmds)])]
                before = digest([inp])
                rc, err, _ = srv.run(argv, case, args.timeout)
                out = classify(rc, err, must_fail is True or (
                    isinstance(must_fail, tuple) and argv[0] in must_fail))
                if out in FINE and "-o" in argv and digest([inp]) != before and \
                        argv[argv.index("-o") + 1] != str(inp):
                    out = "overwritten"
                table[kind][out] += 1
                if out not in FINE:
                    findings.append((kind, f"#{k} {' '.join(argv)}", out, err.strip()[-200:]))
                shutil.rmtree(case, ignore_errors=True)
        srv.p.stdin.close()
        results[python] = (table, findings, time.monotonic() - t_start)
    for python, (table, findings, secs) in results.items():
        print(f"\n== {python} ({secs:.0f} s)")
        print(f"{'kind':<12} {'cases':>5} " + " ".join(
            f"{o:>12}" for o in ("ok", "error", "internal", "hang", "silent-wrong",
                                 "overwritten", "noisy", "crash")))
        for kind in table:
            c = table[kind]
            print(f"{kind:<12} {sum(c.values()):>5} " + " ".join(
                f"{c[o]:>12}" for o in ("ok", "error", "internal", "hang", "silent-wrong",
                                        "overwritten", "noisy", "crash")))
        for f in findings[:60]:
            print("  ", *f)


if __name__ == "__main__":
    if "--serve" in sys.argv:
        serve()
    else:
        sys.path.insert(0, str(REPO))
        main()
