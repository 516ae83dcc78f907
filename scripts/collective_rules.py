"""Regenerate minitrace/data/ompi_collectives.json from SimGrid's transcription of Open MPI's
decision rules (``src/smpi/colls/smpi_openmpi_selector.cpp``: Open MPI 4's
``coll_tuned_decision_fixed.c``).

    python scripts/collective_rules.py SIMGRID_SRC > minitrace/data/ompi_collectives.json

SIMGRID_SRC is an unpacked SimGrid source tree (``pip download --no-binary :all: simgrid==4.1``).
Each ``<kind>__ompi`` selector is an ``int (*funcs[])`` table of SimGrid algorithms and nested
``if (communicator_size < N)`` / ``if (total_dsize < N)`` tests that set ``alg``.  A test of
anything else (the operation's commutativity, zero counts) is taken as false: traces record
builtin, commutative reductions.  The output keeps each selector's tests as a tree
``{"if": [variable, operator, N], "then": [...], "else": [...]}`` of statement lists, an
algorithm being its SimGrid name; ``minitrace.collectives.selection`` walks it.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

_TOKEN = re.compile(r"\s*(//[^\n]*|/\*.*?\*/|[A-Za-z_][A-Za-z_0-9]*|\d+|==|!=|<=|>=|&&|\|\||->|\S)",
                    re.S)
_TEST = re.compile(r"^\(?(communicator_size|total_dsize|per_rank_dsize)\s*(<|==)\s*(\d+)\)?$")


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text) if not t.startswith(("//", "/*"))]


class _Parser:
    def __init__(self, toks: list[str], funcs: list[str]):
        self.t, self.i, self.funcs = toks, 0, funcs

    def take(self, want: str | None = None) -> str:
        tok = self.t[self.i]
        if want is not None and tok != want:
            raise ValueError(f"expected {want!r}, found {tok!r} at token {self.i}")
        self.i += 1
        return tok

    def condition(self) -> list | None:
        self.take("(")
        depth, parts = 1, []
        while depth:
            tok = self.take()
            depth += tok == "("
            depth -= tok == ")"
            if depth:
                parts.append(tok)
        m = _TEST.match(" ".join(parts).replace("( ", "(").replace(" )", ")"))
        return [m.group(1), m.group(2), int(m.group(3))] if m else None

    def statements(self) -> list:
        out = []
        while self.t[self.i] != "}":
            if self.t[self.i] == "if":
                out.append(self.chain())
            elif self.t[self.i : self.i + 2] == ["alg", "="]:
                self.i += 2
                out.append(self.funcs[int(self.take()) - 1])
                self.take(";")
            else:
                raise ValueError(f"unexpected {self.t[self.i]!r}")
        return out

    def block(self) -> list:
        self.take("{")
        body = self.statements()
        self.take("}")
        return body

    def chain(self) -> dict:
        self.take("if")
        cond = self.condition()
        then = self.block()
        other: list = []
        if self.t[self.i] == "else":
            self.take("else")
            other = [self.chain()] if self.t[self.i] == "if" else self.block()
        if cond is None:            # commutativity or zero counts: false
            return {"if": None, "else": other}
        return {"if": cond, "then": then, "else": other}


def selectors(source: str) -> dict:
    """Each ``<kind>__ompi`` function of ``source``: its algorithm table and its tests."""
    out = {}
    for m in re.finditer(r"\nint (\w+)__ompi\(", source):
        kind = m.group(1)
        body = source[m.end():]
        body = body[:body.index("\n}\n")]
        table = re.sub(r"//[^\n]*|/\*.*?\*/", "", body[body.index("funcs[]"):body.index("};")], flags=re.S)
        funcs = re.findall(r"&(\w+?)__(\w+)", table)
        algos = [name for k, name in funcs if k == kind]
        rest = body[body.index("};") + 2:]
        rest = rest[:rest.rindex("return funcs")]
        toks = _tokens(rest)
        start = toks.index("if")
        p = _Parser(toks[start:] + ["}"], algos)
        out[kind] = p.statements()
    return out


def _simplify(stmts: list) -> list:
    """Drop the false (unrecognised) tests: keep their else branch."""
    out = []
    for s in stmts:
        if isinstance(s, dict) and s["if"] is None:
            out += _simplify(s["else"])
        elif isinstance(s, dict):
            out.append({"if": s["if"], "then": _simplify(s["then"]), "else": _simplify(s["else"])})
        else:
            out.append(s)
    return out


def main(argv: list[str]) -> int:
    src = Path(argv[1]) / "src/smpi/colls/smpi_openmpi_selector.cpp"
    rules = {k: _simplify(v) for k, v in selectors(src.read_text()).items()}
    json.dump({"source": "SimGrid 4.1 src/smpi/colls/smpi_openmpi_selector.cpp "
                         "(Open MPI 4 coll_tuned_decision_fixed.c)", "rules": rules},
              sys.stdout, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
