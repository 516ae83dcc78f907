"""Which foreign trace format a path holds, and reading it whatever it is.

Formats: ``otf2`` (a ``.otf2`` anchor, or a directory holding one), ``tau`` (a merged ``.trc``
with its ``.edf``, either file, or a directory holding ``tau.trc``; or TAU's unmerged
``tautrace.N.C.T.trc`` files with their ``events.N.edf``, as a directory or a list of files),
``ti`` (SimGrid time-independent text: a trace or a list file).  Readers are imported lazily so
that each one's dependency is only needed for its own format.
"""
from __future__ import annotations

from pathlib import Path

from minitrace.errors import MinitraceError
from minitrace.model import TraceColumns

from .otf2 import read_otf2
from .simgrid_ti import read_ti
from .tau import PER_THREAD, per_thread_files, read_tau, read_tau_files
from .ti_files import is_trace, list_entries

FORMATS = ("otf2", "tau", "ti")


def _per_thread(p: Path) -> list[Path] | None:
    """The per-thread TAU files ``p`` stands for (a directory of them without a merged
    tau.trc, one of them when it is the only one, or a node's events.N.edf), else None."""
    if p.is_dir():
        return None if (p / "tau.trc").exists() else per_thread_files(p) or None
    if PER_THREAD.match(p.name) or (p.name.startswith("events.") and p.suffix == ".edf"):
        files = per_thread_files(p.parent)
        if PER_THREAD.match(p.name) and files != [p]:
            raise MinitraceError(f"one of {len(files)} per-thread TAU traces here: convert "
                                 "their directory (or list them all)", str(p))
        return files or None
    return None


def _tau_pair(p: Path) -> tuple[Path, Path]:
    """(trc, edf) for a .trc or .edf file or a directory of a merged TAU trace."""
    if p.is_dir():
        trc = p / "tau.trc"
        if not trc.exists():
            raise MinitraceError("no tau.trc in this directory (merge the per-thread traces "
                                 "with tau_treemerge.pl first)", str(p))
        return trc, p / "tau.edf"
    if p.suffix == ".edf":
        cands = [p.with_suffix(".trc"), p.parent / "tau.trc"]
        trc = next((c for c in cands if c.exists()), None)
        if trc is None:
            raise MinitraceError("no .trc trace beside this event definition file", str(p))
        return trc, p
    edf = p.with_suffix(".edf")
    if not edf.exists() and p.name.startswith("tautrace."):
        raise MinitraceError("a per-thread TAU trace (not tau_treemerge.pl's tau.trc): it is "
                             "read with its node's events.<node>.edf, as tautrace.<node>."
                             "<context>.<thread>.trc", str(p))
    return p, edf if edf.exists() else p.parent / "tau.edf"


def _is_ti(path: str) -> bool:
    """A TI trace, or a list file whose every entry is an existing file (the TI reader's rules)."""
    try:
        return is_trace(path) or bool(list_entries(path))
    except MinitraceError:
        return False


def detect(path) -> str:
    """Name of the format of ``path`` (one of FORMATS); MinitraceError when it is none."""
    p = Path(path)
    if not p.exists():
        raise MinitraceError("no such file or directory", str(p))
    if p.is_dir():
        if any(p.glob("*.otf2")):
            return "otf2"
        if (p / "tau.trc").exists() or any(p.glob("tautrace.*.trc")):
            return "tau"
        raise MinitraceError("no .otf2 anchor, tau.trc or tautrace.*.trc in this directory",
                             str(p))
    if p.suffix == ".otf2":
        return "otf2"
    if p.suffix in (".trc", ".edf"):
        return "tau"
    try:
        with open(p, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise MinitraceError(f"cannot read: {e.strerror}", str(p)) from None
    if head.startswith(b"\x89HDF"):
        raise MinitraceError("an HDF5 (minitrace) file, not a foreign trace: write it as OTF2 "
                             "with --to otf2", str(p))
    if b"\0" not in head and _is_ti(str(p)):
        return "ti"
    raise MinitraceError("cannot tell the trace format (expected an OTF2 anchor, a TAU "
                         ".trc/.edf pair or SimGrid TI text; pass --from)", str(p))


def read_paths(path, fmt: str = "auto") -> list:
    """What reading ``path`` (a path or a list of them) in format ``fmt`` consumes besides the
    paths themselves: an OTF2 anchor's archive directory, a TAU trace's other file (.trc/.edf,
    a node's events.N.edf), a TI list file's traces; for the check that no output of a
    command lands on one (``outputs.check_disjoint``).  Paths that cannot be read are left to
    the reader to report."""
    paths = list(path) if isinstance(path, (list, tuple)) else [path]
    out = list(paths)
    for p in map(Path, paths):
        try:
            f = detect(p) if fmt == "auto" else fmt
            if not p.is_file():
                continue
            if f == "otf2":
                out.append(p.parent)
            elif f == "tau":
                out += [*(_per_thread(p) or _tau_pair(p)), *p.parent.glob("events.*.edf")]
            elif f == "ti" and not is_trace(str(p)):
                out += list_entries(str(p))
        except MinitraceError:
            continue
    return out


def read_any(path, fmt: str = "auto", keep_regions: bool = False,
             keep_going: bool = False) -> TraceColumns:
    """Read ``path`` in format ``fmt`` ("auto" detects it) into a TraceColumns; a list of several
    paths is TAU's per-thread files of one run.  ``keep_going``: keep the whole records of a
    damaged OTF2/TAU/TI input, marking the trace incomplete, instead of failing."""
    if isinstance(path, (list, tuple)):
        if len(path) != 1:
            if fmt not in ("auto", "tau"):
                raise MinitraceError(f"several inputs are TAU per-thread files, not {fmt}")
            return read_tau_files(path, keep_regions=keep_regions, keep_going=keep_going)
        path = path[0]
    fmt = detect(path) if fmt == "auto" else fmt
    if fmt == "otf2":
        return read_otf2(path, keep_regions=keep_regions, keep_going=keep_going)
    if fmt == "tau":
        p = Path(path)
        if not p.exists():
            raise MinitraceError("no such file or directory", str(p))
        files = _per_thread(p)
        if files:
            return read_tau_files(files, keep_regions=keep_regions, keep_going=keep_going)
        trc, edf = _tau_pair(p)
        return read_tau(trc, edf, keep_regions=keep_regions, keep_going=keep_going)
    if fmt == "ti":
        data = read_ti(path, keep_going=keep_going)
        data.meta.setdefault("source_format", "ti")
        return data
    raise MinitraceError(f"unknown trace format {fmt!r} (known: {', '.join(FORMATS)})")
