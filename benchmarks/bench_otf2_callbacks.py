"""OTF2 reading speed: read_otf2 (the OTF2 C library's global event reader with minitrace's
compiled callbacks, converters/native/, then the reader's rules on columns) against the reader it
replaced (the otf2 bindings' Python event loop, loaded from git), on the ~1 M-event archive of
bench_convert.py, in one run: interleaved repeats, best of each.  Also times the compiled
callbacks alone (events into columns) and the bindings' bare event loop.

    python benchmarks/bench_otf2_callbacks.py [--events N] [--repeat 3] [--old-rev REV]

``--old-rev`` is a git revision whose converters/otf2.py is the old reader (default: the last
one before the C callbacks); ``--old-rev ''`` skips it (e.g. outside a git checkout).
"""
from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import otf2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))
from bench_convert import EVENTS_PER_ITERATION, loop_trace  # noqa: E402

import minitrace.converters  # noqa: E402,F401
from minitrace.converters.otf2 import read_otf2, write_otf2  # noqa: E402
from minitrace.converters.otf2_native import read_events  # noqa: E402

OLD_REV = "2f01a8c~1"      # converters/otf2.py before the compiled callbacks


def old_reader(rev: str, folder: Path):
    """``read_otf2`` of converters/otf2.py at git revision ``rev`` (a module of the installed
    package, so that its relative imports resolve), or None when git cannot give it."""
    p = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:converters/otf2.py"],
                       capture_output=True, text=True)
    if p.returncode:
        print(f"(no old reader: git show {rev}: {p.stderr.strip()})")
        return None
    path = folder / "old_otf2.py"
    path.write_text(p.stdout)
    spec = importlib.util.spec_from_file_location("minitrace.converters.old_otf2", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.read_otf2


def columns_only(anchor: Path) -> int:
    """The compiled callbacks alone: every location's events into the columns."""
    with otf2.reader.open(str(anchor)) as tr:
        locs = sorted(tr.definitions.locations, key=lambda loc: loc._ref)
    got = read_events(anchor, np.array([loc._ref for loc in locs], np.uint64),
                      np.arange(len(locs), dtype=np.int32),
                      np.array([loc.number_of_events for loc in locs], np.uint64),
                      np.full(1, -1, np.int32))
    assert not got.error
    return int(got.seen.sum())


def bindings_loop(anchor: Path) -> int:
    with otf2.reader.open(str(anchor)) as tr:
        return sum(1 for _ in tr.events)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3, help="interleaved repetitions (best kept)")
    ap.add_argument("--old-rev", default=OLD_REV)
    args = ap.parse_args()
    data = loop_trace(args.ranks, max(1, args.events // (EVENTS_PER_ITERATION * args.ranks)))
    with tempfile.TemporaryDirectory() as d:
        write_otf2(data, Path(d) / "a")
        anchor = Path(d) / "a" / "traces.otf2"
        old = old_reader(args.old_rev, Path(d)) if args.old_rev else None
        runs = {"compiled callbacks alone (events into columns)": lambda: columns_only(anchor),
                "otf2 bindings' Python event loop": lambda: bindings_loop(anchor),
                "read_otf2": lambda: read_otf2(anchor)}
        if old is not None:
            runs[f"read_otf2 before ({args.old_rev}: the bindings' event loop)"] = \
                lambda: old(anchor)
        best: dict[str, float] = {}
        for _ in range(args.repeat):
            for name, fn in runs.items():
                t = time.perf_counter()
                out = fn()
                best[name] = min(best.get(name, 1e9), time.perf_counter() - t)
                if name == "read_otf2":
                    new = out
                elif name.startswith("read_otf2 before"):
                    before = out
                else:
                    n = out
    assert len(new.actions) == len(data.actions)
    if old is not None:
        for f in new.actions.dtype.names:
            assert np.array_equal(new.actions[f], before.actions[f], equal_nan=True), f
    print(f"{n:,} OTF2 events, {len(new.actions):,} actions, {args.ranks} ranks, "
          f"best of {args.repeat}")
    for name, dt in best.items():
        print(f"{name}: {dt:.3f} s, {n / dt:,.0f} events/s")
    if old is not None:
        name = next(k for k in best if k.startswith("read_otf2 before"))
        print(f"read_otf2 is {best[name] / best['read_otf2']:.1f}x faster than before")


if __name__ == "__main__":
    main()
