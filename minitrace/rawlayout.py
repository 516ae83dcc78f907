"""The recorder's raw per-rank file layout, written once for the shim (C) and the merge (numpy).

A ``rank-NNNNNN.mtr`` file is a ``HEADER_BYTES`` header page (``HEADER``), then chunks of
``CHUNK_BYTES``, each a row of ``RECORD``-sized slots: slot 0 is the chunk header (``CHUNK``),
then records and their continuation records (kind ``INTERNAL["cont"]``, then ``CONT_WORDS``
int64 values of the vector).  c_shim/generate.py turns these tables into the C structs and
defines of ``c_shim/_generated_rawlayout.h`` when the shim is built; ``Struct.dtype`` gives the
numpy dtypes the merge reads with (C alignment rules, so the two agree field by field, which
tests/test_raw_layout.py checks against the compiler).  The flag bits of a record are the
trace's ``flags`` column, ``FLAG_*`` in kinds.py, copied verbatim by the merge.

Changing anything here changes the file format: bump ``VERSION``.
This module is also run on its own (runpy) at build time: it imports nothing of minitrace.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

MAGIC = b"MTRACE01"     # written last by the shim's start-up: the file is readable from then on
VERSION = 8             # 2: vectors of <= 2 int32 values inlined in the request field;
                        # 3: the header says when the shim stopped recording (disabled);
                        # 4: check words in records and chunk headers (``checks``);
                        # 5: the header counts the recorder's own CPU-clock reads;
                        # 6: a record may say its vector was dropped (VEC_DROPPED);
                        # 7: resolve records of persistent receives, each with its
                        #    activation's number in bytes_sent;
                        # 8: the header counts the failed polls folded away (folded_polls)
HEADER_BYTES = 4096
CHUNK_BYTES = 4 << 20
CONT_WORDS = 9          # int64 vector values in a continuation record (after its kind word)
#: Kinds of the records that are not MPI actions (above every kinds.py code).
INTERNAL = {"resolve": 252, "string": 253, "commdef": 254, "cont": 255}
#: A resolve record's source for a receive that MPI_Cancel cancelled (its status says so):
#: the receive got no message (C: ``MT_CANCELLED_PEER``).
CANCELLED_PEER = -3
#: A record's ``vec_len`` when the shim dropped its vector (C: ``MT_VEC_DROPPED``): it could
#: not allocate room for it, or it was longer than a chunk.  The call itself was made and
#: recorded; no continuation records follow.
VEC_DROPPED = -3
#: Codes of the header's ``volume`` and ``volume_requested``; the names are the measures
#: ``minitrace record --volume`` offers (record.py), in the order it lists them.
VOLUMES = {"auto": 3, "instructions": 2, "cputime": 1, "walltime": 0}
#: Codes of the header's ``clock``.
CLOCKS = {"monotonic": 0, "tsc": 1}
#: cputime volumes: the shim reads the thread CPU clock only across gaps (since the last call,
#: and a call's own duration) longer than this (ns; C: ``MT_GATE_NS``); the prediction's
#: self-check places the recorder's reads by it.
CPU_READ_GATE_NS = 50000

_NUMPY = {"uint8_t": "u1", "uint16_t": "u2", "uint32_t": "u4", "uint64_t": "u8",
          "int32_t": "i4", "int64_t": "i8"}


class Field(NamedTuple):
    name: str
    ctype: str              # a key of _NUMPY, or char (a C string: the last dimension is bytes)
    shape: tuple = ()       # array dimensions
    doc: str = ""

    def numpy(self) -> tuple:
        """(name, numpy type, shape) for ``np.dtype``."""
        if self.ctype == "char":
            return self.name, f"S{self.shape[-1]}", self.shape[:-1]
        return self.name, _NUMPY[self.ctype], self.shape


class Struct(NamedTuple):
    c_name: str
    doc: str
    fields: tuple

    def dtype(self) -> np.dtype:
        """The numpy dtype, laid out as the C compiler lays out the struct."""
        return np.dtype([f.numpy() for f in self.fields], align=True)


RECORD = Struct("mt_rec", "One record: an MPI action, an internal record or a continuation.", (
    Field("kind", "uint8_t", doc="kinds.py code, or INTERNAL"),
    Field("flags", "uint8_t", doc="FLAG_* bits of kinds.py"),
    Field("thread", "uint16_t"),
    Field("vec_len", "int32_t", doc="followed by ceil(vec_len/9) continuation records; -1, "
                                    "-2: the -vec_len int32 values are inlined in request; "
                                    "VEC_DROPPED: none, the vector was dropped"),
    Field("peer", "int32_t"),
    Field("tag", "int32_t"),
    Field("comm", "int32_t"),
    Field("check", "uint32_t", doc="CHECK of the record's slots (this field read as 0) and "
                                   "of its continuation slots"),
    Field("bytes_sent", "int64_t"),
    Field("bytes_recv", "int64_t"),
    Field("pre_volume", "int64_t", doc="counter delta since this thread's previous MPI call "
                                       "ended"),
    Field("volume", "int64_t", doc="counter delta inside the call"),
    Field("request", "int64_t"),
    Field("t_start", "int64_t", doc="raw clock (TSC ticks or ns, see the header's clock)"),
    Field("t_end", "int64_t"),
))

HEADER = Struct("mt_file_hdr", "The file header, at the start of the header page.", (
    Field("magic", "char", (8,), doc="MAGIC once the file is readable"),
    Field("version", "uint32_t"),
    Field("header_bytes", "uint32_t"),
    Field("rank", "uint32_t"),
    Field("size", "uint32_t"),
    Field("chunk_bytes", "uint32_t"),
    Field("rec_bytes", "uint32_t"),
    Field("clock", "uint32_t", doc="CLOCKS"),
    Field("volume", "uint32_t", doc="VOLUMES: the measure actually used"),
    Field("calib", "int64_t", (3, 2), doc="(raw clock, CLOCK_MONOTONIC ns): init start, init "
                                          "end, finalize"),
    Field("finalized", "uint32_t"),
    Field("aborted", "uint32_t"),
    Field("pid", "int32_t"),
    Field("thread_level", "int32_t"),
    Field("volume_requested", "uint32_t", doc="VOLUMES"),
    Field("nthreads", "uint32_t"),
    Field("host", "char", (64,)),
    Field("library", "char", (256,)),
    Field("cmdline", "char", (2048,)),
    Field("disabled", "uint32_t", doc="1: recording stopped early (v3)"),
    Field("disabled_errno", "int32_t"),
    Field("disabled_what", "char", (128,), doc="what failed, e.g. \"cannot grow the raw trace "
                                               "file\""),
    Field("clock_reads", "uint64_t", doc="thread CPU-clock reads by the recorder, all threads "
                                         "(v5)"),
    Field("clock_ticks", "int64_t", doc="raw clock ticks spent in them: the recorder's own "
                                        "time, which an untraced run does not spend (v5)"),
    Field("folded_polls", "uint64_t", doc="failed polls not written, each absorbed by the "
                                          "thread's preceding record, all threads (v8)"),
))

CHUNK = Struct("mt_chunk_hdr", "Slot 0 of a chunk (the size of a record).", (
    Field("count", "uint64_t", doc="records committed after this header slot"),
    Field("thread", "uint32_t"),
    Field("seq", "uint32_t", doc="the chunk's rank among its thread's chunks"),
    Field("calib_raw", "int64_t", doc="a clock calibration point taken when the chunk began"),
    Field("calib_ns", "int64_t"),
    Field("check", "uint64_t", doc="CHECK of the words thread+seq, calib_raw, calib_ns"),
    Field("pad", "uint64_t", (5,)),
))

STRUCTS = (RECORD, HEADER, CHUNK)

#: The check word: the slot sum of a slot's 64-bit words w (little-endian) is
#: sum(w[j] * CHECK[j]) mod 2**64 (odd multipliers, so any change of one word changes it); a
#: record's check is fold(CHECK_SEED + the slot sums of its slot and its continuation slots; the
#: seed makes an all-zero slot fail), a chunk header's fold(sum of its words 1..3 times
#: CHECK[1..3]; an all-zero header, a chunk never used, passes), fold(x) = (x ^ (x >> 32)) mod 2**32.
CHECK = (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
         0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53, 0x94D049BB133111EB, 0xBF58476D1CE4E5B9,
         0x2545F4914F6CDD1D, 0x5851F42D4C957F2D)
CHECK_SEED = 0x6A09E667F3BCC908
CHECK_MASK_WORD = 2     # the record word whose high half is ``check`` itself (read as 0)


def slot_sums(words: np.ndarray) -> np.ndarray:
    """Slot sums (uint64) of ``words``: an (n, 10) uint64 array, one row per slot."""
    return words @ np.array(CHECK, np.uint64)


def fold(x: np.ndarray) -> np.ndarray:
    """The 32-bit check word of 64-bit sums."""
    return ((x ^ (x >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
