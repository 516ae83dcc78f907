"""``minitrace record --openmp``: run an OpenMP program with the OMPT tool preloaded and turn
its raw file into a ``/tasks`` file; under an MPI launcher (an MPI+OpenMP program), the PMPI
shim is preloaded too and each rank's task graph joins the merged MPI trace.

The tool (native/ompt_tool.c, built into the ``minitrace.tasks.native._ompt`` extension
module) needs LLVM's libomp: programs built with ``clang -fopenmp``.  GCC's libgomp has no OMPT
at all: such a program records nothing, and is told so."""
from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sys

from ..errors import MinitraceError
from ..record import run_traced
from .graph import TaskGraph, from_raw
from .ompt_raw import raw_files, read_raw
from .taskfile import add_tasks, describe, write_tasks

#: commands that launch MPI jobs: ``record --openmp`` then traces MPI too (hybrid programs)
MPI_LAUNCHERS = ("mpiexec", "mpirun", "srun", "prterun", "orterun")
OMPT_SUBDIR = "openmp"

LIBGOMP_HINT = ("GCC's libgomp has no OMPT interface: build the program with clang -fopenmp "
                "(Debian: clang and libomp-dev); LLVM's libomp also implements libgomp's "
                "entry points, so LD_PRELOAD=libomp.so.5 may run a gcc-built program on it, "
                "but without the dependence sizes")


def ompt_tool_path() -> str:
    """Path of the OMPT tool library (found without importing it)."""
    spec = importlib.util.find_spec("minitrace.tasks.native._ompt")
    if spec is None or not spec.origin or not os.path.exists(spec.origin):
        raise MinitraceError("the OMPT tool (minitrace.tasks.native._ompt) is not built: "
                             "install LLVM's OpenMP headers (Debian: libomp-dev) and reinstall "
                             "minitrace")
    return spec.origin


def openmp_env(raw_dir: str, base: dict | None = None) -> dict:
    """Environment that loads the tool first and names where it writes."""
    env = dict(os.environ if base is None else base)
    tool = ompt_tool_path()
    pre = [p for p in env.get("LD_PRELOAD", "").split(":") if p and p != tool]
    env["LD_PRELOAD"] = ":".join([tool, *pre])
    env["MINITRACE_OMPT_DIR"] = os.path.abspath(raw_dir)
    env.pop("OMP_TOOL", None)          # "disabled" would silence the tool
    return env


def is_mpi_launcher(command0: str) -> bool:
    """Whether a command is an MPI launcher (``mpiexec``, ``mpirun``, ``srun``...)."""
    return os.path.basename(command0).startswith(MPI_LAUNCHERS)


def rank_env(raw_dir: str) -> dict:
    """The variables that load the OMPT tool into every rank beside the PMPI shim
    (``record.run_traced``'s ``extra``): its files go to RAW/openmp."""
    out = os.path.join(raw_dir, OMPT_SUBDIR)
    os.makedirs(out, exist_ok=True)
    return {"LD_PRELOAD": ompt_tool_path(), "MINITRACE_OMPT_DIR": os.path.abspath(out)}


def attach_rank_graphs(raw_dir: str, output: str) -> dict[int, TaskGraph]:
    """Each rank's task graph, from its OMPT file (matched to its MPI raw file by host and
    process id), added to the merged trace ``output``; {} when no rank ran OpenMP code."""
    from ..merge import RawRun
    files = raw_files(os.path.join(raw_dir, OMPT_SUBDIR))
    if not files:
        return {}
    rank_of = {}
    for rank, r in RawRun(raw_dir).by_rank.items():
        rank_of[(r.h["host"].decode(errors="replace").replace("/", "_"), int(r.h["pid"]))] = rank
    graphs = {}
    for path in files:
        host, _, pid = os.path.basename(path)[len("ompt-"):-len(".bin")].rpartition("-")
        rank = rank_of.get((host, int(pid) if pid.isdigit() else -1))
        if rank is None:
            print(f"minitrace: {path}: an OpenMP process that is no MPI rank of the job "
                  "(not kept)", file=sys.stderr)
            continue
        graphs[rank] = from_raw(*read_raw(path), path)
    if graphs:
        add_tasks(output, graphs)
    return graphs


def record_openmp(command: list[str], output: str, keep_raw: bool = False) -> tuple[int, TaskGraph]:
    """Run ``command`` with the tool (record.run_traced: interrupted, the raw data is kept),
    write ``output``; returns (exit status, graph)."""
    run = run_traced(command, output, lambda raw: (command, openmp_env(raw)))
    raw, rc = run.raw_dir, run.returncode
    files = raw_files(raw)
    try:
        if not files:
            raise MinitraceError(f"nothing recorded (the program exited with {rc}): no OpenMP "
                                 f"runtime loaded the OMPT tool. {LIBGOMP_HINT}")
        if len(files) > 1:
            raise MinitraceError(f"{len(files)} processes ran OpenMP code: record an MPI "
                                 f"program under its launcher (minitrace record --openmp -- "
                                 f"mpiexec -n N ./app); raw files kept in {raw}")
        records, codes = read_raw(files[0])
        graph = from_raw(records, codes, files[0])
        write_tasks(output, graph, meta={"command_line": shlex.join(command),
                                         "exit_status": rc})
    except MinitraceError:
        if len(files) <= 1:
            shutil.rmtree(raw, ignore_errors=True)
        raise
    if keep_raw:
        print(f"raw files kept in {raw}")
    else:
        shutil.rmtree(raw, ignore_errors=True)
    return rc, graph


def report(rc: int, graph: TaskGraph, output: str) -> int:
    """Print what was recorded; the program's exit status, else 0."""
    print(f"{output}: {describe(graph)}")
    missing = graph.meta.get("edges_ompt_not_rebuilt", 0)
    if missing:
        print(f"warning: {missing} dependences libomp reported are not in the graph rebuilt "
              "from the declared dependences")
    return rc
