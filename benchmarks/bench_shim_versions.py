"""Per-call cost of two builds of the PMPI shim, in one run: ns added per traced call
(bench_shim.py's ABBA blocks: recording and paused blocks alternate inside each traced
process), the two shims' runs interleaved, 1 rank (Comm_size, Sendrecv to self) and a 2-rank
8-byte ping-pong.  For a change to the shim's hot path, e.g. raw format v4's check words:

    git worktree add /tmp/old <commit>; (cd /tmp/old && python -c "import sys; \\
        sys.path.insert(0, 'c_shim'); from build_shim import ffibuilder; \\
        ffibuilder.compile(tmpdir='build')")
    python benchmarks/bench_shim_versions.py /tmp/old/build/minitrace/_shim*.so \\
        $(minitrace shim-path) [--runs 6]
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench_shim import BLOCKS_SRC  # noqa: E402
from tests.support.mpiutil import mpicc, tool  # noqa: E402


def added_ns(out: str) -> dict[str, np.ndarray]:
    """Per measure, each quartet's recording blocks minus its paused neighbours (ns/call)."""
    vals: dict[str, list] = {}
    for _, _, rest in re.findall(r"block (\d+) (\d) (.*)", out):
        for k, v in re.findall(r"(\w+) ([\d.]+)", rest):
            vals.setdefault(k, []).append(float(v))
    return {k: (lambda a: a[:, 1:3].mean(1) - a[:, [0, 3]].mean(1))(np.array(v).reshape(-1, 4))
            for k, v in vals.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("baseline")
    ap.add_argument("candidate")
    ap.add_argument("--runs", type=int, default=6)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-shim-versions-"))
    (work / "blocks.c").write_text(BLOCKS_SRC)
    exe = str(mpicc(work / "blocks.c", work / "blocks", "-ldl"))
    shims = {"baseline": os.path.abspath(args.baseline),
             "candidate": os.path.abspath(args.candidate)}
    got: dict[str, dict[str, list]] = {k: {} for k in shims}
    for rep in range(args.runs):
        order = list(shims.items())
        for name, so in order if rep % 2 == 0 else order[::-1]:
            for n in (1, 2):
                raw = work / f"raw-{name}-{rep}-{n}"
                raw.mkdir()
                env = dict(os.environ, LD_PRELOAD=so, MINITRACE_DIR=str(raw),
                           MINITRACE_VOLUME="auto")
                out = subprocess.run([tool("mpiexec"), "-n", str(n), exe, "20", "20000"],
                                     env=env, capture_output=True, text=True, check=True).stdout
                for k, v in added_ns(out).items():
                    got[name].setdefault(k, []).extend(v)
                shutil.rmtree(raw)
    for name, d in got.items():
        print(f"{name:>9} ({shims[name]}):")
        for k, v in d.items():
            q1, med, q3 = np.percentile(v, [25, 50, 75])
            print(f"    {k:<10} +{med:6.1f} ns per call (IQR {q1:.1f} .. {q3:.1f}, {len(v)} quartets)")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
