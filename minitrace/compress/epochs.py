"""Model-mode volumes that predict like the trace (issue 38).

A replay's time is driven, between two synchronizations, by the slowest rank's compute: what a
model must keep is, per stretch of the run between synchronizations, how much each rank
computed (the imbalance, the drift over iterations and the tail, which sits in particular
iterations on particular ranks), not each call's values apart from their iteration.  So:

- **epochs**: each rank's actions are cut at its *anchors*, the calls every rank makes the same
  number of times (its collectives when they are alike on every rank, else the most frequent
  MPI call that is); the k-th epoch of every rank is then the same stretch of the program.
  Consecutive epochs are merged ``merge`` at a time so that an epoch holds at least
  :data:`MIN_PER_EPOCH` volume actions per rank on average (the stored totals cost at most
  1/64 of a value per volume action), or fewer, down to :data:`MIN_PER_EPOCH_FLOOR` (1/8),
  where merging loses the ranks' turns at being the slowest (:func:`merge_choices`);
- **epoch totals**: each rank's volume total in each epoch, on the log scale of ratio
  ``1 + 2 * precision`` (within ``precision``): per-rank means, the per-epoch maximum over
  ranks, the drift and the tail of the epochs are kept.  Those are the work's
  (:data:`kinds.WORK`); the CPU time spent inside MPI calls has its own total per rank
  (``in_call_totals``): a busy-polling wait's CPU time is not work (a replay drops it) and
  follows the neighbours' lateness, not the code; in one total with the kernels its noise
  moved volume between them and the waits (the model's replay of clover2d.c at 4 and 6 ranks
  was 14-15% slow, session 19);
- **call means**: per rank, the mean volume of each call of an epoch that recurs with the same
  kinds of calls in the same order (a *template*: at least :data:`MIN_REPEATS` times per
  rank, within :data:`TEMPLATE_SHARE` of a value per volume action; its calls' sizes, peers
  and tags set aside, :data:`TEMPLATE_KEY`), else of each *call site* (the action's
  signature with those of the actions just before and after it): how an epoch's total is shared
  among its calls (within ``precision``).  A site whose calls are two modes far apart has a
  mean for each (:func:`site_modes`, format version 16: public LAMMPS's force kernel and its
  1 us pack computes sit between the same calls).  Each rank's sites are its own
  (:func:`rank_sites`, format version 9): a reader finds them from the rank's calls, so no
  table of them is kept and a site no other rank has costs them no mean (files before it: one
  table, a mean per rank).
  A template's epochs whose largest call sits at different places are its *variants*
  (:func:`template_variants`: the work's calls), each with its own means and each epoch's
  variant kept;
- **tail**: the own values and places (:func:`tail_calls`) of the work's calls farthest above
  the mean of their call's other calls on their rank (:func:`choose_tail`): a replay waits
  call by call for the slowest neighbour, which the calls the means miss most set; the totals
  and means are those of the other calls.  Until session 19 the tail held the largest calls,
  of every kind: on UK-MAC CloverLeaf a long kernel is its template's mean within a few
  percent, and the waits' CPU time took a share of the budget; with the in-call CPU time
  apart, the model's replay was 1.0-2.4% faster than the exact file's at 4-16 ranks, 0.3-1.0%
  with these (benchmarks/RESULTS.md);
- **no spread**: files written before session 18 also kept, per size class of the calls,
  quantiles of their log deviation from these means and drew each call's deviation from them
  (a Gaussian copula, :func:`spread`; still drawn when such a file is expanded).  On recorded
  codes those deviations are mostly the code's own structure, not noise: a kernel that runs
  at a position in one iteration of two (UK-MAC CloverLeaf), several kernels pooled by a call
  site.  Drawn at random places they made a rank wait where the recorded run did not: the
  model's replay was 11-88% slower than the exact file's on CloverLeaf at 4-16 ranks, and
  drawing none is closer on 15 of 16 recorded codes tried (benchmarks/RESULTS.md, session 18).

An action's modelled volume is its call's mean on its rank, its epoch's work then scaled to
the epoch's total and its calls' in-call CPU time to the rank's (evenly shared when the means
sum to 0), the tail calls set to their own values and the rank scaled to its recorded total
(what the coded totals miss split between its work and its in-call time by how much each can
miss: :func:`_reconciled`).  Lost: each other call's own value within its epoch (its call's mean instead).
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np
import pandas as pd

from .. import kinds as K
from ..errors import MinitraceError
from . import rans as R
from . import volumes as V
from .pack import deflated_size

#: Volume actions per epoch and rank, on average, below which consecutive epochs are merged.
#: 64 since session 25 (32 before): the totals took 8-13% of small model files (public
#: miniAMR 2r 0.205 -> 0.190 B/action, PENNANT 2r sq 0.203 -> 0.198; 30 recordings 3.5%
#: smaller), each model replay within 0.15 points of its error with 32 (TeaLeaf 4r -1.57 ->
#: -1.69%, Nekbone 4r -1.43 -> -1.58%, PENNANT 4r -0.53 -> -0.67%; the others within 0.1).
MIN_PER_EPOCH = 64
#: Signature ids are packed three to an int64 site key.
_MAX_SIGNATURES = 1 << 20
_COLLECTIVE = K.mask(K.ALL_COLLECTIVES)


def per_rank(offsets: np.ndarray) -> np.ndarray:
    """Rank of each row of a rank-major array."""
    return np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))


def choose_anchors(kinds: np.ndarray, ids: np.ndarray, offsets: np.ndarray) -> tuple:
    """(anchor mask per signature, its name): the collectives when every rank that has actions
    makes as many, else the most frequent MPI kind alike on every rank, else none."""
    sig_kind = kinds.astype(np.int64)
    P = len(offsets) - 1
    nonempty = np.diff(offsets) > 0
    counts = np.bincount(per_rank(offsets) * 256 + sig_kind[ids], minlength=P * 256) \
        .reshape(P, 256)
    counts = counts[nonempty]
    none = np.zeros(len(kinds), bool), "none"
    if not len(counts):
        return none
    coll = counts[:, _COLLECTIVE[:256]].sum(axis=1)
    if coll[0] > 0 and (coll == coll[0]).all():
        return _COLLECTIVE[sig_kind], "collectives"
    mpi = ~K.mask(K.NON_MPI)[:256]
    alike = mpi & (counts == counts[0]).all(axis=0) & (counts[0] > 0)
    if not alike.any():
        return none
    k = int(np.argmax(np.where(alike, counts[0], -1)))
    return sig_kind == k, K.NAME.get(k, str(k))


def epoch_of(is_anchor: np.ndarray, offsets: np.ndarray, merge: int) -> np.ndarray:
    """Epoch of each action within its rank: anchors strictly before it, ``merge`` to an
    epoch (an anchor closes the epoch it belongs to)."""
    upto = np.zeros(len(is_anchor) + 1, np.int64)
    np.cumsum(is_anchor, out=upto[1:])
    epoch = upto[:-1] - np.repeat(upto[offsets[:-1]], np.diff(offsets))
    return epoch // merge if merge > 1 else epoch


def neighbours(ids: np.ndarray, offsets: np.ndarray, rows: np.ndarray, rank: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
    """(signature before, signature after) of the actions ``rows`` (of ranks ``rank``) within
    their rank (-1 at its ends)."""
    n = len(ids)
    before = ids[np.maximum(rows - 1, 0)].astype(np.int64) if n else np.zeros(0, np.int64)
    after = ids[np.minimum(rows + 1, n - 1)].astype(np.int64) if n else np.zeros(0, np.int64)
    before[rows == offsets[rank]] = -1
    after[rows == offsets[rank + 1] - 1] = -1
    return before, after


#: The longest period of a size-token site's calls on a rank that :func:`site_ids` tells apart.
MAX_PERIOD = 64


def site_ids(ids: np.ndarray, offsets: np.ndarray, site: np.ndarray, tokened: np.ndarray
             ) -> np.ndarray:
    """Each action's id in the call sites' keys (:func:`site_keys`; ``ids``: signatures,
    ``offsets``: each rank's first): at a call site whose message sizes are tokens
    (``tokened[site[id]]``; ``site``: signatures.size_sites'), not its signature, one per
    size, but the site and its phase: the action's occurrence at the site on its rank modulo
    the site's period there (the commonest distance back to the same sizes, at most
    :data:`MAX_PERIOD`, else 1), as ``len(site) + MAX_PERIOD * (the site's index among the
    tokened) + phase``; elsewhere its signature.  Public miniMD's halo sendrecvs take new
    sizes at each re-neighbouring, each a site of its own and its neighbours' (4r: 4.5 of the
    model file's 21.4 KB); one site per phase, its 4 exchanges a step: 0.316 -> 0.169
    B/action, its replay -0.06 -> -0.53% from the exact file's (one site for all phases: the
    computes between different exchanges pooled, +9.5%)."""
    ids = np.asarray(ids, np.int64)
    out = ids.copy()
    tokened = np.asarray(tokened, bool)
    at = np.flatnonzero(tokened[site[ids]])
    if not len(at):
        return out
    nsig, nsite = len(site), len(tokened)
    index = np.cumsum(tokened) - 1
    g = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))[at] * nsite + site[ids[at]]
    order = np.argsort(g, kind="stable")              # (each rank's site's calls in order)
    gs, sig = g[order], ids[at][order]
    first = np.ones(len(gs), bool)
    first[1:] = gs[1:] != gs[:-1]
    pos = np.arange(len(gs))
    occ = pos - np.maximum.accumulate(np.where(first, pos, 0))
    group = np.cumsum(first) - 1
    # a group's calls of one signature, in order: one stable sort of a (group, signature)
    # key, the order of lexsort((pos, sig, group)) (pos: each call's place), 3-6x faster
    key = group * (int(sig.max()) + 1) + sig
    same = np.argsort(key, kind="stable")
    ks, at_occ = key[same], occ[same]
    again = ks[1:] == ks[:-1]                          # (the call before: same key)
    dist = np.zeros(len(gs), np.int64)
    dist[same[1:][again]] = (at_occ[1:] - at_occ[:-1])[again]
    near = (dist > 0) & (dist <= MAX_PERIOD)
    counts = np.bincount(group[near] * (MAX_PERIOD + 1) + dist[near],
                         minlength=(group[-1] + 1) * (MAX_PERIOD + 1)) \
        .reshape(-1, MAX_PERIOD + 1)
    period = np.where(counts.any(axis=1), counts.argmax(axis=1), 1)
    out[at[order]] = nsig + MAX_PERIOD * index[gs % nsite] + occ % period[group]
    return out


#: ``epoch_sites`` of a model whose call sites at size tokens are by phase (:func:`site_ids`;
#: format version 12): the stretches' templates' fit, whose templates keep by place what the
#: phases pool (the epochs' fit keeps signatures: IMB-NBC's collective alone and around a
#: compute are one phase, tests/test_compress_model_templates.py, 1 us computes modelled 20).
SITE_PHASES = "size-phases"


def site_key_space(site: np.ndarray, tokened: np.ndarray | None) -> int:
    """The ids :func:`site_ids` gives (the ``nsig`` of :func:`site_keys`)."""
    return len(site) + (0 if tokened is None else MAX_PERIOD * int(np.sum(tokened)))


def site_keys(sig: np.ndarray, before: np.ndarray, after: np.ndarray, nsig: int) -> np.ndarray:
    """One int64 per (signature, before, after)."""
    if nsig >= _MAX_SIGNATURES:
        raise MinitraceError(f"model volumes take at most {_MAX_SIGNATURES - 1} distinct call "
                             f"signatures; this trace has {nsig} (use exact or bounded)")
    n = nsig + 1
    return (sig.astype(np.int64) * n + before + 1) * n + after + 1


_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9),
        np.uint64(0x94D049BB133111EB))
#: A repeated epoch's calls are kept by position when it recurs this many times per rank.
MIN_REPEATS = 4
#: ... and while the kept means are at most this share of the volume actions.
TEMPLATE_SHARE = 1 / 16
#: What makes two epochs one template (the ``epoch_templates`` attribute; files without it:
#: ``signatures``, each call's signature): ``kinds``, the kinds of their calls in order and
#: which of them carry a volume (so that a template's places are the same calls).  The
#: Intel MPI Benchmarks' IMB-NBC runs, per message size between two gathers (its epochs),
#: non-blocking collectives alone, then a calibrated compute, then each collective around a
#: compute of about the collective's time: by signature each size's epoch was its own, so
#: the means were per call site, which the two phases share (a collective, a compute, a wait);
#: the overlap phase's 7 ms computes and the pure phase's 0.5 us ones took one mean, and the
#: model's replay was 8.0% slower than the exact file's, with templates by kinds 0.1% faster
#: (the model file 0.065 -> 0.127 B/action).  On 22 other recordings the largest error is
#: 1.28% either way (miniGhost 4r's -1.22 -> -0.78%, Nekbone 4r's +0.29 -> -0.99%, the others
#: within 0.07 points), the files from 15% smaller (Nekbone 2r) to 6% larger (miniGhost 4r,
#: CloverLeaf 8r; session 23).  Nekbone 4r's 306 epoch sequences by signature (65 kept as
#: templates) are 54 by kinds, 3 of them its iterations (4 kept): its means are pooled over
#: iterations that signatures told apart.
TEMPLATE_KEY = "kinds"
#: Where epochs are merged (``epoch_merge`` > 1), templates are matched on each stretch
#: between two anchors (an iteration, where the anchors are its collectives), not on the
#: merged epochs, whose totals stay as they are; each rank's number of such stretches is
#: kept (this array, offsets per rank; format version 11).  UK-MAC TeaLeaf's CG iteration
#: completes its halo's MPI_Testall or not by arrival: merged 8 to an epoch, its epochs were
#: 29 templates of 32-36 calls, each a pattern of completions (1,496 means a rank, 3.3 of
#: the model file's 12.6 KB), which an iteration's template holds in 2 (completed or not).
TEMPLATE_UNIT_OFFSETS = "template_unit_offsets"
#: Each rank's means of every template row, rank after rank (format version 10): a rank's
#: means of a template's places recur as sequences (in its variants, in like templates) that
#: deflate finds, where interleaved with the other ranks' they did not recur (model files
#: 0-3.4% smaller: Nekbone 4r, CloverLeaf 8-16r, LULESH 8r 2.2-3.4%).  Files before:
#: ``template_means``, each row's means on every rank.
RANK_TEMPLATE_MEANS = "rank_template_means"


def position_in_epoch(gepoch: np.ndarray) -> np.ndarray:
    """Index of each row among the rows of its epoch (rows grouped by epoch, in order)."""
    n = len(gepoch)
    if not n:
        return np.zeros(0, np.int64)
    start = np.concatenate([[True], gepoch[1:] != gepoch[:-1]])
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    return np.arange(n) - first


def epoch_hashes(ids: np.ndarray, gepoch: np.ndarray, n_epochs: int) -> np.ndarray:
    """A 64-bit hash of each epoch's sequence of ``ids`` (its calls' keys in order, e.g. their
    kinds, :data:`TEMPLATE_KEY`, and its length): epochs that repeat the same calls have the
    same hash."""
    n = len(gepoch)
    h = np.zeros(n_epochs, np.uint64)
    if not n:
        return h.view(np.int64)
    # epochs are contiguous runs of rows
    starts = np.flatnonzero(np.concatenate([[True], gepoch[1:] != gepoch[:-1]]))
    length = np.diff(np.append(starts, n))
    pos = np.arange(n, dtype=np.uint64)
    pos -= np.repeat(starts.astype(np.uint64), length)      # (position_in_epoch)
    with np.errstate(over="ignore"):
        x = ids.astype(np.uint64)
        x += np.uint64(1)
        x *= _MIX[0]
        pos *= _MIX[1]
        x += pos
        x ^= x >> np.uint64(31)
        x *= _MIX[2]
        x ^= x >> np.uint64(29)
        at = gepoch[starts]
        h[at] = np.add.reduceat(x, starts) + length.astype(np.uint64) * _MIX[1]
    return h.view(np.int64)


def _templates(hashes: np.ndarray, nvol: np.ndarray, rank: np.ndarray, total: int,
               P: int) -> tuple[np.ndarray, np.ndarray]:
    """The repeated epochs whose calls are kept by position: (hash, volume actions (length));
    most repeated first, within the budget (their rows: :func:`template_starts`, with their
    variants)."""
    keep = nvol > 0
    order = np.argsort(hashes[keep], kind="stable")
    h, length, rk = hashes[keep][order], nvol[keep][order], rank[keep][order]
    new_hash = np.concatenate([[True], h[1:] != h[:-1]]) if len(h) else np.zeros(0, bool)
    first = np.flatnonzero(new_hash)
    n = np.diff(np.append(first, len(h)))
    # (epochs are rank-major, so a hash's ranks come in order: count where the rank changes)
    ranks = np.add.reduceat(new_hash | np.concatenate([[True], rk[1:] != rk[:-1]]), first) \
        if len(h) else np.zeros(0, np.int64)
    h, length = h[first], length[first]            # each hash once, sorted, its first length
    repeated = np.flatnonzero(n >= MIN_REPEATS * ranks)
    by_count = repeated[np.argsort(-n[repeated], kind="stable")]
    cost = np.cumsum(length[by_count] * P)
    chosen = np.sort(by_count[cost <= total * TEMPLATE_SHARE])
    length = length[chosen].astype(np.int64)
    return h[chosen].astype(np.int64), length


def _template_of(h: np.ndarray, length: np.ndarray, hashes: np.ndarray, nvol: np.ndarray
                 ) -> np.ndarray:
    """Index among the templates (``h`` their hashes, sorted, ``length`` their lengths) of
    each epoch (-1: none; a hash of another length is none)."""
    if not len(h):
        return np.full(len(hashes), -1, np.int64)
    at = np.searchsorted(h, hashes).clip(0, len(h) - 1)
    ok = (h[at] == hashes) & (length[at] == nvol)
    return np.where(ok, at, -1)


#: Variants kept of a template at most: its instances by the place of their largest call, the
#: most frequent places each their own, the others together.
VARIANTS = 4
#: Variants are kept where they leave at most this share of the squared deviations.
VARIANT_GAIN = 0.5


def template_variants(t_of: np.ndarray, ge: np.ndarray, pos: np.ndarray, vr: np.ndarray,
                      vol: np.ndarray, length: np.ndarray, n_epochs: int, P: int,
                      least: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(variants per template, variant of each epoch): the instances of a template told apart
    by the place of their largest call.  UK-MAC CloverLeaf runs its sweeps x then y, then y
    then x: the same calls, the long kernel at another place, one step in two but for the
    steps an output shifts; pooled, the long kernel's volume was shared by both places and
    each rank's replay waited at both.  Per template call: ``t_of``, ``ge`` (its global epoch),
    ``pos`` (its place), ``vr`` (its rank), ``vol``.  A template keeps its variants where the
    means per (variant, place, rank) leave at most :data:`VARIANT_GAIN` of the squared
    deviations its means per (place, rank) leave; else one (every epoch's variant 0).  A
    place that is the peak of fewer than ``least`` instances is no variant of its own (its
    instances variant 0): templates of the stretches between anchors (an iteration) made a
    variant of each iteration with an outlier, which is the tail's."""
    T = len(length)
    variants = np.ones(T, np.int64)
    label = np.zeros(n_epochs, np.int64)
    if not T or not len(vol):
        return variants, label
    # each epoch's largest call (the last of equal ones): epochs come in order, by reductions
    # (a lexsort took 28 ms of CloverLeaf 16's 250)
    starts = np.flatnonzero(np.append(True, ge[1:] != ge[:-1]))
    top = np.repeat(np.maximum.reduceat(vol, starts), np.diff(np.append(starts, len(ge))))
    last = np.maximum.reduceat(np.where(vol == top, np.arange(len(vol)), -1), starts)
    e, t, peak = ge[last], t_of[last], pos[last]
    # the places of each template's peaks, most frequent first: variant = that order
    _, pair = _sorted_groups(t * (int(length.max()) + 1) + peak)
    count = np.bincount(pair)[pair]
    order = np.lexsort((peak, -count, t))
    first = np.concatenate([[True], t[order][1:] != t[order][:-1]])
    new = np.concatenate([[True], pair[order][1:] != pair[order][:-1]])
    start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    nth = np.cumsum(new) - 1
    v = np.empty(len(order), np.int64)
    v[order] = np.minimum(nth - nth[start], VARIANTS - 1)
    label[e] = np.where(count >= least, v, 0)
    if not label.any():     # (one variant each whatever the deviations: miniGhost BSPMA 2r's
        return variants, label          # 11 k template calls grouped twice for it, 0.4 ms)
    base = np.cumsum(length) - length
    sse = []
    for lab in (np.zeros(len(ge), np.int64), label[ge]):
        _, g = _sorted_groups(((base[t_of] + pos) * VARIANTS + lab) * P + vr)
        n = np.bincount(g)
        dev = np.bincount(g, weights=vol * vol) - np.bincount(g, weights=vol) ** 2 / n
        tg = np.zeros(len(n), np.int64)
        tg[g] = t_of
        sse.append(np.bincount(tg, weights=np.maximum(dev, 0.0), minlength=T))
    take = sse[1] <= VARIANT_GAIN * sse[0]
    most = np.zeros(T, np.int64)
    np.maximum.at(most, t, label[e])
    variants[take] = most[take] + 1
    label[e[~take[t]]] = 0
    return variants, label


def _frame(columns: dict) -> pd.DataFrame:
    """A table of int64 columns, built as one block (a block per column took twice as long:
    most of a small trace's model was pandas), its column index made once a process (pandas
    made it from the names each time: ~25 us a table)."""
    return pd.DataFrame(np.column_stack(list(columns.values())),
                        columns=_column_index(tuple(columns)), copy=False)


@functools.lru_cache(maxsize=None)
def _column_index(names: tuple) -> pd.Index:
    return pd.Index(names)


def _means(row: np.ndarray, rank: np.ndarray, values: np.ndarray, nrows: int,
           P: int) -> np.ndarray:
    """Mean of ``values`` per (row, rank), 0 where none: flat, row-major [nrows * P]
    (callers reshape it, or code it with other flat arrays)."""
    flat = row.astype(np.int64) * P + rank
    sums = np.bincount(flat, weights=values, minlength=nrows * P)
    count = np.bincount(flat, minlength=nrows * P)
    return np.where(count > 0, sums / np.maximum(count, 1), 0.0)


# The spread of files written before session 18: drawn as they are expanded (this writer
# stores none, see fit).
#: Quantiles kept of the calls' spread around the model (log scale), per class of size.
NOISE_QUANTILES = 17


def size_class(model: np.ndarray) -> np.ndarray:
    """Class of a modelled volume for its spread: a factor of 4 wide (small calls are noisier
    than big ones, relatively)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.floor(np.log2(np.abs(model)) / 2).clip(-1000, 1000).astype(np.int64)


#: Logistic approximation of the normal distribution (within 0.01 of Phi): the copula's
#: normals need no more, and cost no scipy import.
_LOGISTIC = 1.702


def _phi(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-_LOGISTIC * x))


def _phi_inv(u: np.ndarray) -> np.ndarray:
    return np.log(u / (1 - u)) / _LOGISTIC


#: Probabilities of the kept quantiles: normal scores evenly spaced from -2.5 to 2.5 (1.4% to
#: 98.6%: the tail that sets the maximum over ranks is kept).
SPREAD_GRID = _phi(np.linspace(-2.5, 2.5, NOISE_QUANTILES))


def _uniform(key: np.ndarray) -> np.ndarray:
    """A deterministic uniform in (0, 1) per int64 key (splitmix64)."""
    with np.errstate(over="ignore"):
        x = key.astype(np.uint64) * _MIX[0]
        x ^= x >> np.uint64(30)
        x *= _MIX[1]
        x ^= x >> np.uint64(27)
        x *= _MIX[2]
        x ^= x >> np.uint64(31)
    return ((x >> np.uint64(11)).astype(np.float64) + 0.5) / float(1 << 53)


def align_keys(epoch: np.ndarray, next_kind: np.ndarray, rank: np.ndarray | int = 0
               ) -> np.ndarray:
    """What makes calls of different ranks the same call: its epoch, the kind of the action
    after it and how many calls of its rank's epoch before it are followed by that kind
    (positions alone differ where ranks exchange with different numbers of neighbours)."""
    key = (epoch.astype(np.int64) << 8) | next_kind.astype(np.int64)
    own = (np.asarray(rank, np.int64) << 44) | key
    order = np.argsort(own, kind="stable")
    occ = np.empty(len(key), np.int64)
    occ[order] = position_in_epoch(own[order])
    return (key << 24) ^ occ


def spread(model: np.ndarray, base: np.ndarray, rank, classes: np.ndarray,
           quantiles: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """Each call's drawn log deviation from its modelled volume ``model``: a normal shared by
    every rank at the same call (``base``: :func:`align_keys`) with weight ``rho`` of its size
    class (the share of the spread common to the ranks) and one of its ``rank``'s own, mapped
    onto the kept quantiles of its class (a Gaussian copula; 0 for a class without)."""
    common = _phi_inv(_uniform(base))
    own = _phi_inv(_uniform(base * 1_000_003 + rank + 1))
    out = np.zeros(len(model))
    cls = size_class(model)
    at = np.searchsorted(classes, cls).clip(0, max(len(classes) - 1, 0))
    has = (classes[at] == cls) if len(classes) else np.zeros(len(cls), bool)
    for j in np.unique(at[has]).tolist():
        m = has & (at == j)
        u = _phi(np.sqrt(rho[j]) * common[m] + np.sqrt(1 - rho[j]) * own[m])
        out[m] = np.interp(u, SPREAD_GRID, quantiles[j])
    return out


def _sorted_groups(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_inverse=True)`` of int64 keys (its checks and reshapes took
    ~25 us on a small trace's few thousand keys, as long as the sort); keys few and small
    are counted, others hashed and only their distinct values sorted (an argsort of miniAMR
    4r's 80 k call keys, 1,651 distinct, took 3.0 ms, this 0.5)."""
    if len(keys) and V.countable(keys):
        return V.dense_unique(keys)
    codes, uniq = pd.factorize(keys)
    order = np.argsort(uniq)
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order))
    return uniq[order], rank[codes]


def spread_quantiles(side: dict, precision: float) -> np.ndarray:
    """The spread's quantiles [class, quantile] of a model's tables: from ``spread_code``
    (each quantile's log code less the class's one before it), or float ``spread`` in files
    written before session 14; none in files written since session 18."""
    if "spread_code" in side:
        codes = np.asarray(side["spread_code"], np.int64).reshape(-1, NOISE_QUANTILES)
        return np.cumsum(codes, axis=1) * np.log1p(2 * precision)
    return np.asarray(side["spread"], np.float64).reshape(-1, NOISE_QUANTILES)


#: The tail calls kept with their own value hold this share of their kind's misses (0.9 until
#: session 35: public TeaLeaf 4r, recorded oversubscribed, its noise a spread of misses, the
#: model's replay -2.53% from the exact file's, with 0.95 -1.83%; 14 public recordings' files
#: 0-27% larger, 8% on average, none above 0.2 B/action, no replay farther from the exact's) ...
TAIL_SHARE = 0.95
#: ... and are at most one per this many actions (their kinds share it by their counts) ...
TAIL_EVERY = 16
#: ... or this many, and this many at least whatever share they hold: a few bytes beside a
#: file's fixed ~1.4 KB, and what a trace of a few hundred actions needs (NPB FT 2r, 98
#: actions: the model's replay 2.7% fast with 6 kept, 0.2% with these).
TAIL_MIN = 64
#: ... and with them the calls that miss at least this share of the least they hold, where the
#: next call misses at most :data:`TAIL_GAP` of it: a mode of calls alike is kept whole.
TAIL_LIKE = 0.8
TAIL_GAP = 0.5


#: A call within this many times the precision of its call's mean is never kept (1 until
#: session 25): a call 2-6% above its mean is the noise of its call, each as dear to keep as
#: an outlier (~1.3 bytes); 30 public recordings' model files 1.0% smaller (CloverLeaf 2r 480
#: 0.207 -> 0.200 B/action, PENNANT 2r sq 0.198 -> 0.195, miniGhost BSPMA 4r L -11%), each
#: model replay within 0.13 points of its error before (PENNANT 4r sq -0.03 -> -0.16%,
#: miniGhost BSPMA 4r L -0.38 -> -0.51%, TeaLeaf 4r -1.69 -> -1.75%) but miniAMR 4r's,
#: +0.74 -> +0.47%.
TAIL_NEAR = 3


def alike(m: np.ndarray, k: int) -> np.ndarray:
    """Mask of the calls of misses ``m`` (largest first, ``k`` of them kept) that miss like the
    least kept one, within :data:`TAIL_LIKE` of it, where the call after them misses at most
    :data:`TAIL_GAP` of it: a mode of like calls ends there, and the share cut it.  Public
    miniWeather computes 4 times as long after one halo exchange in three, at one call site:
    the share kept 543 of its 2 ranks' 604 long calls, each 1.4 ms above the site's mean, and
    the others' volume went to their ranks' other steps: the model's replay was 4-7% slower
    than the exact file's (2r and 4r, MPICH; 2r, Open MPI), now within 1.2%.  Where the misses
    decline evenly (UK-MAC CloverLeaf: the call after those within 0.8 misses 0.8 of the least
    kept) none is added: the share already weighs them."""
    out = np.zeros(len(m), bool)
    if not 0 < k < len(m):
        return out
    like = int((m >= TAIL_LIKE * m[k - 1]).sum())
    if like < len(m) and m[like] <= TAIL_GAP * m[k - 1]:
        out[:like] = True
    return out


def tail_calls(miss: np.ndarray, at: np.ndarray, budget: int, at_least: int = 0
               ) -> np.ndarray:
    """Mask of the calls kept with their own value: per group ``at`` (the kind of call, as
    its index among the kinds, in their order), its calls of the largest ``miss`` (how far
    each is from the model without it, above 0): ``at_least`` of them, more until they hold
    :data:`TAIL_SHARE` of the group's, and the mode of like calls that share cuts
    (:func:`alike`); at most ``budget`` calls in all; both shared among
    the groups by their numbers of calls."""
    n = len(miss)
    out = np.zeros(n, bool)
    if not n or budget < 1:
        return out
    mag = np.abs(miss)
    count = np.bincount(at)
    for g in np.flatnonzero(count).tolist():
        rows = np.flatnonzero(at == g)
        allowed = min(budget * int(count[g]) // n, len(rows))
        if allowed < 1:
            continue
        m = mag[rows]
        top = np.argpartition(-m, allowed - 1)[:allowed]      # the largest, unsorted
        top = top[np.argsort(-m[top], kind="stable")]
        before = np.cumsum(m[top]) - m[top]                    # the larger calls' sum
        first = np.arange(allowed) < at_least * int(count[g]) // n
        share = before < TAIL_SHARE * m.sum()                 # (a prefix)
        keep = first | share | alike(m[top], int(share.sum()))
        out[rows[top[keep & (m[top] > 0)]]] = True
    return out


def choose_tail(call: np.ndarray, vol: np.ndarray, at: np.ndarray, budget: int,
                precision: float) -> np.ndarray:
    """Mask of the calls kept with their own value (:func:`tail_calls` by ``at``, at most
    ``budget``): those farthest above the mean of their ``call``'s other calls (an int64 key
    per call and rank; a call alone: its whole value), then, that mean pulled by the calls
    that miss it more than their call's others on average, again from the mean of the other
    calls (one 1 ms call among 10 us ones: its 10 us neighbours missed the first mean by 1 ms
    / n each and filled the budget); a call within :data:`TAIL_NEAR` times ``precision`` of
    the mean is its mean.  Above, not below: a call longer than its mean makes its neighbours
    wait, which the mean loses; one shorter takes the mean, and its epoch's total the excess
    back from its other calls.  Keeping both kinds (until session 21) spent the budget on the
    short ones too: on 80 recordings the files were 9% larger and miniAMR's model replay
    further off (2r -1.31%, 4r -0.88%; now -0.91%, -0.15%), though the mean error was 0.15%
    (now 0.20%)."""
    _, g = _sorted_groups(call)
    n, total = np.bincount(g), np.bincount(g, weights=vol)
    count = n[g]
    ref = np.where(count > 1, (total[g] - vol) / np.maximum(count - 1, 1), 0.0)

    def miss(ref):
        m = np.abs(vol - ref)
        return np.where(m > TAIL_NEAR * precision * np.abs(ref), m, 0.0)
    m = miss(ref)
    near = m <= np.bincount(g, weights=m)[g] / count      # (no more than their call's others)
    n_near = np.bincount(g, weights=near)[g]
    ref = np.where(n_near > 0, np.bincount(g, weights=np.where(near, vol, 0.0))[g] /
                   np.maximum(n_near, 1), ref)
    return tail_calls(np.where(vol > ref, miss(ref), 0.0), at, budget, TAIL_MIN)


def tail_table(tail: np.ndarray, vr: np.ndarray, vol: np.ndarray, P: int,
               precision: float, call: np.ndarray | None = None) -> dict:
    """The kept calls as stored: per rank their count (``tail_offsets``), each one's position
    among its rank's volume actions as the gap since the previous one (``tail_gaps``) and
    its value's log code (``tail_values``); with ``call`` (an int64 key per call and rank),
    where it deflates smaller, the codes as :func:`tail_steps` makes them."""
    counts, gaps = _gaps(tail, vr, P)
    kr = vr[tail]
    codes = V.log_codes(vol[tail], precision)
    out = {"tail_offsets": np.concatenate([[0], np.cumsum(counts)]).astype(np.int64),
           "tail_gaps": gaps, "tail_values": codes}
    if call is not None and len(codes):
        steps = tail_steps(codes, call[tail], kr, P)
        if sum(map(deflated_size, steps.values())) < deflated_size(codes):
            out.update(steps)
    return out


def _again(call: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order: the kept calls by call, in order within each; whether each call's is an earlier
    kept call's)."""
    order = np.lexsort((np.arange(len(call)), call))
    again = np.zeros(len(call), bool)
    again[order[1:]] = call[order][1:] == call[order][:-1]
    return order, again


def tail_steps(codes: np.ndarray, call: np.ndarray, rank: np.ndarray, P: int) -> dict:
    """The kept calls' value codes ``codes`` (of calls ``call``, ranks ``rank``, rank-major)
    as steps: the code of a call's first kept call on its rank (``tail_values``, each rank's
    from ``tail_value_offsets``), then the step from the previous kept call of the same call
    (``tail_steps``, zigzag: small for either sign).  The calls the means miss most come back
    at the same call with like values: LULESH 8r's tail 15.7 -> 11.4 KB, CloverLeaf 8r's
    15.6 -> 11.7, miniAMR 4r's 7.6 -> 6.3; SNAP 2r's, its steps larger, as codes."""
    order, again = _again(call)
    before = np.empty_like(codes)
    before[order[1:]] = codes[order[:-1]]
    return {"tail_values": codes[~again],
            "tail_value_offsets": np.concatenate(
                [[0], np.cumsum(np.bincount(rank[~again], minlength=P))]).astype(np.int64),
            "tail_steps": R.zigzag(codes[again] - before[again]).view(np.int64)}


def tail_codes(values: np.ndarray, steps: np.ndarray, call: np.ndarray) -> np.ndarray:
    """The value codes of one rank's kept calls (of calls ``call``, in order) from their
    :func:`tail_steps` (``values``, ``steps``: the rank's); ValueError where they do not fit
    the calls."""
    order, again = _again(call)
    if int((~again).sum()) != len(values) or int(again.sum()) != len(steps):
        raise ValueError("model/tail_steps do not fit the rank's kept calls")
    x = np.empty(len(call), np.int64)
    x[~again] = values
    x[again] = R.unzigzag(steps)
    with np.errstate(over="ignore"):
        run = np.cumsum(x[order])
        start = np.flatnonzero(~again[order])
        seg = np.cumsum(~again[order]) - 1
        out = np.empty(len(call), np.int64)
        out[order] = run - (run[start] - x[order][start])[seg]
    return out


def rank_sites(keys: np.ndarray, rank: np.ndarray, P: int) -> tuple[np.ndarray, np.ndarray]:
    """(site of each call, sites per rank as offsets): a call's site is its key's index among
    its rank's distinct ``keys`` in order, after the sites of the ranks before it (``rank``:
    rank-major).  Each rank's own sites: a reader finds them from that rank's calls alone, and
    a site of one rank costs no mean on the others (miniAMR 4r: 1,400 of its 1,651 sites on one
    rank, their table and zero means 8.3 of the file's 42 KB)."""
    # the keys ranked once, then the (rank, rank of key) pairs, counted where they are few (a
    # lexsort of both took 3.6 ms of miniGhost 4r's 47 ms fit)
    uniq, g = _sorted_groups(keys)
    pairs, site = _sorted_groups(rank * len(uniq) + g)
    per = np.bincount(pairs // max(len(uniq), 1), minlength=P)
    return site, np.concatenate([[0], np.cumsum(per)]).astype(np.int64)


def fit(volume: np.ndarray, vrow: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
        kinds: np.ndarray, precision: float, sites: tuple | None = None,
        merge: int | None = None) -> tuple[dict, dict, list]:
    """(side arrays, attributes, :func:`merge_choices`' coarser merges) of the epoch model of
    ``volume`` (rows ``vrow`` carry one) at ``merge`` anchors an epoch (default: its choice):
    where epochs are merged, with templates of the stretches between anchors
    (:data:`TEMPLATE_UNIT_OFFSETS`), or, up to :data:`BOTH_UP_TO` actions, of the stretches
    or of the epochs, whichever deflates smaller (an iteration's template pools what each
    epoch's pattern kept apart, which the tail then holds: 20-step clover2d.c's model file
    2.5-5% larger so, public TeaLeaf 2r's 34% smaller) where it moves no more of the work
    between calls (:func:`_displaced`, within :data:`DISPLACED_TIE`).  Both fits share their epochs
    (:func:`_epochs`), and only the arrays they hold apart are deflated to compare them.
    ``sites``: (each signature's size site, whether its message sizes are tokens: per size
    site) where some are: the stretches' fit's call sites by phase there (:func:`site_ids`,
    :data:`SITE_PHASES`)."""
    ep = _epochs(volume, vrow, ids, offsets, kinds, precision, sites, merge)
    both = len(ids) <= BOTH_UP_TO
    side, attrs, displaced = _fit(ep, precision, True, both)
    if TEMPLATE_UNIT_OFFSETS in side and both:
        other, other_attrs, other_displaced = _fit(ep, precision, False, True)
        same = {k for k, v in side.items() if k in other and _alike(v, other[k])}
        if other_displaced <= displaced + DISPLACED_TIE and \
                side_bytes({k: v for k, v in other.items() if k not in same}) < \
                side_bytes({k: v for k, v in side.items() if k not in same}):
            return other, other_attrs, ep.coarser
    return side, attrs, ep.coarser


def _alike(a, b) -> bool:
    """Whether two side arrays or tables are the same (they weigh the same in
    :func:`side_bytes`)."""
    if a is b:
        return True
    if isinstance(a, pd.DataFrame) or isinstance(b, pd.DataFrame):
        return isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame) and \
            list(a.columns) == list(b.columns) and \
            all(_alike(a[c].to_numpy(), b[c].to_numpy()) for c in a.columns)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


#: Model fits of both kinds of templates are tried up to this many actions: the second fit
#: takes 30-60% more of model compression's CPU time (PENNANT 2r, 14 k actions: 1.33 M
#: actions per CPU second with it), a few ms on a trace this small, where the fixed bytes of
#: a file make a few hundred a large share.  Of 37 public recordings tried, two were smaller
#: with the epochs' templates: CloverLeaf 2r of 20 steps (2,302 actions: 2,727 bytes against
#: 2,750) and miniMD 2r of 400 steps (6,906 actions: the model's arrays 1,105 bytes against
#: 1,164); the five of 8-16 k actions (CloverLeaf, PENNANT 2r and 2r sq, miniAMR, miniGhost
#: SVAF) had arrays 16-76% larger so.  Built traces: testall_halo.c's 48 k actions were 3.5%
#: smaller with the epochs' templates, 20-step clover2d.c's 2.5-5%.
BOTH_UP_TO = 1 << 13
#: ... and the epochs' fit is kept for its bytes where it moves at most this share of the
#: work more than the stretches' (:func:`_displaced`).  IMB-NBC's sizes between gathers
#: (tests/programs/nbc_overlap.c, 3 ranks): the epochs' fit, without templates, 3-7% smaller
#: on most recordings, moved 5.2-5.4% of the work (the collective-alone phase's 2 us
#: computes modelled 8-15 us), the stretches' 3.0-3.4%.  Of the fits compress's tests
#: compare, the 37 whose epochs' fit was smaller moved at most 0.04% more so.
DISPLACED_TIE = 1e-3


def side_bytes(side: dict) -> int:
    """About what a model's arrays take deflated (each alone, as a pack holds it)."""
    total = 0
    for v in side.values():
        for x in (v[c].to_numpy() for c in v.columns) if isinstance(v, pd.DataFrame) else (v,):
            x = np.asarray(x)
            total += deflated_size(x) if x.dtype.kind in "iu" else x.nbytes
    return total


#: Finer epochs, down to :data:`MIN_PER_EPOCH_FLOOR` volume actions per rank on average, are
#: fitted where merging more would take more than :data:`MERGE_LOSS` of the work's critical
#: path (:func:`merge_choices`); the writer falls back to coarser ones where the file would
#: exceed its byte budget (files.write_compressed).
MIN_PER_EPOCH_FLOOR = 8
MERGE_LOSS = 0.0025


def merge_choices(vol: np.ndarray, vr: np.ndarray, unit: np.ndarray, work: np.ndarray,
                  n_anchor: np.ndarray, nvol: int, precision: float
                  ) -> tuple[int, list[tuple[int, int]]]:
    """(anchors per epoch, the coarser merges to fall back to: (merge, bytes its epoch totals
    save, about), finest first, the last :data:`MIN_PER_EPOCH`'s).  An epoch's total is
    spread over its stretches between anchors by the calls' means, so the ranks' turns at
    being the slowest within it are lost: the work's critical path, the sum over the
    stretches of their slowest rank's work, shrinks (public PENNANT 4r: by 4.3% at 6 anchors
    an epoch, 1.9% at 2; its model replay -2.1% from the exact file's at 6, -1.2% at 1).
    Halving from :data:`MIN_PER_EPOCH`'s merge, the first that keeps the path within
    :data:`MERGE_LOSS`, none below :data:`MIN_PER_EPOCH_FLOOR`'s; that one, and no fallback,
    where the ranks' anchor counts differ (their epochs are not the same stretches)."""
    epochs_total = int((n_anchor + 1).sum())
    most, least = (max(1, -(-m * epochs_total // max(nvol, 1)))
                   for m in (MIN_PER_EPOCH, MIN_PER_EPOCH_FLOOR))
    P = len(n_anchor)
    if most <= least or not P or (n_anchor != n_anchor[0]).any():
        return most, []
    U = int(n_anchor[0]) + 1
    x = np.bincount(vr[work] * U + unit[work], weights=vol[work], minlength=P * U)
    x = x.reshape(P, U)
    path = float(x.max(axis=0).sum())

    def merged(m: int) -> np.ndarray:
        return np.pad(x, ((0, 0), (0, -U % m))).reshape(P, -1, m).sum(axis=2)

    def kept(e: np.ndarray) -> bool:
        return path - float(e.max(axis=0).sum()) <= MERGE_LOSS * path

    def size(e: np.ndarray) -> int:
        return deflated_size(V.log_codes(e.ravel(), precision))
    e = merged(most)
    if not path > 0 or kept(e):
        return most, []
    tried, m = [(most, size(e))], max(most // 2, least)
    while True:
        e = merged(m)
        tried.append((m, size(e)))
        if kept(e) or m == least:
            break
        m = max(m // 2, least)
    chosen, top = tried[-1]
    return chosen, [(m, top - n) for m, n in reversed(tried[:-1])]


class _Epochs(NamedTuple):
    """What :func:`_fit` takes of the trace whatever its templates (:func:`_epochs`)."""
    P: int                      # ranks
    nsig: int                   # signatures
    kinds: np.ndarray           # each signature's kind code
    ids: np.ndarray             # each action's signature
    offsets: np.ndarray         # each rank's first action
    vrow: np.ndarray            # actions that carry a volume
    anchor: np.ndarray          # signatures that start an epoch
    anchor_name: str
    rank: np.ndarray            # each action's rank
    nvol: int
    n_anchor: np.ndarray        # anchors per rank
    merge: int                  # anchors per epoch
    coarser: list               # the merges to fall back to (merge_choices)
    epoch_offsets: np.ndarray   # each rank's first epoch
    vidx: np.ndarray            # the volume actions' rows ...
    vr: np.ndarray              # ... ranks
    vol: np.ndarray             # ... volumes
    vids: np.ndarray            # ... signatures
    kind_of_sig: np.ndarray     # each signature's dense kind
    in_call: np.ndarray         # volume actions in an MPI call (not computation)
    gepoch: np.ndarray          # each action's epoch over all ranks
    bv: np.ndarray              # the volume actions' neighbours before ...
    av: np.ndarray              # ... and after
    phased: tuple | None        # (site_key_space, vids, bv, av) by site_ids, where tokens


def _epochs(volume: np.ndarray, vrow: np.ndarray, ids: np.ndarray, offsets: np.ndarray,
            kinds: np.ndarray, precision: float, sites: tuple | None = None,
            merge: int | None = None) -> _Epochs:
    """What :func:`_fit` takes of the trace whatever its templates: anchors, epochs (of
    ``merge`` anchors, default :func:`merge_choices`'), the volume actions' ranks, calls and
    neighbours (with ``sites``: as :func:`site_ids`)."""
    P = len(offsets) - 1
    anchor, anchor_name = choose_anchors(kinds, ids, offsets)
    rank = per_rank(offsets)
    nvol = int(vrow.sum())
    n_anchor = np.bincount(rank[anchor[ids]], minlength=P) if P else np.zeros(0, np.int64)
    unit = epoch_of(anchor[ids], offsets, 1)
    vidx = np.flatnonzero(vrow)
    vr = rank[vidx]
    vids = ids[vidx]
    kinds = np.asarray(kinds, np.int64)
    in_call = ~K.mask(K.WORK)[kinds][vids]
    coarser = []
    if merge is None:
        merge, coarser = merge_choices(volume[vidx], vr, unit[vidx], ~in_call, n_anchor, nvol,
                                       precision)
    epoch = unit // merge
    n_epochs = n_anchor // merge + 1
    epoch_offsets = np.concatenate([[0], np.cumsum(n_epochs)]).astype(np.int64)
    phased = None
    if sites is not None:                   # (the stretches' fit's keys: :data:`SITE_PHASES`)
        sid = site_ids(ids, offsets, *sites)
        phased = (site_key_space(*sites), sid[vidx], *neighbours(sid, offsets, vidx, vr))
    _, kind_of_sig = V.dense_unique(kinds)
    gepoch = epoch_offsets[rank] + epoch
    bv, av = neighbours(ids, offsets, vidx, vr)
    return _Epochs(P=P, nsig=len(kinds), kinds=kinds, ids=ids, offsets=offsets, vrow=vrow,
                   anchor=anchor, anchor_name=anchor_name, rank=rank, nvol=nvol,
                   n_anchor=n_anchor, merge=merge, coarser=coarser, epoch_offsets=epoch_offsets,
                   vidx=vidx,
                   vr=vr, vol=volume[vidx], vids=vids, kind_of_sig=kind_of_sig,
                   in_call=in_call, gepoch=gepoch, bv=bv, av=av,
                   phased=phased)


#: The array of format version 16: the calls of their call site's second mode.
MODE_GAPS = "mode_gaps"
#: A call site's calls of its other mode have their site key with this bit (site keys are below
#: 2**60: :data:`_MAX_SIGNATURES` cubed).
MODE_FLAG = np.int64(1) << np.int64(62)
#: A site's calls are two modes where their values, in order, step up by this factor at least.
MODE_RATIO = 8.0
#: ... and each mode holds this many calls at least (a lone long call is the tail's) ...
MODE_LEAST = 2
#: ... and one mean for both would move this share of the rank's work at least.
MODE_WEIGHT = 1 / 64


def site_modes(site: np.ndarray, site_rank: np.ndarray, vol: np.ndarray, work: np.ndarray,
               budget: int) -> np.ndarray:
    """Mask of the calls of each call site's second mode (``site``: their sites, each of one
    rank, ``site_rank``): where a site's work calls, sorted, step up by :data:`MODE_RATIO` at
    least (the largest step: the modes' border), the calls on the side with fewer, where each
    side has :data:`MODE_LEAST` calls and one mean for both would move :data:`MODE_WEIGHT` of
    the rank's work between them; the sites that would move the most first, at most
    ``budget`` calls in all.  Public LAMMPS's force kernel (milliseconds) sits between a wait
    and an irecv, as do its pack computes of 0.5-2 us with the same messages: one mean took
    the kernel's volume to the packs, and the model's replay of lj at 4 ranks (a 1x2x2 grid)
    was 13.5% slower than the exact file's; with a mean per mode, 0.7% (session 32)."""
    out = np.zeros(len(site), bool)
    if not work.any():
        return out
    nsite = int(site.max()) + 1
    s, v = site[work], np.maximum(vol[work], 1e-12)
    total = np.bincount(s, weights=v, minlength=nsite)
    top, least = np.zeros(nsite), np.full(nsite, np.inf)
    np.maximum.at(top, s, v)
    np.minimum.at(least, s, v)
    # (only the sites that span the ratio, and weigh enough, are sorted: a few)
    work_total = np.bincount(site_rank, weights=total, minlength=int(site_rank.max()) + 1)
    maybe = (top >= MODE_RATIO * least) & (total >= MODE_WEIGHT * work_total[site_rank])
    at = np.flatnonzero(work)[maybe[s]]
    if len(at) < 2 * MODE_LEAST:
        return out
    _, g = _sorted_groups(site[at])
    lv = np.log(np.maximum(vol[at], 1e-12))
    # (by group, then value: one argsort of the log values in [0, 1) after the group's
    # number, 5x as fast as a lexsort of miniAMR 4r's 30 k calls)
    span = float(lv.max() - lv.min())
    order = np.argsort(g + (lv - lv.min()) / (2 * span if span > 0 else 1.0))
    gs, lv = g[order], lv[order]
    vs = np.maximum(vol[at], 1e-12)[order]
    n = np.bincount(gs)
    first = np.cumsum(n) - n
    step = np.full(len(gs), -np.inf)
    step[:-1] = np.where(gs[1:] == gs[:-1], lv[1:] - lv[:-1], -np.inf)
    best = np.full(len(n), -np.inf)
    np.maximum.at(best, gs, step)
    # (the first largest step of each group: the lower mode ends there)
    cut = np.full(len(n), len(gs), np.int64)
    hit = np.flatnonzero(step == best[gs])
    np.minimum.at(cut, gs[hit], hit)
    n_low = cut - first + 1
    n_up = n - n_low
    low = np.bincount(gs, weights=np.where(np.arange(len(gs)) <= cut[gs], vs, 0.0))
    g_site = np.zeros(len(n), np.int64)
    g_site[gs] = site[at][order]
    moved = n_low * (total[g_site] / n - low / np.maximum(n_low, 1))
    # (the ratio of the values at the step, not of their logs: log(8 v) - log(v) rounds
    # below log(8) for some v)
    ok = (vs[np.minimum(cut + 1, len(vs) - 1)] >= MODE_RATIO * vs[cut]) & \
        (np.minimum(n_low, n_up) >= MODE_LEAST) & \
        (moved >= MODE_WEIGHT * work_total[site_rank[g_site]])
    if not ok.any():
        return out
    minor = np.minimum(n_low, n_up)
    chosen = np.argsort(-np.where(ok, moved, 0.0), kind="stable")
    chosen = chosen[ok[chosen]]
    chosen = chosen[np.cumsum(minor[chosen]) <= budget]
    take = np.zeros(len(n), bool)
    take[chosen] = True
    upper = np.arange(len(gs)) > cut[gs]
    flag = take[gs] & np.where((n_up <= n_low)[gs], upper, ~upper)
    out[at[order[flag]]] = True
    return out


def _gaps(mask: np.ndarray, vr: np.ndarray, P: int) -> tuple[np.ndarray, np.ndarray]:
    """(count per rank, each marked row's gap since its rank's previous one) of ``mask`` over
    the volume actions (ranks ``vr``, rank-major)."""
    first = np.searchsorted(vr, np.arange(P))
    pos = np.arange(len(vr)) - first[vr]
    kp, kr = pos[mask], vr[mask]
    prev = np.concatenate([[-1], kp[:-1]])
    prev[np.concatenate([[True], kr[1:] != kr[:-1]]) if len(kr) else []] = -1
    return np.bincount(kr, minlength=P).astype(np.int64), (kp - prev - 1).astype(np.int64)


def _fit(ep: _Epochs, precision: float, units: bool, measure: bool = False
         ) -> tuple[dict, dict, float | None]:
    """:func:`fit`'s model of :func:`_epochs`' ``ep``, its templates of the stretches between
    anchors where epochs are merged and ``units``, else of the epochs: (side arrays,
    attributes, with ``measure`` the share of the work it moves between calls,
    :func:`_displaced`, else None: only fits that are compared need it)."""
    P, nsig, kinds, ids, offsets, vrow, anchor, anchor_name, rank, nvol, n_anchor, merge, _, \
        epoch_offsets, vidx, vr, vol, vids, kind_of_sig, in_call, gepoch, bv, av, phased = ep
    ge = gepoch[vidx]
    n_ep = int(epoch_offsets[-1])
    # templates of the stretches between two anchors where epochs are merged (TEMPLATE_UNIT)
    by_anchor = units and merge > 1
    unit_offsets = np.concatenate([[0], np.cumsum(n_anchor + 1)]).astype(np.int64) \
        if by_anchor else epoch_offsets
    gunit = unit_offsets[rank] + epoch_of(anchor[ids], offsets, 1) if by_anchor else gepoch
    gu = gunit[vidx]
    n_units = int(unit_offsets[-1])
    hashes = epoch_hashes(kinds[ids] * 2 + vrow, gunit, n_units)  # (KEY)
    nvol_unit = np.bincount(gu, minlength=n_units)
    t_hash, t_length = _templates(hashes, nvol_unit,
                                  np.repeat(np.arange(P), np.diff(unit_offsets)), nvol, P)
    t_of = _template_of(t_hash, t_length, hashes, nvol_unit)[gu]
    tm = t_of >= 0
    st = ~tm                                 # calls shared by call site
    vr_t, vr_s = vr[tm], vr[st]
    pos = position_in_epoch(gu)[tm]
    gu_t = gu[tm]
    work = ~in_call
    tw = work[tm]                            # (variants by the work's places)
    variants, label = template_variants(t_of[tm][tw], gu_t[tw], pos[tw], vr_t[tw],
                                        vol[tm][tw], t_length, len(hashes), P,
                                        MIN_REPEATS if by_anchor else 1)
    rows = t_length * variants
    t_start = np.cumsum(rows) - rows
    row = t_start[t_of[tm]] + label[gu_t] * t_length[t_of[tm]] + pos
    nkey, sid, bs, as_ = (nsig, vids, bv, av) if phased is None or not units else phased
    keys = site_keys(sid[st], bs[st], as_[st], nkey)
    site, site_offsets = rank_sites(keys, vr_s, P)
    other = np.zeros(len(vol), bool)        # (the calls of a site's second mode)
    other[st] = site_modes(site, per_rank(site_offsets), vol[st], work[st],
                           max(len(ids) // TAIL_EVERY, TAIL_MIN))
    call = np.zeros(len(vol), np.int64)       # (template places, then each rank's sites)
    call[tm] = row * P + vr_t
    call[st] = int(rows.sum()) * P + site
    tail = np.zeros(len(vol), bool)        # (the in-call CPU time sets no wait)
    # (chosen against the sites' one mean: a second mode's calls that the tail holds exactly
    # keep their drift, which their own mean would lose: public LAMMPS lj 3r)
    tail[work] = choose_tail(call[work], vol[work], kind_of_sig[vids[work]],
                             max(len(ids) // TAIL_EVERY, TAIL_MIN), precision)
    other &= ~tail              # (those keep their values: a mode of none is no mode)
    if other.any():
        keys[other[st]] |= MODE_FLAG
        site, site_offsets = rank_sites(keys, vr_s, P)
        call[st] = int(rows.sum()) * P + site
    rest = ~tail
    totals = np.bincount(ge, weights=np.where(rest & work, vol, 0.0), minlength=n_ep)
    in_call_totals = np.bincount(vr, weights=np.where(rest & in_call, vol, 0.0), minlength=P)
    tr, sr = rest[tm], rest[st]
    template_means = _means(row[tr], vr_t[tr], vol[tm][tr], int(rows.sum()), P)
    means = _means(site[sr], np.zeros(int(sr.sum()), np.int64), vol[st][sr],
                   int(site_offsets[-1]), 1)
    displaced = None
    if measure:
        modelled = np.empty(len(vol))         # (before the epochs' totals scale them)
        modelled[tm] = template_means[row * P + vr_t]
        modelled[st] = means[site]
        displaced = _displaced(vol, modelled, tail, work, ge, n_ep)
    templates = _frame({"hash": t_hash, "length": t_length, "start": t_start,
                        **({"variants": variants} if (variants > 1).any() else {})})
    parts = [means, template_means, totals, in_call_totals if in_call.any() else ()]
    codes = V.log_codes(np.concatenate(parts), precision)  # (at once)
    site_codes, template_codes, total_codes, in_call_codes = np.split(
        codes, np.cumsum([len(x) for x in parts[:-1]]))
    side = {"site_offsets": site_offsets, "rank_site_means": site_codes, "templates": templates,
            RANK_TEMPLATE_MEANS: np.ascontiguousarray(template_codes.reshape(-1, P).T).ravel(),
            "epoch_totals": total_codes,
            "epoch_offsets": epoch_offsets, "anchor": anchor.astype(np.uint8),
            **tail_table(tail, vr, vol, P, precision, call),
            **({MODE_GAPS: np.concatenate(_gaps(other, vr, P))} if other.any() else {}),
            **({"in_call_totals": in_call_codes} if in_call.any() else {}),
            **({"epoch_variant": label} if (variants > 1).any() else {}),
            **({TEMPLATE_UNIT_OFFSETS: unit_offsets} if by_anchor else {})}
    # no spread (module docstring): empty tables, which every reader takes for none
    side["spread_classes"], side["spread_rho"] = np.zeros(0, np.int64), np.zeros(0)
    side["spread_code"] = np.zeros(0, np.int64)
    return side, {"epoch_merge": int(merge), "epoch_anchor": anchor_name,
                  **({"epoch_sites": SITE_PHASES} if phased is not None and units else {}),
                  "epoch_templates": TEMPLATE_KEY}, displaced


def _displaced(vol: np.ndarray, modelled: np.ndarray, tail: np.ndarray, work: np.ndarray,
               epoch: np.ndarray, n_epochs: int) -> float:
    """The share of the work a model moves from the calls that did it: its calls' means
    (``modelled``) scaled to each epoch's total as a reader scales them, the tail's calls
    exact, summed |modelled - recorded| over twice the work (0: each call as recorded, 1: all
    of it elsewhere)."""
    rest = work & ~tail
    want = np.bincount(epoch[rest], weights=vol[rest], minlength=n_epochs)
    got = np.bincount(epoch[rest], weights=modelled[rest], minlength=n_epochs)
    scale = np.divide(want, got, out=np.zeros(n_epochs), where=got > 0)
    moved = np.abs(modelled[rest] * scale[epoch[rest]] - vol[rest]).sum()
    total = float(vol[work].sum())
    return float(moved) / (2 * total) if total > 0 else 0.0


def template_means(side: dict, nranks: int) -> np.ndarray | None:
    """The template means' codes as [rows, nranks], from either layout (None: neither or
    both stored, or a length not a multiple of ``nranks``)."""
    names = [k for k in ("template_means", RANK_TEMPLATE_MEANS) if k in side]
    if len(names) != 1 or len(side[names[0]]) % max(nranks, 1):
        return None
    codes = np.asarray(side[names[0]], np.int64)
    if names[0] == "template_means":
        return codes.reshape(-1, max(nranks, 1))
    return codes.reshape(max(nranks, 1), -1).T


def check(side: dict, attrs: dict, nsig: int, nranks: int, tokens: bool = False
          ) -> str | None:
    """What is wrong with an epoch model's tables (None: nothing; ``tokens``: whether the file
    holds size tokens)."""
    phases = attrs.get("epoch_sites")
    if phases is not None and (phases != SITE_PHASES or not tokens):
        return f"model call sites {phases!r} unknown or without size tokens"
    tmeans = template_means(side, nranks)
    if tmeans is None and all(k in side for k in ("template_means", RANK_TEMPLATE_MEANS)):
        return "model template means stored twice (per row and per rank)"
    need = ("templates", "epoch_totals",
            "epoch_offsets", "anchor", "spread_classes", "spread_rho",
            "tail_offsets", "tail_gaps", "tail_values")
    spread_names = [k for k in ("spread", "spread_code") if k in side]
    own = "rank_site_means" in side          # (each rank's own sites: format version 9)
    sites_names = ("site_offsets", "rank_site_means") if own else ("sites", "site_means")
    if any(k not in side for k in need + sites_names) or not spread_names or \
            not any(k in side for k in ("template_means", RANK_TEMPLATE_MEANS)):
        return "model without epoch tables (written before issue 38: compress it again)"
    if own and any(k in side for k in ("sites", "site_means")):
        return "model call sites stored twice (per rank and in one table)"
    if len(spread_names) > 1:
        return "model/spread stored twice (as floats and as codes)"
    if attrs.get("epoch_templates", "signatures") not in ("signatures", TEMPLATE_KEY):
        return f"unknown model epoch_templates {attrs['epoch_templates']!r}"
    p = attrs.get("precision", 0.01)
    quantiles = spread_quantiles(side, p) \
        if len(side[spread_names[0]]) % NOISE_QUANTILES == 0 else None
    toff = np.asarray(side["tail_offsets"], np.int64)
    if len(toff) != nranks + 1 or (len(toff) and (toff[0] != 0 or (np.diff(toff) < 0).any()
                                                  or toff[-1] != len(side["tail_gaps"]))) or \
            len(side["tail_values"]) + len(side.get("tail_steps", ())) != \
            len(side["tail_gaps"]) or (len(side["tail_gaps"]) and np.min(side["tail_gaps"]) < 0):
        return "model/tail tables inconsistent"
    if ("tail_steps" in side) != ("tail_value_offsets" in side):
        return "model/tail_steps without model/tail_value_offsets, or these without those"
    if "tail_steps" in side:
        vo = np.asarray(side["tail_value_offsets"], np.int64)
        steps = np.asarray(side["tail_steps"], np.int64)
        if len(vo) != nranks + 1 or vo[0] != 0 or (np.diff(vo) < 0).any() or \
                vo[-1] != len(side["tail_values"]) or (np.diff(vo) > np.diff(toff)).any() or \
                (len(steps) and steps.min() < 0):
            return "model/tail_value_offsets inconsistent"
    if own:
        so = np.asarray(side["site_offsets"], np.int64)
        if len(so) != nranks + 1 or so[0] != 0 or (np.diff(so) < 0).any() or \
                so[-1] != len(side["rank_site_means"]):
            return "model/site_offsets inconsistent"
    else:
        sites = side["sites"]
        if not isinstance(sites, pd.DataFrame) or \
                not {"signature", "before", "after"} <= set(sites.columns):
            return "model/sites lacks a column"
        cols = [sites[c].to_numpy(np.int64) for c in ("signature", "before", "after")]
        if len(sites) and (cols[0].min() < 0 or min(c.min() for c in cols) < -1 or
                           max(c.max() for c in cols) >= nsig):
            return "model/sites names a signature outside the table"
        if len(side["site_means"]) != len(sites) * nranks:
            return "model/site_means of the wrong length"
    t = side["templates"]
    if not isinstance(t, pd.DataFrame) or not {"hash", "length", "start"} <= set(t.columns):
        return "model/templates lacks a column"
    length, start = t["length"].to_numpy(np.int64), t["start"].to_numpy(np.int64)
    variants = t["variants"].to_numpy(np.int64) if "variants" in t.columns else \
        np.ones_like(length)
    h = t["hash"].to_numpy(np.int64)
    rows = length * variants
    if len(t) and ((length < 1).any() or (variants < 1).any() or (variants > VARIANTS).any()
                   or (h[1:] <= h[:-1]).any() or                          # (no diff: wraps)
                   not np.array_equal(start, np.cumsum(rows) - rows)):
        return "model/templates inconsistent"
    units = side.get(TEMPLATE_UNIT_OFFSETS)
    off = np.asarray(side["epoch_offsets"], np.int64)
    merge = attrs.get("epoch_merge")
    if len(side["anchor"]) != nsig or \
            len(off) != nranks + 1 or (len(off) and (off[0] != 0 or (np.diff(off) < 1).any()
                                                      or off[-1] != len(side["epoch_totals"]))) \
            or not isinstance(merge, (int, np.integer)) or merge < 1 or \
            quantiles is None or len(quantiles) != len(side["spread_classes"]) or \
            len(side["spread_rho"]) != len(side["spread_classes"]) or \
            not ((side["spread_rho"] >= 0) & (side["spread_rho"] <= 1)).all() or \
            not np.isfinite(quantiles).all() or \
            (np.diff(np.asarray(side["spread_classes"])) <= 0).any():
        return "model epoch tables inconsistent"
    if units is not None:       # (after the epochs' tables, which a damaged merge fails)
        if np.asarray(units).dtype.kind not in "iu":
            return f"model/{TEMPLATE_UNIT_OFFSETS} not integers"
        units = np.asarray(units, np.int64)
        if len(units) != nranks + 1 or units[0] != 0 or merge < 2 or \
                ((np.diff(units) - 1) // merge + 1 != np.diff(off)).any():
            return f"model/{TEMPLATE_UNIT_OFFSETS} inconsistent"
    label = side.get("epoch_variant")
    n_units = len(side["epoch_totals"]) if units is None else int(units[-1])
    if ("variants" in t.columns) != (label is not None) or label is not None and (
            len(label) != n_units or len(label) and (
                np.min(label) < 0 or np.max(label) >= VARIANTS)):
        return "model/epoch_variant inconsistent"
    if tmeans is None or len(tmeans) != int(rows.sum()):
        return "model/template_means of the wrong length"
    if len(side.get("in_call_totals", np.zeros(nranks))) != nranks:
        return "model/in_call_totals of the wrong length"
    why = _check_modes(side, nranks)
    if why:
        return why
    for name in ("site_means", "rank_site_means", "template_means", RANK_TEMPLATE_MEANS,
                 "epoch_totals", "tail_values", "in_call_totals"):
        if name in side and \
                not np.isfinite(V.from_codes(np.asarray(side[name], np.int64), p)).all():
            return f"model/{name} holds a code beyond float64"
    return None


def _check_modes(side: dict, nranks: int) -> str | None:
    """What is wrong with a model's calls of a second mode (format version 16; None: nothing
    or none)."""
    if MODE_GAPS in side:
        m = np.asarray(side[MODE_GAPS])
        if m.dtype.kind not in "iu" or len(m) < nranks or (m < 0).any() or \
                (m > 1 << 40).any() or int(m[:nranks].sum()) != len(m) - nranks:
            return "model/mode_gaps inconsistent"
    return None


class EpochVolumes:
    """Expands the epoch model: a whole rank's modelled volumes at a time (module docstring)."""

    def __init__(self, side: dict, attrs: dict, has_volume: np.ndarray, kinds: np.ndarray,
                 nranks: int, sites: tuple | None = None):
        p = float(attrs["precision"])
        self.sites = sites if "epoch_sites" in attrs else None      # (:func:`site_ids`)
        self.kinds = np.asarray(kinds, np.int64)
        self.nsig = len(has_volume) if self.sites is None else site_key_space(*self.sites)
        self.has_volume = has_volume
        self.anchor = np.asarray(side["anchor"]).astype(bool)
        self.merge = int(attrs["epoch_merge"])
        self.by_kind = attrs.get("epoch_templates", "signatures") == TEMPLATE_KEY   # (check)
        if "rank_site_means" in side:       # (each rank's own sites, found from its calls)
            self.site_offsets = np.asarray(side["site_offsets"], np.int64)
            self.means = V.from_codes(np.asarray(side["rank_site_means"], np.int64), p)
        else:
            self.site_offsets = None
            s = side["sites"]
            keys = site_keys(*(s[c].to_numpy(np.int64)
                               for c in ("signature", "before", "after")), self.nsig)
            self.order = np.argsort(keys, kind="stable")
            self.keys = keys[self.order]
            self.means = V.from_codes(np.asarray(side["site_means"], np.int64), p) \
                .reshape(len(keys), nranks)
        t = side["templates"]
        self.t_hash, self.t_length, self.t_start = \
            (t[c].to_numpy(np.int64) for c in ("hash", "length", "start"))
        self.t_variants = t["variants"].to_numpy(np.int64) if "variants" in t.columns else \
            np.ones_like(self.t_length)
        self.label = np.asarray(side.get("epoch_variant", ()), np.int64)
        self.unit_offsets = np.asarray(side[TEMPLATE_UNIT_OFFSETS], np.int64) \
            if TEMPLATE_UNIT_OFFSETS in side else None
        self.template_means = V.from_codes(template_means(side, nranks), p)
        self.totals = V.from_codes(np.asarray(side["epoch_totals"], np.int64), p)
        # files without in-call totals pooled all volumes in the epoch totals
        self.in_call_totals = V.from_codes(np.asarray(side["in_call_totals"], np.int64), p) \
            if "in_call_totals" in side else None
        self.in_call = ~K.mask(K.WORK)[self.kinds] if self.in_call_totals is not None else \
            np.zeros(len(self.kinds), bool)
        self.offsets = np.asarray(side["epoch_offsets"], np.int64)
        self.rho = np.asarray(side["spread_rho"], np.float64)
        self.classes = np.asarray(side["spread_classes"], np.int64)
        self.spread = spread_quantiles(side, p)
        self.tail_offsets = np.asarray(side["tail_offsets"], np.int64)
        self.tail_gaps = np.asarray(side["tail_gaps"], np.int64)
        self.tail_values = np.asarray(side["tail_values"], np.int64)
        self.tail_steps = np.asarray(side["tail_steps"], np.int64) if "tail_steps" in side \
            else None
        self.tail_value_offsets = np.asarray(side.get("tail_value_offsets", ()), np.int64)
        modes = np.asarray(side.get(MODE_GAPS, np.zeros(nranks, np.int64)), np.int64)
        self.mode_offsets = np.concatenate([[0], np.cumsum(modes[:nranks])])
        self.mode_gaps = modes[nranks:]
        self.precision = p

    def _site_means(self, keys: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
        """(the means on ``rank`` of the call sites ``keys``, the index of each one's site);
        ValueError: a site the tables lack."""
        if self.site_offsets is not None:
            lo, hi = int(self.site_offsets[rank]), int(self.site_offsets[rank + 1])
            own, site = _sorted_groups(keys)
            if len(own) != hi - lo:
                raise ValueError("the call sites of model/site_offsets do not fit the rank's")
            return self.means[lo + site], site
        at = np.searchsorted(self.keys, keys).clip(0, max(len(self.keys) - 1, 0))
        if len(keys) and (not len(self.keys) or (self.keys[at] != keys).any()):
            raise ValueError("a call site missing from model/sites")
        return (self.means[self.order[at], rank] if len(keys) else np.zeros(0)), at

    def _tail(self, rank: int, k0: int, k1: int, call: np.ndarray) -> np.ndarray:
        """The values of ``rank``'s kept calls (``k0:k1`` of the tail tables; ``call``: each
        one's template place or site, as :func:`tail_steps` takes them)."""
        if self.tail_steps is None:
            codes = self.tail_values[k0:k1]
        else:
            f0, f1 = (int(x) for x in self.tail_value_offsets[rank:rank + 2])
            codes = tail_codes(self.tail_values[f0:f1], self.tail_steps[k0 - f0:k1 - f1], call)
        values = V.from_codes(codes, self.precision)
        if not np.isfinite(values).all():
            raise ValueError("model/tail_steps give a value beyond float64")
        return values

    def rank(self, ids: np.ndarray, rank: int, total: float) -> np.ndarray:
        """Every action's modelled volume on ``rank`` (0 where its signature has none), whose
        signature ids are ``ids``; ``total`` its recorded volume total.  ValueError when the
        tables do not fit this rank."""
        n = len(ids)
        out = np.zeros(n)
        offs = np.array([0, n], np.int64)
        vrow = self.has_volume[ids]
        if not vrow.any():
            return out
        lo, hi = int(self.offsets[rank]), int(self.offsets[rank + 1])
        is_anchor = self.anchor[ids]
        if int(is_anchor.sum()) // self.merge + 1 != hi - lo:
            raise ValueError("the epochs of model/epoch_offsets do not fit the rank's anchors")
        gepoch = epoch_of(is_anchor, offs, self.merge)
        epoch = gepoch[vrow]
        u0, u1 = lo, hi
        gunit = gepoch
        if self.unit_offsets is not None:      # (templates of the stretches between anchors)
            u0, u1 = (int(x) for x in self.unit_offsets[rank:rank + 2])
            if int(is_anchor.sum()) + 1 != u1 - u0:
                raise ValueError(f"model/{TEMPLATE_UNIT_OFFSETS} do not fit the rank's "
                                 f"anchors")
            gunit = epoch_of(is_anchor, offs, 1)
        unit = gunit[vrow]
        k0, k1 = int(self.tail_offsets[rank]), int(self.tail_offsets[rank + 1])
        kept = np.cumsum(self.tail_gaps[k0:k1] + 1) - 1
        if len(kept) and kept[-1] >= len(epoch):
            raise ValueError("model/tail_gaps point past the rank's volume actions")
        rest = np.ones(len(epoch), bool)
        rest[kept] = False
        nvol = np.bincount(unit, minlength=u1 - u0)
        key = self.kinds[ids] * 2 + vrow if self.by_kind else ids
        t_unit = _template_of(self.t_hash, self.t_length, epoch_hashes(key, gunit, u1 - u0),
                              nvol)
        t_of = t_unit[unit]
        tm = t_of >= 0
        w = np.zeros(len(epoch))
        t = t_of[tm]
        label = self.label[u0:u1][unit[tm]] if len(self.label) else np.zeros(len(t), np.int64)
        if (label >= self.t_variants[t]).any():
            raise ValueError("model/epoch_variant names a variant its template has not")
        row = self.t_start[t] + label * self.t_length[t] + \
            position_in_epoch(unit)[tm]
        w[tm] = self.template_means[row, rank]
        vidx = np.flatnonzero(vrow)
        sid = ids if self.sites is None else site_ids(ids, offs, *self.sites)
        before, after = neighbours(sid, offs, vidx, np.zeros(len(vidx), np.int64))
        keys = site_keys(sid[vidx][~tm], before[~tm], after[~tm], self.nsig)
        m0, m1 = (int(x) for x in self.mode_offsets[rank:rank + 2])
        other = np.zeros(len(epoch), bool)
        at = np.cumsum(self.mode_gaps[m0:m1] + 1) - 1
        if len(at) and at[-1] >= len(epoch):
            raise ValueError("model/mode_gaps point past the rank's volume actions")
        other[at] = True
        if (other & tm).any():
            raise ValueError("model/mode_gaps name a call of a template")
        keys[other[~tm]] |= MODE_FLAG
        w[~tm], site = self._site_means(keys, rank)
        if len(self.spread):
            next_kind = self.kinds[after.clip(0)] * (after >= 0)
            w *= np.exp(spread(w, align_keys(epoch, next_kind), rank, self.classes,
                               self.spread, self.rho))
        # the work's epochs, then (group hi - lo) the calls' in-call CPU time
        S = self.totals[lo:hi]
        group = epoch
        if self.in_call_totals is not None:
            S = np.append(S, self.in_call_totals[rank])
            group = np.where(self.in_call[ids[vidx]], hi - lo, epoch)
        D = np.bincount(group, weights=w * rest, minlength=len(S))
        n_rest = np.bincount(group, weights=rest, minlength=len(S))
        even = D[group] == 0
        v = np.where(even, S[group] / np.maximum(n_rest[group], 1),
                     w * S[group] / np.where(even, 1.0, D[group]))
        call = np.empty(len(epoch), np.int64)
        call[tm] = row
        call[~tm] = len(self.template_means) + site
        v[kept] = self._tail(rank, k0, k1, call[kept])
        if self.in_call_totals is not None:
            v = _reconciled(v, group == hi - lo, float(np.square(S[:-1]).sum() +
                                                       np.square(v[kept]).sum()), total)
        else:
            got = v.sum()       # (all scaled: on the rest alone the tail's rounding, within the
            if got != 0 and np.isfinite(got):   # precision, would land amplified on a small
                v *= total / got                # rest)
        out[vrow] = v
        return out


def _reconciled(v: np.ndarray, in_call: np.ndarray, var_w: float, total: float) -> np.ndarray:
    """A rank's modelled volumes ``v`` scaled to its recorded ``total``: what the coded
    totals miss shared between its work and its in-call CPU time by how much each can miss
    (each coded value is within the precision of its own: the work's error is that of its
    epochs' totals and tail values, whose squares sum to ``var_w``, the in-call time's that
    of its one total; the variance-weighted split, least squares).  Scaled alike, the
    rounding of a busy-polling rank's in-call time (71-99% of its CPU time on public
    CloverLeaf, TeaLeaf, PENNANT, IMB at 4 ranks) landed on its work: up to 0.9% of a rank's
    compute (QA L2 of session 31)."""
    work, inside = float(v[~in_call].sum()), float(v[in_call].sum())
    d = total - work - inside
    var_i = inside * inside
    if not (np.isfinite(d) and work > 0 and inside > 0 and var_w + var_i > 0):
        got = work + inside
        return v * (total / got) if got != 0 and np.isfinite(got) else v
    share = var_w / (var_w + var_i)
    w_to, i_to = work + d * share, inside + d * (1 - share)
    if not (w_to > 0 and i_to > 0):
        return v * (total / (work + inside))
    return np.where(in_call, v * (i_to / inside), v * (w_to / work))
