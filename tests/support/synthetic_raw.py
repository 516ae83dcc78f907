"""Raw recordings of any number of ranks without running them: rank-NNNNNN.mtr files as the
recorder's shim writes them (rawlayout.py: header, one chunk per rank, check words), for the
tests and benchmarks of the merge (a 16,384-rank recording in seconds, on one machine).

Each rank: init, comm_split into groups of GROUP consecutive ranks (its definition record with
the members), then per iteration a sendrecv around the ring, an irecv from the left and an isend
to the right completed by a waitall (the irecv resolved at completion), an allreduce, and a
barrier on the group; finalize.  A valid trace: every message and collective matches."""
from __future__ import annotations

import os

import numpy as np

from minitrace import kinds as K
from minitrace import rawlayout as L

GROUP = 16
_REC = L.RECORD.dtype()
_HDR = L.HEADER.dtype()
_CHUNK = L.CHUNK.dtype()
_BODY = ("sendrecv", "irecv", "isend", "waitall", "resolve", "allreduce", "barrier")
_MASK32 = 0xFFFFFFFF


def _inline(a, b) -> np.ndarray:
    """Two int32 values inlined in a record's request field (vec_len -2)."""
    return (np.asarray(a, np.int64) & _MASK32) | (np.asarray(b, np.int64) << 32)


def _record(kind: int, vector=(), **fields) -> np.ndarray:
    """One record (the shim's defaults: no peer, tag or request, comm 0) and the continuation
    slots of its vector."""
    nc = -(-len(vector) // L.CONT_WORDS)
    out = np.zeros(1 + nc, _REC)
    out["peer"] = out["tag"] = out["request"] = -1
    out["kind"], out["vec_len"] = kind, len(vector)
    for k, v in fields.items():
        out[k][0] = v
    if nc:
        out["kind"][1:] = L.INTERNAL["cont"]
        payload = np.zeros(nc * L.CONT_WORDS, np.int64)
        payload[:len(vector)] = vector
        out.view(np.int64).reshape(1 + nc, -1)[1:, 1:] = payload.reshape(nc, L.CONT_WORDS)
    return out


def _records(rank: int, size: int, iterations: int, nbytes: int, seed: int) -> np.ndarray:
    """One rank's records, in order, check words included."""
    rng = np.random.default_rng(seed * 1_000_003 + rank)
    left, right = (rank - 1) % size, (rank + 1) % size
    lo = rank // GROUP * GROUP
    members = list(range(lo, min(lo + GROUP, size)))
    head = np.concatenate([
        _record(K.CODE["init"]),
        _record(K.CODE["comm_split"], [rank // GROUP, rank], request=1),
        _record(L.INTERNAL["commdef"], members, tag=1, peer=0)])   # local id 1, intra
    body = np.zeros((iterations, len(_BODY)), _REC)
    code = {n: (L.INTERNAL[n] if n == "resolve" else K.CODE[n]) for n in _BODY}
    body["kind"] = [code[n] for n in _BODY]
    body["peer"] = body["tag"] = body["request"] = -1
    req = np.arange(iterations, dtype=np.int64) * 2 + 10
    sr, ir, isd, wa, res, ar, bar = (body[:, j] for j in range(len(_BODY)))
    sr["peer"], sr["tag"], sr["bytes_sent"], sr["bytes_recv"] = right, 0, nbytes, nbytes
    sr["vec_len"], sr["request"] = -2, _inline(left, 0)
    ir["peer"], ir["tag"], ir["request"] = left, 1, req
    isd["peer"], isd["tag"], isd["bytes_sent"], isd["request"] = right, 1, nbytes, req + 1
    wa["vec_len"], wa["request"] = -2, _inline(req, req + 1)
    res["request"], res["peer"], res["tag"], res["bytes_recv"] = req, left, 1, nbytes
    ar["bytes_sent"] = ar["bytes_recv"] = 8
    bar["comm"] = 1
    recs = np.concatenate([head, body.ravel(), _record(K.CODE["finalize"])])
    cont = recs["kind"] == L.INTERNAL["cont"]
    saved = recs[cont].copy()
    mpi = recs["kind"] < L.INTERNAL["resolve"]
    n = int(mpi.sum())
    gap = rng.integers(20_000, 60_000, n)          # compute before each call, ns
    inside = rng.integers(500, 5_000, n)           # time in the call, ns
    t_end = np.zeros(len(recs), np.int64)
    t_end[mpi] = 1_000_000_000 + np.cumsum(gap + inside)
    recs["t_end"] = t_end = np.maximum.accumulate(t_end)   # internal records: the time so far
    recs["t_start"] = t_end
    recs["t_start"][mpi] -= inside
    recs["pre_volume"][mpi], recs["volume"][mpi] = gap, inside
    recs[cont] = saved                             # continuation slots: the vector only
    _check(recs)
    return recs


def _thread_records(recs: np.ndarray, thread: int) -> np.ndarray:
    """Another thread's copy of a rank's body (no init, split or finalize): the same calls at
    the same nanoseconds (ties between threads' start times), its own request handles."""
    first = int(np.flatnonzero(recs["kind"] == K.CODE["sendrecv"])[0])
    body = recs[first:-1].copy()
    own = body["request"] >= 10
    inline = body["vec_len"] == -2
    off = np.int64(thread) << 20
    body["request"][own & ~inline] += off
    wa = body["kind"] == K.CODE["waitall"]
    lo, hi = body["request"][wa] & _MASK32, body["request"][wa] >> 32
    body["request"][wa] = _inline(lo + off, hi + off)
    _check(body)
    return body


def _check(recs: np.ndarray) -> None:
    """Set each record's check word (rawlayout.CHECK) over its slot and continuations."""
    recs["check"] = 0
    w = recs.view(np.uint64).reshape(len(recs), -1)
    sums = L.slot_sums(w)
    starts = np.flatnonzero(recs["kind"] != L.INTERNAL["cont"])
    recs["check"][starts] = L.fold(np.add.reduceat(sums, starts) + np.uint64(L.CHECK_SEED))


def write_rank(path: str, rank: int, size: int, iterations: int, nbytes: int = 4096,
               seed: int = 0, threads: int = 1) -> int:
    """Write one rank's raw file (``threads`` > 1: as many chunks, the other threads repeating
    the first one's body at the same times); returns its size in bytes."""
    first = _records(rank, size, iterations, nbytes, seed)
    chunks = [first] + [_thread_records(first, t) for t in range(1, threads)]
    cb = (len(first) + 1) * _REC.itemsize
    h = np.zeros(1, _HDR)
    h["magic"], h["version"], h["header_bytes"] = L.MAGIC, L.VERSION, L.HEADER_BYTES
    h["rank"], h["size"], h["chunk_bytes"], h["rec_bytes"] = rank, size, cb, _REC.itemsize
    h["clock"], h["volume"] = L.CLOCKS["monotonic"], L.VOLUMES["cputime"]
    h["volume_requested"], h["finalized"], h["pid"] = L.VOLUMES["auto"], 1, rank
    h["nthreads"] = threads
    h["host"] = f"node{rank // 64:04d}".encode()
    h["library"], h["cmdline"] = b"synthetic (tests/support/synthetic_raw.py)", b"synthetic ring"
    page = np.zeros(L.HEADER_BYTES, np.uint8)
    page[:_HDR.itemsize] = h.view(np.uint8)
    with open(path, "wb") as f:
        f.write(page.tobytes())
        for t, recs in enumerate(chunks):
            ch = np.zeros(1, _CHUNK)
            ch["count"], ch["thread"] = len(recs), t
            cw = ch.view(np.uint64)
            ch["check"] = L.fold(cw[1:4] @ np.array(L.CHECK[1:4], np.uint64))
            slots = np.zeros(len(first), _REC)
            slots[:len(recs)] = recs
            f.write(ch.tobytes())
            f.write(slots.tobytes())
    return L.HEADER_BYTES + cb * threads


def write_run(directory: str, ranks: int, iterations: int, nbytes: int = 4096,
              seed: int = 0, threads: int = 1) -> int:
    """A raw directory of ``ranks`` files; returns the MPI actions recorded (computes not
    counted: the merged trace has about twice as many actions)."""
    os.makedirs(directory, exist_ok=True)
    for r in range(ranks):
        write_rank(os.path.join(directory, f"rank-{r:06d}.mtr"), r, ranks, iterations, nbytes,
                   seed, threads)
    return ranks * (threads * iterations * (len(_BODY) - 1) + 3)
