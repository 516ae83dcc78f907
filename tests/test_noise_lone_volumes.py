"""A one-off phase inside a loop (public PRK MPI1 Random: 9.7 ms computed once among 120 steps
of ~5 us at one call site, 94% of the site's compute; tests/programs-free here, a built trace
of the same shape): drawn as a rare value of the site's law it fell in few replicas, and the
replicas' 95% interval lay below the noiseless replay (QA H3, session 33).  It is replayed as
recorded in every replica, and the assumptions say so."""
from __future__ import annotations

import numpy as np

from minitrace import storage
from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.replay.noise import lone_volumes
from minitrace.replay.replicas import replicas
from tests.support.synthetic import in_turn

STEPS, ONE_OFF = 120, 60


def one_off_trace(path):
    rng = np.random.default_rng(7)
    b = TraceBuilder(2)
    for r in range(2):
        add = in_turn(b, r)
        add("init", 1e-6)
        for i in range(STEPS):
            v = 1e-2 if i == ONE_OFF else 5e-6 * rng.lognormal(0, 0.1)
            add("compute", v, volume=v)
            add("allreduce", 2e-6, bytes_sent=8, bytes_recv=8, comm=0)
        add("finalize", 1e-6)
    storage.write_trace(str(path), b.build())


def test_lone_volumes_are_those_over_a_quarter_of_their_site():
    vol = np.array([1.0, 1.0, 1.0, 10.0, 2.0, 2.0])
    site = np.array([0, 0, 0, 0, 1, 1])
    assert lone_volumes(vol, site).tolist() == [False, False, False, True, True, True]


def test_a_one_off_phase_inside_a_loop_is_in_every_replica(tmp_path):
    path = tmp_path / "t.h5"
    one_off_trace(path)
    plain = replay(str(path), engine="native", compute_rate="1Gf").simulated_time
    r = replicas(str(path), 20, seed=3, workers=1, compute_rate="1Gf")
    assert min(r.times) > 0.9 * plain > 0.9 * 1e-2
    assert "a one-off phase inside a loop" in " ".join(r.assumptions)
