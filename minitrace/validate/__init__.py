"""Consistency checks of a trace: the invariants every correct MPI run satisfies.

A trace that fails them was cut short, recorded wrongly, or converted wrongly; replaying it would
deadlock or mis-simulate.  One module per kind of check, each vectorised over all actions with
numpy/pandas: ``structure``, ``values``, ``deadlocks``, ``point_to_point``, ``probes`` (matched
probes), ``collectives``, ``one_sided``, ``files`` (MPI-IO), ``requests``, ``converted`` (what a
converter lost); ``report`` holds what they find and the columns they read.
"""
from ..model import TraceColumns
from .collectives import check_collectives
from .converted import check_converted
from .deadlocks import check_self_sends
from .files import check_files
from .one_sided import check_one_sided
from .point_to_point import check_p2p
from .probes import check_matched_probes
from .report import KEEP_PER_CATEGORY, CheckContext, Problem, ValidationReport
from .requests import check_requests
from .structure import check_structure
from .values import check_values

__all__ = ["validate", "ValidationReport", "Problem", "CheckContext", "KEEP_PER_CATEGORY"]


def validate(data: TraceColumns) -> ValidationReport:
    """Check ``data``; the report lists every problem found (see the module docstring)."""
    rep = ValidationReport(data.nranks, len(data.actions))
    if data.nranks == 0:
        rep.add(-1, -1, "no-ranks", "the trace has no rank")
        return rep
    ctx = CheckContext(data)
    check_local_before_p2p(ctx, rep)
    check_p2p(ctx, rep)
    check_matched_probes(ctx, rep)
    check_collectives(ctx, rep)
    check_local_after_collectives(ctx, rep)
    if data.meta.get("source_messages"):
        check_converted(ctx, rep, data.meta["source_messages"])
    return rep


def check_local_before_p2p(ctx: CheckContext, rep: ValidationReport) -> None:
    """The checks of each rank alone that come first in the report."""
    check_values(ctx, rep)
    check_self_sends(ctx, rep)
    check_structure(ctx, rep)


def check_local_after_collectives(ctx: CheckContext, rep: ValidationReport) -> None:
    """The checks of each rank alone that come after the collectives in the report."""
    check_one_sided(ctx, rep)
    check_files(ctx, rep)
    check_requests(ctx, rep)
