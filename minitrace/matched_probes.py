"""Matched probes and the receives of their messages (MPI_Mprobe/Improbe -> MPI_Mrecv/Imrecv).

A probe and the receive of its message share a message id (their vector ``[id]``, unique per
rank).  The message is matched where the probe dequeued it, so whoever pairs messages in order
(validate, an export to a replayer that matches receives in posting order) must put the receive
there: ``links`` pairs them, ``receive_order`` is a rank's program order with each matched
receive moved to just after its probe.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import kinds as K
from .model import TraceColumns

if TYPE_CHECKING:   # pandas: loaded by the first pairing, not by the TI export's parser
    import pandas as pd

_PROBES, _RECVS = K.mask(K.MATCHED_PROBES), K.mask(K.MATCHED_RECVS)


def sides(data: TraceColumns, rows: np.ndarray, rank: np.ndarray):
    """Among ``rows`` (sorted; their ranks ``rank``), the matched probes and matched receives
    with a message id, as two frames (rank, id, row)."""
    import pandas as pd
    kind = data.actions["kind"][rows]

    def side(mask):
        r, ids = data.vector_entries(rows[mask[kind]])
        return pd.DataFrame({"rank": rank[np.searchsorted(rows, r)], "id": ids, "row": r})
    return side(_PROBES), side(_RECVS)


def links(probes: pd.DataFrame, recvs: pd.DataFrame) -> pd.DataFrame:
    """Each message's first probe and first receive, outer-joined on (rank, message id):
    columns rank, id, probe, recv (rows; NaN on the side that is missing)."""
    first = [f.drop_duplicates(["rank", "id"]).rename(columns={"row": c})
             for f, c in ((probes, "probe"), (recvs, "recv"))]
    return first[0].merge(first[1], on=["rank", "id"], how="outer")


def receive_order(data: TraceColumns, sl: slice) -> np.ndarray:
    """Rows of one rank (``sl``) in program order, but each matched receive right after the
    probe that dequeued its message (where MPI matched it)."""
    rows = np.arange(sl.start, sl.stop)
    kind = data.actions["kind"][sl]
    if not _RECVS[kind].any():
        return rows
    m = links(*sides(data, rows, np.zeros(len(rows), np.int64))).dropna()
    m = m[m.recv > m.probe]
    if not len(m):
        return rows
    key = rows.astype(np.float64)
    key[m.recv.to_numpy(np.int64) - sl.start] = m.probe.to_numpy(np.float64) + 0.5
    return rows[np.argsort(key, kind="stable")]
