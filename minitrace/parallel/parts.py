"""A trace written in parts: the per-worker part files of a parallel merge (``OUT.parts/``),
``OUT.h5`` assembled over them as HDF5 virtual datasets (written last, atomically: until then
there is no OUT.h5, and a part alone is not a trace), and ``pack``, which makes one
self-contained file of it.

A part holds, for its consecutive ranks, the big datasets of /trace (the action columns, the
vectors, the kind index's rows) encoded as the whole trace is (storage.encoding_plan and
storage.common_types) and, in ``/part``, what it contributed to the trace-wide decisions, so
that a rerun after a failure rebuilds the same trace from the parts already written and only
merges the rest."""
from __future__ import annotations

import hashlib
import json
import os

import h5py
import numpy as np

from .. import part_ranks, storage
from ..errors import MinitraceError
from ..merge import RankTables, rank_files

PART_FORMAT = "minitrace-part"     # not "minitrace": no reader takes a part for a trace
PLAN = "plan.json"
#: The datasets of /trace a part holds (relative to /trace); the rest is in OUT.h5 itself.
_BIG = ("actions", "index/kind_rows", "vectors")


def parts_dir(output: str) -> str:
    """``OUT.parts`` beside ``OUT.h5``."""
    return os.path.splitext(os.fspath(output))[0] + ".parts"


def fingerprint(directory: str) -> str:
    """What identifies a raw directory's content: each rank file's name, size and mtime."""
    h = hashlib.sha256()
    for f in rank_files(directory):
        st = os.stat(f)
        h.update(f"{os.path.basename(f)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def read_plan(pdir: str, print_: str) -> dict | None:
    """The plan of an earlier merge of the same raw files into this output, if any."""
    path = os.path.join(pdir, PLAN)
    try:
        with open(path) as fh:
            plan = json.load(fh)
    except (OSError, ValueError):
        return None
    return plan if plan.get("fingerprint") == print_ else None


def write_plan(pdir: str, plan: dict) -> None:
    """plan.json (the parts' rank ranges and the raw files' fingerprint), atomically."""
    os.makedirs(os.path.join(pdir, plan["fingerprint"]), exist_ok=True)
    tmp = os.path.join(pdir, f".{PLAN}.{os.getpid()}.tmp")
    with open(tmp, "w") as fh:
        json.dump(plan, fh)
    os.replace(tmp, os.path.join(pdir, PLAN))


def part_path(pdir: str, plan: dict, i: int) -> str:
    """Part ``i``'s file: in a subdirectory named by the raw files' fingerprint (the parts of
    other raw files, which an existing OUT.h5 may still use, are never overwritten)."""
    lo, hi = plan["parts"][i]
    return os.path.join(pdir, plan["fingerprint"], f"part-{i:05d}-ranks-{lo}-{hi - 1}.h5")


def remove_temporaries(pdir: str, plan: dict) -> None:
    """The temporaries of parts whose worker died while writing them (only a merge into this
    output writes there; they would never be read, only take space)."""
    d = os.path.join(pdir, plan["fingerprint"])
    for f in os.listdir(d) if os.path.isdir(d) else []:
        if f.startswith(".part-") and f.endswith(".tmp"):
            os.unlink(os.path.join(d, f))


def finished(path: str, print_: str) -> dict | None:
    """The contribution of a part already written for these raw files, or None."""
    try:
        with h5py.File(path, "r") as f:
            if storage.attr_text(f.attrs.get("format")) != PART_FORMAT or \
                    storage.attr_text(f.attrs.get("fingerprint")) != print_ or \
                    part_ranks.RANKS not in f.attrs:
                return None
            return _decode(bytes(f["part/contribution"][...]))
    except (OSError, KeyError):
        return None


def _encode(contribution: dict) -> np.ndarray:
    """A part's contribution as JSON bytes (communicator member lists stored once each)."""
    c = dict(contribution)
    groups: dict[tuple, int] = {}
    c["tables"] = {str(rk): [[[d[0], groups.setdefault(d[1], len(groups)), d[2]]
                              for d in t.comm_defs],
                             {str(k): v for k, v in t.strings.items()}, t.n_actions,
                             t.complete, t.warnings, list(t.in_mpi)]
                   for rk, t in c["tables"].items()}
    c["groups"] = [list(g) for g in groups]
    c["counts"] = c["counts"].tolist()
    c["kind_last"] = c["kind_last"].tolist()
    return np.frombuffer(json.dumps(c).encode(), np.uint8)


def _decode(blob: bytes) -> dict:
    c = json.loads(blob)
    groups = [tuple(g) for g in c.pop("groups")]
    c["tables"] = {int(rk): RankTables([(d[0], groups[d[1]], bool(d[2])) for d in t[0]],
                                       {int(k): v for k, v in t[1].items()}, t[2], t[3], t[4],
                                       tuple(t[5]) if len(t) > 5 else (0.0, 0.0))
                   for rk, t in c["tables"].items()}
    c["counts"] = np.array(c["counts"], np.int64).reshape(-1, 256)
    c["kind_last"] = np.array(c["kind_last"], np.int64)
    return c


def interned(tables: dict) -> dict:
    """``{rank: RankTables}`` with equal member lists made one object: pickled (the workers'
    allgather) and held once per worker, not once per rank (a communicator of every rank,
    defined on every rank, would otherwise cost ranks**2)."""
    seen: dict[tuple, tuple] = {}
    return {rk: t._replace(comm_defs=[(d[0], seen.setdefault(d[1], d[1]), d[2])
                                      for d in t.comm_defs]) for rk, t in tables.items()}


def write_part(path: str, print_: str, encoded: dict, vectors: np.ndarray, kind_rows: dict,
               types: dict, contribution: dict) -> None:
    """One part file, atomically (a temporary renamed in when whole)."""
    with storage.atomic_file(path) as f:
        f.attrs["format"] = PART_FORMAT
        f.attrs["fingerprint"] = print_
        f.attrs[part_ranks.RANKS] = np.asarray(contribution["ranks"], np.int64)
        storage.write_columns(f.create_group("trace"), encoded, vectors, kind_rows, types)
        f.create_group("part").create_dataset("contribution", data=_encode(contribution),
                                              compression="gzip")


def assemble(output: str, part_paths: list[str], meta: dict, plan: dict, offsets: np.ndarray,
             counts: np.ndarray, comms: dict, strings: list) -> None:
    """OUT.h5: the small tables of /trace and virtual datasets over the parts' big ones,
    written last (atomically: no OUT.h5 until every part is there)."""
    base = os.path.dirname(os.path.abspath(output))
    with storage.new_file(output, meta) as f, _Opened(part_paths) as parts:
        g = f.create_group("trace")
        for name in _big_names(parts):
            pieces = [(os.path.relpath(p.filename, base), p["trace"][name]) for p in parts
                      if name in p["trace"]]
            dtype = np.result_type(*[ds.dtype for _, ds in pieces])
            grp = g.require_group(os.path.dirname(name)) if "/" in name else g
            total = sum(ds.shape[0] for _, ds in pieces)
            if total == 0:
                ds = grp.create_dataset(os.path.basename(name), shape=(0,), dtype=dtype)
            else:
                layout = h5py.VirtualLayout(shape=(total,), dtype=dtype)
                at = 0
                for rel, src in pieces:
                    n = src.shape[0]
                    if n:
                        layout[at:at + n] = h5py.VirtualSource(rel, src.name, shape=(n,))
                        at += n
                ds = grp.create_virtual_dataset(os.path.basename(name), layout)
            ds.attrs.update(dict(pieces[0][1].attrs))
        storage.write_tables(g, len(offsets) - 1, int(offsets[-1]), plan, offsets, counts,
                             comms, strings)


def _big_names(parts: list) -> list[str]:
    """Paths (under /trace) of every big dataset some part holds, in the parts' order."""
    names: list[str] = []
    for p in parts:
        t = p["trace"]
        for top in _BIG:
            obj = t.get(top)
            if isinstance(obj, h5py.Dataset):
                found = [top]
            elif isinstance(obj, h5py.Group):
                found = [f"{top}/{k}" for k in obj]
            else:
                found = []
            names += [n for n in found if n not in names]
    return names


class _Opened:
    """The part files open for reading, closed on exit."""

    def __init__(self, paths: list[str]):
        self.paths = paths

    def __enter__(self) -> list:
        self.files = []
        for p in self.paths:
            try:
                self.files.append(h5py.File(p, "r"))
            except OSError:
                self.__exit__()
                raise MinitraceError("part file unreadable", p) from None
        return self.files

    def __exit__(self, *exc):
        for f in self.files:
            f.close()


# -- pack -------------------------------------------------------------------------------------
_BATCH = 2 * (os.cpu_count() or 2)       # chunks read, compressed in threads, written at once


def pack(source: str, output: str) -> None:
    """Copy ``source`` (a trace over parts, or any minitrace file) into ``output``, one file
    holding every dataset itself; big datasets are streamed a few chunks at a time."""
    storage.check_file(source)
    with h5py.File(source, "r") as src:
        if "trace" in src:
            storage.HDF5TraceReader(src, source)     # refuses missing parts, in one line
        with storage.atomic_file(output) as dst:
            dst.attrs.update(dict(src.attrs))
            for name, obj in src.items():
                if name != "provenance":
                    _copy(obj, dst, name)


def _copy(obj, parent: h5py.Group, name: str) -> None:
    if isinstance(obj, h5py.Group):
        g = parent.create_group(name)
        g.attrs.update(dict(obj.attrs))
        for k, child in obj.items():
            _copy(child, g, k)
    elif obj.ndim == 1 and obj.dtype.kind in "iuf" and obj.shape[0]:
        _stream(obj, parent, name)
    else:
        parent.copy(obj, name)


def _stream(src: h5py.Dataset, parent: h5py.Group, name: str) -> None:
    """A 1-D dataset chunked and compressed as storage writes it, copied chunk by chunk."""
    n = src.shape[0]
    rows = min(storage.CHUNK, n)
    ds = parent.create_dataset(name, shape=(n,), dtype=src.dtype, chunks=(rows,),
                               **storage.COMPRESSION)
    starts = list(range(0, n, rows))
    for b in range(0, len(starts), _BATCH):
        batch = starts[b:b + _BATCH]
        block = src[batch[0]:min(batch[-1] + rows, n)]
        storage.write_chunks(ds, block, batch[0])
    ds.attrs.update(dict(src.attrs))


def stored_bytes(path: str) -> int:
    """Bytes a trace takes on disk: its file and the part files it reads."""
    base = os.path.dirname(os.path.abspath(path))
    names = set()
    with h5py.File(path, "r") as f:
        def visit(_, obj):
            if isinstance(obj, h5py.Dataset) and obj.is_virtual:
                names.update(m.file_name for m in obj.virtual_sources())
        f.visititems(visit)
    return os.path.getsize(path) + sum(os.path.getsize(os.path.join(base, n)) for n in names
                                       if os.path.exists(os.path.join(base, n)))


def differences(a: str, b: str) -> list[str]:
    """What differs between two trace files' content (every dataset of /trace: type, values,
    attributes; /trace's and the root's attributes but the creation date): [] when a parallel
    merge (or a pack) wrote what the serial merge writes."""
    def content(path):
        out = {}
        with h5py.File(path, "r") as f:
            def visit(name, obj):
                if isinstance(obj, h5py.Dataset):
                    out[name] = (obj.dtype.str, obj[...].tobytes(), _attrs(obj))
            f["trace"].visititems(visit)
            out["/"] = {k: v for k, v in _attrs(f).items() if k != "created"}
            out["/trace"] = _attrs(f["trace"])
        return out
    x, y = content(a), content(b)
    return sorted(k for k in x.keys() | y.keys() if x.get(k) != y.get(k))


def _attrs(obj) -> dict:
    return {k: repr(v) for k, v in obj.attrs.items()}
