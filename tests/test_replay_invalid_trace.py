"""A prediction from a trace `validate` rejects is flagged, never printed bare (helper QA,
session 30, M1: public Graph500 2r recorded before eab10aa held 1,454 sends no rank received;
`replay`, its native, sampled and compressed forms all printed 0.0363 s, exit 0, without a
word).  A replay runs the trace as it is: an eager message nobody receives vanishes, a
rendezvous one deadlocks SimGrid, whose message then says why."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from minitrace.compress.files import write_compressed
from minitrace.model import TraceBuilder
from minitrace.replay import replay
from minitrace.storage import write_trace


def _trace(nbytes: int | None, iterations: int = 1):
    """2 ranks computing; rank 0 sends ``nbytes`` rank 1 never receives (None: no send)."""
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in (0, 1):
        b.add(r, "init")
    if nbytes is not None:
        b.add(0, "send", peer=1, tag=3, bytes_sent=nbytes)
    for _ in range(iterations):
        for r in (0, 1):
            b.add(r, "compute", volume=1e6)
            b.add(r, "allreduce", bytes_sent=8, bytes_recv=8)
    for r in (0, 1):
        b.add(r, "finalize")
    return b.build()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("form", ["plain", "compressed"])
def test_a_replay_of_an_invalid_trace_is_flagged(tmp_path, form):
    path = tmp_path / f"{form}.h5"
    if form == "plain":
        write_trace(path, _trace(1024))
    else:                      # (the native engine streams a compressed file's actions)
        write_compressed(str(path), _trace(1024))
    p = _cli("replay", path)
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()[0]
    assert first.startswith("predicted run time: ") and first.endswith(
        "2 ranks; from an invalid trace, see below)"), first
    assert ("note: the trace is not valid (1 problem(s) in 2 ranks, 9 actions: 1 "
            "unmatched-send; `minitrace validate` lists them)") in p.stdout, p.stdout
    j = json.loads(_cli("replay", path, "--json").stdout)
    assert j["invalid"] == "1 problem(s) in 2 ranks, 9 actions: 1 unmatched-send"
    assert any(n.startswith("the trace is not valid") for n in j["notes"])


def test_a_valid_trace_is_not_flagged(tmp_path):
    path = tmp_path / "ok.h5"
    write_trace(path, _trace(None))
    p = _cli("replay", path)
    assert p.returncode == 0 and "invalid" not in p.stdout + p.stderr, p.stdout
    assert json.loads(_cli("replay", path, "--json").stdout)["invalid"] == ""


@pytest.mark.parametrize("extra", [["--sample", "auto"], ["--replicas", "3", "--seed", "1"]])
def test_sampled_and_replicated_replays_are_flagged(tmp_path, extra):
    path = tmp_path / "t.h5"
    write_trace(path, _trace(1024, iterations=30))
    p = _cli("replay", path, *extra)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0].endswith("; from an invalid trace, see below)"), p.stdout
    assert "note: the trace is not valid (1 problem(s)" in p.stdout, p.stdout
    assert json.loads(_cli("replay", path, *extra, "--json").stdout)["invalid"].endswith(
        "1 unmatched-send")


@pytest.mark.parametrize("extra", [[], ["--sample", "auto"]])
def test_a_deadlock_of_an_invalid_trace_says_it_is_invalid(tmp_path, extra):
    path = tmp_path / "t.h5"
    write_trace(path, _trace(1 << 20))        # (rendezvous: the sender waits for ever)
    p = _cli("replay", path, *extra)
    assert p.returncode == 1 and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(f"minitrace: error: {path}: the replay stopped")
    assert p.stderr.rstrip().endswith("; the trace is not valid (1 problem(s) in 2 ranks, "
                                      "9 actions: 1 unmatched-send)"), p.stderr


def test_the_api_checks_files_and_what_it_is_asked_to(tmp_path):
    data = _trace(1024)
    path = tmp_path / "t.h5"
    write_trace(path, data)
    assert replay(path).invalid.endswith("1 unmatched-send")
    assert replay(data).invalid == ""         # (in memory: sampling's windows, replicas)
    assert replay(data, check=True).invalid.endswith("1 unmatched-send")
    assert replay(path, check=False).invalid == ""


def test_a_prediction_from_an_invalid_trace_is_flagged(tmp_path):
    from tests.support import synthetic
    from minitrace.predict import calibration as C
    from minitrace.predict.prediction import predict, report
    C.append_run(str(tmp_path / "cal.h5"), synthetic.calibration_run())
    C.refit(str(tmp_path / "cal.h5"))
    path = tmp_path / "t.h5"
    write_trace(path, _trace(1024))
    p = predict(str(path), str(tmp_path / "cal.h5"))
    assert p.invalid.endswith("1 unmatched-send")
    text = report(p)
    assert text.splitlines()[0].endswith("; from an invalid trace, see below)"), text
    assert "warning: the trace is not valid (1 problem(s)" in text, text


def test_a_request_never_completed_does_not_flag_it(tmp_path):
    """(public SNAP leaves the isends of each sweep so; SimGrid's example
    actions_with_isend.txt one: the replay matches and times the run's messages)"""
    b = TraceBuilder(2, meta={"volume_unit": "flops"})
    for r in (0, 1):
        b.add(r, "init")
    b.add(0, "isend", peer=1, tag=3, bytes_sent=64, request=7)
    b.add(1, "recv", peer=0, tag=3, bytes_recv=64)
    for r in (0, 1):
        b.add(r, "compute", volume=1e6)
        b.add(r, "finalize")
    path = tmp_path / "t.h5"
    write_trace(path, b.build())
    assert _cli("validate", path).returncode == 1
    p = _cli("replay", path)
    assert p.returncode == 0 and "invalid" not in p.stdout and "not valid" not in p.stdout


def test_a_streamed_trace_too_big_to_expand_is_replayed_unchecked():
    """(the reviewer: a compressed trace of 4 M actions took 968 MB to check, 145 MB not;
    a 100 M-action one would have needed ~20 GB before its streamed replay began)"""
    from minitrace.merge import available_memory
    from minitrace.replay.api import _too_big_to_check
    if available_memory() is None:
        pytest.skip("no MemAvailable in /proc/meminfo")
    assert _too_big_to_check(1000) is None
    note = _too_big_to_check(10 ** 12)
    assert note.startswith("the trace was not validated: expanding its 1,000,000,000,000 "
                           "actions") and "`minitrace validate` checks it" in note


def test_no_check_replays_without_validating(tmp_path):
    path = tmp_path / "t.h5"
    write_trace(path, _trace(1024, iterations=30))
    for extra in ([], ["--sample", "auto"]):
        p = _cli("replay", path, "--no-check", *extra)
        assert p.returncode == 0 and "not valid" not in p.stdout, p.stdout
        assert "invalid" not in p.stdout.splitlines()[0]
