"""Reading the objects of a minitrace HDF5 file checked, whatever file kind they belong to.

Every reader of a file kind (the trace's columns and index in ``storage``, benchmark results
in ``trace.BenchResult``, regression histories, calibrations) takes its groups and datasets
through these functions: only hard links (a soft or external link is not followed out of the
file, nor round in a cycle), the type, rank and shape it expects, a size bounded by what the
file can hold before anything is allocated, and every failure a one-line ``MinitraceError``
``FILE: corrupt KIND: what``.  A virtual dataset (a parallel merge's output over its part
files) is no link: it is taken when the files it reads lie in the file's directory tree and
exist, and bounded by what those files hold.

:func:`check_heaps` runs before libhdf5 reads anything: libhdf5 (1.14 and 2.0 alike) loops
forever on a global heap collection (where variable-length strings and string attributes
live) in which an object of index 0 (free space) has size 0, as a zeroed page inside one
reads; such a file is refused instead.
"""
from __future__ import annotations

import mmap
import os
import struct

import h5py
import numpy as np

from .errors import MinitraceError

#: deflate expands at most ~1032:1: a dataset claiming more than this many bytes per byte of
#: file is corrupt (and would be allocated before being read)
MAX_EXPANSION = 1100
_SLACK = 1 << 20
_GCOL = b"GCOL\x01\x00\x00\x00"
_GCOL_MIN = 4096


def corrupt(kind: str, what: str, path) -> MinitraceError:
    """The one-line error of a damaged file of ``kind`` (trace, history, calibration, ...)."""
    return MinitraceError(f"corrupt {kind}: {what}", os.fspath(path))


def first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


def check_heaps(path) -> None:
    """Refuse a file holding a global heap collection that libhdf5 would parse forever (see
    the module's doc): each collection found by its signature is walked as libhdf5 walks it
    (object header: index u16, references u16, 4 reserved bytes, size u64; then the data,
    8-byte aligned; index 0 is the free space, whose size includes its header)."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < _GCOL_MIN:
                return
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                at = mm.find(_GCOL)
                while at >= 0:
                    _walk_collection(mm, at, size, path)
                    at = mm.find(_GCOL, at + 1)
    except OSError as e:
        raise MinitraceError(f"cannot read: {e.strerror or e}", os.fspath(path)) from None


def _walk_collection(mm, at: int, size: int, path) -> None:
    if at + 16 > size:
        return
    (length,) = struct.unpack_from("<Q", mm, at + 8)
    if length < _GCOL_MIN or at + length > size:
        return          # not a collection libhdf5 would load whole: it reports it, no loop
    p, end = at + 16, at + length
    while p + 16 <= end:
        idx, _, obj = struct.unpack_from("<HH4xQ", mm, p)
        if idx == 0:            # free space: its size includes its header, not padded
            if obj == 0:
                raise corrupt("HDF5 file", f"global heap at byte {at} damaged (a free-space "
                              "object of size 0, which libhdf5 would read forever)", path)
            p += obj
        else:
            p += 16 + ((obj + 7) & ~7)


def virtual_files(ds: h5py.Dataset, kind: str, path) -> list[str]:
    """The files a virtual dataset reads ([] for any other dataset; the file itself is not
    listed): refused when one lies outside the directory of ``path`` or is missing (HDF5
    would read its rows as the fill value, zeros)."""
    if not ds.is_virtual:
        return []
    base = os.path.dirname(os.path.abspath(path))
    out = []
    sources: dict = {}
    for m in ds.virtual_sources():
        sources.setdefault(m.file_name, set()).add(m.dset_name)
    for name in sorted(sources):
        full = os.path.normpath(os.path.join(base, name))
        if name == ".":
            raise corrupt(kind, f"{ds.name} is a virtual dataset over its own file", path)
        if os.path.isabs(name) or not full.startswith(base + os.sep):
            raise corrupt(kind, f"{ds.name} reads {name}, outside the file's directory", path)
        if not os.path.isfile(full):
            raise MinitraceError(f"part file {name} of this {kind} is missing (a parallel "
                                 "merge's output reads its parts; `minitrace pack` makes one "
                                 "file of it)", path)
        _plain_sources(ds, full, sources[name], kind, path)
        out.append(full)
    return out


def _plain_sources(ds: h5py.Dataset, full: str, dsets: set, kind: str, path) -> None:
    """A virtual dataset reads plain datasets of another file: one over its own file, or over
    another virtual dataset (a chain that may loop back), makes libhdf5 recurse until it
    crashes."""
    if os.path.samefile(full, ds.file.filename):
        raise corrupt(kind, f"{ds.name} is a virtual dataset over its own file", path)
    try:
        with h5py.File(full, "r") as part:
            for name in dsets:
                src = part.get(name)
                if not isinstance(src, h5py.Dataset) or src.is_virtual:
                    raise corrupt(kind, f"{ds.name} reads {name} of "
                                  f"{os.path.basename(full)}, which is no plain dataset", path)
    except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
        raise corrupt(kind, f"{ds.name} reads an unreadable file "
                      f"{os.path.basename(full)} ({first_line(e)})", path) from None


def _bounded(ds: h5py.Dataset, kind: str, path) -> None:
    try:
        size = sum(os.path.getsize(f) for f in [ds.file.filename,
                                                 *virtual_files(ds, kind, path)])
    except (OSError, ValueError):     # (an in-memory file)
        size = 0
    limit = MAX_EXPANSION * max(size, 1) + _SLACK
    if int(np.prod(ds.shape, dtype=object)) * max(ds.dtype.itemsize, 1) > limit:
        raise corrupt(kind, f"{ds.name} claims {ds.shape} elements, more than the file can "
                      "hold", path)


def member(group: h5py.Group, name: str, kind: str, path, want=(h5py.Group, h5py.Dataset),
           required: bool = True):
    """``group[name]`` when it is a hard link to an object of type ``want`` (None when
    missing and not ``required``)."""
    where = f"{group.name.rstrip('/')}/{name}"
    try:
        link = group.get(name, getlink=True)
        if link is None:
            if required:
                raise corrupt(kind, f"{where} missing", path)
            return None
        if not isinstance(link, h5py.HardLink):
            raise corrupt(kind, f"{where} is a {type(link).__name__} (links are not followed "
                          "out of the file)", path)
        obj = group[name]
    except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:
        raise corrupt(kind, f"{where} unreadable ({first_line(e)})", path) from None
    if not isinstance(obj, want):
        what = want.__name__ if isinstance(want, type) else "group or dataset"
        raise corrupt(kind, f"{where} is not a {what.lower()}", path)
    return obj


def names(group: h5py.Group, kind: str, path) -> list[str]:
    """The link names in ``group`` (links are not resolved)."""
    try:
        return sorted(group.keys())
    except (OSError, RuntimeError, KeyError, ValueError, TypeError, UnicodeDecodeError) as e:
        raise corrupt(kind, f"{group.name} unreadable ({first_line(e)})", path) from None


def is_int(v) -> bool:
    """A stored JSON/attribute integer (a bool is not one)."""
    return isinstance(v, int) and not isinstance(v, bool)


def is_text(ds: h5py.Dataset) -> bool:
    return h5py.check_string_dtype(ds.dtype) is not None


def array(group: h5py.Group, name: str, kind: str, path, dtypes: str = "iuf",
          ndim: int | tuple | None = 1, shape: tuple | None = None, required: bool = True):
    """A whole dataset checked for its type (numpy kinds ``dtypes``, ``"T"``: text, decoded),
    rank and ``shape`` (None entries: any length), bounded before it is read."""
    ds = member(group, name, kind, path, h5py.Dataset, required)
    if ds is None:
        return None
    text = is_text(ds)
    ok_type = ("T" in dtypes) if text else (ds.dtype.kind in dtypes.replace("T", "")
                                            and ds.dtype.fields is None)
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if not ok_type or (ndims is not None and ds.ndim not in ndims):
        raise corrupt(kind, f"{ds.name} is {ds.dtype} {ds.shape}, not "
                      f"{'text' if dtypes == 'T' else 'numbers'} of rank "
                      f"{'/'.join(map(str, ndims)) if ndims else 'any'}", path)
    if shape is not None and (len(shape) != ds.ndim or any(
            s is not None and s != n for s, n in zip(shape, ds.shape))):
        raise corrupt(kind, f"{ds.name} has shape {ds.shape}, expected "
                      f"{tuple('*' if s is None else s for s in shape)}", path)
    _bounded(ds, kind, path)
    try:
        v = ds[()]
    except (OSError, RuntimeError, ValueError, TypeError, MemoryError) as e:
        raise corrupt(kind, f"{ds.name} unreadable ({first_line(e)})", path) from None
    if text:
        flat = np.asarray(v, dtype=object).ravel()
        try:
            v = np.array([x.decode() if isinstance(x, bytes) else str(x) for x in flat],
                         dtype=object).reshape(np.shape(v))
        except UnicodeDecodeError:
            raise corrupt(kind, f"{ds.name} is not UTF-8 text", path) from None
    return v


def finite_columns(columns: dict, row_base: int, path) -> None:
    """Refuse action columns holding a volume that is no finite number or an infinite time
    (NaN < 0 is false: no other check sees them; a time may be NaN: untimed, or not
    recorded)."""
    for name, bad in (("volume", ~np.isfinite(columns["volume"])),
                      ("t_start", np.isinf(columns["t_start"])),
                      ("t_end", np.isinf(columns["t_end"]))):
        if bad.any():
            row = int(np.argmax(bad))
            raise corrupt("trace", f"column {name} holds {columns[name][row]} (row "
                          f"{row_base + row})", path)
