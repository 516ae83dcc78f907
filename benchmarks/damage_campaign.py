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

Usage: python benchmarks/damage_campaign.py --python /path/to/venv/bin/python [--python ...]
       [--cases 200] [--work DIR] [--timeout 40]
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

KINDS = ("calibration", "bench", "history", "trace", "ti", "overlap")
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


# -- running (a fork server per installation) -------------------------------------------------

def serve() -> None:
    """In the installation under test: fork a child per JSON job, report [status, seconds]."""
    os.environ["TQDM_DISABLE"] = "1"
    import minitrace.cli  # noqa: F401
    from minitrace import cli
    from minitrace.commands import (calibrate, convert, export, gev, import_, info,  # noqa
                                    merge, predict, regress, replay, validate)
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
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    work = Path(args.work)
    seeds = make_seeds(work / "seeds")
    trace = seeds["trace"]
    results = {}
    for python in args.python:
        srv = Server(python)
        table = {k: Counter() for k in KINDS}
        findings = []
        t_start = time.monotonic()
        for kind in KINDS:
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
            for k in range(args.cases):
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
        for kind in KINDS:
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
