"""The layer rules of docs/architecture.md, checked on the source.

The layer table is read from the document itself, so the page and the check are one
fact. Every import in torchneuron/ (lazy ones inside functions included) must point to
the importer's own layer or a lower one.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "torchneuron"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
# A module over this many lines must say in its docstring why it is long.
LONG_FILE_LINES = 500
LONG_FILE_MARKER = "Why this file is long:"

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


def imported_top_levels(path: Path) -> list[tuple[int, str]]:
    """(line, top-level torchneuron module) for every torchneuron import in ``path``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                absolute = ".".join(base + ([node.module] if node.module else []))
            else:
                absolute = node.module or ""
            names = [(absolute, alias.name) for alias in node.names]
        else:
            continue
        for absolute, imported in names:
            parts = absolute.split(".")
            if parts[0] != "torchneuron":
                continue
            if len(parts) > 1:
                top = parts[1]
            elif imported is not None and _is_submodule(imported):
                top = imported  # from torchneuron import golden
            else:
                top = "__init__"  # the package facade itself
            found.append((node.lineno, top))
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


def test_long_files_say_why():
    unexplained = []
    for path in _source_files():
        text = path.read_text()
        lines = text.count("\n")
        if lines <= LONG_FILE_LINES:
            continue
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if LONG_FILE_MARKER not in docstring:
            unexplained.append(f"{path.relative_to(ROOT)} ({lines} lines)")
    assert not unexplained, (
        f"over {LONG_FILE_LINES} lines without '{LONG_FILE_MARKER}' in the docstring: "
        + ", ".join(unexplained)
    )
