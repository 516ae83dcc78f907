"""The compute critical path of a trace: each rank's clock advances by its compute volumes, a
receive completes no earlier than its matching send was posted, a blocking collective no earlier
than its last member arrived; messages cost nothing.  What remains of a replay once the network
is infinitely fast: the static cost that follows an iteration's replayed time where ranks wait
on some neighbours only (LULESH's face-only exchange), which the slowest rank's compute, or the
sum of each superstep's slowest rank, does not.

Followed: sends and receives (point to point, matched in posting order per source, destination,
tag and communicator; a ``sendrecv``'s receive by its own source and tag), their
``wait``/``waitall``, ``sendrecv``, blocking collectives.  Other calls (tests,
``waitany``/``waitsome``, persistent and one-sided communication, non-blocking collectives) and
wildcard receives add no dependency; a trace whose dependencies cannot all be met (a receive no
send matches) gives None.  One pass in Python over the actions: about 2 us each (15 s for 8 M),
run only when the cheaper cost leaves the sampling bound above its tolerance."""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from .. import kinds as K

_BLOCKING_RECVS = frozenset({"recv", "mrecv"})


def clocks(data) -> np.ndarray | None:
    """Per row, its rank's clock (s of compute on the critical path) when the action starts,
    and per rank the clock at its end (``[len(actions) + nranks]``: row ``len + r`` is rank r's
    end); None where a dependency cannot be met."""
    a = data.actions
    name = K.NAME
    kind = [name.get(k, "") for k in a["kind"].tolist()]
    peer, tag, comm = a["peer"].tolist(), a["tag"].tolist(), a["comm"].tolist()
    volume, request = a["volume"].tolist(), a["request"].tolist()
    compute = K.code("compute")
    is_compute = (a["kind"] == compute).tolist()
    nranks = data.nranks
    offsets = data.rank_offsets.tolist()
    members = {c: len(m) for c, m in data.comms.items()}
    at = np.zeros(len(a) + nranks)
    pos, clock = offsets[:-1], [0.0] * nranks
    sent = defaultdict(list)           # (source, destination, tag, comm): send clocks in order
    received = defaultdict(int)        # the same key: receives posted so far
    posted = {}                        # (rank, request): (key, index) of a receive in flight
    held = {}                          # row of a blocking call met before: what it waits for
    arrived = defaultdict(list)        # (comm, sequence): clocks of the members there
    sequence = defaultdict(int)        # (rank, comm): collectives passed

    def post_recv(r, i, source, recv_tag):
        key = (source, r, recv_tag, comm[i])
        index = received[key]
        received[key] += 1
        return key, index

    progress = True
    while progress:
        progress = False
        for r in range(nranks):
            i, end, t = pos[r], offsets[r + 1], clock[r]
            while i < end:
                at[i] = t
                if is_compute[i]:
                    t += volume[i]
                    i += 1
                    continue
                k = kind[i]
                waits = ()
                if k in K.SENDS or k in K.SENDRECVS:
                    if i not in held:
                        if peer[i] >= 0:
                            sent[(r, peer[i], tag[i], comm[i])].append(t)
                        source, recv_tag = (int(data.vector_item(np.array([i]), j)[0])
                                            for j in (0, 1)) if k in K.SENDRECVS else (-1, -1)
                        held[i] = (post_recv(r, i, source, recv_tag),) if source >= 0 else ()
                    waits = held[i]
                elif k in K.RECVS:
                    if peer[i] >= 0:
                        if k in _BLOCKING_RECVS:
                            if i not in held:
                                held[i] = (post_recv(r, i, peer[i], tag[i]),)
                            waits = held[i]
                        else:
                            posted[(r, request[i])] = post_recv(r, i, peer[i], tag[i])
                elif k in ("wait", "waitall"):
                    reqs = [request[i]] if k == "wait" else data.vector(i).tolist()
                    waits = [posted[(r, q)] for q in reqs if (r, q) in posted]
                elif k in K.COLLECTIVES and comm[i] in members:
                    c = (comm[i], sequence[(r, comm[i])])
                    if i not in held:
                        held[i] = ()
                        arrived[c].append(t)
                    if len(arrived[c]) < members[comm[i]]:
                        break
                    t = max(t, max(arrived[c]))
                    sequence[(r, comm[i])] += 1
                if waits:
                    if any(len(sent[key]) <= index for key, index in waits):
                        break                            # its send is not posted yet
                    t = max([t] + [sent[key][index] for key, index in waits])
                    if k in ("wait", "waitall"):
                        for q in reqs:
                            posted.pop((r, q), None)
                i += 1
            progress |= i != pos[r]
            pos[r], clock[r] = i, t
    if any(pos[r] != offsets[r + 1] for r in range(nranks)):
        return None
    at[len(a):] = clock
    return at


def iteration_path(data, bounds: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Per iteration of the loop ``bounds`` [nranks, iterations + 1], the critical path's
    advance over it: the mean over ranks of their clock's advance (as the sampled replay
    measures an iteration's time: the mean over ranks from one marker to the next)."""
    ends = data.rank_offsets[1:]
    rows = np.where(bounds >= ends[:, None], len(data.actions) + np.arange(len(bounds))[:, None],
                    bounds)
    return np.diff(at[rows], axis=1).mean(axis=0)
