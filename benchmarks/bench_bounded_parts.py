"""Issue 38: where a bounded file's bytes go (``--volumes bounded:1% --times bounded:1us``), and
what a partner rank's end would save, measured with the writer's own context coder.

For each file: the volume codes and the duration steps, each coded whole as the writer codes
them (``context_rans.encode`` in the writer's contexts), and each kind's share: what coding
them without that kind's values saves.  Then a predictor the format does not have, simulated:
a ``sendrecv``'s end coded as its step from the end of the matched exchange on a lower rank
(the k-th receive of rank b from s pairs with the k-th send of s to b, and the lower of its
two partners is taken), which a reader decoding ranks in order could use; the steps of the
other actions as they are.  Its saving is an upper estimate: the decoded chain's error is
not carried through the matched ends.

Run (the code measured is the one importable as ``minitrace``):

    python benchmarks/bench_bounded_parts.py A.h5 B.h5 ...
"""
from __future__ import annotations

import sys
from collections import Counter

import numpy as np

import minitrace
from minitrace import kinds as K
from minitrace.compress import context_rans as CR
from minitrace.compress import store as S
from minitrace.compress import volumes as V


def kind_costs(values, fine, coarse, kinds) -> tuple[int, dict]:
    """(bytes of ``values`` coded whole, {kind: bytes saved by coding them without it}, for
    the kinds of 100 values or more)."""
    whole = len(CR.encode(values, fine, coarse))
    out = {}
    for k, n in zip(*np.unique(kinds, return_counts=True)):
        if n >= 100:
            rest = kinds != k
            out[K.NAME[int(k)]] = whole - (len(CR.encode(values[rest], fine[rest],
                                                         coarse[rest])) if rest.any() else 0)
    return whole, out


def matched_ends(t, offsets: np.ndarray) -> np.ndarray:
    """Each action's partner action (a global index on a lower rank) or -1: sendrecvs matched
    by the order of their receives and sends between two ranks."""
    partner = np.full(int(offsets[-1]), -1)
    first: dict = {}
    for r in t.ranks:
        a = t.actions(r)
        count = Counter()
        for i in np.flatnonzero(a["kind"].to_numpy() == "sendrecv").tolist():
            g = int(offsets[r]) + i
            src, dst = int(t.vector(r, i)[0]), int(a["peer"].iat[i])
            recv = (src, r, count[("r", src)])
            send = (r, dst, count[("s", dst)])
            count[("r", src)] += 1
            count[("s", dst)] += 1
            seen = [first[k] for k in (recv, send) if k in first]
            first.setdefault(recv, g)
            first.setdefault(send, g)
            if seen:
                partner[g] = min(seen)
    return partner


def main(paths: list[str]) -> None:
    for path in paths:
        with minitrace.open(path) as t:
            data = t.data()
            c = S.compress(data, "bounded:1%", 0.01, times="bounded:1us")
            cache: dict = {}
            n = len(data.actions)
            kind = np.asarray(data.actions["kind"])
            vf, vc = S._context_keys(c, "volume", cache)
            vrow = c.has_volume[c.ids]
            vol_bytes, vol_kinds = kind_costs(c.side["volume"], vf, vc, kind[vrow])
            df, dc = S._context_keys(c, "t_duration", cache)
            dur = c.side["t_duration"]
            dur_bytes, dur_kinds = kind_costs(dur, df, dc, kind)
            offsets = np.asarray(data.rank_offsets)
            partner = matched_ends(t, offsets)
        m = partner >= 0
        te = np.asarray(data.actions["t_end"], np.float64)
        _, step = V.feedback_step(V.parse_quantum("bounded:1us"))
        steps = dur.copy()
        steps[m] = np.rint((te[m] - te[partner[m]]) * 1e9 / step).astype(np.int64)
        with_partner = len(CR.encode(steps, df, dc))
        print(f"{path}: {n} actions; volume codes {vol_bytes} B ({vol_bytes / n:.3f} B/action: "
              + ", ".join(f"{k} {b}" for k, b in vol_kinds.items()) + f"); duration steps "
              f"{dur_bytes} B ({dur_bytes / n:.3f}: "
              + ", ".join(f"{k} {b}" for k, b in dur_kinds.items()) + f"); sendrecv ends "
              f"from a lower rank's: {int(m.sum())} matched, steps {with_partner} B, "
              f"{(dur_bytes - with_partner) / n:+.3f} B/action saved")


if __name__ == "__main__":
    main(sys.argv[1:])
