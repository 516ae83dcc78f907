"""MPI-IO calls in OTF2: the I/O events ``convert --to otf2`` writes inside each MPI_File_*
region, which the reader (otf2_columns.py, ``_file_io``) takes the calls' fields back from.

OTF2 has I/O events (the ones Score-P writes for MPI-IO and Vampir shows): a handle per
opened file (an ``IoHandle`` definition on the file's communicator, in the ``MPI-IO`` I/O
paradigm), ``IoCreateHandle`` in MPI_File_open and ``IoDestroyHandle`` in MPI_File_close,
``IoOperationBegin``/``IoOperationComplete`` around each read, write (with the bytes asked for)
and sync (a flush), an ``IoSeek`` before it with its offset, a non-blocking operation's end in
the wait that completes its request (the matching id is the request id), a split
collective's in its ``_end`` call.  Three calls have no I/O event: MPI_File_set_view,
MPI_File_set_size and MPI_File_preallocate carry their file and their one value
(displacement or size) as two attributes of their Enter event (``ATTRIBUTES``), and an open
that failed (file -1: no handle) its communicator.  (``ATTRIBUTES`` also holds those
otf2.py writes for what no MPI event says: MPI_Cancel's request and the receive it cancelled,
and a call's wildcard and MPI_IN_PLACE flags.)  The access mode of an open is not
recorded: it is written as read-write.  MPI_File_delete names no open file (its region
alone).

The reader numbers each rank's files in the order of its ``IoCreateHandle`` events (of
handles in the MPI-IO paradigm: not the POSIX ones a tool may record beneath), as the recorder
numbers them, so a Score-P archive's MPI-IO reads the same way."""
from __future__ import annotations

import numpy as np

from minitrace import kinds as K

_C, _N = K.CODE, K.NAME
#: the Enter attributes of the calls without an I/O event, of MPI_Cancel (whose request and
#: cancelled receive no OTF2 event holds), and the flags of any call that has wildcards or
#: MPI_IN_PLACE: name -> (description, type name)
ATTRIBUTES = {"MPI_File": ("the file handle of an MPI_File call that has no I/O event",
                           "IO_HANDLE"),
              "MPI_Offset": ("its value: MPI_File_set_view's displacement, MPI_File_set_size's "
                             "and MPI_File_preallocate's size", "INT64"),
              "MPI_Comm": ("the communicator of an MPI_File_open that failed (no handle), or "
                           "of the request an MPI_Cancel names", "COMM"),
              # MPI_Cancel's (otf2.py): its request, and the posted receive it cancelled
              "MPI_Request": ("the request an MPI_Cancel names", "UINT64"),
              "MPI_Source": ("the posted source (world rank, -1 none) of the receive an "
                             "MPI_Cancel cancelled", "INT64"),
              "MPI_Tag": ("the posted tag of the receive an MPI_Cancel cancelled", "INT64"),
              "MPI_Bytes": ("the posted size in bytes of the receive an MPI_Cancel cancelled",
                            "UINT64"),
              # any MPI call's (otf2.py): what its events cannot say
              "MPI_Flags": ("the call's MPI_ANY_SOURCE (1), MPI_ANY_TAG (2) and MPI_IN_PLACE "
                            "(4): minitrace's flags, which no OTF2 event holds", "UINT64")}
#: each attribute's role in the reader's ``Defs.attribute_role`` (0: another tool's)
ROLE = {name: k + 1 for k, name in enumerate(ATTRIBUTES)}
#: the attributes read only from archives ``convert --to otf2`` wrote (its creator says so:
#: otf2.CREATOR): their names are generic enough for another tool's attribute to have one
#: (the reviewer of session 33: a STRING "MPI_Flags" was read as MPI_ANY_SOURCE); the MPI-IO
#: ones, older than the mark, are read from any archive, by name and type
OURS_ONLY = frozenset({"MPI_Request", "MPI_Source", "MPI_Tag", "MPI_Bytes", "MPI_Flags"})
#: the calls whose file and value are those attributes
VALUE_CALLS = frozenset({"file_set_view", "file_set_size", "file_preallocate"})
#: OTF2's IoOperationMode values
READ, WRITE, FLUSH = 0, 1, 2


def role(name: str, type_name: str, ours: bool) -> int:
    """The role of an attribute definition (0: another tool's): its name and type are one of
    :data:`ATTRIBUTES`, and for :data:`OURS_ONLY` the archive is minitrace's (``ours``)."""
    if ATTRIBUTES.get(name, ("", ""))[1] != type_name or (name in OURS_ONLY and not ours):
        return 0
    return ROLE[name]


def _operation(name: str) -> tuple[int, bool, bool]:
    """(mode, collective, non-blocking) of a read, write or sync call."""
    mode = FLUSH if name == "file_sync" else READ if "read" in name else WRITE
    return mode, "_all" in name or "ordered" in name, name in K.NONBLOCKING_IO or \
        name.endswith("_begin")


class Writer:
    """A rank's MPI-IO events, through the event writer ``w``: :meth:`enter_attributes` for
    the Enter of a call, :meth:`events` inside it, :meth:`complete` in the wait or test of a
    non-blocking operation.  The definitions (paradigm, files, handles, attributes) are made
    as the events need them, through the shared :class:`Definitions`."""

    def __init__(self, otf2, w, defs: "Definitions", rank: int, acts: np.ndarray,
                 vector):
        self.otf2, self.E, self.w, self.defs = otf2, otf2.events, w, defs
        self.rank, self.acts, self.vector = rank, acts, vector
        self.split: dict[int, tuple[int, int]] = {}    # file -> (matching id, bytes) of a begin

    def _handle(self, i: int):
        return self.defs.handle(self.rank, int(self.acts["tag"][i]), int(self.acts["comm"][i]))

    def enter_attributes(self, i: int, name: str) -> dict | None:
        """The attributes of call ``i``'s Enter: its file and value where no event says them."""
        if name == "file_open" and int(self.acts["tag"][i]) < 0:
            return {self.defs.attribute("MPI_Comm"): self.defs.comm(int(self.acts["comm"][i]))}
        if name not in VALUE_CALLS or int(self.acts["tag"][i]) < 0:
            return None
        v = self.vector(i)
        out = {self.defs.attribute("MPI_File"): self._handle(i)}
        if len(v):
            out[self.defs.attribute("MPI_Offset")] = int(v[0])
        return out

    def events(self, i: int, name: str, t0: int, t1: int) -> bool:
        """The I/O events of call ``i`` (whether it is written whole)."""
        if name == "file_delete":
            return True                     # by name: its region says all
        if int(self.acts["tag"][i]) < 0:
            return name == "file_open"      # a failed open opened nothing (its comm: above)
        otf2, E, w, h = self.otf2, self.E, self.w, self._handle(i)
        fid = int(self.acts["tag"][i])
        if name == "file_open":
            w(E.IoCreateHandle(t1, h, otf2.IoAccessMode.READ_WRITE, otf2.IoCreationFlag.NONE,
                               otf2.IoStatusFlag.NONE))
        elif name == "file_close":
            w(E.IoDestroyHandle(t0, h))
        elif name.endswith("_end"):
            mid, nbytes = self.split.pop(fid, (i, 0))
            w(E.IoOperationComplete(t1, h, nbytes, mid))
        elif name not in VALUE_CALLS:
            mode, collective, nonblocking = _operation(name)
            nbytes = int(self.acts["bytes_recv" if mode == READ else "bytes_sent"][i])
            v = self.vector(i)
            if len(v):
                w(E.IoSeek(t0, h, int(v[0]), otf2.IoSeekOption.FROM_START, int(v[0])))
            flags = otf2.IoOperationFlag.NONE
            if collective:
                flags = flags | otf2.IoOperationFlag.COLLECTIVE
            if nonblocking:
                flags = flags | otf2.IoOperationFlag.NON_BLOCKING
            mid = int(self.acts["request"][i]) if name in K.NONBLOCKING_IO else i
            w(E.IoOperationBegin(t0, h, getattr(otf2.IoOperationMode, ("READ", "WRITE",
                                                                        "FLUSH")[mode]),
                                 flags, nbytes, mid))
            if not nonblocking:
                w(E.IoOperationComplete(t1, h, nbytes, mid))
            else:
                w(E.IoOperationIssued(t1, h, mid))
                if name.endswith("_begin"):
                    self.split[fid] = (mid, nbytes)
        return True

    def complete(self, j: int, t: int, done: bool) -> None:
        """The end (``done``) or a failed test of the operation that call ``j`` began."""
        h, req = self._handle(j), int(self.acts["request"][j])
        if not done:
            self.w(self.E.IoOperationTest(t, h, req))
            return
        name = _N[int(self.acts["kind"][j])]
        nbytes = int(self.acts["bytes_recv" if "read" in name else "bytes_sent"][j])
        self.w(self.E.IoOperationComplete(t, h, nbytes, req))


class Definitions:
    """The archive's MPI-IO definitions, made once each: the paradigm, a file and a handle per
    (rank, file id) on the file's communicator (``comms``: comm id -> OTF2 comm), and the
    attributes of :data:`ATTRIBUTES`."""

    def __init__(self, otf2, d, scope, comms: dict):
        self.otf2, self.d, self.scope, self.comms = otf2, d, scope, comms
        self.paradigm = None
        self.handles: dict[tuple[int, int], object] = {}
        self.attributes: dict[str, object] = {}

    def handle(self, rank: int, fid: int, cid: int):
        key = (rank, fid)
        if key not in self.handles:
            otf2, d = self.otf2, self.d
            if self.paradigm is None:
                self.paradigm = d.io_paradigm("MPI-IO", "MPI I/O",
                                              io_paradigm_class=otf2.IoParadigmClass.PARALLEL,
                                              io_paradigm_flags=otf2.IoParadigmFlag.NONE)
            f = d.io_regular_file(f"file {fid} of rank {rank}", scope=self.scope)
            self.handles[key] = d.io_handle(f"MPI_File {fid} of rank {rank}", f, self.paradigm,
                                            otf2.IoHandleFlag.NONE, self.comm(cid))
        return self.handles[key]

    def comm(self, cid: int):
        return self.comms.get(cid, self.comms[0])

    def attribute(self, name: str):
        if name not in self.attributes:
            text, typ = ATTRIBUTES[name]
            self.attributes[name] = self.d.attribute(name, text, getattr(self.otf2.Type, typ))
        return self.attributes[name]
