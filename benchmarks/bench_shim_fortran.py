"""What recording costs a Fortran program per MPI call, against the same calls from C (issue 34:
the Fortran path within 10% of the C path).

One rank, no network: benchmarks/callcost_f.F90 (mpif.h, and use mpi_f08) and its C twin
tests/programs/callcost.c time N calls of MPI_Comm_size and of an 8-byte MPI_Sendrecv to self,
built with the machine's own MPIs (Debian's mpif90.mpich / mpicc.mpich, mpif90.openmpi /
mpicc.openmpi) and recorded with the shim minitrace builds for each (minitrace/shims.py).
The cost per call is traced minus untraced ns per call; each (untraced, traced) pair runs back
to back, the order alternating, the three programs of a family interleaved, so that a change of
load hits them alike; figures are medians over the pairs with their interquartile range, and
the difference of the fastest traced and fastest untraced runs (on a shared machine other jobs
only ever add time: short loops, many runs, the minimum is the cost without them).
Under Open MPI the Fortran path is the Fortran twin (C wrappers see nothing); under MPICH the
twin for mpif.h (whose nested C call passes through) and for mpi_f08.
Usage: python benchmarks/bench_shim_fortran.py [--reps 41] [--calls 20000]
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from minitrace.record import shim_env  # noqa: E402
from minitrace.shims import choose  # noqa: E402

LAUNCH = {"mpich": ["mpiexec.mpich", "-n", "1"],
          "openmpi": ["mpiexec.openmpi", "-n", "1"]}
ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
CALLS = ("comm_size_ns", "sendrecv_ns")


def build(family: str, where: Path) -> dict[str, str]:
    """The C program and the Fortran ones (mpif.h, mpi_f08) of ``family``."""
    out = {"C": where / f"c_{family}", "Fortran mpif.h": where / f"f_{family}",
           "Fortran mpi_f08": where / f"f08_{family}"}
    subprocess.run([f"mpicc.{family}", "-O2", "-o", str(out["C"]),
                    str(ROOT / "tests" / "programs" / "callcost.c")], check=True)
    for name, flags in (("Fortran mpif.h", []), ("Fortran mpi_f08", ["-DUSE_MPI_F08"])):
        subprocess.run([f"mpif90.{family}", "-O2", *flags, "-o", str(out[name]),
                        str(ROOT / "benchmarks" / "callcost_f.F90")], check=True)
    return {k: str(v) for k, v in out.items()}


def run(family: str, program: str, calls: int, env: dict) -> dict[str, float]:
    p = subprocess.run([*LAUNCH[family], program, str(calls)], capture_output=True, text=True,
                       timeout=600, env={**env, **ROOT_ENV})
    if p.returncode:
        raise SystemExit(f"{program} failed: {p.stderr}")
    return {c: float(re.search(rf"{c} ([\d.]+)", p.stdout).group(1)) for c in CALLS}


def measure(family: str, reps: int, calls: int, work: Path) -> dict:
    """{program: {call: array of traced - untraced ns per call}} and the untraced medians."""
    programs = build(family, work)
    shim = choose([programs["C"]]).path
    assert choose([programs["Fortran mpif.h"]]).path == shim
    added = {p: {c: [] for c in CALLS} for p in programs}
    base = {p: {c: [] for c in CALLS} for p in programs}
    for i in range(reps):
        for name, program in programs.items():
            raw = work / f"raw-{name.replace(' ', '_')}-{i}"
            plain, traced = dict(os.environ), shim_env(str(raw), "auto", shim=shim)
            pair = [(False, plain), (True, traced)]
            got = {}
            for is_traced, env in (pair if i % 2 == 0 else pair[::-1]):
                got[is_traced] = run(family, program, calls, env)
            shutil.rmtree(raw, ignore_errors=True)
            for c in CALLS:
                added[name][c].append(got[True][c] - got[False][c])
                base[name][c].append(got[False][c])
    return {"added": {p: {c: np.array(v) for c, v in d.items()} for p, d in added.items()},
            "base": {p: {c: float(np.median(v)) for c, v in d.items()} for p, d in base.items()},
            "min": {p: {c: min(added[p][c][i] + base[p][c][i] for i in range(reps))
                        - min(base[p][c]) for c in CALLS} for p in programs}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=41)
    ap.add_argument("--calls", type=int, default=20000)
    args = ap.parse_args()
    print(f"load at start: {os.getloadavg()[0]:.2f}")
    for family in LAUNCH:
        with tempfile.TemporaryDirectory() as work:
            res = measure(family, args.reps, args.calls, Path(work))
        print(f"\n{family}: ns added per call (median [IQR] over {args.reps} pairs; untraced "
              f"ns per call in parentheses)")
        c_cost = {c: np.median(res["added"]["C"][c]) for c in CALLS}
        c_min = res["min"]["C"]
        for name, per_call in res["added"].items():
            cells = []
            for c in CALLS:
                v = per_call[c]
                q1, med, q3 = np.percentile(v, [25, 50, 75])
                ratio = "" if name == "C" else f", {med / c_cost[c]:.2f}x C"
                low = res["min"][name][c]
                low_ratio = "" if name == "C" else f" = {low / c_min[c]:.2f}x C"
                cells.append(f"{c[:-3]} {med:.0f} [{q1:.0f}, {q3:.0f}] "
                             f"({res['base'][name][c]:.0f}{ratio}), fastest {low:.0f}{low_ratio}")
            print(f"  {name:16s} " + "; ".join(cells))
    print(f"load at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
