"""A merge that cannot fit in the machine's memory is refused before it starts (a polling
program's 13 GB of raw files grew a merge to 23 GB until the kernel killed it), from the
records its raw files' chunk headers count."""
from __future__ import annotations

import os

import pytest

import minitrace
from minitrace.errors import MinitraceError
from minitrace.merge import BYTES_PER_ACTION, RawRun, available_memory, check_memory
from tests.support.record_util import record


@pytest.fixture(scope="module")
def raw_run(programs, tmp_path_factory):
    """A real 2-rank recording of the ring program, its raw files kept."""
    d = tmp_path_factory.mktemp("mem")
    p = record(d / "r.h5", 2, [programs("ring")], extra=["--keep-raw"])
    assert "validation: OK" in p.stdout
    raw = [x for x in os.listdir(d) if x.startswith("r.h5.raw-")]
    assert len(raw) == 1
    return d / "r.h5", str(d / raw[0])


def test_records_counted_from_the_chunk_headers_bound_the_actions(raw_run):
    out, raw = raw_run
    records = sum(r.records() for r in RawRun(raw).by_rank.values())
    with minitrace.open(out) as t:
        n = len(t.data().actions)
    assert 0 < records <= n <= 2 * records


def test_a_merge_beyond_the_memory_is_refused_naming_the_directory(raw_run):
    _, raw = raw_run
    run = RawRun(raw)
    records = sum(r.records() for r in run.by_rank.values())
    low = records * BYTES_PER_ACTION[0]
    with pytest.raises(MinitraceError, match="merging needs at least .* GiB of memory") as e:
        check_memory(run, low - 1)
    assert raw in str(e.value)
    warned = check_memory(run, low + 1)
    assert warned.startswith(raw) and "may need up to" in warned
    assert check_memory(run, 2 * records * BYTES_PER_ACTION[1] + 1) is None
    assert check_memory(run, None) is None


def test_available_memory_read_from_the_kernel():
    got = available_memory()
    assert got is None or got > 0
