"""Pass base class, the registry of passes by name, and pipeline-string parsing.

A pipeline is a comma-separated list of pass names, each optionally followed
by options in braces, as MLIR writes them::

    legalize-to-stablehlo,fold-constants{max-folded-elements=1024},cse

Options of our passes are the dataclass fields of the pass class, spelled
with dashes; options of wrapped upstream passes are forwarded to MLIR as
written.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import ClassVar

from torch_mlir import ir

from torchneuron.passes.context import PassContext
from torchneuron.passes.errors import PassError


@dataclass(frozen=True)
class Pass:
    """A rewrite of a module, run by the PassManager.

    Subclasses are frozen dataclasses (``@dataclass(frozen=True)``): they set ``name``
    (the pipeline name; its file is the name with underscores), declare options as
    dataclass fields (fixed once the pass is built) and implement ``run``,
    which rewrites the module in place and records rewrites with
    ``ctx.count(pattern)``.
    """

    name: ClassVar[str] = ""

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        raise NotImplementedError(f"pass '{self.name}' does not implement run()")

    @classmethod
    def from_options(cls, options: str) -> Pass:
        """An instance configured by the ``key=value key=value`` text of a pipeline entry."""
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, object] = {}
        for item in options.split():
            key, sep, raw = item.partition("=")
            field_name = key.replace("-", "_")
            if not sep or field_name not in fields:
                known = ", ".join(name.replace("_", "-") for name in fields) or "none"
                raise PassError(f"pass '{cls.name}': unknown option '{item}' (options: {known})")
            values[field_name] = _parse_option(cls.name, key, raw, hints[field_name])
        return cls(**values)

    def spec(self) -> str:
        """This pass as a pipeline entry: its name plus every option differing from the default."""
        changed = [
            f"{f.name.replace('_', '-')}={_format_option(getattr(self, f.name))}"
            for f in dataclasses.fields(self)
            if getattr(self, f.name) != f.default
        ]
        return f"{self.name}{{{' '.join(changed)}}}" if changed else self.name


def _parse_option(pass_name: str, key: str, raw: str, kind: type) -> object:
    try:
        if kind is bool:
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ValueError(raw)
            return raw.lower() in ("true", "1")
        return kind(raw)
    except ValueError:
        raise PassError(
            f"pass '{pass_name}': option '{key}' expects {kind.__name__}, got '{raw}'"
        ) from None


def _format_option(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


_REGISTRY: dict[str, type[Pass]] = {}


def register_pass(pass_class: type[Pass]) -> type[Pass]:
    """Class decorator adding a pass to the registry under its ``name``; names are unique."""
    name = getattr(pass_class, "name", "")
    if not name or not isinstance(name, str):
        raise PassError(f"{pass_class.__qualname__} has no 'name'; a pass needs one to register")
    if name in _REGISTRY:
        raise PassError(
            f"a pass named '{name}' is already registered ({_REGISTRY[name].__qualname__}); "
            f"cannot register {pass_class.__qualname__} under the same name"
        )
    _REGISTRY[name] = pass_class
    return pass_class


def unregister_pass(name: str) -> None:
    """Remove a pass from the registry (tests that register throwaway passes use this)."""
    _REGISTRY.pop(name, None)


def get_pass(name: str) -> type[Pass]:
    """The pass class registered as ``name``; call it (with options) to get a pass."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise PassError(
            f"unknown pass '{name}'; known passes: {', '.join(list_passes())}"
        ) from None


def list_passes() -> list[str]:
    """Names of all registered passes, sorted."""
    return sorted(_REGISTRY)


def split_pipeline(pipeline: str) -> list[tuple[str, str]]:
    """``"a,b{x=1}"`` -> ``[("a", ""), ("b", "x=1")]``; PassError on malformed text."""
    entries: list[tuple[str, str]] = []
    depth = 0
    current = ""
    for char in pipeline + ",":
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                raise PassError(f"pipeline '{pipeline}': unbalanced '}}'")
        if char == "," and depth == 0:
            entries.append(_split_entry(pipeline, current.strip(), len(entries)))
            current = ""
        else:
            current += char
    if depth != 0:
        raise PassError(f"pipeline '{pipeline}': unbalanced '{{'")
    return entries


def _split_entry(pipeline: str, entry: str, position: int) -> tuple[str, str]:
    if not entry:
        raise PassError(f"pipeline '{pipeline}': empty pass name at position {position}")
    name, brace, rest = entry.partition("{")
    name = name.strip()
    if brace and not rest.endswith("}"):
        raise PassError(f"pipeline '{pipeline}': text after the options of '{name}'")
    if not name or any(c.isspace() for c in name):
        raise PassError(f"pipeline '{pipeline}': malformed entry '{entry}'")
    return name, rest[:-1].strip() if brace else ""


def parse_pipeline(pipeline: str) -> list[Pass]:
    """The passes a pipeline string names, configured with their options."""
    if not pipeline.strip():
        return []
    return [get_pass(name).from_options(options) for name, options in split_pipeline(pipeline)]
