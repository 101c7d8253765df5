"""Our bundled suites' test counts beside PyTorch's own, per PyTorch file and test class.

    python -m harness.torch_suites.counts [--tests-dir CHECKOUT_TEST_DIR] [--jobs N]
        (in a test interpreter: collecting imports torch)

Ours are collected (`pytest --collect-only`, harness/run/collect.py) from harness/torch_suites/p1
and p2 and put under the PyTorch file whose class of the same name they mirror (data/
pytorch_counts.yaml, `ours`). PyTorch's are collected the same way from a checkout's files when
--tests-dir is given (under its own conftest.py), else read from the same data file: the figures
measured for issue 23 with torch 2.14.1. Only CPU classes count (TestCommonCPU is TestCommon; a
class for another device is left out), as the goal of at least 45,000 tests is a CPU figure.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from harness.run.collect import collect, collect_together
from harness.torch_suites.catalog import ROOT, bundled_files

DATA = Path(__file__).resolve().parent / "data" / "pytorch_counts.yaml"
OTHERS = "(others)"  # PyTorch's classes the data file does not name one by one
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
    ours: int


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


def collected_ours() -> Counter[str]:
    """Every bundled module in one process: torch and its databases are imported once."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "OMP_NUM_THREADS": "1"}
    found = collect_together(sys.executable, ROOT, [file.as_posix() for file in bundled_files()], env)
    failed = [f"{file}: {result.error}" for file, result in found.items() if result.error]
    if failed:
        raise SystemExit("\n".join(failed))
    return by_class([nodeid for result in found.values() for nodeid in result.nodeids])


def rows(pytorch: dict[str, dict[str, int]], ours: Counter[str], mirrors: dict[str, str]) -> list[Row]:
    """PyTorch's files and classes first (ours beside them, 0 where we have none), then our classes
    of other files; a class of ours no file is named for is listed under `?`."""
    table = [Row(file, name, count, ours.get(name, 0)) for file, classes in pytorch.items()
             for name, count in classes.items()]
    counted = {row.test_class for row in table}
    rest = sorted((mirrors.get(name, "?"), name) for name in ours if name not in counted)
    return table + [Row(file, name, None, ours[name]) for file, name in rest]


def render(found: list[Row], source: str) -> Table:
    table = Table(title=f"Tests collected on CPU: ours beside PyTorch's ({source})", title_justify="left")
    for column in ("PyTorch file", "class", "PyTorch", "ours", "ours %"):
        table.add_column(column, justify="left" if column in ("PyTorch file", "class") else "right")
    previous = None
    for row in found:
        share = f"{100 * row.ours / row.pytorch:.1f}%" if row.pytorch else "-"
        table.add_row(row.file if row.file != previous else "", row.test_class,
                      f"{row.pytorch:,}" if row.pytorch is not None else "-", f"{row.ours:,}", share)
        previous = row.file
    counted = [row for row in found if row.pytorch is not None]
    theirs, ours = sum(row.pytorch or 0 for row in counted), sum(row.ours for row in counted)
    table.add_section()
    table.add_row("total of PyTorch's files above", "", f"{theirs:,}", f"{ours:,}", f"{100 * ours / theirs:.1f}%")
    table.add_row("ours in other files", "", "-", f"{sum(row.ours for row in found if row.pytorch is None):,}", "")
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
    Console(width=120).print(render(rows(pytorch, collected_ours(), counts.ours), source))


if __name__ == "__main__":
    main()
