"""The import graph of harness/, read from the code (ast): which package imports which.

Used by tests/unit/test_architecture.py (the allowed directions) and, run as a script, to draw
docs/import-graph.svg for docs/architecture.md. A package is a folder of harness/ (`run`,
`compare`, ...) or a module at its top (`protocol`, `cli`, ...); `harness` is harness/__init__.py.
Every import counts, also one made inside a function or under TYPE_CHECKING: each is a dependency
a reader has to know about.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "harness"


@dataclass(frozen=True)
class Import:
    """One `import` statement's target in harness/, where it is written."""

    source: str  # the importing file, relative to the repository root
    line: int
    module: str  # the dotted name imported (harness.record.store, harness.record.store.Side, ...)

    @property
    def target(self) -> str:
        return package_of(self.module)


def package_of(module: str) -> str:
    """`harness.run.jit` -> `run`, `harness.protocol` -> `protocol`, `harness` -> `harness`."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_in(path: Path) -> Iterator[Import]:
    """The harness modules one file imports (relative imports resolved against the file's package)."""
    here = module_name(path).split(".")
    if path.name != "__init__.py":
        here = here[:-1]
    source = path.relative_to(ROOT).as_posix()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]
            names = [name for name in names[1:] if _is_module(name)] or names[:1]
        else:
            continue
        for name in names:
            if name == "harness" or name.startswith("harness."):
                yield Import(source, node.lineno, name)


def _is_module(name: str) -> bool:
    """`from harness.run import jit`: the module harness.run.jit, not just the package harness.run."""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def all_imports() -> list[Import]:
    return [found for path in sorted(PACKAGE.rglob("*.py")) for found in imports_in(path)]


def package_graph(imports: list[Import] | None = None) -> dict[str, dict[str, int]]:
    """package -> {imported package: number of import statements}, between different packages."""
    graph: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for found in all_imports() if imports is None else imports:
        source = package_of(module_name(ROOT / found.source))
        if found.target != source:
            graph[source][found.target] += 1
    return {source: dict(targets) for source, targets in graph.items()}


def packages() -> list[str]:
    """Every package of harness/: its folders and top-level modules."""
    return sorted({package_of(module_name(path)) for path in PACKAGE.rglob("*.py")})
