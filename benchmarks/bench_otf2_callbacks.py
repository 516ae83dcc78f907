"""Could OTF2 be read faster through the OTF2 C library's own callbacks?  Measures, on the
~1 M-event archive of bench_convert.py, the events/s of: the C library's global event reader
with C callbacks on Enter/Leave (compiled here with cffi, declaring the few OTF2 functions it
uses and linking against the otf2 package's extension, which exports them), its per-location
readers one after the other, the otf2 bindings' Python event loop, and read_otf2.  Needs a C
compiler.  Run: python benchmarks/bench_otf2_callbacks.py [--events N]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

import _otf2
import otf2
from cffi import FFI

sys.path.insert(0, str(Path(__file__).parent))
from bench_convert import EVENTS_PER_ITERATION, loop_trace  # noqa: E402

from minitrace.converters.otf2 import read_otf2, write_otf2  # noqa: E402

_API = """
typedef struct OTF2_Reader_struct OTF2_Reader;
typedef struct OTF2_GlobalEvtReader_struct OTF2_GlobalEvtReader;
typedef struct OTF2_EvtReader_struct OTF2_EvtReader;
OTF2_Reader* OTF2_Reader_Open(const char* anchor);
int OTF2_Reader_Close(OTF2_Reader*);
int OTF2_Reader_SetSerialCollectiveCallbacks(OTF2_Reader*);
int OTF2_Reader_SelectLocation(OTF2_Reader*, uint64_t);
int OTF2_Reader_OpenEvtFiles(OTF2_Reader*);
int OTF2_Reader_CloseEvtFiles(OTF2_Reader*);
OTF2_EvtReader* OTF2_Reader_GetEvtReader(OTF2_Reader*, uint64_t);
OTF2_GlobalEvtReader* OTF2_Reader_GetGlobalEvtReader(OTF2_Reader*);
int OTF2_Reader_ReadAllLocalEvents(OTF2_Reader*, OTF2_EvtReader*, uint64_t*);
int count_enter_leave(OTF2_Reader* r, OTF2_GlobalEvtReader* g, uint64_t* out);
"""
_SOURCE = r"""
#include <stdint.h>
typedef struct OTF2_GlobalEvtReaderCallbacks_struct OTF2_GlobalEvtReaderCallbacks;
typedef int (*region_cb)(uint64_t, uint64_t, void*, void*, uint32_t);
OTF2_GlobalEvtReaderCallbacks* OTF2_GlobalEvtReaderCallbacks_New(void);
int OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(OTF2_GlobalEvtReaderCallbacks*, region_cb);
int OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(OTF2_GlobalEvtReaderCallbacks*, region_cb);
int OTF2_Reader_RegisterGlobalEvtCallbacks(OTF2_Reader*, OTF2_GlobalEvtReader*,
                                           OTF2_GlobalEvtReaderCallbacks*, void*);
int OTF2_Reader_ReadAllGlobalEvents(OTF2_Reader*, OTF2_GlobalEvtReader*, uint64_t*);
static int on_region(uint64_t loc, uint64_t t, void* user, void* attrs, uint32_t region)
{ ++*(uint64_t*)user; return 0; }
int count_enter_leave(OTF2_Reader* r, OTF2_GlobalEvtReader* g, uint64_t* out) {
    OTF2_GlobalEvtReaderCallbacks* cb = OTF2_GlobalEvtReaderCallbacks_New();
    OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(cb, on_region);
    OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(cb, on_region);
    out[1] = 0;
    OTF2_Reader_RegisterGlobalEvtCallbacks(r, g, cb, &out[1]);
    return OTF2_Reader_ReadAllGlobalEvents(r, g, &out[0]);
}
"""


def build(folder: str):
    """The cffi module (compiled in ``folder``) calling the OTF2 C library."""
    so = next(Path(_otf2.__file__).parent.glob("_otf2*.so"))
    ffi = FFI()
    ffi.cdef(_API)
    ffi.set_source("_otf2_callbacks", _API + _SOURCE,
                   extra_link_args=[str(so), f"-Wl,-rpath,{so.parent}"])
    path = ffi.compile(tmpdir=folder)
    spec = importlib.util.spec_from_file_location("_otf2_callbacks", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.ffi, mod.lib


def c_read(ffi, lib, anchor, locs, global_reader: bool) -> tuple[int, int]:
    """(events read, Enter/Leave callbacks) of the C library's global or per-location reader."""
    r = lib.OTF2_Reader_Open(os.fsencode(anchor))
    lib.OTF2_Reader_SetSerialCollectiveCallbacks(r)
    for loc in locs:
        lib.OTF2_Reader_SelectLocation(r, loc)
    lib.OTF2_Reader_OpenEvtFiles(r)
    readers = [lib.OTF2_Reader_GetEvtReader(r, loc) for loc in locs]
    out = ffi.new("uint64_t[2]")
    if global_reader:
        lib.count_enter_leave(r, lib.OTF2_Reader_GetGlobalEvtReader(r), out)
        n = int(out[0])
    else:
        n = 0
        for er in readers:
            lib.OTF2_Reader_ReadAllLocalEvents(r, er, out)
            n += int(out[0])
    lib.OTF2_Reader_CloseEvtFiles(r)
    lib.OTF2_Reader_Close(r)
    return n, int(out[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--ranks", type=int, default=4)
    args = ap.parse_args()
    data = loop_trace(args.ranks, max(1, args.events // (EVENTS_PER_ITERATION * args.ranks)))
    with tempfile.TemporaryDirectory() as d:
        ffi, lib = build(d)
        write_otf2(data, Path(d) / "a")
        anchor = Path(d) / "a" / "traces.otf2"
        with otf2.reader.open(str(anchor)) as tr:
            locs = [loc._ref for loc in tr.definitions.locations]
        best: dict[str, float] = {}
        for _ in range(3):
            for name, glob in (("C library, global reader, C callbacks on Enter/Leave", True),
                               ("C library, per-location readers", False)):
                t = time.perf_counter()
                n, calls = c_read(ffi, lib, anchor, locs, glob)
                best[name] = min(best.get(name, 1e9), time.perf_counter() - t)
                if glob:
                    regions = calls
        t = time.perf_counter()
        with otf2.reader.open(str(anchor)) as tr:
            k = sum(1 for _ in tr.events)
        best["otf2 bindings' Python event loop"] = time.perf_counter() - t
        t = time.perf_counter()
        read_otf2(anchor)
        best["read_otf2"] = time.perf_counter() - t
    assert k == n
    print(f"{n:,} OTF2 events ({regions:,} Enter/Leave), {args.ranks} locations")
    for name, dt in best.items():
        print(f"{name}: {dt:.3f} s, {n / dt:,.0f} events/s")


if __name__ == "__main__":
    main()
