"""An OTF2 archive's events as numpy columns, read by the OTF2 C library's global event reader
with C callbacks (the compiled module ``minitrace.converters._otf2_events``, built at install
time from converters/native/).

The otf2 Python bindings make a Python object per event (about 0.1 M events/s); the callbacks
append the events minitrace uses as rows of one array (tens of M events/s) and count the others,
so that ``read_otf2`` checks and converts whole columns (converters/otf2_columns.py).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from minitrace.errors import MinitraceError

try:
    from ._otf2_events import ffi, lib
except ImportError as _e:     # an install without its compiled modules
    ffi = lib = None
    _MISSING = str(_e)

#: Event types of the ``type`` column (the MT_* codes of otf2_events.c).
TYPES = ("ENTER", "LEAVE", "SEND", "ISEND", "ISEND_COMPLETE", "IRECV_REQUEST", "RECV", "IRECV",
         "REQUEST_TEST", "REQUEST_CANCELLED", "COLLECTIVE_END", "NBC_REQUEST", "NBC_COMPLETE",
         "METRIC", "IO_CREATE_HANDLE", "IO_DESTROY_HANDLE", "IO_BEGIN", "IO_COMPLETE", "IO_TEST",
         "IO_SEEK", "ATTRIBUTE", "RMA_WIN_CREATE", "RMA_WIN_DESTROY", "RMA_PUT", "RMA_GET",
         "RMA_ATOMIC", "RMA_OP_COMPLETE", "RMA_OP_TEST", "RMA_COLLECTIVE_END", "RMA_SYNC",
         "RMA_GROUP_SYNC", "RMA_LOCK", "RMA_RELEASE_LOCK")
#: ... and the OTF2 event each is (for what is reported).
OTF2_NAME = {"ENTER": "Enter", "LEAVE": "Leave", "SEND": "MpiSend", "ISEND": "MpiIsend",
             "ISEND_COMPLETE": "MpiIsendComplete", "IRECV_REQUEST": "MpiIrecvRequest",
             "RECV": "MpiRecv", "IRECV": "MpiIrecv", "REQUEST_TEST": "MpiRequestTest",
             "REQUEST_CANCELLED": "MpiRequestCancelled", "COLLECTIVE_END": "MpiCollectiveEnd",
             "NBC_REQUEST": "NonBlockingCollectiveRequest",
             "NBC_COMPLETE": "NonBlockingCollectiveComplete", "METRIC": "Metric",
             "IO_CREATE_HANDLE": "IoCreateHandle", "IO_DESTROY_HANDLE": "IoDestroyHandle",
             "IO_BEGIN": "IoOperationBegin", "IO_COMPLETE": "IoOperationComplete",
             "IO_TEST": "IoOperationTest", "IO_SEEK": "IoSeek", "ATTRIBUTE": "attribute",
             "RMA_WIN_CREATE": "RmaWinCreate", "RMA_WIN_DESTROY": "RmaWinDestroy",
             "RMA_PUT": "RmaPut", "RMA_GET": "RmaGet", "RMA_ATOMIC": "RmaAtomic",
             "RMA_OP_COMPLETE": "RmaOpComplete", "RMA_OP_TEST": "RmaOpTest",
             "RMA_COLLECTIVE_END": "RmaCollectiveEnd", "RMA_SYNC": "RmaSync",
             "RMA_GROUP_SYNC": "RmaGroupSync", "RMA_LOCK": "RmaRequestLock",
             "RMA_RELEASE_LOCK": "RmaReleaseLock"}
_FIELDS = ("time", "d", "f", "e", "rank", "a", "b", "c", "type")


def _module():
    if lib is None:
        raise MinitraceError("minitrace's compiled OTF2 reader is missing (install minitrace with "
                             f"scripts/setup.sh or pip, which build it: {_MISSING})")
    return ffi, lib


def code(name: str) -> int:
    """The ``type`` column's code of an event type of TYPES."""
    return int(getattr(_module()[1], "MT_" + name))


def event_dtype() -> np.dtype:
    """The numpy view of otf2_events.c's ``mt_event`` rows (offsets taken from the module)."""
    f, _ = _module()
    return np.dtype({"names": list(_FIELDS),
                     "formats": ["u8"] * 4 + ["u4"] * 5,
                     "offsets": [f.offsetof("mt_event", n) for n in _FIELDS],
                     "itemsize": f.sizeof("mt_event")})


@dataclass
class Events:
    """What the C reader read: the rows, each location's delivered event count, and why it
    stopped (``error``: '' or the OTF2 library's 'NAME (code): description'; ``damaged_rank``:
    the rank whose events went back in time or outnumbered its definition, else -1;
    ``unknown_location``: an event's location the definitions lack)."""
    rows: np.ndarray
    seen: np.ndarray
    error: str
    damaged_rank: int
    unknown_location: int | None
    local_defs_of: int | None       # the location whose local definitions could not be read


def read_events(anchor, loc_ref: np.ndarray, loc_rank: np.ndarray, expected: np.ndarray,
                metric_member: np.ndarray) -> Events:
    """Read every location's events.  ``loc_ref``: every defined location (sorted),
    ``loc_rank`` its rank or -1 (its events are counted, not stored), ``expected`` each rank's
    announced event count, ``metric_member`` the member index of the volume counter per metric
    reference (-1: not kept)."""
    f, L = _module()
    nranks = int(expected.size)
    refs = np.ascontiguousarray(loc_ref, np.uint64)
    ranks = np.ascontiguousarray(loc_rank, np.int32)
    exp = np.ascontiguousarray(expected, np.uint64)
    members = np.ascontiguousarray(metric_member, np.int32)
    seen = np.zeros(len(refs), np.uint64)
    last = np.zeros(max(nranks, 1), np.uint64)
    s = f.new("mt_state*")
    keep = [f.from_buffer("uint64_t[]", refs), f.from_buffer("int32_t[]", ranks),
            f.from_buffer("uint64_t[]", seen), f.from_buffer("uint64_t[]", exp),
            f.from_buffer("uint64_t[]", last), f.from_buffer("int32_t[]", members)]
    s.loc_ref, s.loc_rank, s.loc_seen, s.expected, s.last_time, s.metric_member = keep
    s.nloc, s.nmetric = len(refs), len(members)
    n_read = f.new("uint64_t*")
    err = L.mt_read(os.fsencode(anchor), s, n_read)
    rows = np.zeros(0, event_dtype())
    if s.n:
        owned = f.gc(s.ev, L.mt_free)
        rows = np.frombuffer(f.buffer(owned, s.n * f.sizeof("mt_event")), event_dtype())
    elif s.ev != f.NULL:
        L.mt_free(s.ev)
    del keep
    why, damaged, unknown = "", -1, None
    if s.stop == L.MT_STOP_MEMORY:
        raise MinitraceError("out of memory reading the archive's events", str(anchor))
    if s.stop == L.MT_STOP_DAMAGED:
        damaged = int(s.stop_rank)
    elif s.stop == L.MT_STOP_UNKNOWN_LOCATION:
        unknown = int(s.stop_loc)
    elif err == -1:
        why = "the OTF2 library could not open the archive"
    elif err:
        name, desc = (f.string(g(err)).decode("utf-8", "replace") if g(err) != f.NULL else "?"
                      for g in (L.OTF2_Error_GetName, L.OTF2_Error_GetDescription))
        why = f"{name} ({err}): {desc}"
    local = int(s.stop_loc) if s.in_local_defs else None
    return Events(rows, seen, why, damaged, unknown, local)


def can_open(anchor) -> bool:
    """Whether the OTF2 library can open the archive's anchor file (it reads nothing else)."""
    return bool(_module()[1].mt_can_open(os.fsencode(anchor)))
