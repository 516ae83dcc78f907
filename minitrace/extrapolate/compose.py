"""Rank programs composed from per-direction parts: on a grid, a rank's program is one
skeleton (the calls that name no neighbour) plus one block per neighbour direction that exists
at its position (faces, edges, corners: up to 26 in 3-D).  A position that fewer than 3 runs
have (the interior of a 3-D grid exists from 3x3x3 ranks on) is built in each run that lacks it
from the skeleton of the nearest position the run has and, per direction, the calls of the
nearest position that has that neighbour; its sizes and volumes are then fitted over the runs
like any class's (:mod:`.build`).

The composition works on one rank's call sequence (the class's program expanded), not on its
loop tree: the grammar folds the loops of different positions at different places (a loop may
begin between a halo's sends and its waits at one position and not at another), so the
composed sequence is folded again (``compress/grammar.py``), as a recorded rank's would be.
A call's direction is its peer's grid offset; a completion's is the one of the call that posted
its request; compute between calls goes with the call after it when that call has a direction.
The compute that opens a stretch (after a skeleton call, before the first directed one) is the
skeleton's work, whatever direction follows it (CloverLeaf's boundary kernels and the packing
of its first face): the composed stretch's first such compute has the skeleton donor's volume,
the others' none (each donor's would count its kernels once more: +7..+14% of compute on
CloverLeaf 3-D's composed positions).
Between two skeleton calls the directions' calls come in phases (a run of irecvs, of sends, of
waits; a position may lack one, when none of its directions calls there): the composed stretch
keeps the phases, each in the canonical order (:mod:`.canonical`
on a grid: by tag, then grid offset; a completion where its post is), and each completion's
request reference (the number of requests posted after its own) is counted again; a
completion of several requests (a waitall, whatever directions it completes) is a skeleton
call whose list holds the requests of the composed position's directions, each from the part
that gives that direction, in posting order (a testall too: it completes all its requests or
none; waitany, waitsome, testany and testsome are not split: refused).  Where this does
not apply, the position is not composed and the refusal says why (one line): a run with no
rank that has a neighbour in one of its directions, donors whose skeletons differ, phases that
differ, a request id posted twice.
"""
from __future__ import annotations

import collections
import itertools
import os
from dataclasses import dataclass, replace

import numpy as np

from .. import kinds as K
from ..compress import grammar as G
from ..compress import signatures as SG
from . import grid as GR
from . import structure as ST

_COMPUTE = K.code("compute")
_POSTING = K.mask(K.REQUEST_KINDS)
_ALL_OR_NONE = K.mask(K.ALL_OR_NONE_COMPLETIONS)
#: neighbour steps along one dimension at each place on it
_STEPS = {GR.LOW: (0, 1), GR.HIGH: (-1, 0), GR.MIDDLE: (-1, 0, 1), GR.ALONE: (0,),
          "*": (-1, 0, 1)}


class NotComposable(Exception):
    """Why a position cannot be composed from the others' parts (one line)."""


def neighbours(position: str) -> set:
    """The grid offsets (encoded, :func:`.grid.encode`) a rank at ``position`` (e.g.
    ``(lo,mid,hi)``) has a neighbour at."""
    steps = [_STEPS[x] for x in position.strip("()").split(",")]
    return {int(GR.encode(np.array(d))) for d in itertools.product(*steps) if any(d)}


def composable(key: str) -> bool:
    """A plain grid position (not an anchored rank nor a pinned place in a position)."""
    return key.startswith("(") and "@" not in key


@dataclass
class _Donor:
    """A recorded position class as one of its ranks runs it: per call, its signature id,
    volume, direction (an encoded grid offset, -1: skeleton), the call that posted the request
    it completes (-1: none), and the sort keys of its stretch between skeleton calls."""

    key: str
    ids: np.ndarray
    volume: np.ndarray
    direction: np.ndarray
    post: np.ndarray
    gap: np.ndarray              # skeleton calls before it (a skeleton call closes its gap)
    phase: np.ndarray            # runs of one kind of directed call before it in its gap
    order: np.ndarray            # (tag, offset dimension 0 first) of the call or its post
    kinds: dict                  # gap -> the kinds of its phases
    entries: dict                # a completion of several requests -> their posts
    lead: np.ndarray             # the compute opening a stretch before its directed calls

    def skeleton(self) -> np.ndarray:
        """The skeleton's signature ids, a completion of several requests by its kind only
        (its list holds each direction's)."""
        at = np.flatnonzero(self.direction < 0)
        out = self.ids[at].copy()
        for j, k in enumerate(at.tolist()):
            if k in self.entries:
                out[j] = -1
        return out

    @property
    def used(self) -> set:
        return set(np.unique(self.direction[self.direction >= 0]).tolist())


def _lexical(codes: np.ndarray, ndims: int) -> np.ndarray:
    """Encoded offsets as integers ordered dimension 0 first (the canonical order)."""
    steps = GR.decode(codes, ndims) + GR.REACH
    return (steps * (2 * GR.REACH + 1) ** np.arange(ndims - 1, -1, -1)).sum(axis=-1)


def _donor(run: ST.Run, key: str) -> _Donor:
    rc = run.classes[key]
    sl = run.data.rank_slice(int(rc.ranks[0]))
    ids = run.sig.ids[sl].astype(np.int64)
    rows = run.sig.table[ids]
    n = len(ids)
    vec = rows["vec"].astype(np.int64)
    has = vec >= 0
    lists = np.flatnonzero(has)[run.sig.vec_values[run.sig.vec_offsets[vec[has]]] ==
                                SG.VEC_REQUESTS]
    multi = np.flatnonzero(_ALL_OR_NONE[rows["kind"]])
    if not np.isin(lists, multi).all():
        raise NotComposable(f"rank class {key} completes some of several requests in one call "
                            "(waitany, waitsome, testany ...): not split by direction")
    refs = rows["req_mode"] == SG.REQ_REF
    if (refs & _POSTING[rows["kind"]]).any():
        raise NotComposable(f"rank class {key} posts a request id it named before")
    direction = np.where(rows["peer_mode"] == 1, rows["peer"].astype(np.int64), -1)
    post = np.full(n, -1, np.int64)
    request = run.data.actions["request"][sl].astype(np.int64)
    new = np.flatnonzero(rows["req_mode"] == SG.REQ_NEW)
    by_id = np.argsort(request[new], kind="stable")
    names_sorted, new_sorted = request[new][by_id], new[by_id]

    def posted(names: np.ndarray) -> np.ndarray:
        """The calls that posted the requests ``names``."""
        at = np.clip(np.searchsorted(names_sorted, names), 0, max(len(new) - 1, 0))
        if not len(new) or not np.array_equal(names_sorted[at], names):
            raise NotComposable(f"rank class {key} names a request it did not post")
        return new_sorted[at]
    if refs.any():
        ref = np.flatnonzero(refs)
        post[ref] = posted(request[ref])
        direction[ref] = direction[post[ref]]
    entries = {}            # a completion of several requests -> the calls that posted them
    first = int(run.data.rank_offsets[int(rc.ranks[0])])
    for k in multi.tolist():         # a skeleton call, whatever directions it completes
        entries[k] = posted(np.asarray(run.data.vector(first + k), np.int64)) if \
            rows["vec"][k] >= 0 else np.zeros(0, np.int64)
    kind = rows["kind"].astype(np.int64)
    call = kind != _COMPUTE
    # compute goes with the call after it (the next call at or after each row)
    following = np.where(call, np.arange(n), n)
    following = np.minimum.accumulate(following[::-1])[::-1]
    nxt = np.minimum(following, n - 1)
    preceding = np.maximum.accumulate(np.where(call, np.arange(n), -1))
    after_skeleton = (preceding < 0) | (direction[np.maximum(preceding, 0)] < 0)
    direction = np.where(~call & (following < n), direction[nxt], direction)
    lead = ~call & (direction >= 0) & after_skeleton
    skeleton = direction < 0
    gap = np.cumsum(skeleton) - skeleton
    directed = np.flatnonzero(~skeleton & call)
    change = np.ones(len(directed), bool)
    change[1:] = (kind[directed][1:] != kind[directed][:-1]) | \
        (gap[directed][1:] != gap[directed][:-1])
    start = np.ones(len(directed), bool)
    start[1:] = gap[directed][1:] != gap[directed][:-1]
    count = np.cumsum(change)
    phase_of = count - np.maximum.accumulate(np.where(start, count, 0))
    phase = np.zeros(n, np.int64)
    phase[directed] = phase_of
    phase = np.where(call, phase, phase[nxt])
    source = np.where(post >= 0, post, np.arange(n))
    order = rows["tag"].astype(np.int64)[source] * (2 * GR.REACH + 1) ** run.grid.ndims + \
        np.where(direction >= 0, _lexical(np.maximum(direction, 0), run.grid.ndims), 0)
    order = np.where(call, order, order[nxt])
    kinds = {}
    for g, p, k in zip(gap[directed][change].tolist(), phase_of[change].tolist(),
                       kind[directed][change].tolist()):
        kinds.setdefault(g, []).append(k)
    return _Donor(key, ids, run.data.actions["volume"][sl].astype(float), direction, post,
                  gap, phase, order, {g: tuple(k) for g, k in kinds.items()}, entries, lead)


def donors_of(run: ST.Run) -> dict:
    """The run's recorded grid positions as donors (NotComposable: one cannot be)."""
    return {k: _donor(run, k) for k, rc in run.classes.items()
            if composable(k) and rc.parts is None}


def _nearness(key: str, position: str) -> int:
    return sum(a == b for a, b in zip(key.strip("()").split(","),
                                      position.strip("()").split(",")))


def compose_run(run: ST.Run, position: str, directions: set, donors: dict) -> ST.RankClass:
    """Class ``position`` of ``run`` composed from the run's position classes (``donors``,
    :func:`donors_of`): the skeleton of the nearest (most places alike, then most
    directions) among those with the skeleton most positions have (a root's is its own), each
    direction's calls from the nearest that has it (whose skeleton must have the same kinds of
    calls).  NotComposable says why it cannot be."""
    if not donors:
        raise NotComposable(f"{os.path.basename(run.path)} has no grid position to compose it "
                            f"from")
    order = sorted(donors, key=lambda k: (-_nearness(k, position), -len(donors[k].used), k))
    # the skeleton of the nearest position whose skeleton most positions have (not a root's);
    # each direction's calls from the nearest having it, one with that skeleton's kinds first
    common = collections.Counter(donors[k].skeleton().tobytes() for k in order).most_common(1)
    first = next(k for k in order if donors[k].skeleton().tobytes() == common[0][0])
    kinds = {k: run.sig.table["kind"][d.ids[d.direction < 0]] for k, d in donors.items()}
    alike = {k: np.array_equal(kinds[k], kinds[first]) for k in order}
    assign = {}
    for d in sorted(directions):
        having = sorted((k for k in order if d in donors[k].used), key=lambda k: not alike[k])
        if not having:
            off = tuple(GR.decode(d, run.grid.ndims).tolist())
            raise NotComposable(f"no rank of {os.path.basename(run.path)} ({run.nranks} ranks) "
                                f"has a neighbour at {off}")
        assign[d] = having[0]
    taking = [first] + sorted(set(assign.values()) - {first}, key=order.index)
    parts = [donors[k] for k in taking]
    for d in parts[1:]:                        # the others' skeletons only align their calls
        if not alike[d.key]:
            raise NotComposable(f"rank classes {parts[0].key} and {d.key} differ in more than "
                                "their neighbours' calls")
    phases = _phases(parts)
    picks, keys = [], []
    for i, (k, d) in enumerate(zip(taking, parts)):
        mine = np.array([assign.get(int(x)) == k for x in d.direction.tolist()]) if \
            len(d.direction) else np.zeros(0, bool)
        pick = np.flatnonzero(mine | ((d.direction < 0) if i == 0 else False))
        picks.append(pick)
        call = (d.ids[pick] >= 0) & (run.sig.table["kind"][d.ids[pick]] != _COMPUTE)
        keys.append(np.stack([d.gap[pick], (d.direction[pick] < 0).astype(np.int64),
                              phases[i](d.gap[pick], d.phase[pick]), d.order[pick],
                              call.astype(np.int64),
                              np.full(len(pick), i), pick], axis=1))
    key = np.concatenate(keys)
    sequence = np.lexsort(key.T[::-1])
    which, row = key[sequence, 5], key[sequence, 6]
    ids = np.concatenate([d.ids[p] for d, p in zip(parts, picks)])[sequence]
    volume = np.concatenate([d.volume[p] for d, p in zip(parts, picks)])[sequence]
    _lead_volumes(volume, np.concatenate([d.lead[p] for d, p in zip(parts, picks)])[sequence],
                  key[sequence, 0], parts[0])
    mine = {i: {d for d, k in assign.items() if k == taking[i]} for i in range(len(parts))}
    ids = _requests(run, parts, which, row, ids, mine)
    gram = G.build(ids, np.array([0, len(ids)], np.int64), len(run.sig.table))
    tree = ST.tree_of(gram, gram.top(0))
    loops, leaves = [], []
    ST.walk(tree, loops, leaves)
    return ST.RankClass(position, np.zeros(0, np.int64), tree, loops, leaves, parts=volume)


def _lead_volumes(volume: np.ndarray, lead: np.ndarray, gap: np.ndarray, skeleton: _Donor):
    """The compute opening each composed stretch (``lead``, in composed order) is the
    skeleton donor's opening compute of that stretch, once: the first one gets its volume
    (none when the skeleton donor has no directed call there: its compute before the
    closing skeleton call holds that work), the others none."""
    own = dict(zip(skeleton.gap[skeleton.lead].tolist(), skeleton.volume[skeleton.lead]))
    at = np.flatnonzero(lead)
    volume[at] = 0.0
    gaps, first = np.unique(gap[at], return_index=True)
    volume[at[first]] = [own.get(g, 0.0) for g in gaps.tolist()]


def _phases(parts: list) -> list:
    """Per part, a function (gap, phase) -> the phase in the composed stretch: the stretches'
    phases (kinds of directed calls, in order) of all parts are one sequence, some parts
    lacking some phases (no direction of theirs there); NotComposable when there is none."""
    maps = [{} for _ in parts]
    for g in sorted({g for d in parts for g in d.kinds}):
        seqs = [d.kinds.get(g, ()) for d in parts]
        longest = max(seqs, key=len)
        for i, seq in enumerate(seqs):
            at, where = 0, []
            for k in seq:                    # the earliest embedding in the longest
                while at < len(longest) and longest[at] != k:
                    at += 1
                if at == len(longest):
                    j = next(j for j, x in enumerate(seqs) if x is longest)
                    raise NotComposable(
                        f"rank classes {parts[j].key} and {parts[i].key} call their "
                        "neighbours in different phases (" + " vs ".join(
                            "/".join(K.NAME[k] for k in x) for x in (longest, seq)) + ")")
                where.append(at)
                at += 1
            if where != list(range(len(seq))):
                maps[i][g] = where

    def mapper(table: dict):
        def phase(gap: np.ndarray, local: np.ndarray) -> np.ndarray:
            if not table:
                return local
            out = local.copy()
            for g, where in table.items():
                at = gap == g
                out[at] = np.asarray(where)[local[at]]
            return out
        return phase
    return [mapper(m) for m in maps]


def _requests(run: ST.Run, parts: list, which: np.ndarray, row: np.ndarray,
              ids: np.ndarray, mine: dict) -> np.ndarray:
    """``ids`` with each completion's request reference counted again in the composed order
    (signature rows added to the run's table where new); a completion of several requests
    lists those of the directions each part gives (``mine``: part -> directions), in posting
    order."""
    table = run.sig.table
    where = [np.full(len(d.ids), -1, np.int64) for d in parts]
    for i in range(len(parts)):
        at = which == i
        where[i][row[at]] = np.flatnonzero(at)
    if any(d.entries for d in parts):
        ids = _request_lists(run, parts, which, row, ids, where, mine)
        table = run.sig.table
    post = np.array([where[i][parts[i].post[r]] if parts[i].post[r] >= 0 else -1
                     for i, r in zip(which.tolist(), row.tolist())], np.int64) if len(ids) \
        else np.zeros(0, np.int64)
    completes = np.flatnonzero(table["req_mode"][ids] == SG.REQ_REF)
    if (post[completes] < 0).any() or (post[completes] >= completes).any():
        raise NotComposable("a completion whose post is not before it in the composed program")
    latest = np.cumsum(table["req_mode"][ids] == SG.REQ_NEW) - 1
    distance = latest[completes] - latest[post[completes]]
    pairs, inverse = np.unique(np.stack([ids[completes], distance], axis=1), axis=0,
                               return_inverse=True)
    known = {table[k].tobytes(): k for k in range(len(table))}
    extra, new_ids = [], []
    for sig, dist in pairs.tolist():
        r = table[sig].copy()
        r["request"] = dist
        k = known.setdefault(r.tobytes(), len(table) + len(extra))
        if k == len(table) + len(extra):
            extra.append(r)
        new_ids.append(k)
    if extra:
        run.sig = replace(run.sig, table=np.concatenate([table, np.array(extra)]))
    out = ids.copy()
    out[completes] = np.array(new_ids, np.int64)[inverse.ravel()]
    return out


def _request_lists(run: ST.Run, parts: list, which: np.ndarray, row: np.ndarray,
                   ids: np.ndarray, where: list, mine: dict) -> np.ndarray:
    """``ids`` with each completion of several requests (waitall ...) naming the composed
    posts of the directions it completes, in posting order, counted back from the latest new
    request before it (new vector contents and signature rows where needed)."""
    table, sig = run.sig.table, run.sig
    latest = np.cumsum(table["req_mode"][ids] == SG.REQ_NEW) - 1
    skeletons = [np.flatnonzero(d.direction < 0) for d in parts]
    rank = [{k: j for j, k in enumerate(sk.tolist())} for sk in skeletons]
    contents = {sig.vec_values[sig.vec_offsets[v]:sig.vec_offsets[v + 1]].tobytes(): v
                for v in range(len(sig.vec_offsets) - 1)}
    rows_known = {table[k].tobytes(): k for k in range(len(table))}
    given = [np.isin(d.direction, list(mine[m])) for m, d in enumerate(parts)]
    new_contents, new_rows = [], []
    out = ids.copy()
    for at, (i, r) in enumerate(zip(which.tolist(), row.tolist())):
        if r not in parts[i].entries:
            continue
        j = rank[i][r]                          # a skeleton call: each part's directions
        sources = []
        for m, d in enumerate(parts):
            e = d.entries[int(skeletons[m][j])]
            sources.append((m, e[given[m][e]]))
        posts = np.sort(np.concatenate([where[m][e] for m, e in sources] +
                                       [np.zeros(0, np.int64)]))
        if (posts < 0).any() or (posts >= at).any():
            raise NotComposable("a completion of several requests whose posts are not before "
                                "it in the composed program")
        v = -1                                  # no request: no list (as recorded)
        if len(posts):
            content = np.concatenate([[SG.VEC_REQUESTS], np.ravel(np.stack(
                [np.full(len(posts), SG.REQ_REF), latest[at] - latest[posts]], axis=1))]
            ).astype(sig.vec_values.dtype)
            v = contents.get(content.tobytes())
            if v is None:
                v = contents[content.tobytes()] = len(sig.vec_offsets) - 1 + len(new_contents)
                new_contents.append(content)
        r2 = table[ids[at]].copy()
        r2["vec"] = v
        k = rows_known.setdefault(r2.tobytes(), len(table) + len(new_rows))
        if k == len(table) + len(new_rows):
            new_rows.append(r2)
        out[at] = k
    if new_contents:
        sizes = np.cumsum([len(c) for c in new_contents])
        run.sig = replace(run.sig, vec_values=np.concatenate([sig.vec_values] + new_contents),
                          vec_offsets=np.concatenate([sig.vec_offsets,
                                                      sig.vec_offsets[-1] + sizes]))
    if new_rows:
        run.sig = replace(run.sig, table=np.concatenate([table, np.array(new_rows)]))
    return out


def compose(runs: list[ST.Run], keys: list) -> tuple[list[str], dict]:
    """Compose, in each run that lacks it, every grid position of ``keys`` (the target's
    classes) that fewer than 3 runs have; the composed classes join the runs' classes.
    Returns notes (which positions were composed in which runs) and, per position that
    could not be, why (for the refusal)."""
    notes, why = [], {}
    if not runs or runs[0].grid is None:
        return notes, why
    used = set()
    for run in runs:
        for k in run.classes:
            if composable(k):
                rows = run.sig.table[run.classes[k].leaves]
                used |= set(rows["peer"][rows["peer_mode"] == 1].astype(np.int64).tolist())
    donors, composed = {}, {}
    for key in keys:
        having = [r for r in runs if key in r.classes]
        if not composable(key) or len(having) >= 3:
            continue
        made, reasons = [], []
        for run in runs:
            if key in run.classes:
                continue
            try:
                if run.path not in donors:
                    try:
                        donors[run.path] = donors_of(run)
                    except NotComposable as e:
                        donors[run.path] = e
                if isinstance(donors[run.path], NotComposable):
                    raise donors[run.path]
                run.classes[key] = compose_run(run, key, neighbours(key) & used,
                                               donors[run.path])
                made.append(run)
            except NotComposable as e:
                reasons.append(str(e))
        if len({repr(ST.shape(r.classes[key].tree, r.sig.table, ST.vector_reader(r)))
                for r in having + made}) > 1:
            for run in made:
                del run.classes[key]
            reasons.append("its composed program is not the recorded one's, or differs "
                           "between runs")
            made = []
        if made:
            composed[key] = sorted(r.nranks for r in made)
        if reasons:
            why[key] = "; ".join(dict.fromkeys(reasons))
    for scales, group in itertools.groupby(sorted(composed.items(), key=lambda x: x[1]),
                                           key=lambda x: x[1]):
        notes.append(f"composed from the skeleton and per-direction calls of other positions "
                     f"in the runs at {', '.join(map(str, scales))} ranks: rank class(es) "
                     + " ".join(k for k, _ in group))
    return notes, why
