"""Which PMPI shim a program gets: one built for the MPI library the program loads.

The shim's wrappers have one MPI's handle types and call that MPI's PMPI functions: preloaded
into a program of another MPI it either cannot work or loads a second MPI into it.  So
``minitrace record`` reads which libmpi the program is linked against (``ldd`` of the program
its launcher runs) and uses the shim installed with minitrace when it links that same library,
else one built for that library in the cache (``MINITRACE_CACHE``, else
``~/.cache/minitrace``: ``shims/NAME-KEY/``, KEY a hash of the library's path, size and time
and of the shim's generated source), building it once with the ``mpicc`` whose link line gives
that library (``minitrace shim build [--mpicc PATH]`` does it by hand).  A program linked
against an MPI for which no ``mpicc`` is found is refused before it runs.  A program that
loads its MPI at run time (Python with mpi4py) gets the installed shim, whose start-up check
stops a program of the other MPI family (c_shim/shim_runtime.c).
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import MinitraceError
from .mpitools import abi_of, mpi_tool
from .record import shim_path

#: what an MPI library is called (MPICH, Open MPI, the MPI-5 ABI library)
_LIBMPI = re.compile(r"^\s*(lib(?:mpi|mpich|mpi_abi)\.so[.\d]*)\s+=>\s+(/\S+)", re.M)
#: the shim's sources: installed with the package, or in the checkout (an editable install)
_SRC = next((d for d in (Path(__file__).resolve().parent / "c_shim",
                         Path(__file__).resolve().parents[1] / "c_shim") if d.is_dir()),
            Path(__file__).resolve().parent / "c_shim")
#: mpicc names to try besides $MPICC: MPICH's MPI-5 ABI one, Debian's alternatives
_MPICCS = ("mpicc", "mpicc_abi", "mpicc.mpich", "mpicc.openmpi")


@dataclass
class Choice:
    """The shim for a command: ``path`` (None: none is built yet), for ``library``, and why."""
    path: str | None
    library: str | None
    why: str


def cache_dir() -> Path:
    """Where built shims are kept."""
    base = os.environ.get("MINITRACE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "minitrace")
    return Path(base) / "shims"


def linked_mpi(path: str) -> str | None:
    """The MPI library (real path) an executable or library loads, None when it loads none
    (a script, an interpreter) or ``ldd`` cannot tell."""
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _LIBMPI.search(out)
    return os.path.realpath(m.group(2)) if m else None


def library_of_program(spec: str) -> str:
    """The libmpi ``spec`` names: itself when it is one (``lib*.so*``), else the one the
    program ``spec`` (a path, or a name on PATH) is linked against (``ldd``)."""
    spec = spec if os.sep in spec else shutil.which(spec) or spec
    if not os.path.exists(spec):
        raise MinitraceError("no such file", spec)
    if os.path.basename(spec).startswith("lib") and ".so" in os.path.basename(spec):
        abi_of(spec)
        return os.path.realpath(spec)
    lib = linked_mpi(spec)
    if lib is None:
        raise MinitraceError("links no MPI library that ldd can find (give the libmpi itself)",
                             spec)
    abi_of(lib)
    return lib


def program_of(command: list[str]) -> str | None:
    """The compiled program a command runs: the command itself, or the first argument of its
    launcher that is an ELF executable (``mpiexec -n 4 ./app``, ``srun -n 4 ./app``)."""
    for i, word in enumerate(command):
        if i and word.startswith("-"):
            continue
        path = word if os.sep in word else shutil.which(word)
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF" and (i or linked_mpi(path)):
                    return path
    return None


def _key(library: str) -> str:
    """The cache entry of ``library``: its path, size and time, the shim's source (generated
    and hand-written), Python's ABI (the shim is a CPython extension too)."""
    st = os.stat(library)
    h = hashlib.sha256(f"{library}\0{st.st_size}\0{st.st_mtime_ns}\0{sys.implementation.cache_tag}"
                       .encode())
    h.update(_shim_source().encode())
    return f"{Path(library).name}-{h.hexdigest()[:16]}"


def _shim_source() -> str:
    """Everything the shim is compiled from: the generated translation unit and raw-layout
    header, and the runtime files they include."""
    if not (_SRC / "generate.py").exists():
        raise MinitraceError(f"building a shim needs the shim's sources ({_SRC} is "
                             f"missing): reinstall minitrace")
    sys.path.insert(0, str(_SRC))
    try:
        from generate import raw_layout_header, translation_unit
    finally:
        sys.path.remove(str(_SRC))
    runtime = [f.read_text() for f in sorted(_SRC.glob("*.[ch]")) if not f.name.startswith("_")]
    return "\0".join([translation_unit(), raw_layout_header(), *runtime])


def cached(library: str) -> str | None:
    """The cached shim built for ``library``, if any."""
    found = sorted((cache_dir() / _key(library)).glob("minitrace/_shim*.so"))
    return str(found[0]) if found else None


def mpicc_for(library: str) -> str | None:
    """An mpicc whose link line gives ``library`` ($MPICC, this environment's or the one on
    PATH, its MPI-5 ABI twin mpicc_abi, Debian's mpicc.mpich / mpicc.openmpi, those beside the
    library's prefix); None if none does."""
    prefix = Path(library).parent
    tried = [os.environ.get("MPICC"), *(mpi_tool(n) for n in _MPICCS),
             *(str(d / "bin" / n) for d in (prefix.parent, prefix.parent.parent)
               for n in _MPICCS[:2])]
    for cc in dict.fromkeys(t for t in tried if t and os.access(t, os.X_OK)):
        if _links(cc) == library:
            return cc
    return None


def _links(mpicc: str) -> str | None:
    """The MPI library (real path) ``mpicc`` links programs against: that of a program it
    builds (its flags alone can name a linker script, as libmpi_abi.so is)."""
    with tempfile.TemporaryDirectory() as work:
        src, exe = os.path.join(work, "probe.c"), os.path.join(work, "probe")
        with open(src, "w") as f:
            f.write("#include <mpi.h>\nint main(void) { int on; return MPI_Initialized(&on); }\n")
        try:
            p = subprocess.run([mpicc, src, "-o", exe], capture_output=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return linked_mpi(exe) if p.returncode == 0 else None


def build(mpicc: str, quiet: bool = False) -> str:
    """Build the shim with ``mpicc``'s MPI into the cache (once: an existing build is reused);
    returns its path."""
    library = _links(mpicc)
    if library is None:
        raise MinitraceError(f"{mpicc} did not build a program linked against an MPI "
                             f"library (libmpi, libmpich, libmpi_abi): no shim built")
    have = cached(library)
    if have:
        return have
    entry = cache_dir() / _key(library)
    entry.parent.mkdir(parents=True, exist_ok=True)
    if not quiet:
        print(f"minitrace: building a PMPI shim for {library} with {mpicc} (once; kept in "
              f"{entry})", file=sys.stderr)
    work = tempfile.mkdtemp(prefix=entry.name + ".tmp-", dir=entry.parent)
    code = (f"import sys; sys.path.insert(0, {str(_SRC)!r}); import build_shim; "
            f"build_shim.build({mpicc!r}, {work!r})")
    log = Path(work + ".log")
    with open(log, "w") as out:
        rc = subprocess.run([sys.executable, "-c", code], stdout=out, stderr=subprocess.STDOUT,
                            cwd=work).returncode
    if rc != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise MinitraceError(f"the shim for {library} did not build with {mpicc}: see {log}")
    log.unlink()
    try:
        os.rename(work, entry)
    except OSError:          # built meanwhile by another process: theirs is as good
        shutil.rmtree(work, ignore_errors=True)
    return cached(library)


def choose(command: list[str], build_missing: bool = True) -> Choice:
    """The shim for ``command``, built when missing (``build_missing``); a MinitraceError
    in one line when none can be."""
    installed = shim_path()
    program = program_of(command)
    library = linked_mpi(program) if program else None
    if library is None:
        what = (f"{command[0]} runs no program linked against an MPI library (it may load one "
                f"at run time, as mpi4py does)" if command else "no command given")
        return Choice(installed, linked_mpi(installed), f"{what}: the installed shim, built "
                                                        f"for {linked_mpi(installed)}")
    if linked_mpi(installed) == library:
        return Choice(installed, library, f"{program} is linked against {library}, as the "
                                          f"installed shim is")
    have = cached(library)
    if have:
        return Choice(have, library, f"{program} is linked against {library}: the shim built "
                                     f"for it")
    mpicc = mpicc_for(library)
    if mpicc is None:
        raise MinitraceError(f"{program} is linked against {library}, for which no PMPI shim "
                             f"is built and no mpicc was found: build one with minitrace shim "
                             f"build --mpicc PATH (that MPI's mpicc); the program was not run")
    if not build_missing:
        return Choice(None, library, f"{program} is linked against {library}: a shim will be "
                                     f"built for it with {mpicc}")
    return Choice(build(mpicc), library, f"{program} is linked against {library}: the shim "
                                         f"built for it with {mpicc}")
