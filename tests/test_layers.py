"""The layer rules of docs/architecture.md, checked on the source.

The layer table is read from the document itself, so the page and the check are one
fact. Every import in torchneuron/ (lazy ones inside functions included) must point to
the importer's own layer or a lower one; no file may import itself through other files
(an import circle); no file may be over MAX_FILE_LINES lines.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import deque
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "torchneuron"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# A file longer than this is split; there is no exception to ask for.
MAX_FILE_LINES = 600

_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|")


def layer_table() -> dict[str, tuple[int, str]]:
    """Top-level module name -> (layer number, layer name), from docs/architecture.md."""
    table: dict[str, tuple[int, str]] = {}
    for line in ARCHITECTURE.read_text().splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        number, name, modules = int(match[1]), match[2], match[3]
        for module in modules.replace("\\_", "_").split(","):
            module = module.strip()
            assert module not in table, f"{module} is in two layers of {ARCHITECTURE}"
            table[module] = (number, name)
    return table


def _top_level(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0].removesuffix(".py")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_submodule(name: str) -> bool:
    return (PACKAGE / f"{name}.py").exists() or (PACKAGE / name / "__init__.py").exists()


def _imports(path: Path) -> list[tuple[int, str, str | None]]:
    """(line, module, name) for every name an import in ``path`` brings in, lazy ones
    inside functions included: ``import a.b`` gives ``(line, "a.b", None)``, ``from m
    import n`` gives ``(line, "m", "n")`` with a relative ``m`` made absolute."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name, None) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                absolute = ".".join(base + ([node.module] if node.module else []))
            else:
                absolute = node.module or ""
            found.extend((node.lineno, absolute, alias.name) for alias in node.names)
    return found


def imported_top_levels(path: Path) -> list[tuple[int, str]]:
    """(line, top-level torchneuron module) for every torchneuron import in ``path``."""
    found = []
    for line, absolute, imported in _imports(path):
        parts = absolute.split(".")
        if parts[0] != "torchneuron":
            continue
        if len(parts) > 1:
            top = parts[1]
        elif imported is not None and _is_submodule(imported):
            top = imported  # from torchneuron import golden
        else:
            top = "__init__"  # the package facade itself
        found.append((line, top))
    return found


def _source_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_belongs_to_a_layer():
    table = layer_table()
    assert len({number for number, _ in table.values()}) >= 10, table
    missing = sorted({_top_level(p) for p in _source_files()} - set(table))
    assert not missing, f"add these to the layer table of {ARCHITECTURE.name}: {missing}"


def test_imports_point_only_downward():
    table = layer_table()
    violations = []
    for path in _source_files():
        own_number, own_name = table[_top_level(path)]
        for line, top in imported_top_levels(path):
            number, name = table[top]
            if number > own_number:
                violations.append(
                    f"{path.relative_to(ROOT)}:{line}: {own_name} (layer {own_number}) "
                    f"imports torchneuron.{top} ({name}, layer {number})"
                )
    assert not violations, "upward imports:\n" + "\n".join(violations)


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    # The checker itself: a lazy upward import inside a function is found.
    fake_root = tmp_path
    package = fake_root / "torchneuron"
    (package / "neff").mkdir(parents=True)
    (package / "compiler").mkdir()
    for folder in (package, package / "neff", package / "compiler"):
        (folder / "__init__.py").write_text("")
    source = package / "neff" / "reader.py"
    source.write_text("def f():\n    from torchneuron.compiler import pipeline\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", fake_root)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert imported_top_levels(source) == [(2, "compiler")]


# Compiled extensions (setup.py's ext_modules): leaves, with no Python file to follow.
NATIVE_MODULES = frozenset({"torchneuron.device._C"})


def _module_file(module: str) -> Path | None:
    """The file of a dotted torchneuron module name, or None if there is no such module."""
    base = ROOT.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_files(path: Path) -> dict[Path, int]:
    """Each torchneuron file that ``path`` imports -> the line of its first import.

    ``from torchneuron.pkg import name`` imports the submodule ``pkg/name.py`` when there
    is one, else ``pkg/__init__.py``; ``import torchneuron.a.b`` imports ``a/b.py``. The
    parent packages an import also runs are left out: Python finds them already in
    sys.modules while they run, and counting them would join every file to the facade.
    """
    found: dict[Path, int] = {}
    for line, absolute, imported in _imports(path):
        target = absolute
        if imported is not None:
            named = f"{absolute}.{imported}"
            if named in NATIVE_MODULES:
                continue
            if _module_file(named) is not None:
                target = named
        if target.split(".")[0] != "torchneuron":
            continue
        file = _module_file(target)
        if file is not None and file != path:
            found.setdefault(file, line)
    return found


def _strongly_connected(graph: dict[Path, dict[Path, int]]) -> list[list[Path]]:
    """Tarjan's components of more than one file, iteratively (no recursion limit)."""
    index: dict[Path, int] = {}
    low: dict[Path, int] = {}
    stack: list[Path] = []
    on_stack: set[Path] = set()
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, {})))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def _cycle_through(start: Path, component: list[Path], graph) -> list[Path]:
    """The shortest import path from ``start`` back to itself inside ``component``."""
    members = set(component)
    previous: dict[Path, Path] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for successor in sorted(graph[node]):
            if successor == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [start, *reversed(path[:-1]), start]
            if successor in members and successor not in previous:
                previous[successor] = node
                queue.append(successor)
    raise AssertionError(f"{start} is in a component but on no cycle")


def import_circles() -> list[str]:
    """Each import circle among torchneuron's files, as ``a.py:line -> b.py:line -> a.py``."""
    graph = {path: imported_files(path) for path in _source_files()}
    reports = []
    for component in _strongly_connected(graph):
        cycle = _cycle_through(component[0], component, graph)
        steps = [
            f"{a.relative_to(ROOT)}:{graph[a][b]}" for a, b in zip(cycle, cycle[1:], strict=False)
        ]
        report = " -> ".join([*steps, str(cycle[-1].relative_to(ROOT))])
        rest = [str(p.relative_to(ROOT)) for p in component if p not in cycle]
        if rest:
            report += f" (the same circle also holds {', '.join(rest)})"
        reports.append(report)
    return reports


def test_no_import_circles():
    circles = import_circles()
    assert not circles, "import circles between files:\n" + "\n".join(circles)


def test_the_check_sees_an_import_circle(tmp_path, monkeypatch):
    # A package facade importing its submodule, which imports a name from the facade
    # lazily, is a circle; so is a three-file ring through `from . import`.
    package = tmp_path / "torchneuron"
    (package / "pkg").mkdir(parents=True)
    (package / "ring").mkdir()
    (package / "__init__.py").write_text("")
    (package / "pkg" / "__init__.py").write_text("from torchneuron.pkg.a import A\n")
    (package / "pkg" / "a.py").write_text("def f():\n    from torchneuron.pkg import B\n")
    (package / "ring" / "__init__.py").write_text("")
    (package / "ring" / "x.py").write_text("from . import y\n")
    (package / "ring" / "y.py").write_text("import torchneuron.ring.z\n")
    (package / "ring" / "z.py").write_text("from .x import name\n")
    (package / "ring" / "free.py").write_text("from torchneuron.ring import x\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert import_circles() == [
        "torchneuron/pkg/__init__.py:1 -> torchneuron/pkg/a.py:2 -> torchneuron/pkg/__init__.py",
        "torchneuron/ring/x.py:1 -> torchneuron/ring/y.py:1 -> torchneuron/ring/z.py:1"
        " -> torchneuron/ring/x.py",
    ]


def long_files() -> list[str]:
    """``path (N lines)`` for each file of torchneuron/ over MAX_FILE_LINES lines."""
    found = []
    for path in _source_files():
        lines = len(path.read_text().splitlines())
        if lines > MAX_FILE_LINES:
            found.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    return found


def test_no_file_is_over_the_line_limit():
    found = long_files()
    assert not found, f"over {MAX_FILE_LINES} lines, split them: " + ", ".join(found)


def test_the_check_sees_a_long_file(tmp_path, monkeypatch):
    # A docstring explaining the length is no longer an exception.
    package = tmp_path / "torchneuron"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "short.py").write_text("x = 1\n" * MAX_FILE_LINES)
    body = '"""Why this file is long: tables."""\n' + "x = 1\n" * MAX_FILE_LINES
    (package / "long.py").write_text(body)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert long_files() == [f"torchneuron/long.py ({MAX_FILE_LINES + 1} lines)"]
