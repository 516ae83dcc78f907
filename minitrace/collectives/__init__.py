"""Collective algorithms: which one an MPI library runs (``selection``), the messages each sends
(``algorithms``), and the lowering of a trace's collectives (and of what else SimGrid's TI
replay cannot express) into point-to-point messages (``lowering``): a trace-to-trace transform
that the TI export, the replay and compressed streams share."""
from .lowering import ACK_TAG_BASE, ALWAYS_LOWERED, TAG_BASE, as_sendrecv_primitive, lower, \
    lowered_collective, rows_to_lower
from .selection import CHOICES, LIBRARIES, library_of, lowered_as, resolve, select, world_plan

__all__ = ["ACK_TAG_BASE", "ALWAYS_LOWERED", "CHOICES", "LIBRARIES", "TAG_BASE",
           "as_sendrecv_primitive", "library_of", "lower", "lowered_as", "lowered_collective",
           "resolve", "rows_to_lower", "select", "world_plan"]
