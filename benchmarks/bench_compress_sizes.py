"""Issue 38: bytes per action of each compression mode on recorded traces, and the model
file's replay against the exact file's: the size tables of benchmarks/RESULTS.md since session
24 (written there as ``sizes.py``).

Per file: its actions, the recording's bytes per action, then those of the files
``write_compressed`` writes (as ``minitrace compress`` does: with this process's provenance)
in exact mode, bounded (``bounded:1%`` volumes, ``bounded:1us`` times) and model mode, and the
model file's native replay (1 Gf) relative to the exact file's.  Deterministic.

Run (the code measured is the one importable as ``minitrace``; PYTHONPATH picks another):

    python benchmarks/bench_compress_sizes.py LIST     (LIST: a file naming one trace a line)
"""
from __future__ import annotations

import os
import sys
import tempfile

import minitrace
from minitrace.compress.files import write_compressed
from minitrace.replay import replay

MODES = {"exact": ("exact", "exact"), "bounded": ("bounded:1%", "bounded:1us"),
         "model": ("model", "exact")}


def simulated(path: str) -> float:
    return replay(path, engine="native", compute_rate="1Gf").simulated_time


def main(paths: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for src in paths:
            with minitrace.open(src) as tr:
                data = tr.data()
            n = len(data.actions)
            size = {}
            for mode, (volumes, times) in MODES.items():
                out = os.path.join(tmp, mode + ".h5")
                write_compressed(out, data, volumes, times=times)
                size[mode] = os.path.getsize(out) / n
            try:
                ratio = simulated(os.path.join(tmp, "model.h5")) / \
                    simulated(os.path.join(tmp, "exact.h5"))
                moved = f"{100 * (ratio - 1):+.2f}%"
            except minitrace.MinitraceError as e:
                moved = f"failed: {str(e)[:60]}"
            print(f"{os.path.basename(src):18s} {n:8d} {os.path.getsize(src) / n:7.3f} "
                  f"{size['exact']:.3f} {size['bounded']:.3f} {size['model']:.3f} {moved}",
                  flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(open(sys.argv[1]).read().split())
