"""``minitrace record -- LAUNCHER ...``: trace an unmodified MPI program, merge, validate."""
from __future__ import annotations

import shlex
import shutil
import sys

from ..errors import MinitraceError
from ..merge import rank_files
from ..outputs import check_output_file
from ..record import VOLUMES, run_traced, traced_command, why_nothing_recorded
from ..shims import choose
from ..tasks.ompt_raw import raw_files
from . import COMMANDS
from .merge import add_compress_option, merge_and_report


def register(sub) -> None:
    p = sub.add_parser("record", help=COMMANDS["record"],
                       description="Run LAUNCHER... with the PMPI shim preloaded in every rank "
                                   "(LD_PRELOAD, passed on by mpiexec and srun; the shim built "
                                   "for the MPI library the program is linked against, once; "
                                   "see docs/RECORDER.md), then merge the "
                                   "per-rank files into one HDF5 trace, validate it and print "
                                   "its summary.  Exit status: the program's if it failed, else "
                                   "1 if nothing could be recorded or the trace is invalid.")
    p.add_argument("-o", "--output", default="trace.h5", help="trace file (default trace.h5)")
    p.add_argument("--volume", choices=VOLUMES, default="auto",
                   help="compute volume measure (default auto: instructions if the machine "
                        "has a hardware counter, else thread CPU time)")
    p.add_argument("--openmp", action="store_true",
                   help="record an OpenMP program's tasks (OMPT tool preloaded; LLVM's "
                        "libomp: build with clang -fopenmp; docs/TASKS.md); under an MPI "
                        "launcher, MPI calls and each rank's tasks together")
    p.add_argument("--no-fold-polls", action="store_true",
                   help="write every failed poll (by default a test or iprobe that finds "
                        "nothing, repeated with the same arguments, is folded into the one "
                        "before it and counted: docs/RECORDER.md; MINITRACE_FOLD_POLLS=0)")
    p.add_argument("--keep-raw", action="store_true",
                   help="keep the per-rank raw files (directory OUTPUT.raw-*)")
    add_compress_option(p)
    p.add_argument("command", nargs="+", metavar="LAUNCHER",
                   help="the command to run, after --, e.g. -- mpiexec -n 4 ./app")
    p.set_defaults(func=run)


def run(args) -> int:
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    check_output_file(args.output)
    from ..tasks.record import is_mpi_launcher, rank_env, record_openmp, report
    try:
        if args.openmp and not (cmd and is_mpi_launcher(cmd[0])):
            return report(*record_openmp(cmd, args.output, args.keep_raw), args.output)
        shim = choose(cmd).path
        extra = rank_env if args.openmp else None   # MPI+OpenMP: the OMPT tool beside the shim
        fold = {"MINITRACE_FOLD_POLLS": "0"} if args.no_fold_polls else {}
        run_ = run_traced(cmd, args.output, lambda raw: traced_command(
            cmd, raw, args.volume, {**(extra(raw) if extra else {}), **fold} or None, shim))
    except KeyboardInterrupt as e:
        raw = getattr(e, "raw_dir", None)
        if raw and (_has_raw(raw) or raw_files(raw)):
            print(f"minitrace: the program was interrupted; its raw data is kept in {raw}"
                  + (f": {_finish(raw, args.output)}" if _has_raw(raw) else ""),
                  file=sys.stderr)
        elif raw:
            shutil.rmtree(raw, ignore_errors=True)
        raise
    if not _has_raw(run_.raw_dir):
        shutil.rmtree(run_.raw_dir, ignore_errors=True)
        raise MinitraceError(_nothing_recorded(cmd[0], run_.returncode, run_.stderr_head))
    if run_.returncode != 0:
        print(f"minitrace: the program exited with status {run_.returncode}; merging what "
              f"was recorded", file=sys.stderr)
    try:
        good = merge_and_report(run_.raw_dir, args.output, shlex.join(cmd),
                                args.compress)
        if args.openmp:
            _rank_tasks(run_.raw_dir, args.output)
    except BaseException:
        # the raw files hold everything recorded: never lose them to a failed merge
        print(f"minitrace: the merge did not complete; the raw data is kept in "
              f"{run_.raw_dir}: {_finish(run_.raw_dir, args.output)}", file=sys.stderr)
        raise
    if args.keep_raw:
        print(f"raw files kept in {run_.raw_dir}")
    else:
        shutil.rmtree(run_.raw_dir, ignore_errors=True)
    if run_.returncode != 0:
        return run_.returncode
    return 0 if good else 1


def _rank_tasks(raw_dir: str, output: str) -> None:
    """Add each rank's task graph to the merged trace and say what was recorded."""
    from ..tasks.record import LIBGOMP_HINT, attach_rank_graphs
    from ..tasks.taskfile import describe
    graphs = attach_rank_graphs(raw_dir, output)
    if not graphs:
        print(f"minitrace: no rank ran OpenMP code under the OMPT tool. {LIBGOMP_HINT}",
              file=sys.stderr)
    for rank, g in sorted(graphs.items()):
        print(f"tasks of rank {rank}: {describe(g)}")


def _nothing_recorded(launcher: str, rc: int, stderr_head: str) -> str:
    """Why no rank wrote a raw file, in the command's own words when it gave some: a launcher
    that refused to start (Open MPI as root, too few slots) or the shim's line (a program of
    another MPI) rather than a guess."""
    said = why_nothing_recorded(stderr_head)
    status = (f"{launcher} was killed by signal {-rc}" if rc < 0
              else f"{launcher} exited with status {rc}")
    if said:
        return f"nothing recorded: {status}; it said: {said}"
    if rc:
        return f"nothing recorded: {status} and said nothing on stderr before any rank was traced"
    return (f"nothing recorded: no rank wrote a raw file and {launcher} exited with status 0 "
            f"(did the program call MPI_Init or MPI_Init_thread? A program that only opens "
            f"MPI-4 sessions, MPI_Session_init, is not recorded)")


def _has_raw(raw_dir: str) -> bool:
    try:
        rank_files(raw_dir)
    except MinitraceError:
        return False
    return True


def _finish(raw_dir: str, output: str) -> str:
    return f"finish with: minitrace merge {shlex.quote(raw_dir)} -o {shlex.quote(output)}"
