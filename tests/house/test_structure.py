"""The house's structure: no module over 600 lines, no function over 80 lines outside the machines, no
import cycles among the project's own modules.

The project's modules are the Python files under mqconform/ (its symbolic links to the top-level
folders not followed), reference_model/, adapters/, reports/ and spec/, named as they import
(``adapters/nats/adapter.py`` is ``mqconform.adapters.nats.adapter``).

- A module counts its lines; a function (or method) from its ``def`` line to its last line. The
  machines are exempt from the function bound (a machine's rule reads as one step of the suite): the
  modules under mqconform/conformance/exploring/machines/ and every ``*_machine.py``.
- Imports count wherever they stand: at module level and inside functions (a function's import runs
  at its first call, a cycle all the same), but not under ``if TYPE_CHECKING:`` (never run: an
  annotation only). ``from package import name`` is an edge to the submodule ``package.name`` when
  there is one, else to the package. Importing a submodule also runs its parents' ``__init__``, but
  that implicit edge is not counted: a package that imports its own submodules for its namespace is
  no cycle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("mqconform", "reference_model", "adapters", "reports", "spec")
#: the top-level folders mqconform/ links to (imported as mqconform.<folder>)
LINKED = frozenset(PACKAGES) - {"mqconform"}
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Module name -> file, for every module of the project."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            if any(part.startswith(".") for part in path.relative_to(root).parts):
                continue
            found[_name(path.relative_to(root))] = path
    return found


def _name(relative: Path) -> str:
    parts = list(relative.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return _canonical(".".join(parts))


def _canonical(name: str) -> str:
    head = name.split(".")[0]
    return f"mqconform.{name}" if head in LINKED else name


def _is_machine(relative: Path) -> bool:
    return relative.name.endswith("_machine.py") or relative.parts[:4] == ("mqconform", "conformance",
                                                                          "exploring", "machines")


def long_modules(root: Path = ROOT) -> Iterator[str]:
    for path in module_files(root).values():
        lines = len(path.read_text().splitlines())
        if lines > MAX_MODULE_LINES:
            yield f"{path.relative_to(root)}: {lines} lines"


def long_functions(root: Path = ROOT) -> Iterator[str]:
    for path in module_files(root).values():
        relative = path.relative_to(root)
        if _is_machine(relative):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    yield f"{relative}:{node.lineno} {node.name}: {lines} lines"


def _run_time_imports(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of the module except those under ``if TYPE_CHECKING:``."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(inner) for stmt in node.body for inner in ast.walk(stmt))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped:
            yield node


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the project's modules it imports (see the module docstring)."""
    files = module_files(root)

    def known(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _run_time_imports(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                edges.update(t for alias in node.names if (t := known(_canonical(alias.name))))
                continue
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = _canonical(node.module or "")
            for alias in node.names:
                target = f"{source}.{alias.name}" if f"{source}.{alias.name}" in files else known(source)
                if target:
                    edges.add(target)
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        # iterative depth-first search: (node, iterator over its edges)
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, ())))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_over_600_lines() -> None:
    long = list(long_modules())
    assert not long, "modules over 600 lines:\n" + "\n".join(long)


def test_no_function_over_80_lines_outside_the_machines() -> None:
    long = list(long_functions())
    assert not long, "functions over 80 lines:\n" + "\n".join(long)


def test_no_import_cycles() -> None:
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """A cycle through a function's import, a long module and a long function are found; a
    TYPE_CHECKING import and a machine's long rule are not counted."""
    pkg = tmp_path / "adapters" / "demo"
    pkg.mkdir(parents=True)
    (tmp_path / "adapters" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import B\n")
    (pkg / "b.py").write_text("B = 1\n\ndef late() -> None:\n    from .a import B\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import B\n")
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (pkg / "long.py").write_text("def f() -> None:\n" + body + "\n" * MAX_MODULE_LINES)
    (pkg / "long_machine.py").write_text("def rule() -> None:\n" + body)
    for package in PACKAGES:
        (tmp_path / package).mkdir(exist_ok=True)
    assert cycles(import_graph(tmp_path)) == [["mqconform.adapters.demo.a", "mqconform.adapters.demo.b"]]
    assert [line.split(":")[0] for line in long_modules(tmp_path)] == ["adapters/demo/long.py"]
    assert [line.split(" ")[1] for line in long_functions(tmp_path)] == ["f:"]


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
