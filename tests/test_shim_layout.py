"""The recorder leaves the program's memory where it would be untraced (issue 35): the shim
allocates nothing from the program's heap (its own memory: c_shim/shim_alloc.c), so a recorded
program's heap blocks sit where they sit with the shim loaded and not recording; and the raw
file's chunks, mapped into a range reserved at start-up, no longer fix where the program's
large buffers land modulo 2 MiB (the kernel aligns a file mapping of 2 MiB or more to its file
offset: every recording put transpose's 8 MiB buffers on a 2 MiB boundary, which decides how
many huge pages back them where the program gets some)."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from minitrace.record import shim_path, traced_command
from tests.support.mpiutil import tool
from tests.support.record_util import build

pytestmark = pytest.mark.timeout(300)

#: libc functions that take memory from the program's heap, directly or inside (fopen's buffer,
#: qsort's for more than 1 KiB, dlopen's scopes and a failed dlsym's error string)
HEAP_USERS = {"malloc", "calloc", "realloc", "free", "strdup", "strndup", "fopen", "fdopen",
              "qsort", "dlopen", "dlsym", "posix_memalign", "aligned_alloc", "memalign",
              "valloc", "asprintf", "vasprintf", "getline", "open_memstream", "reallocarray"}


def test_shim_library_calls_no_heap_allocator():
    out = subprocess.run(["nm", "-D", "--undefined-only", shim_path()], capture_output=True,
                         text=True, check=True).stdout
    used = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    assert not used & HEAP_USERS


def _layouts(program: str, raw_dir: str, tmp_path: Path) -> list[tuple[int, int]]:
    """(small block's page offset, big buffer's offset mod 2 MiB) of each rank of a 2-rank
    job with the shim preloaded, writing into raw_dir (where it cannot: not recording)."""
    argv, env = traced_command([tool("mpiexec"), "-n", "2", program], raw_dir, "cputime")
    p = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = sorted(tuple(map(int, line.split()[1:])) for line in p.stdout.splitlines()
                  if line.startswith("layout "))
    assert len(rows) == 2, p.stdout
    return [(small, big) for _, small, big in rows]


def test_recording_takes_nothing_from_the_program_heap(tmp_path):
    program = build("shim_layout", tmp_path)
    idle = _layouts(program, str(tmp_path / "absent" / "raw"), tmp_path)  # no directory: idle
    (tmp_path / "record").mkdir()          # (the same length: the environment is the same size)
    raw = tmp_path / "record" / "raw"
    recorded = _layouts(program, str(raw), tmp_path)
    assert sorted(raw.iterdir())                                       # (it did record)
    assert [s for s, _ in recorded] == [s for s, _ in idle]


@pytest.mark.skipif(Path("/proc/sys/kernel/randomize_va_space").read_text().strip() == "0",
                    reason="address space layout randomization is off: every run alike")
def test_recorded_large_buffers_not_placed_alike(tmp_path):
    program = build("shim_layout", tmp_path)
    offsets = set()
    for i in range(3):
        offsets |= {big for _, big in _layouts(program, str(tmp_path / f"raw{i}"), tmp_path)}
    assert len(offsets) > 1, offsets       # each one of 512 page offsets at random: not all one
