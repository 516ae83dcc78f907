"""cffi build of the OTF2 event reader (otf2_events.c) into ``minitrace.converters._otf2_events``.

setup.py names ``ffibuilder`` in ``cffi_modules``, so ``pip install`` (scripts/setup.sh) compiles
it; the otf2 package must be installed first: the module links, by its path, the OTF2 C library
that the package's extension ``_otf2`` carries (and exports).  The callback of every
event type is declared from the bindings' own ctypes signatures
(``_otf2.GlobalEvtReaderCallbacks._GlobalEvtReaderCallback_FP_*``), so the generated code
matches the library it links: types minitrace stores get otf2_events.c's callbacks, every other
one a callback that only counts the event (the bindings count them all when they read).
"""
from __future__ import annotations

import ctypes
import importlib
import sys
from pathlib import Path

from cffi import FFI

HERE = Path(__file__).resolve().parent
#: OTF2 event name -> the storing callback of otf2_events.c (the others only count).
STORED = {"Enter": "mt_enter", "Leave": "mt_leave", "MpiSend": "mt_send", "MpiIsend": "mt_isend",
          "MpiIsendComplete": "mt_isend_complete", "MpiIrecvRequest": "mt_irecv_request",
          "MpiRecv": "mt_recv", "MpiIrecv": "mt_irecv", "MpiRequestTest": "mt_request_test",
          "MpiRequestCancelled": "mt_request_cancelled",
          "MpiCollectiveEnd": "mt_collective_end",
          "NonBlockingCollectiveRequest": "mt_nbc_request",
          "NonBlockingCollectiveComplete": "mt_nbc_complete", "Metric": "mt_metric",
          "IoCreateHandle": "mt_io_create_handle", "IoDestroyHandle": "mt_io_destroy_handle",
          "IoOperationBegin": "mt_io_begin", "IoOperationComplete": "mt_io_complete",
          "IoOperationTest": "mt_io_test", "IoSeek": "mt_io_seek",
          "RmaWinCreate": "mt_rma_win_create", "RmaWinDestroy": "mt_rma_win_destroy",
          "RmaPut": "mt_rma_put", "RmaGet": "mt_rma_get", "RmaAtomic": "mt_rma_atomic",
          "RmaOpCompleteBlocking": "mt_rma_op_complete_blocking",
          "RmaOpCompleteNonBlocking": "mt_rma_op_complete_non_blocking",
          "RmaOpCompleteRemote": "mt_rma_op_complete_remote", "RmaOpTest": "mt_rma_op_test",
          "RmaCollectiveEnd": "mt_rma_collective_end", "RmaSync": "mt_rma_sync",
          "RmaGroupSync": "mt_rma_group_sync", "RmaRequestLock": "mt_rma_request_lock",
          "RmaAcquireLock": "mt_rma_acquire_lock", "RmaTryLock": "mt_rma_try_lock",
          "RmaReleaseLock": "mt_rma_release_lock"}
#: Events the bindings leave without a callback (so do we: they are not counted).
UNSET = {"Unknown"}
_INTS = {1: "int8_t", 2: "int16_t", 4: "int32_t", 8: "int64_t"}


def _otf2_callbacks():
    """The otf2 bindings' module of global event reader callbacks, and the library's path."""
    try:
        otf2_ext = importlib.import_module("_otf2")
    except ImportError as e:
        raise RuntimeError("minitrace: the OTF2 reader is built against the 'otf2' package: "
                           f"install it first (pip install otf2): {e}") from None
    so = next(Path(otf2_ext.__file__).parent.glob("_otf2*.so"))
    return sys.modules["_otf2.GlobalEvtReaderCallbacks"], so


def _c_type(t) -> str:
    """C type of a ctypes argument type (integers by size and sign, pointers as void*)."""
    if isinstance(t, type) and (issubclass(t, ctypes._Pointer) or t is ctypes.c_void_p):
        return "void*"
    code = getattr(t, "_type_", None)
    if code in ("f", "d"):
        return {"f": "float", "d": "double"}[code]
    if code == "?":
        return "_Bool"
    c = _INTS[ctypes.sizeof(t)]
    return c if code.islower() else "u" + c


def generated_callbacks(module) -> str:
    """Typedefs, OTF2 setter declarations, counting callbacks and ``mt_register``."""
    prefix = "_GlobalEvtReaderCallback_FP_"
    names = [n[len(prefix):] for n in vars(module) if n.startswith(prefix)]
    missing = set(STORED) - set(names)
    if missing:
        raise RuntimeError(f"minitrace: this otf2 package has no {sorted(missing)} events")
    out, reg = [], []
    for name in names:
        if name in UNSET:
            continue
        args = [_c_type(t) for t in getattr(module, prefix + name)._argtypes_]
        params = ", ".join(f"{c} x{i}" for i, c in enumerate(args))
        out.append(f"typedef int (*mt_cb_{name})({', '.join(args)});")
        out.append(f"int OTF2_GlobalEvtReaderCallbacks_Set{name}Callback("
                   f"OTF2_GlobalEvtReaderCallbacks*, mt_cb_{name});")
        fn = STORED.get(name)
        if fn is None:
            fn = f"mt_count_{name}"
            out.append(f"static int {fn}({params}) {{ (void)x3; "
                       f"return mt_see(x2, x0, x1) < -1 ? CB_INTERRUPT : CB_SUCCESS; }}")
        reg.append(f"    OTF2_GlobalEvtReaderCallbacks_Set{name}Callback(cb, {fn});")
    out.append("static void mt_register(OTF2_GlobalEvtReaderCallbacks* cb)\n{\n"
               + "\n".join(reg) + "\n}")
    return "\n".join(out) + "\n"


CDEF = """
typedef struct {
    uint64_t time, d, f, e;
    uint32_t rank, a, b, c, type, pad;
} mt_event;
typedef struct {
    mt_event* ev;
    uint64_t n, cap;
    const uint64_t* loc_ref;
    const int32_t* loc_rank;
    uint64_t* loc_seen;
    uint64_t nloc;
    const uint64_t* expected;
    uint64_t* last_time;
    const int32_t* metric_member;
    uint64_t nmetric;
    int32_t stop;
    int32_t stop_rank;
    uint64_t stop_loc;
    int32_t in_local_defs;
} mt_state;
#define MT_ENTER ...
#define MT_LEAVE ...
#define MT_SEND ...
#define MT_ISEND ...
#define MT_ISEND_COMPLETE ...
#define MT_IRECV_REQUEST ...
#define MT_RECV ...
#define MT_IRECV ...
#define MT_REQUEST_TEST ...
#define MT_REQUEST_CANCELLED ...
#define MT_COLLECTIVE_END ...
#define MT_NBC_REQUEST ...
#define MT_NBC_COMPLETE ...
#define MT_METRIC ...
#define MT_IO_CREATE_HANDLE ...
#define MT_IO_DESTROY_HANDLE ...
#define MT_IO_BEGIN ...
#define MT_IO_COMPLETE ...
#define MT_IO_TEST ...
#define MT_IO_SEEK ...
#define MT_ATTRIBUTE ...
#define MT_RMA_WIN_CREATE ...
#define MT_RMA_WIN_DESTROY ...
#define MT_RMA_PUT ...
#define MT_RMA_GET ...
#define MT_RMA_ATOMIC ...
#define MT_RMA_OP_COMPLETE ...
#define MT_RMA_OP_TEST ...
#define MT_RMA_COLLECTIVE_END ...
#define MT_RMA_SYNC ...
#define MT_RMA_GROUP_SYNC ...
#define MT_RMA_LOCK ...
#define MT_RMA_RELEASE_LOCK ...
#define MT_STOP_DAMAGED ...
#define MT_STOP_UNKNOWN_LOCATION ...
#define MT_STOP_MEMORY ...
int mt_read(const char* anchor, mt_state* s, uint64_t* n_read);
int mt_can_open(const char* anchor);
int mt_free(void* p);
const char* OTF2_Error_GetName(int code);
const char* OTF2_Error_GetDescription(int code);
"""


def _source() -> tuple[str, Path]:
    module, so = _otf2_callbacks()
    text = (HERE / "otf2_events.c").read_text()
    marker = '#include "_generated_callbacks.h"'
    assert marker in text
    return text.replace(marker, generated_callbacks(module)), so


ffibuilder = FFI()
ffibuilder.cdef(CDEF)
_src, _so = _source()
# the library is a file named like a Python extension (no lib*.so name): linked by its path
ffibuilder.set_source("minitrace.converters._otf2_events", _src,
                      extra_compile_args=["-O2", "-std=gnu11",
                                          "-Werror=incompatible-pointer-types"],
                      extra_link_args=[str(_so)])

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
