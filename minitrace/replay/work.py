"""What a replay executes as work besides the trace's compute actions: compute volumes turned
into flops, the work of reductions (and the temporary buffers MPICH's large reduce faults in at
every call, :func:`temporary_seconds`), and the bytes an MPI library copies within a rank in a
collective (the rank's own block, from its send buffer to its receive buffer: alltoall,
allgather, a gather's or scatter's root, their v and non-blocking forms; none with MPI_IN_PLACE).

SimGrid's replay moves only the blocks that go to other ranks, but the copy of a rank's own
block is real work: with 2 ranks an all-to-all of 4 MiB blocks out of the caches took
1.16 ms here, 0.56 ms of it the exchange (a sendrecv) and 0.51 ms the local copy (a memcpy of
the block).  :func:`in_flops` turns these bytes into work at the calibrated copy rates
(``Calibration.copies``), by the bytes a copy touches (:func:`copy_seconds`).

A collective whose working set (the bytes it sends and receives, and the arrays they are packed
from and unpacked into) outgrows the calibrated share of the caches a rank gets finds its
buffers in memory: its own block is copied at the memory's rate, and every byte it exchanges
with other ranks is read from or written to memory besides its transfer
(NPB FT class A, 2 ranks: 32 MiB blocks, 128 MiB of buffers; in a C program of its pattern the
copy took 5.6 ms, 2.2x the rate of a 4 MiB copy, and the exchange 10.8 ms, the calibrated
transfer's 5.0 plus the same bytes' trip through memory at the copy's rate; issue 35).  The
part of them in memory grows smoothly with the working set (:func:`memory_fraction`), as the
calibration's copies slow down over a range of working sets, not at one."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import kinds as K
from ..collectives import library_of
from ..collectives.buffers import MMAP_THRESHOLD, fresh_bytes
from ..errors import MinitraceError
from ..model import TraceColumns

_BLOCK_OF = {n: K.BLOCKING_OF.get(n, n) for n in K.ALL_COLLECTIVES}
_FIXED = {"alltoall", "allgather", "gather", "scatter"}
_VECTOR = {"alltoallv", "allgatherv", "gatherv", "scatterv"}


def own_block_bytes(data: TraceColumns, blocks: np.ndarray | None = None) -> np.ndarray:
    """Bytes each action copies from the rank's send buffer to its receive buffer (int64, one
    per action, 0 for every other action and for a collective called in place); ``blocks``:
    :func:`block_bytes` of ``data`` when the caller has it."""
    blocks = block_bytes(data) if blocks is None else blocks
    return np.where((data.actions["flags"] & K.FLAG_IN_PLACE) != 0, 0, blocks)


def block_bytes(data: TraceColumns) -> np.ndarray:
    """Bytes of the rank's own block in each collective that has one (int64, one per action,
    0 for every other action), in place or not: the size of the blocks it exchanges with each
    peer (an all-to-all's, an allgather's), what the rank copies to itself when not in place."""
    a = data.actions
    kind = a["kind"]
    out = np.zeros(len(a), np.int64)
    sent, recv = a["bytes_sent"].astype(np.int64), a["bytes_recv"].astype(np.int64)
    for name in {n for n, b in _BLOCK_OF.items() if b in _FIXED | _VECTOR}:
        rows = np.flatnonzero(kind == K.code(name))
        if not len(rows):
            continue
        rule = _BLOCK_OF[name]
        if rule == "alltoall":
            out[rows] = sent[rows] // _members(data, a["comm"][rows])
        elif rule == "allgather":
            out[rows] = sent[rows]
        elif rule == "gather":           # the root receives
            out[rows] = np.where(recv[rows] > 0, sent[rows], 0)
        elif rule == "scatter":          # the root sends
            out[rows] = np.where(sent[rows] > 0, recv[rows], 0)
        else:                            # entry of this rank's own index in the vector
            mine = _own_index(data, rows)       # (rooted: the root's vector)
            out[rows] = np.maximum(data.vector_item(rows, mine, default=0), 0)
    return out


def _members(data: TraceColumns, comms: np.ndarray) -> np.ndarray:
    """Number of members of each communicator id (at least 1)."""
    sizes = {int(c): max(len(data.comms.get(int(c), ())), 1) for c in np.unique(comms)}
    return np.array([sizes[int(c)] for c in comms], np.int64)


def _own_index(data: TraceColumns, rows: np.ndarray) -> np.ndarray:
    """Index of the acting rank in the communicator of each of ``rows`` (-1 if not a member)."""
    rank = data.rank_of(rows)
    comm = data.actions["comm"][rows]
    out = np.full(len(rows), -1, np.int64)
    for c in np.unique(comm):
        members = np.asarray(data.comms.get(int(c), ()), np.int64)
        sel = comm == c
        where = {int(w): i for i, w in enumerate(members)}
        out[sel] = [where.get(int(r), -1) for r in rank[sel]]
    return out


def in_flops(data, rate: float | None, red: float | None, source: str | None, copies=None):
    """The trace with compute volumes in flops, what SimGrid executes at a host's speed (sleeps
    stay in seconds), and a note on how reductions were modelled.

    A measured volume (seconds, instructions, cycles) on an MPI call is what the rank spent inside it,
    mostly busy-polling while it waited: the simulation models that waiting, so it is never
    replayed as work.  Reductions do ``bytes / red`` seconds of work at the recording
    machine's speed when a reduction rate is known, none otherwise, and with ``copies``
    (``Calibration.copies()``) the pages of temporary buffers they fault in at every call."""
    out, counts = flops_actions(data, rate, red, source, copies)
    return out, work_notes(counts, data.meta.get("volume_unit", "flops"), rate, red, copies)


def flops_actions(data, rate: float | None, red: float | None, source: str | None, copies=None):
    """:func:`in_flops`'s trace, and the counts its notes are made of (:func:`work_notes`):
    a part of a trace gives the counts of that part, which add up."""
    unit = data.meta.get("volume_unit", "flops")
    if unit == "flops":
        if rate is not None or red is not None or copies is not None:
            raise MinitraceError("the trace's compute volumes are in flops already: no compute, "
                                 "reduction or copy rate applies", source)
        return data, {}
    if rate is None:
        how = ("the flop/s of the machine that recorded it" if unit == "seconds"
               else f"flops per {unit.removesuffix('s')}")
        raise MinitraceError(f"the trace's compute volumes are in {unit}: give a compute rate "
                             f"to turn them into flops ({how}, e.g. --compute-rate "
                             f"{'1Gf' if unit == 'seconds' else '1'})", source)
    if (red is not None or copies is not None) and unit != "seconds":
        raise MinitraceError(f"reduction and copy rates apply to traces timed in seconds, not "
                             f"{unit}", source)
    actions = data.actions.copy()
    kind = actions["kind"]
    compute = kind == K.code("compute")
    actions["volume"][compute] *= rate
    in_call = ~K.mask(K.WORK)[kind]
    reductions = K.mask(K.REDUCTIONS)[kind]
    counts = {"reductions": int(reductions.sum()),
              "measured": float(actions["volume"][reductions].sum())}
    actions["volume"][in_call] = 0.0
    if counts["reductions"] and red is not None:
        seconds = actions["bytes_sent"][reductions] / red
        if copies is not None and len(copies) > 5 and copies[5] > 0:
            extra = temporary_seconds(data, np.flatnonzero(reductions), copies[5])
            seconds += extra
            counts["fresh"] = int((extra > 0).sum())
        actions["volume"][reductions] = seconds * rate
    if copies is not None:
        counts.update(own_block_copies(data, actions, copies, rate))
    return replace(data, actions=actions, meta={**data.meta, "volume_unit": "flops"}), counts


def work_notes(counts: dict, unit: str, rate, red, copies) -> list[str]:
    """What :func:`flops_actions` modelled, from its (summed) counts."""
    n, measured = counts.get("reductions", 0), counts.get("measured", 0.0)
    notes = []
    if n and red is None:
        notes.append(f"{n} reduction calls do no work: no reduction rate given (the "
                     f"{measured:.3g} {unit} measured inside them is waiting, which the "
                     f"simulation models)")
    elif n:
        notes.append(f"{n} reduction calls do bytes / {red:.4g} B/s of work at {rate:.4g} "
                     f"flop/s (not the {measured:.3g} {unit} measured inside them, which is "
                     f"mostly waiting)")
    if counts.get("fresh"):
        notes.append(f"{counts['fresh']} reduce calls also fault in the pages of MPICH's "
                     f"temporary buffers at {copies[5]:.4g} B/s (glibc maps them anew at "
                     f"every call)")
    if copies is not None and (counts.get("copy_bytes") or counts.get("from_memory")):
        hot, cold, cold_from = copies[:3]
        note = (f"{counts['copies']} collective calls copy the rank's own block "
                f"({counts['copy_bytes']} B) at {hot:.4g} B/s while source and destination "
                f"take up to {cold_from // 4} B, {cold:.4g} B/s from {cold_from} B")
        if counts.get("from_memory"):
            note += (f"; {counts['from_memory']} whose working set (twice the bytes sent, "
                     f"and those received) passes half a rank's share of the caches "
                     f"({copies[3]} B) copy and exchange their blocks partly from memory at "
                     f"{copies[4]:.4g} B/s (wholly from twice the share)")
        if counts["copies_missed"]:
            note += f"; {counts['copies_missed']} not modelled (no compute action after them)"
        notes.append(note)
    return notes


def temporary_seconds(data: TraceColumns, rows: np.ndarray, fresh: float) -> np.ndarray:
    """Seconds each collective of ``rows`` spends faulting in the pages of the temporary buffers
    the trace's MPI library allocates anew at each call (:mod:`minitrace.collectives.buffers`),
    at ``fresh`` B/s (``Calibration.fresh_page_rate``): the bulk of MPICH's reduce of 128 KiB
    and more on one node (8 MiB at 2 ranks: 7.1-7.6 ms, 2.5-3.0 with glibc told to keep
    its memory; the replay gave 1.1 ms without them; session 35, loaded)."""
    library = library_of(data.meta)
    out = np.zeros(len(rows))
    a = data.actions
    nbytes = np.maximum(a["bytes_sent"][rows], a["bytes_recv"][rows]).astype(np.int64)
    large = np.flatnonzero((a["kind"][rows] == K.code("reduce")) & (nbytes >= MMAP_THRESHOLD))
    if library is None or not len(large):
        return out
    me = _own_index(data, rows[large])
    comm, root = a["comm"][rows[large]], a["peer"][rows[large]]
    for c in np.unique(comm):             # (a communicator's members indexed once)
        members = data.comms.get(int(c), ())
        where = {int(w): i for i, w in enumerate(members)}
        at = np.flatnonzero(comm == c)
        mine = np.array([where.get(int(r), -1) for r in root[at]], np.int64)
        at, mine = at[(me[at] >= 0) & (mine >= 0)], mine[(me[at] >= 0) & (mine >= 0)]
        cases = np.stack([me[at], mine, nbytes[large[at]]], axis=1)
        alike, back = np.unique(cases, axis=0, return_inverse=True)
        seconds = np.array([fresh_bytes(library, "reduce", len(members), int(m), int(r),
                                        int(n)) for m, r, n in alike], float) / fresh
        out[large[at]] = seconds[back.ravel()]
    return out


def copy_seconds(nbytes, copies) -> np.ndarray:
    """Seconds a rank takes to copy blocks of ``nbytes`` within its memory, from ``copies`` =
    (B/s in cache, B/s from a buffer packed just before into one unpacked just after,
    ``cold_from``: a core's L2; 0: unknown, every copy at the packed-to-unpacked rate).

    A copy reads its source and writes its destination: it runs at the in-cache rate while
    the two together take at most a quarter of ``cold_from`` (next to the rank's other data
    they stay in L2), at the packed-to-unpacked rate once they take ``cold_from`` or more,
    and between, its time per byte is interpolated linearly in the log of that footprint.
    An application's copy of a 1 MiB block (2 MiB touched, L2 2 MiB) after its compute took
    78 us on the 2-core VM (13 GB/s, the cold rate), of 512 KiB 31 us (17 GB/s, between),
    of 256 KiB 7 us (36 GB/s, the in-cache rate); a rule on the block alone (cold above
    ``cold_from``) gave the 1 MiB copy the in-cache rate, 30 us (issue 35,
    benchmarks/RESULTS.md)."""
    hot, cold, cold_from = copies[:3]
    if cold_from <= 0:                   # (calibrate --cold-from 0: no cache boundary known)
        return np.asarray(nbytes, dtype=float) / cold
    footprint = 2.0 * np.asarray(nbytes, dtype=float)
    lo, hi = cold_from / 4.0, float(cold_from)
    where = np.clip(np.log(np.maximum(footprint, 1.0) / lo) / np.log(hi / lo), 0.0, 1.0)
    return np.asarray(nbytes, dtype=float) * ((1.0 - where) / hot + where / cold)


def own_block_seconds(data, copies):
    """(rows, seconds, own-block bytes, partly from memory, placed): the collectives of ``data``
    whose copy of the rank's own block or whose working set beyond half the rank's share of the
    caches (``copies[3]``, 0: not measured; :func:`memory_fraction`) cost the rank work, that
    work in seconds at the calibrated ``copies`` rates, and whether a compute action follows
    each on its rank (the work is added to it; every MPI action of a recorded trace has one):
    what :func:`own_block_copies` adds, and what the prediction's parts count as the
    collectives' time (the calls' own, replayed as compute).  A collective whose buffers are a
    fraction ``f`` in memory takes ``1 - f`` of its copy's cached time and ``f`` of its time
    from memory (:func:`from_memory_seconds`)."""
    blocks = block_bytes(data)
    nbytes = own_block_bytes(data, blocks)
    share, memory = (copies[3], copies[4]) if len(copies) > 3 else (0, 0.0)
    sent = data.actions["bytes_sent"].astype(np.int64)
    recv = data.actions["bytes_recv"].astype(np.int64)
    fraction = np.where(blocks > 0, memory_fraction(working_set(sent, recv), share), 0.0)
    deep = fraction > 0                        # (in place too: its blocks cross memory)
    rows = np.flatnonzero((nbytes > 0) | deep)
    fraction, nbytes, sent, recv = fraction[rows], nbytes[rows], sent[rows], recv[rows]
    seconds = copy_seconds(nbytes, copies)
    if deep.any():
        seconds = (1.0 - fraction) * seconds + \
            fraction * from_memory_seconds(nbytes, sent, recv, memory)
    after = rows + 1
    last = data.rank_offsets[data.rank_of(rows) + 1]
    kind = data.actions["kind"]
    placed = (after < last) & (kind[np.minimum(after, len(kind) - 1)] == K.code("compute"))
    return rows, seconds, nbytes, fraction > 0, placed


def working_set(sent, recv) -> np.ndarray:
    """Bytes a rank streams about a collective that sends ``sent`` and receives ``recv`` bytes:
    its two buffers and the data it packed into the send buffer (as large; the receive buffer
    is read where it is, or unpacked, which the trace does not say).  In a C all-to-all on 2
    ranks that packs its blocks from a matrix and reads the received ones in place
    (benchmarks/alltoall_parts.c, the pattern of benchmarks/apps/transpose.c; loaded 2.6-3.1,
    session 14), 4, 8 and 16 MiB blocks took 1.36, 4.12 and 8.60 ms; the replay's transfer and
    memory term on this working set give 1.29, 3.55 and 8.50 ms, on the buffers alone 0.98,
    2.94 and 8.50, on the buffers and an unpacked copy too 1.50, 3.97 and 8.50 (calibration
    /tmp/i13/acc/F of session 13: a share of 32 MiB)."""
    return 2.0 * np.asarray(sent, dtype=float) + np.asarray(recv, dtype=float)


def memory_fraction(nbytes, share: int) -> np.ndarray:
    """Part of a working set of ``nbytes`` (:func:`working_set`) that a rank finds in memory,
    from its calibrated share of the caches (``share`` bytes, 0: not measured, none).

    calibrate's copies by working set (measure._cache_copies) keep the cache's rate up to a
    working set, have the memory's from 4x that one, and fall between (2-core VM, six runs of
    two calibrations: 13.0-13.7 GB/s at 32 MiB a rank, 8.2-11.9 at 64, 6.1-7.1 at 128);
    ``share`` is the working set where the rate crosses the geometric middle of the two, to
    within the calibration's step of 2x (calibration.cache_share: 32 MiB in one of those
    calibrations, 64 in the other).  So the part in memory rises from 0 at half the share to
    all of it at twice the share, linearly in the log of the bytes (a half at the share
    itself): a step at the share of the buffers gave two ranks of NPB IS, 33.63 and 33.48 MB
    of buffers about a 33.55 MB share, 2.7 and 0.6 ms of the same all-to-allv (issue 35)."""
    nbytes = np.asarray(nbytes, dtype=float)
    if share <= 0:
        return np.zeros(nbytes.shape)
    where = np.log(np.maximum(nbytes, 1.0) / (share / 2.0)) / np.log(4.0)
    return np.clip(where, 0.0, 1.0)


def own_block_copies(data, actions, copies, rate: float) -> dict:
    """Add each collective's copy of the rank's own block (:mod:`minitrace.replay.work`) as work
    to the compute action after it, and for a collective whose working set (:func:`working_set`)
    outgrows half the rank's share of the caches (``copies[3]``, 0: not measured) its blocks'
    trips through memory (:func:`own_block_seconds`); returns the counts of what was copied
    (:func:`work_notes`)."""
    rows, seconds, nbytes, deep, ok = own_block_seconds(data, copies)
    if not len(rows):
        return {}
    np.add.at(actions["volume"], rows[ok] + 1, seconds[ok] * rate)
    return {"copies": int((ok & (nbytes > 0)).sum()), "copy_bytes": int(nbytes.sum()),
            "copies_missed": int((~ok).sum()), "from_memory": int((deep & ok).sum())}


def from_memory_seconds(own, sent, recv, memory: float) -> np.ndarray:
    """Seconds a rank spends on a collective's buffers in memory beyond what the replay
    gives its transfers: the copy of its own block (``own`` bytes) at ``memory`` B/s (a copy's
    rate: bytes copied per second, each read and written once), and the bytes it sends to
    and receives from other ranks (``sent`` and ``recv`` less ``own``) each read from or
    written to memory once: half a copy's traffic each."""
    own = np.asarray(own, dtype=float)
    others = np.asarray(sent, dtype=float) + np.asarray(recv, dtype=float) - 2.0 * own
    return (own + others / 2.0) / memory
