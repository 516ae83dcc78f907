"""Old and new code give the same outputs: run the CLI of two checkouts on the same inputs and
compare what they write (bytes of every exported file; every dataset and attribute of the HDF5
files except ``/provenance`` and the write date; stdout/stderr with paths and dates masked).

    python benchmarks/check_identical_outputs.py OLD_CHECKOUT [--work DIR]

OLD_CHECKOUT is a checkout of the older commit (``git worktree add /tmp/old COMMIT``); its
``minitrace/converters`` must reach its ``converters/`` (a symlink) and its compiled modules
are taken from this checkout's build.  Inputs: every TI trace under tests/data, OTF2 archives
and TAU traces written as the tests write them, synthetic traces, and raw recordings of
tests/programs made once with this checkout's shim.  Prints one line per case and a total;
exit status 1 when any output differs.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

NEW = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(NEW))


def run(root: Path, args: list[str], cwd: Path) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "100"}
    p = subprocess.run([sys.executable, "-m", "minitrace", *args], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


_MASK = [(re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[^\s'\"]*"), "DATE"),
         (re.compile(r"wall[ _]time[^,\n]*"), "WALL"),
         (re.compile(r"\"wall_time\": [0-9.e+-]+"), "WALL"),
         (re.compile(r"minitrace-replay-\w+"), "TMP"),
         (re.compile(r"\"command\": \[[^\]]*\]"), "CMD")]


def masked(text: str, *dirs: Path) -> str:
    for d in dirs:
        text = text.replace(str(d), "DIR")
    for pat, rep in _MASK:
        text = pat.sub(rep, text)
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith(("  command_line",
                                                                          "  date", "  cwd")))


def h5_dump(path: Path) -> dict:
    """Every dataset's bytes and every attribute, outside /provenance, minus the write date."""
    out = {}

    def visit(name, obj):
        if name.split("/")[0] == "provenance":
            return
        for k, v in obj.attrs.items():
            if k in ("created", "date"):
                continue
            out[f"{name}@{k}"] = np.asarray(v).tobytes() if not isinstance(v, str) else v
        if isinstance(obj, h5py.Dataset):
            v = np.asarray(obj[()])
            out[name] = (str(obj.dtype), obj.shape,   # strings by value, not by pointer
                         repr(v.tolist()) if v.dtype == object else v.tobytes())
    with h5py.File(path, "r") as f:
        for k, v in f.attrs.items():
            if k not in ("created", "date"):
                out[f"@{k}"] = np.asarray(v).tobytes() if not isinstance(v, str) else v
        f.visititems(visit)
    return out


def same_tree(a: Path, b: Path) -> bool:
    if a.is_dir() != b.is_dir():
        return False
    if a.is_file():
        if a.suffix == ".h5":
            return h5_dump(a) == h5_dump(b)
        return filecmp.cmp(a, b, shallow=False)
    if not a.exists() and not b.exists():
        return True
    names = sorted(p.name for p in a.iterdir())
    return names == sorted(p.name for p in b.iterdir()) and all(
        same_tree(a / n, b / n) for n in names)


class Checker:
    def __init__(self, old: Path, work: Path):
        self.old, self.work, self.cases, self.diffs = old, work, 0, []

    def case(self, name: str, old_args: list[str], new_args: list[str] | None = None,
             outputs: tuple[str, ...] = ()) -> None:
        """Run both; ``outputs`` are output names (relative to each side's directory)."""
        res = {}
        for side, root, args in (("old", self.old, old_args), ("new", NEW, new_args or old_args)):
            d = self.work / name / side
            d.mkdir(parents=True, exist_ok=True)
            args = [a.replace("@OUT", str(d)) for a in args]
            rc, out, err = run(root, args, d)
            res[side] = (d, rc, masked(out, d, self.work), masked(err, d, self.work))
        self.cases += 1
        (do, *o), (dn, *n) = res["old"], res["new"]
        problems = [what for what, a, b in zip(("exit status", "stdout", "stderr"), o, n)
                    if a != b]
        problems += [f"output {x}" for x in outputs if not same_tree(do / x, dn / x)]
        if problems:
            self.diffs.append(name)
        print(f"{'DIFF' if problems else 'same'}  {name}" +
              (f": {', '.join(problems)}" if problems else ""))
        for what, a, b in zip(("stdout", "stderr"), o[1:], n[1:]):
            if a != b and problems:
                print(f"   old {what}: {a[-300:]!r}\n   new {what}: {b[-300:]!r}")

    def trace_cases(self, name: str, h5: Path) -> None:
        """Every consumer of a minitrace file, old vs new (new through both CLI spellings)."""
        h = str(h5)
        for fmt in ("ti", "csv", "perfetto"):
            ext = {"ti": "txt", "csv": "csv", "perfetto": "json"}[fmt]
            extra = ["--lossy"] if fmt == "ti" else []
            self.case(f"{name}.export-{fmt}", ["export", h, "--format", fmt, "-o",
                                                f"@OUT/out.{ext}", *extra],
                      outputs=(f"out.{ext}", "out.txt_files"))
            self.case(f"{name}.convert-to-{fmt}", ["export", h, "--format", fmt, "-o",
                                                    f"@OUT/out.{ext}", *extra],
                      ["convert", h, "--to", fmt, "-o", f"@OUT/out.{ext}", *extra],
                      outputs=(f"out.{ext}", "out.txt_files"))
        self.case(f"{name}.export-ti-single", ["export", h, "--format", "ti", "--layout",
                                               "single", "--lossy", "-o", "@OUT/one.txt"],
                  outputs=("one.txt",))
        self.case(f"{name}.to-otf2", ["convert", h, "--to", "otf2", "-o", "@OUT/otf2"])
        self.case(f"{name}.validate", ["validate", h])
        self.case(f"{name}.info", ["info", h])
        unit = h5py.File(h5, "r").attrs.get("volume_unit", "flops")
        rate = [] if unit == "flops" else ["--compute-rate", "1Gf"]
        self.case(f"{name}.replay", ["replay", h, "--json", "--lossy", *rate])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("--work", type=Path, default=Path("/tmp/minitrace-identical"))
    args = ap.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)
    inputs = args.work / "inputs"
    inputs.mkdir(parents=True)
    c = Checker(args.old.resolve(), args.work)

    # TI traces held by the repository: import (old spelling and convert --from ti), then all.
    ti = sorted((NEW / "tests" / "data").rglob("*.txt")) + [NEW / "tests/data/ti/split_traces"]
    for p in ti:
        if p.name.startswith("split") and p.name != "split_traces":
            continue
        name = f"ti-{p.parent.name}-{p.stem}"
        c.case(f"{name}.import", ["import", str(p), "-o", "@OUT/t.h5"],
               ["convert", "--from", "ti", str(p), "-o", "@OUT/t.h5"], outputs=("t.h5",))
        c.case(f"{name}.import-alias", ["import", str(p), "-o", "@OUT/t.h5"],
               outputs=("t.h5",))
        h5 = inputs / f"{name}.h5"
        subprocess.run([sys.executable, "-m", "minitrace", "import", str(p), "-o", str(h5)],
                       check=True, capture_output=True)
        c.trace_cases(name, h5)

    # OTF2 archives and TAU traces as the tests write them; synthetic traces.
    sys.path.insert(0, str(NEW / "tests"))
    from test_convert_otf2 import _synthetic, scorep_pingpong
    from test_convert_tau import osu_like
    from minitrace.storage import write_trace
    from tests.support.synthetic import loop_trace
    anchor = scorep_pingpong(inputs / "scorep")
    synth = inputs / "synthetic.h5"
    write_trace(str(synth), _synthetic().build())
    c.case("otf2-written.to-otf2", ["convert", str(synth), "--to", "otf2", "-o", "@OUT/a"])
    subprocess.run([sys.executable, "-m", "minitrace", "convert", str(synth), "--to", "otf2",
                    "-o", str(inputs / "synth_otf2")], check=True, capture_output=True)
    tau_dir = inputs / "tau"
    tau_dir.mkdir()
    osu_like(tau_dir)
    for name, src in (("otf2-scorep", anchor), ("otf2-synthetic", inputs / "synth_otf2"),
                      ("tau-osu", tau_dir)):
        c.case(f"{name}.convert", ["convert", str(src), "-o", "@OUT/t.h5"], outputs=("t.h5",))
        c.case(f"{name}.convert-regions", ["convert", str(src), "--keep-regions", "-o",
                                            "@OUT/t.h5"], outputs=("t.h5",))
        h5 = inputs / f"{name}.h5"
        subprocess.run([sys.executable, "-m", "minitrace", "convert", str(src), "-o", str(h5)],
                       check=True, capture_output=True)
        c.trace_cases(name, h5)
    c.trace_cases("synthetic", synth)
    loops = inputs / "loops.h5"
    write_trace(str(loops), loop_trace(4, 20_000, timed=True))
    c.trace_cases("synthetic-loops", loops)

    # Raw recordings made once with this checkout's shim, merged by both.
    from tests.support.record_util import build, record
    for prog in ("ring", "halo", "colls", "comms", "persist", "isendrecv", "lowering"):
        exe = build(prog, inputs)
        p = record(inputs / f"rec-{prog}.h5", 4, [exe], extra=["--keep-raw"])
        raw = next(ln.split(" in ", 1)[1] for ln in p.stdout.splitlines()
                   if ln.startswith("raw files kept in "))
        c.case(f"raw-{prog}.merge", ["merge", str(raw), "-o", "@OUT/t.h5"], outputs=("t.h5",))
        h5 = inputs / f"raw-{prog}.h5"
        subprocess.run([sys.executable, "-m", "minitrace", "merge", str(raw), "-o", str(h5)],
                       check=True, capture_output=True)
        c.trace_cases(f"raw-{prog}", h5)

    print(f"{c.cases} cases, {len(c.diffs)} differ" +
          (f": {', '.join(c.diffs)}" if c.diffs else ""))
    return 1 if c.diffs else 0


if __name__ == "__main__":
    sys.exit(main())
