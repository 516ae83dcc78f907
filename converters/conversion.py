"""One call between formats, the Python side of ``minitrace convert``: a foreign trace (OTF2,
TAU, SimGrid TI) into a validated minitrace file, or a minitrace file into OTF2, SimGrid TI
text, CSV or a Perfetto timeline.  What the target format could not say is returned, not
printed: the command prints it."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minitrace.converters.csv_table import write_csv
from minitrace.converters.detect import read_any, read_paths
from minitrace.converters.otf2 import write_otf2
from minitrace.converters.perfetto import write_perfetto
from minitrace.converters.simgrid_ti import ExportReport, rank_files_dir, write_ti
from minitrace.errors import MinitraceError
from minitrace.model import TraceColumns
from minitrace.outputs import check_disjoint, check_output_dir, check_output_file
from minitrace.storage import write_trace

if TYPE_CHECKING:     # the trace reader and the checks load pandas: only when converting
    from minitrace.validate import ValidationReport

#: What a minitrace file can be written as.
EXPORTS = ("otf2", "ti", "csv", "perfetto")


@dataclass
class Converted:
    """A conversion done: the trace converted and what the target says of it."""
    data: TraceColumns                        #: the trace (its ``meta``: what a reader left out)
    to: str                                   #: "minitrace" or one of EXPORTS
    validation: ValidationReport | None = None   #: into minitrace: the trace's validation
    ti: ExportReport | None = None            #: ti: what was lowered, dropped, approximated
    lossy: dict = field(default_factory=dict)  #: otf2: kind -> actions written incompletely
    written: int = 0                          #: csv: rows; perfetto: trace events


def convert(src, dst: str, to: str = "minitrace", source: str = "auto",
            keep_regions: bool = False, keep_going: bool = False, layout: str = "per-rank",
            lossy: bool = False) -> Converted:
    """Convert ``src`` into ``dst``, written whole or not at all; outputs are checked against
    the inputs before any work.

    Parameters
    ----------
    src : str, os.PathLike or list of them
        A foreign trace (an OTF2 anchor or its directory, tau.trc/tau.edf, TAU per-thread
        files or their directory, a TI trace or list file; a list: several files of one trace);
        with ``to`` other than "minitrace", a minitrace file.
    dst : str
        The minitrace file, the OTF2 archive's new directory, or the exported file (ti
        per-rank: the list file; its rank files go to ``dst_files/``).
    to : str
        "minitrace" (validated; validation problems are reported, not fatal) or one of
        ``EXPORTS``.
    source : str
        The foreign format ("auto": detected; ``minitrace.converters.detect.FORMATS``).
    keep_regions : bool
        Keep non-MPI regions as region_begin/region_end markers.
    keep_going : bool
        Keep the whole records of a damaged OTF2/TAU input and mark the trace incomplete.
    layout : str
        ti: "per-rank" (a file per rank and a list file) or "single".
    lossy : bool
        ti: drop what SimGrid cannot express instead of failing.

    Returns
    -------
    Converted
    """
    from minitrace.trace import open as open_trace
    from minitrace.validate import validate
    if to == "minitrace":
        check_output_file(dst)
        check_disjoint(read_paths(src, source), [dst])
        data = read_any(src, source, keep_regions=keep_regions, keep_going=keep_going)
        report = validate(data)
        write_trace(dst, data)
        return Converted(data, to, validation=report)
    if to not in EXPORTS:
        raise ValueError(f"cannot convert to {to!r} (one of minitrace, {', '.join(EXPORTS)})")
    src = os.fspath(src)
    if to == "otf2":
        check_disjoint([src], output_dirs=[dst])
        check_output_dir(dst)
    else:
        check_output_file(dst)
        check_disjoint([src], [dst], [rank_files_dir(dst)] if to == "ti" and
                       layout == "per-rank" else [])
    with open_trace(src) as t:
        if to == "otf2" and not t.has_trace:
            raise MinitraceError("no trace in this file", src)
        data = t.data()
    if to == "otf2":
        return Converted(data, to, lossy=write_otf2(data, dst))
    if to == "csv":
        return Converted(data, to, written=write_csv(data, dst))
    if to == "perfetto":
        return Converted(data, to, written=write_perfetto(data, dst))
    return Converted(data, to, ti=write_ti(data, dst, layout=layout, lossy=lossy))
