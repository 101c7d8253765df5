"""How close one run on N workers comes to the limit: the makespan of the harness's plan against the
lower bound, beside a plan of whole files.

For each N, three plans of the same tests (harness/run/split.py), each timed on the durations it was
planned on (in-sample: the question is how well the plan packs, not how well durations predict):
- `files`: whole files, longest first, each to the worker free first (the runner before issue 40);
  never shorter than the longest file.
- `split`: files heavier than half a fair share split into tests across workers, the pieces forked
  from the one process that collected the file (its start paid once, a fork per further worker).
- `fresh`: the same split with every piece starting its file anew (a configuration that cannot fork).
`bound` is max(total seconds / N, longest test + its file's start); the target is split/bound <= 1.15
at N = 16, 64 and 144.

Durations: a results database (`--db`: the newest complete runs of --config, up to
harness/record/durations.BASIS_RUNS, as shards read them: each file's seconds scaled by its CPU
share), run directories (`--runs`), or by default the recorded per-module costs of the whole breadth
and P3 tiers in benchmarks/data/tier_costs.yaml, both configurations (no per-test durations of the
whole tiers were recorded: a module's seconds are spread over its tests by a profile sampled from
a real run, bar the longest, named there).

    python benchmarks/scaling.py [--workers 2 4 16 64 144] [--fork-seconds S]
    python benchmarks/scaling.py --db RESULTS/harness.db --tier breadth --config stock [--threshold N]
    python benchmarks/scaling.py --runs RUN_DIR [RUN_DIR ...]
    python benchmarks/scaling.py --runs UNSPLIT_RUN --measured SPLIT_RUN

`--measured` times a split for real: one selection run twice with the same `--jobs N`, first as
whole files (UNSPLIT_RUN: no recorded history, so nothing is split), then split by the runner on
UNSPLIT_RUN's durations (`--durations UNSPLIT_RUN`: pieces forked after one collection). Each run's
makespan is its wall time scaled by the share of a core its tests had (the unit the plan is in),
against the `files` and `split` plans and the bound; the wall seconds are printed beside.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.record import durations  # noqa: E402
from harness.record.database import read_only  # noqa: E402
from harness.record.durations import History  # noqa: E402
from harness.record.store import RunDirectory  # noqa: E402
from harness.run.collect import Collected  # noqa: E402
from harness.run.split import FORK_SECONDS, file_plan, plan_run, timed  # noqa: E402

TARGET = 1.15
CHECKED = (16, 64, 144)  # the worker counts the target applies to
MODEL = ROOT / "benchmarks" / "data" / "tier_costs.yaml"


@dataclass(frozen=True)
class Source:
    label: str
    history: History


@dataclass(frozen=True)
class Row:
    workers: int
    files: float
    split: float
    fresh: float
    bound: float
    split_files: int


def modelled(path: Path) -> Iterator[Source]:
    """Every tier and configuration of the cost file, as per-test durations (see the module doc)."""
    costs = yaml.safe_load(path.read_text())
    profile = costs.pop("profile")
    for tier, found in costs.items():
        configurations = sorted({key for module in found["modules"].values() for key in module}
                                - {"tests", "longest"})
        for configuration in configurations:
            tests: dict[str, float] = {}
            overhead: dict[str, float] = {}
            for module, cost in found["modules"].items():
                file = f"{module}.py"
                longest = cost.get("longest") or {}
                shape = [profile[index % len(profile)] for index in range(cost["tests"] - len(longest))]
                scale = (cost[configuration] - found["start"] - sum(longest.values())) / sum(shape)
                tests.update({f"{file}::{name}": float(seconds) for name, seconds in longest.items()})
                tests.update({f"{file}::test_{index:05d}": weight * scale for index, weight in enumerate(shape)})
                overhead[file] = float(found["start"])
            yield Source(f"{tier}, {configuration} ({path.relative_to(ROOT)}: per-module costs, spread by its profile)",
                         History(tests, overhead, ()))


def from_database(db: Path, tier: str, configuration: str, threshold: int | None) -> Source:
    connection = read_only(db)
    try:
        rows = connection.execute(
            "SELECT identity, torch FROM runs WHERE tier = ? AND configuration = ? AND threshold IS ? "
            "AND status = 'complete' ORDER BY started DESC LIMIT ?",
            (tier, configuration, threshold, durations.BASIS_RUNS)).fetchall()
        if not rows:
            sys.exit(f"{db}: no complete {configuration} run of tier {tier}")
        torch = rows[0][1]
        basis = tuple(identity for identity, version in rows if version == torch)
        return Source(f"{tier}, {configuration} ({len(basis)} run(s) of {db}, torch {torch})",
                      durations.read_history(connection, basis))
    finally:
        connection.close()


def from_runs(runs: list[Path]) -> Source:
    tests: dict[str, float] = {}
    overhead: dict[str, float] = {}
    for run in runs:
        history, _ = durations.run_history(run)
        tests.update(history.tests)
        overhead.update(history.overhead)
    return Source(f"{len(runs)} run director{'y' if len(runs) == 1 else 'ies'}", History(tests, overhead, ()))


def rows(history: History, counts: list[int], fork_seconds: float) -> list[Row]:
    by_file: dict[str, list[str]] = {}
    for nodeid in history.tests:
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    grouped = {file: [file] for file in by_file}

    def collect(files: list[str]) -> dict[str, Collected]:
        return {file: Collected(tuple(by_file[file])) for file in files}

    found = []
    for workers in counts:
        split = timed(plan_run(grouped, history, collect, workers, fork_seconds=fork_seconds), history, workers)
        fresh = timed(plan_run(grouped, history, collect, workers, forked=False), history, workers)
        files = timed(file_plan(grouped, history, workers), history, workers)
        pieces = {unit.file for worker in split.plan.shards for unit in worker if not unit.whole}
        found.append(Row(workers, files.makespan, split.makespan, fresh.makespan, split.bound, len(pieces)))
    return found


def measured(source: Source, unsplit: Path, split: Path) -> None:
    """Planned (on `source`) against measured makespan of one selection run twice with the same
    `--jobs N`: whole files (`unsplit`), then split by the runner (`split`, planned on `unsplit`)."""
    workers = _jobs(split)
    [row] = rows(source.history, [workers], FORK_SECONDS)
    whole, pieces = _makespan(unsplit), _makespan(split)
    files = [f"{f.file.rsplit('/', 1)[-1]} ({f.split})" for f in RunDirectory(split).read_record().files if f.split]
    print(f"\nmeasured: N = {workers}, planned on {source.label}; split files: {', '.join(files) or 'none'}")
    print(f"  {'':<24}{'seconds':>9}  {'/bound':>7}   wall seconds")
    print(f"  {'bound':<24}{row.bound:>9,.1f}  {1:>7.2f}")
    print(f"  {'whole files, planned':<24}{row.files:>9,.1f}  {row.files / row.bound:>7.2f}")
    print(f"  {'whole files, measured':<24}{whole[0]:>9,.1f}  {whole[0] / row.bound:>7.2f}   {whole[1]:,.1f}")
    print(f"  {'split, planned':<24}{row.split:>9,.1f}  {row.split / row.bound:>7.2f}")
    print(f"  {'split, measured':<24}{pieces[0]:>9,.1f}  {pieces[0] / row.bound:>7.2f}   {pieces[1]:,.1f}")


def _jobs(run: Path) -> int:
    """The `--jobs` a run was started with (its recorded command line)."""
    command = list(RunDirectory(run).read_record().command)
    return int(command[command.index("--jobs") + 1]) if "--jobs" in command else 1


def _makespan(run: Path) -> tuple[float, float]:
    """(seconds on cores of their own, wall seconds) from the run's start to its end: the wall time
    scaled by the share of a core its files' tests had (weighed by their durations), as the plan's
    durations are, so that a loaded machine's waits for a core are not counted."""
    record = RunDirectory(run).read_record()
    wall = (datetime.fromisoformat(record.finished) - datetime.fromisoformat(record.started)).total_seconds()
    spent = sum(f.duration for f in record.files)
    share = sum(f.duration * durations.share_scale(f.cpu_share) for f in record.files) / spent if spent else 1.0
    return wall * share, wall


def report(source: Source, counts: list[int], fork_seconds: float) -> bool:
    history = source.history
    total = sum(history.tests.values()) + sum(history.overhead.values())
    print(f"\n{source.label}: {len(history.tests):,} tests, {len(history.overhead)} files, {total:,.0f} s on one core")
    print(f"{'N':>4}  {'files (s)':>9}  {'split (s)':>9}  {'fresh (s)':>9}  {'bound (s)':>9}  "
          f"{'files/bound':>11}  {'split/bound':>11}  {'split files':>11}")
    met = True
    for row in rows(history, counts, fork_seconds):
        ratio = row.split / row.bound
        mark = "" if row.workers not in CHECKED else ("  ok" if ratio <= TARGET else f"  > {TARGET}")
        met &= not mark.startswith("  >")
        print(f"{row.workers:>4}  {row.files:>9,.0f}  {row.split:>9,.0f}  {row.fresh:>9,.0f}  {row.bound:>9,.0f}  "
              f"{row.files / row.bound:>11.2f}  {ratio:>11.3f}  {row.split_files:>11}{mark}")
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--db", type=Path, help="a results database (harness.db)")
    source.add_argument("--runs", type=Path, nargs="+", help="run directories, their durations merged")
    parser.add_argument("--tier", default="breadth", help="with --db")
    parser.add_argument("--config", default="stock", help="with --db")
    parser.add_argument("--threshold", type=int, help="with --db: the configuration's JIT threshold")
    parser.add_argument("--measured", type=Path, metavar="SPLIT_RUN",
                        help="with --runs UNSPLIT_RUN: the same selection with the same --jobs, split by the runner")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4, 16, 64, 144])
    parser.add_argument("--fork-seconds", type=float, default=FORK_SECONDS,
                        help=f"a forked worker's start (default {FORK_SECONDS}: benchmarks/split_cost.py)")
    args = parser.parse_args()
    if args.db:
        sources = [from_database(args.db, args.tier, args.config, args.threshold)]
    elif args.runs:
        sources = [from_runs(args.runs)]
    else:
        sources = list(modelled(MODEL))
    if args.measured:
        if not args.runs or len(args.runs) != 1:
            parser.error("--measured needs --runs UNSPLIT_RUN (one run)")
        measured(sources[0], args.runs[0], args.measured)
        return
    met = [report(found, args.workers, args.fork_seconds) for found in sources]
    checked = [count for count in args.workers if count in CHECKED]
    if checked:
        print(f"\ntarget split/bound <= {TARGET} at N = {', '.join(map(str, checked))}: "
              f"met in {sum(met)} of {len(met)}")


if __name__ == "__main__":
    main()
