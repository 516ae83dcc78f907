"""The HDF5 file format (see docs/FORMAT.md): writing and low-level reading with h5py.

Columns are stored one dataset each, chunked and compressed (shuffle + gzip).  Three
encodings make loop-like traces small: timestamps are integer nanoseconds, delta-coded within
each rank (``t_end`` as a duration); ``vec_off`` is not stored (it follows from ``vec_len``);
``volume`` is stored as integers of ``volume_quantum`` when that is exact.
Every write goes to a temporary file renamed into place, so a reader never sees half a file.

The writer API other packages build their files with: :func:`new_file` (a new minitrace file),
:func:`atomic_file` (any HDF5 file, or a copy of one to add to), :func:`updating` (a locked
read-modify-write), :func:`dataset` and :func:`write_chunks` (chunks compressed in threads),
:func:`meta_attrs`, :func:`smallest_int`; readers of other forms of ``/trace`` use
:func:`check_meta`, :func:`trace_array`, :func:`attr_text` and ``INT_COLUMNS``.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import shutil
import zlib
from concurrent.futures import ThreadPoolExecutor

import h5py
import numpy as np

from . import __version__
from . import kinds as K
from . import provenance
from .errors import MinitraceError
from .model import ACTION_DTYPE, UNDEFINED, VOLUME_UNITS, TraceColumns, vec_offsets
from . import checked, part_ranks
from .checked import check_heaps, corrupt
from .outputs import check_output_file, replacing_path, write_error

FORMAT_NAME = "minitrace"
FORMAT_VERSION = 16  # 2: the compressed form of /trace (minitrace.compress); 3: with arrays
#                      coded in contexts (compress/context_rans.py: bounded files since session
#                      13), which readers of version 2 took for missing arrays; 4: model
#                      files' spread as codes (model/spread_code, session 14), which readers of
#                      version 3 took for a model without its tables; 5: model templates
#                      with variants (model/epoch_variant, session 18), whose means version 4
#                      readers took for the wrong length; 6: metadata packed (session 18: the
#                      root's attributes and /provenance in META_ATTR, /trace's in its pack),
#                      which version 5 readers took for a file without them; 7: model
#                      files' in-call CPU time apart from the work's epoch totals
#                      (model/in_call_totals, session 19), which version 6 readers pooled;
#                      8: context-coded arrays of coding version 4 (frequencies as count
#                      codes, session 20), which version 7 readers refused as damaged; 9:
#                      coding version 5 (a second window per context, session 21), which
#                      version 8 readers refused as damaged, and model files' call sites per
#                      rank (model/rank_site_means, session 21), which version 8 readers took
#                      for a model without its tables; 10: model files' time statistics
#                      per call site with message sizes set aside (model/stats/site, session
#                      23) and template means rank after rank (model/rank_template_means),
#                      which version 9 readers would have refused as lacking a column;
#                      11: model templates matched on each stretch between two anchors where
#                      epochs are merged (model/template_unit_offsets, session 24), which
#                      version 10 readers matched on the merged epochs; 12: message sizes
#                      apart from the grammar where they change from step to step (sizes/*,
#                      session 26), whose grammar version 11 readers took for a corrupt one,
#                      and bounded duration steps in contexts of their predictions' octaves
#                      (time_coding "predicted-by-volume-octaves", session 26 too), which
#                      version 11 readers refused as an unknown time coding; 13: message
#                      sizes coded for what they are (signatures/size_coding, sizes/fresh,
#                      session 27), whose signature tables version 12 readers took for
#                      columns of different lengths; 14: a model file's pack LZMA-coded
#                      (compress/store.py's packed_lzma, session 28), which version 13
#                      readers took for a missing array; 15: bounded files' volume codes
#                      and duration steps coded by the adaptive context coder
#                      (compress/adaptive.py, ``.actx`` arrays, session 31), which version
#                      14 readers took for missing arrays; 16: model files' call sites
#                      of two modes (model/mode_gaps, session 32), whose calls version 15
#                      readers gave one mean
#: The version of a compressed file holding context-coded arrays (coding version 5), packed
#: or not, whatever else it holds.
SECOND_WINDOW_VERSION = 9
#: The version of every model file: its time statistics per call site with message sizes
#: set aside and a per-byte term (``model/stats/site``), its template means rank after rank
#: (``model/rank_template_means``), and (since version 9) each rank's
#: own call sites (``model/rank_site_means``), packed or not.
SIZE_SITES_VERSION = 10
#: The version of a model file whose templates are matched on the stretches between two
#: anchors (``model/template_unit_offsets``: its epochs merged), packed or not.
TEMPLATE_UNITS_VERSION = 11
#: The version of a compressed file whose grammar holds message sizes as tokens (``sizes/*``:
#: compress/signatures.py's SizeTokens) or whose bounded duration steps are coded in contexts
#: of their predictions' octaves (``time_coding`` "predicted-by-volume-octaves"), whatever
#: else it holds.
SIZE_TOKENS_VERSION = 12
#: The version of a compressed file whose signatures' message sizes are coded for what they
#: are (``signatures/size_coding``: a unit, swapped pairs, received sizes less the sent) or
#: whose new size tokens are coded as fresh or taken back (``sizes/fresh``), whatever else it
#: holds.
SIZE_CODING_VERSION = 13
#: The version of a compressed file whose pack is LZMA-coded (``/trace/packed_lzma``), whatever
#: else it holds.
LZMA_PACK_VERSION = 14
#: The version of a compressed file holding arrays of the adaptive context coder (``.actx``:
#: compress/adaptive.py), whatever else it holds.
ADAPTIVE_VERSION = 15
#: The version of a model file whose call sites have two modes (``model/mode_gaps``:
#: compress/epochs.py), whatever else it holds.
MODEL_MODES_VERSION = 16
#: The version of a compressed file whose metadata is packed (:data:`META_ATTR`), whatever
#: else its ``/trace`` holds (but the above).  (Versions 3, 4, 5, 7 and 8 marked what every
#: model file or context-coded array now has of version 9.)
PACKED_META_VERSION = 6
#: The version of an exact compressed file written unpacked: version 2 readers open it.
COMPRESSED_VERSION = 2
#: The version written into files without the compressed form: their layout is version 1's, so
#: older readers still open them.
PLAIN_VERSION = 1
CHUNK = 1 << 18
_GZIP_LEVEL = 1
COMPRESSION = dict(compression="gzip", compression_opts=_GZIP_LEVEL, shuffle=True)
_POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 2)  # zlib releases the GIL


def _new_pool() -> None:
    """A forked child has none of the parent's pool threads: its writes would wait forever."""
    global _POOL
    _POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 2)


os.register_at_fork(after_in_child=_new_pool)
INT_COLUMNS = ("kind", "flags", "peer", "tag", "comm", "bytes_sent", "bytes_recv", "request",
                "vec_len")
_NS = 1e9


def _shuffle_deflate(chunk: np.ndarray, rows: int, noisy: bool = False,
                     level: int = _GZIP_LEVEL) -> bytes:
    """One chunk through HDF5's shuffle + deflate filters (padded to full chunk size, as HDF5
    stores edge chunks) at ``level``, done here so that chunks compress in parallel threads.
    ``noisy``: numbers that vary at random (measured times), deflated plane by plane
    (:func:`_deflate_planes`)."""
    if len(chunk) < rows:
        chunk = np.concatenate([chunk, np.zeros((rows - len(chunk),) + chunk.shape[1:],
                                                chunk.dtype)])
    b = np.ascontiguousarray(chunk).view(np.uint8).reshape(rows, -1)
    if noisy and b.size >= _PLANES_FROM:
        return _deflate_planes(np.ascontiguousarray(b.T))
    raw = b.T.tobytes() if b.shape[1] > 1 else b.tobytes()
    if noisy:               # (small: a stream per plane would cost more than it saves)
        z = zlib.compressobj(4, zlib.DEFLATED, 15, 9, zlib.Z_FILTERED)
        return z.compress(raw) + z.flush()
    return zlib.compress(raw, level)


#: Noisy chunks of at least this many bytes are deflated plane by plane (each plane's stream
#: costs ~8 bytes; smaller ones: one level-4 ``Z_FILTERED`` stream, 5-7% smaller on measured
#: times than level 1).
_PLANES_FROM = 1 << 14
#: A byte plane's sample: this many contiguous blocks of :data:`_SAMPLE_BLOCK` bytes spread
#: over it (every 8th byte aliased with loops of period 2, 4 or 8: constant planes judged
#: random), the whole plane when they would be half of it or more.
_SAMPLE_BLOCKS = 4
_SAMPLE_BLOCK = 1 << 12
#: Planes whose sample has at least this entropy (bits per byte) are stored: deflate gains
#: nothing on them.
_STORED_BITS = 7.9
#: A plane is deflated with match search (level 4, ``Z_FILTERED``) where that makes its sample
#: this much smaller than run lengths alone (``Z_RLE``, several times as fast): the skewed
#: planes of measured times, and the repeating ones of codes like SNAP (its durations' low
#: plane 16% smaller so).
_MATCH_GAIN = 0.02
#: A zlib stream's header (deflate, 32 KiB window; the level bits only informative).
_ZLIB_HEADER = b"\x78\x01"


def _sample(plane: np.ndarray) -> np.ndarray:
    """:data:`_SAMPLE_BLOCKS` contiguous blocks of ``plane`` spread over it, or all of it where
    they would be half of it or more."""
    if len(plane) < 2 * _SAMPLE_BLOCKS * _SAMPLE_BLOCK:
        return plane
    at = np.linspace(0, len(plane) - _SAMPLE_BLOCK, _SAMPLE_BLOCKS).astype(np.int64)
    return np.concatenate([plane[a:a + _SAMPLE_BLOCK] for a in at.tolist()])


def _plane_bits(sample: np.ndarray) -> float:
    """Order-0 entropy of a byte plane's sample in bits per byte."""
    h = np.bincount(sample, minlength=256)
    h = h[h > 0] / len(sample)
    return float(-(h * np.log2(h)).sum())


#: The coders a plane is tried with: run lengths, match search (level, strategy) ...
_CODERS = ((1, zlib.Z_RLE), (4, zlib.Z_FILTERED))
#: ... the second only where run lengths code the sample in more than one byte of this many
#: (a nearly constant plane: what match search could save is a few bytes).
_FEW_BITS = 32
#: A plane no larger than twice its sample with less entropy than this (bits per byte) is
#: nearly constant: run lengths code it as small as match search, faster.
_CONSTANT_BITS = 0.5


def _deflated(data: np.ndarray, level: int, strategy: int, flush: int) -> bytes:
    """``data`` as a raw deflate stream (no zlib header: :func:`_deflate_planes` joins them)
    ended by ``flush``; its window and hash table no larger than ``data`` needs (no speed
    difference measured on a 66 KB chunk's planes: the planes' trials were what cost)."""
    bits = min(15, max(9, len(data).bit_length()))
    z = zlib.compressobj(level, zlib.DEFLATED, -bits, min(9, bits - 6), strategy)
    return z.compress(data) + z.flush(flush)


def _plane_stream(plane: np.ndarray, flush: int) -> bytes:
    """``plane`` as a raw deflate stream ended by ``flush`` (:func:`_deflate_planes`): stored
    where its sample looks random; a plane larger than twice its sample by run lengths or
    match search, whichever codes the sample smaller (match search by :data:`_MATCH_GAIN` at
    least; not tried where run lengths code it in a byte of :data:`_FEW_BITS` or less); a
    smaller one by run lengths where nearly constant, else by match search (its trials would
    cost as much as its stream: exact files of 16-30 k actions were written 0.76-0.96x as
    fast by process CPU with them)."""
    sample = _sample(plane)
    bits = _plane_bits(sample)
    if bits >= _STORED_BITS:
        return _deflated(plane, 0, zlib.Z_DEFAULT_STRATEGY, flush)
    if len(sample) == len(plane):
        return _deflated(plane, *_CODERS[bits >= _CONSTANT_BITS], flush)
    rle = len(_deflated(sample, *_CODERS[0], zlib.Z_FINISH))
    match = rle * _FEW_BITS > len(sample) and \
        len(_deflated(sample, *_CODERS[1], zlib.Z_FINISH)) < (1 - _MATCH_GAIN) * rle
    return _deflated(plane, *_CODERS[match], flush)


def _deflate_planes(planes: np.ndarray) -> bytes:
    """One zlib stream (any inflater reads it: HDF5's deflate filter) of the shuffled bytes
    ``planes`` (one row per byte plane, at least one), each plane deflated by what it holds
    (:func:`_plane_stream`): a measured time's low bytes are random, its high ones nearly
    constant, the ones between skewed or repeating.  Against one level-4 ``Z_FILTERED``
    stream for the whole chunk, which searched matches in random bytes: figures in
    benchmarks/RESULTS.md (session 20).  Raw deflate streams joined by sync flushes (each
    ends on a byte boundary, its back-references within itself)."""
    out = [_ZLIB_HEADER]
    adler = 1
    last = len(planes) - 1
    for i, plane in enumerate(planes):
        out.append(_plane_stream(plane, zlib.Z_FINISH if i == last else zlib.Z_SYNC_FLUSH))
        adler = zlib.adler32(plane, adler)
    out.append(adler.to_bytes(4, "big"))
    return b"".join(out)


def dataset(group: h5py.Group, name: str, data: np.ndarray, noisy: bool = False,
            deferred: list | None = None, level: int = _GZIP_LEVEL, **attrs) -> h5py.Dataset:
    """A chunked shuffle+gzip dataset; any HDF5 tool reads it with the standard filters.

    Parameters
    ----------
    group : h5py.Group
        Where to create it.
    name : str
        Its name in ``group``.
    data : numpy.ndarray
        Its content (1-D arrays are compressed in threads, see :func:`write_chunks`).
    noisy : bool
        Deflate tuned for numbers that vary at random (measured times).
    deferred : list, optional
        Where to append the writing of a 1-D array's chunks (a callable) instead of writing
        them now: a writer that creates every dataset before writing any chunk leaves no
        unused end of HDF5's 2 KB block for small raw data between two headers (~1.9 KB).
    level : int
        Its deflate level (not noisy).
    **attrs
        Its attributes.

    Returns
    -------
    h5py.Dataset
    """
    data = np.ascontiguousarray(data)
    if data.size == 0 or data.ndim != 1:
        compression = {**COMPRESSION, "compression_opts": level}
        ds = group.create_dataset(name, data=data, **(compression if data.size else {}))
    else:
        ds = _chunked_dataset(group, name, data, level)
        if deferred is None:
            write_chunks(ds, data, 0, noisy)
        else:
            deferred.append(lambda: write_chunks(ds, data, 0, noisy))
    ds.attrs.update(attrs)
    return ds


def _chunked_dataset(group, name: str, data: np.ndarray, level: int) -> h5py.Dataset:
    """An empty 1-D dataset for ``data`` in chunks of up to :data:`CHUNK` rows through the
    shuffle and deflate (``level``) filters, made as h5py's ``create_dataset(shape, dtype,
    chunks, **COMPRESSION)`` makes it (the same property list, no times, the same bytes in
    the file) less its checks and look-ups: 46 us a dataset, against 102."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((min(CHUNK, len(data)),))
    dcpl.set_shuffle()
    dcpl.set_deflate(level)
    dcpl.set_obj_track_times(False)
    tid = _ATTR_TYPES.get(data.dtype)
    if tid is None:
        tid = _ATTR_TYPES[data.dtype] = h5py.h5t.py_create(data.dtype, logical=True)
    return h5py.Dataset(h5py.h5d.create(group.id, name.encode(), tid,
                                        h5py.h5s.create_simple(data.shape), dcpl=dcpl))


def write_chunks(ds: h5py.Dataset, data: np.ndarray, first_row: int = 0,
                 noisy: bool = False) -> None:
    """Write 1-D ``data`` into the chunked shuffle+gzip dataset ``ds`` from ``first_row`` (a
    chunk boundary), its chunks compressed in threads (one alone here: a thread gains it
    nothing, and handing it over cost CPU: NPB CG 2r's exact write's 2 chunks took 2.20 ms
    so, 2.07 here) and written as they are stored.

    Parameters
    ----------
    ds : h5py.Dataset
        A 1-D dataset created with ``COMPRESSION`` (its level: the chunks') and chunks of
        ``rows`` rows.
    data : numpy.ndarray
        Whole chunks of rows (the last one may be short: it is padded as HDF5 pads it).
    first_row : int
        The row of ``ds`` where ``data`` starts.
    noisy : bool
        See :func:`dataset`.
    """
    rows, level = ds.chunks[0], ds.compression_opts
    starts = range(0, len(data), rows)
    blobs = (map if len(starts) < 2 else _POOL.map)(
        lambda lo: _shuffle_deflate(data[lo:lo + rows], rows, noisy, level), starts)
    for lo, blob in zip(starts, blobs):
        ds.id.write_direct_chunk((first_row + lo,), blob)


def smallest_int(a: np.ndarray) -> np.ndarray:
    """Narrow an integer array to the smallest type holding it (kept when none does)."""
    if a.size == 0:
        return a
    t = _smallest_type(int(a.min()), int(a.max()))
    return a.astype(t, copy=False) if t is not None else a


def _encode_times(t: np.ndarray, offsets: np.ndarray, t0: float):
    """ns integers relative to t0, delta-coded within each rank."""
    ns = np.rint((t - t0) * _NS).astype(np.int64)
    d = np.empty_like(ns)
    if len(ns):
        d[0] = ns[0]
        d[1:] = np.diff(ns)
        starts = offsets[:-1][offsets[:-1] < offsets[1:]]
        d[starts] = ns[starts]
    return d


def _decode_times(d: np.ndarray, offsets: np.ndarray, lo: int, t0: float) -> np.ndarray:
    """Undo _encode_times for rows ``lo:lo+len(d)`` (which must start at a rank boundary)."""
    ns = np.empty(len(d), dtype=np.int64)
    inner = offsets[(offsets > lo) & (offsets < lo + len(d))] - lo
    bounds = np.concatenate([[0], inner, [len(d)]]).astype(np.int64)
    for a, b in zip(bounds[:-1], bounds[1:]):
        np.cumsum(d[a:b], dtype=np.int64, out=ns[a:b])
    return ns / _NS + t0


def hdf5_text(text: str) -> str:
    """``text`` as a minitrace file stores it: HDF5 strings end at a NUL, so one inside (a
    damaged source) is U+FFFD, in every form (attributes, the strings table, the pack's)."""
    return text.replace("\0", "\ufffd")


def meta_attrs(meta: dict) -> dict:
    """``meta`` as HDF5 attribute values (lists and dicts as JSON, None left out)."""
    out = {}
    for k, v in meta.items():
        if v is None:
            continue
        v = json.dumps(v) if isinstance(v, (list, dict, tuple)) else v
        out[k] = hdf5_text(v) if isinstance(v, str) else v
    return out


#: HDF5 types of attributes and chunked datasets, made once a process (an object's type is
#: copied into the file): numpy dtype of numbers and booleans, or the byte length of
#: fixed-length UTF-8 text.
_ATTR_TYPES: dict = {}
_SCALAR = h5py.h5s.create(h5py.h5s.SCALAR)


def _text_type(size: int):
    """Fixed-length UTF-8 text of ``size`` bytes, NUL-padded: the type h5py gives
    ``h5py.string_dtype("utf-8", size)``."""
    t = h5py.h5t.C_S1.copy()
    t.set_size(size)
    t.set_strpad(h5py.h5t.STR_NULLPAD)
    t.set_cset(h5py.h5t.CSET_UTF8)
    return t


def new_attrs(obj, attrs: dict, fixed: bool = False) -> None:
    """Write ``attrs`` on ``obj``, a new HDF5 object without attributes, as h5py's
    ``obj.attrs.update`` writes them, less its look-up of an existing attribute of each name,
    its second datatype and a dataspace per attribute (types made once a process: a
    compressed file's ~45 attributes are most of its fixed write).  Numbers, booleans and
    arrays of them; with ``fixed``, text as fixed-length UTF-8 strings, read back as bytes
    (which :func:`read_attrs` and :func:`attr_text` decode: HDF5 keeps variable-length
    strings in a global heap of at least 4 KB a file, a third of a small compressed file);
    anything else goes through h5py's ``attrs``."""
    oid = obj.id
    types = _ATTR_TYPES
    for name, value in attrs.items():
        if fixed and isinstance(value, str):
            raw = value.encode()
            size = max(len(raw), 1)
            a = np.array(raw, f"S{size}")
            tid = types.get(size)
            if tid is None:
                tid = types[size] = _text_type(size)
        elif isinstance(value, (np.ndarray, np.generic, bool, int, float)) and \
                (a := np.asarray(value)).dtype.kind in "biuf":
            tid = types.get(a.dtype)
            if tid is None:
                tid = types[a.dtype] = h5py.h5t.py_create(a.dtype, logical=True)
        else:
            obj.attrs[name] = value
            continue
        space = _SCALAR if a.ndim == 0 else h5py.h5s.create_simple(a.shape)
        attr = h5py.h5a.create(oid, name.encode(), tid, space)
        try:
            attr.write(np.ascontiguousarray(a), tid)
        finally:
            attr.close()


def one_chunk_dataset(group, name: str, size: int, deflated: bytes, level: int) -> None:
    """A uint8 dataset ``name`` of ``size`` bytes in ``group``, in one chunk through HDF5's
    gzip filter at ``level``, as h5py's ``create_dataset(chunks=(size,), compression="gzip",
    compression_opts=level)`` makes it; its chunk given ``deflated`` (``zlib.compress`` at
    ``level``: the filter's own bytes) and written as it is stored, without h5py's dataset
    set-up (~0.1 ms a dataset: a compressed file's pack, ``/provenance``'s XML)."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((max(size, 1),))
    dcpl.set_deflate(level)
    dcpl.set_obj_track_times(False)
    ds = h5py.h5d.create(group.id, name.encode(), h5py.h5t.STD_U8LE,
                         h5py.h5s.create_simple((size,)), dcpl=dcpl)
    if size:                                # (an empty dataset has no chunk)
        ds.write_direct_chunk((0,), deflated)


#: The root attribute of a file of :data:`PACKED_META_VERSION` holding its other root
#: attributes and its ``/provenance``: uint8, UTF-8 JSON ``{"attrs": {name: value},
#: "provenance": {name: value}}`` of the values as attributes would store them (text,
#: numbers, booleans; dicts and lists as JSON text; lstopo's XML as ``lstopo_xml``),
#: deflated (zlib) against ``provenance.PACK_DICTIONARY``.  Each attribute took ~50 bytes of
#: HDF5 header and ``/provenance`` ~1.8 KB more: ~4 KB of a compressed file of 3-30 k
#: actions, which packed deflate to ~0.9 KB (~2.1 KB without the dictionary).
META_ATTR = "packed_meta"
#: The root attributes a file of packed metadata keeps as attributes (what identifies it).
IDENTITY_ATTRS = ("format", "format_version")
_META_GZIP_LEVEL = 9


def packable(value) -> bool:
    """Whether an attribute value goes into packed JSON (text, numbers and booleans; arrays
    stay attributes)."""
    return isinstance(value, (str, bool, int, float, np.bool_, np.integer, np.floating))


def _json_value(value):
    """A numpy scalar as JSON takes it: as the Python value a reader gets back."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} cannot be packed")


def pack_json(values: dict) -> bytes:
    """``values`` (:func:`packable`) as compact UTF-8 JSON."""
    return json.dumps(values, separators=(",", ":"), ensure_ascii=False,
                      default=_json_value).encode()


def _pack_meta(f: h5py.File, attrs: dict, fixed: bool) -> None:
    """Write root ``attrs`` on new file ``f`` packed: :data:`IDENTITY_ATTRS` and values that
    do not pack as attributes, the others and this writer's provenance in :data:`META_ATTR`."""
    kept = {k: v for k, v in attrs.items() if k in IDENTITY_ATTRS or not packable(v)}
    prov, xml = provenance.stored_values()
    if xml:
        prov = {**prov, "lstopo_xml": xml}
    z = zlib.compressobj(_META_GZIP_LEVEL, zdict=provenance.PACK_DICTIONARY)
    blob = z.compress(pack_json({"attrs": {k: v for k, v in attrs.items() if k not in kept},
                                 "provenance": prov})) + z.flush()
    new_attrs(f, {**kept, META_ATTR: np.frombuffer(blob, np.uint8)}, fixed)


def _new_file_attrs(meta: dict, version: int = PLAIN_VERSION) -> dict:
    base = {"format": FORMAT_NAME, "format_version": version, "producer": "minitrace",
            "producer_version": __version__,
            "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    # (a trace read from a file carries that file's identity: this file's is its own)
    base.update({k: v for k, v in meta_attrs(meta).items() if k not in IDENTITY_ATTRS})
    return base


@contextlib.contextmanager
def atomic_file(path, copy_existing: bool = False, libver=None, create=None,
                fixed: bool = False, packed: bool = False):
    """An h5py file written under a temporary name beside ``path`` and renamed over it on
    success (``outputs.replacing_path``: removed on any failure), optionally seeded with a
    copy of the existing file to add a group to it (its packed metadata unpacked:
    :func:`_unpack_meta`); every file written says what wrote it (``/provenance``, or with
    ``packed`` in the root attribute :func:`new_file` packs); ``libver``: h5py's bounds on
    the HDF5 file format of a new file; ``create``: what makes a new file of its (temporary)
    path instead of ``h5py.File``; ``fixed``: text attributes as fixed-length strings
    (:func:`new_attrs`)."""
    path = os.fspath(path)
    with replacing_path(path) as tmp:
        copied = copy_existing and os.path.exists(path)
        if copied:
            check_file(path)
            shutil.copyfile(path, tmp)
            f = h5py.File(tmp, "a")
        else:
            f = h5py.File(tmp, "w", libver=libver) if create is None else create(tmp)
        try:
            if copied:
                _unpack_meta(f, path)
            if not packed:
                provenance.store(f, write=lambda g, attrs: new_attrs(g, attrs, fixed),
                                 dataset=one_chunk_dataset)
            yield f
        except BaseException as e:
            with contextlib.suppress(Exception):
                f.close()
            if copy_existing and isinstance(e, (KeyError, RuntimeError, ValueError)):
                # h5py updating a damaged structure of the copied file
                raise corrupt("HDF5 file", f"cannot be updated ({checked.first_line(e)})",
                              path) from None
            raise
        try:
            f.close()
        except (OSError, RuntimeError) as e:  # HDF5 reports a failed final flush either way
            raise write_error(e, path) from None


@contextlib.contextmanager
def new_file(path, meta: dict | None = None, version: int = PLAIN_VERSION, libver=None,
             create=None, fixed: bool = False, packed: bool = False):
    """A new minitrace file at ``path``, written whole or not at all (:func:`atomic_file`),
    its root saying what it is and what wrote it, with ``meta`` (:func:`meta_attrs`).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write (replaced when the block ends normally).
    meta : dict, optional
        Root attributes (a trace's metadata).
    version : int
        ``COMPRESSED_VERSION``, ``PACKED_META_VERSION`` (``packed``),
        ``SECOND_WINDOW_VERSION`` (context-coded arrays, packed or not) or
        ``SIZE_SITES_VERSION`` (model files, packed or not) for the compressed form, else
        ``PLAIN_VERSION``.
    libver : str or tuple, optional
        h5py's bounds on the HDF5 file format (default: the earliest that holds the file).
    create : callable, optional
        Makes the new file of a path (:func:`atomic_file`).
    fixed : bool
        Text attributes (root, ``/provenance``) as fixed-length strings (:func:`new_attrs`).
    packed : bool
        The root attributes but :data:`IDENTITY_ATTRS` and the provenance packed into
        :data:`META_ATTR` (``version`` at least ``PACKED_META_VERSION``).

    Yields
    ------
    h5py.File
        Open for writing.
    """
    if packed and version < PACKED_META_VERSION:
        raise ValueError(f"packed metadata needs format version {PACKED_META_VERSION}")
    with atomic_file(path, libver=libver, create=create, fixed=fixed, packed=packed) as f:
        attrs = _new_file_attrs(meta or {}, version)
        if packed:
            _pack_meta(f, attrs, fixed)
        else:
            new_attrs(f, attrs, fixed)
        yield f


@contextlib.contextmanager
def updating(path):
    """A locked read-modify-write of the minitrace file ``path`` (created when missing): the
    file as it is, open for writing on a copy under the exclusive lock (:func:`locked`), the
    copy renamed over ``path`` when the block ends normally.  Writers take turns; none loses
    another's update; a reader never sees half a file."""
    with locked(path), atomic_file(path, copy_existing=True) as f:
        if "format" not in f.attrs:
            f.attrs.update(_new_file_attrs({}))
        yield f


#: The signed integer types and their ranges, narrowest first (np.iinfo took ~2 us a call,
#: and a compressed file narrows ~45 arrays).
_INT_RANGES = tuple((np.dtype(t), int(np.iinfo(t).min), int(np.iinfo(t).max))
                    for t in (np.int8, np.int16, np.int32, np.int64))


def _smallest_type(lo: int, hi: int):
    """The smallest signed integer type holding lo..hi (None: none does)."""
    for t, tmin, tmax in _INT_RANGES:
        if tmin <= lo and hi <= tmax:
            return t
    return None


# -- the encodings, decided once for a whole trace --------------------------------------------
# A trace is encoded in three steps so that parts of it written apart (a parallel merge's
# workers, each its ranks) are encoded alike: each part's ``encoding_stats``, the trace-wide
# ``encoding_plan`` of all of them (t0, time and volume encodings), each part's
# ``encode_columns``, then one integer type per column from every part's ``int_ranges``
# (``common_types``).  write_trace does the three steps on one part: the whole trace.

def encoding_stats(a: np.ndarray, meta: dict) -> dict:
    """What the trace-wide encodings need to know of these actions (a few numbers)."""
    ts, te = a["t_start"], a["t_end"]
    timed = bool(np.isfinite(ts).any())
    everywhere = bool(np.isfinite(ts).all() and np.isfinite(te).all())
    out = {"n": len(a), "timed": timed, "timed_everywhere": everywhere,
           "ts_min": float(ts.min()) if everywhere and len(a) else np.inf,
           "te_max": float(te.max()) if everywhere and len(a) else -np.inf,
           "duration_max": float(np.abs(te - ts).max()) if everywhere and len(a) else 0.0}
    quantum = 1e-9 if meta.get("volume_unit") == "seconds" else 1.0
    col = a["volume"]
    q = np.rint(col / quantum)
    out["volume_quanta"] = bool(np.isfinite(col).all() and np.array_equal(q * quantum, col))
    out["volume_max"] = float(np.abs(q).max()) if len(q) and out["volume_quanta"] else 0.0
    return out


def encoding_plan(stats: list[dict], meta: dict) -> dict:
    """The encodings of the whole trace from every part's ``encoding_stats``: ``time`` is None
    (untimed), "float-seconds" or "ns" (with ``t0``); ``quantum`` the volume's, or None."""
    n = sum(s["n"] for s in stats)
    plan = {"time": None, "t0": None, "quantum": None}
    if n and any(s["timed"] for s in stats):
        ts_min = min(s["ts_min"] for s in stats)
        span = max(max(s["te_max"] for s in stats) - ts_min,
                   max(s["duration_max"] for s in stats)) \
            if all(s["timed_everywhere"] for s in stats) else np.inf
        plan["time"] = "ns" if span * _NS < 2 ** 62 else "float-seconds"
        if plan["time"] == "ns":
            plan["t0"] = ts_min
    if all(s["volume_quanta"] for s in stats) and max(s["volume_max"] for s in stats) < 2 ** 62:
        plan["quantum"] = 1e-9 if meta.get("volume_unit") == "seconds" else 1.0
    return plan


def _encode_column(a: np.ndarray, name: str, plan: dict):
    """(on-disk array before narrowing, attrs) for one integer column or ``volume``.  Runs in
    a thread: numpy releases the GIL while copying the strided field out of the records."""
    col = np.ascontiguousarray(a[name])
    if name in INT_COLUMNS:
        return col, {}
    if plan["quantum"] is not None:
        return np.rint(col / plan["quantum"]).astype(np.int64), {"quantum": plan["quantum"]}
    return col, {}


def _encode_time_columns(a: np.ndarray, offsets: np.ndarray, plan: dict) -> dict:
    """{"t_start": (array, attrs), "t_end": ...}: integer nanoseconds since t0 (delta-coded
    per rank, and durations) or float seconds; nothing for an untimed trace."""
    if plan["time"] is None:
        return {}
    ts, te = np.ascontiguousarray(a["t_start"]), np.ascontiguousarray(a["t_end"])
    if plan["time"] == "float-seconds":
        return {"t_start": (ts, {"encoding": "float-seconds"}),
                "t_end": (te, {"encoding": "float-seconds"})}
    return {"t_start": (_encode_times(ts, offsets, plan["t0"]), {"encoding": "ns-delta-per-rank"}),
            "t_end": (np.rint((te - ts) * _NS).astype(np.int64), {"encoding": "ns-duration"})}


def encode_columns(a: np.ndarray, offsets: np.ndarray, plan: dict) -> dict:
    """Every stored column of these actions (``offsets`` from 0: their ranks) encoded as the
    plan says, as (array, attrs); integers still wide (see ``common_types``)."""
    times = _POOL.submit(_encode_time_columns, a, offsets, plan)
    encoded = dict(_POOL.map(lambda name: (name, _encode_column(a, name, plan)),
                             INT_COLUMNS + ("volume",)))
    encoded.update(times.result())
    return encoded


def int_ranges(arrays: dict) -> dict:
    """name -> (min, max) of each non-empty integer array (what ``common_types`` needs)."""
    return {k: (int(v.min()), int(v.max())) for k, v in arrays.items()
            if v.dtype.kind in "iu" and len(v)}


def common_types(ranges: list[dict], arrays: dict) -> dict:
    """One type per integer array of ``arrays`` holding every part's range: the smallest
    integer type (an array no part has values in keeps its type)."""
    out = {}
    for k, v in arrays.items():
        if v.dtype.kind not in "iu":
            continue
        rs = [r[k] for r in ranges if k in r]
        t = _smallest_type(min(r[0] for r in rs), max(r[1] for r in rs)) if rs else None
        out[k] = t or v.dtype
    return out


def kind_index(kind: np.ndarray, offsets: np.ndarray, row_base: int = 0,
               before: np.ndarray | None = None):
    """(per-rank counts [ranks, 256], code -> delta-coded global rows) of these actions
    (global rows from ``row_base``; ``before[code]``: the last global row of that kind
    before them, 0 for none), for /trace/index."""
    kind = kind.astype(np.uint8, copy=False)
    counts = np.stack([np.bincount(kind[lo:hi], minlength=256)
                       for lo, hi in zip(offsets[:-1], offsets[1:])]) \
        if len(offsets) > 1 else np.zeros((0, 256), np.int64)
    total = counts.sum(axis=0)
    present = np.nonzero(total)[0]
    order = np.argsort(kind, kind="stable")
    ends = np.cumsum(total[present])
    rows = {}
    for code, lo, hi in zip(present, np.concatenate([[0], ends[:-1]]), ends):
        r = order[lo:hi].astype(np.int64) + row_base
        rows[int(code)] = np.diff(r, prepend=0 if before is None else before[code])
    return counts, rows


def write_columns(g: h5py.Group, encoded: dict, vectors: np.ndarray, kind_rows: dict,
                  types: dict) -> None:
    """The big datasets of /trace under ``g`` (a trace, or a part of one): the columns, the
    vectors and the kind index's rows, narrowed to ``types``."""
    cols = g.create_group("actions")
    for name, (array, attrs) in encoded.items():
        dataset(cols, name, array.astype(types.get(name, array.dtype), copy=False), **attrs)
    krows = g.require_group("index").create_group("kind_rows")
    for code, d in kind_rows.items():
        dataset(krows, K.NAME.get(code, str(code)),
                 d.astype(types.get(f"kind_rows/{code}", d.dtype), copy=False),
                 encoding="delta")
    dataset(g, "vectors", vectors.astype(types.get("vectors", vectors.dtype), copy=False))


def write_tables(g: h5py.Group, nranks: int, nactions: int, plan: dict, offsets: np.ndarray,
                 counts: np.ndarray, comms: dict, strings: list) -> None:
    """The small parts of /trace under ``g``: attributes, rank offsets, kind counts,
    communicators and strings."""
    g.attrs["nranks"] = nranks
    g.attrs["nactions"] = nactions
    g.attrs["timed"] = plan["time"] is not None
    if plan["t0"] is not None:
        g.attrs["t0"] = plan["t0"]
    idx = g.require_group("index")
    dataset(idx, "rank_offsets", offsets)
    present = np.nonzero(counts.sum(axis=0))[0]
    dataset(idx, "kind_counts", counts[:, present])
    idx.create_dataset("kind_codes", data=present.astype(np.uint8))
    write_comms_strings(g, comms, strings)


def check_volume_unit(meta: dict, path: str) -> dict:
    """``meta`` (a trace's root attributes), refused when its volume unit is unknown."""
    if meta.get("volume_unit") not in VOLUME_UNITS:
        raise MinitraceError(f"unknown volume unit {meta.get('volume_unit')!r}", path)
    return meta


def write_trace(path: str, data: TraceColumns, meta: dict | None = None) -> None:
    """Write ``data`` as a new minitrace file (any bench groups are dropped: a trace file)."""
    a, offsets = data.actions, data.rank_offsets
    m = check_volume_unit({**data.meta, **(meta or {})}, path)
    plan = encoding_plan([encoding_stats(a, m)], m)
    encoded = encode_columns(a, offsets, plan)
    counts, kind_rows = kind_index(a["kind"], offsets)
    vectors = data.vectors.astype(np.int64)
    wide = {**{k: v for k, (v, _) in encoded.items()}, "vectors": vectors,
            **{f"kind_rows/{c}": d for c, d in kind_rows.items()}}
    types = common_types([int_ranges(wide)], wide)
    with new_file(path, m) as f:
        g = f.create_group("trace")
        write_columns(g, encoded, vectors, kind_rows, types)
        write_tables(g, data.nranks, len(a), plan, offsets, counts, data.comms, data.strings)


def comms_arrays(comms: dict) -> dict[str, np.ndarray]:
    """The communicator table (id -> world ranks) as CSR arrays: ids, offsets, members."""
    ids = np.array(sorted(comms), dtype=np.int32)
    members = [np.asarray(comms[i], dtype=np.int32) for i in ids]
    return {"ids": ids,
            "offsets": np.concatenate([[0], np.cumsum([len(x) for x in members])])
            .astype(np.int64),
            "members": np.concatenate(members) if members else np.zeros(0, np.int32)}


def write_comms_strings(g: h5py.Group, comms: dict, strings: list) -> None:
    """``/trace/comms`` (CSR: ids, offsets, members) and ``/trace/strings``, in both forms."""
    cg = g.create_group("comms")
    for name, arr in comms_arrays(comms).items():
        cg.create_dataset(name, data=arr)
    g.create_dataset("strings", data=np.array([hdf5_text(x) for x in strings], dtype=object),
                     dtype=h5py.string_dtype())


@contextlib.contextmanager
def locked(path: str):
    """Hold the exclusive ``flock`` of the side file ``PATH.lock`` (blocking while another
    process holds it), around a read-modify-write of ``path``: writers take turns and none
    loses another's update.  The lock file is never removed (removing it would let two
    processes lock different files)."""
    lock = f"{os.fspath(path)}.lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as e:
        raise MinitraceError(f"cannot create the lock file: {e.strerror}", lock) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def write_bench(path: str, suite: str, columns: dict, attrs: dict | None = None,
                meta: dict | None = None, fresh: bool = False) -> None:
    """Store one benchmark suite's results as ``/bench/<suite>`` (replacing an earlier one),
    creating the file if needed.  ``columns`` maps names to arrays (any shape; str arrays are
    stored as UTF-8); ``attrs`` are the suite's parameters; ``meta`` goes to the file root.
    Processes adding suites to one file at once are serialized (``updating``).  ``fresh``: a
    new file replacing ``path`` whole (the caller holds the lock: a history's rewrite, which
    would otherwise leave HDF5 the dead copy's space at every append)."""
    with (new_file(path) if fresh else updating(path)) as f:
        if meta:
            f.attrs.update(meta_attrs(meta))
        bench = f.require_group("bench")
        if suite in bench:
            del bench[suite]
        g = bench.create_group(suite)
        g.attrs.update(meta_attrs(attrs or {}))
        g.attrs["created"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        for name, arr in columns.items():
            arr = np.asarray(arr)
            if arr.dtype.kind in "UO":
                g.create_dataset(name, data=arr.astype(object), dtype=h5py.string_dtype())
            else:
                dataset(g, name, arr)


def check_appendable(path: str) -> None:
    """Refuse, before any measurement, an output a run will be added to (bench suites,
    calibrations): one in a missing or read-only directory, or an existing file that is not a
    minitrace file."""
    check_output_file(path)
    if os.path.exists(path):
        check_file(path)


def check_file(path: str) -> None:
    """Refuse anything that is not a complete minitrace file of a version we read."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise MinitraceError("no such file", path)
    try:
        with open(path, "rb") as fh:
            magic = fh.read(8)
    except OSError as e:
        raise MinitraceError(f"cannot read: {e.strerror}", path) from None
    if magic != b"\x89HDF\r\n\x1a\n":
        raise MinitraceError("not an HDF5 file (a minitrace file is HDF5)", path)
    check_heaps(path)
    try:
        with h5py.File(path, "r") as f:
            fmt = f.attrs.get("format")
            ver = f.attrs.get("format_version")
    except (OSError, RuntimeError, KeyError, ValueError, TypeError):
        raise MinitraceError("corrupt or truncated HDF5 file", path) from None
    if attr_text(fmt) != FORMAT_NAME:
        raise MinitraceError("HDF5 file but not a minitrace file (no 'format' = 'minitrace')",
                             path)
    if not isinstance(ver, (int, np.integer)) or ver < 1:
        raise _corrupt(f"format_version = {ver!r}", path)
    if ver > FORMAT_VERSION:
        raise MinitraceError(f"written by a newer minitrace (format version {ver}); this one "
                             f"reads up to {FORMAT_VERSION}: upgrade minitrace", path)


def attr_value(v):
    """A stored attribute value as a Python value (text decoded, JSON text parsed)."""
    if isinstance(v, bytes):
        v = v.decode(errors="replace")
    if isinstance(v, str) and v[:1] in "[{":
        try:
            v = json.loads(v)
        except ValueError:
            pass
    elif isinstance(v, np.generic):
        v = v.item()
    return v


def read_attrs(obj) -> dict:
    """HDF5 attributes as Python values (JSON strings decoded); a file's root's with its
    packed ones (:data:`META_ATTR`), all in name order as HDF5 lists them."""
    out = _stored_attrs(obj)
    if isinstance(obj, h5py.File) and _packs_meta(out):
        out = merged_attrs(out, _packed_meta(out, obj.filename)[0], META_ATTR, "root",
                           obj.filename)
    return {k: attr_value(v) for k, v in out.items()}


def _stored_attrs(obj) -> dict:
    """``obj``'s attributes as h5py reads them."""
    try:
        return dict(obj.attrs.items())
    except (OSError, RuntimeError, KeyError, ValueError, TypeError, UnicodeDecodeError) as e:
        raise _corrupt(f"attributes unreadable ({_first_line(e)})", obj.file.filename) \
            from None   # (damaged attribute messages)


def _packs_meta(root: dict) -> bool:
    """Whether root attributes ``root`` (as stored) hold packed metadata: :data:`META_ATTR`
    in a file of a version that has it (an older file's attribute of that name is its own)."""
    v = root.get("format_version")
    return META_ATTR in root and isinstance(v, (int, np.integer)) and \
        v >= PACKED_META_VERSION


def merged_attrs(attrs: dict, packed: dict, holder: str, where: str, path: str) -> dict:
    """Attributes ``attrs`` but ``holder`` (what held ``packed``) with ``packed``, in name
    order; a name in both is corrupt (FORMAT.md: each is in one place)."""
    both = sorted(set(attrs) & set(packed))
    if both:
        raise _corrupt(f"{where} attribute {both[0]} both packed and an attribute", path)
    out = {k: v for k, v in attrs.items() if k != holder}
    out.update(packed)
    return dict(sorted(out.items()))


def unpack_json(raw, what: str, path: str, zdict: bytes | None = None) -> dict:
    """A JSON object of :func:`pack_json` (uint8 bytes; with ``zdict``, deflated against that
    preset dictionary), checked to be one; ``what`` names it in the one-line ``corrupt
    trace`` error."""
    if not isinstance(raw, np.ndarray) or raw.dtype != np.uint8 or raw.ndim != 1:
        raise _corrupt(f"{what} is not bytes", path)
    data = raw.tobytes()
    try:
        if zdict is not None:
            z = zlib.decompressobj(zdict=zdict)
            data = z.decompress(data) + z.flush()
            if not z.eof or z.unused_data:
                raise ValueError("not one whole stream")
        out = json.loads(data.decode())
    except (zlib.error, ValueError):        # (UnicodeDecodeError is a ValueError)
        raise _corrupt(f"{what} is not {'deflated ' if zdict else ''}JSON", path) from None
    if not isinstance(out, dict):
        raise _corrupt(f"{what} is not a JSON object", path)
    return out


def scalars(values, what: str, path: str) -> dict:
    """``values`` checked to be a JSON object of text, numbers and booleans (what attributes
    packed as JSON are; :func:`packable`)."""
    if not isinstance(values, dict) or not all(
            isinstance(v, (str, int, float)) for v in values.values()):
        raise _corrupt(f"{what} is not an object of text, numbers and booleans", path)
    return values


def _packed_meta(root: dict, path: str) -> tuple[dict, dict | None]:
    """(root attributes, provenance with its ``lstopo_xml``) packed in ``root``'s
    :data:`META_ATTR`, as stored, checked."""
    what = f"packed metadata ({META_ATTR})"
    out = unpack_json(root[META_ATTR], what, path, provenance.PACK_DICTIONARY)
    if "attrs" not in out or set(out) - {"attrs", "provenance"}:
        raise _corrupt(f"{what} holds other than attrs and provenance", path)
    attrs = scalars(out["attrs"], f"{what} attrs", path)
    if set(attrs) & set(IDENTITY_ATTRS):
        raise _corrupt(f"{what} holds {sorted(set(attrs) & set(IDENTITY_ATTRS))[0]}", path)
    prov = out.get("provenance")
    return attrs, None if prov is None else scalars(prov, f"{what} provenance", path)


def _unpack_meta(f: h5py.File, path: str) -> None:
    """A copy's packed metadata (:data:`META_ATTR`) as ordinary root attributes, its
    provenance dropped (the copy's writer stores its own): a file updated in place
    (:func:`updating`) keeps its metadata whatever the writer adds."""
    root = _stored_attrs(f)
    if not _packs_meta(root):
        return
    attrs, _ = _packed_meta(root, path)
    merged_attrs(root, attrs, META_ATTR, "root", path)
    del f.attrs[META_ATTR]
    f.attrs.update(attrs)


_TIME_ENCODINGS = {"t_start": ("ns-delta-per-rank", "float-seconds"),
                   "t_end": ("ns-duration", "float-seconds")}
_META_TYPES = {"volume_unit": str, "nranks": int, "complete": (bool, np.bool_, int),
               "aborted": (bool, np.bool_, int), "hosts": list, "rank_to_node": list,
               "missing_ranks": list, "source_messages": dict}
_KNOWN_KIND = np.zeros(256, bool)
_KNOWN_KIND[list(K.NAME)] = True


def _corrupt(what: str, path: str) -> MinitraceError:
    return corrupt("trace", what, path)


def trace_array(g, name: str, path: str, kinds: str = "iu", ndim: int = 1) -> np.ndarray:
    """A whole small dataset (index, communicators), checked for its shape and type."""
    return checked.array(g, name, "trace", path, kinds, ndim)


def _narrowed(raw: np.ndarray, dtype, name: str, path: str) -> np.ndarray:
    """An integer column as ``dtype``, refused when a value does not fit (kind 258 is not
    kind 2, peer 2**32 + 1 is not peer 1)."""
    dtype = np.dtype(dtype)
    if raw.dtype != dtype and raw.size and not np.can_cast(raw.dtype, dtype):
        info = np.iinfo(dtype)
        lo, hi = raw.min(), raw.max()
        if lo < info.min or hi > info.max:
            bad = lo if lo < info.min else hi
            raise _corrupt(f"column {name} holds {int(bad)}, beyond its type ({dtype})", path)
    return raw.astype(dtype, copy=False)


def _check_parts(datasets: list, path: str) -> None:
    """A trace written in parts (virtual datasets, minitrace/parallel/parts.py) is refused
    when a part file is missing or lies outside the trace's directory (checked.py)."""
    for ds in datasets:
        checked.virtual_files(ds, "trace", path)


def check_meta(attrs: dict, path: str) -> None:
    """The file attributes readers use have the types they expect."""
    for k, t in _META_TYPES.items():
        if k in attrs and not isinstance(attrs[k], t):
            raise _corrupt(f"attribute {k} = {attrs[k]!r} is not a {getattr(t, '__name__', t)}",
                           path)
    if "volume_unit" in attrs and attrs["volume_unit"] not in VOLUME_UNITS:
        raise _corrupt(f"unknown volume unit {attrs['volume_unit']!r}", path)
    n = attrs.get("nranks")
    for k, width in (("recorder_seconds", None), ("in_mpi_seconds", 2)):
        if k in attrs and not _seconds_per_rank(attrs[k], n, width):
            raise _corrupt(f"attribute {k} is not {'a pair of' if width else 'one'} finite "
                           f"non-negative number{'s' if width else ''} per rank", path)


def _seconds_per_rank(v, nranks, width: int | None) -> bool:
    """Whether ``v`` holds one finite number >= 0 per rank (``width``: that many per rank,
    the last one > 0: ``in_mpi_seconds``' [CPU, wall])."""
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    shape = (nranks,) if width is None else (nranks, width)
    if not isinstance(v, list) or a.shape != shape or not np.isfinite(a).all() or (a < 0).any():
        return False
    return width is None or bool((a[:, -1] > 0).all())


class HDF5TraceReader:
    """The storage layer's reader of a file's ``/trace``: reads columns of ``/trace`` for a row range, decoding the on-disk encodings.  Every
    structure, attribute and index is checked when the file is opened (a damaged file fails
    there, in one line); data read later is checked as it is decoded."""

    def __init__(self, f: h5py.File, path: str):
        self.path = path
        try:
            self._open(f, path)
        except (OSError, RuntimeError, KeyError, ValueError, TypeError) as e:  # metadata damaged
            raise _corrupt(_first_line(e), path) from None

    def _open(self, f: h5py.File, path: str) -> None:
        if "trace" not in f:
            raise MinitraceError("holds no trace (only benchmark results?)", path)
        check_meta(read_attrs(f), path)
        self.g = g = checked.member(f, "trace", "trace", path, h5py.Group)
        for k in ("actions", "index", "comms"):     # hard links to groups, nothing else
            checked.member(g, k, "trace", path, h5py.Group)
        # Keep datasets open: each open dataset has its own chunk cache, lost when closed.
        actions = g["actions"]
        self.cols = {name: checked.member(actions, name, "trace", path)
                     for name in checked.names(actions, "trace", path)}
        n = g.attrs.get("nactions")
        if not isinstance(n, (int, np.integer)) or n < 0:
            raise _corrupt(f"nactions = {n!r}", path)
        n = int(n)
        for name in INT_COLUMNS + ("volume",) + (("t_start", "t_end") if g.attrs.get("timed")
                                                   else ()):
            ds = self.cols.get(name)
            if not isinstance(ds, h5py.Dataset) or ds.ndim != 1 or \
                    ds.dtype.kind not in ("iu" if name in INT_COLUMNS else "iuf"):
                raise _corrupt(f"column {name} missing or of the wrong type", path)
            if ds.shape[0] != n:
                raise MinitraceError(f"column {name} has {ds.shape[0]} rows, expected {n}: "
                                     "truncated or corrupt", path)
        for name, ok in _TIME_ENCODINGS.items():
            if g.attrs.get("timed") and attr_text(self.cols[name].attrs.get("encoding")) not in ok:
                raise _corrupt(f"unknown encoding of {name}", path)
        q = self.cols["volume"].attrs.get("quantum")
        if q is not None and not (isinstance(q, (float, np.floating)) and np.isfinite(q)
                                  and q > 0):
            raise _corrupt(f"volume quantum {q!r}", path)
        v = checked.member(g, "vectors", "trace", path, required=False)
        if not isinstance(v, h5py.Dataset) or v.ndim != 1 or v.dtype.kind not in "iu":
            raise _corrupt("vector table missing or of the wrong type", path)
        _check_parts([*self.cols.values(), v], path)
        self.offsets = trace_array(g["index"], "rank_offsets", path).astype(np.int64)
        if len(self.offsets) < 1 or self.offsets[0] != 0 or self.offsets[-1] != n or \
                (np.diff(self.offsets) < 0).any():
            raise MinitraceError("rank index does not match the action table: corrupt", path)
        part_ranks.check(self.cols, self.offsets, path)
        if g.attrs.get("nranks", self.nranks) != self.nranks:
            raise _corrupt(f"nranks {g.attrs.get('nranks')!r} but {self.nranks} in the index",
                           path)
        self._vec_rank_base = None
        self.timed = bool(g.attrs.get("timed", False))
        t0 = g.attrs.get("t0", 0.0)
        if not isinstance(t0, (float, int, np.floating, np.integer)) or not np.isfinite(t0):
            raise _corrupt(f"t0 = {t0!r}", path)
        self.t0 = float(t0)

    @property
    def nranks(self) -> int:
        """Size of MPI_COMM_WORLD."""
        return len(self.offsets) - 1

    def columns(self, lo: int, hi: int) -> dict[str, np.ndarray]:
        """Rows lo:hi as contiguous decoded columns (the ACTION_DTYPE field names and dtypes);
        lo must be a rank boundary (times are delta-coded per rank)."""
        out: dict[str, np.ndarray] = {}
        try:
            for name in INT_COLUMNS:
                out[name] = _narrowed(self.cols[name][lo:hi], ACTION_DTYPE[name], name,
                                      self.path)
            vds = self.cols["volume"]
            v = vds[lo:hi]
            q = vds.attrs.get("quantum")
            out["volume"] = v * q if q is not None else v.astype(np.float64, copy=False)
            if self.timed:
                ts, te = self.cols["t_start"], self.cols["t_end"]
                if ts.attrs.get("encoding") == "ns-delta-per-rank":
                    out["t_start"] = _decode_times(ts[lo:hi], self.offsets, lo, self.t0)
                    out["t_end"] = out["t_start"] + te[lo:hi] / _NS
                else:
                    out["t_start"] = ts[lo:hi]
                    out["t_end"] = te[lo:hi]
            else:
                out["t_start"] = np.full(hi - lo, np.nan)
                out["t_end"] = np.full(hi - lo, np.nan)
        except (OSError, RuntimeError, ValueError) as e:
            raise MinitraceError(f"corrupt data in the action table ({_first_line(e)})",
                                 self.path) from None
        if not _KNOWN_KIND[out["kind"]].all():
            raise _corrupt(f"unknown action kind {out['kind'][~_KNOWN_KIND[out['kind']]][0]}",
                           self.path)
        if (out["vec_len"] < 0).any():
            raise _corrupt("negative vector length", self.path)
        checked.finite_columns(out, lo, self.path)
        out["vec_off"] = vec_offsets(out["vec_len"], self._vec_base(lo))
        return out

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Rows lo:hi as an ACTION_DTYPE array (lo must be a rank boundary)."""
        cols = self.columns(lo, hi)
        out = np.empty(hi - lo, dtype=ACTION_DTYPE)
        for name in ACTION_DTYPE.names:
            out[name] = cols[name]
        return out

    def _vec_base(self, lo: int) -> int:
        """Offset of row lo's vector: vectors of earlier ranks, from the per-rank totals."""
        if self._vec_rank_base is None:   # (ranks without actions, the last too, add 0)
            try:
                lens = self.cols["vec_len"][...].astype(np.int64)
            except OSError as e:
                raise _corrupt(f"vec_len unreadable ({_first_line(e)})", self.path) from None
            self._vec_rank_base = np.concatenate([[0], np.cumsum(lens)])[self.offsets]
            if self._vec_rank_base[-1] > self.g["vectors"].shape[0]:
                raise _corrupt("vector lengths beyond the vector table", self.path)
        r = int(np.searchsorted(self.offsets, lo, side="right")) - 1
        return int(self._vec_rank_base[r])

    def kind_rows(self, name: str) -> np.ndarray:
        """Global row numbers of the actions of one kind, from the kind index (checked against
        the index's counts: as many rows as actions of that kind, increasing, in the table)."""
        codes, counts = self._index_counts()
        code = K.CODE[name]
        where = np.nonzero(codes == code)[0]
        g = checked.member(self.g["index"], "kind_rows", "trace", self.path, h5py.Group)
        if not len(where):
            if name in checked.names(g, "trace", self.path):
                raise _corrupt(f"index/kind_rows/{name} for a kind the index does not list",
                               self.path)
            return np.zeros(0, np.int64)
        deltas = trace_array(g, name, self.path)
        expected = int(counts[:, where[0]].sum())
        if len(deltas) != expected or (len(deltas) > 1 and (deltas[1:] <= 0).any()) or \
                (len(deltas) and deltas[0] < 0):
            raise _corrupt(f"index/kind_rows/{name} does not match index/kind_counts "
                           f"({len(deltas)} rows, {expected} counted)", self.path)
        rows = np.cumsum(deltas, dtype=np.int64)
        if len(rows) and rows[-1] >= self.offsets[-1]:
            raise _corrupt(f"index/kind_rows/{name} beyond the action table", self.path)
        return rows

    def _index_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(kind codes, [nranks, kinds] counts) as stored, checked for their shapes."""
        codes = trace_array(self.g["index"], "kind_codes", self.path)
        counts = trace_array(self.g["index"], "kind_counts", self.path, ndim=2)
        if counts.shape != (self.nranks, len(codes)) or (counts < 0).any() or \
                len(np.unique(codes)) != len(codes) or (codes < 0).any() or \
                (codes > 255).any() or not _KNOWN_KIND[codes.astype(np.int64)].all():
            raise _corrupt("index/kind_counts does not match the index", self.path)
        return codes.astype(np.int64), counts.astype(np.int64)

    def kind_counts(self) -> tuple[list[str], np.ndarray]:
        """(kind names present, [nranks, kinds] action counts): the index, cross-checked
        against the kind column (one byte per action to read)."""
        codes, counts = self._index_counts()
        try:
            kind = _narrowed(self.cols["kind"][...], np.uint8, "kind", self.path)
        except (OSError, RuntimeError, ValueError) as e:
            raise _corrupt(f"kind column unreadable ({_first_line(e)})", self.path) from None
        if not _KNOWN_KIND[kind].all():
            raise _corrupt(f"unknown action kind {kind[~_KNOWN_KIND[kind]][0]}", self.path)
        rank = np.repeat(np.arange(self.nranks), np.diff(self.offsets))
        actual = np.bincount(rank * 256 + kind, minlength=self.nranks * 256) \
            .reshape(self.nranks, 256)
        present = np.nonzero(actual.sum(axis=0))[0]
        if not np.array_equal(np.sort(codes), present) or \
                not np.array_equal(actual[:, codes], counts):
            raise _corrupt("index/kind_counts disagrees with the kind column (the index is "
                           "damaged)", self.path)
        return [K.NAME[int(c)] for c in codes], counts

    def vectors(self) -> np.ndarray:
        """The whole per-peer vector side table."""
        return trace_array(self.g, "vectors", self.path).astype(np.int64)

    def vector(self, row: int) -> np.ndarray:
        """The vector of global action ``row``, reading only the lengths before it in its rank
        and the vector's own slice (not the whole side table)."""
        lo = int(self.offsets[np.searchsorted(self.offsets, row, side="right") - 1])
        lens = self.cols["vec_len"][lo:row + 1]
        if lens[-1] <= 0:
            return np.zeros(0, np.int64)
        off = int(vec_offsets(lens, self._vec_base(lo))[-1])
        return self.g["vectors"][off:off + int(lens[-1])].astype(np.int64)

    def comms(self) -> dict[int, np.ndarray]:
        """Communicator id -> world ranks of its members."""
        return read_comms(self.g, self.nranks, self.path)

    def strings(self) -> list[str]:
        """The string table (region names)."""
        return read_strings(self.g, self.path)

    def all(self) -> TraceColumns:
        """The whole trace in memory."""
        a = self.read(0, int(self.offsets[-1]))
        vectors = self.vectors()
        if int(a["vec_len"].sum(dtype=np.int64)) > len(vectors):
            raise _corrupt("vector lengths beyond the vector table", self.path)
        return TraceColumns(a, self.offsets, vectors, self.comms(), self.strings())

    def read_ranks(self, lo: int, hi: int) -> TraceColumns:
        """Ranks lo..hi-1 in memory as a trace of their own (rows and vectors from 0; the
        communicators of the whole trace): a parallel validate worker's share."""
        rlo, rhi = int(self.offsets[lo]), int(self.offsets[hi])
        a = self.read(rlo, rhi)
        base = self._vec_base(rlo) if rhi > rlo else 0
        a["vec_off"] -= base
        n = int(a["vec_len"].sum(dtype=np.int64))
        vectors = self.g["vectors"][base:base + n].astype(np.int64)
        if len(vectors) < n:
            raise _corrupt("vector lengths beyond the vector table", self.path)
        return TraceColumns(a, self.offsets[lo:hi + 1] - rlo, vectors, self.comms(),
                            self.strings())


def read_comms(g: h5py.Group, nranks: int, path: str) -> dict[int, np.ndarray]:
    """Communicator id -> world ranks of its members, from ``g/comms``, checked."""
    c = checked.member(g, "comms", "trace", path, h5py.Group)
    return comms_table(*(trace_array(c, k, path) for k in ("ids", "offsets", "members")),
                       nranks, path)


def comms_table(ids: np.ndarray, offs: np.ndarray, mem: np.ndarray, nranks: int,
                path: str) -> dict[int, np.ndarray]:
    """Communicator id -> world ranks of its members, from the CSR arrays, checked."""
    if len(offs) != len(ids) + 1 or (len(offs) and (offs[0] != 0 or offs[-1] != len(mem)
                                                    or (np.diff(offs) < 0).any())) or \
            len(np.unique(ids)) != len(ids) or (len(ids) and (   # ids as the comm column's
                ids.min() < np.iinfo(ACTION_DTYPE["comm"]).min or
                ids.max() > np.iinfo(ACTION_DTYPE["comm"]).max)) or \
            (len(mem) and (((mem < 0) & (mem != UNDEFINED)).any()
                           or mem.max() >= max(nranks, 1))):
        raise _corrupt("communicator table inconsistent", path)
    return {int(i): mem[offs[j]:offs[j + 1]] for j, i in enumerate(ids)}


def read_strings(g: h5py.Group, path: str) -> list[str]:
    """The string table (region names) of ``g``."""
    return checked.array(g, "strings", "trace", path, "T").tolist()


def attr_text(v) -> str | None:
    """A text attribute as str (bytes decoded); None for anything else."""
    return v.decode(errors="replace") if isinstance(v, bytes) else v if isinstance(v, str) \
        else None


def _first_line(e: Exception) -> str:
    lines = str(e).strip().splitlines()
    return lines[0] if lines else type(e).__name__


#: The types of the provenance records a reader takes apart.
_PROVENANCE_TYPES = {"cpu": dict, "versions": dict, "caches": dict, "environment": dict,
                     "governor": list}


def read_provenance(path: str) -> dict | None:
    """The ``/provenance`` of a minitrace file (checked first) as a dict, None when it has none;
    read checked (``minitrace.checked``: a hard-linked group, its records of their types,
    ``lstopo_xml`` bytes)."""
    check_file(path)
    try:
        with h5py.File(path, "r") as f:
            g = checked.member(f, provenance.GROUP, "provenance", path, h5py.Group,
                               required=False)
            root = _stored_attrs(f)
            packed = _packed_meta(root, path)[1] if _packs_meta(root) else None
            if g is not None and packed is not None:
                raise corrupt("provenance", f"both /{provenance.GROUP} and packed", path)
            if g is None and packed is None:
                return None
            if g is not None:
                out = read_attrs(g)
                xml = checked.array(g, "lstopo_xml", "provenance", path, "iu",
                                    required=False)
                xml = None if xml is None else \
                    xml.astype(np.uint8).tobytes().decode(errors="replace")
            else:           # (as read_attrs reads the group's)
                out = {k: attr_value(v) for k, v in sorted(packed.items())
                       if k != "lstopo_xml"}
                xml = packed.get("lstopo_xml")
                if xml is not None and not isinstance(xml, str):
                    raise corrupt("provenance", "lstopo_xml is not text", path)
            for k, t in _PROVENANCE_TYPES.items():
                if k in out and not isinstance(out[k], t):
                    raise corrupt("provenance", f"{k} is not a {t.__name__}", path)
    except (OSError, RuntimeError) as e:
        raise corrupt("provenance", checked.first_line(e), path) from None
    if xml is not None:
        out["lstopo_xml"] = xml
    return out
