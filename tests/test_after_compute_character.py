"""A program's after-compute character fitted on its own recording
(minitrace/predict/character.py), on synthetic 2-rank traces whose right answer is known: the
exchanges' recorded excess over their warm cost is set to a known mix of the two kernels'
penalties on the rank that did not wait."""
from __future__ import annotations

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.model import TraceBuilder
from minitrace.predict import after_compute as ac, character
from minitrace.predict.calibration import Calibration

US = 1e-6
SIZED = {"seconds": [20e-6, 100e-6, 500e-6, 2e-3], "bytes": [8, 8192, 65536],
         "registers": [[0.0, 0.2e-6, 1e-6, 3e-6], [0.0, 1e-6, 4e-6, 9e-6],
                       [0.0, 2e-6, 5e-6, 10e-6]],
         "memory": [[0.4e-6, 2e-6, 10e-6, 12e-6], [1e-6, 4e-6, 20e-6, 24e-6],
                    [2e-6, 6e-6, 28e-6, 30e-6]]}


def _fit(intercept: float) -> dict:
    """A stored fit that is ``intercept`` seconds at every size."""
    return {"segments": [{"lo": 0, "hi": 1e9, "intercept": intercept, "slope": 0.0, "n": 3}],
            "breakpoints": []}


def _calibration(send=0.5 * US, recv=0.3 * US) -> Calibration:
    cal = Calibration(config={}, latency=1e-6, bandwidth=1e9, loopback_latency=1e-7,
                      loopback_bandwidth=1e10, speed=1e9, compute_rate=1e9,
                      reduction_rate=1e9, ranks_per_host=2, cores_per_host=2,
                      size_range=[1, 1 << 20], eager_threshold=1 << 16, pair="intra",
                      speed_spread=0.0, core_share=[1.0, 1.0], runs=1, points=1)
    cal.segments = {"send": _fit(send), "recv": _fit(recv), "isend": _fit(0.4 * US),
                    "net_eager": _fit(1 * US), "net_rendezvous": _fit(5 * US)}
    cal.call_costs = {"post": 0.2 * US, "complete": 0.1 * US}
    cal.after_compute = SIZED
    return cal


def _exchanges(excess=None, n=24, late=50 * US, compute=500 * US, reads=None):
    """Each rank: ``n`` times a compute, then irecv from the other (2 KiB), send to it, wait.
    Rank 1 ends its compute ``late`` after rank 0: rank 0's wait waits (the message comes
    after its stretch began: 200 us), rank 1's calls take their warm cost (the calibration's)
    plus ``excess[i]`` in the irecv (its recorder read too when ``reads``, seconds a read)."""
    cal = _calibration()
    excess = np.zeros(n) if excess is None else excess
    b = TraceBuilder(2, {"volume_unit": "seconds"} | ({} if reads is None else {
        "recorder_seconds": [0.0, reads * (n + 2)]}))    # (at each irecv's and finalize's
    #                                                        entry, at MPI_Init's exit)
    warm = {"irecv": 0.2 * US + 0.1 * US + 0.3 * US, "send": 0.5 * US, "wait": 0.0}
    t = [0.0, 0.0]
    for r in range(2):
        b.add(r, "init", t_start=0.0, t_end=1e-3)
        t[r] = 1e-3
    for i in range(n):
        start = 1e-3 + i * 1e-3
        for r in range(2):
            end = start + compute + (late if r else 0.0)    # (CPU time: the compute's)
            b.add(r, "compute", volume=compute, t_start=end - compute, t_end=end)
            cost = dict(warm)
            if r:
                cost["irecv"] += excess[i] + (reads or 0.0)
            else:
                cost["wait"] = 200 * US                   # (for rank 1's message)
            at = end
            for kind, kw in (("irecv", {"bytes_recv": 2048, "request": 1}),
                             ("send", {"bytes_sent": 2048}), ("wait", {"request": 1})):
                peer = {} if kind == "wait" else {"peer": 1 - r, "tag": 0}
                b.add(r, kind, **kw, **peer, t_start=at, t_end=at + cost[kind])
                at += cost[kind]
            t[r] = at
    for r in range(2):                  # (a stretch that holds MPI_Finalize is not priced)
        b.add(r, "compute", volume=1e-3, t_start=t[r], t_end=t[r] + 1e-3)
        b.add(r, "finalize", t_start=t[r] + 1e-3, t_end=t[r] + 1e-3)
    return b.build(), cal


def _penalties(data):
    """Per kernel, the penalty of each of rank 1's stretches (as the replay adds it)."""
    out = {}
    for k in ac.KERNELS:
        rows, added, *_ = ac.added_seconds(data, SIZED, 1.0, k)
        one = data.rank_of(rows) == 1
        out[k] = added[one][:-1]           # (the last: the compute before MPI_Finalize)
    return out


@pytest.mark.parametrize("w", [0.0, 0.3, 1.0])
def test_the_mix_is_the_one_the_unwaited_rank_s_exchanges_show(w):
    data, cal = _exchanges()
    pen = _penalties(data)
    excess = (1 - w) * pen["registers"] + w * pen["memory"]
    data, cal = _exchanges(excess)
    got = character.fit(data, cal)
    assert got.weights == pytest.approx({"registers": 1 - w, "memory": w}, abs=1e-9)
    # rank 0's stretches waited (the message came after they began): not used; rank 1's are
    # one site but for the first, which holds its first call of each kind (their set-up is
    # replayed apart)
    assert got.stretches == len(excess) - 1 and got.sites == 1
    assert got.excess == pytest.approx(excess[1:].sum(), abs=1e-12)


def test_the_recorder_s_read_is_taken_out_and_the_mix_held_to_the_curves():
    data, cal = _exchanges()
    pen = _penalties(data)
    excess = 0.4 * pen["registers"] + 0.6 * pen["memory"]
    # the recorder's clock read at each call's entry after a gap above the gate: out
    assert character.fit(*_exchanges(excess, reads=3 * US)).weights["memory"] == \
        pytest.approx(0.6)
    # below the register curve: the register kernel alone; above the memory one: memory alone
    # (the recording's noise moves the mix within the calibrated range, no further)
    assert character.fit(*_exchanges(0.5 * pen["registers"])).weights["registers"] == 1.0
    assert character.fit(*_exchanges(2 * pen["memory"])).weights["memory"] == 1.0


def test_without_an_exchange_that_tells_the_kernels_apart_there_is_no_character():
    data, cal = _exchanges()
    excess = _penalties(data)["memory"]
    data, _ = _exchanges(excess)
    assert character.fit(data, cal).weights is not None

    def why(data, cal):               # no weights: the kernels' mean, and the reason said
        got = character.fit(data, cal)
        assert got.weights is None and got.summary().startswith(
            "the mean of the calibration's kernels: no fit (")
        return got.reason
    # a warm cost above the kernels' difference: the site cannot tell them apart
    assert "cannot be told apart" in why(data, _calibration(send=50 * US))
    # every stretch waited (rank 1's message also came after rank 0's stretch began)
    late, _ = _exchanges(excess, late=0.0)
    assert "did not wait" in why(late, cal)
    # fewer stretches than a median needs (the rank's first left out too)
    few, _ = _exchanges(excess[:character.MIN_STRETCHES], n=character.MIN_STRETCHES)
    assert f"{character.MIN_STRETCHES} or more" in why(few, cal)
    # a rank that lost its core inside its calls (a partner may have waited for it)
    data.meta["in_mpi_seconds"] = [[0.010, 0.011], [0.005, 0.010]]
    assert "of a core inside its MPI calls" in why(data, cal)
    data.meta["in_mpi_seconds"] = [[0.010, 0.011], [0.009, 0.010]]
    assert character.fit(data, cal).weights is not None
    # no timestamps, no curves
    untimed = _exchanges(excess)[0]
    untimed.actions["t_start"][:] = np.nan
    assert "no timestamps" in why(untimed, cal)
    cal.after_compute = {}
    assert "no after-compute curves" in why(data, cal)


def _allreduces(excess, n=24, late=50 * US, compute=500 * US, first_late=False,
                wildcard=False):
    """Each rank: ``n`` times a compute, then an 8-byte allreduce.  Rank 1 ends its compute
    ``late`` after rank 0 (rank 0 waits for it in the allreduce), and its allreduce takes the
    calibrated warm cost (one round on 2 ranks: the one-way time at 8 bytes) plus ``excess[i]``;
    ``first_late``: rank 0 enters its allreduces after rank 1's compute ended instead;
    ``wildcard``: first a message to rank 1 received from MPI_ANY_SOURCE (HPCCG's and miniFE's
    set-up)."""
    cal = _calibration()
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    warm = float(cal.one_way(8.0))
    for r in range(2):
        b.add(r, "init", t_start=0.0, t_end=1e-3)
    if wildcard:
        b.add(0, "send", peer=1, tag=0, bytes_sent=8, t_start=1e-3, t_end=1e-3)
        b.add(1, "recv", peer=0, tag=0, bytes_recv=8, flags=K.FLAG_ANY_SOURCE, t_start=1e-3,
              t_end=1e-3)
    t = [1e-3, 1e-3]
    for i in range(n):
        start = 1e-3 + i * 1e-3
        ends = [start + compute + (2 * late if first_late else 0.0), start + compute + late]
        for r in range(2):
            b.add(r, "compute", volume=compute, t_start=ends[r] - compute, t_end=ends[r])
        done = max(ends) + warm + excess[i]
        for r in range(2):
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8, t_start=ends[r], t_end=done)
            t[r] = done
    for r in range(2):
        b.add(r, "compute", volume=1e-3, t_start=t[r], t_end=t[r] + 1e-3)
        b.add(r, "finalize", t_start=t[r] + 1e-3, t_end=t[r] + 1e-3)
    return b.build(), cal


def test_an_allreduce_the_other_ranks_had_entered_is_priced_and_fitted():
    """An allreduce is used where every other rank entered it before the rank's compute ended
    (it did not wait), at the calibrated one-way time per round of recursive doubling."""
    n = 24
    data, cal = _allreduces(np.zeros(n))
    pen = _penalties(data)
    excess = 0.8 * pen["registers"] + 0.2 * pen["memory"]
    got = character.fit(*_allreduces(excess))
    assert got.weights == pytest.approx({"registers": 0.8, "memory": 0.2}, abs=1e-9)
    assert got.stretches == n - 1            # (rank 1's; the first holds its first allreduce)
    # rank 0 the later one: its stretches are used, rank 1's (waiting for it) are not; both
    # entering at once: neither waited
    late = character.fit(*_allreduces(excess, first_late=True))
    assert late.stretches == n - 1 and late.weights["memory"] == pytest.approx(0.2)
    assert character.fit(*_allreduces(excess, late=0.0)).stretches == 2 * (n - 1)
    # the same stretches with every allreduce on another communicator: not priced
    data, cal = _allreduces(excess)
    data.actions["comm"][data.actions["kind"] == K.code("allreduce")] = 1
    assert character.fit(data, cal).weights is None
    # a wildcard receive elsewhere (no point-to-point match in the trace) leaves the
    # allreduces' own test in force: rank 0's waited allreduces stay out
    wild = character.fit(*_allreduces(excess, wildcard=True))
    assert wild.stretches == n - 1 and wild.weights["memory"] == pytest.approx(0.2)
    data, cal = _allreduces(excess, wildcard=True)
    data.actions["comm"][data.actions["kind"] == K.code("allreduce")] = 1
    assert character.fit(data, cal).weights is None


def test_a_mix_is_the_kernels_penalties_weighted():
    data, _ = _exchanges()
    d = np.array([50e-6, 300e-6, 1e-3])
    mix = ac.penalty(SIZED, d, 4096, {"registers": 0.25, "memory": 0.75})
    assert mix == pytest.approx(0.25 * ac.penalty(SIZED, d, 4096, "registers")
                                + 0.75 * ac.penalty(SIZED, d, 4096, "memory"))
    assert ac.penalty(SIZED, d, 4096, {"registers": 0.5, "memory": 0.5}) == \
        pytest.approx(ac.penalty(SIZED, d, 4096))
    _, per_rank = ac.add_to_compute(data, SIZED, 1.0, {"registers": 0.0, "memory": 1.0})
    assert per_rank == pytest.approx(ac.add_to_compute(data, SIZED, 1.0, "memory")[1])


def test_predict_and_its_replicas_take_the_mix_on_the_recording_machine_only():
    """prediction.fitted_mix, what predict and its --replicas/--sample replays add: the fit on
    a timed trace with no translation; none (the kernels' mean, and why) with one, or
    untimed."""
    from minitrace.predict.prediction import fitted_mix
    data, cal = _exchanges(_penalties(_exchanges()[0])["memory"])
    assert fitted_mix(data, cal).weights == character.fit(data, cal).weights
    other = fitted_mix(data, cal, translation=object())
    assert other.weights is None and other.reason == "the trace was recorded on another machine"
    data.actions["t_start"][:] = np.nan
    assert fitted_mix(data, cal).reason == "the trace has no timestamps"
