"""Validation speed on a loop-like 64-rank ring trace of 10 M actions (actions/s).

Run: python benchmarks/bench_validate.py [--actions N]
"""
import argparse
import sys
import time
from pathlib import Path

from minitrace.validate import validate

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests.support
from tests.support.synthetic import ring_trace  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--actions", type=int, default=10_000_000)
    ap.add_argument("--ranks", type=int, default=64)
    args = ap.parse_args()
    d = ring_trace(args.ranks, args.actions)
    t = time.perf_counter()
    rep = validate(d)
    dt = time.perf_counter() - t
    print(f"validate: {len(d.actions):,} actions, {args.ranks} ranks in {dt:.2f} s = "
          f"{len(d.actions) / dt / 1e6:.2f} M actions/s; {rep.summary()}")


if __name__ == "__main__":
    main()
