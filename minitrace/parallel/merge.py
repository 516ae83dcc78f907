"""``mpiexec -n K minitrace merge RAWDIR -o OUT.h5``: the merge of merge.py shared among the
K ranks of an MPI job (workers), each merging and writing the part of consecutive ranks it was
given (``shares``: balanced by raw bytes), the trace-wide decisions taken by exchanging small
summaries, OUT.h5 assembled over the parts by worker 0 when every part is written.

Steps (each a ``World.step``: an error on one worker stops every worker there):
1. every worker reads every raw header (merge.RawRun); worker 0 plans the parts (or finds the
   plan of an earlier, failed, merge of the same raw files and the parts it wrote);
2. each worker parses its ranks (merge.parse_rank); allgather of their ``RankTables``, from
   which every worker computes the same communicator and string tables and row offsets;
3. each worker fills its ranks (merge.merge_ranks); allgather of each part's
   ``storage.encoding_stats`` and last row of each kind -> the trace's encoding plan (t0,
   time and volume encodings) and where each part's kind index starts;
4. each worker encodes its part; allgather of the integer ranges -> one type per column;
5. each worker writes its part files; worker 0 assembles OUT.h5 (parts.assemble).
Memory per worker: its parts' actions (80 B each, ACTION_DTYPE) and their encoded columns
(at most as much again), plus what every worker holds: the headers and the tables."""
from __future__ import annotations

import os
import sys
from typing import NamedTuple

import numpy as np

from .. import storage
from ..errors import MinitraceError
from ..merge import (RawRun, available_memory, check_memory, merge_ranks, parse_rank,
                     small_pages, trace_tables)
from ..model import TraceColumns
from . import parts as P
from .shares import contiguous_shares
from .world import World


class Share(NamedTuple):
    """A worker's consecutive ranks in memory, as the parallel validate and summary take them:
    its actions (rows and vectors from 0, the whole trace's tables and metadata), its first
    rank and row, the trace's rank offsets and every worker's (lo, hi) ranks."""

    data: TraceColumns
    lo: int
    row: int
    offsets: np.ndarray
    shares: list


@small_pages()
def merge_parallel(world: World, directory: str, output: str,
                   command_line: str | None = None, say=print, keep: bool = False):
    """Merge ``directory`` into ``output`` (OUT.h5 over OUT.parts/); returns the trace's
    metadata on every worker.  ``say`` prints progress (worker 0 only).  With ``keep``:
    (metadata, this worker's :class:`Share`), the share None on every worker unless each
    merged one part now, worker i part i (a resumed merge: the validate reads the file)."""
    run = world.step(lambda: RawRun(directory), "reading the raw files' headers")
    pdir = P.parts_dir(output)
    plan = world.bcast(world.step(lambda: _plan(run, directory, pdir, world.size)
                                  if world.root else None, "planning the parts"))
    paths = [P.part_path(pdir, plan, i) for i in range(len(plan["parts"]))]
    done = world.bcast(world.step(lambda: [i for i, p in enumerate(paths)
                                           if P.finished(p, plan["fingerprint"])]
                                  if world.root else None, "looking for finished parts"))
    bytes_of = run.raw_bytes()
    weight = [int(bytes_of[lo:hi].sum()) for lo, hi in plan["parts"]]
    todo = [i for i in range(len(paths)) if i not in done]
    if world.root and done:
        say(f"resuming: {len(done)} of {len(paths)} part(s) already written; merging ranks "
            f"{_ranges([plan['parts'][i] for i in todo]) or 'none'}")
    mine = _assign(todo, weight, world.size)[world.rank]
    # a merge its node's memory cannot hold is refused before it starts (as merge_dir's)
    records = world.node_sum(sum(run.by_rank[rk].records() for i in mine
                                 for rk in range(*plan["parts"][i]) if rk in run.by_rank))
    warning = world.step(lambda: check_memory(records, directory, available_memory()),
                         "checking the memory")
    if warning and world.root:
        print(f"minitrace: warning: {warning}", file=sys.stderr)
    in_memory = keep and todo == list(range(world.size))     # then mine == [world.rank]
    reloaded = done[world.rank::world.size]
    unit = "seconds" if run.seconds else "instructions"

    # 2. parse, exchange the tables
    def parse():
        parsed = {i: {rk: parse_rank(run.by_rank[rk], run.size) for rk in range(*plan["parts"][i])
                      if rk in run.by_rank} for i in mine}
        contrib = {i: P.finished(paths[i], plan["fingerprint"]) for i in reloaded}
        if any(c is None for c in contrib.values()):
            raise MinitraceError("a finished part disappeared during the merge", pdir)
        return parsed, contrib
    parsed, contrib = world.step(parse, "parsing the raw files")
    mine_tables = {rk: p[1] for i in mine for rk, p in parsed[i].items()}
    for c in contrib.values():
        mine_tables.update(c["tables"])
    all_tables: dict = {}
    for t in world.allgather(P.interned(mine_tables)):
        all_tables.update(t)
    tables = trace_tables(run.size, all_tables)
    n_rank = np.array([all_tables[rk].n_actions if rk in all_tables else 0
                       for rk in range(run.size)], np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_rank)]).astype(np.int64)

    # 3. fill, exchange what the encodings need
    def fill():
        out = {}
        for i in mine:
            lo, hi = plan["parts"][i]
            acts, offs, vecs = merge_ranks(run, list(range(lo, hi)), tables, parsed.pop(i))
            out[i] = (acts, offs, vecs)
        return out
    filled = world.step(fill, "merging the ranks")
    summaries = {i: (storage.encoding_stats(a, {"volume_unit": unit}),
                     _kind_last(a["kind"], int(offsets[plan["parts"][i][0]])))
                 for i, (a, _, _) in filled.items()}
    summaries.update({i: (c["stats"], c["kind_last"]) for i, c in contrib.items()})
    every = _collect(world, summaries)
    eplan = storage.encoding_plan([every[i][0] for i in range(len(paths))],
                                  {"volume_unit": unit})
    last = np.maximum.accumulate(np.stack([every[i][1] for i in range(len(paths))]))
    before = np.vstack([np.full((1, 256), -1, np.int64), last[:-1]]).clip(0)

    # 4. encode, exchange the integer ranges
    def encode():
        out, ranges = {}, {}
        for i in mine:
            acts, offs, vecs = filled[i] if in_memory else filled.pop(i)
            enc = storage.encode_columns(acts, offs, eplan)
            counts, krows = storage.kind_index(acts["kind"], offs,
                                               int(offsets[plan["parts"][i][0]]), before[i])
            del acts        # (held until validated with keep; else ~25 B per action here)
            ranges[i] = storage.int_ranges(_wide(enc, vecs, krows))
            out[i] = _narrowed(enc, vecs, krows, ranges[i]) + (counts,)
        return out, ranges
    encoded, ranges = world.step(encode, "encoding the parts")
    wide = {i: _wide(enc, vecs, krows) for i, (enc, vecs, krows, _) in encoded.items()}
    ranges.update({i: c["ranges"] for i, c in contrib.items()})
    every_range = _collect(world, ranges)

    # 5. write the parts, then OUT.h5
    def write():
        for i in mine:
            enc, vecs, krows, counts = encoded.pop(i)
            types = storage.common_types([every_range[j] for j in range(len(paths))], wide.pop(i))
            lo, hi = plan["parts"][i]
            P.write_part(paths[i], plan["fingerprint"], enc, vecs, krows, types, {
                "tables": {rk: all_tables[rk] for rk in range(lo, hi) if rk in all_tables},
                "stats": every[i][0], "kind_last": every[i][1], "ranges": every_range[i],
                "counts": counts, "ranks": [lo, hi]})
            counts_of[i] = counts
    counts_of: dict = {i: c["counts"] for i, c in contrib.items()}
    try:
        world.step(write, "writing the parts")
    except MinitraceError as e:
        raise MinitraceError(f"{e}; {_left(world, paths, plan)}") from None
    counts = _collect(world, counts_of, root_only=True)
    meta = storage.check_volume_unit(run.meta(command_line, all_tables), output)

    def assemble():
        if world.root:
            P.assemble(output, paths, meta, eplan, offsets,
                       np.concatenate([counts[i] for i in range(len(paths))]),
                       tables.comms, tables.strings)
    world.step(assemble, f"writing {output}")
    if not keep:
        return meta
    if not in_memory:
        return meta, None
    lo, hi = plan["parts"][world.rank]
    acts, offs, vecs = filled.pop(world.rank)
    data = TraceColumns(acts, offs, vecs, tables.comms, tables.strings, meta)
    return meta, Share(data, lo, int(offsets[lo]), offsets,
                       [tuple(p) for p in plan["parts"]])


def _plan(run: RawRun, directory: str, pdir: str, k: int) -> dict:
    """The plan of an earlier merge of these raw files into this output, or a new one: ``k``
    parts of consecutive ranks balanced by raw bytes (empty ones dropped)."""
    fp = P.fingerprint(directory)
    plan = P.read_plan(pdir, fp)
    if plan is not None:
        P.remove_temporaries(pdir, plan)
    else:
        shares = [s for s in contiguous_shares(run.raw_bytes(), k) if s[1] > s[0]]
        plan = {"fingerprint": fp, "raw": os.path.abspath(directory), "nranks": run.size,
                "parts": shares}
        try:
            P.write_plan(pdir, plan)
        except OSError as e:
            raise MinitraceError(f"cannot write: {e.strerror}", pdir) from None
    return plan


def _assign(todo: list[int], weight: list[int], k: int) -> list[list[int]]:
    """The parts to merge shared among ``k`` workers: part i to worker i when there is one
    per worker (a fresh plan: balanced by construction), else heaviest first to the least
    loaded."""
    if todo == list(range(k)):
        return [[i] for i in todo]
    load, out = [0] * k, [[] for _ in range(k)]
    for i in sorted(todo, key=lambda i: -weight[i]):
        w = load.index(min(load))
        out[w].append(i)
        load[w] += weight[i]
    return [sorted(x) for x in out]


def _collect(world: World, mine: dict, root_only: bool = False) -> dict:
    """Every worker's ``{part: value}`` merged (on worker 0 only with ``root_only``)."""
    out: dict = {}
    for d in (world.gather(mine) if root_only else world.allgather(mine)) or []:
        out.update(d)
    return out


def _kind_last(kind: np.ndarray, base: int) -> np.ndarray:
    """The last global row of each kind code among these rows (-1: none)."""
    last = np.full(256, -1, np.int64)
    np.maximum.at(last, kind, np.arange(base, base + len(kind), dtype=np.int64))  # no sort
    return last


def _wide(enc: dict, vecs: np.ndarray, krows: dict) -> dict:
    """Every integer array of a part by the name common_types knows it by."""
    return {**{k: v for k, (v, _) in enc.items()}, "vectors": vecs,
            **{f"kind_rows/{c}": d for c, d in krows.items()}}


def _narrowed(enc: dict, vecs: np.ndarray, krows: dict, ranges: dict) -> tuple:
    """A part's integer arrays in the smallest types holding this part's values (the common
    types, decided when every part's ranges are known, are as wide or wider): what a worker
    holds until it writes is ~25 B per action, not ~66."""
    types = storage.common_types([ranges], _wide(enc, vecs, krows))

    def cast(name, v):
        return v.astype(types.get(name, v.dtype), copy=False)
    return ({k: (cast(k, v), at) for k, (v, at) in enc.items()}, cast("vectors", vecs),
            {c: cast(f"kind_rows/{c}", d) for c, d in krows.items()})


def _ranges(rs) -> str:
    return ", ".join(f"{lo}" if hi - lo == 1 else f"{lo}-{hi - 1}" for lo, hi in rs)


def _left(world: World, paths: list[str], plan: dict) -> str:
    """Which ranks are not merged after a failed write, and what is kept."""
    if not world.root:
        return ""
    fp = plan["fingerprint"]
    missing = [plan["parts"][i] for i, p in enumerate(paths) if not P.finished(p, fp)]
    return (f"ranks {_ranges(missing)} are not merged; the raw files and the "
            f"{len(paths) - len(missing)} part(s) written are kept in "
            f"{os.path.dirname(paths[0])}: rerun the same command to merge only the rest")
