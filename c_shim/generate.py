"""Generate the shim's C from Python sources of truth (in the spirit of LLNL's `wrap`).

``generate()`` returns the PMPI wrappers of c_shim/mpi.spec: one per spec line, its MPI-4
big-count ``_c`` twin when the prototype uses COUNT/DISP, and the non-blocking and MPI-4
persistent (``_init``) twins of a collective.  ``translation_unit()`` puts the kind codes (minitrace/kinds.py) before the runtime
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
KINDS = HERE.parent / "minitrace" / "kinds.py"
RAWLAYOUT = HERE.parent / "minitrace" / "rawlayout.py"
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
               "MT_CONT_WORDS": layout["CONT_WORDS"]}
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
    return "\n".join(wrapper_source(w) for w in wrappers)


#: The hand-written C before the wrappers: the runtime, then the state of particular calls
#: with their recipes (matched probes' messages, topologies' neighbours, tables of windows and
#: files).
RUNTIME = ("shim_clock.c", "shim_reqmap.c", "shim_runtime.c", "shim_message.c", "shim_topo.c",
           "shim_handles.c", "shim_rma.c", "shim_io.c")


def translation_unit() -> str:
    """The whole shim as one C translation unit (kinds, runtime, wrappers)."""
    return (kind_defines() + "".join(f'#include "{f}"\n' for f in RUNTIME)
            + "\n/* ---- generated from mpi.spec ---- */\n" + generate())


if __name__ == "__main__":
    print(translation_unit())
