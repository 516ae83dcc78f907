"""Iteration sampling and noise replicas (issue 25): sampled replays against full ones on
generated iterative traces, replicas without noise against the plain replay, seeded
reproducibility, noise models' draws and the one-line errors on noise files that do not fit."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace import storage
from minitrace.errors import MinitraceError
from minitrace.replay import replay
from minitrace.replay.noise import call_sites, noise_model
from minitrace.replay.replicas import replicas
from minitrace.replay.sampling import (WINDOW, check_separable, crossing_requests, phases_of,
                                       reduce_trace, sampled_replay, steady_start)
from tests.support.synthetic_loops import amr, build, cg, stencil, Step
from tests.support.extrapolated import extrapolated_stencil

pytestmark = pytest.mark.timeout(300)
RATE = "1Gf"


# ---- noise models (no replay) ------------------------------------------------------------------

def test_trace_noise_draws_each_site_from_its_own_volumes():
    data, _ = stencil(2, 60, jitter=0.1, seed=3)
    model = noise_model(data, "trace")
    rows, site, occ = call_sites(data)
    # per rank: two compute sites in the loop (keyed by the MPI calls after and before them:
    # the loop's first compute, after the prologue's call, is a site of its own), plus the
    # prologue's and the tail's
    assert len(np.unique(site)) == 10
    assert sorted(np.bincount(site)) == [1] * 6 + [59] * 2 + [60] * 2
    # sites of fewer than 20 volumes (one-off phases) are replayed as recorded
    few = np.bincount(site)[site] < 20
    assert model.fixed[few].all()
    assert any("fewer than 20 volumes" in a for a in model.assumptions)
    vol = model.volumes(data, np.random.default_rng(1))
    assert np.array_equal(vol[rows[few]], data.actions["volume"][rows[few]])
    for s in np.unique(site):
        mine = rows[site == s]
        assert np.isin(vol[mine], data.actions["volume"][mine]).all()
    assert not np.array_equal(vol[rows], data.actions["volume"][rows])
    assert np.array_equal(np.delete(vol, rows), np.delete(data.actions["volume"], rows))
    assert any("not supported" in a for a in model.assumptions)   # independent jitter
    assert any("no site has a fitted tail" in a for a in model.assumptions)


def test_computes_of_other_sizes_between_the_same_calls_are_sites_of_their_own():
    """A CG's iteration: a 1 ms product and a 10 us update, each ended by an 8-byte allreduce
    after another (one call site by the calls); the big volumes drawn among the small ones put
    HPCG's and NPB CG's replicas 17-19% above their runs.  Two groups 100x apart are two
    sites; a late spike (one volume 8x) and jitter stay in their site."""
    rng = np.random.default_rng(2)
    iterations = 200
    big = 1e-3 * (1 + 0.05 * rng.standard_normal((2, iterations)))
    small = 1e-5 * (1 + 0.05 * rng.standard_normal((2, iterations)))
    small[0, 150] *= 8                                      # a spike: noise of its site
    data = build(2, iterations, lambda r: [Step("compute", volume=big[r]),
                                           Step("allreduce", nbytes=8),
                                           Step("compute", volume=small[r]),
                                           Step("allreduce", nbytes=8)])[0]
    rows, site, occ = call_sites(data)
    vol = data.actions["volume"][rows]
    loop = np.bincount(site)[site] >= iterations - 1
    for r in range(2):
        mine = loop & (data.rank_of(rows) == r)
        sites = np.unique(site[mine])
        assert len(sites) == 2                              # the product's and the update's
        for s in sites:
            v = vol[site == s]
            assert v.max() < 10 * v.min()                   # (the spike: 8x, kept)
    # each site's occurrences count on: 0..n-1
    for s in np.unique(site):
        assert sorted(occ[site == s]) == list(range(int((site == s).sum())))
    # one group of volumes: one site per rank and calls, as before
    same = build(2, iterations, lambda r: [Step("compute", volume=big[r]),
                                           Step("allreduce", nbytes=8)])[0]
    _, site1, _ = call_sites(same)
    assert (np.bincount(site1) >= iterations - 1).sum() == 2       # one loop site a rank


def test_computes_between_byteless_calls_are_told_apart_by_the_bytes_around_them():
    """HPCG's smoother at each multigrid level runs between a wait and an MPI_Comm_size (no
    bytes either way): by the adjacent calls alone one site for every level.  The nearest
    calls that move bytes (the level's halo: 2048 or 128 bytes) tell them apart; volumes 3x
    apart, too close for the volume groups."""
    from minitrace.model import TraceBuilder
    rng = np.random.default_rng(4)
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        for i in range(100):
            for nbytes, vol in ((2048, 3e-4), (128, 1e-4)):
                b.add(r, "send", peer=1 - r, bytes_sent=nbytes)
                b.add(r, "wait")
                b.add(r, "compute", volume=vol * (1 + 0.05 * rng.standard_normal()))
                b.add(r, "comm_size")
    data = b.build()
    rows, site, occ = call_sites(data)
    vol = data.actions["volume"][rows]
    loop = np.flatnonzero(np.bincount(site) >= 99)      # (the rank's last: after it no
    assert len(loop) == 4                               # call moves bytes, a site alone)
    for s in loop:                                      # 2 ranks x 2 levels
        v = vol[site == s]
        assert v.max() < 2 * v.min()


def _pareto_trace(seed: int, iterations: int = 300):
    """2 ranks, each iteration a Pareto(2.5) compute (mean 1 ms) then an allreduce."""
    rng = np.random.default_rng(seed)

    def body(r):
        return [Step("compute", volume=6e-4 / rng.random(iterations) ** (1 / 2.5)),
                Step("allreduce", nbytes=8)]
    return build(2, iterations, body)[0]


def test_trace_noise_tail_goes_past_the_recorded_maximum_with_uncertain_laws():
    data = _pareto_trace(4)
    model = noise_model(data, "trace")
    note = next(a for a in model.assumptions if a.startswith("tails:"))
    assert "generalized Pareto" in note and "on 2 site(s)" in note
    rows, site, _ = call_sites(data)
    big = np.flatnonzero(np.bincount(site) >= 100)
    assert len(big) == 2
    assert np.isfinite(model.sites.xi[big]).all() and (model.sites.xi[big] > 0).all()
    rec = data.actions["volume"]
    above, means = 0, []
    for i in range(400):
        vol = model.volumes(data, np.random.default_rng(i))
        mine = rows[site == big[0]]
        above += int((vol[mine] > rec[mine].max()).sum())
        means.append(vol[mine].mean())
        # below the tail's threshold every draw is a recorded volume
        thr = model.sites.u[big[0]]
        low = vol[mine] <= thr
        assert np.isin(vol[mine][low], rec[mine]).all()
    assert above > 0                            # the fitted tail goes past the maximum
    # each replica's law differs (estimation uncertainty): its mean varies more than a plain
    # bootstrap of the recorded volumes would make it
    boot = [np.random.default_rng(i).choice(rec[mine], len(mine)).mean() for i in range(400)]
    assert np.std(means) > 1.2 * np.std(boot)


def test_warm_up_volumes_are_replayed_as_recorded_and_left_out_of_the_laws():
    """A recorded solver's 2nd and 3rd sweeps (first touch of its arrays) took 5-9x its median
    sweep: fitted as a tail, they made xi > 1 and replicas far above the runs.  Volumes among
    a site's first WARM_MAX above the 99% quantile of its later ones are the warm-up: fixed in
    every replica; a spike later in the run stays a draw of the law."""
    from minitrace.replay.noise import WARM_MAX
    rng = np.random.default_rng(5)
    iterations = 300
    vols = 1e-3 * (1 + 0.05 * rng.standard_normal((2, iterations)))
    vols[:, 1:3] *= 8                          # the warm-up
    vols[0, 200] *= 8                          # a late spike: noise, not warm-up
    data = build(2, iterations, lambda r: [Step("compute", volume=vols[r]),
                                           Step("allreduce", nbytes=8)])[0]
    model = noise_model(data, "trace")
    rows, site, occ = call_sites(data)
    rec = data.actions["volume"][rows]
    # the loop's computes (the first one, after the prologue's call, is a site of its own)
    loop = np.bincount(site)[site] >= iterations - 1
    spiked = rec > 5e-3
    assert np.array_equal(model.fixed & loop, loop & spiked & (occ < WARM_MAX))
    assert (loop & spiked & (occ < WARM_MAX)).sum() == 4
    assert not model.fixed[loop & spiked & (occ >= WARM_MAX)].any()    # the late spike
    assert any(a.startswith("warm-up: 4 volume(s)") for a in model.assumptions)
    for seed in range(5):
        vol = model.volumes(data, np.random.default_rng(seed))[rows]
        assert np.array_equal(vol[model.fixed], rec[model.fixed])
        assert (vol[loop & ~model.fixed] < 7e-3).mean() > 0.99   # drawn from the steady law
    # rank 1's sweeps (no late spike): the tail, if any, of a normal law's, not the warm-up's
    steady = np.unique(site[loop & (data.rank_of(rows) == 1)])
    assert np.nan_to_num(model.sites.xi[steady], nan=0.0) < 0.5


def test_replica_laws_cover_other_recordings_of_a_heavy_tailed_law():
    """The posterior predictive interval of a sum of per-iteration maxima, from one recording
    of 2 x 300 Pareto(2.5) draws, covers the sums of other recordings 90-99% of the time (a
    plain bootstrap of the recording covers far fewer)."""
    from minitrace.replay.volume_law import SiteVolumes
    rng = np.random.default_rng(7)
    recs = 6e-4 / rng.random((40, 2, 300)) ** (1 / 2.5)
    truth = recs.max(axis=1).sum(axis=1)
    site = np.repeat([0, 1], 300)
    covered, boot = [], []
    for i, r in enumerate(recs):
        sites = SiteVolumes.of(np.sort(r, axis=1).ravel(), np.array([0, 300]),
                               np.array([300, 300]))
        t = [sites.law(rng).quantile(site, rng.random(600)).reshape(2, 300).max(0).sum()
             for _ in range(80)]
        b = [np.stack([rng.choice(x, 300) for x in r]).max(0).sum() for _ in range(80)]
        others = np.delete(truth, i)
        lo, hi = np.percentile(t, [2.5, 97.5])
        covered.append(np.mean((others >= lo) & (others <= hi)))
        lo, hi = np.percentile(b, [2.5, 97.5])
        boot.append(np.mean((others >= lo) & (others <= hi)))
    assert 0.90 <= np.mean(covered) <= 0.99
    assert np.mean(boot) < np.mean(covered) - 0.05


def test_trace_noise_keeps_a_correlation_the_data_supports():
    rng = np.random.default_rng(0)
    shared = np.exp(0.3 * rng.standard_normal(200))      # the same slowdown on every rank

    def body(r):
        return [Step("compute", volume=1e-4 * shared * np.exp(0.05 * rng.standard_normal(200))),
                Step("allreduce", nbytes=8)]
    data, _ = build(4, 200, body)
    model = noise_model(data, "trace")
    a, b, c = model.weights                  # per compute row: its call site's
    loop = np.bincount(model.site)[model.site] >= 100
    assert (a[loop] ** 2 > 0.8).all()        # ranks on different nodes move together
    assert any("(kept)" in x for x in model.assumptions)
    # and the replicas' draws keep it: correlation between ranks 0 and 1 of a replica
    vol = model.volumes(data, np.random.default_rng(2))
    rows, site, occ = call_sites(data)
    rank = data.rank_of(rows)
    loop = occ < 200
    r0 = vol[rows[(rank == 0) & loop]][1:-1]
    r1 = vol[rows[(rank == 1) & loop]][1:-1]
    assert np.corrcoef(np.log(r0), np.log(r1))[0, 1] > 0.7


def test_each_call_site_keeps_its_own_correlation_where_its_pairs_support_one():
    """HPCG: its big sites' volumes moved together on both ranks (0.88-0.97), its many small
    ones did not, and the correlation over all sites (0.59) set for every site put replicas 5%
    above the plain replay.  A site with SITE_PAIRS pairs takes its own."""
    from minitrace.replay.noise import SITE_PAIRS
    rng = np.random.default_rng(5)
    n = 200
    shared = np.exp(0.3 * rng.standard_normal(n))           # both ranks slow together

    def body(r):
        return [Step("compute", volume=1e-3 * shared * np.exp(0.02 * rng.standard_normal(n))),
                Step("allreduce", nbytes=8),
                Step("compute", volume=1e-5 * np.exp(0.3 * rng.standard_normal(n))),
                Step("send", peer=1 - r, nbytes=64)]
    data, _ = build(2, n, body)
    model = noise_model(data, "trace")
    a, b, c = model.weights
    rows, site, occ = call_sites(data)
    vol = data.actions["volume"][rows]
    big = (vol > 1e-4) & (occ > 5) & (np.bincount(site)[site] > SITE_PAIRS)
    small = (vol < 1e-4) & (np.bincount(site)[site] > SITE_PAIRS)
    assert (a[big] ** 2 + b[big] ** 2 > 0.8).all()           # its own: kept
    assert (c[small] == 1).all()                              # its own: not supported, 0
    assert any("per call site" in x for x in model.assumptions)
    # the draws keep the big site's correlation between the ranks, not the small one's
    draws = np.array([model.volumes(data, np.random.default_rng(i))[rows] for i in range(3)])
    r0, r1 = (big & (data.rank_of(rows) == r) for r in range(2))
    assert np.corrcoef(np.log(draws[:, r0].ravel()), np.log(draws[:, r1].ravel()))[0, 1] > 0.7


def test_sites_are_matched_across_ranks_by_their_calls_not_their_order():
    """A rank with one call site more than the other (HPCG's rank 0: a one-off compute) had
    every later site compared with another one's volumes: correlations near 0 for 0.9."""
    rng = np.random.default_rng(6)
    n = 150
    shared = np.exp(0.3 * rng.standard_normal(n))

    def body(r):
        return [Step("compute", volume=1e-3 * shared * np.exp(0.02 * rng.standard_normal(n))),
                Step("allreduce", nbytes=8)]
    data, _ = build(2, n, body,
                    prologue=lambda r: [Step("init")] + ([Step("compute", volume=1e-2),
                                                          Step("bcast", nbytes=4)] if r == 0
                                                         else []))
    rows, site, occ, shape = call_sites(data, shapes=True)
    loop = np.bincount(site)[site] >= n - 1
    assert len(np.unique(shape[site[loop]])) == 1             # one call site on both ranks
    model = noise_model(data, "trace")
    a, b, c = model.weights
    assert (c[loop] ** 2 < 0.2).all()                         # the ranks' correlation kept


def test_sites_of_other_calls_on_each_rank_are_matched_by_their_times():
    """jacobi2d: rank 0's sweep follows an irecv of 0 bytes (its neighbour is PROC_NULL),
    rank 1's one of 4096, and rank 0 has a one-off site more: neither the calls nor the order
    match them; the times do (the same sweep starts at the same time on both)."""
    from minitrace.model import TraceBuilder
    rng = np.random.default_rng(8)
    n = 150
    shared = np.exp(0.3 * rng.standard_normal(n))
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        b.add(r, "init", t_start=0.0, t_end=0.0)
        if r == 0:
            b.add(r, "compute", volume=1e-3, t_start=0.0, t_end=1e-3)
            b.add(r, "bcast", bytes_sent=4, bytes_recv=4, t_start=1e-3, t_end=1e-3)
        for k in range(n):
            t = 0.01 + 0.01 * k
            first, second = (0, 4096) if r == 0 else (4096, 0)
            b.add(r, "compute", volume=1e-6, t_start=t, t_end=t + 1e-6)
            b.add(r, "irecv", peer=1 - r, bytes_recv=first, t_start=t, t_end=t)
            b.add(r, "compute", volume=1e-6, t_start=t + 2e-6, t_end=t + 3e-6)
            b.add(r, "irecv", peer=1 - r, bytes_recv=second, t_start=t + 3e-6, t_end=t + 3e-6)
            v = 1e-3 * shared[k] * np.exp(0.02 * rng.standard_normal())
            b.add(r, "compute", volume=v, t_start=t + 4e-6, t_end=t + 4e-6 + v)
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8, t_start=t + 5e-3, t_end=t + 5e-3)
    data = b.build()
    rows, site, occ, shape = call_sites(data, shapes=True)
    vol = data.actions["volume"][rows]
    sweep = (vol > 1e-4) & (np.bincount(site)[site] >= n - 1)
    assert len(np.unique(site[sweep])) == 2 and len(np.unique(shape[site[sweep]])) == 1
    a, b_, c = noise_model(data, "trace").weights
    assert (c[sweep] ** 2 < 0.2).all()                        # the sweeps' correlation kept
    # rank 1's clock an hour ahead (another node's): each rank's time from its first compute
    later = data.actions.copy()
    on1 = np.arange(len(later)) >= data.rank_offsets[1]
    later["t_start"][on1] += 3600.0
    data.actions = later
    _, site1, _, shape1 = call_sites(data, shapes=True)
    assert np.array_equal(site1, site) and len(np.unique(shape1[site1[sweep]])) == 1
    # untimed (a model file's), the same sites, matched by their calls, then their order
    untimed = data.actions.copy()
    untimed["t_start"] = np.nan
    data.actions = untimed
    _, site2, _, shape2 = call_sites(data, shapes=True)
    assert np.array_equal(site2, site) and len(np.unique(shape2[site2[sweep]])) == 1


def test_sites_are_matched_with_sites_of_alike_volumes_before_the_same_calls():
    """jacobi2d: rank 1's 120 us sweep ended at the same calls as a 1 us compute of rank 0
    (the boundary ranks' PROC_NULL neighbours): matched by the calls first, the sweep's
    correlation was measured against the wrong site."""
    from minitrace.replay.noise import _shapes
    n = 50
    site = np.repeat(np.arange(4), n)                 # rank 0: sites 0, 1; rank 1: 2, 3
    occ = np.tile(np.arange(n), 4)
    rank = site // 2
    kid = np.repeat([0, 1, 1, 0], n)                  # site 2 has site 1's calls
    vol = np.repeat([1.2e-4, 1e-6, 1.2e-4, 1e-6], n)  # and site 0's volume
    t = occ * 1e-3 + np.repeat([1e-4, 5e-4, 1e-4, 5e-4], n)
    shape = _shapes(site, occ, rank, kid, t, vol)
    assert shape[0] == shape[2] and shape[1] == shape[3] and shape[0] != shape[1]
    t[:] = np.nan                                     # untimed: the volumes still decide
    shape = _shapes(site, occ, rank, kid, t, vol)
    assert shape[0] == shape[2] and shape[1] == shape[3]


def test_sites_of_the_same_calls_are_matched_on_ranks_out_of_step():
    """Two computes of one iteration half an iteration apart, between the same calls (told
    apart by their volumes), rank 1 a third of an iteration behind rank 0 (a pipeline): by
    time first, each was matched with the other one."""
    from minitrace.model import TraceBuilder
    rng = np.random.default_rng(9)
    n = 100
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    for r in range(2):
        for k in range(n):
            t = 0.01 * k + (0.0033 if r else 0.0)
            for j, v in enumerate((1e-4, 1e-3)):
                vol = v * (1 + 0.05 * rng.standard_normal())
                b.add(r, "compute", volume=vol, t_start=t + 0.005 * j, t_end=t + 0.005 * j + vol)
                b.add(r, "allreduce", bytes_sent=8, bytes_recv=8, t_start=t + 0.005 * j + vol,
                      t_end=t + 0.005 * j + vol)
    data = b.build()
    rows, site, occ, shape = call_sites(data, shapes=True)
    vol = data.actions["volume"][rows]
    loop = np.bincount(site)[site] >= n - 1
    for small in (True, False):
        mine = loop & ((vol < 3e-4) == small)
        assert len(np.unique(shape[site[mine]])) == 1


def test_computes_alternating_between_the_same_calls_are_sites_of_their_phases():
    """HPCG: 45 us and 110 us computes alternate between the same calls (2.4x apart: one
    volume group); drawn from one law, unaligned between ranks, replicas sat 7% above the
    plain replay.  A period whose phases explain most of the variance splits the site."""
    rng = np.random.default_rng(7)
    n = 200
    alternating = np.where(np.arange(n) % 2, 1.1e-4, 4.5e-5)

    def body(r):
        return [Step("compute", volume=alternating * (1 + 0.05 * rng.standard_normal(n))),
                Step("allreduce", nbytes=8)]
    data, _ = build(2, n, body)
    rows, site, occ = call_sites(data)
    vol = data.actions["volume"][rows]
    loop = np.bincount(site)[site] >= 90
    assert len(np.unique(site[loop])) == 4                    # 2 ranks x 2 phases
    for s in np.unique(site[loop]):
        v = vol[site == s]
        assert v.max() < 1.5 * v.min()
    # jitter alone (no period) stays one site a rank
    flat = build(2, n, lambda r: [
        Step("compute", volume=1e-4 * (1 + 0.3 * rng.standard_normal(n) ** 2)),
        Step("allreduce", nbytes=8)])[0]
    _, site1, _ = call_sites(flat)
    assert (np.bincount(site1) >= n - 1).sum() == 2


def test_none_noise_leaves_volumes_and_no_compute_is_an_error():
    data, _ = cg(2, 20)
    assert np.array_equal(noise_model(data, "none").volumes(data, np.random.default_rng()),
                          data.actions["volume"])
    empty, _ = build(2, 5, lambda r: [Step("barrier")], prologue=lambda r: [Step("init")])
    with pytest.raises(MinitraceError, match="no compute actions"):
        noise_model(empty, "trace")


def _variability(path, iterations, nranks):
    rng = np.random.default_rng(1)
    storage.write_bench(str(path), "variability", {
        "times": 1e-3 * (1 + rng.pareto(3.0, (iterations, nranks))),
        "maxima": np.zeros(iterations), "node": np.zeros(nranks, np.int32),
        "local_rank": np.arange(nranks, dtype=np.int32)},
        {"workload": "ftq", "iterations": iterations, "nranks": nranks})


def test_noise_file_of_another_shape_is_a_one_line_error(tmp_path):
    data, _ = stencil(2, 30)
    four = tmp_path / "four.h5"
    _variability(four, 50, 4)
    with pytest.raises(MinitraceError, match="has 4 ranks and the trace 2") as e:
        noise_model(data, str(four))
    assert "\n" not in str(e.value) and str(four) in str(e.value)
    short = tmp_path / "short.h5"
    _variability(short, 5, 2)
    with pytest.raises(MinitraceError, match="5 iterations, fewer than"):
        noise_model(data, str(short))
    with pytest.raises(MinitraceError, match="no such noise file"):
        noise_model(data, str(tmp_path / "missing.h5"))
    other = tmp_path / "other.h5"
    storage.write_bench(str(other), "pt2pt", {"size": np.arange(3)})
    with pytest.raises(MinitraceError, match="variability"):
        noise_model(data, str(other))


def test_bench_noise_scales_each_iteration_by_one_benchmark_row(tmp_path):
    data, _ = stencil(2, 40)
    f = tmp_path / "var.h5"
    _variability(f, 50, 2)
    model = noise_model(data, str(f))
    vol = model.volumes(data, np.random.default_rng(3))
    rows, site, occ = call_sites(data)
    ratio = vol[rows] / data.actions["volume"][rows]
    rank = data.rank_of(rows)
    allowed = model.factors
    for r in (0, 1):
        assert np.isin(np.round(ratio[rank == r], 12), np.round(allowed[:, r], 12)).all()
    # the two compute sites of one iteration share its factor
    r0 = rows[(rank == 0)]
    it = occ[rank == 0]
    for k in (3, 17):
        assert len(set(np.round(ratio[rank == 0][it == k], 12))) == 1


# ---- sampling pieces (no replay) ---------------------------------------------------------------

def test_steady_rule_warmup_alternation_and_drift():
    w = 12
    flat = np.r_[np.linspace(3, 1.05, 10), np.ones(60)]
    s = steady_start(flat, w, 0.01)
    assert s is not None and 5 <= s <= 10
    alt = np.tile([1.0, 1.3], 40)
    assert steady_start(alt, w, 0.01) == 0
    drift = np.linspace(1, 2, 80)           # +1.25% per iteration: never steady
    assert steady_start(drift, w, 0.01) is None


def test_phases_follow_refinement_and_reduced_trace_keeps_the_rest():
    data, b = amr(2, 480, phases=4, seed=2)
    phases = phases_of(data, 0, b, 12)
    assert [p.first for p in phases] == [0, 120, 240, 360]
    for p in phases:
        p.replayed = 30
    reduced, origin, marks, removed = reduce_trace(data, [b], phases)
    assert check_separable(data, np.flatnonzero(removed)) is None
    assert removed.sum() == 4 * 90 * 5 * 2
    kept = origin[origin >= 0]
    assert np.array_equal(kept, np.flatnonzero(~removed))
    assert (origin < 0).sum() == 2 * 4 * 31          # markers: per rank, phase, iteration + 1
    assert [len(m) for m in marks] == [124, 124]
    assert np.array_equal(reduced.actions["kind"][origin >= 0], data.actions["kind"][kept])
    # waitall vectors follow their rows
    wa = np.flatnonzero(reduced.actions["vec_len"] > 0)
    got = reduced.vector_entries(wa)[1]
    want = data.vector_entries(origin[wa])[1]
    assert np.array_equal(got, want)


def test_iterations_exchanging_messages_across_boundaries_are_not_skipped():
    data, b = stencil(2, 40)
    removed = np.zeros(len(data.actions), bool)
    for r in (0, 1):       # from the second irecv of iteration 5 to that of iteration 10
        removed[b[r, 5] + 2:b[r, 10] + 2] = True
    # five periods of the loop seen from another phase: the irecv in flight at the block's end
    # is paired with the one in flight at its start (sampling.crossing_requests)
    assert check_separable(data, np.flatnonzero(removed)) is None
    assert len(crossing_requests(data, np.flatnonzero(removed))[0]) == 2
    removed[:] = False
    for r in (0, 1):       # ... to the end of iteration 9: the first irecv's message is left
        removed[b[r, 5] + 2:b[r, 10]] = True
    assert "cross the boundaries" in check_separable(data, np.flatnonzero(removed))
    removed[:] = False
    removed[b[0, 5]:b[0, 10]] = True
    removed[b[1, 5]:b[1, 9]] = True       # rank 1 skips one iteration fewer
    assert "messages cross" in check_separable(data, np.flatnonzero(removed))
    removed[:] = False
    for r in (0, 1):
        removed[b[r, 5]:b[r, 10]] = True
    assert check_separable(data, np.flatnonzero(removed)) is None


def test_messages_to_proc_null_do_not_keep_iterations_from_being_skipped():
    """A non-periodic halo (cg3d.c's z slabs): the end ranks send to and receive from
    MPI_PROC_NULL (peer -1), which no other rank matches."""
    def body(r):
        up, down = (r - 1 if r > 0 else -1), (r + 1 if r < 2 else -1)
        return [Step("compute", volume=1e-4), Step("irecv", up, 1, 64),
                Step("irecv", down, 0, 64), Step("isend", up, 0, 64),
                Step("isend", down, 1, 64), Step("waitall", waits=(1, 2, 3, 4)),
                Step("allreduce", nbytes=8)]
    data, b = build(3, 40, body)
    rows = np.concatenate([np.arange(b[r, 5], b[r, 10]) for r in range(3)])
    assert check_separable(data, rows) is None


def test_loops_from_structure_ids_are_the_compressed_grammar_s():
    """The cheaper detection (structure ids, no request tokens) finds the loops the lossless
    call signatures of minitrace.compress find; a changed peer is another id."""
    from minitrace.compress import loops as find
    from minitrace.replay.sampling import loops_of, structure_ids
    for data in (stencil(4, 150, jitter=0.05, seed=1)[0], amr(2, 480, phases=4, seed=2)[0],
                 cg(3, 200, drift=0.3, seed=3)[0]):
        got, _ = loops_of(data)
        t = find(data)
        assert len(got) == t["loop"].nunique()
        for b, (_, x) in zip(got, t.groupby("loop")):
            x = x.sort_values(["rank", "iteration"])
            assert np.array_equal(b[:, :-1].ravel(), x["first_row"].to_numpy())
    data, _ = stencil(2, 10)
    ids, n = structure_ids(data)
    a = data.actions.copy()
    row = int(np.flatnonzero(a["kind"] == K.code("isend"))[3])
    a["peer"][row] = 5
    other, m = structure_ids(replace(data, actions=a))
    assert m == n + 1 and (other == other[row]).sum() == 1
    rest, was = np.delete(other, row), np.delete(ids, row)     # the same partition otherwise
    assert np.array_equal(rest[:, None] == rest[None, :], was[:, None] == was[None, :])


def test_a_compressed_file_samples_from_the_loops_of_its_expanded_trace(tmp_path):
    """Both forms of a trace give the same columns and the same loops (a compressed file's
    stored grammar cut public OSU osu_ialltoallw elsewhere, and its sampled replay
    deadlocked: tests/test_sampling_compressed.py)."""
    from minitrace.compress.files import write_compressed
    from minitrace.replay.sampling import load_trace, loops_of
    data, b = stencil(2, 120)
    write_compressed(str(tmp_path / "c.h5"), data)
    storage.write_trace(str(tmp_path / "plain.h5"), data)
    got, plain = load_trace(str(tmp_path / "c.h5")), load_trace(str(tmp_path / "plain.h5"))
    assert np.array_equal(got.actions["kind"], data.actions["kind"])
    assert np.array_equal(plain.actions["kind"], data.actions["kind"])
    found, loops = loops_of(plain)[0], loops_of(got)[0]
    assert found and len(loops) == len(found)
    assert all(np.array_equal(x, y) for x, y in zip(loops, found))


def test_a_loop_whose_iterations_share_requests_skips_whole_periods():
    """Iterations cut after the first irecv: each completes a request the one before posted
    (a pipeline); whole periods are skipped, the waits after them completing the requests in
    flight before them.  Iterations that are not alike on every rank (rank 1's two of rank
    0's) cannot be skipped: replayed fully, saying why."""
    data, b = stencil(2, 200)
    s = sampled_replay(data, [b + 2], "auto", compute_rate=RATE)   # cut after the first irecv
    full = replay(data, compute_rate=RATE)
    assert s.skipped_share > 0.5
    assert abs(s.simulated_time - full.simulated_time) <= s.bound
    s = sampled_replay(data, [np.stack([b[0, :101], b[1, ::2]])], "auto", compute_rate=RATE)
    assert s.skipped_share == 0
    assert any("iterations cannot be skipped" in n for n in s.notes)


# ---- replays ----------------------------------------------------------------------------------

def test_sampling_a_constant_loop_equals_the_full_replay_within_the_bound():
    data, b = stencil(2, 400)
    full = replay(data, compute_rate=RATE)
    s = sampled_replay(data, [b], "auto", compute_rate=RATE)
    assert s.skipped_share > 0.5 and s.phases[0].replayed < 400
    assert abs(s.simulated_time - full.simulated_time) <= s.bound
    assert s.bound < 1e-4 * full.simulated_time
    for e, f in zip(s.rank_end_times, full.rank_end_times):
        assert abs(e - f) <= s.bound


def test_sampling_warmup_jitter_and_phases_stays_within_the_bound():
    for data, b in (stencil(2, 600, jitter=0.05, warmup=2.0, seed=1),
                    amr(2, 600, phases=3, jitter=0.03, alternate=0.3, seed=4)):
        full = replay(data, compute_rate=RATE)
        s = sampled_replay(data, [b], "auto", compute_rate=RATE)
        assert s.skipped_share > 0.3
        assert abs(s.simulated_time - full.simulated_time) <= s.bound, s.table()
        assert s.bound < 0.01 * full.simulated_time


def test_loops_found_in_the_trace_are_sampled():
    data, b = cg(3, 300, jitter=0.05, seed=2)
    full = replay(data, compute_rate=RATE)
    s = sampled_replay(data, None, "auto", compute_rate=RATE)       # minitrace.compress.loops
    assert s.phases and s.skipped_share > 0.3
    assert abs(s.simulated_time - full.simulated_time) <= s.bound


def _halo(r):
    """Two ranks' halo exchange after some compute (a loop body)."""
    return [Step("compute", volume=2e-4), Step("irecv", 1 - r, 1, 4096),
            Step("isend", 1 - r, 1, 4096), Step("waitall", waits=(1, 2))]


def _reduction(volume: float):
    """A loop body: compute then an 8-byte allreduce."""
    return lambda r: [Step("compute", volume=volume), Step("allreduce", nbytes=8)]


def test_successive_loops_are_each_sampled():
    data, bounds = build(2, [(300, _halo), (400, _reduction(5e-5))])
    full = replay(data, compute_rate=RATE)
    s = sampled_replay(data, bounds, "auto", compute_rate=RATE)
    assert sorted({p.loop for p in s.phases}) == [0, 1]
    assert all(p.skipped > 0 for p in s.phases)
    assert abs(s.simulated_time - full.simulated_time) <= s.bound


def test_a_loop_shorter_than_two_windows_is_one_phase():
    # HPCG at 8 ranks: loops of 2 iterations beside its 49-iteration CG loops crashed the phase
    # cut ("cannot reshape array of size 0 into shape (0,12,newaxis)")
    check = _reduction(5e-4)
    data, bounds = build(2, [(2, check), (300, _halo), (WINDOW + 3, check)])
    full = replay(data, compute_rate=RATE)
    s = sampled_replay(data, bounds, "auto", compute_rate=RATE)
    assert [p.stop - p.first for p in s.phases if p.loop != 1] == [2, WINDOW + 3]
    assert abs(s.simulated_time - full.simulated_time) <= s.bound


def test_no_dominant_loop_replays_fully_and_says_so():
    data, b = stencil(2, 300)
    small = b[:, :20]                        # a loop over 19 iterations: a small share
    s = sampled_replay(data, [small], "auto", compute_rate=RATE)
    full = replay(data, compute_rate=RATE)
    assert s.simulated_time == full.simulated_time and s.skipped_share == 0
    assert any("no dominant loop" in n for n in s.notes)
    once, _ = build(2, 1, lambda r: [Step("compute", volume=1e-4), Step("allreduce", nbytes=8)])
    s = sampled_replay(once, None, "auto", compute_rate=RATE)
    assert any("replayed fully: no loop found" in n for n in s.notes)


def test_replicas_without_noise_reproduce_the_plain_replay():
    data, _ = stencil(3, 50, jitter=0.1)
    plain = replay(data, compute_rate=RATE)
    r = replicas(data, 3, "none", seed=1, workers=2, compute_rate=RATE)
    assert np.all(r.times == plain.simulated_time)
    assert np.array_equal(r.rank_end_times, np.tile(plain.rank_end_times, (3, 1)))
    assert (r.lateness()["mean_lateness"] == 0).all()


def test_seeded_replicas_are_reproducible_and_spread():
    data, _ = stencil(2, 60, jitter=0.2, seed=5)
    a = replicas(data, 6, "trace", seed=11, workers=2, compute_rate=RATE)
    b = replicas(data, 6, "trace", seed=11, workers=1, compute_rate=RATE)
    c = replicas(data, 6, "trace", seed=12, workers=2, compute_rate=RATE)
    assert np.array_equal(a.times, b.times)
    assert not np.array_equal(a.times, c.times)
    assert np.ptp(a.times) > 0
    s = a.summary()
    assert s["lo"] <= s["median"] <= s["hi"]


def test_sampled_replicas_are_reproducible_and_scatter_around_the_plain_replay():
    data, b = stencil(2, 240, jitter=0.1, seed=6)
    a = replicas(data, 4, "trace", seed=2, sample="auto", loops=[b], workers=2,
                 compute_rate=RATE)
    again = replicas(data, 4, "trace", seed=2, sample="auto", loops=[b], workers=1,
                     compute_rate=RATE)
    assert a.sampled is not None and a.sampled.skipped_share > 0.3
    assert np.array_equal(a.times, again.times)
    assert np.all(np.abs(a.times / a.plain_time - 1) < 0.05)


def test_cli_replicas_and_sample(tmp_path):
    data, _ = stencil(2, 60, jitter=0.2, seed=5)
    path = tmp_path / "run.h5"
    storage.write_trace(str(path), data)
    cmd = [sys.executable, "-m", "minitrace", "replay", str(path), "--compute-rate", RATE]
    p = subprocess.run(cmd + ["--replicas", "5", "--seed", "3", "--plot",
                              str(tmp_path / "h.png")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "95%:" in p.stdout and "finished last" in p.stdout and "noise:" in p.stdout
    assert (tmp_path / "h.png").stat().st_size > 0
    p = subprocess.run(cmd + ["--replicas", "5", "--seed", "3", "--json"], capture_output=True,
                       text=True)
    out = json.loads(p.stdout)
    assert len(out["times"]) == 5 and out["seed"] == 3
    bad = tmp_path / "four.h5"
    _variability(bad, 50, 4)
    p = subprocess.run(cmd + ["--replicas", "5", "--noise", str(bad)], capture_output=True,
                       text=True)
    assert p.returncode != 0 and "has 4 ranks and the trace 2" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    long = tmp_path / "long.h5"
    storage.write_trace(str(long), stencil(2, 300)[0])
    p = subprocess.run([*cmd[:4], str(long), *cmd[5:], "--sample", "auto"], capture_output=True,
                       text=True)
    assert p.returncode == 0 and "iteration sampling" in p.stdout, p.stderr
    assert "skipped" in p.stdout and "phases:" in p.stdout
    p = subprocess.run(cmd + ["--seed", "3"], capture_output=True, text=True)
    assert p.returncode != 0 and "go with --replicas" in p.stderr


def test_replicas_under_mpiexec_are_shared_by_the_ranks_and_printed_once(tmp_path):
    from tests.support.mpiutil import run_mpi
    data, _ = stencil(2, 40, jitter=0.2, seed=5)
    path = tmp_path / "run.h5"
    storage.write_trace(str(path), data)
    argv = ["-m", "minitrace", "replay", str(path), "--compute-rate", RATE, "--replicas", "4",
            "--seed", "9", "--json"]
    p = run_mpi(2, [sys.executable, *argv], timeout=240)
    out = json.loads(p.stdout)                   # one document: rank 0 alone prints
    alone = replicas(data, 4, "trace", seed=9, workers=1, compute_rate=RATE)
    assert out["times"] == alone.times.tolist()


# ---- extrapolated traces -----------------------------------------------------------------------

def test_replicas_of_an_extrapolated_trace_draw_from_a_recorded_run(tmp_path):
    big, run8 = extrapolated_stencil(tmp_path)
    with pytest.raises(MinitraceError, match="extrapolated trace's volumes are fitted laws") as e:
        replicas(str(big), 2, "trace", seed=1, compute_rate=RATE)
    assert "\n" not in str(e.value)
    base = [sys.executable, "-m", "minitrace", "replay", str(big), "--compute-rate", RATE,
            "--sample", "auto", "--json"]
    p = subprocess.run(base + ["--replicas", "6", "--seed", "3", "--noise", run8,
                               "--workers", "2"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["sampling"]["skipped_share"] > 0.5          # the loop was sampled
    assert out["lo"] < out["hi"] and out["median"] > out["plain_time"]   # 32 ranks' maxima
    assert any("recorded run" in a and "(8 ranks)" in a for a in out["assumptions"])
    assert any("replaced by each call site's mean" in a for a in out["assumptions"])
    again = replicas(str(big), 6, run8, seed=3, sample="auto", workers=1, compute_rate=RATE)
    assert np.allclose(again.times, out["times"], rtol=1e-12)


def test_a_noise_run_without_spread_is_a_one_line_error(tmp_path):
    flat, _ = stencil(2, 40)
    storage.write_trace(str(tmp_path / "flat.h5"), flat)
    data, _ = stencil(4, 40)
    with pytest.raises(MinitraceError, match="do not vary at its call sites") as e:
        noise_model(data, str(tmp_path / "flat.h5"))
    assert str(tmp_path / "flat.h5") in str(e.value)


def _timed_run(path, span: float, seed: int = 3):
    """The stencil with its MPI_Init returning at 0 and MPI_Finalize entered at ``span``
    seconds on every rank, written to ``path``."""
    data, _ = stencil(2, 60, jitter=0.1, seed=seed)
    a = data.actions.copy()
    a["t_start"], a["t_end"] = 0.0, 0.0
    a["t_start"][a["kind"] == K.code("finalize")] = span
    a["t_end"][a["kind"] == K.code("finalize")] = span
    storage.write_trace(str(path), replace(data, actions=a))
    return path


def test_run_to_run_factors_from_recorded_spans(tmp_path):
    """Each run's span over the runs' median is a draw of the run factor; replicas are
    multiplied by factors drawn from the predictive t of the runs (median 1; the scale is the
    larger of the two sides' sqrt(1 + 1/k) times their RMS deviation from the median; k - 1
    degrees of freedom), over the replayed trace's own factor, so that a trace of a slow run
    is brought back to the middle."""
    from scipy import stats
    from minitrace.replay.run_to_run import RunToRun
    spans = (1.0, 1.3, 0.9, 1.1)           # median 1.05: a slow run makes the upper side wide
    runs = [str(_timed_run(tmp_path / f"r{i}.h5", s)) for i, s in enumerate(spans)]
    between = RunToRun.of(runs)
    d = np.array(spans) / 1.05 - 1
    assert between.factors == pytest.approx(d + 1)
    c = np.sqrt(1 + 1 / 4)
    below = c * np.sqrt((d[0] ** 2 + d[2] ** 2) / 1)
    above = c * np.sqrt((d[1] ** 2 + d[3] ** 2) / 1)
    assert above > below and between.scale == pytest.approx(above)
    f = between.draw(np.random.default_rng(0), 200000)
    assert np.median(f) == pytest.approx(1.0, abs=0.005)
    t = stats.t.ppf([0.025, 0.975], 3)                              # 3 degrees of freedom
    assert np.quantile(f, [0.025, 0.975]) == pytest.approx(1 + t * above, rel=0.03)
    fast = RunToRun.of_spans(runs, (1.0, 0.7, 1.1, 0.9))    # the fast side wide: it sets both
    d = np.array((1.0, 0.7, 1.1, 0.9)) / 0.95 - 1
    assert fast.scale == pytest.approx(c * np.sqrt((d[1] ** 2 + d[3] ** 2) / 1))
    slow = between.draw(np.random.default_rng(0), 200000, own=1.1)
    assert slow == pytest.approx(f * 1.05 / 1.1)
    three = RunToRun.of(runs[:3])          # one run on each side: both take all runs' deviation
    d3 = np.array(spans[:3]) / 1.0 - 1
    assert three.scale == pytest.approx(np.sqrt(1 + 1 / 3) * np.sqrt(np.sum(d3 ** 2) / 2))
    with pytest.raises(MinitraceError, match="at least 3"):
        RunToRun.of(runs[:2])
    untimed = tmp_path / "untimed.h5"
    storage.write_trace(str(untimed), stencil(2, 60)[0])
    with pytest.raises(MinitraceError, match="no time between"):
        RunToRun.of(runs[:2] + [str(untimed)])


def test_replicas_with_runs_are_the_same_draws_times_the_run_factors(tmp_path):
    from minitrace.replay.run_to_run import RunToRun
    runs = [str(_timed_run(tmp_path / f"r{i}.h5", s)) for i, s in enumerate((1.0, 1.2, 0.95))]
    alone = replicas(runs[1], 6, seed=11, workers=1, compute_rate=RATE)
    both = replicas(runs[1], 6, seed=11, workers=1, compute_rate=RATE, runs=runs)
    f = RunToRun.of(runs).draw(np.random.default_rng([11, 1]), 6, own=1.2)
    assert both.times == pytest.approx(alone.times * f)
    assert both.plain_time == alone.plain_time
    assert any(a.startswith("run-to-run: ") and "over the trace's own" in a
               for a in both.assumptions)
    cli = subprocess.run([sys.executable, "-m", "minitrace", "replay", runs[0],
                          "--compute-rate", RATE, "--runs", *runs], capture_output=True,
                         text=True)
    assert cli.returncode != 0 and "go with --replicas" in cli.stderr
