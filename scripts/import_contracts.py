"""An import-linter contract type the stock ones lack: no module uses a private name (``_x``) of
another package (``from minitrace.storage import _x``, ``storage._x``).  A private name of a
module belongs to its package (a sub-package's modules share them); the root package's own
modules are each a layer of their own, so theirs stay inside the module.  A private module
(``_shim``) belongs to the package that holds it.  Configured in pyproject.toml, run by
scripts/lint_imports.py."""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from importlinter import Contract, ContractCheck, fields, output


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


class PrivateNamesContract(Contract):
    """Every use of another package's ``_private`` name is a broken contract."""
    type_name = "private_names"
    root = fields.StringField()

    def check(self, graph, verbose: bool) -> ContractCheck:
        base = Path(importlib.util.find_spec(self.root).origin).parent.parent
        modules = set(graph.modules)
        uses = []
        for module in sorted(modules):
            path = base.joinpath(*module.split("."))
            is_pkg = (path / "__init__.py").exists()
            path = path / "__init__.py" if is_pkg else path.with_suffix(".py")
            if not path.exists():
                continue
            package = module if is_pkg else module.rpartition(".")[0]
            for line, target, name in self._names(ast.parse(path.read_text()), package,
                                                  modules):
                if not self._owner_contains(target, name, modules, module):
                    uses.append(f"{module}:{line} uses {target}.{name}")
        return ContractCheck(kept=not uses, metadata={"uses": uses})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for use in check.metadata["uses"]:
            output.print_error(use, bold=False)

    def _owner_contains(self, target: str, name: str, modules: set, importer: str) -> bool:
        """Whether ``importer`` lies in the owner of ``target.name``."""
        parent = target.rpartition(".")[0]
        if f"{target}.{name}" in modules or any(m.startswith(target + ".") for m in modules):
            owner = target          # a private module, or a name of a package's __init__
        else:
            owner = target if parent == self.root else parent
        return importer == owner or importer.startswith(owner + ".")

    def _names(self, tree: ast.AST, package: str, modules: set):
        """(line, module, private name) of every use of a private name of a module of the
        root package: ``from M import _x`` and ``M._x`` through a name bound to module M."""
        bound: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    parts = parts[:len(parts) - (node.level - 1)]
                    target = ".".join(parts + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] != self.root:
                    continue
                for a in node.names:
                    if f"{target}.{a.name}" in modules:
                        bound[a.asname or a.name] = f"{target}.{a.name}"
                    if _private(a.name):
                        yield node.lineno, target, a.name
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.split(".")[0] == self.root and a.asname:
                        bound[a.asname] = a.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and \
                    isinstance(node.value, ast.Name) and node.value.id in bound:
                yield node.lineno, bound[node.value.id], node.attr
