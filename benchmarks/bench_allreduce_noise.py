"""Does compute noise survive a calibrated prediction at scale?  (issue 25's narrow interval)

A generated 1-D halo (``synthetic.halo_1d_trace``: 1 ms compute and an 8-byte allreduce per
iteration) at each ``--ranks``, its compute multiplied by iid uniform(0.7, 1.3) factors or not,
replayed with a calibration's options (``prediction.replay_options``) under SimGrid's default
world allreduce (a linear reduce to rank 0 then a bcast), under recursive doubling (what
predictions use), and without the per-message overheads.  Prints plain times and the noise's
effect.

    python benchmarks/bench_allreduce_noise.py CALIBRATION.h5 [--ranks 2 64 256 1024]
"""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from minitrace import kinds as K
from minitrace.predict import calibration as CAL, prediction as PR
from minitrace.replay import replay

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests.support
from tests.support import synthetic  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("calibration")
    ap.add_argument("--ranks", type=int, nargs="+", default=[2, 64, 256, 1024])
    args = ap.parse_args()
    cal = CAL.load(args.calibration)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("| ranks | allreduce | plain (ms) | noisy (ms) | noise effect |\n|---|---|---|---|---|")
    for p in args.ranks:
        data = synthetic.halo_1d_trace(p, seed=1)
        compute = data.actions["kind"] == K.CODE["compute"]
        actions = data.actions.copy()
        actions["volume"][compute] *= np.random.default_rng(0).uniform(0.7, 1.3, compute.sum())
        noisy = replace(data, actions=actions)
        options = PR.replay_options(data, cal)
        default = {k: v for k, v in options["config"].items() if k != "smpi/allreduce"}
        bare = {k: v for k, v in default.items() if k not in ("smpi/os", "smpi/or", "smpi/ois")}
        for name, config in (("default (linear reduce)", default),
                             ("rdb (predictions)", options["config"]),
                             ("default, no os/or/ois", bare)):
            run = dict(options, config=config)
            t0 = replay(data, **run).simulated_time
            t1 = replay(noisy, **run).simulated_time
            print(f"| {p} | {name} | {1e3 * t0:.3f} | {1e3 * t1:.3f} | {(t1 - t0) / t0:+.1%} |",
                  flush=True)


if __name__ == "__main__":
    main()
