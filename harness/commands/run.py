"""`python -m harness run` and `provision`: arguments and what they do.

Each command imports its modules when it runs, so `--help` and the other commands start without them.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from harness.commands.arguments import (RESULTS_HELP, interpreter_argument, jobs_argument, path_argument, shard_argument,
                                        threshold_argument)
from harness.errors import HarnessError
from harness.exits import ExitStatus
from harness.protocol import Setting

if TYPE_CHECKING:
    from harness.configure.configurations import Configuration
    from harness.configure.tiers import Tier
    from harness.record.durations import History
    from harness.run.shards import Chosen



def add_commands(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser("run", help="run one configuration x one tier with this interpreter")
    run.add_argument("--config", help="configuration name (see configurations.yaml)")
    run.add_argument("--tier", help="tier name (see tiers.yaml)")
    run.add_argument("--threshold", type=threshold_argument,
                     help="JIT compile threshold for this run (JIT configurations)")
    run.add_argument("--tests-dir", type=path_argument, help="a PyTorch checkout's test/ or any folder of test files")
    run.add_argument("--select", nargs="+", action="extend", metavar="FILE_OR_NODEID",
                     help="test files or node ids, relative to the tests directory, instead of the tier's list")
    run.add_argument("--stage", nargs="+", action="extend", metavar="STAGE",
                     help="only these stages of the tier (p3: capture, normalize, post-grad, ir, codegen, ...)")
    run.add_argument("--results", type=path_argument, help=RESULTS_HELP)
    run.add_argument("--python", type=interpreter_argument, help="interpreter for the test processes (default: the one running this)")
    run.add_argument("--jobs", type=jobs_argument, default=1, metavar="N|auto",
                     help="test files run in parallel (default 1); auto: as many as the cores and memory this run "
                          "may use hold (cgroup limits included; docs/scaling.md)")
    run.add_argument("--shard", type=shard_argument,
                     help="I/N: run only shard I of N, the same tests in every configuration")
    run.add_argument("--durations", type=path_argument, metavar="RUN_DIR",
                     help="balance shards, and split heavy files across --jobs, on this earlier run's test durations "
                          "(default: the results database's: for shards, of the baseline configuration with this "
                          "torch; for splitting, of this configuration; test counts without any)")
    run.add_argument("--resume", type=path_argument, metavar="RUN_DIR",
                     help="continue an interrupted run without rerunning what finished")
    run.set_defaults(handler=_run)

    fetch = commands.add_parser("fetch-tests", help="fetch PyTorch's test/ folder for the installed torch")
    fetch.add_argument("--version", help="torch release (default: the torch of this interpreter)")
    fetch.add_argument("--repo", help=f"PyTorch repository or mirror (default: ${Setting.PYTORCH_REPO} or GitHub)")
    fetch.add_argument("--cache", type=path_argument, help="where checkouts are kept (default: the harness cache)")
    fetch.set_defaults(handler=_fetch_tests)

    provision = commands.add_parser("provision", help="find or provision an interpreter (e.g. 3.14)")
    provision.add_argument("version", nargs="?", default="3.14")
    provision.set_defaults(handler=_provision)


def _run(args: argparse.Namespace) -> int:
    from harness.configure.configurations import load_catalog
    from harness.configure.tiers import get_tier
    from harness.record.store import default_results_root, ensure_folder
    from harness.run.runner import RunRequest, default_python, execute

    if args.resume:
        return _resume(args)
    if not args.config or not args.tier:
        raise HarnessError("run needs --config and --tier (or --resume RUN_DIR)")
    catalog = load_catalog()
    configuration = catalog.get(args.config).with_threshold(args.threshold)
    tier, tests_dir = get_tier(args.tier).selecting(args.stage).located(args.tests_dir)
    tests_dir = tests_dir.resolve()
    python = args.python or default_python()
    scale = _emulation(python, catalog.emulated_timeout_scale)
    tier = tier.scaled(scale)
    targets, entries, narrowed = _selection(args.select, tier, tests_dir, configuration, python) if args.select \
        else (tuple(_tier_files(tier, tests_dir, args.stage)), (), ())
    absent = () if args.select or args.stage else tuple(tier.absent(tests_dir))
    if not targets:
        raise HarnessError(f"tier '{tier.name}' matches no test files under {tests_dir}")
    results = ensure_folder((args.results or default_results_root()).resolve(), "results folder")
    args.jobs = args.jobs or _auto_jobs(results, tier.name)
    sharding = None
    if args.shard:
        chosen = _shard(args, configuration, tier, tests_dir, python, targets, entries, narrowed, results)
        targets, sharding = chosen.targets, chosen.sharding
    request = RunRequest(
        configuration=configuration, tier=tier, tests_dir=tests_dir, targets=targets, results_root=results,
        python=python, command=tuple(sys.argv), jobs=args.jobs, shard=args.shard, absent=absent, entries=entries,
        narrowed=narrowed,
        stages=tuple(args.stage or ()),
        sharding=sharding,
        timeout_scale=scale,
        history=_split_history(args.jobs, results, tier.name, configuration.name, args.durations),
    )
    print(f"run directory: {execute(request)}")
    return ExitStatus.OK


def _auto_jobs(results: Path, tier: str) -> int:
    """`--jobs auto`: N from the cores and memory this run may use, said in one line."""
    from harness.run import capacity

    choice = capacity.choose(capacity.limits(), *capacity.process_mb(results, tier))
    print(choice.line)
    return choice.jobs


def _split_history(jobs: int, results: Path, tier: str, configuration: str, named: Path | None) -> History:
    """The durations a run of `jobs` processes splits its heavy files on (harness/run/split.py)."""
    from harness.record import durations
    from harness.record.database import database_path, read_only

    if jobs < 2:
        return durations.NO_HISTORY
    if named is not None:
        return durations.run_history(named)[0]
    path = database_path(results)
    if not path.is_file():
        return durations.NO_HISTORY
    connection = read_only(path)
    try:
        return durations.read_history(connection, durations.own_basis(connection, tier, configuration))
    finally:
        connection.close()


def _emulation(python: str, scale: int) -> int:
    """How much longer the tier's time limits are for this interpreter: `scale` when it is emulated
    (announced), else 1. An interpreter the harness provisioned for emulation gets its qemu prefix
    into this process's environment, which every test process inherits."""
    from harness.configure.architectures import emulation_environment, host_machine, interpreter_machine, is_emulated

    machine = interpreter_machine(Path(python))
    if not is_emulated(machine):
        return 1
    os.environ.update(emulation_environment(Path(python)))
    print(f"emulated: {machine} interpreter on this {host_machine()} host (qemu-user); "
          f"the tier's time limits are {scale} times longer")
    return scale


def _shard(args: argparse.Namespace, configuration: Configuration, tier: Tier, tests_dir: Path, python: str,
           targets: tuple[str, ...], entries: tuple[str, ...], narrowed: tuple[str, ...], results: Path) -> Chosen:
    """This run's shard of `targets`: the same tests in every configuration (harness/run/shards.py)."""
    from harness.configure.configurations import load_catalog
    from harness.record.durations import Sweep
    from harness.record.fingerprint import describe_interpreter
    from harness.run import shards
    from harness.run.collect import collect
    from harness.run.runner import group_targets, interpreter_environment, narrowing

    shard = shards.parse_shard(args.shard)
    torch = describe_interpreter(python)["versions"].get("torch")
    sweep = Sweep(tier.name, torch, shards.selection_hash(targets, entries), shard, configuration.name,
                  configuration.threshold)
    history, notes = shards.history_for(results, sweep, load_catalog().baseline, args.durations)
    for note in notes:
        print(note)
    env = interpreter_environment(configuration, tier.env)
    chosen = shards.choose(group_targets(targets), sweep, history, lambda files: collect(
        python, tests_dir, files, env, tier.pytest_args, args.jobs, narrowing(entries, narrowed)))
    print(chosen.summary)
    return chosen


def _selection(selections: list[str], tier: Tier, tests_dir: Path, configuration: Configuration,
               python: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(targets, entries, narrowed): files and node ids, their file parts normalised and relative to the tests
    directory (an absolute path inside it is accepted; the runner refuses whatever still points
    outside); names of PyTorch test-database entries (`--select add nn.Linear`) resolved, for the
    bundled suites, to the files that cover them, which those names narrow (a file also selected by
    its path runs whole)."""
    from harness.configure import entries
    from harness.run.runner import interpreter_environment

    paths = [_target(s, tests_dir) for s in selections if entries.is_path(s, tests_dir)]
    names = tuple(dict.fromkeys(s for s in selections if not entries.is_path(s, tests_dir)))
    if names and tier.source != "torch":
        raise HarnessError(f"--select {names[0]}: not found under {tests_dir} (names of PyTorch test-database "
                           "entries select from the suites inside torch, run without a PyTorch checkout)")
    if not names:
        return tuple(paths), (), ()
    covered = entries.catalog(python, interpreter_environment(configuration, tier.env))
    named = entries.files_for(names, covered, tier.discover(tests_dir))
    whole = {path.split("::", 1)[0] for path in paths}
    return tuple(dict.fromkeys([*paths, *named])), names, tuple(file for file in named if file not in whole)


def _target(target: str, tests_dir: Path) -> str:
    file, separator, rest = target.partition("::")
    if not file.strip():
        raise HarnessError(f"--select {target!r}: no file named")
    path = Path(os.path.normpath(file))
    if path.is_absolute() and path.is_relative_to(tests_dir):
        path = path.relative_to(tests_dir)
    return path.as_posix() + separator + rest


def _tier_files(tier: Tier, tests_dir: Path, stages: list[str] | None) -> list[str]:
    """The tier's files, narrowed to `stages` of the tier's own source; a stage with a source of its
    own (`source: torch`) has already become the tier's files (Tier.selecting)."""
    files = tier.discover(tests_dir)
    wanted = {pattern for stage in stages or () if stage in tier.stages for pattern in tier.stages[stage]}
    return [f for f in files if any(Path(f).match(pattern) for pattern in wanted)] if wanted else files


def _resume(args: argparse.Namespace) -> int:
    from harness.configure.configurations import load_catalog
    from harness.configure.tiers import get_tier
    from harness.record.store import RunDirectory
    from harness.run.runner import resume

    record = RunDirectory(args.resume).read_record()
    configuration = load_catalog().get(record.configuration["name"]).with_threshold(record.threshold)
    tier = get_tier(record.tier).selecting(record.stages)
    if (record.test_sources.get("origin") or {}).get("kind") == "torch" and tier.bundled is not None:
        tier = tier.bundled  # the run ran the suites inside torch: resume them the same way
    args.jobs = args.jobs or _auto_jobs(Path(args.resume).resolve().parent, record.tier)
    tier = tier.scaled(_emulation(record.python, record.timeout_scale))  # the scale the run was started with
    history = _split_history(args.jobs, Path(args.resume).resolve().parent, record.tier, configuration.name,
                             args.durations)
    print(f"run directory: {resume(args.resume, configuration, tier, args.jobs, history=history)}")
    return ExitStatus.OK


def _fetch_tests(args: argparse.Namespace) -> int:
    from harness.configure.sources import fetch_tests, installed_torch_version

    tests = fetch_tests(args.version or installed_torch_version(), args.repo, args.cache)
    print(f"PyTorch tests at {tests}\nuse them with: --tests-dir {tests}  (or: export {Setting.TESTS_DIR}={tests})")
    return ExitStatus.OK


def _provision(args: argparse.Namespace) -> int:
    from harness.configure.provision import ensure_python

    print(ensure_python(args.version))
    return ExitStatus.OK
