"""OTF2 (Score-P) archives <-> TraceColumns, through Score-P's own ``otf2`` package.

Reading: every MPI region of a rank's master location becomes one action; the message events
inside it (MpiSend/MpiRecv/MpiIsend/MpiIrecv..., MpiCollectiveEnd, non-blocking collective
events, I/O and RMA events) fill peer (world rank, through the communicator's group), tag,
communicator and bytes.
OTF2 collective sizes are Score-P's totals over all peers of this rank; they are converted to the
model's per-call convention (see docs/CONVERTERS.md).  Definitions are read with the package's
Python bindings, events by the OTF2 C library with compiled callbacks (otf2_native.py) and
turned into actions on whole columns (otf2_columns.py).  Writing, through the bindings, does the
inverse, so a trace survives the round trip with the same MPI actions.
"""
from __future__ import annotations

import os
import sys
import tempfile
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from minitrace import __version__
from minitrace import kinds as K
from minitrace.errors import MinitraceError
from minitrace.model import TraceColumns
from minitrace.outputs import replacing_dir, write_error

from . import otf2_io as IO
from .callstream import mpi_kind
from .otf2_columns import (DROPPED, NO_COMM, RMA_ATTRIBUTES, RMA_ROLE, SELF, USER, Defs,
                           assemble)
from .otf2_native import can_open, read_events

_C = K.CODE
_N = K.NAME


def _import_otf2():
    try:
        import otf2
    except ImportError as e:  # pragma: no cover - otf2 is a declared dependency
        raise MinitraceError(f"the 'otf2' package is needed for OTF2 traces ({e})") from None
    return otf2


def find_anchor(path) -> Path:
    """The ``.otf2`` anchor file of ``path`` (the anchor itself or the directory holding it)."""
    p = Path(path)
    if p.is_dir():
        anchors = sorted(p.glob("*.otf2"))
        if not anchors:
            raise MinitraceError("no .otf2 anchor file in this directory", str(p))
        if len(anchors) > 1 and (p / "traces.otf2").exists():
            return p / "traces.otf2"
        if len(anchors) > 1:
            names = ", ".join(a.name for a in anchors)
            raise MinitraceError(f"several .otf2 anchors here ({names}); name one", str(p))
        return anchors[0]
    if not p.exists():
        raise MinitraceError("no such file", str(p))
    return p


# == sizes: Score-P totals <-> model per-call bytes ============================================
def _to_otf2(kind: int, sent: int, recv: int, size: int, me: int, is_root: bool):
    """Inverse of ``otf2_columns._to_model``."""
    name, P = K.BLOCKING_OF.get(_N[kind], _N[kind]), max(size, 1)
    if name in ("allgather", "allgatherv"):
        return sent * P, recv
    if name == "allreduce":
        return sent * P, recv * P
    if name == "bcast":
        return (sent * P, sent) if is_root else (0, recv)
    if name == "reduce":
        return (sent, recv * P) if is_root else (sent, 0)
    if name in ("reduce_scatter", "reduce_scatter_block"):
        return sent, recv * P
    if name == "scan":
        return (P - me) * sent, (me + 1) * sent
    if name == "exscan":
        return (P - me - 1) * sent, me * sent
    return sent, recv


# == reading ===================================================================================
def _definitions(defs, ours: bool):
    """(otf2_columns.Defs, location -> rank, volume counter name or None, its unit) of an
    archive's global definitions, read with the otf2 bindings (``ours``: the archive is one
    ``convert --to otf2`` wrote, whose creator is CREATOR)."""
    otf2 = _import_otf2()
    rank_of = _ranks(otf2, defs)
    nranks = len(rank_of)
    regions = list(defs.regions)
    n_reg = max((r._ref for r in regions), default=-1) + 1
    region_kind = np.full(n_reg, USER, np.int64)
    region_name = [""] * n_reg
    for r in regions:
        region_name[r._ref] = r.name
        if r.paradigm == otf2.Paradigm.MPI or r.name.startswith("MPI_"):
            kind = mpi_kind(r.name, comm_calls=True)
            region_kind[r._ref] = DROPPED if kind is None else _C[kind]
    comm_id, comms, inter = _comms(otf2, defs, rank_of, nranks, ours)
    counter, unit = _volume_counter(defs)
    metrics = [m for m in defs.metrics]
    n_met = max((m._ref for m in metrics), default=-1) + 1
    member = np.full(max(n_met, 1), -1, np.int32)
    kind_of = np.zeros(max(n_met, 1), np.int64)
    relative = np.zeros(max(n_met, 1), bool)
    value_kind = {"UINT64": 0, "INT64": 1, "DOUBLE": 2}
    for m in metrics if counter else ():
        cls = getattr(m, "metric_class", m)
        names = [x.name for x in cls.members]
        if counter in names:
            i = names.index(counter)
            member[m._ref] = i
            kind_of[m._ref] = value_kind.get(str(cls.members[i].value_type).split(".")[-1], 0)
            relative[m._ref] = "RELATIVE" in str(cls.members[0].metric_mode)
    clock = defs.clock_properties
    d = Defs(nranks, float(clock.timer_resolution), int(clock.global_offset), region_kind,
             region_name, comm_id, comms, kind_of, relative, counter is not None,
             *_io_definitions(defs, ours), intercomms=inter, minitrace=ours,
             **_rma_definitions(otf2, defs, rank_of))
    return d, rank_of, member, counter, unit


def _rma_definitions(otf2, defs, rank_of) -> dict:
    """``Defs``' one-sided tables: per RMA window reference its comm reference (-1: none),
    and the world ranks of each MPI comm group (an RmaGroupSync's group: win_post's and
    win_start's)."""
    wins = list(defs.rma_wins)
    win_comm = np.full(max((w._ref for w in wins), default=-1) + 1, -1, np.int64)
    for w in wins:
        win_comm[w._ref] = w.comm._ref if w.comm is not None else -1
    groups = {g._ref: np.asarray([rank_of.get(m, -1) for m in g.members], np.int64)
              for g in defs.groups if g.group_type == otf2.GroupType.COMM_GROUP
              and g.paradigm == otf2.Paradigm.MPI}
    return {"win_comm": win_comm, "group_members": groups}


def _io_definitions(defs, ours: bool) -> tuple[np.ndarray, np.ndarray]:
    """(per I/O handle ref: its comm ref, -1 for none, -2 when not an MPI-IO handle; per
    attribute ref: its ``otf2_io.ROLE``, 0 another tool's: ``otf2_io.role``)."""
    handles = list(defs.io_handles)
    handle_comm = np.full(max((h._ref for h in handles), default=-1) + 1, -2, np.int64)
    for h in handles:
        if h.io_paradigm is not None and h.io_paradigm.identification.upper() == "MPI-IO":
            handle_comm[h._ref] = h.comm._ref if h.comm is not None else -1
    attributes = list(defs.attributes)
    role = np.zeros(max((a._ref for a in attributes), default=-1) + 1, np.int64)
    for a in attributes:
        role[a._ref] = IO.role(a.name, str(a.type).split(".")[-1], ours)
        if ours and RMA_ATTRIBUTES.get(a.name, ("", ""))[1] == str(a.type).split(".")[-1]:
            role[a._ref] = RMA_ROLE[a.name]          # (a one-sided call's vector)
    return handle_comm, role


def _ranks(otf2, defs) -> dict:
    """Location -> MPI world rank (its index in the MPI COMM_LOCATIONS group)."""
    for g in defs.groups:
        if g.group_type == otf2.GroupType.COMM_LOCATIONS and g.paradigm == otf2.Paradigm.MPI:
            return {loc: r for r, loc in enumerate(g.members)}
    return {}


def _comms(otf2, defs, rank_of, nranks, ours: bool):
    """Per OTF2 comm reference: its minitrace comm id (or NO_COMM, SELF); the table of
    members (world ranks); the ids of the intercommunicators ``convert --to otf2`` wrote (in
    ``ours``, its archives: a comm named ``INTERCOMM`` n, whose group is both its groups: the
    OTF2 bindings cannot write an InterComm definition; a Score-P program may name a
    communicator so).

    ``MPI_COMM_WORLD`` (else the first comm of all ranks in order) is 0; every other MPI comm
    gets its own id in definition order (a duplicate of the world is a communicator of its
    own).  A comm whose group is of type COMM_SELF is one communicator per rank (Score-P
    defines every one-member communicator that way): otf2_columns gives each rank using it an
    id of its own."""
    gt, par = otf2.GroupType, otf2.Paradigm
    every = list(defs.comms)
    ids = np.full(max((c._ref for c in every), default=-1) + 1, NO_COMM, np.int64)
    comms, nxt, inter = {0: np.arange(nranks, dtype=np.int32)}, 1, set()
    mpi = [c for c in every if c.group is not None and c.group.paradigm == par.MPI]
    everyone = list(range(nranks))
    world = next((c for c in mpi if c.name == "MPI_COMM_WORLD"), None) or next(
        (c for c in mpi if c.group.group_type != gt.COMM_SELF
         and [rank_of.get(loc, -1) for loc in c.group.members] == everyone), None)
    for c in mpi:
        if c is world:
            ids[c._ref] = 0
        elif c.group.group_type == gt.COMM_SELF:
            ids[c._ref] = SELF
        else:
            ids[c._ref] = nxt
            comms[nxt] = np.asarray([rank_of.get(loc, -1) for loc in c.group.members],
                                    dtype=np.int32)
            if ours and c.name.startswith(INTERCOMM + " "):
                inter.add(nxt)
            nxt += 1
    return ids, comms, frozenset(inter)


def read_otf2(anchor, keep_regions: bool = False, keep_going: bool = False) -> TraceColumns:
    """Read an OTF2 archive (its ``.otf2`` anchor, or the directory holding it).

    ``keep_regions`` keeps non-MPI regions as ``region_begin``/``region_end`` markers (names in
    the string table); by default they are dropped and counted in ``meta['user_regions_dropped']``.
    A damaged archive (a location's events cut short or unreadable, a local definition file
    missing) is an error naming the file; with ``keep_going`` the events read until then are
    kept and the trace is marked incomplete (``meta['damaged']`` says what happened).  Events
    are read by the OTF2 C library with minitrace's compiled callbacks (converters/native/),
    definitions with the otf2 bindings.
    """
    path = find_anchor(anchor)
    _import_otf2()
    if path.suffix != ".otf2":
        raise MinitraceError("not an OTF2 anchor file (expected a .otf2 file)", str(path))
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError as e:
        raise MinitraceError(f"cannot read: {e.strerror}", str(path)) from None
    if b"OTF2" not in head[:8]:                  # e.g. 03 'B' 'OTF2': the anchor's magic
        raise MinitraceError("not an OTF2 anchor file (no OTF2 header)", str(path))
    if not path.with_suffix(".def").exists():
        raise MinitraceError(f"the archive's global definitions are missing (its anchor "
                             f"{path.name} needs them beside it)", str(path.with_suffix(".def")))
    noise: list[str] = []
    try:
        with _library_noise(noise):
            r = _read_events(path, keep_going)
    except MinitraceError:
        raise
    except _Unreadable as e:
        raise MinitraceError(f"cannot read OTF2 archive: {_summary(noise, e.cause)}{e.detail}",
                             str(e.where)) from None
    except Exception as e:  # the bindings raise plain Exceptions for corrupt definitions
        raise MinitraceError(f"cannot read OTF2 archive: {_summary(noise, e)}",
                             str(path)) from None
    d, rows, hosts, other, damaged, counter, unit = r
    if damaged and noise:
        damaged.append(f"OTF2 library: {_summary(noise)}")
    try:
        data, info = assemble(rows, d, keep_regions)
    except MinitraceError as e:
        raise MinitraceError(str(e), str(path)) if e.path is None else e from None
    fin = np.zeros(d.nranks, bool)
    fin[data.rank_of()[data.actions["kind"] == _C["finalize"]]] = True
    meta = {
        "producer": "Score-P/OTF2 (converted by minitrace)",
        "source_format": "otf2",
        "source_path": os.path.abspath(path),
        "clock_resolution": 1.0 / d.res,
        "complete": not damaged and bool(fin.all()),
    }
    if damaged:
        meta["damaged"] = damaged
    if hosts:
        meta["hosts"] = sorted(set(hosts))
        meta["rank_to_node"] = [sorted(set(hosts)).index(h) for h in hosts]
    meta["source_messages"] = info["messages"]
    meta["volume_unit"] = unit
    meta["volume_source"] = (f"{counter} counter (OTF2 metric)" if counter else
                             "time outside MPI calls (no PAPI_TOT_INS or PAPI_TOT_CYC metric)")
    if info["unmapped"]:
        meta["unmapped_events"] = dict(info["unmapped"])
    if other:
        meta["non_rank_locations_skipped"] = other
    if info["comms_not_named"]:
        meta["comm_calls_without_comms"] = dict(sorted(info["comms_not_named"].items()))
    if info["linked_in_order"]:
        meta["requests_linked_in_order"] = dict(sorted(info["linked_in_order"].items()))
    if info["unread_tests"]:
        meta["tests_outcome_unknown"] = info["unread_tests"]
    if info["vectors_estimated"]:
        meta["collective_vectors_estimated"] = dict(sorted(info["vectors_estimated"].items()))
    if info["io_without_file"]:
        meta["io_calls_without_mpi_io_handles"] = dict(sorted(info["io_without_file"].items()))
    if info["user_regions"] and not keep_regions:
        meta["user_regions_dropped"] = info["user_regions"] // 2
    data.meta = {**meta, **data.meta, "volume_unit": unit}
    return data


class _Unreadable(Exception):
    """The events stopped being readable: the library's error, the file to name (a location
    cut short, else the anchor) and what to add to the message."""

    def __init__(self, cause: Exception, where: Path, detail: str):
        super().__init__(str(cause))
        self.cause, self.where, self.detail = cause, where, detail


def _location_file(anchor: Path, loc, ext: str) -> Path:
    """``<archive>/<location id>.<ext>``: where OTF2 keeps a location's events (evt) or local
    definitions (def)."""
    return anchor.parent / anchor.stem / f"{loc._ref}.{ext}"


def _otf2_creator(tr) -> str:
    """The creator the archive's anchor names ('' if none; Score-P's: "Score-P <version>")."""
    import _otf2      # (the bindings' Reader has no property for it)
    return _otf2.Reader_GetCreator(tr.handle) or ""


def _read_events(path: Path, keep_going: bool):
    """(definitions, event rows, hosts, locations of other threads with events, damage notes,
    volume counter, its unit) of the archive."""
    otf2 = _import_otf2()
    damaged: list[str] = []

    def damage(what: str, where: Path) -> None:
        if not keep_going:
            raise MinitraceError(what + " (--keep-going keeps what is readable)", str(where))
        damaged.append(f"{where}: {what}")

    if not can_open(path):
        raise _Unreadable(Exception("the OTF2 library cannot open this anchor"), path, "")
    try:
        reader = otf2.reader.open(str(path))            # reads the global definitions
    except Exception as e:
        raise _Unreadable(e, path.with_suffix(".def"), "") from None
    with reader as tr:
        defs = tr.definitions
        ours = _otf2_creator(tr).split(" ")[0] == CREATOR
        d, rank_of, member, counter, unit = _definitions(defs, ours)
        if not d.nranks:
            raise MinitraceError("no MPI locations in this archive (not an MPI trace?)",
                                 str(path))
        for loc in rank_of:
            evt = _location_file(path, loc, "evt")
            if loc.number_of_events and not evt.exists():
                raise MinitraceError(f"the events of rank {rank_of[loc]} are missing",
                                     str(evt))
        local = {loc: _location_file(path, loc, "def").exists() for loc in rank_of}
        if any(local.values()):
            for loc in (loc for loc, ok in local.items() if not ok):
                damage(f"the local definitions of rank {rank_of[loc]} are missing (its "
                       "communicators and other mapped ids would be wrong)",
                       _location_file(path, loc, "def"))
        locs = sorted(defs.locations, key=lambda loc: loc._ref)
        hosts = _hosts(defs, rank_of)
    expected = np.zeros(d.nranks, np.uint64)
    for loc, r in rank_of.items():
        expected[r] = loc.number_of_events
    got = read_events(path, np.array([loc._ref for loc in locs], np.uint64),
                      np.array([rank_of.get(loc, -1) for loc in locs], np.int32),
                      expected, member)
    seen = dict(zip(locs, got.seen.tolist()))
    other = sum(1 for loc in locs if loc not in rank_of and seen[loc])
    why = got.error
    if got.damaged_rank >= 0:
        loc = next(loc for loc, r in rank_of.items() if r == got.damaged_rank)
        why = (f"rank {got.damaged_rank}'s events go back in time after {seen[loc] - 1} of "
               "them (a damaged chunk)")
    elif got.unknown_location is not None:
        why = f"an event of location {got.unknown_location}, which the definitions do not define"
    if why and got.local_defs_of is not None:
        loc = next(loc for loc in locs if loc._ref == got.local_defs_of)
        where = _location_file(path, loc, "def")
        who = f"rank {rank_of[loc]}" if loc in rank_of else f"location {loc._ref}"
        if not keep_going:
            raise _Unreadable(Exception(why), where, f" (the local definitions of {who}; "
                              "--keep-going keeps what is readable)")
        damaged.append(f"{where}: the local definitions of {who} are unreadable, no events "
                       f"read ({why})")
    elif why:
        short = [loc for loc in rank_of if seen[loc] != loc.number_of_events]
        where = _location_file(path, short[0], "evt") if short else path
        ranks = ", ".join(str(rank_of[loc]) for loc in short)
        if not keep_going:
            raise _Unreadable(Exception(why), where, f" (events of rank(s) {ranks} cut short; "
                              "--keep-going keeps what is readable)" if short else "")
        damaged.append(f"{where}: reading stopped at an unreadable event, rank(s) {ranks} "
                       f"short of their events ({why})")
    else:
        for loc, r in rank_of.items():
            if seen[loc] < loc.number_of_events:
                damage(f"rank {r}: {seen[loc]} of the {loc.number_of_events} events the "
                       "definitions announce (cut short?)", _location_file(path, loc, "evt"))
    return d, got.rows, hosts, other, damaged, counter, unit


@contextmanager
def _library_noise(lines: list[str]):
    """Collect into ``lines`` what the OTF2 C library prints on stderr (file descriptor 2)
    meanwhile, instead of letting it reach the user's terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines.extend(tmp.read().decode("utf-8", "replace").splitlines())


def _summary(noise: list[str], exc: Exception | None = None) -> str:
    """One line out of the OTF2 library's messages (the file it could not open, else its
    first error) and the exception (left out when it only repeats that error's kind, as the
    library's 'INVALID_DATA (80): Invalid or inconsistent record data' does)."""
    msgs = [ln.split(": error: ", 1)[1] for ln in noise if ": error: " in ln]
    posix = next((m for m in msgs if "POSIX: '" in m), None)
    first = (posix.split(":", 1)[0] + ": " + posix.split("POSIX: ", 1)[1]) if posix else \
        (msgs[0] if msgs else "")
    why = (str(exc).splitlines() or [type(exc).__name__])[0] if exc is not None else ""
    if first and why and first.startswith(why.split("): ", 1)[-1]):
        why = ""
    out = "; ".join(x for x in (first, why) if x)
    if len(msgs) > 1:
        out += f" (and {len(msgs) - 1} more OTF2 library message(s))"
    return out or "unknown error"


#: Counters that make the compute volume, in order of preference, and the unit each gives.
VOLUME_COUNTERS = (("PAPI_TOT_INS", "instructions"), ("PAPI_TOT_CYC", "cycles"))


def _volume_counter(defs) -> tuple[str | None, str]:
    """(metric name, volume unit) of the counter the compute volume is measured with: the
    instructions counter when the archive has it, else cycles, else (None, 'seconds')."""
    names = {m.name for m in defs.metric_members}
    return next(((n, u) for n, u in VOLUME_COUNTERS if n in names), (None, "seconds"))


def _hosts(defs, rank_of) -> list[str]:
    """Node name of each rank (the system-tree parent of its location group)."""
    out = [""] * len(rank_of)
    for loc, r in rank_of.items():
        node = getattr(loc.group, "system_tree_parent", None)
        out[r] = node.name if node is not None else ""
    return out if all(out) else []


# == writing ===================================================================================
_ROLE = {"send": "POINT2POINT", "recv": "POINT2POINT", "p2p": "POINT2POINT",
         "persist": "POINT2POINT", "complete": "FUNCTION", "meta": "FUNCTION", "comm": "FUNCTION",
         "ncoll": "COLL_OTHER", "incoll": "COLL_OTHER", "pcoll": "COLL_OTHER", "io": "FILE_IO",
         "win": "RMA", "rma": "RMA", "rsync": "RMA"}
_COLL_ROLE = {"barrier": "BARRIER", "bcast": "COLL_ONE2ALL", "scatter": "COLL_ONE2ALL",
              "scatterv": "COLL_ONE2ALL", "gather": "COLL_ALL2ONE", "gatherv": "COLL_ALL2ONE",
              "reduce": "COLL_ALL2ONE", "scan": "COLL_OTHER", "exscan": "COLL_OTHER"}


#: the first word of the creator of the archives ``convert --to otf2`` writes (then the
#: version): the reader takes minitrace's Enter attributes (otf2_io.OURS_ONLY) and
#: intercommunicators (``INTERCOMM``) only from those
CREATOR = "minitrace"
#: the name of an intercommunicator's comm definition (then its id): a comm whose group is
#: both its groups, its sizes as the model holds them (they follow intercommunicator rules)
INTERCOMM = "intercommunicator"
#: OTF2's COLLECTIVE_ROOT_SELF and COLLECTIVE_ROOT_THIS_GROUP (an intercommunicator's MPI_ROOT,
#: and MPI_PROC_NULL in the root's group), which the reader reads as peer -1, as the model has
_ROOT_SELF, _ROOT_THIS_GROUP = 0xFFFFFFFE, 0xFFFFFFFD
#: the flags no OTF2 event says, which an Enter attribute carries (MPI_Flags): wildcard
#: receives and MPI_IN_PLACE (public IMB-MPI1's 11,424 MPI_ANY_TAG receives at 4 ranks came
#: back without it, the only field its round trip lost unsaid)
_FLAGS_UNSAID = K.FLAG_ANY_SOURCE | K.FLAG_ANY_TAG | K.FLAG_IN_PLACE
_MAKES_INTERCOMM = K.mask({"intercomm_create", "intercomm_create_from_groups", "comm_spawn",
                           "comm_spawn_multiple"})


def mpi_name(kind: str) -> str:
    """``reduce_scatter_block`` -> ``MPI_Reduce_scatter_block``."""
    return "MPI_" + kind[:1].upper() + kind[1:]


def write_otf2(data: TraceColumns, out_dir, archive_name: str = "traces",
               timer_resolution: int = 1_000_000_000) -> dict:
    """Write ``data`` as an OTF2 archive ``out_dir/<archive_name>.otf2`` (+ .def, events).

    Every MPI action becomes an Enter/Leave of its MPI region with the matching message,
    collective, I/O (MPI-IO: converters/otf2_io.py) or RMA events (one-sided calls:
    ``_RmaWriter``); compute actions are the gaps
    between calls.  Untimed traces (NaN times)
    get a synthetic clock: compute advances by its volume when the unit is seconds, every call
    by one tick.  Returns {kind name: count} of the actions OTF2 cannot hold whole: written as
    regions only (no OTF2 event carries their arguments: persistent/partitioned requests,
    probes, ...) or, for v-collectives, with totals but without their per-peer vector; and,
    under a key that says why, tests of requests the recording does not know whose outcome the
    archive cannot say (``_QUIET_TEST``), waitany/testany vectors (``_ANY_VECTOR``) and the
    completions of requests written as regions only (``_UNWRITTEN``).
    The archive is written whole or not at all: into a temporary directory beside ``out_dir``,
    renamed into place once the library has closed it without an error (a full disk: one
    line naming ``out_dir``, the library's messages summarised in it, nothing left behind).
    """
    otf2 = _import_otf2()
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise MinitraceError("output directory exists and is not empty", str(out))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise write_error(e, out) from None
    times = _write_times(data, timer_resolution)
    lossy: Counter = Counter()
    noise: list[str] = []
    with replacing_dir(out) as tmp:
        try:
            with _library_noise(noise):
                _write_archive(otf2, data, tmp, archive_name, timer_resolution, times, lossy)
        except Exception as e:
            if not (noise or isinstance(e, OSError) or type(e).__module__.startswith("_otf2")):
                raise    # not the library's nor the system's: a bug, said as one
            raise MinitraceError(f"cannot write the OTF2 archive: {_write_failure(noise, e)}",
                                 str(out)) from None
        if any(": error: " in ln for ln in noise):   # the library can fail without raising
            raise MinitraceError(f"cannot write the OTF2 archive: {_write_failure(noise)}",
                                 str(out))
    return dict(lossy)


def _write_failure(noise: list[str], exc: Exception | None = None) -> str:
    """The cause of a failed write in a few words, e.g. 'No space left on device': the OTF2
    library's first error (it names the hidden temporary, so its file is left out), else the
    exception."""
    msgs = [ln.split(": error: ", 1)[1] for ln in noise if ": error: " in ln]
    if msgs:
        return msgs[0].split(": ", 1)[0]
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _write_archive(otf2, data, path: Path, archive_name, timer_resolution, times, lossy):
    """Write the archive in ``path``; the library's writer is closed (and its files) even when
    writing fails, so that it says nothing more (a traceback) when it is garbage collected."""
    import _otf2      # the bindings' C layer: to release an archive whose close failed
    tr = otf2.writer.Writer(str(path), archive_name=archive_name,
                            timer_resolution=timer_resolution)
    try:
        tr.creator = f"{CREATOR} {__version__}"
        _write_contents(otf2, tr, data, times, lossy)
        tr.close()
    except BaseException:
        if tr._handle is not None:   # not closed: release the archive, once
            handle, tr._handle = tr._handle, None
            try:
                _otf2.Archive_Close(handle)
            except Exception:
                pass                 # already failing: the first error is the one to report
        raise


def _write_contents(otf2, tr, data, times, lossy):
    """The definitions and every rank's events, through the open writer ``tr``."""
    d = tr.definitions
    hosts = data.meta.get("hosts") or ["localhost"]
    r2n = data.meta.get("rank_to_node") or [0] * data.nranks
    machine = d.system_tree_node("machine")
    nodes = [d.system_tree_node(h, parent=machine) for h in hosts]
    locs = []
    for r in range(data.nranks):
        node = nodes[r2n[r]] if r < len(r2n) and r2n[r] < len(nodes) else nodes[0]
        lg = d.location_group(f"MPI Rank {r}", system_tree_parent=node)
        locs.append(d.location("Master thread", group=lg))
    d.group("", group_type=otf2.GroupType.COMM_LOCATIONS, paradigm=otf2.Paradigm.MPI,
            members=locs)
    comms = {}
    inter = _intercomms(data)
    for cid, members in sorted(data.comms.items()):
        traced = [int(m) for m in members if 0 <= m < data.nranks]   # (not spawned processes)
        g = d.group("", group_type=otf2.GroupType.COMM_GROUP, paradigm=otf2.Paradigm.MPI,
                    members=[locs[m] for m in traced])
        name = "MPI_COMM_WORLD" if cid == 0 else f"{INTERCOMM if cid in inter else 'comm'} {cid}"
        comms[cid] = (d.comm(name, group=g), traced)
    regions = {}

    def region(kind: str):
        if kind not in regions:
            base = K.BLOCKING_OF.get(kind, kind)
            role = _COLL_ROLE.get(base, "COLL_ALL2ALL") if kind in K.ALL_COLLECTIVES \
                else _ROLE[K.CATEGORY[kind]]
            regions[kind] = d.region(mpi_name(kind), region_role=getattr(otf2.RegionRole, role),
                                     paradigm=otf2.Paradigm.MPI, source_file="MPI")
        return regions[kind]

    user = {}

    def user_region(name: str):
        if name not in user:
            user[name] = d.region(name, region_role=otf2.RegionRole.FUNCTION,
                                  paradigm=otf2.Paradigm.USER)
        return user[name]

    io = IO.Definitions(otf2, d, machine, {c: v[0] for c, v in comms.items()})
    roots = _roots_of_intercomms(data, inter)
    rma = _RmaDefinitions(otf2, d, data, comms, locs)
    for r in range(data.nranks):
        w = tr.event_writer_from_location(locs[r])
        _write_rank(otf2, w, data, r, times[data.rank_slice(r)], comms, (inter, roots),
                    region, user_region, lossy, io, rma)


def _roots_of_intercomms(data: TraceColumns, inter: frozenset) -> set:
    """The rows of the rooted collectives on intercommunicators whose rank is the root
    (MPI_ROOT): those with peer -1 that the remote group's members of the same call (the n-th
    collective on the communicator) name as their root.  The model holds MPI_ROOT and the
    root group's MPI_PROC_NULL alike (peer -1); OTF2 tells them apart (its
    COLLECTIVE_ROOT_SELF and COLLECTIVE_ROOT_THIS_GROUP)."""
    a = data.actions
    rows = np.flatnonzero(K.mask(K.ORDERED_COLLECTIVES)[a["kind"]] &
                          np.isin(a["comm"], list(inter)))
    if not len(rows):
        return set()
    rank, comm = data.rank_of(rows), a["comm"][rows].astype(np.int64)
    order = np.lexsort((rows, rank, comm))
    rows, rank, comm = rows[order], rank[order], comm[order]
    key = comm * (data.nranks + 1) + rank
    first = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
    seq = np.arange(len(rows)) - np.repeat(first, np.diff(np.r_[first, len(rows)]))
    named = {}
    for c, q, p in zip(comm.tolist(), seq.tolist(), a["peer"][rows].tolist()):
        if p >= 0:
            named[(c, q)] = p
    rooted = K.mask(K.ROOTED)[a["kind"][rows]] & (a["peer"][rows] < 0)
    return {r for r, c, q, k in zip(rows[rooted].tolist(), comm[rooted].tolist(),
                                    seq[rooted].tolist(), rank[rooted].tolist())
            if named.get((c, q)) == k}


def _intercomms(data: TraceColumns) -> frozenset:
    """The ids of the intercommunicators: the comms of the actions with INTERCOMM (but the
    communicator creations', whose flag may be their new communicator's), and the new
    communicators of the calls that make intercommunicators."""
    a = data.actions
    flagged = (a["flags"] & K.FLAG_INTERCOMM) != 0
    made = K.mask(K.NEW_COMM_KINDS)[a["kind"]]
    return frozenset(a["comm"][flagged & ~made].tolist()) | \
        frozenset(a["request"][flagged & _MAKES_INTERCOMM[a["kind"]]].tolist())


def _write_times(data: TraceColumns, res: int) -> np.ndarray:
    """Integer (t_start, t_end) ticks per action; synthetic when the trace is untimed.  A
    location's events must not go back in time: the calls of a rank's threads that overlap
    (MPI_THREAD_MULTIPLE) are written one after the other."""
    a = data.actions
    t = np.stack([a["t_start"], a["t_end"]], axis=1)
    out = np.zeros((len(a), 2), dtype=np.int64)
    finite = np.isfinite(t).all(axis=1)
    if finite.all() and len(a):
        t0 = np.nanmin(t[:, 0])
        out = np.round((t - t0) * res).astype(np.int64)
        for r in range(data.nranks):
            sl = data.rank_slice(r)
            out[sl] = np.maximum.accumulate(out[sl].reshape(-1)).reshape(-1, 2)
        return out
    sec = data.meta.get("volume_unit") == "seconds"
    compute = _C["compute"], _C["sleep"]
    for r in range(data.nranks):
        sl = data.rank_slice(r)
        now = 0
        for i in range(sl.start, sl.stop):
            if a["kind"][i] in compute:
                now += max(1, int(round(a["volume"][i] * res))) if sec else 1
                continue
            out[i] = now, now + 1
            now += 1
    return out


#: a test that writes no event (no request the recording knows, or a persistent one) reads
#: back as MPI says a test of MPI_REQUEST_NULL ends: MPI_Test and MPI_Testall completed,
#: MPI_Testany and MPI_Testsome not; the others are said, keyed by this
_QUIET_TEST = {True: "test, testall (not completed, of requests OTF2 has no event for: "
                     "read back as completed, as tests of MPI_REQUEST_NULL)",
               False: "testany, testsome (completed, of requests OTF2 has no event for: "
                      "read back as not completed, as tests of MPI_REQUEST_NULL)"}


#: a waitany or testany with a vector (of request ids: MPI-IO's or MPI's alike) is outside the
#: format (docs/FORMAT.md: they name their request in ``request``; the recorder writes a
#: failed one with none): the vector is not written, and said
_ANY_VECTOR = ("waitany, testany (their vector of request ids, which the format does not "
               "give them: not written)")
#: a completion of a request no event was written for (a persistent or partitioned one,
#: written as regions only, or one the recording does not know) reads back without it (a
#: wait of a persistent receive came back completing nothing, its PERSISTENT flag lost, unsaid)
_UNWRITTEN = ("wait, waitany, waitall, waitsome, test, testany, testall, testsome (of "
              "requests written as regions only, e.g. persistent or partitioned ones: read "
              "back without them)")


class _RmaDefinitions:
    """The archive's one-sided definitions, each made once: a window (``RmaWin``, on its
    communicator) per collective window creation (the n-th creation of each member on a
    communicator: they make it together), a window of its own for a rank's window whose
    creation the trace lacks, an MPI group per win_post/win_start group, the attributes of
    ``otf2_columns.RMA_ATTRIBUTES``."""

    def __init__(self, otf2, d, data: TraceColumns, comms: dict, locs: list):
        self.otf2, self.d, self.comms, self.locs = otf2, d, comms, locs
        self.of: dict[tuple[int, int], object] = {}      # (rank, window id) -> RmaWin
        self.groups: dict[tuple, object] = {}
        self.attributes: dict[str, object] = {}
        a = data.actions
        made: dict[tuple[int, int], object] = {}         # (comm, n-th creation) -> RmaWin
        creations = K.mask(K.WINDOW_CREATIONS)
        for r in range(data.nranks):
            sl = data.rank_slice(r)
            seen: Counter = Counter()
            for i in (sl.start + np.flatnonzero(creations[a["kind"][sl]] & (a["tag"][sl] >= 0))
                      ).tolist():
                c = int(a["comm"][i])
                key = (c, seen[c])
                seen[c] += 1
                if key not in made:
                    made[key] = d.rma_win(f"MPI window {len(made)}", self.comm(c))
                self.of.setdefault((r, int(a["tag"][i])), made[key])

    def comm(self, cid: int):
        return self.comms.get(cid, self.comms[0])[0]

    def window(self, rank: int, wid: int, cid: int):
        if (rank, wid) not in self.of:
            self.of[(rank, wid)] = self.d.rma_win(f"MPI window {wid} of rank {rank}",
                                                  self.comm(cid))
        return self.of[(rank, wid)]

    def group(self, members: tuple):
        if members not in self.groups:
            otf2 = self.otf2
            self.groups[members] = self.d.group("", group_type=otf2.GroupType.COMM_GROUP,
                                                paradigm=otf2.Paradigm.MPI,
                                                members=[self.locs[m] for m in members])
        return self.groups[members]

    def attribute(self, name: str):
        if name not in self.attributes:
            text, typ = RMA_ATTRIBUTES[name]
            self.attributes[name] = self.d.attribute(name, text, getattr(self.otf2.Type, typ))
        return self.attributes[name]


#: the OTF2 atomic type of each accumulating one-sided operation
_ATOMIC = {"accumulate": "ACCUMULATE", "raccumulate": "ACCUMULATE",
           "get_accumulate": "FETCH_AND_ACCUMULATE", "rget_accumulate": "FETCH_AND_ACCUMULATE",
           "fetch_and_op": "FETCH_AND_ACCUMULATE", "compare_and_swap": "COMPARE_AND_SWAP"}
#: the vector length of each one-sided kind that has one (docs/FORMAT.md)
_RMA_VECTOR = {**{k: 2 for k in K.WINDOW_CREATIONS - {"win_create_dynamic"}},
               **{k: 1 for k in K.RMA_OPS}, "win_lock": 1}
#: the operations completed by a request (their matching id is the request id)
_RMA_REQUESTS = K.RMA_OPS & K.REQUEST_KINDS
#: the synchronizations that complete a window's pending operations at their targets (the
#: operations to their target, for those with one)
_RMA_COMPLETING = frozenset({"win_fence", "win_unlock", "win_unlock_all", "win_flush",
                             "win_flush_all", "win_complete", "win_free"})


class _RmaWriter:
    """A rank's one-sided events, as Score-P writes MPI RMA, through the event writer ``w``:
    the window creations and MPI_Win_free (RmaWinCreate / RmaWinDestroy between
    RmaCollectiveBegin and RmaCollectiveEnd), the fences (RmaCollectiveEnd), the operations
    (RmaPut, RmaGet, RmaAtomic: the target as a rank of the window's communicator, the bytes,
    a matching id: the request of an ``r*`` one, whose wait writes its
    RmaOpCompleteNonBlocking, or failed test its RmaOpTest; the others' RmaOpCompleteRemote
    in the synchronization that completes them), the locks (RmaRequestLock, its type, and
    RmaReleaseLock), the flushes and MPI_Win_sync (RmaSync, MEMORY), win_post/win_start
    (RmaGroupSync of their group), win_complete (RmaSync NOTIFY_OUT), win_wait/win_test
    (RmaSync NOTIFY_IN).  What no event holds (a creation's size and displacement unit, an
    operation's target displacement) are attributes of the call's Enter."""

    def __init__(self, otf2, w, defs: _RmaDefinitions, rank: int, acts: np.ndarray, vector,
                 comm_rank, undefined: int):
        self.otf2, self.E, self.w, self.defs = otf2, otf2.events, w, defs
        self.rank, self.acts, self.vector = rank, acts, vector
        self.comm_rank, self.undefined = comm_rank, undefined     # (_write_rank's)
        self.pending: dict[int, list[tuple[int, int]]] = {}  # window -> [(matching id, target)]
        self.locks: dict[tuple[int, int], int] = {}          # (window, target) -> lock id

    def _window(self, i: int):
        wid = int(self.acts["tag"][i])
        return None if wid < 0 else self.defs.window(self.rank, wid, int(self.acts["comm"][i]))

    def _remote(self, i: int) -> int:
        """The target of call ``i`` as a rank of its window's communicator (undefined: none,
        or not a member)."""
        return self.comm_rank(self.acts["comm"][i], int(self.acts["peer"][i]))[1]

    def enter_attributes(self, i: int, name: str) -> dict | None:
        v = self.vector(i)
        if name in K.WINDOW_CREATIONS and len(v) == 2:
            return {self.defs.attribute("MPI_Win_size"): int(v[0]),
                    self.defs.attribute("MPI_Disp_unit"): int(v[1])}
        if name in K.RMA_OPS and len(v) == 1:
            return {self.defs.attribute("MPI_Target_disp"): int(v[0])}
        return None

    def _complete_remote(self, wid: int, win, t: int, target: int | None) -> None:
        left = []
        for mid, peer in self.pending.get(wid, ()):
            if target is None or peer == target:
                self.w(self.E.RmaOpCompleteRemote(t, win, mid))
            else:
                left.append((mid, peer))
        self.pending[wid] = left

    def events(self, i: int, name: str, t0: int, t1: int) -> bool:
        """The RMA events of call ``i`` (whether it is written whole)."""
        win = self._window(i)
        if win is None:
            return False                    # (a window the recording does not know)
        otf2, E, w, acts = self.otf2, self.E, self.w, self.acts
        wid, peer, remote = int(acts["tag"][i]), int(acts["peer"][i]), self._remote(i)
        v = self.vector(i)
        whole = (peer < 0 or remote != self.undefined) and \
            len(v) in ((1,) if name == "win_lock" else (0, _RMA_VECTOR.get(name, 0)))
        level = otf2.RmaSyncLevel.PROCESS | otf2.RmaSyncLevel.MEMORY
        undefined = self.undefined
        if name in _RMA_COMPLETING and name not in ("win_fence", "win_free"):
            self._complete_remote(wid, win, t1, peer if name in ("win_unlock", "win_flush")
                                  else None)
        if name in K.WINDOW_CREATIONS:
            op = otf2.CollectiveOp.CREATE_HANDLE if name in ("win_create", "win_create_dynamic") \
                else otf2.CollectiveOp.CREATE_HANDLE_AND_ALLOCATE
            w(E.RmaCollectiveBegin(t0))
            w(E.RmaWinCreate(t1, win))
            w(E.RmaCollectiveEnd(t1, op, level, win, undefined, 0, 0))
        elif name == "win_free":
            w(E.RmaCollectiveBegin(t0))
            self._complete_remote(wid, win, t1, None)
            w(E.RmaWinDestroy(t1, win))
            w(E.RmaCollectiveEnd(t1, otf2.CollectiveOp.DESTROY_HANDLE, level, win, undefined,
                                 0, 0))
        elif name == "win_fence":
            w(E.RmaCollectiveBegin(t0))
            self._complete_remote(wid, win, t1, None)
            w(E.RmaCollectiveEnd(t1, otf2.CollectiveOp.BARRIER, level, win, undefined, 0, 0))
        elif name in K.RMA_OPS:
            req = int(acts["request"][i])
            if name in _RMA_REQUESTS:
                whole = whole and req >= 0
            mid = req if name in _RMA_REQUESTS and req >= 0 else (1 << 62) + i
            sent, received = int(acts["bytes_sent"][i]), int(acts["bytes_recv"][i])
            if name in ("put", "rput"):
                w(E.RmaPut(t0, win, remote, sent, mid))
                whole = whole and not received
            elif name in ("get", "rget"):
                w(E.RmaGet(t0, win, remote, received, mid))
                whole = whole and not sent
            else:
                w(E.RmaAtomic(t0, win, remote, getattr(otf2.RmaAtomicType, _ATOMIC[name]), sent,
                              received, mid))
            if name not in _RMA_REQUESTS:
                self.pending.setdefault(wid, []).append((mid, peer))
        elif name in ("win_lock", "win_lock_all"):
            target = peer if name == "win_lock" else -1
            self.locks[(wid, target)] = i
            exclusive = name == "win_lock" and len(v) == 1 and int(v[0]) == 1
            w(E.RmaRequestLock(t0, win, remote if name == "win_lock" else undefined, i,
                               otf2.LockType.EXCLUSIVE if exclusive else otf2.LockType.SHARED))
        elif name in ("win_unlock", "win_unlock_all"):
            target = peer if name == "win_unlock" else -1
            w(E.RmaReleaseLock(t1, win, remote if name == "win_unlock" else undefined,
                               self.locks.pop((wid, target), i)))
        elif name in ("win_flush", "win_flush_all", "win_flush_local", "win_flush_local_all",
                      "win_sync"):
            w(E.RmaSync(t1, win, remote, otf2.RmaSyncType.MEMORY))
        elif name in ("win_post", "win_start"):
            members = tuple(int(m) for m in v if 0 <= m < len(self.defs.locs))
            whole = len(members) == len(v)
            w(E.RmaGroupSync(t1, level, win, self.defs.group(members)))
        elif name == "win_complete":
            w(E.RmaSync(t1, win, undefined, otf2.RmaSyncType.NOTIFY_OUT))
        elif name in ("win_wait", "win_test"):
            w(E.RmaSync(t1, win, undefined, otf2.RmaSyncType.NOTIFY_IN))
        else:
            return False
        return whole

    def complete(self, j: int, t: int, done: bool) -> bool:
        """The end (``done``) or a failed test of the ``r*`` operation call ``j`` made."""
        win = self._window(j)
        if win is None:
            return False
        ev = self.E.RmaOpCompleteNonBlocking if done else self.E.RmaOpTest
        self.w(ev(t, win, int(self.acts["request"][j])))
        return True


def _write_rank(otf2, w, data, rank, ticks, comms, intercomms, region, user_region, lossy,
                io_defs, rma_defs):
    """A rank's events; ``intercomms``: (the intercommunicators' ids, the rows of the
    collectives whose rank is an intercommunicator's root: ``_roots_of_intercomms``)."""
    E = otf2.events
    inter, inter_roots = intercomms
    lo = data.rank_slice(rank).start
    acts = data.actions[data.rank_slice(rank)]
    io = IO.Writer(otf2, w, io_defs, rank, acts, lambda i: data.vector(lo + i))
    created: dict[int, int] = {}      # request id -> index of the creating action in ``acts``
    took = (acts["kind"] == _C["cancel"]) & ((acts["flags"] & K.FLAG_COMPLETED) != 0)
    cancelled = set(acts["request"][took].tolist())    # (request ids are unique per rank)
    undefined_root = otf2.Undefined.UINT32.value if hasattr(otf2.Undefined.UINT32, "value") \
        else 0xFFFFFFFF

    def comm_rank(cid, world):
        comm, members = comms.get(int(cid), comms[0])
        return comm, (members.index(world) if world in members else undefined_root)

    rma = _RmaWriter(otf2, w, rma_defs, rank, acts, lambda i: data.vector(lo + i), comm_rank,
                     undefined_root)

    def complete(i, req, t, done) -> bool:
        """Write the event of ``req``'s completion (or failed test); whether there is one (a
        request the recording made by a non-blocking call: not a persistent one)."""
        j = created.get(int(req))
        if j is None:
            return False
        made = _N[int(acts["kind"][j])]
        if made in K.NONBLOCKING_IO:
            io.complete(j, t, done)
        elif made in K.RMA_OPS:
            return rma.complete(j, t, done)
        elif not done:
            w(E.MpiRequestTest(t, int(req)))
        elif made in K.NONBLOCKING_SENDS:
            w(E.MpiIsendComplete(t, int(req)))
        elif made == "irecv" and int(req) in cancelled:
            w(E.MpiRequestCancelled(t, int(req)))     # (Score-P's: nothing was received)
        elif made == "irecv":
            comm, src = comm_rank(acts["comm"][j], int(acts["peer"][j]))
            w(E.MpiIrecv(t, src, comm, int(acts["tag"][j]) & 0xFFFFFFFF,
                         int(acts["bytes_recv"][j]), int(req)))
        elif made in K.NONBLOCKING_COLLECTIVES:
            coll_end(j, t, int(req))
        else:
            return False
        return True

    def cancel_attributes(i) -> dict | None:
        """An MPI_Cancel's request and its communicator, and for one that took (COMPLETED)
        the posted source, tag and size of the receive it cancelled (no OTF2 event holds
        them: otf2_io.ATTRIBUTES)."""
        if int(acts["request"][i]) < 0:
            return None
        at = io_defs.attribute
        out = {at("MPI_Request"): int(acts["request"][i]),
               at("MPI_Comm"): io_defs.comm(int(acts["comm"][i]))}
        if acts["flags"][i] & K.FLAG_COMPLETED:
            out.update({at("MPI_Source"): int(acts["peer"][i]), at("MPI_Tag"): int(acts["tag"][i]),
                        at("MPI_Bytes"): int(acts["bytes_recv"][i])})
        return out

    def coll_end(j, t, req=None):
        k = int(acts["kind"][j])
        comm, members = comms.get(int(acts["comm"][j]), comms[0])
        me = members.index(rank) if rank in members else 0
        root = undefined_root
        is_root = False
        if int(acts["peer"][j]) >= 0 and _N[k] in K.ROOTED:
            root = members.index(int(acts["peer"][j])) if int(acts["peer"][j]) in members \
                else undefined_root
            is_root = int(acts["peer"][j]) == rank
        elif _N[k] in K.ROOTED and int(acts["comm"][j]) in inter:
            root = _ROOT_SELF if lo + j in inter_roots else _ROOT_THIS_GROUP
        s, rcv = int(acts["bytes_sent"][j]), int(acts["bytes_recv"][j])
        if int(acts["comm"][j]) not in inter:
            s, rcv = _to_otf2(k, s, rcv, len(members), me, is_root)
        op = getattr(otf2.CollectiveOp, K.BLOCKING_OF.get(_N[k], _N[k]).upper())
        if req is None:
            w(E.MpiCollectiveEnd(t, op, comm, root, s, rcv))
        else:
            w(E.NonBlockingCollectiveComplete(t, op, comm, root, s, rcv, req))

    for i in range(len(acts)):
        k = int(acts["kind"][i])
        name = _N[k]
        t0, t1 = int(ticks[i, 0]), int(ticks[i, 1])
        if name in K.NON_MPI:                # not MPI regions: compute is the gap between calls
            if name in ("region_begin", "region_end"):
                tag = int(acts["tag"][i])
                rname = data.strings[tag] if 0 <= tag < len(data.strings) else f"region {tag}"
                ev = E.Enter if name == "region_begin" else E.Leave
                w(ev(t0, user_region(rname)))
            continue
        reg = region(name)
        attributes = io.enter_attributes(i, name) if name in K.IO_KINDS \
            else cancel_attributes(i) if name == "cancel" \
            else rma.enter_attributes(i, name) if name in K.ONE_SIDED else None
        unsaid = _FLAGS_UNSAID | (K.FLAG_COMPLETED if name == "win_test" else 0)
        if acts["flags"][i] & unsaid:
            attributes = {**(attributes or {}), io_defs.attribute("MPI_Flags"):
                          int(acts["flags"][i] & unsaid)}
        w(E.Enter(t0, reg, attributes=attributes))
        peer, tag = int(acts["peer"][i]), int(acts["tag"][i]) & 0xFFFFFFFF
        req = int(acts["request"][i])
        tested = name in K.TESTS and not acts["flags"][i] & K.FLAG_COMPLETED   # nothing done
        if name in K.SENDS:
            comm, dst = comm_rank(acts["comm"][i], peer)
            if name in K.BLOCKING_SENDS:
                w(E.MpiSend(t0, dst, comm, tag, int(acts["bytes_sent"][i])))
            else:
                w(E.MpiIsend(t0, dst, comm, tag, int(acts["bytes_sent"][i]), req))
                created[req] = i
        elif name == "recv":
            comm, src = comm_rank(acts["comm"][i], peer)
            w(E.MpiRecv(t1, src, comm, tag, int(acts["bytes_recv"][i])))
        elif name == "irecv" or name in K.NONBLOCKING_COLLECTIVES:
            ev = E.MpiIrecvRequest if name == "irecv" else E.NonBlockingCollectiveRequest
            w(ev(t0, req))
            created[req] = i
            if acts["vec_len"][i] > 0:
                lossy[name] += 1
        elif name in K.SENDRECVS:
            comm, dst = comm_rank(acts["comm"][i], peer)
            w(E.MpiSend(t0, dst, comm, tag, int(acts["bytes_sent"][i])))
            v = data.vector(lo + i)          # [source, receive tag]
            if len(v) >= 2:
                _, src = comm_rank(acts["comm"][i], int(v[0]))
                w(E.MpiRecv(t1, src, comm, int(v[1]) & 0xFFFFFFFF, int(acts["bytes_recv"][i])))
        elif name in K.SINGLE_COMPLETIONS:
            wrote = req >= 0 and complete(i, req, t1, not tested)
            if not wrote and name in K.TESTS and tested == (name == "test"):
                lossy[_QUIET_TEST[tested]] += 1
            elif not wrote and req >= 0:
                lossy[_UNWRITTEN] += 1
            if acts["vec_len"][i] > 0:
                lossy[_ANY_VECTOR] += 1
        elif name == "cancel":
            pass                     # (its Enter's attributes; its receive's end: complete)
        elif name in K.MULTI_COMPLETIONS:
            ids = data.vector(lo + i).tolist()       # the request ids
            wrote = [complete(i, q, t1, not tested) for q in ids]
            if not any(wrote) and name in K.TESTS and tested == (name == "testall"):
                lossy[_QUIET_TEST[tested]] += 1
            elif not all(wrote):
                lossy[_UNWRITTEN] += 1
        elif name in K.ONE_SIDED:
            if name in K.REQUEST_KINDS and req >= 0:
                created[req] = i
            if not rma.events(i, name, t0, t1):
                lossy[name] += 1
        elif name in K.IO_KINDS:
            if name in K.NONBLOCKING_IO:
                created[req] = i
            if not io.events(i, name, t0, t1):
                lossy[name] += 1
        elif name in K.COLLECTIVES:
            w(E.MpiCollectiveBegin(t0))
            coll_end(i, t1)
            if acts["vec_len"][i] > 0:
                lossy[name] += 1
        elif name not in ("init", "finalize") and not (name == "comm_size" and
                                                        int(acts["comm"][i]) == 0):
            lossy[name] += 1         # its region alone (comm_size is read back on comm 0)
        w(E.Leave(t1, reg))
