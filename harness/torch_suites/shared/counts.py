"""Our bundled suites' test counts beside PyTorch's own, per PyTorch file and test class.

    python -m harness.torch_suites.shared.counts [--tests-dir CHECKOUT_TEST_DIR] [--jobs N]
        (in a test interpreter: collecting imports torch)

Ours are collected (`pytest --collect-only`, harness/run/collect.py) from every bundled tier's
modules (harness/torch_suites/<tier>/) and put under the PyTorch file whose class of the same name
they mirror (data/pytorch_counts.yaml, `ours`), in two columns: `ours` (tiers P1, P2, P3) and
`breadth` (the nightly tier of PyTorch's op checks at PyTorch's breadth). PyTorch's are collected
the same way from a checkout's files when --tests-dir is given (under its own conftest.py), else
read from the same data file: the figures measured for issue 23 with torch 2.14.1. Only CPU classes count (TestCommonCPU is TestCommon; a
class for another device is left out), as the goal of at least 45,000 tests is a CPU figure.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml
from rich.console import Console
from rich.table import Table

from harness.protocol import Env
from harness.run.collect import Collected, collect, collect_together
from harness.torch_suites.shared.catalog import ROOT, bundled_files

DATA = Path(__file__).resolve().parent / "data" / "pytorch_counts.yaml"
COLUMNS = {"ours": ("p1", "p2", "p3"), "breadth": ("breadth",)}  # column -> the tiers it counts
OTHER_DEVICES = re.compile(r"(CUDA|MPS|XPU|META|Meta|LAZY|PRIVATEUSE1|HPU)$")


@dataclass(frozen=True)
class Counts:
    """PyTorch's counts per file and class, and which PyTorch file each of our classes mirrors."""

    torch: str
    pytorch: dict[str, dict[str, int]]
    ours: dict[str, str]


@dataclass(frozen=True)
class Row:
    file: str
    test_class: str
    pytorch: int | None  # None: not counted (a file outside PyTorch's figures)
    ours: tuple[int, ...]  # one count per column of COLUMNS


def load(path: Path = DATA) -> Counts:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return Counts(str(data["torch"]), {file: dict(classes) for file, classes in data["pytorch"].items()},
                  dict(data["ours"]))


def cpu_class(nodeid: str) -> str | None:
    """The test class of a node id without its CPU suffix; None for another device or a module-level test."""
    parts = nodeid.split("::")
    if len(parts) < 3 or OTHER_DEVICES.search(parts[1]):
        return None
    return parts[1].removesuffix("CPU")


def by_class(nodeids: list[str]) -> Counter[str]:
    return Counter(name for name in map(cpu_class, nodeids) if name is not None)


def collected_pytorch(tests_dir: Path, files: list[str], jobs: int) -> dict[str, dict[str, int]]:
    """A checkout's counts per file and class (a file it lacks or cannot collect is one line)."""
    found = collect(sys.executable, tests_dir, files, dict(os.environ), jobs=jobs)
    for file, result in found.items():
        if result.error:
            raise SystemExit(f"{tests_dir / file}: {result.error}")
    return {file: dict(by_class(list(result.nodeids))) for file, result in found.items()}


def column_of(nodeid: str) -> str:
    """The column of COLUMNS a bundled test counts in, by its tier's folder."""
    tier = PurePosixPath(nodeid.split("::", 1)[0]).parent.name
    return next(column for column, tiers in COLUMNS.items() if tier in tiers)


def unusable(found: Mapping[str, Collected]) -> list[str]:
    """Bundled modules that cannot be counted, one line each: pytest could not collect them (an
    import error), or they collected no test (decorators that instantiated nothing)."""
    return [f"{file}: {result.error or 'no test collected'}" for file, result in found.items()
            if result.error or not result.nodeids]


def collected_ours() -> dict[str, Counter[str]]:
    """Every bundled module, whole (HARNESS_ENTRIES ignored), in one process (torch and its
    databases are imported once), counted per column of COLUMNS."""
    env = {key: value for key, value in os.environ.items() if key != Env.ENTRIES}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), OMP_NUM_THREADS="1")
    found = collect_together(sys.executable, ROOT, [file.as_posix() for file in bundled_files()], env)
    failed = unusable(found)
    if failed:
        raise SystemExit("\n".join(failed))
    nodeids = [nodeid for result in found.values() for nodeid in result.nodeids]
    return {column: by_class([nodeid for nodeid in nodeids if column_of(nodeid) == column]) for column in COLUMNS}


def rows(pytorch: dict[str, dict[str, int]], ours: dict[str, Counter[str]], mirrors: dict[str, str]) -> list[Row]:
    """PyTorch's files and classes first (ours beside them, per column, 0 where we have none), then
    our classes of other files; a class of ours no file is named for is listed under `?`."""
    def counts(name: str) -> tuple[int, ...]:
        return tuple(found.get(name, 0) for found in ours.values())

    table = [Row(file, name, count, counts(name)) for file, classes in pytorch.items()
             for name, count in classes.items()]
    counted = {row.test_class for row in table}
    rest = sorted({(mirrors.get(name, "?"), name) for found in ours.values() for name in found if name not in counted})
    return table + [Row(file, name, None, counts(name)) for file, name in rest]


def _share(ours: int, theirs: int | None) -> str:
    return f"{100 * ours / theirs:.1f}%" if theirs else "-"


def render(found: list[Row], source: str) -> Table:
    table = Table(title=f"Tests collected on CPU: ours beside PyTorch's ({source})", title_justify="left")
    for column in ("PyTorch file", "class", "PyTorch", *(f"{name}{share}" for name in COLUMNS for share in ("", " %"))):
        table.add_column(column, justify="left" if column in ("PyTorch file", "class") else "right")
    previous = None
    for row in found:
        cells = [cell for ours in row.ours for cell in (f"{ours:,}", _share(ours, row.pytorch))]
        table.add_row(row.file if row.file != previous else "", row.test_class,
                      f"{row.pytorch:,}" if row.pytorch is not None else "-", *cells)
        previous = row.file
    counted = [row for row in found if row.pytorch is not None]
    theirs = sum(row.pytorch or 0 for row in counted)
    totals = [sum(row.ours[index] for row in counted) for index in range(len(COLUMNS))]
    others = [sum(row.ours[index] for row in found if row.pytorch is None) for index in range(len(COLUMNS))]
    table.add_section()
    table.add_row("total of PyTorch's files above", "", f"{theirs:,}",
                  *(cell for ours in totals for cell in (f"{ours:,}", _share(ours, theirs))))
    table.add_row("ours in other files", "", "-", *(cell for ours in others for cell in (f"{ours:,}", "")))
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests-dir", type=Path, help="a PyTorch checkout's test/ folder: collect its counts")
    parser.add_argument("--data", type=Path, default=DATA, help="PyTorch's counts and our class mapping (YAML)")
    parser.add_argument("--jobs", type=int, default=2, help="checkout files collected at once")
    args = parser.parse_args(argv)
    counts = load(args.data)
    if args.tests_dir:
        pytorch = collected_pytorch(args.tests_dir.resolve(), list(counts.pytorch), args.jobs)
        source = f"PyTorch's collected from {args.tests_dir}"
    else:
        pytorch, source = counts.pytorch, f"PyTorch's as measured with torch {counts.torch}, {args.data.name}"
    Console(width=150).print(render(rows(pytorch, collected_ours(), counts.ours), source))


if __name__ == "__main__":
    main()
