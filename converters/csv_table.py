"""CSV export of a trace's actions: one row per action, for spreadsheets and quick scripts.

Columns: ``rank``, ``index`` (row within the rank), ``kind`` (name), the action fields, and
``vector`` (the per-peer bytes or request ids, space separated; empty when the action has none).
"""
from __future__ import annotations

import os

import numpy as np

from ..errors import MinitraceError
from ..model import TraceColumns
from ..outputs import replacing_file


def write_csv(data: TraceColumns, out) -> int:
    """Write every action of ``data`` to ``out``, whole or not at all (a temporary renamed into
    place); returns the number of rows."""
    from ..trace import actions_frame   # pandas: loaded by a CSV export, not by its parser
    if os.path.isdir(out):
        raise MinitraceError("is a directory: give the name of the CSV file to write",
                             os.fspath(out))
    a = data.actions
    sizes = np.diff(data.rank_offsets)
    rank = data.rank_of()
    df = actions_frame(a, rank=rank)
    df.insert(1, "index", np.arange(len(a)) - np.repeat(data.rank_offsets[:-1], sizes))
    vec = np.full(len(a), "", dtype=object)
    for i in np.nonzero(a["vec_len"] > 0)[0]:
        vec[i] = " ".join(map(str, data.vector(i).tolist()))
    df = df.drop(columns=["vec_off", "vec_len"])
    df["vector"] = vec
    with replacing_file(out) as f:      # never a truncated CSV at ``out`` (e.g. a full disk)
        df.to_csv(f, index=False)
    return len(df)
