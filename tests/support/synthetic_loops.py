"""Iterative traces with known iteration boundaries (a 2-D stencil, CG, an AMR-like code with
refinement phases), of any length, for the tests and benchmarks of iteration sampling and noise
replicas.  Each generator returns the trace and its loop: ``bounds`` [nranks, iterations + 1],
iteration i of rank r being the rows ``bounds[r, i]:bounds[r, i + 1]`` (the interface of
``minitrace.compress.loops``).  Volumes are CPU seconds (``volume_unit`` seconds)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from minitrace import kinds as K
from minitrace.model import TraceColumns, assign_vec_offsets, empty_actions


@dataclass
class Step:
    """One action of an iteration's body: ``volume`` is seconds of compute per iteration (an
    array over iterations, or a number); ``waits`` the body steps whose requests a waitall
    completes."""
    kind: str
    peer: int = -1
    tag: int = -1
    nbytes: int = 0
    volume: object = 0.0
    waits: tuple = ()


def build(nranks: int, iterations, body=None, prologue=None, tail=None):
    """A trace of ``prologue(r)``, ``iterations`` x ``body(r)`` and ``tail(r)`` per rank (lists
    of :class:`Step`; a body's nonblocking steps get fresh requests every iteration).  Returns
    (TraceColumns, bounds).  Successive loops: ``iterations`` a list of (count, body) pairs;
    then bounds is a list, one per loop."""
    loops = iterations if body is None else [(iterations, body)]
    blocks, vectors = [], []
    bounds = [np.zeros((nranks, n + 1), np.int64) for n, _ in loops]
    start = 0
    for r in range(nranks):
        pro = _rows(prologue(r) if prologue else [Step("init")], 1, 0)
        parts = [pro]
        at = start + len(pro[0])
        for k, (n, fn) in enumerate(loops):
            steps = fn(r)
            parts.append(_rows(steps, n, (k + 1) << 20))
            bounds[k][r] = at + np.arange(n + 1) * len(steps)
            at += n * len(steps)
        parts.append(_rows(tail(r) if tail else [Step("finalize")], 1, (len(loops) + 1) << 20))
        blocks.append(np.concatenate([p[0] for p in parts]))
        vectors += [p[1] for p in parts]
        start += len(blocks[-1])
    actions = np.concatenate(blocks)
    assign_vec_offsets(actions)
    offsets = np.concatenate([[0], np.cumsum([len(b) for b in blocks])]).astype(np.int64)
    data = TraceColumns(actions, offsets, np.concatenate(vectors).astype(np.int64),
                        comms={0: np.arange(nranks, dtype=np.int32)},
                        meta={"volume_unit": "seconds", "nranks": nranks})
    return data, (bounds if body is None else bounds[0])


def _rows(steps: list[Step], n: int, req_base: int):
    """``steps`` repeated ``n`` times as actions (iteration-major), and the waitalls' vectors."""
    L = len(steps)
    a = empty_actions(L * n)
    it = np.repeat(np.arange(n), L)
    vec = []
    for j, s in enumerate(steps):
        rows = slice(j, None, L)
        a["kind"][rows] = K.CODE[s.kind]
        a["peer"][rows], a["tag"][rows] = s.peer, s.tag
        if s.kind in K.SENDS or s.kind in ("allreduce", "bcast", "alltoall", "reduce"):
            a["bytes_sent"][rows] = s.nbytes
        if s.kind in K.RECVS or s.kind in ("allreduce", "bcast", "alltoall", "reduce"):
            a["bytes_recv"][rows] = s.nbytes
        a["volume"][rows] = np.broadcast_to(np.asarray(s.volume, float), (n,))
        if s.kind in ("isend", "irecv"):
            a["request"][rows] = req_base + it[rows] * L + j
        if s.waits:
            a["vec_len"][rows] = len(s.waits)
    for j, s in enumerate(steps):
        if s.waits:
            ids = req_base + np.arange(n)[:, None] * L + np.asarray(s.waits)[None, :]
            vec.append((j, ids))
    if vec:   # waitall vectors in action order: iteration-major, then step order
        return a, np.concatenate([v[1] for v in vec], axis=1).reshape(-1)
    return a, np.zeros(0, np.int64)


def _jitter(rng, n: int, sigma: float) -> np.ndarray:
    """Multiplicative jitter of ``n`` iterations, clipped positive."""
    return np.clip(1.0 + sigma * rng.standard_normal(n), 0.2, None)


def stencil(nranks: int, iterations: int, compute: float = 2e-4, halo: int = 65536,
            jitter: float = 0.0, warmup: float = 0.0, seed: int = 0):
    """A 1-D-decomposed stencil: compute, then halo exchange with both neighbours (irecv,
    irecv, isend, isend, waitall), a residual allreduce; ``warmup``: the first iterations take
    up to (1 + warmup) times longer (cold caches), decaying over ~5 iterations."""
    rng = np.random.default_rng(seed)
    slow = 1.0 + warmup * np.exp(-np.arange(iterations) / 5.0)

    def body(r):
        left, right = (r - 1) % nranks, (r + 1) % nranks
        return [Step("compute", volume=compute * slow * _jitter(rng, iterations, jitter)),
                Step("irecv", left, 1, halo), Step("irecv", right, 2, halo),
                Step("isend", right, 1, halo), Step("isend", left, 2, halo),
                Step("waitall", waits=(1, 2, 3, 4)),
                Step("compute", volume=compute / 10 * _jitter(rng, iterations, jitter)),
                Step("allreduce", nbytes=8)]
    return build(nranks, iterations, body, _prologue(nranks), _tail())


def cg(nranks: int, iterations: int, compute: float = 1e-4, halo: int = 16384,
       jitter: float = 0.0, drift: float = 0.0, seed: int = 0):
    """Conjugate gradients: SpMV (compute) after a halo exchange with the neighbours, two dot
    products (allreduce of 8 bytes) and the vector updates; ``drift``: the SpMV grows by that
    fraction over the run (fill-in, a slowly growing working set)."""
    rng = np.random.default_rng(seed)
    grow = 1.0 + drift * np.arange(iterations) / max(iterations - 1, 1)

    def body(r):
        left, right = (r - 1) % nranks, (r + 1) % nranks
        return [Step("irecv", left, 3, halo), Step("isend", right, 3, halo),
                Step("waitall", waits=(0, 1)),
                Step("compute", volume=compute * grow * _jitter(rng, iterations, jitter)),
                Step("allreduce", nbytes=8),
                Step("compute", volume=compute / 4 * _jitter(rng, iterations, jitter)),
                Step("allreduce", nbytes=8),
                Step("compute", volume=compute / 4 * _jitter(rng, iterations, jitter))]
    return build(nranks, iterations, body, _prologue(nranks), _tail())


def amr(nranks: int, iterations: int, compute: float = 2e-4, phases: int = 4,
        jitter: float = 0.0, alternate: float = 0.0, seed: int = 0):
    """An AMR-like code: ``phases`` refinement phases of equal length, each with another load
    per rank (refined regions move: rank r's work is scaled by a per-phase factor in 0.5-2) and
    other halo sizes; ``alternate``: odd iterations do that fraction more work (a two-step
    time integrator)."""
    rng = np.random.default_rng(seed)
    phase = np.minimum(np.arange(iterations) * phases // iterations, phases - 1)
    load = rng.uniform(0.5, 2.0, (phases, nranks))
    halo = rng.integers(4096, 262144, phases)
    odd = 1.0 + alternate * (np.arange(iterations) % 2)

    def body(r):
        left, right = (r - 1) % nranks, (r + 1) % nranks
        work = compute * load[phase, r] * odd * _jitter(rng, iterations, jitter)
        # the halo size is the largest of the phases (a trace's sizes are per call, and the
        # loop's iterations must look alike to a loop detector); the work carries the phases
        return [Step("compute", volume=work),
                Step("irecv", left, 4, int(halo.max())), Step("isend", right, 4, int(halo.max())),
                Step("waitall", waits=(1, 2)),
                Step("allreduce", nbytes=64)]
    return build(nranks, iterations, body, _prologue(nranks), _tail())


def _prologue(nranks: int):
    return lambda r: [Step("init"), Step("compute", volume=1e-3), Step("bcast", 0, nbytes=4096)]


def _tail():
    return lambda r: [Step("allreduce", nbytes=8), Step("compute", volume=5e-4),
                      Step("finalize")]


def scaled_halos(data: TraceColumns, bounds: np.ndarray, factor: np.ndarray) -> TraceColumns:
    """``data`` with the halo messages (over 1000 bytes) of iteration i scaled by
    ``factor[i]``, alike on every rank (the messages still match): time in the calls that
    the iterations' compute does not explain."""
    acts = data.actions.copy()
    for r in range(len(bounds)):
        rows = np.arange(bounds[r, 0], bounds[r, -1])
        it = np.searchsorted(bounds[r], rows, side="right") - 1
        for f in ("bytes_sent", "bytes_recv"):
            big = acts[f][rows] > 1000
            acts[f][rows[big]] = (acts[f][rows[big]] * factor[it[big]]).astype(acts[f].dtype)
    return replace(data, actions=acts)
