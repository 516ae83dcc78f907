"""How often the leave-one-scale-out search finds the law behind noisy measurements (issue 24).

Every building block p^i * log2(p)^j of the search space (Extra-P's own tests take 42 of
these 59, tests/test_extrapolate_fit.py), beside a constant, is measured at 3, 4 or 5 scales with uniform multiplicative
noise of +-1, 5 or 10 %, ``--reps`` draws each.  For minitrace's selection (leave one scale
out, ``fit.fit``) and for selection by the residual sum of squares at the recorded scales
(what a search without cross-validation does), it reports the share of draws whose
hypothesis is the true one, and the share whose prediction at 64x the largest scale is
within 10 % / 25 % of the true law's value there (and, first, the same share for strong
scaling: a fixed total shared by p plus a serial part, as recorded volumes show it); then, for minitrace's fits, the share not
flagged (leave-one-out error under the 5 % threshold), how often those unflagged predictions
are within 25 %, how often the 95 % bootstrap interval at 64x (``Model.interval``) contains
the true value, its median half-width, and how often a fit that is neither flagged nor wider
than +-25 % there is within 25 % of the truth (what ``extrapolate`` would print unflagged).  No timing: tables of shares.

    python benchmarks/bench_extrapolate_fit.py [--reps 20] [--seed 0] [--tolerance 0.01]
"""
from __future__ import annotations

import argparse
from fractions import Fraction

import numpy as np

from minitrace.extrapolate import fit as F

#: every growing term of the search space, as Extra-P's own tests take them
LAWS = F.hypotheses("weak")[1:]
COEFFICIENTS = [(200, 3000), (3000, 1000)]       # a dominant term; a term beside a constant


def rss_selection(p: np.ndarray, y: np.ndarray) -> tuple[Fraction, int, float, float]:
    """The hypothesis with the lowest residual sum of squares fitted on every scale."""
    pairs = F.hypotheses("weak")
    x = np.stack([F._term(p, i, j) for i, j in pairs])
    c0, c1 = F._line_fits(x, y[None, :], np.ones((1, len(p))))
    c0, c1 = c0[0], c1[0]
    rss = ((c0 + c1 * x - y) ** 2).sum(axis=1)
    best = int(np.flatnonzero(rss <= rss.min() * (1 + 1e-9))[0])
    return pairs[best][0], pairs[best][1], float(c0[best, 0]), float(c1[best, 0])


def strong(rng: np.random.Generator, draws: int, tolerance: float) -> None:
    """Strong scaling as recorded volumes show it: a fixed total shared by p plus a serial
    part (0, 1e-5 or 5e-5 s), noise +-1, 3 or 5 %, predicted at 64 ranks."""
    print("\n| strong scaling, scales | within 25 % at 64 | draws |\n|---|---|---|")
    for scales in ((4, 8, 16), (2, 4, 8, 16)):
        p = np.array(scales, dtype=float)
        good = 0
        for _ in range(draws):
            noise, serial = rng.choice([0.01, 0.03, 0.05]), rng.choice([0, 1e-5, 5e-5])
            y = (4.4e-3 / p + serial) * (1 + rng.uniform(-noise, noise, len(p)))
            model = F.fit(p, y, "strong", tolerance=tolerance)
            good += abs(model(64) / (4.4e-3 / 64 + serial) - 1) <= 0.25
        print(f"| {','.join(map(str, scales))} | {100 * good / draws:.0f} % | {draws} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tolerance", type=float, default=F.DEFAULT_TOLERANCE,
                        help="LOO error under which a constant is preferred (fit.fit)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    strong(rng, 20 * args.reps, args.tolerance)
    print("| scales | noise | selection | true law | within 10 % at 64x | within 25 % at 64x | draws |")
    print("|---|---|---|---|---|---|---|")
    trusted = []
    for scales in ((2, 4, 8), (2, 4, 8, 16), (2, 4, 8, 16, 32)):
        p = np.array(scales, dtype=float)
        target = 64 * p[-1]
        for noise in (0.01, 0.05, 0.10):
            tally = {"leave-one-out": np.zeros(3), "residuals": np.zeros(3)}
            trust = np.zeros(5)       # unflagged, of those good, covered, narrow, of those good
            widths = []
            draws = 0
            for i, j in LAWS:
                for c0, c1 in COEFFICIENTS:
                    truth = c0 + c1 * target ** float(i) * np.log2(target) ** j
                    exact = c0 + c1 * p ** float(i) * np.log2(p) ** j
                    for _ in range(args.reps):
                        y = exact * (1 + rng.uniform(-noise, noise, len(p)))
                        model = F.fit(p, y, tolerance=args.tolerance)
                        si, sj, s0, s1 = rss_selection(p, y)
                        for name, (hi, hj, value) in {
                                "leave-one-out": (model.i, model.j, model(target)),
                                "residuals": (si, sj, s0 + s1 * target ** float(si)
                                              * np.log2(target) ** sj)}.items():
                            error = abs(value / truth - 1)
                            tally[name] += [(hi, hj) == (i, j), error <= 0.10, error <= 0.25]
                        low, high = model.interval(target)
                        good = abs(model(target) / truth - 1) <= 0.25
                        spread = (high - low) / 2 / abs(model(target))
                        narrow = not model.flagged and spread <= 0.25
                        widths.append(spread)
                        trust += [not model.flagged, not model.flagged and good,
                                  low <= truth <= high, narrow, narrow and good]
                        draws += 1
            for name, counts in tally.items():
                shares = " | ".join(f"{100 * v / draws:.0f} %" for v in counts)
                print(f"| {','.join(map(str, scales))} | +-{noise:.0%} | {name} | {shares} | {draws} |")
            trusted.append((scales, noise, trust, draws, np.median(widths)))
    print("\n| scales | noise | not flagged | of those, within 25 % at 64x | 95 % interval covers "
          "the truth | median half-width | unflagged and narrower than +-25 % | of those, within 25 % |")
    print("|---|---|---|---|---|---|---|---|")
    for scales, noise, (unflagged, good, covered, narrow, good_narrow), draws, width in trusted:
        def share(part, whole):
            return f"{100 * part / whole:.0f} %" if whole else "-"
        print(f"| {','.join(map(str, scales))} | +-{noise:.0%} | {share(unflagged, draws)} "
              f"| {share(good, unflagged)} | {share(covered, draws)} | {100 * width:.0f} % "
              f"| {share(narrow, draws)} | {share(good_narrow, narrow)} |")


if __name__ == "__main__":
    main()
