"""Speed of noise replicas with iteration sampling (issue 25 target: 100 replicas of a 1 M-action
trace in under a minute on 2 cores): a 16-rank stencil of 8,000 iterations (1,024,096
actions, 5% jitter; tests/support/synthetic_loops.py), 100 replicas, ``--sample auto``, 2 workers,
compute rate 1Gf, default cluster.  With ``--old DIR`` (a checkout of an older minitrace, e.g.
``git archive main minitrace converters | tar -x -C DIR``) the same run is timed with that
code too, alternately in fresh processes, for the ratio old / new in one run.
Run: nice -n 10 python benchmarks/bench_replica_speed.py [--old DIR] [--rounds 2] [--n 100]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def one(n: int) -> dict:
    """Time ``n`` replicas in this process's minitrace: set-up (noise model, sampling plan)
    and the replicas, and one replica's parts."""
    import numpy as np
    from minitrace.replay import replicas as R
    sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        from tests.support.synthetic_loops import stencil
    except ImportError:       # a tree from before the generators moved to tests/support
        from minitrace.synthetic_loops import stencil
    data, _ = stencil(16, 8000, jitter=0.05, seed=7)
    t = time.perf_counter()
    r = R.replicas(data, n, "trace", seed=1, sample="auto", workers=2, compute_rate="1Gf")
    wall = time.perf_counter() - t
    s = r.summary()
    return {"wall": wall, "actions": len(data.actions), "median": s["median"],
            "lo": s["lo"], "hi": s["hi"], "replayed": r.sampled.replayed_share,
            "load": os.getloadavg()[0], "numpy": np.__version__}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", help="directory holding an older minitrace/ and converters/")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(args.n)))
        return
    trees = [("new", None)] + ([("old", args.old)] if args.old else [])
    got: dict = {name: [] for name, _ in trees}
    for _ in range(args.rounds):
        for name, tree in trees:
            env = dict(os.environ)
            if tree:
                env["PYTHONPATH"] = os.path.abspath(tree)
            out = subprocess.run([sys.executable, __file__, "--child", "--n", str(args.n)],
                                 env=env, check=True, capture_output=True, text=True,
                                 cwd=os.path.abspath(tree) if tree else None)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            got[name].append(r)
            print(f"{name}: {args.n} replicas of {r['actions']} actions: {r['wall']:.1f} s "
                  f"(median {r['median']:.6g} s, 95% {r['lo']:.6g}-{r['hi']:.6g} s, replayed "
                  f"{r['replayed']:.1%}; load {r['load']:.1f})", flush=True)
    best = {k: min(x["wall"] for x in v) for k, v in got.items()}
    if "old" in best:
        print(f"old / new (best of {args.rounds}): {best['old']:.1f} / {best['new']:.1f} s = "
              f"{best['old'] / best['new']:.2f}x")
    print(f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
