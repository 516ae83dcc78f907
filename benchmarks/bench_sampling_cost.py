"""Issue 38: what ``minitrace replay --sample auto`` costs against the full replay of the same
trace, in process CPU time (user + system of the command and of the replayer it runs), and its
peak memory: a sampled replay is asked for to save time, so it must cost less than the full
one, and about as much where it finds nothing to skip (it then replays fully).

Each file is replayed ``N`` times each way, each run a fresh ``minitrace replay`` process, the
ways alternated so that a shared machine's load falls on all alike: in full (``--sample
off``), sampled by the code importable as ``minitrace``, and, with ``--old DIR``, sampled by
the code in DIR (``git archive COMMIT minitrace | tar -x -C DIR``).  Reported per file: each
way's least CPU seconds over the N runs and its largest peak RSS, the ratios sampled / full,
and whether the old and the new sampled replays printed the same (wall times aside).

Run (as `minitrace replay` would: options after ``--``; ``--compute-rate 1Gf`` by default):

    python benchmarks/bench_sampling_cost.py [--old DIR] [-n N] A.h5 B.h5 ... [-- OPTIONS]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

#: Printed figures that change from run to run: the wall times.
_WALL = re.compile(r"[0-9.e+-]+ s of wall time|simulation took [0-9.e+-]+ s")


def run_once(path: str, sample: str, options: list[str], pythonpath: str | None
             ) -> tuple[float, float, str]:
    """(CPU seconds, peak RSS in MB, output but its notes, wall times masked) of one replay
    process."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryDirectory() as cwd:
        # (elsewhere than in the repository: ``python -m`` imports from its directory first)
        p = subprocess.Popen([sys.executable, "-m", "minitrace", "replay", os.path.abspath(path),
                              "--sample", sample, *options], stdout=out,
                             stderr=subprocess.STDOUT, env=env, cwd=cwd)
        _, status, use = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if p.returncode:
        sys.exit(f"{path}: minitrace replay --sample {sample} failed:\n{text}")
    kept = [x for x in text.splitlines() if not x.startswith("  note:")]
    return use.ru_utime + use.ru_stime, use.ru_maxrss / 1024, _WALL.sub("(wall)", "\n".join(kept))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", metavar="DIR", help="another code's minitrace package's parent")
    ap.add_argument("-n", type=int, default=3, help="runs each way (default 3)")
    ap.add_argument("files", nargs="+")
    argv = sys.argv[1:]
    options = ["--compute-rate", "1Gf"]
    if "--" in argv:
        at = argv.index("--")
        argv, options = argv[:at], argv[at + 1:]
    args = ap.parse_args(argv)
    ways = [("full", "off", None), ("new", "auto", None)]
    if args.old:
        ways.append(("old", "auto", os.path.abspath(args.old)))
    print(f"{'file':18s} " + " ".join(f"{w + ' CPU s':>10s} {'MB':>6s}" for w, _, _ in ways) +
          "  new/full" + ("  old/full  old/new  same" if args.old else ""), flush=True)
    for path in args.files:
        cpu = {w: [] for w, _, _ in ways}
        rss = {w: 0.0 for w, _, _ in ways}
        text = {}
        for i in range(args.n):
            for w, sample, pp in ways[i % len(ways):] + ways[:i % len(ways)]:
                c, m, text[w] = run_once(path, sample, options, pp)
                cpu[w].append(c)
                rss[w] = max(rss[w], m)
        best = {w: min(v) for w, v in cpu.items()}
        line = f"{os.path.basename(path):18s} " + " ".join(
            f"{best[w]:10.2f} {rss[w]:6.0f}" for w, _, _ in ways) + \
            f"  {best['new'] / best['full']:8.3f}"
        if args.old:
            line += f"  {best['old'] / best['full']:8.3f}  {best['old'] / best['new']:7.3f}  " \
                    f"{'yes' if text['old'] == text['new'] else 'NO'}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
