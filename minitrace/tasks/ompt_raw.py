"""The OMPT tool's raw file (native/ompt_tool.c writes it at the traced program's exit):
a 16-byte header (magic "MOMT", version, record size), the record count, fixed 56-byte
records (each thread's in the order it made them: kind, thread, time = monotonic ns (0 on
dependence and edge records), cpu = the
thread's CPU ns on the records that delimit computations, 0 on the task creations and
switches that did not read the clock: graph.interpolate_cpu; fields a b c d), then a text table
of the code addresses that created tasks (address, file, symbol, offset in the file).

Record kinds and their fields (``a b c d``), the one place they are listed:

==================  ===============================================================
THREAD              a: ompt_thread_t
PARALLEL_BEGIN      a: region, b: encountering task, c: requested threads
PARALLEL_END        a: region, b: encountering task
IMPLICIT_BEGIN      a: task, b: region, c: team size, d: index | OMPT task flags << 32
IMPLICIT_END        a: task, b: region
TASK_CREATE         a: task, b: parent, c: OMPT task flags | has-dependences << 32,
                    d: code address
DEP                 a: task, b: address, c: OMPT dependence type (the OMPT callback;
                    written only when they differ from the DEP_SIZED ones before)
DEP_SIZED           b: address, c: size, d: dependence type | NUMA node << 32 (libomp's
                    entry point, before the TASK_CREATE of its task on the same thread)
EDGE                a: predecessor, b: successor (OMPT; misses finished predecessors)
SCHEDULE            a: prior task, b: its ompt_task_status_t, c: next task, d: CPU
SYNC_BEGIN/END      a: task, b: ompt_sync_region_t, c: region
WAIT_BEGIN/END      the same, around the waiting part (a taskgroup's region spans its body)
==================  ===============================================================
"""
from __future__ import annotations

import glob
import os

import numpy as np

from ..errors import MinitraceError

MAGIC, VERSION = 0x544D4F4D, 3
RECORD = np.dtype([("kind", "<u4"), ("thread", "<u4"), ("time", "<u8"), ("cpu", "<u8"),
                   ("a", "<u8"), ("b", "<u8"), ("c", "<u8"), ("d", "<u8")])
(THREAD, PARALLEL_BEGIN, PARALLEL_END, IMPLICIT_BEGIN, IMPLICIT_END, TASK_CREATE, DEP,
 DEP_SIZED, EDGE, SCHEDULE, SYNC_BEGIN, SYNC_END, WAIT_BEGIN, WAIT_END) = range(1, 15)


def read_raw(path: str) -> tuple[np.ndarray, dict[int, str]]:
    """(records, code address -> "symbol+0xOFF" or "file+0xOFF") of one raw file."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise MinitraceError(f"cannot read: {e.strerror}", path) from None
    head = np.frombuffer(blob[:16], "<u4") if len(blob) >= 24 else np.zeros(4, "<u4")
    if head[0] != MAGIC:
        raise MinitraceError("not a minitrace OMPT raw file", path)
    if head[1] != VERSION or head[2] != RECORD.itemsize:
        raise MinitraceError(f"OMPT raw file version {head[1]} with {head[2]}-byte records: "
                             f"this minitrace reads version {VERSION}", path)
    n = int(np.frombuffer(blob[16:24], "<u8")[0])
    end = 24 + n * RECORD.itemsize
    if end > len(blob):
        raise MinitraceError(f"truncated: {n} records announced, "
                             f"{(len(blob) - 24) // RECORD.itemsize} present", path)
    records = np.frombuffer(blob[24:end], RECORD)
    codes = {}
    for line in blob[end:].decode(errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) == 4 and parts[0].isdigit():
            where = parts[2] or os.path.basename(parts[1]) or "?"
            codes[int(parts[0])] = f"{where}+{int(parts[3] or 0):#x}"
    return records, codes


def raw_files(raw_dir: str) -> list[str]:
    """The raw files of a recording (one per process that ran OpenMP code)."""
    return sorted(glob.glob(os.path.join(raw_dir, "ompt-*.bin")))
