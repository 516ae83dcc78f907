"""``mpiexec -n K minitrace validate FILE`` (and the validation that ends a parallel merge):
the checks of validate.py shared among K workers, each reading the actions of its consecutive
ranks only, the report the serial one would print (same problems, same order, same counts).

* checks of each rank alone (structure, values, matched probes, one-sided epochs, files,
  requests): each worker on its ranks;
* point-to-point: each worker sends the receive halves of its ranks' messages to the worker of
  their sender (an all-to-all of small frames: pair, tag, bytes, row), which matches every
  stream of its ranks' sends; the first blocking receive of each pair goes to worker 0, which
  looks for receive cycles;
* collectives: each worker sends its collective actions (and their vectors) to the worker of
  their position on their communicator (modulo K), which checks those positions; the
  communicators with a problem there are then checked whole by worker (id modulo K).
Each check adds its problems in phases (``ValidationReport.phase``); worker 0 puts the phases of
every worker in the serial order."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from .. import validate as V
from ..trace import open as open_trace
from ..validate import collectives as VC, converted as VV, deadlocks as VD, probes as VM
from ..validate import point_to_point as VP
from .shares import contiguous_shares
from .world import World


class PhaseReport(V.ValidationReport):
    """A worker's problems by phase, each phase's exact counts by category, the problems
    themselves kept up to KEEP_PER_CATEGORY per category (as the serial report keeps)."""

    def __init__(self):
        super().__init__(0, 0)
        self.key: tuple = ()
        self.logs: dict = {}
        self.phase_counts: dict = {}
        self.capped: set = set()

    def phase(self, key: tuple, capped: bool = False) -> None:
        self.key = key
        if capped:
            self.capped.add(key)

    def add(self, rank: int, index: int, category: str, message: str) -> None:
        self.counts[category] += 1
        self.phase_counts.setdefault(self.key, Counter())[category] += 1
        if self.counts[category] <= V.KEEP_PER_CATEGORY:
            self.logs.setdefault(self.key, []).append(
                V.Problem(int(rank), int(index), category, message))

    def parts(self) -> tuple:
        """What worker 0 gathers."""
        return self.logs, self.phase_counts, self.capped


def assemble(parts: list, nranks: int, nactions: int) -> V.ValidationReport:
    """The serial report from every worker's ``PhaseReport.parts()`` (in worker order)."""
    rep = V.ValidationReport(nranks, nactions)
    keys = sorted({k for logs, counts, _ in parts for k in (*logs, *counts)})
    for key in keys:
        room = V.KEEP_PER_CATEGORY if any(key in c for _, _, c in parts) else None
        for logs, counts, _ in parts:
            have = counts.get(key, Counter())
            take = sum(have.values()) if room is None else min(sum(have.values()), room)
            added: Counter = Counter()
            for p in logs.get(key, [])[:take]:
                rep.add(p.rank, p.index, p.category, p.message)
                added[p.category] += 1
            left = take - sum(added.values())
            for cat, n in have.items():             # problems counted but not kept
                extra = min(n - added[cat], left)
                rep.counts[cat] += extra
                left -= extra
            if room is not None:
                room -= take
    return rep


def _share(path: str, world: World):
    """This worker's consecutive ranks of the trace (balanced by actions), its first rank and
    row, the whole trace's rank offsets and the shares."""
    with open_trace(path) as t:
        offsets = t.rank_offsets
        shares = contiguous_shares(np.diff(offsets) * 80, world.size)
        lo, hi = shares[world.rank]
        data = t.data_of_ranks(lo, hi)
    return data, lo, int(offsets[lo]), offsets, shares


def validate_parallel(world: World, path: str, share=None) -> V.ValidationReport | None:
    """Validate the trace ``path`` on every worker; the report on worker 0 (None elsewhere).
    ``share``: this worker's ranks already in memory (merge_parallel's ``Share``, given on
    every worker or on none), not read again."""
    data, lo, rlo, offsets, shares = share if share is not None else \
        world.step(lambda: _share(path, world), f"reading {path}")
    nranks, nactions = len(offsets) - 1, int(offsets[-1])
    if nranks == 0:
        return V.validate(data) if world.root else None
    ctx = V.CheckContext(data, rank_base=lo, row_base=rlo, world=nranks)
    rep = PhaseReport()
    V.check_local_before_p2p(ctx, rep)
    sends, recvs = VP.message_halves(ctx, rep)
    starts = np.array([s[0] for s in shares])
    owner = (np.searchsorted(starts, recvs["src"].to_numpy(), side="right") - 1).clip(
        0, world.size - 1)
    mine = world.alltoall([recvs[owner == w] for w in range(world.size)])
    both = VP.match_messages(sends, pd.concat(mine, ignore_index=True), rep)
    firsts = world.gather(VD.first_blocking_receives(both))
    if world.root:
        VD.check_recv_cycles(pd.concat(firsts, ignore_index=True).sort_values("row_r"), rep)
    VP.check_sizes_match(both, rep)
    VM.check_matched_probes(ctx, rep)
    _collectives(world, ctx, rep, nranks)
    V.check_local_after_collectives(ctx, rep)
    source = data.meta.get("source_messages")
    if source:
        VV.check_peers_found(ctx, rep, source, sum(world.allgather(len(VV.peerless(ctx)))))
        have = Counter()
        for c in world.allgather(VV.message_counts(ctx)):
            have.update(c)
        if world.root:
            VV.check_message_counts({k: have[k] for k in ("sent", "received")}, source, rep)
        VV.check_completions(ctx, rep)
    parts = world.gather(rep.parts())
    return assemble(parts, nranks, nactions) if world.root else None


def _collectives(world: World, ctx, rep: PhaseReport, nranks: int) -> None:
    """The collective checks, screened in parallel: each worker first checks every
    communicator at the positions (``seq``, a rank's n-th collective on it) congruent to its
    number modulo K, in a report of its own.  Every check compares the members' calls at one
    position (a member with fewer calls lacks one at some position), so a communicator with
    no problem at any position has none; the others are checked whole by worker (id modulo
    K), in ``rep``, for the report's order and counts.  (All collectives on one communicator,
    MPI_COMM_WORLD, went to worker 0 while the others waited.)"""
    df = VC.collective_frame(ctx)
    local = df["row"].to_numpy(np.int64) - ctx.row_base
    with_vec = local[ctx.a["vec_len"][local] > 0]
    vectors = {int(r) + ctx.row_base: ctx.d.vector(int(r)) for r in with_vec}
    screen = PhaseReport()
    _check_at(world, ctx, screen, nranks, df, vectors, df["seq"].to_numpy() % world.size)
    dirty = set().union(*world.allgather({key[1] for key, n in screen.phase_counts.items()
                                          if sum(n.values())}))
    whole = df[df["comm"].isin(dirty)]
    _check_at(world, ctx, rep, nranks, whole, vectors, whole["comm"].to_numpy() % world.size)


def _check_at(world: World, ctx, rep: PhaseReport, nranks: int, df: pd.DataFrame,
              vectors: dict, owner: np.ndarray) -> None:
    """The collective rows ``df`` (and their vectors) sent to their ``owner`` worker, which
    checks what it received."""
    out = []
    have = np.fromiter(vectors, np.int64, len(vectors))
    for w in range(world.size):
        sub = df[owner == w]
        rows = sub["row"].to_numpy(np.int64)
        out.append((sub, {int(r): vectors[int(r)] for r in rows[np.isin(rows, have)]}))
    got = world.alltoall(out)
    frame = pd.concat([f for f, _ in got], ignore_index=True).sort_values("row")
    if len(frame):
        vecs = {k: v for _, d in got for k, v in d.items()}
        VC.check_collectives_of(VC.CollectiveRows(frame, vecs, ctx.d.comms, nranks), rep, frame)
