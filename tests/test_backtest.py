"""Back-test on the run itself (subsets of its ranks projected to all of them) and the
recommendation drawn from it."""
import numpy as np
import pandas as pd

from minitrace.analysis import backtest as B
from minitrace.analysis import stragglers as S
from minitrace.analysis.projection import Variability
from tests.support.gev_synth import layout, variability


def _run(nodes, per_node, iterations=60):
    return Variability(*variability(nodes, per_node, iterations, seed=1))


def test_subsets_keep_the_node_layout():
    got = {d: (v.nranks, len(np.unique(v.node))) for d, v in B.subsets(_run(2, 8))}
    assert got == {8: (2, 2), 4: (4, 2), 2: (8, 2)}          # fewer ranks on every node
    got = {d: (v.nranks, len(np.unique(v.node))) for d, v in B.subsets(_run(6, 3))}
    assert got == {2: (9, 3)}                                # 3 per node: fewer nodes
    assert [(d, v.nranks) for d, v in B.subsets(_run(1, 2))] == [(2, 1)]
    assert B.subsets(_run(1, 1)) == []


def test_backtest_measures_each_method_against_the_run():
    v = _run(2, 4, 300)
    bt = B.backtest(v, ("pwm", "nonparam"), replicas=50)
    assert len(bt) == 2 * 4                      # subsets of 2 and 4 ranks x 4 rows each
    assert set(bt.ranks) == {2, 4} and (bt.factor == 8 / bt.ranks).all()
    assert np.allclose(bt.measured, v.maxima.mean())
    assert np.allclose(bt.error, bt.estimate - bt.measured)
    assert bt.consistent.all()                   # Gumbel ranks: every model is exact here
    assert (bt.error_pct.abs() < 1).all()


def _proj(flags):
    return pd.DataFrame({"method": ["pwm", "pwm", "nonparam"],
                         "model": ["inter-node", "intra-node", "non-parametric"],
                         "scale": [64] * 3, "estimate": [1.1, 1.2, 1.3], "lo": [1.0, 1.1, 1.2],
                         "hi": [1.2, 1.3, 1.4], "runtime": [110.0, 120.0, 130.0],
                         "runtime_lo": [100.0, 110.0, 120.0], "runtime_hi": [120.0, 130.0, 140.0],
                         "flags": flags})


def _bt(errors, consistent):
    rows = []
    for (method, model), e, c in zip([("pwm", "inter-node"), ("pwm", "intra-node"),
                                      ("nonparam", "non-parametric")], errors, consistent):
        rows.append(dict(method=method, model=model, error_pct=e, consistent=c))
    return pd.DataFrame(rows)


def test_recommendation_prefers_unflagged_then_consistent_then_small_errors():
    # 300 iterations x 16 ranks: at 64 ranks unseen excursions touch under 10% of iterations
    row, why = B.recommend(_bt([1.0, 0.2, 0.1], [True, True, False]), _proj(["", "", ""]), 64,
                           300, 16)
    assert (row.name, row.runtime) == (("pwm", "intra-node"), 120.0)   # nonparam missed
    assert "no flag at this scale" in why and "1 of 1 consistent" in why
    row, _ = B.recommend(_bt([1.0, 0.2, 0.1], [True, True, True]), _proj(["", "x", ""]), 64,
                         300, 16)
    assert row.name == ("nonparam", "non-parametric")
    row, why = B.recommend(pd.DataFrame(), _proj(["x", "", "z"]), 64, 300, 16)
    assert row.name == ("pwm", "intra-node") and "no back-test" in why


def test_no_recommendation_when_every_row_is_flagged():
    """Flagged rows failed the coverage study: never recommended, even when nothing else is
    left (the reason is returned)."""
    row, why = B.recommend(_bt([1.0, 0.2, 0.1], [True] * 3), _proj(["x", "y", "z"]), 64, 300,
                           16)
    assert row is None and why.startswith("every projection is flagged at 64 ranks")


def test_no_recommendation_where_unseen_excursions_could_dominate():
    """4,800 rank-iterations cannot show a rate below ~5e-4: at 1,024 ranks such excursions
    could touch 41% of the iterations; at 64 ranks under 4%."""
    proj = _proj(["", "", ""])
    far = proj.assign(scale=1024)
    row, why = B.recommend(_bt([1.0, 0.2, 0.1], [True] * 3), far, 1024, 300, 16)
    assert row is None
    assert why.startswith("excursions too rare to show up in this run's 4,800 rank-iterations")
    assert "41% of the iterations at 1,024 ranks" in why
    need = int(why.split("about ")[1].split(" rank-iterations")[0].replace(",", ""))
    assert S.unseen_share(need, 1024) <= S.UNSEEN_SHARE < S.unseen_share(need - 50, 1024)
    assert B.recommend(_bt([1.0, 0.2, 0.1], [True] * 3), far, 1024, 1600, 16)[0] is not None


def test_layout_helper():
    node, local = layout(2, 3)
    assert node.tolist() == [0, 0, 0, 1, 1, 1] and local.tolist() == [0, 1, 2, 0, 1, 2]
