"""Noise replicas: replay a trace N times, each replica's compute volumes drawn from a noise model
(:mod:`.noise`), to give the run time as a distribution: mean, median, a 95% interval, and
how late each rank finishes.

Replicas run in parallel, a process per core (each replay is itself a SimGrid child process);
under ``mpiexec -n K`` (mpi4py) rank i replays replicas i, i + K, ... and rank 0 gathers them,
so a cluster allocation runs them.  Replica i draws from the i-th child of the seed's
``SeedSequence``: the same seed gives the same replicas however they are spread.

With iteration sampling (:mod:`.sampling`), the plan (which iterations are replayed) is made
once on the trace as recorded; every replica replays the reduced trace with its own volumes
and predicts its skipped iterations from its own replayed ones (the line against their static
cost), adding residuals drawn from its replayed iterations' residuals, so that the noise of the
skipped iterations is in the spread too."""
from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from multiprocessing import get_context

import numpy as np

from ..errors import MinitraceError
from .api import replay
from .noise import noise_model
from .run_to_run import RunToRun, span
from .sampling import _marker_times, load_trace, reduce_trace, sampled_replay, skipped_line

_STATE: dict = {}


@dataclass
class ReplicaResult:
    """N replicas' run times, the plain prediction they scatter around, and the noise model."""
    times: np.ndarray                 # s, per replica
    rank_end_times: np.ndarray        # s, [replicas, nranks]
    plain_time: float                 # s, the replay without noise (sampled if sampling)
    plain_rank_end_times: list[float]
    noise: str
    assumptions: list[str]
    seed: int | None
    notes: list[str] = field(default_factory=list)
    sampled: object = None            # the SampledReplay of the plain trace, if sampling

    def summary(self) -> dict:
        """mean, median, sd, and ``lo``/``hi``: the 95% interval of the run time of a run of the
        program, the replicas' 2.5th and 97.5th percentiles.  With noise from the trace every
        replica draws its volume laws with their estimation uncertainty
        (:mod:`.volume_law`), so the replicas are draws of the posterior predictive law of a
        run's time, not of this recording's own draws again."""
        t = self.times
        lo, med, hi = np.percentile(t, [2.5, 50, 97.5])
        return {"replicas": len(t), "mean": float(t.mean()), "median": float(med),
                "lo": float(lo), "hi": float(hi),
                "sd": float(t.std(ddof=1)) if len(t) > 1 else 0.0}

    def lateness(self):
        """Per rank: mean and 95th percentile of how much later it finishes than without
        noise, and the share of replicas it finished last in (a pandas table)."""
        import pandas as pd
        late = self.rank_end_times - np.asarray(self.plain_rank_end_times)[None, :]
        last = np.bincount(self.rank_end_times.argmax(axis=1),
                           minlength=self.rank_end_times.shape[1]) / len(self.times)
        return pd.DataFrame({"mean_lateness": late.mean(0),
                             "p95_lateness": np.percentile(late, 95, axis=0),
                             "last_share": last}).rename_axis("rank")

    def to_dict(self) -> dict:
        return {"noise": self.noise, "seed": self.seed, "assumptions": self.assumptions,
                "plain_time": self.plain_time, **self.summary(),
                "times": self.times.tolist(),
                "lateness": self.lateness().reset_index().to_dict(orient="records"),
                "notes": self.notes,
                "sampling": None if self.sampled is None else self.sampled.to_dict()}

    def plot(self, path: str, title: str = "") -> None:
        """Histogram of the replicas' run times, the mean, the 95% interval and the plain
        replay marked."""
        from ..analysis.plotting import plt, save
        s = self.summary()
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.hist(self.times, bins=max(10, min(50, len(self.times) // 4)), color="tab:blue",
                alpha=0.8)
        ax.axvline(s["mean"], color="k", label=f"mean {s['mean']:.6g} s")
        ax.axvspan(s["lo"], s["hi"], color="tab:orange", alpha=0.2,
                   label=f"95% for a run: {s['lo']:.6g}-{s['hi']:.6g} s")
        ax.axvline(self.plain_time, color="tab:red", ls="--",
                   label=f"without noise {self.plain_time:.6g} s")
        ax.set_xlabel("predicted run time (s)")
        ax.set_ylabel("replicas")
        ax.set_title(title or f"{len(self.times)} replicas, noise: {self.noise}")
        ax.legend(fontsize="small")
        fig.tight_layout()
        save(fig, path)


def replicas(trace, n: int, noise: str = "trace", seed: int | None = None,
             sample="off", loops=None, workers: int | None = None, progress: bool = False,
             runs: list[str] | None = None, **replay_kw) -> ReplicaResult:
    """Replay ``n`` noisy replicas of ``trace``.

    Parameters
    ----------
    trace : str, Trace or TraceColumns
        A minitrace trace.
    n : int
        Number of replicas (>= 1).
    noise : str
        "trace" (the trace's own volumes per call site and rank), "none", or a variability
        benchmark file (docs/BENCH.md).
    seed : int, optional
        Seed of the draws (None: fresh entropy, printed so the run can be repeated).
    sample : "off", "auto" or int
        Iteration sampling (:func:`minitrace.replay.sampling.sampled_replay`).
    loops : list of ndarray, optional
        Iteration bounds of the loops (default: a compressed file's stored loops, else those
        :func:`minitrace.replay.sampling.loops_of` finds).
    workers : int, optional
        Processes (default: one per core; under mpiexec the MPI ranks).
    runs : list of str, optional
        Recorded runs of the program on this machine (3 or more; the trace may be one): each
        replica's time is multiplied by a run factor drawn from their spans
        (:mod:`.run_to_run`).
    **replay_kw
        Passed to every replay (platform, cluster, compute_rate, ...).

    Returns
    -------
    ReplicaResult
    """
    if n < 1:
        raise MinitraceError(f"--replicas wants at least 1 replica, got {n}")
    source = os.fspath(trace) if isinstance(trace, (str, os.PathLike)) else None
    data = load_trace(trace, source)
    model = noise_model(data, noise, source)
    between = RunToRun.of(runs) if runs else None
    if seed is None:
        seed = int(np.random.SeedSequence().entropy % (1 << 63))
    notes: list[str] = []
    sampled = None
    if sample != "off":
        sampled = sampled_replay(data, loops, sample, **replay_kw)
        plain_time, plain_ends = sampled.simulated_time, sampled.rank_end_times
        notes += sampled.notes
        if not sampled.phases:
            sampled = None
    else:
        res = replay(data, **replay_kw)
        plain_time, plain_ends = res.simulated_time, list(res.rank_end_times)
    state = {"data": data, "model": model, "kw": replay_kw, "sampled": sampled,
             "loops": sampled.loops if sampled else None}
    children = np.random.SeedSequence(seed).spawn(n)
    out = _run_all(state, children, workers, progress)
    times = np.array([o[0] for o in out])
    ends = np.array([o[1] for o in out])
    assumptions = list(model.assumptions)
    if between is not None:     # drawn apart from the replicas' volumes: the same seed gives
        #                             the same volumes with or without --runs
        own = _own_span(data, source)
        f = between.draw(np.random.default_rng([seed, 1]), n, own)
        times, ends = times * f, ends * f[:, None]
        assumptions.append(between.note(own))
    return ReplicaResult(times, ends, plain_time, list(plain_ends), model.source,
                         assumptions, seed, notes, sampled)


def _own_span(data, source: str | None) -> float | None:
    """The replayed trace's recorded span (:func:`.run_to_run.span`), None when it has no
    times (an extrapolated or converted trace; checked first: span reads every rank)."""
    if not np.any(data.actions["t_end"]):
        return None
    try:
        return span(data, source or "the trace")
    except MinitraceError:
        return None


def _mpi_world():
    """The MPI world communicator when running under mpiexec with more than one rank."""
    if not any(k in os.environ for k in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_RANK",
                                         "MPI_LOCALNRANKS", "HYDRA_CONTROL_FD")):
        return None
    from mpi4py import MPI
    return MPI.COMM_WORLD if MPI.COMM_WORLD.Get_size() > 1 else None


def _run_all(state: dict, children, workers: int | None, progress: bool) -> list:
    """Every replica's (run time, rank end times), in replica order."""
    comm = _mpi_world()
    _STATE.clear()
    _STATE.update(state)
    idx = list(range(len(children)))
    if comm is not None:
        mine = [(i, _one(i, children[i])) for i in idx[comm.Get_rank()::comm.Get_size()]]
        got = comm.allgather(mine)
        return [r for _, r in sorted(x for part in got for x in part)]
    workers = workers or os.cpu_count() or 1
    bar = _bar(len(idx), progress)
    try:
        if workers == 1 or len(idx) == 1:
            out = []
            for i in idx:
                out.append(_one(i, children[i]))
                bar.update()
            return out
        with ProcessPoolExecutor(min(workers, len(idx)), mp_context=get_context("fork")) as ex:
            futs = [ex.submit(_one, i, children[i]) for i in idx]
            out = []
            for f in futs:
                out.append(f.result())
                bar.update()
            return out
    finally:
        bar.close()


def _bar(total: int, progress: bool):
    from tqdm import tqdm
    return tqdm(total=total, unit=" replicas", desc="replicas", leave=False,
                disable=not progress)


def _one(i: int, seq: np.random.SeedSequence) -> tuple[float, list[float]]:
    """Replica ``i``: its volumes, its replay (reduced if sampling), its run time."""
    data, model, kw, sampled = (_STATE[k] for k in ("data", "model", "kw", "sampled"))
    rng = np.random.default_rng(seq)
    if sampled is not None:
        return _sampled_replica(model, rng)
    actions = data.actions.copy()
    actions["volume"] = model.volumes(data, rng)
    res = replay(replace(data, actions=actions), **kw)
    return res.simulated_time, list(res.rank_end_times)


def _plan(data, model, loops, phases) -> dict:
    """What every sampled replica of a process shares: the reduced trace, where its compute
    rows are among the model's, and for each loop the (rank, iteration) cell of each compute
    row inside it, so that a replica's static costs are one bincount of its drawn volumes."""
    reduced, origin, marks, _ = reduce_trace(data, loops, phases)
    compute = np.flatnonzero((origin >= 0) & np.isin(origin, model.rows))
    cells = []
    for b in loops:          # rows are rank-major, so the bounds flattened are increasing
        r = model.rank
        which = np.flatnonzero((model.rows >= b[r, 0]) & (model.rows < b[r, -1]))
        flat = np.searchsorted(b.ravel(), model.rows[which], side="right") - 1
        it = flat - r[which] * b.shape[1]
        cells.append((which, r[which] * (b.shape[1] - 1) + it, b.shape))
    return {"reduced": reduced, "origin": origin, "marks": marks,
            "compute": compute, "at": np.searchsorted(model.rows, origin[compute]),
            "cells": cells, "recorded": data.actions["volume"][model.rows]}


def _sampled_replica(model, rng) -> tuple[float, list[float]]:
    """A replica with the plain run's sampling plan: the reduced trace replayed with this
    replica's volumes, its skipped iterations predicted from its replayed ones (the line
    against the static costs of this replica's volumes) plus residuals drawn from theirs."""
    data, kw, sampled, loops = (_STATE[k] for k in ("data", "kw", "sampled", "loops"))
    if "plan" not in _STATE:         # built once per process
        _STATE["plan"] = _plan(data, model, loops, sampled.phases)
    plan = _STATE["plan"]
    drawn = model.draw(plan["recorded"], rng)
    reduced = plan["reduced"]
    actions = reduced.actions.copy()
    actions["volume"][plan["compute"]] = drawn[plan["at"]]
    res = replay(replace(reduced, actions=actions), timeline="times", **kw)
    times = _marker_times(res.timeline, reduced, plan["origin"], plan["marks"], sampled.phases)
    skipped = 0.0
    for pi, p in enumerate(sampled.phases):
        if p.skipped:
            which, cell, (nranks, n) = plan["cells"][p.loop]
            cost = np.bincount(cell, drawn[which], minlength=nranks * (n - 1)) \
                .reshape(nranks, n - 1).max(axis=0)[p.first:p.stop]
            pred, resid, _, _ = skipped_line(p, times[pi], cost)
            skipped += float(pred.sum()) + float(rng.choice(resid, p.skipped).sum())
    ends = [float(e + skipped) for e in res.rank_end_times]
    return max(ends), ends
