"""`python -m harness run` and `provision`: arguments and what they do.

Each command imports its modules when it runs, so `--help` and the other commands start without them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessError
from harness.exits import ExitStatus

if TYPE_CHECKING:
    from harness.configure.tiers import Tier



def add_commands(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser("run", help="run one configuration x one tier with this interpreter")
    run.add_argument("--config", help="configuration name (see configurations.yaml)")
    run.add_argument("--tier", help="tier name (see tiers.yaml)")
    run.add_argument("--threshold", type=int, help="JIT compile threshold for this run (JIT configurations)")
    run.add_argument("--tests-dir", type=Path, help="a PyTorch checkout's test/ or any folder of test files")
    run.add_argument("--select", nargs="+", action="extend", metavar="FILE_OR_NODEID",
                     help="test files or node ids, relative to the tests directory, instead of the tier's list")
    run.add_argument("--stage", nargs="+", action="extend", metavar="STAGE",
                     help="only these stages of the tier (p3: capture, normalize, post-grad, ir, codegen, ...)")
    run.add_argument("--results", type=Path, help="results root (default: $HARNESS_RESULTS or ./results)")
    run.add_argument("--python", help="interpreter for the test processes (default: the one running this)")
    run.add_argument("--jobs", type=int, default=1, help="test files run in parallel (default 1)")
    run.add_argument("--shard", help="I/N: run only shard I of N, the same files in every configuration")
    run.add_argument("--durations", type=Path, metavar="RUN_DIR",
                     help="balance shards on this earlier run's file durations (default: file sizes)")
    run.add_argument("--resume", type=Path, metavar="RUN_DIR",
                     help="continue an interrupted run without rerunning what finished")
    run.set_defaults(handler=_run)

    fetch = commands.add_parser("fetch-tests", help="fetch PyTorch's test/ folder for the installed torch")
    fetch.add_argument("--version", help="torch release (default: the torch of this interpreter)")
    fetch.add_argument("--repo", help="PyTorch repository or mirror (default: $HARNESS_PYTORCH_REPO or GitHub)")
    fetch.add_argument("--cache", type=Path, help="where checkouts are kept (default: the harness cache)")
    fetch.set_defaults(handler=_fetch_tests)

    provision = commands.add_parser("provision", help="find or provision an interpreter (e.g. 3.14)")
    provision.add_argument("version", nargs="?", default="3.14")
    provision.set_defaults(handler=_provision)


def _run(args: argparse.Namespace) -> int:
    from harness.configure.configurations import load_catalog
    from harness.configure.tiers import get_tier
    from harness.record.store import default_results_root
    from harness.run.runner import RunRequest, default_python, execute
    from harness.run.schedule import parse_shard, run_durations, shard_files, size_weights

    if args.jobs < 1:
        raise HarnessError(f"--jobs must be at least 1, not {args.jobs}")
    if args.resume:
        return _resume(args)
    if not args.config or not args.tier:
        raise HarnessError("run needs --config and --tier (or --resume RUN_DIR)")
    configuration = load_catalog().get(args.config).with_threshold(args.threshold)
    tier = get_tier(args.tier).selecting(args.stage)
    tests_dir = tier.tests_dir(args.tests_dir).resolve()
    targets = tuple(args.select) if args.select else tuple(_tier_files(tier, tests_dir, args.stage))
    if args.shard:
        index, count = parse_shard(args.shard)
        weights = run_durations(args.durations) if args.durations else size_weights(tests_dir, list(targets))
        targets = tuple(shard_files(list(targets), index, count, weights))
    if not targets:
        raise HarnessError(f"tier '{tier.name}' matches no test files under {tests_dir}")
    request = RunRequest(
        configuration=configuration, tier=tier, tests_dir=tests_dir, targets=targets,
        results_root=(args.results or default_results_root()).resolve(),
        python=args.python or default_python(), command=tuple(sys.argv), jobs=args.jobs, shard=args.shard,
        stages=tuple(args.stage or ()),
    )
    print(f"run directory: {execute(request)}")
    return ExitStatus.OK


def _tier_files(tier: Tier, tests_dir: Path, stages: list[str] | None) -> list[str]:
    files = tier.discover(tests_dir)
    if not stages:
        return files
    wanted = {pattern for stage in stages for pattern in tier.stages[stage]}
    return [f for f in files if any(Path(f).match(pattern) for pattern in wanted)]


def _resume(args: argparse.Namespace) -> int:
    from harness.configure.configurations import load_catalog
    from harness.configure.tiers import get_tier
    from harness.record.store import RunDirectory
    from harness.run.runner import resume

    record = RunDirectory(args.resume).read_record()
    configuration = load_catalog().get(record.configuration["name"]).with_threshold(record.threshold)
    tier = get_tier(record.tier).selecting(record.stages)
    print(f"run directory: {resume(args.resume, configuration, tier, args.jobs)}")
    return ExitStatus.OK


def _fetch_tests(args: argparse.Namespace) -> int:
    from harness.configure.sources import fetch_tests, installed_torch_version

    tests = fetch_tests(args.version or installed_torch_version(), args.repo, args.cache)
    print(f"PyTorch tests at {tests}\nuse them with: --tests-dir {tests}  (or: export HARNESS_TESTS_DIR={tests})")
    return ExitStatus.OK


def _provision(args: argparse.Namespace) -> int:
    from harness.configure.provision import ensure_python

    print(ensure_python(args.version))
    return ExitStatus.OK
