"""`python -m harness run` and `provision`: arguments and what they do."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.configure.configurations import load_catalog
from harness.configure.provision import ensure_python
from harness.configure.tiers import get_tier
from harness.errors import HarnessError
from harness.record.store import default_results_root
from harness.run.runner import RunRequest, default_python, execute

EXIT_OK = 0


def add_commands(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser("run", help="run one configuration x one tier with this interpreter")
    run.add_argument("--config", required=True, help="configuration name (see configurations.yaml)")
    run.add_argument("--tier", required=True, help="tier name (see tiers.yaml)")
    run.add_argument("--threshold", type=int, help="JIT compile threshold for this run (JIT configurations)")
    run.add_argument("--tests-dir", type=Path, help="a PyTorch checkout's test/ or any folder of test files")
    run.add_argument("--select", nargs="+", action="extend", metavar="FILE_OR_NODEID",
                     help="test files or node ids, relative to the tests directory, instead of the tier's list")
    run.add_argument("--results", type=Path, help="results root (default: $HARNESS_RESULTS or ./results)")
    run.add_argument("--python", help="interpreter for the test processes (default: the one running this)")
    run.set_defaults(handler=_run)

    provision = commands.add_parser("provision", help="find or provision an interpreter (e.g. 3.14)")
    provision.add_argument("version", nargs="?", default="3.14")
    provision.set_defaults(handler=_provision)


def _run(args: argparse.Namespace) -> int:
    configuration = load_catalog().get(args.config).with_threshold(args.threshold)
    tier = get_tier(args.tier)
    tests_dir = tier.tests_dir(args.tests_dir).resolve()
    targets = tuple(args.select) if args.select else tuple(tier.discover(tests_dir))
    if not targets:
        raise HarnessError(f"tier '{tier.name}' matches no test files under {tests_dir}")
    request = RunRequest(
        configuration=configuration, tier=tier, tests_dir=tests_dir, targets=targets,
        results_root=(args.results or default_results_root()).resolve(),
        python=args.python or default_python(), command=sys.argv,
    )
    run_dir = execute(request)
    print(f"run directory: {run_dir}")
    return EXIT_OK


def _provision(args: argparse.Namespace) -> int:
    print(ensure_python(args.version))
    return EXIT_OK
