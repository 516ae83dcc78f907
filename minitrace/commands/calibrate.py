"""``minitrace calibrate -o F -- LAUNCHER ...``: measure this machine for ``minitrace predict``."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile

from ..mpitools import mpi4py_env
from ..outputs import check_disjoint
from ..shims import library_of_program
from ..predict.measure import add_arguments
from ..errors import MinitraceError
from . import COMMANDS


def register(sub) -> None:
    """Add the ``calibrate`` subcommand (listed in minitrace.commands.COMMANDS)."""
    p = sub.add_parser(
        "calibrate", help=COMMANDS["calibrate"],
        description="Run 'LAUNCHER... python -m minitrace.predict.measure' (e.g. -- mpiexec -n 2): "
                    "ping-pong, receive and Isend times over shuffled log-uniform sizes, the "
                    "eager/rendezvous switch, a matrix-product kernel, the kernel set "
                    "(compute-bound, streaming, cache-resident, latency-bound: what translates "
                    "a trace to another machine) and MPI_SUM on every rank; "
                    "append the run to FILE and fit every run in it (piecewise-linear with "
                    "automatic breakpoints) into SimGrid/SMPI options and a platform, used by "
                    "'minitrace predict --calibration FILE'.  Without a launcher, refit FILE.")
    add_arguments(p)
    p.add_argument("--libmpi", metavar="PROGRAM|LIB",
                   help="measure with this MPI library instead of this environment's: a "
                        "libmpi (MPICH's or Open MPI's ABI), or a program, whose MPI library "
                        "(ldd) is used; the launcher must start that library's jobs (an Open "
                        "MPI library: -- mpiexec.openmpi -n 2).  Calibrate with the library "
                        "your program runs on: Debian's MPICH 4.0.2 answers a small message in "
                        "0.4 us where the mpich wheel's 5.0.2 takes 1.1 us on the same machine")
    p.add_argument("command", nargs="*", metavar="LAUNCHER",
                   help="the launcher, after --, e.g. -- mpiexec -n 2")
    p.set_defaults(func=run)


def run(args) -> int:
    """Run the measurement job (or only refit), then print the calibration, or with --quiet
    only its flag when the machine was loaded while it measured."""
    from ..predict.calibration import refit, summary
    from ..predict.under_load import flag
    plot = args.plot or os.path.splitext(args.output)[0] + ".png"
    check_disjoint([args.output], [plot])
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.libmpi and not cmd:
        raise MinitraceError("--libmpi chooses the library a measurement loads: give the "
                             "launcher too (-- mpiexec -n 2)", args.output)
    if cmd:
        opts = ["-o", args.output, "--max-size", str(args.max_size), "--nsizes",
                str(args.nsizes), "--reps", str(args.reps), "--iterations",
                str(args.iterations), "--iterations-large", str(args.iterations_large),
                "--plot", plot, "--quiet"]
        opts += ["--long"] if args.long else []
        opts += ["--seed", str(args.seed)] if args.seed is not None else []
        opts += ["--cold-from", str(args.cold_from)] if args.cold_from is not None else []
        full = [*cmd, sys.executable, "-m", "minitrace.predict.measure", *opts]
        with tempfile.TemporaryDirectory(prefix="minitrace-libmpi-") as scratch:
            env = None
            if args.libmpi:
                lib = library_of_program(args.libmpi)
                env = dict(os.environ, **mpi4py_env(lib, scratch))
                if not args.quiet:
                    print(f"measuring with {lib}")
            rc = subprocess.run(full, env=env).returncode
        if rc != 0:
            raise MinitraceError(f"the calibration job failed with exit status {rc}: "
                                 f"{shlex.join(full)}")
    cal = refit(args.output, plot)
    if not args.quiet:
        print(summary(cal, args.output))      # (it ends with the flag of a loaded machine)
        print(f"  plot: {plot}")
    elif flag(cal):                           # (said even then: the file will mislead)
        print(f"warning: {flag(cal)}")
    return 0
