"""What the signatures leave out: compute volumes and timestamps, in two modes.

``exact``: every value kept, in side arrays aligned with the expanded actions (rank-major), so
that the whole trace round-trips bit-identically (the same values as reading the uncompressed
file): volumes only for the actions of signatures that have one, as integers of a quantum when
that is exact; times as integer nanoseconds since ``t0``, each action's start as the *gap*
since the previous action's end (small and regular in a loop) and its duration less its
volume when the volume is in seconds (a compute lasts its volume: 0 left to store).  Traces
not timed everywhere keep float seconds.

``model``: nothing per action.  Volumes: the epoch model of :mod:`.epochs` (per rank and
stretch between synchronizations the total, per call site and rank the mean), on the
logarithmic scale of :func:`log_codes`, whose bins are ``1 + 2 * precision`` wide (a bin's
value is within ``precision`` of every value in it); each rank's volume total and first/last
times exact.  Times: per signature and rank group (ranks sharing a grammar) the count, mean and
standard deviation of durations and gaps; expanded, each action lasts its group's
mean duration after its mean gap, stretched to the rank's exact span.
"""
from __future__ import annotations

import numpy as np

from ..errors import MinitraceError

NS = 1e9
MODES = ("exact", "model")
#: Offset of log-bin indices in bin codes (a code is sign * (index + offset); 0 is zero).
_LOG_BIAS = 1 << 20
#: Codes of magnitude from here hold the indices at or below ``-_LOG_BIAS`` (values so small
#: for the precision that ``index + offset`` would not be positive): magnitude ``_LOG_WIDE +
#: (-_LOG_BIAS - index)``.  Above every index ``+ _LOG_BIAS`` at :data:`FINEST_PRECISION`
#: (largest float64: index < 3.6e11), so the codes below it read as before (session 12).
_LOG_WIDE = 1 << 40
#: Finest precision of log codes (finer: a float64's index could reach :data:`_LOG_WIDE`).
FINEST_PRECISION = 1e-9


def rank_starts(offsets: np.ndarray) -> np.ndarray:
    """First row of each rank that has actions."""
    return offsets[:-1][offsets[:-1] < offsets[1:]]


def segment_sums(x: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Sums of ``x`` over its segments ``[starts, starts + lengths)`` in ``x``'s type (exact
    for integers, wrapping for unsigned ones), 0 for an empty segment: by prefix sums
    (``np.add.reduceat`` takes the next value for an empty segment and fails on one at the
    end)."""
    total = np.concatenate([np.zeros(1, x.dtype), np.cumsum(x, dtype=x.dtype)])
    return total[starts + lengths] - total[starts]


def volume_rows(volume: np.ndarray) -> np.ndarray:
    """Actions whose volume is not +0.0 (bitwise: -0.0 and NaN are kept)."""
    return np.ascontiguousarray(volume).view(np.int64) != 0


def quantize(volume: np.ndarray, unit: str):
    """(stored array, divisor or None, scale or None): integers that give the volumes back
    divided by the divisor (1e9 for seconds: nanoseconds; 1 otherwise), or multiplied by the
    scale (1e-9: how the recorder makes seconds of its nanoseconds), whichever is exact; else
    float64 and two Nones."""
    divisor = 1e9 if unit == "seconds" else 1.0
    q = np.rint(volume * divisor) if len(volume) else np.zeros(0)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = bool(np.isfinite(volume).all()) and (len(q) == 0 or np.abs(q).max() < 2 ** 62) \
            and not np.signbit(volume[volume == 0]).any()
        if ok and np.array_equal(q / divisor, volume):
            return q.astype(np.int64), divisor, None
        if ok and np.array_equal(q * (1 / divisor), volume):
            return q.astype(np.int64), None, 1 / divisor
    return volume.astype(np.float64), None, None


def quantized_attrs(divisor, scale) -> tuple[dict, bool]:
    """The ``/trace`` attributes :func:`dequantize` reads :func:`quantize`'s volumes back by,
    and whether those are whole nanoseconds (exact times then store a compute's duration less
    its volume, ``duration_less_volume``)."""
    attrs = {k: v for k, v in (("volume_divisor", divisor), ("volume_scale", scale))
             if v is not None}
    return attrs, divisor == 1e9 or scale == 1e-9


def dequantize(stored: np.ndarray, attrs: dict) -> np.ndarray:
    """The volumes an exact-mode file stores, as its ``/trace`` attributes say they are coded:
    log-scale codes within ``volume_bound``, integers of ``volume_divisor`` or
    ``volume_scale`` (:func:`quantize`), or float64."""
    if "volume_bound" in attrs:
        return from_codes(stored, attrs["volume_bound"])
    if attrs.get("volume_divisor") is not None:
        return stored / attrs["volume_divisor"]
    if attrs.get("volume_scale") is not None:
        return stored * attrs["volume_scale"]
    return stored.astype(np.float64, copy=False)


# -- exact times -------------------------------------------------------------------------------

def parse_bound(spec: str, what: str) -> float | None:
    """The relative bound of ``bounded:P%`` (None for any other mode)."""
    if not spec.startswith("bounded:"):
        return None
    text = spec[len("bounded:"):]
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float("nan")
    except ValueError:
        value = float("nan")
    if not FINEST_PRECISION <= value < 1:
        raise MinitraceError(f"--{what} bounded:P% wants a percentage above 0 (at least "
                             f"{100 * FINEST_PRECISION:g}) and below 100, got {spec!r}")
    return value


_TIME_UNITS = {"ns": 1, "us": 1000, "ms": 1_000_000}


def parse_quantum(spec: str) -> int:
    """The time grid, in ns, of ``--times bounded:T`` (T with ns, us or ms): every start and end
    is rounded to a multiple of 2T from t0, within T of its own; 1 for ``exact``."""
    if spec == "exact":
        return 1
    text = spec[len("bounded:"):] if spec.startswith("bounded:") else ""
    unit = next((u for u in _TIME_UNITS if text.endswith(u)), None)
    try:
        value = float(text[:-2]) * _TIME_UNITS[unit] if unit else float("nan")
    except ValueError:
        value = float("nan")
    if not 1 <= value <= NS / 2:
        raise MinitraceError(f"--times wants exact or bounded:T with T from 1ns to 0.5s "
                             f"(ns, us, ms), got {spec!r}")
    return max(int(2 * value), 1)


#: Predicted durations are capped at this many ns (2**40: 18 minutes; the step codes the rest).
_MAX_PREDICTED = 1 << 40


def predicted_durations(volumes: np.ndarray) -> np.ndarray:
    """Each action's predicted duration in integer ns under ``time_coding`` (store.py): its
    volume (as a reader decodes it, in seconds) rounded to ns, 0 where it is not above 0 or
    not finite, at most :data:`_MAX_PREDICTED` (a compute lasts about its CPU time)."""
    with np.errstate(invalid="ignore", over="ignore"):
        q = np.rint(np.asarray(volumes, np.float64) * NS)
        ok = np.isfinite(q) & (q > 0)
        return np.where(ok, np.minimum(np.where(ok, q, 0), _MAX_PREDICTED), 0).astype(np.int64)


def coded_durations(stored: np.ndarray, attrs: dict) -> np.ndarray:
    """:func:`predicted_durations` of the volumes :func:`dequantize` reads of ``stored``: of
    log codes (bounded volumes: a few hundred codes over a range narrower than their count)
    by a table over the codes' range, else value by value (the same numbers: each a function
    of its code alone)."""
    if "volume_bound" in attrs and len(stored):
        codes = np.asarray(stored, np.int64)
        lo, hi = int(codes.min()), int(codes.max())
        if hi - lo < len(codes):
            table = predicted_durations(from_codes(np.arange(lo, hi + 1, dtype=np.int64),
                                                   attrs["volume_bound"]))
            return table[codes - lo]
    return predicted_durations(dequantize(stored, attrs))


def feedback_step(quantum: int) -> tuple[int, int]:
    """(h, step) of the predicted time coding for a grid of ``quantum`` ns: each decoded
    start and end within h ns of its integer ns (h + 1/2 <= quantum / 2), moved in steps of
    ``2h + 1`` ns."""
    h = max((int(quantum) - 1) // 2, 0)
    return h, 2 * h + 1


#: Octaves of a predicted duration a step's context tells apart (:func:`step_keys`).
STEP_OCTAVES = 64


def duration_octaves(stored: np.ndarray, attrs: dict, quantum: int) -> np.ndarray:
    """Each volume's predicted duration's octave in steps of the time grid of ``quantum``
    (``floor(log2(pred // step + 1))`` of :func:`coded_durations`' pred, by exact integers: a
    coder and a decoder on any machine find the same), by a table over the codes' range where
    it is narrower than their count (bounded volumes: a few hundred codes)."""
    _, step = feedback_step(quantum)

    def octave(codes: np.ndarray) -> np.ndarray:
        pred = coded_durations(codes, attrs)
        return np.frexp((pred // step + 1).astype(np.float64))[1].astype(np.int64) - 1
    codes = np.asarray(stored, np.int64)
    if "volume_bound" in attrs and len(codes):
        lo, hi = int(codes.min()), int(codes.max())
        if hi - lo < len(codes):
            return octave(np.arange(lo, hi + 1, dtype=np.int64))[codes - lo]
    return octave(codes)


def step_keys(fine: np.ndarray, coarse: np.ndarray, octave: np.ndarray):
    """(fine, coarse) context keys (context_rans.py) of the duration steps of
    :func:`_predicted_steps`: each action's call keys with the octave of its predicted
    duration in steps (:func:`duration_octaves`, 0 for an action without a volume).  A step's
    spread grows with its prediction (a bounded volume is within 1% of the CPU time that
    predicts its duration: 8 us of a 400 us compute, 0.25 us of a 25 us one), and one call
    site mixes short and long ones (miniGhost 4r's bounded file 5% smaller, miniAMR 4r's 3%)."""
    with np.errstate(over="ignore"):
        f, c = fine * STEP_OCTAVES, coarse * STEP_OCTAVES
    f += octave
    c += octave
    return f, c


def _predicted_steps(x: np.ndarray, pred: np.ndarray, offsets: np.ndarray, quantum: int):
    """(gap steps, duration steps, decoded chain) coding integer-ns starts and ends (``x``:
    start, end, start, end... of each rank's actions, from t0) against their predictions (a
    start at the previous decoded end, an end at its start plus ``pred``), with error
    feedback: each decoded time is
    the prediction plus the steps that keep it within h of its own (:func:`feedback_step`),
    so a value's error carries into the next prediction and most steps are 0.  The decoded
    value's error is the running sum of the prediction errors wrapped into [-h, h], hence
    vectorized.  None when a rank's times go backwards (the decoder's running maximum, which
    keeps every end at or after its start, is then not within the bound)."""
    n2 = len(x)
    firsts = 2 * rank_starts(offsets)
    delta = np.empty(n2, np.int64)                # each time's increment...
    np.subtract(x[1:], x[:-1], out=delta[1:])
    delta[firsts] = x[firsts]
    back = delta < 0
    back[firsts] = False
    if back.any():
        return None
    np.negative(delta, out=delta)                 # ...and the prediction's error
    delta[1::2] += pred
    # (in place, as every array below: a new array of ~8 MB costs its pages' first touch)
    c = np.cumsum(delta, out=delta)               # (wrapping: exact per rank after the base)
    bases = c[firsts[1:] - 1].copy()              # (each rank's sum before it)
    for lo, hi, base in zip(firsts[1:], np.append(firsts[2:], n2), bases.tolist()):
        if base:
            c[lo:hi] -= base
    h, step = feedback_step(quantum)
    # the error, c wrapped into [-h, h], is c - q * step: q the whole steps taken so far (an
    # integer floor division by one number: numpy's libdivide, 6x its floats' division,
    # floor and conversion)
    qi = np.add(c, h)
    np.floor_divide(qi, step, out=qi)
    # the decoder's steps: minus q's differences (from 0 at each rank's first time)
    gap = np.empty(n2 // 2, np.int64)
    np.subtract(qi[1:-1:2], qi[2::2], out=gap[1:])
    gap[firsts // 2] = -qi[firsts]
    dur = np.subtract(qi[0::2], qi[1::2])
    qi *= -step
    qi += c
    qi += x
    return gap, dur, qi


def decode_predicted(gap: np.ndarray, dur: np.ndarray, pred: np.ndarray, quantum: int,
                     ns: int, top: int) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(starts, ends, ns, top) in integer ns from t0 of consecutive actions of one rank coded
    by :func:`_predicted_steps`: ``ns`` the decoded chain's value before them (the previous
    action's end, 0 at the rank's start), ``top`` the largest decoded time before them (each
    time is the running maximum of the chain, so no end precedes its start)."""
    _, step = feedback_step(quantum)
    inc = np.empty(2 * len(gap), np.int64)
    inc[0::2] = gap.astype(np.int64) * step
    inc[1::2] = pred + dur.astype(np.int64) * step
    chain = ns + np.cumsum(inc)
    out = np.maximum.accumulate(np.concatenate([[top], chain]))[1:]
    if not len(chain):
        return out[0::2], out[1::2], ns, top
    return out[0::2], out[1::2], int(chain[-1]), int(out[-1])


#: ``top`` before a rank's first action (nothing decoded yet).
NO_TIME = np.iinfo(np.int64).min


def encode_times(ts: np.ndarray, te: np.ndarray, offsets: np.ndarray, vol_ns: np.ndarray | None,
                 quantum: int = 1, gaps: bool = True, pred: np.ndarray | None = None):
    """(encoding, t0, {name: array}, (t_start, t_end) as a reader decodes them, whether the
    durations are predicted) of the timestamps; encoding ``ns-gap`` (integers: gap since the
    previous action's end, first of each rank from t0; duration, less ``vol_ns`` where given
    (integer ns: only with ``quantum`` 1); in units of ``quantum`` ns when it is above 1,
    every start and end rounded to that grid, or, with ``pred`` (each action's predicted
    duration in ns, :func:`predicted_durations`), steps against the predictions
    (:func:`_predicted_steps`) where the times allow), ``float-seconds`` (as is) or
    ``untimed``.  ``gaps=False``: no columns (model mode stores none), the decoded times
    only."""
    ts, te = np.asarray(ts, np.float64), np.asarray(te, np.float64)    # (the columns' type)
    if not len(ts):
        return "untimed", 0.0, {}, (ts, te), False
    # (NaN and infinities reach the extremes: finite extremes, every value finite)
    lo, hi, te_lo, te_hi = (float(f(a)) for a in (ts, te) for f in (np.min, np.max))
    finite = all(np.isfinite([lo, hi, te_lo, te_hi]))
    if not np.isfinite([lo, hi]).all() and not np.isfinite(ts).any():
        return "untimed", 0.0, {}, (ts, te), False
    span = np.inf
    if finite:
        d = te - ts
        span = max(te_hi - lo, float(d.max()), -float(d.min()))
        del d
    if not span * NS < 2 ** 62:
        return "float-seconds", 0.0, {"t_start": ts.astype(np.float64),
                                       "t_end": te.astype(np.float64)}, (ts, te), False
    t0 = lo
    if quantum > 1 and gaps and pred is not None and \
            span * NS * 2 + float(pred.sum()) < 2 ** 52:
        x = np.empty(2 * len(ts), np.int64)
        tmp = np.empty(len(ts))
        for at, t in ((0, ts), (1, te)):             # (in place: rint((t - t0) * NS))
            np.subtract(t, t0, out=tmp)
            tmp *= NS
            np.rint(tmp, out=tmp)
            x[at::2] = tmp
        coded = _predicted_steps(x, pred, offsets, quantum)
        if coded is not None:
            gap, dur, chain = coded
            down = np.flatnonzero(chain[1:] < chain[:-1]) + 1     # the running max's work
            down = down[~np.isin(down, 2 * rank_starts(offsets))]
            ranks, first = np.unique(np.searchsorted(offsets, down // 2, "right") - 1,
                                     return_index=True)
            for r, lo in zip(ranks.tolist(), (down[first] - 1).tolist()):
                hi = 2 * int(offsets[r + 1])       # (from the rank's first step down: the
                chain[lo:hi] = np.maximum.accumulate(chain[lo:hi])   # times before rise)
            return "ns-gap", t0, {"t_gap": gap, "t_duration": dur}, \
                (chain[0::2] / NS + t0, chain[1::2] / NS + t0), True
    if quantum > 1:
        start = np.rint((ts - t0) * (NS / quantum)).astype(np.int64)
        dur = np.rint((te - t0) * (NS / quantum)).astype(np.int64) - start
    else:
        start = np.rint((ts - t0) * NS).astype(np.int64)
        dur = np.rint((te - ts) * NS).astype(np.int64)
    # a reader sums gaps and durations back to these integers: start = ns / 1e9 + t0,
    # end = start + duration / 1e9 (expand.py)
    t_start = (start * quantum if quantum > 1 else start) / NS + t0
    decoded = t_start, t_start + (dur * quantum if quantum > 1 else dur) / NS
    if not gaps:
        return "ns-gap", t0, {}, decoded, False
    gap = start.copy()
    gap[1:] -= start[:-1] + dur[:-1]
    firsts = rank_starts(offsets)
    gap[firsts] = start[firsts]
    if vol_ns is not None:
        if quantum > 1:
            raise ValueError("durations less the volume are integer ns (quantum 1)")
        dur = dur - vol_ns
    return "ns-gap", t0, {"t_gap": gap, "t_duration": dur}, decoded, False


def rank_spans(ts: np.ndarray, te: np.ndarray, offsets: np.ndarray):
    """(first start, last end) of each rank, NaN where it has no time: what the summary of
    the expanded trace says, stored so that a summary needs no expansion."""
    P = len(offsets) - 1
    first, last = np.full(P, np.nan), np.full(P, np.nan)
    has = offsets[:-1] < offsets[1:]
    starts = offsets[:-1][has]
    with np.errstate(invalid="ignore"):
        if len(starts):
            first[has] = np.fmin.reduceat(ts, starts)
            last[has] = np.fmax.reduceat(te, starts)
    return first, last


# -- model -------------------------------------------------------------------------------------

def log_codes(values: np.ndarray, precision: float) -> np.ndarray:
    """Bin of each value on the logarithmic scale of ratio ``1 + 2 * precision`` (0 for zero,
    negative values negative): decoded within ``precision`` relative error."""
    if not precision >= FINEST_PRECISION:
        raise ValueError(f"log codes want a precision of at least {FINEST_PRECISION:g}")
    ratio = np.log1p(2 * precision)
    out = np.zeros(len(values), np.int64)
    nz = values != 0
    mag = np.rint(np.log(np.abs(values[nz])) / ratio).astype(np.int64) + _LOG_BIAS
    low = mag <= 0
    if low.any():
        mag[low] = _LOG_WIDE - mag[low]
    out[nz] = np.where(values[nz] < 0, -mag, mag)
    return out


def from_codes(codes: np.ndarray, precision: float) -> np.ndarray:
    """Bin centres of :func:`log_codes`."""
    ratio = np.log1p(2 * precision)
    m = np.abs(np.asarray(codes, np.int64))
    index = np.where(m < _LOG_WIDE, m - _LOG_BIAS, _LOG_WIDE - _LOG_BIAS - m)
    with np.errstate(over="ignore"):       # (a damaged code: inf, refused by the reader)
        mag = np.exp(index * ratio)
    return np.where(codes == 0, 0.0, np.sign(codes) * mag)


#: What a row of the model's statistics describes (its ``what`` column holds the index).
QUANTITIES = ("volume", "duration", "gap")


def countable(key: np.ndarray) -> bool:
    """Whether non-empty int ``key`` is better counted (a bincount over its range) than
    sorted: non-negative, and at most about 4 times as wide as it is long."""
    return bool(key.min() >= 0) and int(key.max()) < 4 * len(key) + 4096


def dense_unique(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` of non-negative keys, by counting where the keys
    are few for their range (:func:`countable`; no sort: linear time)."""
    if len(key) and not countable(key):
        return np.unique(key, return_inverse=True)
    count = np.bincount(key)                 # (each key's index by a table over the range:
    uniq = np.flatnonzero(count)             # a model file's ~16 calls took 10-45 us each
    index = np.empty(len(count), np.intp)    # with a cumsum over it, 3-5 us less so)
    index[uniq] = np.arange(len(uniq))
    return uniq, index[key]


def group_stats(sig: np.ndarray, group: np.ndarray, quantities: dict) -> dict:
    """Per quantity (name -> values, NaN where unknown) and (signature, rank group) with a
    finite value: count and mean, as columns (name -> array) of one table for the caller to
    finish before it builds the frame (a column set in a frame took ~40 us; a frame per
    quantity, their concatenation and a change of type ~1.5 ms, most of a small trace's
    model).  The groups are found once for all the quantities; unknown values weigh 0 (the
    sums are those of the finite values alone).  No deviation: the model keeps none since
    format version 10 (its time statistics per call site, ``store._per_site``), and its six
    passes over the values took ~0.1 ms of a 15 k-action trace's model."""
    ngroup = int(group.max()) + 1 if len(group) else 1
    key = sig.astype(np.int64) * ngroup + group
    uniq, inv = dense_unique(key)
    parts = []
    every_count = np.bincount(inv, minlength=len(uniq))     # (once: the finite values' counts
    for what, values in quantities.items():                 # less those of the others)
        ok = np.isfinite(values)
        bad = np.flatnonzero(~ok)
        every = not len(bad)
        v = values if every else np.where(ok, values, 0.0)
        count = every_count if every else \
            every_count - np.bincount(inv[bad], minlength=len(uniq))
        mean = np.bincount(inv, weights=v, minlength=len(uniq)) / np.maximum(count, 1)
        has = count > 0
        parts.append({"what": np.full(int(has.sum()), QUANTITIES.index(what), np.int8),
                      "signature": uniq[has] // ngroup, "group": uniq[has] % ngroup,
                      "count": count[has], "mean": mean[has]})
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
