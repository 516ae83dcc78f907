"""How often the run factor's 95% predictive interval (minitrace.replay.run_to_run) holds the
next run, from run spans alone (issue 35, item 2): no replay, so it isolates the run-to-run
rule from the replicas' own noise and the replay's miss.

* ``synthetic``: k runs drawn from a law, the (k+1)-th scored; laws a normal one, a skewed one,
  and mixtures with one run in ten 20-30% off (the odd disturbed run of a shared machine).
* ``recorded DIR ...``: the recordings ``NAME-I.h5`` of bench_replica_runs.py work directories;
  each run held out against the interval of the others (as the bench scores it).

Each case is scored with this code's rule and with each side's own scale (the rule of
sessions 11-12: below the median the runs below it, above the median those above).

    python benchmarks/bench_run_factor.py synthetic [--trials 4000]
    python benchmarks/bench_run_factor.py recorded /tmp/i12/acc/rr /tmp/i35/rr ...
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
from scipy import stats


def _per_side(spans: np.ndarray) -> tuple[float, float]:
    """The scales below and above the median with each side its own (sessions 11-12)."""
    k = len(spans)
    d = spans / np.median(spans) - 1
    c = np.sqrt(1 + 1 / k)
    both = c * np.sqrt(np.sum(d ** 2) / (k - 1))

    def side(x):
        return c * np.sqrt(np.sum(x ** 2) / (len(x) - 1)) if len(x) > 1 else both
    return side(d[d < 0]), side(d[d > 0])


def interval(spans: np.ndarray, rule: str) -> tuple[float, float]:
    """The 95% predictive interval of the next run's span under ``rule``."""
    from minitrace.replay.run_to_run import RunToRun
    k = len(spans)
    q = stats.t.ppf(0.975, k - 1)
    m = np.median(spans)
    if rule == "per-side":
        below, above = _per_side(spans)
    else:
        below = above = RunToRun.of_spans(list(range(k)), spans).scale
    return m * (1 - q * below), m * (1 + q * above)


RULES = ("this code", "per-side")


def synthetic(trials: int) -> None:
    rng = np.random.default_rng(0)
    laws = {"normal, sd 5%": lambda n: 1 + 0.05 * rng.standard_normal(n),
            "gamma (skewed), sd 5%": lambda n: 1 + 0.05 * (rng.gamma(2, 1, n) - 2) / np.sqrt(2),
            "1 in 10 runs +30%": lambda n: 1 + 0.03 * rng.standard_normal(n)
            + (rng.random(n) < 0.1) * 0.3,
            "1 in 10 runs +-20%": lambda n: 1 + 0.03 * rng.standard_normal(n)
            + (rng.random(n) < 0.1) * 0.2 * rng.choice([-1, 1], n)}
    print("| law | k | " + " | ".join(RULES) + " |\n|---|---|" + "---|" * len(RULES))
    for name, law in laws.items():
        for k in (3, 6, 11):
            held = {r: 0 for r in RULES}
            for _ in range(trials):
                s = law(k + 1)
                for r in RULES:
                    lo, hi = interval(s[:k], r)
                    held[r] += lo <= s[k] <= hi
            print(f"| {name} | {k} | " + " | ".join(f"{held[r] / trials:.1%}" for r in RULES)
                  + " |")


def recorded(dirs: list[str]) -> None:
    from minitrace.replay.run_to_run import span
    from minitrace.trace import open as open_trace
    print("| runs | n | sd | range / median | " + " | ".join(RULES) + " |\n|---|---|---|---|"
          + "---|" * len(RULES))
    for d in dirs:
        sets: dict[str, list] = {}
        for f in sorted(Path(d).glob("*-*.h5"), key=lambda p: (len(p.name), p.name)):
            m = re.fullmatch(r"(.+)-(\d+)\.h5", f.name)
            if m:
                with open_trace(str(f)) as t:
                    sets.setdefault(m.group(1), []).append(span(t.data(), str(f)))
        for name, s in sets.items():
            s = np.array(s)
            n = len(s)
            if n < 4:
                continue
            held = {}
            for r in RULES:
                ok = [(lambda lo, hi: lo <= s[j] <= hi)(*interval(np.delete(s, j), r))
                      for j in range(n)]
                held[r] = np.mean(ok)
            med = np.median(s)
            print(f"| {d}: {name} | {n} | {s.std(ddof=1) / s.mean():.1%} | "
                  f"{s.min() / med:.3f}-{s.max() / med:.3f} | "
                  + " | ".join(f"{held[r]:.0%}" for r in RULES) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("synthetic")
    s.add_argument("--trials", type=int, default=4000)
    r = sub.add_parser("recorded")
    r.add_argument("dirs", nargs="+")
    args = ap.parse_args()
    if args.what == "synthetic":
        synthetic(args.trials)
    else:
        recorded(args.dirs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
