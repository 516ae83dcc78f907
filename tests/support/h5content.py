"""What a minitrace file holds, to compare two files written of the same trace by two writers
(extrapolate's direct writer and the compressed writer of the trace in memory)."""
from __future__ import annotations

import h5py
import numpy as np

from minitrace import provenance, storage


def content(path: str) -> dict:
    """Every dataset (dtype and bytes) and attribute of the file but when and where it was
    written (the root's ``created``, the ``provenance`` group: the machine's load), the
    root's packed metadata (format version 6) unpacked, its provenance left out alike."""
    out = {}
    with h5py.File(path, "r") as f:
        root = dict(f.attrs)
        if storage.META_ATTR in root:
            packed = storage.unpack_json(root.pop(storage.META_ATTR), storage.META_ATTR, path,
                                         provenance.PACK_DICTIONARY)
            root.update(packed["attrs"])
        out["/"] = {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                    for k, v in root.items() if k != "created"}

        def visit(name, obj):
            if name.split("/")[0] == "provenance":
                return
            out[name + "@"] = {k: (v.tolist() if isinstance(v, np.ndarray) else v)
                               for k, v in obj.attrs.items()}
            if isinstance(obj, h5py.Dataset):
                out[name] = (str(obj.dtype), obj[()].tobytes())
        f.visititems(visit)
    return out
