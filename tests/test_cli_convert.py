"""The convert (and its older spellings import / export) and validate commands, run as the user runs them (a subprocess), on our
traces (tests/data/ti) and, as third-party cross-checks, on SimGrid's example traces."""
from __future__ import annotations

import csv
import subprocess
import sys

import pytest

from minitrace.model import TraceBuilder
from minitrace.storage import write_trace
from tests.support.fixtures import DATA, SHARED, ti_traces

FIX = SHARED / "simgrid_ti"
OWN = DATA / "ti"
#: The one action validate reports in a trace, where a rank's last isend is never waited for
#: (SimGrid completes it at the end of the replay).
UNWAITED_ISEND = {"p2p.txt": "rank 2 action 8", "actions_with_isend.txt": "rank 2 action 7"}


def mt(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "minitrace", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("trace", ti_traces())
def test_convert_from_ti_then_validate(trace, tmp_path):
    h5 = tmp_path / "t.h5"
    p = mt("convert", "--from", "ti", trace, "-o", h5)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("\n") == 1 and p.stdout.startswith(f"{h5}: ")
    v = mt("validate", h5)
    if trace.name in UNWAITED_ISEND:
        assert v.returncode == 1
        assert f"{UNWAITED_ISEND[trace.name]}: incomplete-request" in v.stdout
        assert "1 problem(s)" in p.stdout
    else:
        assert v.returncode == 0, v.stdout
        assert "no problems" in v.stdout and "valid" in p.stdout


def test_export_ti_and_csv(tmp_path):
    """alltoallv among 3 ranks: per-rank files in bytes, buffer sizes written as the count sums
    (rank 1 said 200 and 100), the same 9 lines in one file, the per-peer vector in the CSV."""
    src = tmp_path / "a2av.txt"
    src.write_text("0 init\n1 init\n2 init\n"
                   "0 alltoallv 60 10 20 30 70 10 40 20\n"
                   "1 alltoallv 200 40 50 60 100 20 50 15\n"
                   "2 alltoallv 40 20 15 5 95 30 60 5\n"
                   "0 finalize\n1 finalize\n2 finalize\n")
    _import_then_export_alltoallv(src, tmp_path, "1 alltoallv 150 40 50 60 85 20 50 15",
                                  "150", "40 50 60 20 50 15")


def _import_then_export_alltoallv(src, tmp_path, rank1_line: str, rank1_sent: str,
                                  rank1_vector: str) -> None:
    """Import a 3-rank TI trace of one alltoallv, export it as TI (a list file, then a single
    file: 9 lines) and CSV; rank 1's line and its CSV row are as given."""
    h5 = tmp_path / "t.h5"
    assert mt("convert", "--from", "ti", src, "-o", h5).returncode == 0
    p = mt("convert", h5, "--to", "ti", "-o", tmp_path / "list")
    assert p.returncode == 0 and "exact" in p.stdout and p.stderr == ""
    assert (tmp_path / "list").read_text() == "list_files/0.txt\nlist_files/1.txt\n" \
        "list_files/2.txt\n"
    assert (tmp_path / "list_files/1.txt").read_text() == f"1 init\n{rank1_line}\n1 finalize\n"
    p = mt("convert", h5, "--to", "ti", "--layout", "single", "-o", tmp_path / "one.txt")
    assert p.returncode == 0
    assert len((tmp_path / "one.txt").read_text().splitlines()) == 9
    p = mt("convert", h5, "--to", "csv", "-o", tmp_path / "a.csv")
    assert p.returncode == 0
    with open(tmp_path / "a.csv") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 9
    row = table[4]
    assert (row["rank"], row["index"], row["kind"], row["bytes_sent"], row["vector"]) == \
        ("1", "1", "alltoallv", rank1_sent, rank1_vector)


@pytest.mark.thirdparty
def test_export_simgrid_example_ti_and_csv(tmp_path):
    _import_then_export_alltoallv(FIX / "actions_alltoallv.txt", tmp_path,
                                  "1 alltoallv 121 80 1 40 71 40 1 30", "121", "80 1 40 40 1 30")


def test_lossy_export_from_cli(tmp_path):
    # one-sided communication: SimGrid's TI replay has no RMA, and it is not lowered
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "win_fence")
        b.add(r, "put", peer=1 - r, bytes_sent=8)
        b.add(r, "win_fence")
        b.add(r, "finalize")
    h5 = tmp_path / "t.h5"
    write_trace(h5, b.build())
    p = mt("convert", h5, "--to", "ti", "-o", tmp_path / "x")
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert "cannot express 2 put, 4 win_fence" in p.stderr
    p = mt("convert", h5, "--to", "ti", "-o", tmp_path / "x", "--lossy")
    assert p.returncode == 0
    assert "warning: dropped 2 put action(s)" in p.stderr
    assert (tmp_path / "x_files/0.txt").read_text() == "0 init\n0 finalize\n"


def test_bad_text_is_one_line_error(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("0 init\n0 frobnicate 3\n0 finalize\n")
    p = mt("convert", "--from", "ti", f, "-o", tmp_path / "t.h5")
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert p.stderr.strip() == f"minitrace: error: 1 unparsable line(s): {f}:2: frobnicate: " \
                               "unknown action"
    assert not (tmp_path / "t.h5").exists()


def _two_rank_trace(tmp_path):
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
        b.add(r, "barrier")
        b.add(r, "finalize")
    h5 = tmp_path / "t.h5"
    write_trace(h5, b.build())
    return h5


def test_export_into_a_directory_is_refused_before_writing(tmp_path):
    h5 = _two_rank_trace(tmp_path)
    (tmp_path / "out").mkdir()
    before = sorted(tmp_path.rglob("*"))
    for fmt in ("ti", "csv"):
        p = mt("convert", h5, "--to", fmt, "-o", f"{tmp_path / 'out'}/")
        assert p.returncode == 1 and p.stdout == ""
        assert p.stderr == f"minitrace: error: {tmp_path / 'out'}/: is a directory: name a " \
                           f"file to write\n"
    assert sorted(tmp_path.rglob("*")) == before      # nothing written, not even part of it


def test_csv_error_says_why(tmp_path):
    h5 = _two_rank_trace(tmp_path)
    p = mt("convert", h5, "--to", "csv", "-o", tmp_path / "nodir" / "a.csv")
    assert p.returncode == 1
    # refused before anything is computed, naming the missing directory
    assert p.stderr == f"minitrace: error: {tmp_path / 'nodir' / 'a.csv'}: cannot write: no " \
                       f"such directory {tmp_path / 'nodir'}\n"
    assert "None" not in p.stderr and p.stderr.count("\n") == 1


@pytest.mark.parametrize("content, why", [
    (b"hello world\n", "line 1: neither a TI action ('<rank> <action> ...') nor an existing "
                       "trace file: 'hello world'"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", "not a text trace (binary data)"),
])
def test_import_of_a_non_trace_is_one_line_error(tmp_path, content, why):
    f = tmp_path / "notes.txt"
    f.write_bytes(content)
    p = mt("convert", "--from", "ti", f, "-o", tmp_path / "t.h5")
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr == f"minitrace: error: {f}: {why}\n"
    assert not (tmp_path / "t.h5").exists()
    # format detection reads it with the same rules: not TI, so no format at all
    p = mt("convert", f, "-o", tmp_path / "t.h5")
    assert p.returncode == 1 and "cannot tell the trace format" in p.stderr
    assert p.stderr.count("\n") == 1


def test_import_and_export_write_what_convert_writes_and_say_it_replaces_them(tmp_path):
    src = OWN / "p2p.txt"
    old = mt("import", src, "-o", tmp_path / "a.h5")
    new = mt("convert", "--from", "ti", src, "-o", tmp_path / "b.h5")
    assert old.returncode == new.returncode == 0, old.stderr
    assert old.stdout.replace("a.h5", "b.h5") == new.stdout
    assert old.stderr == new.stderr + ("minitrace: note: 'minitrace import' is replaced by "
                                       "'minitrace convert --from ti' (the same conversion)\n")
    old = mt("export", tmp_path / "b.h5", "--format", "csv", "-o", tmp_path / "a.csv")
    new = mt("convert", tmp_path / "b.h5", "--to", "csv", "-o", tmp_path / "b.csv")
    assert old.returncode == new.returncode == 0, old.stderr
    assert old.stderr == new.stderr + ("minitrace: note: 'minitrace export' is replaced by "
                                       "'minitrace convert --to' (the same conversion)\n")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_the_python_api_converts_in_and_out_and_returns_what_the_command_prints(tmp_path):
    from minitrace.converters import convert
    c = convert(OWN / "p2p.txt", str(tmp_path / "t.h5"), source="ti")
    assert c.to == "minitrace" and c.data.nranks == 3
    assert [p.category for p in c.validation.problems] == ["incomplete-request"]
    e = convert(str(tmp_path / "t.h5"), str(tmp_path / "t.txt"), to="ti", layout="single")
    assert e.ti.exact and (tmp_path / "t.txt").read_text().count("\n") == len(c.data.actions)
    e = convert(str(tmp_path / "t.h5"), str(tmp_path / "t.csv"), to="csv")
    assert e.written == len(c.data.actions)
    with pytest.raises(ValueError, match="cannot convert to 'xml'"):
        convert(str(tmp_path / "t.h5"), str(tmp_path / "t.xml"), to="xml")


def test_import_and_convert_accept_a_commented_list(tmp_path):
    lst = tmp_path / "list"
    lst.write_text(f"# two ranks\n{OWN / 'split0.txt'}\n\n# the other\n{OWN / 'split1.txt'}\n")
    for cmd in ("import", "convert"):
        p = mt(cmd, lst, "-o", tmp_path / f"{cmd}.h5")
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith(f"{tmp_path / cmd}.h5: 2 ranks, 11 actions from ")


@pytest.mark.thirdparty
def test_import_and_convert_accept_a_list_of_simgrid_examples(tmp_path):
    lst = tmp_path / "list"
    lst.write_text(f"# two ranks\n{FIX / 'actions0.txt'}\n\n# the other\n"
                   f"{FIX / 'actions1.txt'}\n")
    for cmd in ("import", "convert"):
        p = mt(cmd, lst, "-o", tmp_path / f"{cmd}.h5")
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith(f"{tmp_path / cmd}.h5: 2 ranks, 12 actions from ")


def test_validate_cli_caps_output(tmp_path):
    b = TraceBuilder(2)
    for r in range(2):
        b.add(r, "init")
    for i in range(60):
        b.add(0, "send", peer=1, tag=i, bytes_sent=4)
    b.add(0, "finalize")            # rank 1 never finalizes
    h5 = tmp_path / "t.h5"
    write_trace(h5, b.build())
    p = mt("validate", h5)
    assert p.returncode == 1
    lines = p.stdout.splitlines()
    assert lines[0] == f"{h5}: 61 problem(s) in 2 ranks, 63 actions: 1 missing-finalize, " \
                       "60 unmatched-send"
    assert len(lines) == 52 and lines[-1].strip() == "... and 11 more problem(s)"
    assert len(mt("validate", h5, "--max", "0").stdout.splitlines()) == 62
