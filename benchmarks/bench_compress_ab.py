"""Issue 38: compression speed and size of two codes in one process, calls alternated, so that
a shared machine's load and the host's drift fall on both alike (fresh processes per file, as
bench_compress.py --old does, moved the absolute figures by up to 30% between runs).

Each file in each mode (exact; bounded:1% with bounded:1us times; model) is compressed and
written (``write_compressed``, as `minitrace compress` does after reading its input) by the
old and the new code in turn, N + 1 times each (the first not counted); reported per file and
mode: actions per CPU second of this thread (``thread_time``) and of the process
(``process_time``: with storage's deflate threads), the best of N each, their ratios (old time
over new: by thread, by process; a code that deflates in this thread what the other hands to
the pool, as storage.write_chunks does a lone chunk since session 22, compares by process
only), and each code's file size in bytes per action.

Run (the two codes as packages named ``mtold`` and ``mtnew`` in DIR, e.g.
``git archive COMMIT minitrace | tar -x -C DIR && mv DIR/minitrace DIR/mtold``, and the
built shim copied beside: ``cp minitrace/_shim.abi3.so DIR/mtold/``):

    python benchmarks/bench_compress_ab.py DIR N A.h5 B.h5 ...
"""
from __future__ import annotations

import importlib
import os
import sys
import tempfile
import time

MODES = {"exact": ("exact", "exact"), "bounded": ("bounded:1%", "bounded:1us"),
         "model": ("model", "exact")}
CODES = ("mtold", "mtnew")


def main(root: str, n: int, paths: list[str]) -> None:
    sys.path.insert(0, root)
    pkg = {t: importlib.import_module(t) for t in CODES}
    write = {t: importlib.import_module(t + ".compress.files").write_compressed for t in CODES}
    print(f"{'file':22s} {'mode':8s} {'actions':>8s}  thread M/s old / new   process M/s "
          f"old / new   ratio th / pr   B/action old / new")
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            data = {}
            for t, m in pkg.items():
                with m.open(path) as tr:
                    data[t] = tr.data()
            nact = len(data["mtnew"].actions)
            for mode, (volumes, times) in MODES.items():
                th = {t: [] for t in CODES}
                pr = {t: [] for t in CODES}
                size = {}
                for i in range(n + 1):
                    for t in (CODES if i % 2 else CODES[::-1]):
                        out = os.path.join(tmp, f"{t}.h5")
                        c, p = time.thread_time(), time.process_time()
                        write[t](out, data[t], volumes, times=times)
                        if i:
                            th[t].append(time.thread_time() - c)
                            pr[t].append(time.process_time() - p)
                        size[t] = os.path.getsize(out) / nact

                def rate(x):
                    return nact / min(x) / 1e6
                print(f"{os.path.basename(path):22s} {mode:8s} {nact:8d}  "
                      f"{rate(th['mtold']):5.2f} / {rate(th['mtnew']):5.2f}      "
                      f"{rate(pr['mtold']):5.2f} / {rate(pr['mtnew']):5.2f}      "
                      f"{min(th['mtold']) / min(th['mtnew']):.3f} / "
                      f"{min(pr['mtold']) / min(pr['mtnew']):.3f}   "
                      f"{size['mtold']:.3f} / {size['mtnew']:.3f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
