"""Generate the shim's C from Python sources of truth (in the spirit of LLNL's `wrap`).

``generate()`` returns the PMPI wrappers of c_shim/mpi.spec: one per spec line, its MPI-4
big-count ``_c`` twin when the prototype uses COUNT/DISP, the non-blocking and MPI-4
persistent (``_init``) twins of a collective, and the Fortran twin of each (``fortran_source``:
the ``mpif.h``/``use mpi`` entry points, and Open MPI's ``ompi_*_f`` that its ``use mpi_f08``
calls), which calls the library's Fortran ``pmpi_*_`` and runs the same recipes on the C
handles ``MPI_*_f2c`` gives.  ``translation_unit()`` puts the kind codes (minitrace/kinds.py) before the runtime
(``RUNTIME``) and the wrappers.  ``raw_layout_header()`` is ``_generated_rawlayout.h``, which shim_runtime.h
includes: the raw file's structs and constants (minitrace/rawlayout.py) and the flag bits
(kinds.py), written by ``write_raw_layout_header()`` when the shim is built.  Run as a script
to print the translation unit.
"""
from __future__ import annotations

import re
import runpy
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPEC = HERE / "mpi.spec"
#: the package's sources: beside c_shim/ in a checkout, around it once installed (minitrace/c_shim)
PACKAGE = HERE.parent / "minitrace" if (HERE.parent / "minitrace").is_dir() else HERE.parent
KINDS = PACKAGE / "kinds.py"
RAWLAYOUT = PACKAGE / "rawlayout.py"
RAW_LAYOUT_HEADER = HERE / "_generated_rawlayout.h"

_PROTO = re.compile(r"^(MPI_\w+)\((.*)\)$")
_PARAM_NAME = re.compile(r"(\w+)(\[\])?$")


@dataclass
class Wrapper:
    kind: str
    name: str
    params: list[str]          # C declarations, COUNT/DISP not yet substituted
    post: str
    pre: str = ""
    guard: str = ""


def parse(text: str) -> list[Wrapper]:
    """Spec lines -> wrappers (including the generated non-blocking twins)."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 3:
            raise ValueError(f"{SPEC}:{lineno}: expected 'kind | prototype | recipe'")
        kinds, proto, post, *extra = fields
        m = _PROTO.match(proto)
        if not m:
            raise ValueError(f"{SPEC}:{lineno}: bad prototype {proto!r}")
        name, params = m.group(1), [p.strip() for p in m.group(2).split(",") if p.strip()]
        opts = {}
        for e in extra:
            key, _, val = e.partition(":")
            if key.strip() not in ("pre", "if"):
                raise ValueError(f"{SPEC}:{lineno}: unknown field {e!r}")
            opts[key.strip()] = val.strip()
        kind, ikind, pkind = (kinds.split("/") + ["", ""])[:3]
        guard = opts.get("if", "")
        out.append(Wrapper(kind, name, params, post, opts.get("pre", ""), guard))
        if ikind:
            iname = "MPI_I" + name[4:].lower()
            out.append(Wrapper(ikind, iname, params + ["MPI_Request *request"],
                               post + "; MT_IREQ(request)", opts.get("pre", ""), guard))
        if pkind:       # MPI-4 persistent collective: an inactive request, started later
            out.append(Wrapper(pkind, name + "_init",
                               params + ["MPI_Info info", "MPI_Request *request"],
                               post + "; MT_PINIT(request)", opts.get("pre", ""),
                               f"({guard}) && MPI_VERSION >= 4" if guard else "MPI_VERSION >= 4"))
    return out


def _arg_names(params: list[str]) -> list[str]:
    return [_PARAM_NAME.search(p).group(1) for p in params]


def _emit(w: Wrapper, name: str, params: list[str]) -> str:
    args = ", ".join(_arg_names(params))
    pre = f"    {w.pre};\n" if w.pre else ""
    return (f"int {name}({', '.join(params)})\n{{\n"
            f"    mt_thread *T = mt_enter();\n"
            f"    if (!T) return P{name}({args});\n"
            f"    mt_rec R;\n"
            f"    const mt_comm *CI = NULL;\n"
            f"    (void)CI;\n"
            f"{pre}"
            f"    int rc = P{name}({args});\n"
            f"    mt_leave(T, &R, MT_K_{w.kind.upper()});\n"
            f"    {w.post};\n"
            f"    mt_emit(T, &R);\n"
            f"    return rc;\n}}\n")


def _subst(params: list[str], count: str, disp: str) -> list[str]:
    return [re.sub(r"\bDISP\b", disp, re.sub(r"\bCOUNT\b", count, p)) for p in params]


def wrapper_source(w: Wrapper) -> str:
    code = _emit(w, w.name, _subst(w.params, "int", "int"))
    if any(re.search(r"\b(COUNT|DISP)\b", p) for p in w.params):
        code += ("#if MT_BIGCOUNT\n" + _emit(w, w.name + "_c", _subst(w.params, "MPI_Count",
                                                                       "MPI_Aint"))
                 + "#endif\n")
    if w.guard:
        code = f"#if {w.guard}\n{code}#endif\n"
    return code


# ---- Fortran twins ----------------------------------------------------------------------
# A Fortran binding passes everything by reference: INTEGERs (MPI_Fint), handles (MPI_Fint, to
# convert with MPI_X_f2c), statuses (MPI_Fint arrays, MPI_Status_f2c), LOGICALs, 1-based
# indices, and strings with their hidden lengths (size_t, after every argument).  The twin
# calls the library's own Fortran entry ``pmpi_x_`` with the caller's arguments (so the library
# handles its sentinels) and gives the recipes C values under the C parameter names: before
# the call those the pre recipe uses, after it those the post recipe uses.
_F2C = {"MPI_Comm": "Comm", "MPI_Datatype": "Type", "MPI_Op": "Op", "MPI_Info": "Info",
        "MPI_Group": "Group", "MPI_Win": "Win", "MPI_File": "File",
        "MPI_Errhandler": "Errhandler", "MPI_Request": "Request", "MPI_Message": "Message"}
_F_INT = {"int", "const int", "MT_PREADY_LIST_CONST int"}
_F_WIDE = {"MPI_Aint", "MPI_Offset", "MPI_Count", "const MPI_Aint"}


def _split(param: str) -> tuple[str, str, bool]:
    """'const int counts[]' -> ('const int', 'counts', True)."""
    m = _PARAM_NAME.search(param)
    return param[:m.start()].strip(), m.group(1), bool(m.group(2))


def _uses(text: str, name: str) -> bool:
    return re.search(rf"\b{name}\b", text) is not None


#: How the recipes' C values come from each binding's arguments (shim_fortran.c): "f" is
#: mpif.h and ``use mpi`` (INTEGER statuses), "f08" MPICH's ``use mpi_f08`` (whose choice
#: buffers come as array descriptors, whose statuses have the C layout, whose ierror may be
#: absent).  Open MPI's mpi_f08 calls its mpif.h functions (ompi_send_f), the "f" twins.
_BINDINGS = {"f": ("MPI_F_STATUS_IGNORE", "MPI_F_STATUSES_IGNORE", "MT_F_STATUS_SIZE"),
             "f08": ("MPI_F08_STATUS_IGNORE", "MPI_F08_STATUSES_IGNORE", "MT_F08_STATUS_SIZE")}


def _is_buffer(ctype: str, name: str) -> bool:
    return ctype.endswith("*") and "void" in ctype and name != "baseptr"


def _fortran_param(ctype: str, name: str, array: bool, pre: str, post: str, count: str,
                   b: str = "f"):
    """(Fortran declaration, C before the call, C after it, hidden length) for one parameter
    of binding ``b``; None when the twin cannot be made (arrays of handles or of strings)."""
    f, fp = f"f_{name}", ctype.replace("const ", "")
    before = after = ""
    if ctype.endswith("*") and "void" in ctype:                     # a buffer
        decl = f"void *{f}"
        if _uses(pre + post, name):
            before = f"const void *{name} = mt_{b}_buf({f});"
        return decl, before, after, ""
    if ctype == "const char *":
        return f"char *{f}", "", "", f"size_t {f}_len"
    if ctype == "MPI_Status *" or (fp == "MPI_Status" and array):
        if not _uses(post, name):
            return f"MPI_Fint *{f}", "", "", ""
        one, many, size = _BINDINGS[b]
        if not array:       # one status the caller ignores: the twin's own, on its stack
            before = (f"MPI_Fint {f}_own[{size}]; "
                      f"if ((void *){f} == (void *){one}) {f} = {f}_own;")
            after = f"MPI_Status {name}_c, *{name} = mt_{b}_status({f}, &{name}_c);"
            return f"MPI_Fint *{f}", before, after, ""
        n = f"*f_{count}"   # statuses the caller ignores: the twin's, if it has room (else none)
        before = (f"if ((void *){f} == (void *){many}) {f} = mt_f_own_statuses(T, {f}, "
                  f"sizeof(MPI_Fint) * {size} * (size_t)({n} > 0 ? {n} : 1));")
        after = (f"MPI_Status *{name} = (void *){f} == (void *){many} ? NULL : "
                 f"mt_{b}_statuses(T, {f}, {n});")
        return f"MPI_Fint *{f}", before, after, ""
    if fp.rstrip(" *") in _F2C and (ctype.endswith("*") or array):  # out, in-out, arrays
        h = fp.rstrip(" *")
        if array:
            if h != "MPI_Request":
                return None
            before = f"MPI_Request *{name} = mt_f_requests(T, {f}, *f_{count});"
            return f"MPI_Fint *{f}", before, "", ""
        if h == "MPI_Request":     # the caller's variable itself where MPI allows (MPICH)
            decl, again = f"MT_F_REQUEST({name}, {f});", f"MT_F_REQUEST_AGAIN({name}, {f});"
        else:                      # a C copy, converted again after the call
            conv = f"PMPI_{_F2C[h]}_f2c(*{f})"
            decl, again = f"{h} {name}_v = {conv}, *{name} = &{name}_v;", f"{name}_v = {conv};"
        if _uses(pre, name):
            before, after = decl, again if _uses(post, name) else ""
        elif _uses(post, name):
            after = decl
        return f"MPI_Fint *{f}", before, after, ""
    if fp in _F2C:                                                   # an input handle
        line = f"{fp} {name} = PMPI_{_F2C[fp]}_f2c(*{f});"
        return f"MPI_Fint *{f}", line if _uses(pre, name) else "", \
            line if _uses(post, name) and not _uses(pre, name) else "", ""
    if ctype in _F_INT or ctype in _F_WIDE or fp in _F_WIDE:
        t = "MPI_Fint" if ctype in _F_INT else fp
        if array:
            if name == "array_of_indices":                           # 1-based in Fortran
                return f"{t} *{f}", "", f"int *{name} = mt_f_indices(T, {f}, *outcount);", ""
            line = f"const {t} *{name} = {f};"
        else:
            line = f"{fp} {name} = *{f};"
        return f"{t} *{f}", line if _uses(pre, name) else "", \
            line if _uses(post, name) and not _uses(pre, name) else "", ""
    if ctype == "int *":
        conv = {"flag": f"*{f} != 0",                                 # a LOGICAL
                "index": f"*{f} == MPI_UNDEFINED ? MPI_UNDEFINED : *{f} - 1"}.get(name)
        line = (f"int {name}_v = {conv}, *{name} = &{name}_v;" if conv
                else f"int *{name} = {f};")
        return f"MPI_Fint *{f}", "", line if _uses(post, name) else "", ""
    return None


def fortran_source(w: Wrapper, b: str = "f") -> str:
    """The twin of ``w`` for binding ``b`` (_BINDINGS) with its exported names, or "" when it
    has none."""
    params = [_split(p) for p in _subst(w.params, "int", "int")]
    pre = re.sub(r"MT_STATUS\(\w+\)|MT_STATUSES_AFTER_KEEP\([^)]*\)", "", w.pre).strip("; ")
    decls, befores, afters, hidden, args = [], [], [], [], []
    for i, (ctype, name, array) in enumerate(params):
        count = params[i - 1][1] if i else ""
        if array and "statuses" in name:      # statuses come after requests: the same count
            count = next(n for t, n, a in params if n in ("count", "incount"))
        got = _fortran_param(ctype, name, array, pre, w.post, count, b)
        if got is None:
            return ""
        decl, before, after, hid = got
        decls.append(decl)
        args.append(decl.rsplit(" ", 1)[1].lstrip("*"))
        befores += [before] if before else []
        afters += [after] if after else []
        if hid:
            hidden.append(hid)
    sig = ", ".join(decls + ["MPI_Fint *ierr"] + hidden)
    call = ", ".join(args + ["ierr"] + [h.rsplit(" ", 1)[1] for h in hidden])
    low, fn = w.name.lower(), f"mt_{b}_" + w.name[4:].lower()
    if b == "f":
        target, names = f"p{low}_", f"MT_F_NAMES({fn}, {low}, {w.name.upper()}, {w.name}, {low[4:]})"
    else:   # MPICH: mpi_send_f08ts_ (a choice buffer) calls pmpir_send_f08ts_
        ts = "ts" if any(_is_buffer(t, n) for t, n, _ in params) else ""
        target, names = f"pmpir_{low[4:]}_f08{ts}_", f"MT_F_ALIAS({fn}, {low}_f08{ts}_)"
    code = (f"extern void {target}({sig}) __attribute__((weak));\n"
            f"static void {fn}({sig})\n{{\n"
            f"    mt_thread *T = mt_enter();\n"
            f"    if (!T) {{ {target}({call}); return; }}\n"
            f"    mt_rec R;\n    const mt_comm *CI = NULL;\n    (void)CI;\n"
            + "".join(f"    {x}\n" for x in befores)
            + (f"    {pre};\n" if pre else "")
            + f"    {target}({call});\n"
            f"    mt_leave(T, &R, MT_K_{w.kind.upper()});\n"
            f"    int rc = ierr ? *ierr : MPI_SUCCESS;\n    (void)rc;\n"
            + "".join(f"    {a}\n" for a in afters)
            + f"    {w.post};\n    mt_emit(T, &R);\n}}\n{names}\n")
    guard = " && ".join(g for g in ("MT_FORTRAN", w.guard and f"({w.guard})",
                                     "defined(MPICH_NUMVERSION)" if b == "f08" else "") if g)
    return f"#if {guard}\n{code}#endif\n"


def kind_defines() -> str:
    kinds = runpy.run_path(str(KINDS))["KINDS"]
    return "".join(f"#define MT_K_{name.upper()} {code}\n" for code, name, _ in kinds)


def _c_field(f) -> str:
    dims = "".join(f"[{d}]" for d in f.shape)
    doc = f"  /* {f.doc} */" if f.doc else ""
    return f"    {f.ctype} {f.name}{dims};{doc}\n"


def raw_layout_header() -> str:
    """C text of the raw layout: defines, then one typedef per struct with its size checked
    against the numpy dtype the merge reads it with."""
    layout = runpy.run_path(str(RAWLAYOUT))
    kinds = runpy.run_path(str(KINDS))
    defines = {"MT_RAW_VERSION": layout["VERSION"],
               "MT_MAGIC": '"' + layout["MAGIC"].decode() + '"',
               "MT_HEADER_BYTES": layout["HEADER_BYTES"],
               "MT_CHUNK_BYTES": layout["CHUNK_BYTES"],
               "MT_CONT_WORDS": layout["CONT_WORDS"],
               "MT_GATE_NS": layout["CPU_READ_GATE_NS"],
               "MT_CANCELLED_PEER": layout["CANCELLED_PEER"],
               "MT_VEC_DROPPED": layout["VEC_DROPPED"]}
    for table, prefix in (("INTERNAL", "MT_INTERNAL_"), ("VOLUMES", "MT_VOLUME_"),
                          ("CLOCKS", "MT_CLOCK_")):
        defines.update({prefix + name.upper(): code for name, code in layout[table].items()})
    defines.update({"MT_" + name[5:]: bit for name, bit in kinds.items()
                    if name.startswith("FLAG_")})
    defines["MT_REC_WORDS"] = layout["RECORD"].dtype().itemsize // 8
    defines["MT_CHECK_SEED"] = f"0x{layout['CHECK_SEED']:016X}ull"
    out = ["/* Generated by c_shim/generate.py from minitrace/rawlayout.py and the FLAG_* bits "
           "of minitrace/kinds.py: do not edit. */\n"
           "#ifndef MINITRACE_GENERATED_RAWLAYOUT_H\n#define MINITRACE_GENERATED_RAWLAYOUT_H\n"
           "#include <stdint.h>\n\n"]
    out += [f"#define {name} {value}\n" for name, value in defines.items()]
    out.append("/* check-word multipliers (rawlayout.CHECK) */\n"
               "static const uint64_t mt_check_mult[] = {" + ", ".join(f"0x{m:016X}ull" for m in layout["CHECK"]) + "};\n")
    for st in layout["STRUCTS"]:
        size = st.dtype().itemsize
        out.append(f"\n/* {st.doc} */\ntypedef struct {{\n"
                   + "".join(_c_field(f) for f in st.fields)
                   + f"}} {st.c_name};\n_Static_assert(sizeof({st.c_name}) == {size}, "
                   f"\"{st.c_name}: {size} bytes in minitrace/rawlayout.py\");\n")
    out.append("\n#endif\n")
    return "".join(out)


def write_raw_layout_header(path: Path = RAW_LAYOUT_HEADER) -> None:
    """Write the header, leaving an unchanged file untouched (no needless rebuilds)."""
    text = raw_layout_header()
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def generate(spec_text: str | None = None) -> str:
    wrappers = parse(spec_text if spec_text is not None else SPEC.read_text())
    known = {name for _, name, _ in runpy.run_path(str(KINDS))["KINDS"]}
    unknown = sorted({w.kind for w in wrappers} - known)
    if unknown:
        raise ValueError(f"{SPEC}: kinds not in minitrace/kinds.py: {', '.join(unknown)}")
    return "\n".join(wrapper_source(w) + fortran_source(w) + fortran_source(w, "f08")
                     for w in wrappers)


#: The hand-written C before the wrappers: the runtime, then the state of particular calls
#: with their recipes (matched probes' messages, topologies' neighbours, tables of windows and
#: files), and what the Fortran twins share (the sentinels, statuses, their exported names).
RUNTIME = ("shim_alloc.c", "shim_clock.c", "shim_reqmap.c", "shim_runtime.c", "shim_message.c",
           "shim_topo.c", "shim_handles.c", "shim_rma.c", "shim_io.c", "shim_fortran.c")


def translation_unit() -> str:
    """The whole shim as one C translation unit (kinds, runtime, wrappers)."""
    return (kind_defines() + "".join(f'#include "{f}"\n' for f in RUNTIME)
            + "\n/* ---- generated from mpi.spec ---- */\n" + generate())


if __name__ == "__main__":
    print(translation_unit())
