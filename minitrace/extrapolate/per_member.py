"""Per-member sizes of the vector collectives at the target.  An alltoallv, allgatherv,
gatherv, scatterv or reduce_scatter holds one size per member of its communicator (its
vector), so its vector is as long as the communicator: another call at each scale, and where
the sizes depend on the data (NPB IS's keys bucketed by destination) another call at each
rank, which made every rank a class of its own.  Their vectors are compared by kind alone
(:func:`.structure.vector_reader`), their totals (``bytes_sent``, ``bytes_recv``) fitted as
any size, and at the target each such call's entries are made from the totals of its
members' calls: the n-th vector collective on a communicator of each class meets the n-th of
every other.  An all-to-all is spread evenly over the members (each member's share rounded
to a byte), which every rank then receives from each member; one whose recorded vectors send
to few members (a neighbourhood exchange written as an alltoallv) is refused, as its pattern
is not extrapolated, unless forced."""
from __future__ import annotations

import numpy as np

from .. import kinds as K
from ..errors import MinitraceError
from . import grid_comms as GC

_ALL_TO_ALL = K.mask({"alltoallv", "alltoallw", "ialltoallv", "ialltoallw"})
#: entries made from the members' bytes sent (gathers), else from their bytes received
_FROM_SENT = K.mask({"gatherv", "igatherv", "allgatherv", "iallgatherv"})
_VECTOR = K.mask(K.VECTOR_KINDS)


def _rows(c) -> np.ndarray:
    """A class program's vector collectives that hold a vector (a gatherv's and a
    scatterv's at their root only)."""
    a = c.actions
    return np.flatnonzero(_VECTOR[a["kind"]] & (a["vec_len"] > 0))


def sparse(runs: list) -> list[str]:
    """Why the largest run's all-to-alls cannot be spread evenly at the target: some send to
    fewer than all other members (a pattern of neighbours; refused unless forced)."""
    ref = max(runs, key=lambda r: r.nranks)
    a, vectors = ref.data.actions, ref.data.vectors
    rows = np.flatnonzero(_ALL_TO_ALL[a["kind"]] & (a["vec_len"] > 0))
    half = a["vec_len"][rows].astype(np.int64) // 2
    rows, half = rows[half > 0], half[half > 0]
    if not len(rows):
        return []
    first = np.cumsum(half) - half
    at = np.repeat(a["vec_off"][rows], half) + np.arange(int(half.sum())) - \
        np.repeat(first, half)
    sending = np.add.reduceat((vectors[at] != 0).astype(np.int64), first)
    few = int((sending < half - 1).sum())
    if not few:
        return []
    return [f"{ref.path}: {few} of {len(rows)} all-to-all calls send to fewer than all other "
            f"members (a pattern of neighbours): its pattern is not extrapolated (forced: "
            f"each spread evenly over the members at the target)"]


def per_member(progs) -> None:
    """Make each vector collective's entries in ``progs`` (:class:`.build.Programs`) for the
    target's communicator, the class programs changed in place (:func:`sparse` says where
    an even spread is forced)."""
    if not any(len(_rows(c)) for c in progs.classes):
        return
    which = progs.which()
    P = progs.nranks
    streams: dict = {}                  # (communicator, n-th call) -> {class: its row}
    for k, c in enumerate(progs.classes):
        a = c.actions
        on = np.flatnonzero(_VECTOR[a["kind"]])    # (a gatherv's other members' too)
        if GC.is_label(a["comm"][on]).any():
            raise MinitraceError("a vector collective on a grid's row or a split's "
                                 "communicator: its per-member sizes are not extrapolated")
        for cid in np.unique(a["comm"][on]).tolist():
            for n, row in enumerate(on[a["comm"][on] == cid].tolist()):
                streams.setdefault((cid, n), {})[k] = row
    sent = np.zeros((len(progs.classes), len(streams)), np.int64)
    received = np.zeros_like(sent)
    calls: list[dict] = [{} for _ in progs.classes]     # per class: its row -> its call
    for j, (key, per_class) in enumerate(streams.items()):
        if any(len(c.ranks) and i not in per_class for i, c in enumerate(progs.classes)):
            raise MinitraceError(f"vector collective {key[1] + 1} on communicator {key[0]} "
                                 "is not made by every rank class: its members are not known")
        for k, row in per_class.items():
            a = progs.classes[k].actions
            if _ALL_TO_ALL[a["kind"][row]]:          # (each member's even share)
                a["bytes_sent"][row] = P * int(round(a["bytes_sent"][row] / P))
            sent[k, j], received[k, j] = a["bytes_sent"][row], a["bytes_recv"][row]
            calls[k][row] = j
    for k, c in enumerate(progs.classes):
        _rewrite(c, k, sent, received, calls[k], which)


def _rewrite(c, k: int, sent: np.ndarray, received: np.ndarray, calls: dict,
             which: np.ndarray) -> None:
    """Class program ``c`` (class ``k``) with its vector collectives' vectors made for the
    target from the members' totals (``sent``, ``received``: per class, per call; ``calls``:
    the class's rows and their calls)."""
    a = c.actions
    P = len(which)
    made = {}
    for row, j in calls.items():
        if a["vec_len"][row] == 0:
            continue
        if _ALL_TO_ALL[a["kind"][row]]:
            share = sent[:, j] // P
            entries = np.concatenate([np.full(P, sent[k, j] // P), share[which]])
            a["bytes_recv"][row] = int(share[which].sum())
        elif _FROM_SENT[a["kind"][row]]:
            entries = sent[which, j]
            a["bytes_recv"][row] = int(entries.sum())
        else:            # scatterv (its root sends them), reduce_scatter (each reduces them)
            entries = received[which, j]
            a["bytes_sent"][row] = int(entries.sum())
        made[row] = entries.astype(c.vectors.dtype)
    if not made:
        return
    # the vectors laid out again: the others' entries copied, the made ones put in
    old = (np.cumsum(a["vec_len"]) - a["vec_len"]).astype(np.int64)
    rows = np.fromiter(made, np.int64, len(made))
    a["vec_len"][rows] = [len(made[r]) for r in rows.tolist()]
    lens = a["vec_len"].astype(np.int64)
    new = np.cumsum(lens) - lens
    kept = np.ones(len(a), bool)
    kept[rows] = False
    n = np.where(kept, lens, 0)
    to = np.repeat(new, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    src = np.repeat(old, n) + np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
    vectors = np.zeros(int(lens.sum()), c.vectors.dtype)
    rel = np.zeros(len(vectors), bool)
    vectors[to], rel[to] = c.vectors[src], c.vec_rel[src]
    for r in rows.tolist():
        vectors[new[r]:new[r] + lens[r]] = made[r]
    c.vectors, c.vec_rel = vectors, rel
    held = np.flatnonzero(lens > 0)                  # (a split's entries: its row's start)
    c.splits = [(int(new[held[np.searchsorted(old[held], s)]]), values)
                for s, values in c.splits]
