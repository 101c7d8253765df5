"""Where a subpackage's JIT coverage ends, by kind of code: the modules of `_dynamo`, `fx` and
`_functorch` grouped by what they are for, with functions defined, compiled and not compiled.

    python tools/coverage_groups.py RUN_DIR... [--subpackage _dynamo fx _functorch]

Reads the runs' coverage as `python -m harness coverage` does (merged, each function once) and
sorts every module of a subpackage into the first group whose pattern matches its name, or "the
rest". The groups separate code that no check over a database entry reaches on a CPU (devices,
features off by default or belonging to other APIs, tooling, code dynamo traces but never calls)
from torch.compile's own path; docs/torch_suites.md#jit-coverage-with-p3-threshold-1 reads them.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.record.coverage import Row, merge, read  # noqa: E402
from harness.record.ingest import run_directories  # noqa: E402


@dataclass(frozen=True)
class Group:
    """Modules of one kind, by a pattern on their names; `reachable`: on the path a database check can take on a CPU."""

    label: str
    pattern: str
    reachable: bool = False


REST = Group("the rest", "", reachable=True)
GROUPS: dict[str, tuple[Group, ...]] = {
    "_dynamo": (
        Group("tracing rules for Python constructs (variables.*)", r"\.variables\.", reachable=True),
        Group("traced by dynamo, never called (polyfills)", r"\.polyfills"),
        Group("devices (device interfaces, streams)", r"device_interface|\.streams|cuda|xpu|mtia"),
        Group("off by default or another API (compiled autograd, AOT precompile and packaging, graph "
              "deduplication, distributed)", r"compiled_autograd|\.package|aot_compile|precompile|graph_dedup|"
                                             r"graph_region|distributed|hooks"),
        Group("debugging and tooling (repro, comptime, bytecode debugger, testing, debug backends)",
              r"repro|debug|comptime|testing|test_case|minifier|graph_id_filter|backends\.(?!registry|common)"),
    ),
    "fx": (
        Group("experimental type systems and partitioners",
              r"migrate_gradual_types|unification|gradual_typechecker|accelerator_partitioner|partitioner_utils|"
              r"meta_tracer|optimization|refinement|rewriter|schema_type|merge_matmul|normalize|const_fold|debug|"
              r"graph_gradual|sym_node_utils|_backward_state|proxy_tensor_utils"),
        Group("backend-integration passes (splitters, minimizers, graph drawing, pass managers)",
              r"passes\.(splitter_base|net_min_base|split_module|split_utils|graph_drawer|infra|operator_support|"
              r"tools|tests|reinplace|dialect|backends|annotate_getitem|param_fetch|pass_manager|"
              r"graph_manipulation|fake_tensor_prop|regional_inductor|graph_transform|utils)"),
        Group("translation validation and recording (off by default)", r"validator|recording"),
        Group("graph pickling (compile subprocesses, caches)", r"_graph_pickler"),
        Group("symbolic shapes and tracing", r"symbolic_shapes|sym_node|proxy_tensor|_constant_symnode|dynamic_spec|"
                                             r"runtime_assert", reachable=True),
    ),
    "_functorch": (
        Group("legacy and debugging APIs (make_functional, fx_minifier, compilers, deprecated, ...)",
              r"make_functional|fx_minifier|compilers|benchmark_utils|deprecated|top_operators|config"),
        Group("activation offloading and checkpointing passes (off by default)", r"_activation_"),
        Group("partitioners (the min-cut partitioner: Inductor's backward graphs)", r"partitioners", reachable=True),
    ),
}


def grouped(rows: Sequence[Row], groups: Sequence[Group]) -> dict[Group, list[Row]]:
    """Every module row in exactly one group: the first whose pattern matches, else the rest."""
    found: dict[Group, list[Row]] = {group: [] for group in (*groups, REST)}
    for row in rows:
        found[next((g for g in groups if re.search(g.pattern, row.part)), REST)].append(row)
    return found


def table(subpackage: str, rows: Sequence[Row], groups: Sequence[Group]) -> list[str]:
    defined, compiled = sum(r.defined for r in rows), sum(r.compiled for r in rows)
    lines = [f"## {subpackage}: {compiled:,} of {defined:,} compiled ({100 * compiled / defined:.1f}%)", "",
             "| group | modules | defined | compiled | not compiled |", "|---|---:|---:|---:|---:|"]
    reach_defined = reach_compiled = 0
    for group, members in grouped(rows, groups).items():
        d, c = sum(r.defined for r in members), sum(r.compiled for r in members)
        lines.append(f"| {group.label} | {len(members)} | {d:,} | {c:,} | {d - c:,} |")
        if group.reachable:
            reach_defined, reach_compiled = reach_defined + d, reach_compiled + c
    lines += ["", f"On the path a database check can take on a CPU: {reach_compiled:,} of {reach_defined:,} "
                  f"({100 * reach_compiled / reach_defined:.1f}%).", ""]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, nargs="+", help="run directories, or folders of them")
    parser.add_argument("--subpackage", nargs="+", choices=sorted(GROUPS), default=sorted(GROUPS))
    args = parser.parse_args()
    found = [coverage for coverage in map(read, run_directories(args.runs)) if coverage is not None]
    if not found:
        sys.exit(f"no JIT coverage in {', '.join(map(str, args.runs))}")
    coverage = merge(found)
    for subpackage in args.subpackage:
        print("\n".join(table(subpackage, coverage.module_rows(subpackage), GROUPS[subpackage])))


if __name__ == "__main__":
    main()
