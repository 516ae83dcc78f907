"""The compute critical path of a trace: each rank's clock advances by its compute volumes, a
receive completes no earlier than its matching send was posted, a blocking collective no earlier
than its last member arrived; messages cost nothing.  What remains of a replay once the network
is infinitely fast: the static cost that follows an iteration's replayed time where ranks wait
on some neighbours only (LULESH's face-only exchange), which the slowest rank's compute, or the
sum of each superstep's slowest rank, does not.

Followed: sends and receives (point to point, matched in posting order per source, destination,
tag and communicator; a ``sendrecv``'s receive by its own source and tag), their
``wait``/``waitall`` and ``waitany``/``waitsome`` (of the requests they completed, which the
trace names and the replay waits for), the tests that completed requests (replayed as their
waits), ``sendrecv``, blocking collectives, and the sends the replay makes wait for their
receives (from its detached threshold, and synchronous ones: a send waits until its receive is
posted; miniGhost's exchange with 100 KB messages sampled -1.11% from the full replay against a
bound of 0.33% without them, +0.19% against 0.34% with).  Other calls (failed tests, persistent
and one-sided communication, non-blocking collectives) and wildcard receives add no dependency
(public miniGhost at 4 ranks completes its halo exchange with ``waitany``: taken for no
dependency, the path missed a rank's wait for its neighbour's compute before the exchange, 20 us
an iteration beyond the path where it was quiet, 50-60 us under the recording machine's bursts;
a drift of its balance predicted from the path: -1.53% from the full replay against a bound of
0.81%, now +0.09% against 0.38%); a trace whose dependencies cannot all be met (a receive no
send matches) gives None.  Which send each call waits for does not depend on time and is found
for all of them at once (:func:`_dependencies`); the clocks themselves take one pass in Python
over the actions, each rank running until a call waits for a send not yet posted, run only where
sampling needs them (a drift of the balance, a bound above its tolerance)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from .. import kinds as K
from ..validate.deadlocks import EAGER_THRESHOLD

_BLOCKING_RECVS = frozenset({"recv", "mrecv"})
#: Completions that block until the requests they completed are done: one named in the
#: ``request`` column (a ``waitany`` names the one it completed), or several in the vector (a
#: ``waitsome`` the ones it completed), as the replay lowers them (a wait of each).
_SINGLE_WAITS = frozenset({"wait", "waitany"})
_MANY_WAITS = frozenset({"waitall", "waitsome"})
#: ... and the tests that completed requests (FLAG_COMPLETED), which the replay lowers to waits
#: of them too: a test that failed completes nothing.
_SINGLE_TESTS = frozenset({"test", "testany"})
_MANY_TESTS = frozenset({"testall", "testsome"})
#: Sends that complete only once their receive is posted, as the replay sends them: a standard
#: or ready send (blocking, non-blocking, a ``sendrecv``'s half) of at least
#: ``smpi/send-is-detached-thresh`` bytes by rendezvous, a synchronous one at any size (its
#: acknowledgement, collectives/lowering.py); a buffered send never waits.
_RENDEZVOUS = frozenset({"send", "rsend", "isend", "irsend"}) | K.SENDRECVS
_SYNCHRONOUS = frozenset({"ssend", "issend"})
#: SimGrid's default ``smpi/send-is-detached-thresh`` (bytes), validate's too.
DETACHED = EAGER_THRESHOLD
#: What the clocks' loop does at a call (:func:`clocks`).
_WAIT, _COLLECTIVE, _OTHER = range(3)


def clocks(data, detached: int = DETACHED) -> np.ndarray | None:
    """Per row, its rank's clock (s of compute on the critical path) when the action starts,
    and per rank the clock at its end (``[len(actions) + nranks]``: row ``len + r`` is rank r's
    end); None where a dependency cannot be met (``detached``: the replay's
    ``smpi/send-is-detached-thresh``, from which a send waits for its receive).  The loop
    visits the calls, each rank's end taken for one more (at row ``len + r``), each adding the
    computes before it one by one (the same sums as a pass over every row); the computes' own
    clocks are filled in after."""
    a = data.actions
    n, nranks = len(a), data.nranks
    never = n + nranks                   # the row of a send that never comes: never visited
    wait_for, group, members = _dependencies(data, never, detached)
    compute = a["kind"] == K.code("compute")
    calls = np.flatnonzero(~compute)
    rank = data.rank_of(calls)
    owner = np.r_[rank, np.arange(nranks)]
    order = np.argsort(owner, kind="stable")
    step = np.r_[calls, n + np.arange(nranks)][order]          # by rank, each rank's end last
    place = np.r_[calls, data.rank_offsets[1:] - 0.5][order]   # where each step is among the rows
    first = np.searchsorted(owner[order], np.arange(nranks))   # each rank's first step
    gaps = _gaps(a["volume"], np.flatnonzero(compute), place)
    op = np.full(never + 1, _OTHER, np.int64)
    op[list(wait_for)] = _WAIT
    op[np.flatnonzero(group >= 0)] = _COLLECTIVE
    op, group, step = op.tolist(), group.tolist(), step.tolist()
    at: list = [None] * (never + 1)
    after = [0.0] * (never + 1)          # the clock after each call
    arrived: list[list[float]] = [[] for _ in members]   # per collective: its members' clocks
    pos, clock = first.tolist(), [0.0] * nranks
    stop = first[1:].tolist() + [len(step)]
    progress = True
    while progress:
        progress = False
        for r in range(nranks):
            j, end, t = pos[r], stop[r], clock[r]
            while j < end:
                i = step[j]
                visited = at[i] is not None
                if not visited:
                    for v in gaps[j]:
                        t += v
                    at[i] = t
                o = op[i]
                if o == _WAIT:
                    sends = [at[s] for s in wait_for[i]]
                    if None in sends:
                        break                            # a send it waits for is not posted
                    t = max([t] + sends)
                elif o == _COLLECTIVE:
                    c = arrived[group[i]]
                    if not visited:
                        c.append(t)
                    if len(c) < members[group[i]]:
                        break
                    t = max(t, max(c))
                after[i] = t
                j += 1
            progress |= j != pos[r]
            pos[r], clock[r] = j, t
    if pos != stop:
        return None
    out = np.array(at[:never], dtype=float)
    rows = np.flatnonzero(compute)
    lead = np.isin(rows, data.rank_offsets[:-1])
    prev = np.maximum(rows - 1, 0)        # a compute starts where the call before it ended
    out[rows] = np.where(lead, 0.0, np.asarray(after)[prev])
    pending = rows[~lead & compute[prev]]      # or where the compute before it did
    while len(pending):
        ready = ~np.isin(pending - 1, pending)
        out[pending[ready]] = out[pending[ready] - 1] + a["volume"][pending[ready] - 1]
        pending = pending[~ready]
    return out


def _gaps(volume: np.ndarray, computes: np.ndarray, place: np.ndarray) -> list[tuple]:
    """Per step of :func:`clocks` (``place``: where each is among the rows, in order), the
    volumes of the computes between it and the step before it, in order."""
    at = np.searchsorted(place, computes)
    out: list[tuple] = [()] * len(place)
    once = np.bincount(at, minlength=len(place))[at] == 1
    for j, v in zip(at[once].tolist(), volume[computes[once]].tolist()):
        out[j] = (v,)
    for j, v in zip(at[~once].tolist(), volume[computes[~once]].tolist()):
        out[j] += (v,)
    return out


def _dependencies(data, never: int, detached: int) -> tuple[dict, np.ndarray, list[int]]:
    """What each action waits for, which does not depend on time: per blocking row (a
    receive, a ``sendrecv``, a ``wait``/``waitall`` of posted receives) the rows of the sends
    it waits for, in the order the call lists them (``never``: a send that never comes), and
    per send that waits for its receive (:data:`_RENDEZVOUS` from ``detached`` bytes,
    :data:`_SYNCHRONOUS`), or its completion, the row of that receive, whose start posts it
    (one no receive matches waits for nothing); per row its blocking collective's number (-1:
    none), and each collective's member count.  A receive is matched to the send of the same
    source, destination, tag and communicator posted as often before it; a ``wait`` to the
    latest request posted under the id it names since that id's last completion."""
    a = data.actions
    n = len(a)
    kind, peer, tag, comm = a["kind"], a["peer"].astype(np.int64), a["tag"], a["comm"]
    rank = data.rank_of()
    sendrecv = K.mask(K.SENDRECVS)[kind]
    sends = np.flatnonzero(K.mask(K.SENDS | K.SENDRECVS)[kind] & (peer >= 0))
    pair = np.flatnonzero(sendrecv)
    source, recv_tag = (data.vector_item(pair, j) for j in (0, 1))
    recvs = K.mask(K.RECVS)[kind] & (peer >= 0)
    posts = np.r_[np.flatnonzero(recvs), pair[source >= 0]]
    by_row = np.argsort(posts, kind="stable")           # (a receive's place is in posting order)
    posts = posts[by_row]
    src = np.r_[peer[recvs], source[source >= 0]][by_row]
    rtag = np.r_[tag[recvs], recv_tag[source >= 0]][by_row]
    keys = _ids(np.r_[rank[sends], src], np.r_[peer[sends], rank[posts]],
                np.r_[tag[sends], rtag], np.r_[comm[sends], comm[posts]])
    side = np.r_[np.zeros(len(sends), np.int64), np.ones(len(posts), np.int64)]
    index = _count(_ids(side, keys))         # each send's, each receive's place in its key
    pairs = _ids(keys, index)
    send_of = np.full(int(pairs.max()) + 1 if len(pairs) else 0, never, np.int64)
    send_of[pairs[:len(sends)]] = sends
    match = np.full(n, never, np.int64)
    match[posts] = send_of[pairs[len(sends):]]
    blocking = posts[K.mask(_BLOCKING_RECVS | K.SENDRECVS)[kind[posts]]]
    wait_for = {i: [s] for i, s in zip(blocking.tolist(), match[blocking].tolist())}
    target = match.copy()                  # (per posting row: what its completion waits for)
    matched = posts[match[posts] < n]
    target[match[matched]] = matched                # (a send's: its receive)
    waiting = sends[(K.mask(_RENDEZVOUS)[kind[sends]] & (a["bytes_sent"][sends] >= detached)) |
                    K.mask(_SYNCHRONOUS)[kind[sends]]]
    waiting = waiting[np.isin(waiting, match[matched])]
    blocks = waiting[K.mask(K.BLOCKING_SENDS | K.SENDRECVS)[kind[waiting]]]
    for i, r in zip(blocks.tolist(), target[blocks].tolist()):
        wait_for.setdefault(i, []).append(r)
    posting = np.r_[np.flatnonzero(K.mask({"irecv", "imrecv"})[kind] & (peer >= 0)),
                    waiting[K.mask(K.NONBLOCKING_SENDS)[kind[waiting]]]]
    for i, rows in _completions(data, np.sort(posting), target, rank).items():
        wait_for.setdefault(i, []).extend(rows)
    coll = np.flatnonzero(K.mask(K.COLLECTIVES)[kind] & np.isin(comm, list(data.comms)))
    group = np.full(n, -1, np.int64)
    members = []
    if len(coll):
        seq = _count(_ids(rank[coll], comm[coll]))    # each rank's n-th on the comm
        ids = _ids(comm[coll], seq)
        group[coll] = ids
        size = {c: len(m) for c, m in data.comms.items()}
        members = [0] * (int(ids.max()) + 1)
        for g, c in zip(ids.tolist(), comm[coll].tolist()):
            members[g] = size[c]
    return wait_for, group, members


def _completions(data, posts: np.ndarray, target: np.ndarray, rank: np.ndarray) -> dict:
    """Per ``wait``/``waitall`` row that completes requests of ``posts`` (non-blocking
    receives, sends that wait for their receive), the rows they wait for (``target``: each
    post's, a receive's send, a send's receive), in its requests' order: a request is posted
    by its call and consumed by the next completion that names it."""
    a = data.actions
    kind = a["kind"]
    done_test = (a["flags"] & K.FLAG_COMPLETED) != 0       # (a test that completed: a wait)
    waits = np.flatnonzero(K.mask(_SINGLE_WAITS)[kind] |
                           (K.mask(_SINGLE_TESTS)[kind] & done_test))
    vrows, vals = data.vector_entries(np.flatnonzero(
        K.mask(_MANY_WAITS)[kind] | (K.mask(_MANY_TESTS)[kind] & done_test)))
    row = np.r_[posts, waits, vrows]
    req = np.r_[a["request"][posts], a["request"][waits], vals].astype(np.int64)
    done = np.r_[np.zeros(len(posts), bool), np.ones(len(waits) + len(vrows), bool)]
    order = np.lexsort((np.arange(len(row)), row, req, rank[row]))
    row, req, done, who = row[order], req[order], done[order], rank[row[order]]
    after_post = np.r_[False, ~done[:-1] & (req[1:] == req[:-1]) & (who[1:] == who[:-1])]
    hit = np.flatnonzero(done & after_post)
    send = target[row[hit - 1]]
    out: dict = {}
    for i, _, s in sorted(zip(row[hit].tolist(), order[hit].tolist(), send.tolist())):
        out.setdefault(i, []).append(s)
    return out


def _count(ids: np.ndarray) -> np.ndarray:
    """Per element, how many before it have its id."""
    order = np.argsort(ids, kind="stable")
    first = np.r_[True, ids[order][1:] != ids[order][:-1]]
    out = np.empty(len(ids), np.int64)
    place = np.arange(len(ids))
    out[order] = place - np.maximum.accumulate(np.where(first, place, 0))
    return out


def _ids(*cols) -> np.ndarray:
    """One dense id per row of the integer columns ``cols`` (equal rows, equal ids), by hashing
    (a sort of the rows as records is 20 times slower)."""
    key = np.zeros(len(cols[0]), np.int64)
    for c in cols:
        col, values = pd.factorize(np.asarray(c, np.int64))
        key = pd.factorize(key * len(values) + col)[0]
    return key.astype(np.int64)


def iteration_path(data, bounds: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per iteration of the loop ``bounds`` [nranks, iterations + 1], the critical path's
    advance over it: the mean over ranks of their clock's advance (as the sampled replay
    measures an iteration's time: the mean over ranks from one marker to the next)."""
    ends = data.rank_offsets[1:]
    rows = np.where(bounds >= ends[:, None], len(data.actions) + np.arange(len(bounds))[:, None],
                    bounds)
    return np.diff(at[rows], axis=1).mean(axis=0)
