"""`python -m harness coverage RUN...`: JIT coverage of torch per subpackage, merged over the runs given.

Each JIT run records its coverage as it ends (`coverage.json`, harness/record/coverage.py); this
command merges the runs given (the tiers of a configuration, the shards of a run), each function
once, and prints the table: per torch subpackage, functions defined and functions compiled; with
`--subpackage NAME`, per module of that subpackage, where the most functions stayed uncompiled.
Both count apart the functions a CPU-only machine cannot run (whole modules, or some functions of
one, that need a GPU, another accelerator, a compiler it lacks: harness/configure/data/beyond_cpu.yaml),
and give the share of the rest.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness.commands.arguments import path_argument
from harness.errors import HarnessError
from harness.exits import ExitStatus


def add_commands(commands: argparse._SubParsersAction) -> None:
    coverage = commands.add_parser("coverage", help="JIT coverage of torch per subpackage (functions defined, "
                                                    "functions compiled), merged over the runs given",
                                   description="Merges the JIT coverage the runs recorded (docs/coverage.md): "
                                               "each function compiled once, whichever runs compiled it.")
    coverage.add_argument("runs", type=path_argument, nargs="+", metavar="RUN_DIR",
                          help="run directories, or folders of them (a results root)")
    coverage.add_argument("--format", choices=("md", "json"), default="md", help="Markdown (default) or JSON")
    coverage.add_argument("--subpackage", metavar="NAME",
                          help="the modules of one subpackage instead (_dynamo, fx, ...), the most functions "
                               "left uncompiled first")
    coverage.set_defaults(handler=_coverage)


def _coverage(args: argparse.Namespace) -> int:
    from harness.record.coverage import merge, read
    from harness.record.ingest import run_directories
    from harness.report.json_report import coverage_json, coverage_modules_json
    from harness.report.markdown import coverage_modules_section, coverage_section
    from harness.report.model import CoverageSide
    from harness.report.output import write_out
    from harness.report.text import coverage_module_rows

    runs = run_directories(args.runs)
    found = [(path, read(path)) for path in runs]
    covered = [coverage for _, coverage in found if coverage is not None]
    if not covered:
        raise HarnessError(f"no JIT coverage in {', '.join(map(str, runs))}: JIT runs (cinderx-jit) record it as they end")
    side = CoverageSide(_label([path for path, coverage in found if coverage is not None]), merge(covered))
    without = [str(path) for path, coverage in found if coverage is None]
    note = f"\nLeft out, without JIT coverage: {', '.join(without)}\n" if without else ""
    if args.subpackage:
        rows = coverage_module_rows(side.coverage, args.subpackage)
        write_out(lambda fmt: json.dumps(coverage_modules_json(side.coverage, args.subpackage, rows), indent=2) + "\n"
                  if fmt == "json" else coverage_modules_section(side, args.subpackage, rows) + note,
                  [args.format], None, "coverage")
        return ExitStatus.OK
    write_out(lambda fmt: json.dumps(coverage_json(side.coverage), indent=2) + "\n" if fmt == "json"
              else coverage_section(side) + note, [args.format], None, "coverage")
    return ExitStatus.OK


def _label(runs: list[Path]) -> str:
    """`cinderx-jit (threshold 1), tiers p0 + p1`: the configurations and tiers merged."""
    from harness.record.model import side_label
    from harness.record.store import RunDirectory

    records = [RunDirectory(path).read_record() for path in runs]
    sides = dict.fromkeys(side_label(str(r.configuration.get("name")), r.threshold) for r in records)
    tiers = dict.fromkeys(r.tier for r in records)
    return f"{', '.join(sides)}, tier{'s' * (len(tiers) > 1)} {' + '.join(tiers)}"
