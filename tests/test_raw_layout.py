"""The raw file layout is written once (minitrace/rawlayout.py): the C header generated from it
for the shim must lay out every struct as the numpy dtypes the merge reads with, field by field.
A real compiler says where each field is."""
from __future__ import annotations

import runpy
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from minitrace import kinds as K
from minitrace import merge
from minitrace import rawlayout as L
from tests.support.mpiutil import tool

GENERATE = Path(__file__).resolve().parents[1] / "c_shim" / "generate.py"


def _cc() -> str:
    """The environment's mpicc (what builds the shim), else the system's cc."""
    try:
        return tool("mpicc")
    except FileNotFoundError:
        cc = shutil.which("cc")
        if not cc:
            raise
        return cc


def _element(struct: str, name: str, dt: np.dtype) -> str:
    """C expression of one element of a field (``((T *)0)->calib[0][0]``), never evaluated."""
    return f"((({struct} *)0)->{name}" + "[0]" * len(dt.shape) + ")"


def _layout_program(struct: str, dtype: np.dtype) -> str:
    """printf of sizeof, then per field: offset, size, signedness (-1 for char strings)."""
    lines = [f'    printf("sizeof %zu\\n", sizeof({struct}));']
    for name in dtype.names:
        dt = dtype.fields[name][0]
        el = _element(struct, name, dt)
        signed = "-1" if dt.base.kind == "S" else f"(int)((__typeof__({el}))-1 < 0)"
        lines.append(f'    printf("{name} %zu %zu %d\\n", offsetof({struct}, {name}), '
                     f'sizeof((({struct} *)0)->{name}), {signed});')
    return "\n".join(lines)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Output of a C program that includes the generated header and prints its layout."""
    d = tmp_path_factory.mktemp("rawlayout")
    (d / "_generated_rawlayout.h").write_text(runpy.run_path(str(GENERATE))["raw_layout_header"]())
    body = "\n".join(f'    printf("struct {s.c_name}\\n");\n{_layout_program(s.c_name, s.dtype())}'
                     for s in L.STRUCTS)
    src = d / "layout.c"
    src.write_text("#include <stddef.h>\n#include <stdio.h>\n#include \"_generated_rawlayout.h\"\n"
                   "int main(void) {\n" + body + "\n"
                   '    printf("defines %d %s %d %d %d %d %d %d\\n", MT_RAW_VERSION, MT_MAGIC, '
                   "MT_HEADER_BYTES, MT_CHUNK_BYTES, MT_CONT_WORDS, MT_INTERNAL_CONT, "
                   "MT_VOLUME_INSTRUCTIONS, MT_PARTITIONED);\n    return 0;\n}\n")
    exe = d / "layout"
    p = subprocess.run([_cc(), "-std=gnu11", "-Wall", "-Werror", "-I", str(d), "-o", str(exe),
                        str(src)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True,
                         timeout=300).stdout
    structs, struct = {}, None
    for line in out.splitlines():
        word, *rest = line.split()
        if word == "struct":
            struct = structs.setdefault(rest[0], {})
        elif word == "defines":
            structs["defines"] = rest
        else:
            struct[word] = tuple(int(x) for x in rest)
    return structs


@pytest.mark.parametrize("struct", L.STRUCTS, ids=lambda s: s.c_name)
def test_every_field_where_numpy_reads_it(compiled, struct):
    dtype = struct.dtype()
    c = compiled[struct.c_name]
    assert c.pop("sizeof") == (dtype.itemsize,)
    assert list(c) == list(dtype.names)            # same fields, same order
    for name in dtype.names:
        dt, offset = dtype.fields[name][:2]
        signed = -1 if dt.base.kind == "S" else int(dt.base.kind == "i")
        assert c[name] == (offset, dt.itemsize, signed), name


def test_merge_reads_with_the_layout_dtypes():
    assert merge.RAW_DTYPE == L.RECORD.dtype() and merge.RAW_DTYPE.itemsize == 80
    assert merge.HEADER_DTYPE == L.HEADER.dtype()
    assert merge.CHUNK_DTYPE == L.CHUNK.dtype() and merge.CHUNK_DTYPE.itemsize == 80
    assert L.HEADER.dtype().itemsize <= L.HEADER_BYTES


def test_defines_are_the_python_constants(compiled):
    assert compiled["defines"] == [str(v) for v in (
        L.VERSION, L.MAGIC.decode(), L.HEADER_BYTES, L.CHUNK_BYTES, L.CONT_WORDS,
        L.INTERNAL["cont"], L.VOLUMES["instructions"], K.FLAG_PARTITIONED)]
