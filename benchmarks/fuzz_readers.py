"""The long fuzz run of every reader (issue 13): N mutated inputs per reader (TI text, HDF5 with
damaged datasets/attributes, raw recorder files, TAU, OTF2) through the real command line, each
in a forked child under RLIMIT_AS = 2 GiB and a 30 s timeout (tests/fuzz/engine.py), and a
table of outcomes by reader.  Seeds: the repository's TI traces and what minitrace makes of
them, raw directories of two recorded programs (a ring; every collective, with vectors), a TAU
trace in TAU's layout and, when present, ../shared/fixtures.

    python benchmarks/fuzz_readers.py --cases 1000 [--seed 0] [--keep DIR]

Exit status 1 when any case is a finding (anything but ``ok`` or a one-line ``error``)."""
from __future__ import annotations

import argparse
import datetime as dt
import glob
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.fixtures import SHARED  # noqa: E402
from tests.fuzz import engine as E  # noqa: E402
from tests.support.mpiutil import mpicc, tool  # noqa: E402

OUTCOMES = ("ok", "error", "internal", "noisy", "crash", "timeout", "unreadable-output")


def record(program: str, n: int, args: list[str], work: Path) -> Path:
    """Record ``tests/programs/PROGRAM.c`` on ``n`` ranks, keeping its raw directory."""
    exe = mpicc(ROOT / "tests" / "programs" / f"{program}.c", work / program, "-lpthread")
    out = work / f"{program}.h5"
    p = subprocess.run([sys.executable, "-m", "minitrace", "record", "--keep-raw", "-o", str(out),
                        "--", tool("mpiexec"), "-n", str(n), str(exe), *args],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"recording {program} failed: {p.stderr}")
    return Path(glob.glob(f"{out}.raw-*")[0])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=1000, help="cases per reader (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", help="keep the failing cases in this directory")
    ap.add_argument("--readers", default=",".join(E.READERS),
                    help="comma-separated readers (default: all)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        tmp = Path(tmp)
        raws = [record("ring", 3, ["20"], tmp), record("colls", 4, [], tmp)]
        seeds = E.make_seeds(tmp / "seeds", ROOT, raws[0], SHARED)
        seeds["raw"].append(raws[1])
        seeds = {r: seeds[r] for r in args.readers.split(",")}
        load = os.getloadavg()[0]
        t0 = time.monotonic()
        work = Path(args.keep) if args.keep else tmp / "work"
        table = E.fuzz(seeds, work, args.cases, seed=args.seed, keep_failures=bool(args.keep))
        wall = time.monotonic() - t0
    total = sum(sum(c.values()) for c in table.counts.values())
    print(f"{dt.date.today()} {platform.node()} ({os.cpu_count()} cores, load {load:.1f} at "
          f"start), seed {args.seed}: {total} cases in {wall:.0f} s")
    print("| reader | cases | " + " | ".join(OUTCOMES) + " | slowest case |")
    print("|---" * (len(OUTCOMES) + 3) + "|")
    for r in E.READERS:
        c = table.counts[r]
        print(f"| {r} | {sum(c.values())} | " + " | ".join(str(c[o]) for o in OUTCOMES)
              + f" | {table.slowest[r]:.1f} s |")
    for f in table.findings:
        print(*f)
    return 1 if table.findings else 0


if __name__ == "__main__":
    sys.exit(main())
