"""Failed polls folded at record time (docs/RECORDER.md): a test or iprobe that finds nothing,
made with the same arguments as the thread's preceding record (itself such a poll), is not
written but absorbed by it, and counted in the raw header (``folded_polls`` in the metadata).
tests/programs/poll_fold.c polls 50 times before it lets its peer send, then until the message
arrives; it prints how many of its polls found nothing, which the trace must account for
exactly: each is an action or is counted as folded."""
from __future__ import annotations

import re

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.replay import replay
from tests.support.record_util import Ranked, record

pytestmark = pytest.mark.timeout(600)
C = K.CODE
#: mode -> the kinds of its polls (cycle: an iprobe and a test in turn)
POLLS = {m: (m,) for m in ("test", "testany", "testsome", "testall", "iprobe", "improbe")}
POLLS["cycle"] = ("iprobe", "test")
POLLS["cycle5"] = ("iprobe",) * 5          # (5 tags in turn: public Branson's cycle length)


def _run(programs, tmp_path, mode: str, extra=(), volume="cputime"):
    out = tmp_path / f"{mode}.h5"
    p = record(out, 2, [programs("poll_fold"), mode], volume=volume, extra=list(extra))
    assert "validation: OK" in p.stdout, p.stdout
    failed = int(re.search(r"failed polls (\d+)", p.stdout).group(1))
    return out, Ranked(out), failed


def _failed(a: np.ndarray, mode: str) -> np.ndarray:
    """Rows of rank actions ``a`` that are polls of ``mode`` that found nothing."""
    return K.mask(POLLS[mode])[a["kind"]] & ((a["flags"] & K.FLAG_COMPLETED) == 0)


@pytest.mark.parametrize("mode", list(POLLS))
def test_a_run_of_failed_polls_is_one_action(programs, tmp_path, mode):
    out, tr, failed = _run(programs, tmp_path, mode)
    assert tr.meta["complete"] and "raw_warnings" not in tr.meta    # check words intact
    folded = tr.meta["folded_polls"]
    a = tr.mpi(0)
    bad = _failed(a, mode)
    assert folded[1] == 0 and folded[0] >= 49 and folded[0] + int(bad.sum()) == failed
    # the folded records keep the thread's calls in order, each within its own time (a cycle's
    # records are back to back: equal in ns, within a float's rounding once stored)
    assert (a["t_end"] >= a["t_start"]).all()
    assert (a["t_start"][1:] >= a["t_end"][:-1] - 1e-9).all()
    send = int(np.flatnonzero(a["kind"] == C["send"])[0])
    # before the "go": one action per run of equal polls (iprobe modes: a tag, then another)
    before = a[:send][bad[:send]]
    runs = {"iprobe": [(7, "iprobe"), (1, "iprobe")], "improbe": [(7, "improbe"), (1, "improbe")],
            "cycle": [(1, "iprobe"), (-1, "test")],
            "cycle5": [(t, "iprobe") for t in (1, 11, 12, 13, 14)]}.get(mode, [(-1, mode)])
    assert list(zip(before["tag"].tolist(), [K.NAME[int(k)] for k in before["kind"]])) == runs
    # after it: the polls that found nothing while the message travelled, folded too (one
    # cycle of them at most), then the one that completed
    after = a[send + 1:]
    assert int(_failed(after, mode).sum()) <= len(POLLS[mode])
    done = np.flatnonzero((after["kind"] == C[POLLS[mode][0]]) &
                          ((after["flags"] & K.FLAG_COMPLETED) != 0))
    assert len(done) == 1
    if mode == "testall":           # the vector of requests is compared, and kept
        ids = [tr.vector(r) for r in a[bad]]
        assert all(v == ids[0] and len(v) == 2 for v in ids)
    res = replay(str(out), engine="native", compute_rate="1Gf")
    assert res.simulated_time > 0


@pytest.mark.parametrize("how", ["--no-fold-polls", "walltime"])
def test_every_failed_poll_is_kept_without_folding(programs, tmp_path, how):
    """--no-fold-polls keeps every poll; so do walltime volumes (the merge takes the computes
    from the gaps between calls, which a fold would lose)."""
    extra, volume = ([how], "cputime") if how.startswith("--") else ((), how)
    _, tr, failed = _run(programs, tmp_path, "iprobe", extra, volume)
    assert "folded_polls" not in tr.meta
    assert int(_failed(tr.mpi(0), "iprobe").sum()) == failed >= 100


def test_raw_files_of_version_7_merge_without_the_count(programs, tmp_path):
    """Raw format 8 added the header's count: a file of version 7 (the same layout, that field
    unused) still merges, and says nothing of folded polls."""
    from minitrace import rawlayout as L
    from minitrace.merge import merge_dir
    out = tmp_path / "p.h5"
    record(out, 2, [programs("poll_fold"), "test"], volume="cputime", extra=["--keep-raw"])
    raw = next(tmp_path.glob("p.h5.raw-*"))
    assert "folded_polls" in merge_dir(str(raw)).meta
    at = L.HEADER.dtype().fields["version"][1]
    for f in raw.glob("rank-*.mtr"):
        with open(f, "r+b") as fh:
            fh.seek(at)
            fh.write(np.uint32(7).tobytes())
    assert "folded_polls" not in merge_dir(str(raw)).meta
