"""A compressed file's small arrays packed into one dataset (``/trace/packed``) or attribute
(``/trace@packed_bytes``, small packs), pack version 5.

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
dictionary).  Version 5 (session 27): the index in binary (:func:`binary_index`), each name
a step in :data:`NAMES` and each type a byte: the text index took 140-170 bytes of each
inline pack deflated, 350-400 of a dataset's (public CloverLeaf 2r's model file 3.3 KB).
"""
from __future__ import annotations

import functools
import zlib

import numpy as np

from ..storage import smallest_int

DATASET = "packed"
#: ``/trace`` attribute holding the pack version (files without it have no pack).
ATTR = "packed"
VERSION = 5
#: The pack versions a reader takes (1: without the communicator and string tables; 2:
#: without ``/trace``'s attributes; 3: the attribute's stream without a dictionary; 4: the
#: index in text).
VERSIONS = (1, 2, 3, 4, 5)
#: The first pack version whose index is binary (:func:`binary_index`).
BINARY_INDEX_VERSION = 5
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
#: The names a binary index (pack version 5) refers to by number, frozen with it (another
#: list needs another pack version: :data:`NAMES_ADLER32`); other names are spelled out.
NAMES = tuple(f"{g}/{n}" for g, names in _NAMES.items() for n in names.split()) + (
    STRINGS, ATTRS, "sizes/sites", "sizes/distances", "sizes/offsets", "sizes/new",
    "sizes/fresh", "signatures/size_coding", "signatures/size_swaps")
#: zlib.adler32 of :data:`NAMES` joined by newlines (a test checks it).
NAMES_ADLER32 = 113055256
#: The array types of a binary index, by number.
DTYPES = ("|u1", "|i1", "<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f4", "<f8")
_NAME_IDS = {n: i for i, n in enumerate(NAMES)}
_DTYPE_IDS = {n: i for i, n in enumerate(DTYPES)}
#: A binary index entry's shape byte (below the type's number times 8) for "the shape of the
#: entry before".
_SAME_SHAPE = 7
_ONE_BYTE = tuple(bytes((x,)) for x in range(128))


def _varint(x: int) -> bytes:
    if x < 128:                     # (most: one byte, without the loop)
        return _ONE_BYTE[x]
    out = bytearray()
    while True:
        out.append((x & 127) | (128 if x > 127 else 0))
        x >>= 7
        if not x:
            return bytes(out)


def binary_index(entries: list[tuple[str, str, tuple]]) -> bytes:
    """The binary index (pack version 5) of ``(name, dtype string, shape)`` entries: per
    entry a varint k, the name :data:`NAMES` [j + 1 + unzigzag(k - 1)] where j is the
    number of the last name so given (-1 at first; unzigzag(2d) = d, unzigzag(2d + 1) =
    -d - 1), or k = 0 and the name spelled (a varint length and its UTF-8);
    then a byte, the type's number in :data:`DTYPES` times 8 plus the number of dimensions
    (0-2) or 7 for the shape of the entry before; then the dimensions, varints."""
    out, last, shape_before = bytearray(), -1, None
    for name, code, shape in entries:
        at = _NAME_IDS.get(name)
        if at is not None:
            step = at - last - 1
            out += _varint(1 + (2 * step if step >= 0 else -2 * step - 1))
            last = at
        else:
            spelled = name.encode()
            out += b"\0" + _varint(len(spelled)) + spelled
        same = shape == shape_before
        out.append(_DTYPE_IDS[code] * 8 + (_SAME_SHAPE if same else len(shape)))
        if not same:
            out += b"".join(_varint(x) for x in shape)
        shape_before = shape
    return bytes(out)


def _read_binary_index(index: bytes) -> list[tuple[str, str, tuple]]:
    """Inverse of :func:`binary_index` (PackError where the bytes are not one)."""
    at, last, shape_before, out = 0, -1, None, []

    def varint() -> int:
        nonlocal at
        x = shift = 0
        while True:
            if at >= len(index) or shift > 63:
                raise PackError("packed index cut short or malformed")
            b = index[at]
            at += 1
            x |= (b & 127) << shift
            shift += 7
            if b < 128:
                return x

    while at < len(index):
        k = varint()
        if k:
            last += 1 + ((k - 1) >> 1 if k & 1 else -(k >> 1))
            if not 0 <= last < len(NAMES):
                raise PackError("packed index names an unknown array")
            name = NAMES[last]
        else:
            n = varint()
            if n > len(index) - at:
                raise PackError("packed index cut short")
            try:
                name = index[at:at + n].decode()
            except UnicodeDecodeError:
                raise PackError("packed index name is not UTF-8 text") from None
            if not name.isprintable() or " " in name:     # (as :func:`pack` writes none)
                raise PackError("packed index name malformed")
            at += n
        if at >= len(index):
            raise PackError("packed index cut short")
        code, ndim = divmod(index[at], 8)
        at += 1
        if code >= len(DTYPES) or (ndim > _MAX_NDIM and ndim != _SAME_SHAPE) or \
                (ndim == _SAME_SHAPE and shape_before is None):
            raise PackError(f"packed index entry of {name} malformed")
        shape = shape_before if ndim == _SAME_SHAPE else tuple(varint() for _ in range(ndim))
        out.append((name, DTYPES[code], shape))
        shape_before = shape
    return out


def _entries(raw: bytes, version: int) -> tuple[list[tuple[str, str, tuple]], int]:
    """(the index's entries, where the arrays' bytes start) of packed bytes ``raw``."""
    if len(raw) < 4:
        raise PackError("packed arrays shorter than their header")
    size = int.from_bytes(raw[:4], "little")
    if size > len(raw) - 4:
        raise PackError("packed index beyond the packed bytes")
    index = bytes(raw[4:4 + size])
    if version >= BINARY_INDEX_VERSION:
        return _read_binary_index(index), 4 + size
    try:
        text = index.decode()
    except UnicodeDecodeError:
        raise PackError("packed index is not UTF-8 text") from None
    out = []
    for line in text.split("\n") if text else []:
        parts = line.split(" ")
        if len(parts) != 3:
            raise PackError(f"packed index line {line[:60]!r} malformed or repeated")
        try:
            shape = tuple(int(x) for x in parts[2].split("x")) if parts[2] else ()
        except ValueError:
            raise PackError(f"packed index line {line[:60]!r} malformed") from None
        out.append((parts[0], parts[1], shape))
    return out, 4 + size


def deflate_inline(raw: bytes, level: int, ends: list[int] | None = None) -> bytes:
    """An inline pack's zlib stream (version 4: against :data:`DICTIONARY`; ``ends``: as
    :func:`deflate`'s)."""
    return deflate(raw, level, DICTIONARY, ends)


#: Packed arrays of at least this many bytes are deflated in blocks of their own (session
#: 25): deflate ends a block when its buffer of symbols fills, so one set of Huffman codes
#: served a model's int32 codes, its int8 gaps and its signature table alike; a block each
#: made 30 public recordings' model packs 6.3% smaller (miniMD 4r 7.7%, PENNANT 2r 2.7%),
#: any zlib stream still (readers unchanged).
BLOCK_BYTES = 256


def deflate(raw: bytes, level: int, zdict: bytes | None = None,
            ends: list[int] | None = None) -> bytes:
    """The zlib stream of packed bytes ``raw`` (:func:`pack`'s), a deflate block ending
    before and after each array of at least :data:`BLOCK_BYTES` (zlib's ``Z_BLOCK``: no
    bytes of their own, the window kept across); ``ends``: where, when the caller has them
    (:func:`pack_ends`: the index not read back)."""
    z = zlib.compressobj(level, zdict=zdict) if zdict else zlib.compressobj(level)
    out, at = [], 0
    for end in _block_ends(raw) if ends is None else ends:
        out.append(z.compress(raw[at:end]))
        out.append(z.flush(zlib.Z_BLOCK))
        at = end
    out.append(z.compress(raw[at:]))
    out.append(z.flush())
    return b"".join(out)


def _block_ends(raw: bytes, version: int | None = None) -> list[int]:
    """Where :func:`deflate` ends blocks in packed bytes ``raw`` (of pack ``version``, this
    one's by default): around each array of at least :data:`BLOCK_BYTES` (from the index:
    each entry's type and shape)."""
    entries, at = _entries(raw, VERSION if version is None else version)
    sizes = []
    for _, code, shape in entries:
        n = np.dtype(code).itemsize
        for x in shape:
            n *= int(x)
        sizes.append(n)
    return _ends(at, sizes)


def _ends(at: int, sizes: list[int]) -> list[int]:
    """:func:`_block_ends` of arrays of ``sizes`` bytes back to back from ``at``."""
    ends = []
    for n in sizes:
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
    return a.nbytes <= MAX_BYTES and a.ndim <= _MAX_NDIM and _packable_type(a.dtype)


@functools.lru_cache(maxsize=None)
def _packable_type(dtype: np.dtype) -> bool:
    """Whether arrays of ``dtype`` go into the pack (numbers of a type of :data:`DTYPES`),
    found once a process (a compressed file asks of ~60 arrays three times each)."""
    return dtype.kind in _KINDS and dtype.fields is None and \
        dtype.newbyteorder("<").str in _DTYPE_IDS


def shuffled(a: np.ndarray) -> bytes:
    """``a``'s bytes byte-shuffled (byte 0 of every element, then byte 1...)."""
    if a.dtype.itemsize == 1:       # (its bytes as they are)
        return a.tobytes()
    b = np.ascontiguousarray(a).view(np.uint8).reshape(-1, a.dtype.itemsize)
    return b.T.tobytes()


def deflated_size(a: np.ndarray) -> int:
    """Bytes of int array ``a`` deflated as a pack holds it (narrowed, shuffled; level 6, as
    the writers' trials of one coding against another take it), 0 for none."""
    return len(zlib.compress(shuffled(smallest_int(np.asarray(a))), 6)) if len(a) else 0


def pack(arrays: dict, version: int | None = None) -> np.ndarray:
    """The packed bytes (uint8) of ``arrays`` (name -> array), in their order, with the index
    of pack ``version`` (this one's by default)."""
    return pack_ends(arrays, version)[0]


def pack_ends(arrays: dict, version: int | None = None) -> tuple[np.ndarray, list[int]]:
    """(:func:`pack`'s bytes, where :func:`deflate` ends blocks in them: :func:`_block_ends`
    without reading the index back, which took ~0.15 ms a write)."""
    entries, blobs = [], []
    for name, a in arrays.items():
        if " " in name or "\n" in name or not packs(a):
            raise ValueError(f"{name!r} cannot be packed")
        code = a.dtype.str
        if code[0] == ">":          # (stored little-endian)
            a = a.astype(a.dtype.newbyteorder("<"))
            code = a.dtype.str
        entries.append((name, code, a.shape))
        blobs.append(shuffled(a))
    if (VERSION if version is None else version) >= BINARY_INDEX_VERSION:
        index = binary_index(entries)
    else:
        index = "\n".join(f"{n} {c} {'x'.join(map(str, sh))}" for n, c, sh in entries).encode()
    head = np.array([len(index)], "<u4").tobytes()
    return np.frombuffer(head + index + b"".join(blobs), np.uint8), \
        _ends(4 + len(index), [len(b) for b in blobs])


class PackError(ValueError):
    """Packed bytes that do not hold what their index says (the reader makes it a
    ``corrupt trace`` error)."""


def unpack(raw: np.ndarray, version: int | None = None) -> dict:
    """name -> array of packed bytes ``raw`` of pack ``version`` (this one's by default),
    every entry checked against the bytes there."""
    raw = np.ascontiguousarray(raw, np.uint8).ravel()
    entries, at = _entries(raw.tobytes(), VERSION if version is None else version)
    out = {}
    for name, code, shape in entries:
        if name in out:
            raise PackError(f"packed array {name} repeated")
        try:
            dtype = np.dtype(code)
        except TypeError:
            raise PackError(f"packed array {name} of type {code!r} not allowed") from None
        if dtype.kind not in _KINDS or dtype.fields is not None or dtype.itemsize > 8 or \
                len(shape) > _MAX_NDIM or min(shape, default=0) < 0:
            raise PackError(f"packed array {name} of type {code} {shape} not allowed")
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
