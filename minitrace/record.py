"""Run a command with the PMPI shim preloaded in every rank, each writing its raw file (which
``minitrace record`` then merges and reports: commands/record.py, commands/merge.py).

The shim is the ``minitrace._shim`` extension module itself (see c_shim/build_shim.py).  It is
configured through the environment, which MPICH's ``mpiexec`` passes to every rank:
``LD_PRELOAD`` (the shim), ``MINITRACE_DIR`` (where each rank writes ``rank-NNNNNN.mtr``) and
``MINITRACE_VOLUME`` (auto | instructions | cputime | walltime).  Open MPI's ``mpirun`` passes
only the variables it is told to to other nodes: they are also listed in
``OMPI_MCA_mca_base_env_list`` (what ``mpirun -x`` sets; other MPIs ignore it).

MPICH's launcher (Hydra) gets them as ``-genv`` options instead (``traced_command``): preloaded
into ``mpiexec`` and its proxies, the shim loads libmpi and its network libraries into them,
which cost ~85 ms per job here (a 2-rank MPI_Init/MPI_Finalize job: 0.16 s instead of 0.07 s).
"""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass

from . import signals
from .errors import MinitraceError
from .rawlayout import VOLUMES
_FORWARDED = ("LD_PRELOAD", "MINITRACE_DIR", "MINITRACE_VOLUME")


def shim_path() -> str:
    """Path of the shim library (found without importing it: that would load libmpi)."""
    spec = importlib.util.find_spec("minitrace._shim")
    if spec is None or not spec.origin or not os.path.exists(spec.origin):
        raise MinitraceError("the PMPI shim (minitrace._shim) is not built: reinstall minitrace "
                             "with an MPI compiler (mpicc) available")
    return spec.origin


def shim_env(raw_dir: str, volume: str = "auto", base: dict | None = None,
             extra: dict | None = None, shim: str | None = None) -> dict:
    """Environment for traced ranks: the shim (``shim``, else the installed one) first in
    LD_PRELOAD, the raw dir, the volume; ``extra`` variables are set and forwarded too, its
    ``LD_PRELOAD`` (another tool: the OMPT one) preloaded after the shim."""
    if volume not in VOLUMES:
        raise MinitraceError(f"unknown volume measure {volume!r} (one of {', '.join(VOLUMES)})")
    env = dict(os.environ if base is None else base)
    extra = dict(extra or {})
    tools = [shim or shim_path(), *[p for p in extra.pop("LD_PRELOAD", "").split(":") if p]]
    pre = [p for p in env.get("LD_PRELOAD", "").split(":") if p and p not in tools]
    env["LD_PRELOAD"] = ":".join([*tools, *pre])
    env["MINITRACE_DIR"] = os.path.abspath(raw_dir)
    env["MINITRACE_VOLUME"] = volume
    env.update(extra)
    forwarded = _forwarded(extra)
    for k in forwarded:
        if ";" in env[k]:   # the separator of Open MPI's list: it cannot be forwarded
            raise MinitraceError(f"{k} contains ';', which Open MPI's "
                                 f"OMPI_MCA_mca_base_env_list cannot carry: {env[k]}")
    # the user's entries are kept, but not earlier ones for the same variables (a nested or
    # repeated record would otherwise forward stale values first)
    old = [e for e in env.get("OMPI_MCA_mca_base_env_list", "").split(";")
           if e and e.split("=", 1)[0] not in forwarded]
    env["OMPI_MCA_mca_base_env_list"] = ";".join(old + [f"{k}={env[k]}" for k in forwarded])
    return env


def _forwarded(extra: dict | None) -> tuple:
    return _FORWARDED + tuple(k for k in (extra or {}) if k not in _FORWARDED)


@functools.lru_cache(maxsize=8)
def _is_hydra(launcher: str) -> bool:
    """Whether ``launcher`` (a command name or path) is MPICH's Hydra mpiexec/mpirun."""
    if not os.path.basename(launcher).startswith(("mpiexec", "mpirun")):
        return False
    path = launcher if os.sep in launcher else shutil.which(launcher)
    try:
        with open(path or "", "rb") as f:
            return b"hydra_pmi_proxy" in f.read(64 << 20)
    except OSError:
        return False


def traced_command(command: list[str], raw_dir: str, volume: str = "auto",
                   extra: dict | None = None, shim: str | None = None) -> tuple[list, dict]:
    """The command line and environment that run ``command`` with the shim in every rank
    (and ``extra``: shim_env): Hydra's gets the variables as ``-genv`` options (its launcher
    and proxies stay untraced, and cheap to start), any other launcher through its
    environment."""
    env = shim_env(raw_dir, volume, extra=extra, shim=shim)
    if not command or not _is_hydra(command[0]):
        return list(command), env
    opts = [x for k in _forwarded(extra) for x in ("-genv", k, env[k])]
    return [command[0], *opts, *command[1:]], dict(os.environ)


@dataclass
class RecordRun:
    returncode: int
    raw_dir: str
    stderr_head: str = ""     # the start of what the command wrote on stderr (passed through)


_HEAD_BYTES = 64 << 10


class _StderrTee(threading.Thread):
    """Copies the command's stderr to ours as it comes and keeps its first 64 KiB: when nothing
    was recorded, the launcher's own message (a refusal to start) or the shim's says why."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe, self.head = pipe, bytearray()

    def run(self):
        fd, out, last = self.pipe.fileno(), sys.stderr.fileno(), b"\n"
        while chunk := os.read(fd, 1 << 16):
            if len(self.head) < _HEAD_BYTES:
                self.head += chunk[:_HEAD_BYTES - len(self.head)]
            last = chunk[-1:]
            self._write(out, chunk)
        if last != b"\n":   # e.g. Open MPI's messages end in a NUL: ours start on a new line
            self._write(out, b"\n")
        self.pipe.close()

    @staticmethod
    def _write(fd: int, data: bytes) -> None:
        try:
            os.write(fd, data)
        except OSError:
            pass


def why_nothing_recorded(stderr_head: str) -> str | None:
    """What the command's stderr says about why no rank was traced: the shim's own line (an
    MPI mismatch, tracing disabled) if there is one, else the launcher's first paragraph
    (Open MPI frames its messages with dashed lines), on one line; None when it said nothing."""
    lines = [ln.strip(" \t\0") for ln in stderr_head.splitlines()]
    for ln in lines:
        if ln.startswith("minitrace: "):
            return ln.removeprefix("minitrace: ")
    said: list[str] = []
    for ln in lines:
        if ln and set(ln) != {"-"}:
            if ln not in said:     # every rank or proxy says the same
                said.append(ln)
        elif said and not said[-1].endswith(":"):   # a paragraph, and what its colon announces
            break
    text = " ".join(said)
    return text[:300] + " ..." if len(text) > 300 else text or None


def raw_dir_for(output: str) -> str:
    """A fresh raw directory next to the output file."""
    parent = os.path.dirname(os.path.abspath(output))
    try:
        return tempfile.mkdtemp(prefix=os.path.basename(output) + ".raw-", dir=parent)
    except OSError as e:
        raise MinitraceError(f"cannot create the raw trace directory "
                             f"{os.path.basename(output)}.raw-* here ({e.strerror or e}); "
                             f"the program was not run", parent) from None


def run_traced(command: list[str], output: str, environment) -> RecordRun:
    """Run ``command`` with the argv and environment ``environment(raw_dir)`` gives (the only
    difference between an MPI recording, traced_command, and an OpenMP one).  The raw
    directory is made first: if it cannot be, the command is not run (running it untraced
    would only waste its time).  Interrupted (Ctrl-C, SIGTERM), the launcher is asked to stop
    (SIGTERM, which mpiexec passes to the ranks) and the interrupt goes on with ``raw_dir``
    set on it: the caller says where the data is."""
    if not command:
        raise MinitraceError("no command to run: use minitrace record [options] -- mpiexec ...")
    raw = raw_dir_for(output)
    try:
        argv, env = environment(raw)
        proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE)
    except FileNotFoundError:
        shutil.rmtree(raw, ignore_errors=True)
        raise MinitraceError(f"command not found: {command[0]}") from None
    except MinitraceError:
        shutil.rmtree(raw, ignore_errors=True)
        raise
    tee = _StderrTee(proc.stderr)
    tee.start()
    try:
        rc = proc.wait()
    except BaseException as e:
        _stop(proc)
        e.raw_dir = raw
        raise
    tee.join(timeout=5)     # a process left behind may hold the pipe: do not wait for it
    return RecordRun(rc, raw, tee.head.decode(errors="replace"))


def _stop(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the launcher, SIGKILL it if it has not exited after ``grace`` seconds."""
    try:
        proc.terminate()
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    except KeyboardInterrupt as e:     # a second Ctrl-C: stop waiting
        signals.handled(e)
        proc.kill()
