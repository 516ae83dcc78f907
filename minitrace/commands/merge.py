"""``minitrace merge DIR``: turn the shim's per-rank raw files into one HDF5 trace."""
from __future__ import annotations

import os
import sys

from .. import storage
from ..errors import MinitraceError
from ..merge import NO_VECTOR, merge_dir
from ..outputs import check_disjoint, check_output_file
from ..parallel.parts import parts_dir, stored_bytes
from ..parallel.world import launched_size
from . import COMMANDS


def register(sub) -> None:
    p = sub.add_parser("merge", help=COMMANDS["merge"],
                       description="Read the rank-*.mtr files the PMPI shim wrote into DIR "
                                   "(also those of a killed run: it is marked incomplete), write "
                                   "one HDF5 trace, validate it and print its summary.  Exit "
                                   "status 1 when the trace is incomplete or invalid.  Under "
                                   "`mpiexec -n K` (K > 1) the K processes share the ranks: "
                                   "OUT.h5 reads the parts they write in OUT.parts/ "
                                   "(`minitrace pack` makes one file); a failed run is "
                                   "finished by running it again.")
    p.add_argument("dir", help="directory of rank-*.mtr files (MINITRACE_DIR of the run)")
    p.add_argument("-o", "--output", help="trace file to write (default: DIR.h5)")
    add_compress_option(p)
    p.set_defaults(func=run)


def add_compress_option(p) -> None:
    """``--compress``, shared with ``minitrace record``."""
    p.add_argument("--compress", nargs="?", const="exact", choices=("exact", "model"),
                   help="write the compressed form (minitrace compress; volumes exact by "
                        "default, or model) and say what the trace would have cost "
                        "uncompressed")


def run(args) -> int:
    out = args.output or os.path.normpath(args.dir) + ".h5"
    check_output_file(out)
    if launched_size() > 1:
        check_disjoint([args.dir], [out], output_dirs=[parts_dir(out)])
        if args.compress:
            raise MinitraceError("--compress is not done by the parallel merge: merge, then "
                                 "`minitrace compress`")
        return _run_parallel(args.dir, out)
    check_disjoint([args.dir], [out])
    return 0 if merge_and_report(args.dir, out, compress=args.compress) else 1


def _run_parallel(directory: str, output: str) -> int:
    """Under ``mpiexec -n K`` (K > 1): the parallel merge (minitrace/parallel/merge.py);
    worker 0 reports, the others' errors are in its one line."""
    from ..parallel.merge import merge_parallel
    from ..parallel.summary import summary_parallel
    from ..parallel.validate import validate_parallel
    from ..parallel.world import World
    world = World()
    try:
        meta, share = merge_parallel(world, directory, output, keep=True)
        rep = validate_parallel(world, output, share)
        del share
        summary = summary_parallel(world, output)
    except MinitraceError:
        if world.root:
            raise
        return 1
    if not world.root:
        return 0 if world.bcast(None) else 1
    good = False
    try:
        _warn(meta)
        good = report(output, meta, rep.nactions, rep, summary)
    finally:
        world.bcast(good)      # the other workers' exit status
    return 0 if good else 1


def merge_and_report(directory: str, output: str, command_line: str | None = None,
                     compress: str | None = None) -> bool:
    """Merge ``directory`` into ``output`` (in the compressed form with ``compress`` = the
    volume mode), validate it and print the summary (also what ``minitrace record`` prints).
    True when the trace is complete and valid."""
    from ..validate import validate
    data = merge_dir(directory, command_line)
    _warn(data.meta)
    plain = None
    if compress:
        plain = _compressed(data, output, compress)
    else:
        storage.write_trace(output, data)
    return report(output, data.meta, len(data.actions), validate(data),
                  compressed=(compress, plain) if compress else None)


def report(output: str, meta: dict, n: int, rep, summary=None, compressed=None) -> bool:
    """Print a merged trace's summary (computed here unless given) and validation; True when
    it is complete and valid.  ``compressed``: (volume mode, bytes it would take
    uncompressed) of a trace written compressed."""
    from ..summary import persistent_note, shown_kinds
    from ..trace import open as open_trace
    if summary is None:
        with open_trace(output) as t:
            summary = t.summary()
    print(f"{output}: {meta['nranks']} ranks, {n} actions, volume unit {meta['volume_unit']} "
          f"({meta['volume_source']}), {stored_bytes(output) / max(n, 1):.1f} bytes/action")
    if compressed:
        mode, plain = compressed
        print(f"  compressed ({mode} volumes); uncompressed it would have been "
              f"{plain / max(n, 1):.1f} bytes/action "
              f"({plain / max(os.path.getsize(output), 1):.1f}x "
              f"larger)")
    if not meta["complete"]:
        print(_incomplete(meta))
    cols = ["actions", "bytes_sent", "bytes_recv", "volume", "span"]
    top, left_out = shown_kinds(summary)
    print(summary[cols + top].to_string(float_format=lambda x: f"{x:.6g}"))
    if left_out:
        print(left_out)
    note = persistent_note(summary)
    if note:
        print(note)
    print(f"validation: {rep.summary()}")
    for line in rep.lines(20):
        print(f"  {line}")
    return rep.ok and bool(meta["complete"])


def _compressed(data, output: str, volumes: str) -> int:
    """Write ``data`` compressed into ``output``; the bytes the uncompressed file takes (written
    beside it, measured, removed)."""
    from ..compress.files import write_compressed
    write_compressed(output, data, volumes)
    probe = f"{output}.uncompressed.tmp"
    try:
        storage.write_trace(probe, data)
        return os.path.getsize(probe)
    finally:
        if os.path.exists(probe):
            os.unlink(probe)


def _warn(meta: dict) -> None:
    """What the merge found damaged or cut in the raw files, one line each."""
    for w in meta.get("raw_warnings", []):
        print(f"minitrace: warning: {w}", file=sys.stderr)


def _incomplete(meta: dict) -> str:
    """Why a merged trace is incomplete, from its metadata, on one line."""
    missing, disabled = meta["missing_ranks"], meta["disabled_reasons"]
    return ("INCOMPLETE: " + ("the run aborted" if meta["aborted"] else
                              "recording stopped early" if disabled else
                              "the recorder had no room for some calls' vectors"
                              if any(NO_VECTOR in w for w in meta.get("raw_warnings", ())) else
                              "a raw file is damaged" if meta.get("raw_warnings") else
                              "not every rank reached MPI_Finalize")
            + (f"; ranks with no data: {missing}" if missing else "")
            + (f"; tracing disabled on {'; '.join(disabled)}" if disabled else "")
            + " (every action recorded before the end is kept)")
