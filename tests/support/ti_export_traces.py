"""Seeded traces of every action kind the TI exporter writes (requests, modes, PROC_NULL,
sub-communicators, collectives with vectors, persistent requests...), for comparing exports
byte for byte against text committed in tests/data/ti_export/."""
from __future__ import annotations

import random

from minitrace import kinds as K
from minitrace.model import NONE, TraceBuilder

NRANKS = 4
#: (name, seed, actions per rank, only kinds lowering leaves as they are)
CASES = [("plain", 1, 400, True), ("plain_big", 2, 3000, True), ("mixed", 3, 400, False),
         ("mixed2", 4, 1500, False)]

_PLAIN = ["compute", "compute_float", "sleep", "send", "recv", "isend", "irecv", "wait",
          "waitall", "waitall", "coll", "comm"]
_MIXED = _PLAIN + ["mode_send", "mode_isend", "null", "unresolved", "subcomm_p2p", "waitany",
                   "test", "waitsome", "sendrecv", "vcoll", "subcoll", "persist", "mprobe",
                   "dropped", "icoll"]
_COLLS = ["barrier", "bcast", "reduce", "allreduce", "scan", "exscan", "alltoall", "allgather",
          "gather", "scatter"]


def build(seed: int, n: int, plain: bool):
    """A trace of NRANKS ranks, ``n`` random steps each (ranks are independent: the exporter
    writes each rank alone)."""
    rnd = random.Random(seed)
    b = TraceBuilder(NRANKS, meta={"volume_unit": "flops"})
    b.add_comm(1, [0, 2])
    P = NRANKS
    for r in range(P):
        add = lambda kind, **kw: b.add(r, kind, **kw)   # noqa: E731
        nxt = [0]
        pending: list[int] = []
        inits: list[int] = []

        def req() -> int:
            nxt[0] += 1
            return nxt[0] - 1

        def peer() -> int:
            return rnd.randrange(P)

        add("init")
        for _ in range(n):
            what = rnd.choice(_PLAIN if plain else _MIXED)
            tag, size = rnd.choice([0, 0, 1, 7]), rnd.choice([0, 8, 8192, 100000, 3])
            if what == "compute":
                add("compute", volume=float(rnd.randrange(10**7)))
            elif what == "compute_float":
                add("compute", volume=rnd.random() * 10 ** rnd.randrange(-6, 12))
            elif what == "sleep":
                add("sleep", volume=rnd.choice([0.5, 1.0, 1e-7, 3.25]))
            elif what in ("send", "mode_send"):
                kind = "send" if what == "send" else rnd.choice(sorted(K.BLOCKING_SENDS))
                add(kind, peer=peer(), tag=tag, bytes_sent=size)
            elif what == "recv":
                add("recv", peer=peer(), tag=tag, bytes_recv=size)
            elif what in ("isend", "irecv", "mode_isend"):
                q = req()
                kind = what if what != "mode_isend" else rnd.choice(sorted(K.NONBLOCKING_SENDS))
                add(kind, peer=peer(), tag=tag, request=q,
                    **({"bytes_recv": size} if kind == "irecv" else {"bytes_sent": size}))
                pending.append(q)
            elif what == "wait" and pending:
                add("wait", request=pending.pop(rnd.randrange(len(pending))))
            elif what == "waitall" and pending:
                ids = pending if rnd.random() < 0.7 or plain else pending[: len(pending) // 2]
                add("waitall", vector=list(ids))
                pending = [q for q in pending if q not in ids]
            elif what == "waitany" and pending:
                add(rnd.choice(["waitany", "testany"]), request=pending.pop(0),
                    flags=K.FLAG_COMPLETED)
            elif what == "test" and pending:
                done = rnd.random() < 0.5
                add("test", request=pending[-1], flags=K.FLAG_COMPLETED if done else 0)
                if done:
                    pending.pop()
            elif what == "waitsome" and pending:
                kind = rnd.choice(["waitsome", "testsome", "testall"])
                ids = pending[:2]
                add(kind, vector=ids, flags=K.FLAG_COMPLETED)
                pending = pending[2:]
            elif what == "null":
                kind = rnd.choice(["send", "recv", "isend", "irecv"])
                q = req() if kind[0] == "i" else NONE
                add(kind, peer=NONE, tag=tag, request=q)
                if q != NONE:
                    add("wait", request=q)
            elif what == "unresolved":
                add("recv", peer=rnd.choice([NONE, peer()]), tag=tag, bytes_recv=8,
                    flags=K.FLAG_UNRESOLVED)
            elif what == "subcomm_p2p":
                add("send", peer=peer(), tag=tag, comm=1, bytes_sent=size)
            elif what == "sendrecv":
                rtag = rnd.choice([0, 3])
                add(rnd.choice(["sendrecv", "sendrecv_replace"]), peer=peer(), tag=rtag,
                    bytes_sent=size, bytes_recv=size, vector=[peer(), rtag])
            elif what in ("coll", "subcoll"):
                kind = rnd.choice(_COLLS)
                root = rnd.randrange(P)
                total = rnd.choice([4096, 4096, 4098])
                add(kind, peer=root if kind in K.ROOTED else NONE, bytes_sent=total,
                    bytes_recv=total, volume=rnd.choice([0.0, 1000.0, 12.5]),
                    comm=1 if what == "subcoll" else 0)
            elif what == "vcoll":
                kind = rnd.choice(["gatherv", "scatterv", "allgatherv", "alltoallv", "alltoallw",
                                   "reduce_scatter", "reduce_scatter_block"])
                v = [rnd.randrange(100) for _ in range(2 * P if kind.startswith("alltoall")
                                                       else P)]
                add(kind, peer=rnd.randrange(P) if kind in K.ROOTED else NONE,
                    bytes_sent=sum(v), bytes_recv=v[0], volume=5.0, vector=v)
            elif what == "persist":
                if inits and rnd.random() < 0.6:
                    qs = rnd.sample(inits, min(len(inits), 2))
                    if len(qs) == 1:
                        add("start", request=qs[0])
                    else:
                        add("startall", vector=qs)
                    add("waitall", vector=qs)
                else:
                    q = req()
                    kind = rnd.choice(sorted(K.SEND_INITS) + ["recv_init"])
                    add(kind, peer=peer(), tag=tag, request=q,
                        **({"bytes_recv": size} if kind == "recv_init" else {"bytes_sent": size}))
                    inits.append(q)
            elif what == "mprobe":
                add("mprobe", peer=peer(), tag=tag, vector=[5])
                add("mrecv", peer=peer(), tag=tag, bytes_recv=size, vector=[5])
            elif what == "dropped":
                add(rnd.choice(["probe", "request_free", "comm_free", "region_begin", "pause"]))
            elif what == "icoll":
                add("iallreduce", bytes_sent=8, bytes_recv=8, request=req())
            elif what == "comm":
                add(rnd.choice(["comm_size", "comm_split", "comm_dup"]))
        add("waitall", vector=list(pending)) if pending else None
        add("finalize")
    return b.build()
