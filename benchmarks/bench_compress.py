"""Issue 23 benchmark: compressed traces.  Sizes (whole file and structure alone, exact and model
volumes, against the column form), compression speed, the lossless round trip, size against
the number of ranks, summary() of a compressed trace against expanding it, and replay from the
compressed form against replay from the column form (native replayer).

Run: nice -n 10 python benchmarks/bench_compress.py [--actions 1000000] [--big 10000000]
     nice -n 10 python benchmarks/bench_compress.py --recorded A.h5 B.h5 ...
       recorded traces (issue 38): bytes/action and compression speed (actions per process CPU second
       of compressing and writing the file, as `minitrace compress` does after reading its
       input: the entropy coders run as the file is written; beside it, compress() alone, the
       figure of sessions 8-12) in every mode, the CPU time of reading the input (its
       actions, once; not in the speeds), and the replay of the model file against the
       exact file's (native replayer, 1 Gf hosts, --compute-rate 1Gf)
     ... --recorded A.h5 ... --old DIR [--rounds 2]
       also the code in DIR (`git archive COMMIT minitrace | tar -x -C DIR`, or a `git
       worktree`); each code runs each file's modes in fresh processes started outside the
       repository, alternated (--rounds of them, the fastest kept): sizes and speeds side
       by side, and their ratios
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import minitrace
from minitrace import storage
from minitrace.compress.files import sizes, write_compressed

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests.support
from tests.support import synthetic  # noqa: E402


def same(a, b) -> bool:
    """Two TraceColumns equal bit for bit."""
    ok = all(np.array_equal(np.ascontiguousarray(a.actions[f]).view(np.uint8),
                            np.ascontiguousarray(b.actions[f]).view(np.uint8))
             for f in a.actions.dtype.names)
    return ok and np.array_equal(a.vectors, b.vectors)


def one(name: str, data, d: str) -> dict:
    n = len(data.actions)
    plain = os.path.join(d, f"{name}.h5")
    storage.write_trace(plain, data)
    row = {"trace": name, "ranks": data.nranks, "actions": n,
           "plain B/action": os.path.getsize(plain) / n}
    for mode in ("exact", "model"):
        out = os.path.join(d, f"{name}.{mode}.h5")
        t, cpu = time.perf_counter(), []
        took = write_compressed(out, data, mode, cpu=cpu)
        total = time.perf_counter() - t
        s = sizes(out)
        row[f"{mode} B/action"] = s["file_bytes"] / n
        row[f"{mode} compress M/s"] = n / took / 1e6
        row[f"{mode} M/CPU s"] = n / cpu[0] / 1e6
        row[f"{mode} with write M/s"] = n / total / 1e6
        if mode == "exact":
            row["structure B/action"] = s["structure_bytes"] / n
            with minitrace.open(plain) as u, minitrace.open(out) as c:
                row["lossless"] = same(u.data(), c.data())
        row[f"{mode} file bytes"] = s["file_bytes"]
    return row


def summary_speed(n: int, d: str) -> dict:
    data = synthetic.loop_trace(16, n, True)
    out = os.path.join(d, "big.h5")
    write_compressed(out, data)
    del data
    with minitrace.open(out) as c:
        t = time.perf_counter()
        c.summary()
        t_sum = time.perf_counter() - t
        t = time.perf_counter()
        c.data()
        t_exp = time.perf_counter() - t
    return {"actions": n, "summary s": t_sum, "expand s": t_exp, "ratio": t_exp / t_sum}


def replay_speed(d: str) -> dict | None:
    from minitrace.replay import replay
    from minitrace.replay.replayer_build import binary
    if binary() is None:
        return None
    data = synthetic.stencil_trace(64, 500)
    plain, packed = os.path.join(d, "st.h5"), os.path.join(d, "st.z.h5")
    storage.write_trace(plain, data)
    write_compressed(packed, data)
    out = {"actions": len(data.actions)}
    for name, path in (("plain", plain), ("compressed", packed)):
        t = time.perf_counter()
        r = replay(path, engine="native", compute_rate="1Gf")
        out[f"{name} s"] = time.perf_counter() - t
        out[f"{name} simulated"] = r.simulated_time
    return out


MODES = ("exact", "bounded", "model")


#: The child that runs one checkout's code on one file (argv: path, out dir, repeat, tag): per
#: mode, its file bytes, best CPU seconds of compress + write and of compress() alone, as one
#: JSON line; its files stay in the out dir as MODE.TAG.h5.  Both codes run so, each in a
#: fresh process: a process that has already compressed other files ran the same code up to
#: 1.3-1.45x as fast on 140-510 k actions (not measured apart; page faults of fresh memory,
#: counted in the thread's CPU time, are a likely part), which made every --old ratio before
#: session 14 favour this code.  The written speed is the process's CPU time (storage deflates
#: the chunks of arrays over 2^18 values in threads: until session 33 the thread's, which left
#: them out); compress() alone runs in this thread.
_CHILD = """
import json, os, sys, time
import minitrace
from minitrace.compress.files import write_compressed
path, d, repeat, tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
with minitrace.open(path) as t:
    data = t.data()
out = {}
for mode, volumes, times in (("exact", "exact", "exact"),
                             ("bounded", "bounded:1%", "bounded:1us"),
                             ("model", "model", "exact")):
    f, best, alone = os.path.join(d, f"{mode}.{tag}.h5"), float("inf"), float("inf")
    for _ in range(repeat):
        cpu, c0 = [], time.process_time()
        write_compressed(f, data, volumes, cpu=cpu, times=times)
        best = min(best, time.process_time() - c0)
        alone = min(alone, cpu[0])
    out[mode] = [os.path.getsize(f), best, alone, minitrace.__file__]
print(json.dumps(out))
"""


def code_run(tree: str, path: str, d: str, repeat: int, tag: str) -> dict:
    """mode -> (bytes, CPU seconds written, CPU seconds compress() alone, minitrace's file) of
    the code in ``tree`` on ``path`` (a fresh child in ``d``, ``tree`` first on its path)."""
    import json
    import subprocess
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree))
    script = os.path.join(d, "child.py")     # (not -c: the file's provenance keeps the command
    with open(script, "w") as f:             # line, and this code's would add ~430 bytes)
        f.write(_CHILD)
    p = subprocess.run([sys.executable, script, os.path.abspath(path), d, str(repeat),
                        tag], cwd=d, env=env, capture_output=True, text=True, check=True)
    got = json.loads(p.stdout.strip().splitlines()[-1])
    if not got["exact"][3].startswith(os.path.abspath(tree)):
        raise SystemExit(f"the child ran {got['exact'][3]}, not the code in {tree}")
    return got


def recorded(path: str, d: str, repeat: int, old: str | None = None, rounds: int = 1) -> dict:
    """One recorded trace: each mode's bytes/action and M actions per CPU second (compressed
    and written; the fastest of ``repeat`` in each of ``rounds`` fresh processes, alternated
    with the code in ``old`` when given), and the model's replay against the exact file's."""
    from minitrace.replay import replay
    read = np.inf
    for _ in range(repeat):
        c0 = time.thread_time()
        with minitrace.open(path) as t:
            data = t.data()
        read = min(read, time.thread_time() - c0)
    n, nranks = len(data.actions), data.nranks
    del data                                    # (the children read it themselves)
    row = {"trace": os.path.basename(path), "ranks": nranks, "actions": n,
           "recorded B/action": os.path.getsize(path) / n,
           "read ms (not in the speeds)": 1e3 * read}
    here = os.path.dirname(os.path.dirname(os.path.abspath(minitrace.__file__)))
    best: dict = {}
    for _ in range(rounds):
        for tag, tree in (("new", here), ("old", old)):
            if tree is None:
                continue
            for mode, (size, written, alone, _) in code_run(tree, path, d, repeat, tag).items():
                was = best.get((tag, mode), (size, np.inf, np.inf))
                best[(tag, mode)] = (size, min(was[1], written), min(was[2], alone))
    for mode in MODES:
        size, written, alone = best[("new", mode)]
        s = sizes(os.path.join(d, f"{mode}.new.h5"))
        row[f"{mode} B/action"] = size / n
        row[f"{mode} trace B/action"] = (s["structure_bytes"] + s["side_bytes"]) / n
        row[f"{mode} M/CPU s"] = n / written / 1e6
        row[f"{mode} M/CPU s compress alone"] = n / alone / 1e6
        if old:
            size, written, _ = best[("old", mode)]
            row[f"{mode} B/action old"] = size / n
            row[f"{mode} M/CPU s old"] = n / written / 1e6
            row[f"{mode} speed new/old"] = row[f"{mode} M/CPU s"] / row[f"{mode} M/CPU s old"]
    sim = {m: replay(os.path.join(d, f"{m}.new.h5"), engine="native", compute_rate="1Gf",
                     lossy=True).simulated_time
           for m in ("exact", "model")}       # (lossy: both drop the same actions, if any)
    row["exact replay s"] = sim["exact"]
    row["model replay s"] = sim["model"]
    row["model vs exact"] = f"{100 * (sim['model'] / sim['exact'] - 1):+.2f}%"
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--actions", type=int, default=1_000_000)
    ap.add_argument("--big", type=int, default=10_000_000)
    ap.add_argument("--recorded", nargs="+", metavar="FILE", help="recorded traces only")
    ap.add_argument("--repeat", type=int, default=3, help="compressions per mode (fastest)")
    ap.add_argument("--old", metavar="DIR", help="with --recorded: also the code in DIR")
    ap.add_argument("--rounds", type=int, default=1,
                    help="with --recorded: fresh processes per code, alternated (fastest)")
    args = ap.parse_args()
    import pandas as pd
    print(f"load average {os.getloadavg()[0]:.1f} (2-core VM)")
    if args.recorded:
        rows = []
        for path in args.recorded:
            with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
                rows.append(recorded(path, d, args.repeat, args.old, args.rounds))
            print(f"{rows[-1]}, load average {os.getloadavg()[0]:.1f}", flush=True)
        with pd.option_context("display.width", 250, "display.max_columns", 30):
            print(pd.DataFrame(rows).set_index("trace").T.to_string())
        return
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
        rows = [one("loop16", synthetic.loop_trace(16, args.actions, True), d),
                one("stencil1024", synthetic.stencil_trace(1024, args.actions // 1024 // 11), d)]
        small = one("stencil16", synthetic.stencil_trace(16, args.actions // 1024 // 11), d)
        rows.append(small)
        with pd.option_context("display.width", 200, "display.max_columns", 30):
            print(pd.DataFrame(rows).set_index("trace").T.to_string())
        print(f"stencil 1024 vs 16 ranks, same iterations, model file: "
              f"{rows[1]['model file bytes'] / small['model file bytes']:.2f}x "
              f"({rows[1]['model file bytes']} vs {small['model file bytes']} bytes)")
        print(f"summary vs expansion: {summary_speed(args.big, d)}")
        print(f"replay: {replay_speed(d)}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
