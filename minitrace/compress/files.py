"""Writing a compressed file, the metadata a copy keeps, and what each part of the file costs."""
from __future__ import annotations

import os
import time

import h5py
import numpy as np

from .. import storage as S
from ..model import TraceColumns
from . import pack as P
from .store import LZMA_DATASET, compress, refit, unlzma_pack, write

#: File attributes that say who wrote a file: the writer sets its own (the format's identity
#: it always does, storage.IDENTITY_ATTRS).
_WRITER_KEYS = (*S.IDENTITY_ATTRS, "producer", "producer_version", "created")


def content_meta(meta: dict) -> dict:
    """A file's metadata without what says who wrote it (the writer of a copy sets its own)."""
    return {k: v for k, v in meta.items() if k not in _WRITER_KEYS}


#: The bytes per action a model file's finer epochs may fill (epochs.merge_choices): issue
#: 38's size target for model files.
MODEL_BYTES_PER_ACTION = 0.2


def write_compressed(path: str, data: TraceColumns, volumes: str = "exact",
                     precision: float = 0.01, cpu: list | None = None,
                     times: str = "exact", sig=None, pack: bool = True) -> float:
    """Compress ``data`` into ``path``; the seconds compression took (not the writing), and
    in ``cpu`` (when given) the CPU seconds of this thread it took (a refit's too).  ``sig``:
    the actions' signatures when the caller has them (``compress``); ``pack``: the small
    arrays in one dataset (pack.py), else each its own.  A model whose finer epochs make the
    file exceed :data:`MODEL_BYTES_PER_ACTION` is fitted again at the finest coarser merge
    whose bytes, as estimated, keep it within, else at the coarsest."""
    t, c0 = time.perf_counter(), time.thread_time()
    c = compress(data, volumes, precision, times, sig)
    took, spent = time.perf_counter() - t, time.thread_time() - c0
    c.meta = content_meta(c.meta)
    write(path, c, pack=pack)
    most = MODEL_BYTES_PER_ACTION * max(c.nactions, 1)
    over = os.path.getsize(path) - most
    for m, saves in c.coarser:
        if over <= 0:
            break
        if saves < over and m != c.coarser[-1][0]:
            continue
        t, c0 = time.perf_counter(), time.thread_time()
        coarser = refit(c, data, m)
        took, spent = took + time.perf_counter() - t, spent + time.thread_time() - c0
        write(path, coarser, pack=pack)
        over = os.path.getsize(path) - most
    if cpu is not None:
        cpu.append(spent)
    return took


_STRUCTURE = ("signatures", "grammar", "requests", "sizes")
_SIDE = ("exact", "model")


def sizes(path: str) -> dict:
    """Bytes on disk of the file, of its structure (signatures, grammar, requests, size tokens)
    and of its side arrays (volumes and times); the pack's (pack.py) shared among its arrays
    by their raw bytes."""
    def stored(g) -> int:
        total = 0
        for obj in g.values():
            total += stored(obj) if isinstance(obj, h5py.Group) else obj.id.get_storage_size()
        return total
    with h5py.File(path, "r") as f:
        g = f["trace"]
        structure = sum(stored(g[k]) for k in _STRUCTURE if k in g)
        side = sum(stored(g[k]) for k in _SIDE if k in g)
        packed = None
        if P.DATASET in g:
            ds = g[P.DATASET]
            packed, stored_bytes = ds[()], ds.id.get_storage_size()
        elif LZMA_DATASET in g:             # (model packs: store.lzma_pack)
            ds = g[LZMA_DATASET]
            packed = np.frombuffer(unlzma_pack(ds[()].tobytes()), np.uint8)
            stored_bytes = ds.id.get_storage_size()
        elif P.BYTES_ATTR in g.attrs:       # (small packs: pack.py)
            deflated = g.attrs[P.BYTES_ATTR].tobytes()
            packed, stored_bytes = np.frombuffer(P.inflate_inline(
                deflated, int(g.attrs[P.ATTR])), np.uint8), len(deflated)
        if packed is not None:
            raw = {k: a.nbytes for k, a in P.unpack(packed, int(g.attrs[P.ATTR])).items()}
            share = stored_bytes / max(sum(raw.values()), 1)

            def part(groups) -> float:
                return share * sum(n for k, n in raw.items() if k.split("/")[0] in groups)
            structure += part(_STRUCTURE)
            side += part(_SIDE)
    return {"file_bytes": os.path.getsize(path), "structure_bytes": structure,
            "side_bytes": side}
