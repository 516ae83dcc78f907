"""The runs' spans the run-to-run factors are drawn from (minitrace/replay/run_to_run.py
``span``): the span of the untraced run the replay predicts, the recorded span less the
recorder's own time of the rank that entered MPI_Finalize last, on traces whose answer is
known."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace import storage
from minitrace.replay.run_to_run import RunToRun, span
from tests.support.synthetic_loops import stencil


def _run(init_end, fin_start, recorder=None):
    """The stencil with each rank's MPI_Init returning at ``init_end[r]`` and its MPI_Finalize
    entered at ``fin_start[r]``; ``recorder``: its recorder_seconds."""
    data, _ = stencil(2, 20, seed=5)
    a = data.actions.copy()
    a["t_start"], a["t_end"] = 0.0, 0.0
    for r in range(data.nranks):
        ra = a[data.rank_slice(r)]
        init, fin = ra["kind"] == K.code("init"), ra["kind"] == K.code("finalize")
        ra["t_end"][init] = init_end[r]
        ra["t_start"][fin] = ra["t_end"][fin] = fin_start[r]
        a[data.rank_slice(r)] = ra
    meta = dict(data.meta)
    if recorder is not None:
        meta["recorder_seconds"] = list(recorder)
    return replace(data, actions=a, meta=meta)


def test_the_span_is_the_untraced_runs():
    # the last rank out of MPI_Init at 0.2 s, the last one into MPI_Finalize (rank 0) at 2.2 s
    assert span(_run([0.1, 0.2], [2.2, 2.0]), "t") == pytest.approx(2.0)
    # its recorder took 0.05 s of it (rank 1's 0.3 s is not on the span's end)
    assert span(_run([0.1, 0.2], [2.2, 2.0], [0.05, 0.3]), "t") == pytest.approx(1.95)
    assert span(_run([0.1, 0.2], [2.0, 2.2], [0.05, 0.3]), "t") == pytest.approx(1.7)


def test_run_factors_of_recordings_whose_recorder_took_more_in_one(tmp_path):
    """Three runs as long untraced, one of them recorded with a recorder that took 10% more:
    the factors are all 1 once its time is out."""
    paths = []
    for i, (end, own) in enumerate(((1.0, 0.0), (1.1, 0.1), (1.0, 0.0))):
        p = tmp_path / f"r{i}.h5"
        storage.write_trace(str(p), _run([0.0, 0.0], [end, end], [own, own]))
        paths.append(str(p))
    assert RunToRun.of(paths).factors == pytest.approx(np.ones(3))
