"""The import graph of harness/ and op_manifests/, read from the code (ast): which package imports which.

Used by tests/unit/test_architecture.py (the allowed directions) and, run as a script
(`python3 -m nox -s architecture`), to draw docs/import-graph.svg for docs/architecture.md with
matplotlib. The picture carries the edge list it was drawn from, so the test can tell when it is stale. A package is a folder of harness/ (`run`,
`compare`, ...) or a module at its top (`protocol`, `cli`, ...); `harness` is harness/__init__.py; the
op-manifest framework beside harness/ (op_manifests/, an import package of its own) is one package.
Every import counts, also one made inside a function or under TYPE_CHECKING: each is a dependency
a reader has to know about.
"""

from __future__ import annotations

import argparse
import ast
import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP_LEVEL = ("harness", "op_manifests")  # the import packages the project installs
PICTURE = ROOT / "docs" / "import-graph.svg"
MARK = "harness-import-graph: "  # before the edge list (JSON) the picture carries in its metadata


@dataclass(frozen=True)
class Import:
    """One `import` statement's target in the project's packages, where it is written."""

    source: str  # the importing file, relative to the repository root
    line: int
    module: str  # the dotted name imported (harness.record.store, harness.record.store.Side, ...)

    @property
    def target(self) -> str:
        return package_of(self.module)


def package_of(module: str) -> str:
    """`harness.run.jit` -> `run`, `harness.protocol` -> `protocol`, `harness` -> `harness`,
    `op_manifests.loader` -> `op_manifests`."""
    parts = module.split(".")
    return parts[1] if parts[0] == "harness" and len(parts) > 1 else parts[0]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_in(path: Path) -> Iterator[Import]:
    """The project's modules one file imports (relative imports resolved against the file's package)."""
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
            if name.split(".")[0] in TOP_LEVEL:
                yield Import(source, node.lineno, name)


def _is_module(name: str) -> bool:
    """`from harness.run import jit`: the module harness.run.jit, not just the package harness.run."""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def sources() -> list[Path]:
    """Every Python file of the project's packages."""
    return sorted(path for top in TOP_LEVEL for path in (ROOT / top).rglob("*.py"))


def all_imports() -> list[Import]:
    return [found for path in sources() for found in imports_in(path)]


def package_graph(imports: list[Import] | None = None) -> dict[str, dict[str, int]]:
    """package -> {imported package: number of import statements}, between different packages."""
    graph: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for found in all_imports() if imports is None else imports:
        source = package_of(module_name(ROOT / found.source))
        if found.target != source:
            graph[source][found.target] += 1
    return {source: dict(targets) for source, targets in graph.items()}


def packages() -> list[str]:
    """Every package: harness/'s folders and top-level modules, and op_manifests."""
    return sorted({package_of(module_name(path)) for path in sources()})


def floors(graph: dict[str, dict[str, int]]) -> dict[str, int]:
    """Each package's floor: 0 for one that imports no other package, else one above the highest it
    imports (an import inside a loop of packages, as between two test payloads, does not lift)."""
    found: dict[str, int] = {}

    def floor(package: str, path: tuple[str, ...]) -> int:
        if package not in found:
            below = [floor(target, path + (package,)) for target in graph.get(package, {}) if target not in path]
            found[package] = 1 + max(below, default=-1)
        return found[package]

    for package in packages():
        floor(package, ())
    return found


def carried_edges(svg_text: str) -> dict[str, dict[str, int]] | None:
    """The edge list a drawn picture says it was drawn from (None if it carries none)."""
    start = svg_text.find(MARK)
    return json.JSONDecoder().raw_decode(svg_text, start + len(MARK))[0] if start >= 0 else None


def draw(out: Path = PICTURE) -> None:
    """The package graph as layered boxes and arrows (A -> B: A imports B), lowest floor at the bottom."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch

    graph = package_graph()
    level = floors(graph)
    rows: dict[int, list[str]] = defaultdict(list)
    for package in sorted(level):
        rows[level[package]].append(package)
    where = {package: ((index + 1) / (len(row) + 1), floor_number)
             for floor_number, row in rows.items() for index, package in enumerate(row)}
    plt.rcParams["svg.hashsalt"] = "harness-import-graph"  # the same graph gives the same file
    figure, axes = plt.subplots(figsize=(11, 1.3 * (max(rows) + 1)))
    for source, targets in sorted(graph.items()):
        for target, count in sorted(targets.items()):
            ground = level[target] == 0  # errors, exits, the protocol: everyone's; drawn faint
            axes.add_patch(FancyArrowPatch(where[source], where[target], arrowstyle="-|>", mutation_scale=12,
                                           linewidth=0.5 if ground else 0.6 + min(count, 20) / 8,
                                           color="#4a6fa5", alpha=0.18 if ground else 0.7,
                                           shrinkA=14, shrinkB=14, connectionstyle="arc3,rad=0.08"))
    for package, (x, y) in where.items():
        axes.text(x, y, package, ha="center", va="center", fontsize=10,
                  bbox={"boxstyle": "round,pad=0.4", "facecolor": "#f3f0e6", "edgecolor": "#444444"})
    axes.set_xlim(0, 1)
    axes.set_ylim(-0.5, max(rows) + 0.5)
    axes.axis("off")
    axes.set_title("harness/: which package imports which (arrow A -> B: A imports B; width: import statements)",
                   fontsize=10)
    edges = json.dumps(graph, sort_keys=True)
    figure.savefig(out, format="svg", bbox_inches="tight",
                   metadata={"Date": None, "Description": MARK + edges})
    plt.close(figure)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Draw docs/import-graph.svg from the code's imports.")
    parser.add_argument("--out", type=Path, default=PICTURE)
    draw(parser.parse_args().out)
