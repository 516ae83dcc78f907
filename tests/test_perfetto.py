"""Perfetto / Chrome trace-event export: checked against the Trace Event Format's documented
fields (name, ph, ts in microseconds, dur, pid, tid, args; metadata events process_name and
thread_name; flow events s/f sharing an id, the end with bp "e", each bound to a slice of its
thread) and event order, on a trace built here, a TAU conversion and from the CLI."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace.errors import MinitraceError
from minitrace.converters.perfetto import slices_events, trace_events, write_json, write_perfetto
from minitrace.model import TraceBuilder
from minitrace.storage import write_trace

#: Phases the exporter writes: metadata, complete slice, flow start, flow end.
PHASES = {"M", "X", "s", "f"}


def timed_trace():
    """3 ranks, 1 us per call and 2 us of compute between calls: a send/recv, an irecv/isend
    ring completed by waitall, a sendrecv ring, a persistent send 0 -> 2 started twice, a
    bcast from rank 1.  Returns (data, number of messages)."""
    b = TraceBuilder(3, {"volume_unit": "seconds"})
    clock = [0.0, 0.5e-6, 0.25e-6]

    def add(r, kind, **kw):
        b.add(r, kind, t_start=clock[r], t_end=clock[r] + 1e-6, **kw)
        clock[r] += 1e-6
        b.add(r, "compute", volume=2e-6, t_start=clock[r], t_end=clock[r] + 2e-6)
        clock[r] += 2e-6

    for r in range(3):
        add(r, "init")
    add(0, "send", peer=1, tag=5, bytes_sent=100)
    clock[1] += 1e-6
    add(1, "recv", peer=0, tag=5, bytes_recv=100)
    for r in range(3):
        nxt, prv = (r + 1) % 3, (r - 1) % 3
        add(r, "irecv", peer=prv, tag=1, bytes_recv=8, request=1)
        add(r, "isend", peer=nxt, tag=1, bytes_sent=8, request=2)
    for r in range(3):
        clock[r] = max(clock) + 1e-6 * r
        add(r, "waitall", vector=[1, 2])
    clock[:] = [max(clock)] * 3
    for r in range(3):
        nxt, prv = (r + 1) % 3, (r - 1) % 3
        add(r, "sendrecv", peer=nxt, tag=2, bytes_sent=16, bytes_recv=16, vector=[prv, 2])
    add(2, "recv_init", peer=0, tag=3, bytes_recv=64, request=7)
    add(0, "send_init", peer=2, tag=3, bytes_sent=64, request=7)
    for _ in range(2):
        add(2, "start", request=7, flags=K.FLAG_PERSISTENT)
        add(0, "start", request=7, flags=K.FLAG_PERSISTENT)
        add(0, "wait", request=7)
        clock[2] = max(clock[2], clock[0])
        add(2, "wait", request=7)
    for r in range(3):
        add(r, "bcast", peer=1, bytes_sent=32 if r == 1 else 0, bytes_recv=0 if r == 1 else 32)
        b.add(r, "finalize", t_start=clock[r], t_end=clock[r] + 1e-6)
    return b.build(), 1 + 3 + 3 + 2


def check_trace_event_format(doc: dict) -> dict:
    """Every documented constraint the exporter relies on; returns the events by phase."""
    assert set(doc) == {"traceEvents", "displayTimeUnit"} and doc["displayTimeUnit"] in (
        "ms", "ns")
    events = doc["traceEvents"]
    by = {ph: [e for e in events if e["ph"] == ph] for ph in PHASES}
    assert sum(map(len, by.values())) == len(events), "unknown phase"
    for e in events:
        assert isinstance(e["name"], str) and e["name"]
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] != "M":
            assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0
    for e in by["M"]:
        assert e["name"] in ("process_name", "thread_name", "process_sort_index",
                             "thread_sort_index") and isinstance(e["args"], dict)
    for e in by["X"]:
        assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0
        assert isinstance(e.get("args", {}), dict) and isinstance(e["cat"], str)
    # metadata first, then non-decreasing timestamps
    kinds = [e["ph"] == "M" for e in events]
    assert kinds == sorted(kinds, reverse=True)
    ts = [e["ts"] for e in events if e["ph"] != "M"]
    assert ts == sorted(ts)
    # flows: one start and one end per id, same name/cat, end binds to its enclosing slice
    starts = {e["id"]: e for e in by["s"]}
    ends = {e["id"]: e for e in by["f"]}
    assert len(starts) == len(by["s"]) and len(ends) == len(by["f"]) and starts.keys() == \
        ends.keys()
    slices = {}
    for e in by["X"]:
        slices.setdefault((e["pid"], e["tid"]), []).append(e)
    for i, s in starts.items():
        f = ends[i]
        assert f["bp"] == "e" and (s["name"], s["cat"]) == (f["name"], f["cat"])
        for ev in (s, f):          # inside a slice of its own track
            assert any(x["ts"] <= ev["ts"] <= x["ts"] + x["dur"]
                       for x in slices[(ev["pid"], ev["tid"])])
        # each slice comes before the flow events bound to it
        assert events.index(s) > min(events.index(x) for x in slices[(s["pid"], s["tid"])]
                                     if x["ts"] == s["ts"])
    return by


def test_trace_as_perfetto_json(tmp_path):
    data, n_msgs = timed_trace()
    out = tmp_path / "run.json"
    n = write_perfetto(data, out)
    doc = json.loads(out.read_text())
    assert len(doc["traceEvents"]) == n
    by = check_trace_event_format(doc)
    # one track per rank, in one process group
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in by["M"]
             if e["name"] == "thread_name"}
    assert names == {(0, r): f"rank {r}" for r in range(3)}
    # a slice per action (MPI calls and compute, in microseconds), messages as flows
    assert len(by["X"]) == len(data.actions)
    assert {e["name"] for e in by["X"]} >= {"MPI_Send", "MPI_Waitall", "MPI_Start", "compute"}
    send = next(e for e in by["X"] if e["name"] == "MPI_Send")
    assert send["tid"] == 0 and send["args"] == {"peer": 1, "tag": 5, "bytes_sent": 100}
    assert send["ts"] == pytest.approx(data.actions["t_start"][2] * 1e6)  # init, compute, send
    assert send["dur"] == pytest.approx(1.0)
    comp = [e for e in by["X"] if e["name"] == "compute"]
    assert all(e["args"] == {"volume": pytest.approx(2e-6), "unit": "seconds"} for e in comp)
    bcast = [e for e in by["X"] if e["name"] == "MPI_Bcast"]
    assert [e["args"]["root"] for e in bcast] == [1, 1, 1]
    assert len(by["s"]) == n_msgs
    # arrows go forward in time, to the rank the message was for, with its size
    ends = {e["id"]: e for e in by["f"]}
    sent = sorted((e["tid"], ends[e["id"]]["tid"], e["args"]["bytes"]) for e in by["s"])
    assert sent == sorted([(0, 1, 100), (0, 1, 8), (1, 2, 8), (2, 0, 8), (0, 1, 16),
                           (1, 2, 16), (2, 0, 16), (0, 2, 64), (0, 2, 64)])
    assert all(ends[e["id"]]["ts"] >= e["ts"] for e in by["s"])
    # the irecv's arrow ends in the waitall that completed it, 1 ns before it returns
    wa = {e["tid"]: e["ts"] + e["dur"] for e in by["X"] if e["name"] == "MPI_Waitall"}
    eight = {e["id"] for e in by["s"] if e["args"]["bytes"] == 8}
    assert sorted((f["tid"], f["ts"]) for f in by["f"] if f["id"] in eight) == [
        (r, pytest.approx(wa[r] - 0.001)) for r in range(3)]


def test_the_streamed_file_is_the_sorted_list_of_events(tmp_path):
    """write_perfetto makes each event as it writes it, in an order sorted by keys (a trace of
    millions of actions held as dicts took 1.9 GB): the same bytes as sorting the list of
    ``trace_events``, ties (equal times, equal durations) included."""
    data, _ = timed_trace()
    data.actions["t_end"][::7] = data.actions["t_start"][::7]          # zero durations
    data.actions["t_start"][5::9] = data.actions["t_start"][4::9][:len(data.actions[5::9])]
    write_perfetto(data, tmp_path / "streamed.json", name="trace")
    write_json(tmp_path / "listed.json", trace_events(data, 0, "trace"))
    assert (tmp_path / "streamed.json").read_bytes() == (tmp_path / "listed.json").read_bytes()


def test_a_wildcard_persistent_receive_has_its_arrows(tmp_path):
    """A start of a wildcard recv_init holds its message's own source and tag (COMPLETED): the
    arrow comes from that send (public graph500's persistent receives had none)."""
    b = TraceBuilder(2, {"volume_unit": "seconds"})
    t = [0.0, 0.0]

    def add(r, kind, **kw):
        b.add(r, kind, t_start=t[r], t_end=t[r] + 1e-6, **kw)
        t[r] += 2e-6

    for r in range(2):
        add(r, "init")
    add(1, "recv_init", peer=-1, tag=-1, bytes_recv=256, request=7,
        flags=K.FLAG_ANY_SOURCE | K.FLAG_ANY_TAG)
    for i in range(2):
        add(1, "start", peer=0, tag=3 + i, bytes_recv=64 + i, request=7,
            flags=K.FLAG_PERSISTENT | K.FLAG_COMPLETED)
        add(0, "send", peer=1, tag=3 + i, bytes_sent=64 + i)
        t[1] = max(t)
        add(1, "wait", request=7)
    for r in range(2):
        add(r, "finalize")
    out = tmp_path / "w.json"
    write_perfetto(b.build(), out)
    by = check_trace_event_format(json.loads(out.read_text()))
    ends = {e["id"]: e for e in by["f"]}
    assert sorted((e["tid"], ends[e["id"]]["tid"], e["args"]["bytes"]) for e in by["s"]) == [
        (0, 1, 64), (0, 1, 65)]


def test_second_process_group_for_another_timeline(tmp_path):
    """The lead's replay log: per rank (name, start, end, args) slices, a process group of
    their own beside the recorded one."""
    data, _ = timed_trace()
    replay = [[("MPI_Send", 0.0, 2e-6, {"predicted": True}), ("compute", 2e-6, 5e-6, {})],
              [("MPI_Recv", 0.0, 3e-6, {})], []]
    events = trace_events(data, 0, "recorded") + slices_events(1, "replayed (SimGrid)", replay)
    write_json(tmp_path / "both.json", events)
    doc = json.loads((tmp_path / "both.json").read_text())
    by = check_trace_event_format(doc)
    procs = {e["pid"]: e["args"]["name"] for e in by["M"] if e["name"] == "process_name"}
    assert procs == {0: "recorded", 1: "replayed (SimGrid)"}
    mine = [e for e in by["X"] if e["pid"] == 1]
    assert sorted((e["tid"], e["name"], e["ts"], e["dur"]) for e in mine) == [
        (0, "MPI_Send", 0.0, 2.0), (0, "compute", 2.0, 3.0), (1, "MPI_Recv", 0.0, 3.0)]
    assert mine[0]["args"] == {"predicted": True} or mine[1]["args"] == {"predicted": True}
    assert {(e["pid"], e["tid"]) for e in by["M"] if e["name"] == "thread_name"} >= {
        (1, 0), (1, 1), (1, 2)}


def test_untimed_trace_is_refused():
    b = TraceBuilder(1)
    b.add(0, "init")
    b.add(0, "finalize")
    with pytest.raises(MinitraceError, match="untimed"):
        trace_events(b.build())


def test_cli_export_of_a_converted_tau_trace(tmp_path):
    from tests.test_convert_tau import P_ITER, P_RANKS, petsc_like
    h5 = tmp_path / "t.h5"
    r = subprocess.run([sys.executable, "-m", "minitrace", "convert", str(petsc_like(tmp_path)),
                        "-o", str(h5)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "run.json"
    r = subprocess.run([sys.executable, "-m", "minitrace", "export", str(h5), "--format",
                        "perfetto", "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{P_RANKS} ranks" in r.stdout
    by = check_trace_event_format(json.loads(out.read_text()))
    # every message of the persistent requests is an arrow, from a start to a waitany
    assert len(by["s"]) == 2 * P_RANKS * P_ITER
    def slice_at(e):
        return {x["name"] for x in by["X"] if x["tid"] == e["tid"]
                and x["ts"] <= e["ts"] <= x["ts"] + x["dur"] and x["name"] != "compute"}
    assert set().union(*map(slice_at, by["s"])) == {"MPI_Start"}
    assert set().union(*map(slice_at, by["f"])) == {"MPI_Waitany"}
    bcast = [e for e in by["X"] if e["name"] == "MPI_Bcast"]
    assert all(e["args"]["root"] == "unknown" and e["args"]["bytes_recv"] == 256 for e in bcast)
    assert np.isfinite([e["ts"] for e in by["X"]]).all()


def test_cli_export_writes_a_recorded_file(tmp_path):
    data, _ = timed_trace()
    write_trace(str(tmp_path / "r.h5"), data)
    r = subprocess.run([sys.executable, "-m", "minitrace", "export", str(tmp_path / "r.h5"),
                        "--format", "perfetto", "-o", str(tmp_path / "r.json")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    check_trace_event_format(json.loads((tmp_path / "r.json").read_text()))
