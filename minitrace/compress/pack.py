"""A compressed file's small arrays packed into one dataset (``/trace/packed``) or attribute
(``/trace@packed_bytes``, small packs), pack version 4.

Below ~50 k actions a compressed file's ~60 small arrays cost more as HDF5 datasets (an object
header each, ~330 bytes, and the groups' link tables) than their content; packed, they cost
one header and deflate together.  Layout of the packed bytes (docs/FORMAT.md, "Compressed
traces"):

- a little-endian uint32: the length L of the index;
- the index, L bytes of UTF-8: one line per array, ``name dtype shape`` (the array's path
  under ``/trace`` as it would be a dataset, e.g. ``model/stats/mean``; numpy's dtype string,
  e.g. ``<i4``; its dimensions joined by ``x``);
- each array's bytes in index order, byte-shuffled (byte 0 of every element, then byte 1...,
  as HDF5's shuffle filter does: integers and floats deflate better).

The dataset is uint8 with HDF5's standard gzip filter (the attribute: the same zlib
stream).  Files without either (written before) hold every array as its own dataset, and are
read as before.  Version 2 (2026-11-28, session
12) packs the communicator table (``comms/ids``, ``comms/offsets``, ``comms/members``) and the
string table (:data:`STRINGS`: UTF-8 JSON, a list) too, which version 1 kept as datasets.
Version 3 (session 18, format version 6) packs ``/trace``'s attributes too (:data:`ATTRS`)
but ``form`` and ``packed``: ~45 bytes of HDF5 header each, 10-14 of them; and a pack deflated
to at most :data:`ATTR_MAX_BYTES` is the ``/trace`` attribute :data:`BYTES_ATTR` (a zlib
stream), not a dataset, whose header took 268 bytes more.  Version 4 (session 24): that
attribute's stream is deflated against :data:`DICTIONARY` (the index's and ``/trace``'s
attributes' vocabulary: the index alone took ~450 of a small file's bytes, PENNANT 2r's model
file 3.2 KB); a pack dataset of version 4 is as version 3's (HDF5's filter takes no
dictionary).
"""
from __future__ import annotations

import zlib

import numpy as np

from ..storage import smallest_int

DATASET = "packed"
#: ``/trace`` attribute holding the pack version (files without it have no pack).
ATTR = "packed"
VERSION = 4
#: The pack versions a reader takes (1: without the communicator and string tables; 2:
#: without ``/trace``'s attributes; 3: the attribute's stream without a dictionary).
VERSIONS = (1, 2, 3, 4)
#: The string table's name in the pack: uint8, a JSON list of the strings in UTF-8.
STRINGS = "strings"
#: ``/trace``'s attributes in the pack (version 3): uint8, a JSON object in UTF-8 of their
#: values (text, numbers, booleans: ``storage.pack_json``).
ATTRS = "attrs"
#: ``/trace`` attribute holding the pack deflated (uint8, a zlib stream) in place of the
#: dataset (pack version 3, packs deflated to at most :data:`ATTR_MAX_BYTES`).
BYTES_ATTR = "packed_bytes"
#: Larger packs stay datasets: the dataset's header is a small part of them, and an attribute
#: beyond 64 KiB would move ``/trace``'s attributes to a heap.
ATTR_MAX_BYTES = 16384
#: The ``/trace`` attributes that stay attributes: what says what ``/trace`` holds and where.
KEPT_ATTRS = ("form", ATTR, BYTES_ATTR)
#: Arrays up to this many bytes are packed; larger ones are datasets of their own.
MAX_BYTES = 1 << 16
_KINDS = "iuf"

#: The names :data:`DICTIONARY` is made of, frozen with it: a new array needs no entry here (a
#: name the dictionary lacks still packs, a few bytes longer), and an edit would change it.
_NAMES = {
    "signatures": "kind flags peer_mode req_mode peer tag comm vec bytes_sent bytes_recv request "
                  "has_volume vector_offsets vector_values",
    "grammar": "rule_offsets rule_symbols rule_counts top_offsets top_symbols rank_grammar",
    "requests": "offsets new", "index": "rank_offsets kind_codes kind_counts",
    "model": "volume_offsets volume_totals t_first t_last site_offsets rank_site_means "
             "templates/hash templates/length templates/start templates/variants "
             "rank_template_means epoch_totals epoch_offsets anchor tail_offsets tail_gaps "
             "tail_values tail_value_offsets tail_steps in_call_totals epoch_variant "
             "template_unit_offsets spread_classes spread_rho spread_code stats/what "
             "stats/site stats/group stats/mean_code stats/per_byte_code",
    "exact": "volume_offsets volume_totals t_first t_last volume volume.ctx t_gap t_duration "
             "t_duration.ctx",
    "comms": "ids offsets members"}
#: The preset dictionary an inline pack of version 4 is deflated against: the index lines'
#: names and types, the attribute names and values of ``/trace`` (deflate finds its matches
#: nearest the end first: the most frequent last).  Part of the format: another needs another
#: pack version (:data:`DICTIONARY_ADLER32`).
DICTIONARY = ("".join(f"{g}/{n} |i1 2\n{g}/{n} <i2 3\n{g}/{n} <i4 8\n"
                      for g, names in _NAMES.items() for n in names.split()) +
              "strings |u1 2\nattrs |u1 1" + '{"nranks":2,"nactions":1,"timed":true,"volumes":'
              '"exact","volume_divisor":1000000000.0,"duration_less_volume":true,'
              '"volume_bound":0.01,"time_quantum":2000,"time_coding":"predicted-by-volume",'
              '"volumes":"model","precision":0.01,"epoch_merge":1,"epoch_anchor":"collectives",'
              '"epoch_templates":"kinds","time_encoding":"ns-gap","time_encoding":"model","t0":'
              ).encode()
#: zlib.adler32 of :data:`DICTIONARY` (a test checks it: an edit would make every file
#: written with it unreadable).
DICTIONARY_ADLER32 = 1279215743


def deflate_inline(raw: bytes, level: int) -> bytes:
    """An inline pack's zlib stream (version 4: against :data:`DICTIONARY`)."""
    return deflate(raw, level, DICTIONARY)


#: Packed arrays of at least this many bytes are deflated in blocks of their own (session
#: 25): deflate ends a block when its buffer of symbols fills, so one set of Huffman codes
#: served a model's int32 codes, its int8 gaps and its signature table alike; a block each
#: made 30 public recordings' model packs 6.3% smaller (miniMD 4r 7.7%, PENNANT 2r 2.7%),
#: any zlib stream still (readers unchanged).
BLOCK_BYTES = 256


def deflate(raw: bytes, level: int, zdict: bytes | None = None) -> bytes:
    """The zlib stream of packed bytes ``raw`` (:func:`pack`'s), a deflate block ending
    before and after each array of at least :data:`BLOCK_BYTES` (zlib's ``Z_BLOCK``: no
    bytes of their own, the window kept across)."""
    z = zlib.compressobj(level, zdict=zdict) if zdict else zlib.compressobj(level)
    out, at = [], 0
    for end in _block_ends(raw):
        out.append(z.compress(raw[at:end]))
        out.append(z.flush(zlib.Z_BLOCK))
        at = end
    out.append(z.compress(raw[at:]))
    out.append(z.flush())
    return b"".join(out)


def _block_ends(raw: bytes) -> list[int]:
    """Where :func:`deflate` ends blocks in packed bytes ``raw``: around each array of at
    least :data:`BLOCK_BYTES` (from the index: each line's type and shape)."""
    size = int.from_bytes(raw[:4], "little")
    at, ends = 4 + size, []
    for line in raw[4:at].decode().split("\n") if size else ():
        _, code, dims = line.split(" ")
        n = np.dtype(code).itemsize
        for x in dims.split("x") if dims else ():
            n *= int(x)
        if n >= BLOCK_BYTES:
            ends += [at] if not ends or ends[-1] != at else []
            ends.append(at + n)
        at += n
    return ends


def inflate_inline(deflated: bytes, version: int) -> bytes:
    """An inline pack's bytes from its zlib stream (``version``: the pack's; zlib.error where
    they are not one)."""
    if version < 4:
        return zlib.decompress(deflated)
    z = zlib.decompressobj(zdict=DICTIONARY)
    out = z.decompress(deflated)
    if not z.eof or z.unused_data:
        raise zlib.error("incomplete or trailing zlib stream")
    return out


_MAX_NDIM = 2


def packs(a: np.ndarray) -> bool:
    """Whether ``a`` goes into the pack (small numbers of at most 2 dimensions)."""
    return a.nbytes <= MAX_BYTES and a.dtype.kind in _KINDS and a.ndim <= _MAX_NDIM \
        and a.dtype.fields is None


def shuffled(a: np.ndarray) -> bytes:
    """``a``'s bytes byte-shuffled (byte 0 of every element, then byte 1...)."""
    b = np.ascontiguousarray(a).view(np.uint8).reshape(-1, a.dtype.itemsize)
    return b.T.tobytes()


def deflated_size(a: np.ndarray) -> int:
    """Bytes of int array ``a`` deflated as a pack holds it (narrowed, shuffled; level 6, as
    the writers' trials of one coding against another take it), 0 for none."""
    return len(zlib.compress(shuffled(smallest_int(np.asarray(a))), 6)) if len(a) else 0


def pack(arrays: dict) -> np.ndarray:
    """The packed bytes (uint8) of ``arrays`` (name -> array), in their order."""
    lines, blobs = [], []
    for name, a in arrays.items():
        if " " in name or "\n" in name or not packs(a):
            raise ValueError(f"{name!r} cannot be packed")
        a = a.astype(a.dtype.newbyteorder("<"), copy=False)
        lines.append(f"{name} {a.dtype.str} {'x'.join(map(str, a.shape))}")
        blobs.append(shuffled(a))
    index = "\n".join(lines).encode()
    head = np.array([len(index)], "<u4").tobytes()
    return np.frombuffer(head + index + b"".join(blobs), np.uint8)


class PackError(ValueError):
    """Packed bytes that do not hold what their index says (the reader makes it a
    ``corrupt trace`` error)."""


def unpack(raw: np.ndarray) -> dict:
    """name -> array of packed bytes ``raw``, every entry checked against the bytes there."""
    raw = np.ascontiguousarray(raw, np.uint8).ravel()
    if len(raw) < 4:
        raise PackError("packed arrays shorter than their header")
    size = int(raw[:4].view("<u4")[0])
    if size > len(raw) - 4:
        raise PackError("packed index beyond the packed bytes")
    try:
        text = raw[4:4 + size].tobytes().decode()
    except UnicodeDecodeError:
        raise PackError("packed index is not UTF-8 text") from None
    out = {}
    at = 4 + size
    for line in text.split("\n") if text else []:
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] in out:
            raise PackError(f"packed index line {line[:60]!r} malformed or repeated")
        name, code, dims = parts
        try:
            dtype = np.dtype(code)
            shape = tuple(int(x) for x in dims.split("x")) if dims else ()
        except (TypeError, ValueError):
            raise PackError(f"packed index line {line[:60]!r} malformed") from None
        if dtype.kind not in _KINDS or dtype.fields is not None or dtype.itemsize > 8 or \
                len(shape) > _MAX_NDIM or min(shape, default=0) < 0:
            raise PackError(f"packed array {name} of type {code} {dims} not allowed")
        count = int(np.prod(shape, dtype=object)) if shape else 1
        nbytes = count * dtype.itemsize
        if nbytes > len(raw) - at:
            raise PackError(f"packed array {name} beyond the packed bytes")
        b = raw[at:at + nbytes].reshape(dtype.itemsize, count).T
        out[name] = np.ascontiguousarray(b).view(dtype).reshape(shape)
        at += nbytes
    if at != len(raw):
        raise PackError("packed bytes longer than their index says")
    return out
