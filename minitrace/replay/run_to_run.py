"""The run-to-run component of the replicas: a whole run faster or slower than another (the
machine's state, placement, frequency), which per-call-site noise drawn from one recording
cannot hold.  Within-run noise drawn per call site (:mod:`.noise`) keeps every replica near
the recording it came from: twelve runs of a CG mini-app each predicted with 100 replicas held
only 44% of the other runs' times.

From several recorded runs of the program on one machine (the same command and input; the
replayed trace may be one of them), each run's **span** (from the last rank out of MPI_Init to
the last rank into MPI_Finalize, less that rank's recorder's own time: the span of the
untraced run the replay predicts, as the self-check measures it) over the runs' median is
one draw of the run factor.  Each replica's time is multiplied by a factor drawn from what
those k runs say about the next one: a **Student's t predictive** centred on their median,
``1 + t(k - 1) sqrt(1 + 1/k) s``, with ``s`` the larger of the two sides' root-mean-square
deviations from the median (n - 1 in the divisor, over the n runs strictly below it, and over
those above; a side of one run takes the deviation of all k runs, k - 1 in the divisor; k - 1
degrees of freedom; kept positive).  Centred on the median, because run times on a shared
machine are skewed by the odd disturbed run: a normal predictive centred on the mean put the
replicas' median 1.8-7.6% above the runs' median on 12 runs of four programs (one miniFE run
took 1.8x the others).  The larger side's scale on both sides, because an odd run is as often
fast as slow there (12 runs of HPCCG spanned 0.82-1.18 of their median) and a side's scale
rests on half the runs: with each side its own scale (session 11-12), a run held out
beyond the others on either side fell outside the interval of the rest, and 12 runs of HPCCG
held 83% of each other (20 sets of 12 recorded runs of four programs, 2026-11-28: 83-100%
with each side's own, 92-100% with the larger; on draws of a normal law 95-98% for k = 3..11,
and 91-96% on laws with one run in ten 20-30% off, against 89-94%:
benchmarks/bench_run_factor.py, RESULTS.md session 13).  A resampling of k runs (the
bootstrap, smoothed or not) under-covers by construction: the next run falls outside the range
of 6 runs with probability 2/7.  The factor multiplies the whole replica (compute and
communication alike: how the runs differed is not known part by part), divided by the replayed
trace's own factor when it is timed (its span over the runs' median): a replay follows the run
it was recorded from (within a few percent), so a trace of a slow run is brought back to the
runs' middle before the factors spread it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import kinds as K
from ..errors import MinitraceError

#: Fewest runs a run-to-run spread is estimated from.
MIN_RUNS = 3


def bounds(data) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per rank, when its first MPI_Init returned and when its last MPI_Finalize was entered
    (the ends of what a recording times; NaN where the rank has no such record), and whether
    it has both records."""
    n = data.nranks
    init_end, fin_start, whole = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n, bool)
    a = data.actions
    for r in range(n):
        ra = a[data.rank_slice(r)]
        init = ra["t_end"][ra["kind"] == K.code("init")]
        fin = ra["t_start"][ra["kind"] == K.code("finalize")]
        if len(init):
            init_end[r] = init[0]
        if len(fin):
            fin_start[r] = fin[-1]
        whole[r] = len(init) and len(fin)
    return init_end, fin_start, whole


def span(data, source: str) -> float:
    """A recorded run's span in seconds: from the last rank out of MPI_Init to the last rank
    into MPI_Finalize, less that rank's recorder's own time (``recorder_seconds``, the clock
    reads the shim timed, when the trace has them): what the run would have taken untraced,
    the time a replay predicts.  The recorder took 0.4-2.5% of the spans of four programs'
    runs on the 2-core VM (2026-11-28, session 11), the more the shorter their compute
    segments: left in, every recorded run looked that much slower than the replicas."""
    init_end, fin_start, whole = bounds(data)
    if not whole.all():
        raise MinitraceError(f"rank {np.flatnonzero(~whole)[0]} has no MPI_Init or MPI_Finalize "
                             f"record: not a whole recorded run (--runs wants recorded runs)",
                             source)
    own = data.meta.get("recorder_seconds")
    last = int(np.argmax(fin_start))
    out = float(fin_start[last] - init_end.max()
                - (float(own[last]) if own is not None and len(own) == data.nranks else 0.0))
    if not np.isfinite(out) or out <= 0:
        raise MinitraceError("the recorded times put no time between MPI_Init and "
                             "MPI_Finalize (--runs wants timed recordings)", source)
    return out


def _enough(k: int) -> None:
    if k < MIN_RUNS:
        raise MinitraceError(f"--runs wants at least {MIN_RUNS} recorded runs of the program "
                             f"to estimate how whole runs differ, got {k}")


@dataclass
class RunToRun:
    """The runs' spans, and the scale of the predictive draw (the larger side's RMS deviation
    from the median times sqrt(1 + 1/k), relative to the median)."""
    paths: list
    spans: np.ndarray
    scale: float

    @classmethod
    def of(cls, paths: list[str]) -> "RunToRun":
        """The run factors of the recorded runs ``paths`` (MIN_RUNS or more)."""
        from .sampling import load_trace
        _enough(len(paths))                  # (before reading any file)
        return cls.of_spans(paths, [span(load_trace(p, p), p) for p in paths])

    @classmethod
    def of_spans(cls, paths: list[str], spans) -> "RunToRun":
        """The run factors of runs whose spans (seconds) are known: what :meth:`of` reads
        from the files (a benchmark holding one run out at a time reads them once)."""
        _enough(len(spans))
        spans = np.asarray(spans, float)
        d = spans / np.median(spans) - 1.0
        c = np.sqrt(1 + 1 / len(d))
        both = float(c * np.sqrt(np.sum(d ** 2) / (len(d) - 1)))

        def side(x):       # one run on a side says nothing of its spread: both sides' then
            return float(c * np.sqrt(np.sum(x ** 2) / (len(x) - 1))) if len(x) > 1 else both
        return cls(list(paths), spans, max(side(d[d < 0]), side(d[d > 0])))

    @property
    def factors(self) -> np.ndarray:
        return self.spans / np.median(self.spans)

    def draw(self, rng: np.random.Generator, n: int, own: float | None = None) -> np.ndarray:
        """``n`` run factors from the predictive t (k - 1 degrees of freedom, kept positive),
        over ``own`` (the replayed trace's span, if timed) relative to the runs' median."""
        t = rng.standard_t(len(self.spans) - 1, size=n)
        f = np.maximum(1.0 + t * self.scale, 1e-3)
        return f if own is None else f * np.median(self.spans) / own

    def note(self, own: float | None = None) -> str:
        f = self.factors
        out = (f"run-to-run: each replica's time multiplied by a run factor drawn from what "
               f"{len(f)} recorded runs' spans say of the next one ({f.min():.3f}-{f.max():.3f} "
               f"of their median; Student's t predictive around it, scale {self.scale:.3f}, "
               f"{len(f) - 1} degrees of freedom)")
        if own is None:
            return out + "; the trace has no times: taken as a run of the runs' middle"
        return out + (f", over the trace's own ({own / np.median(self.spans):.3f}: its span "
                      f"{own:.4g} s)")
