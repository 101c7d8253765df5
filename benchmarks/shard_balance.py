"""How even `--shard I/N` makes shards: the longest shard over the mean shard, from recorded runs.

For each N, the shards the harness would choose (harness/run/shards.py: files heavier than half a
fair shard split into tests, greedy longest-processing-time) are weighed on the durations recorded
for the baseline configuration before the measured run, as the harness reads them (each file's
seconds scaled by its CPU share: the time a core of its own would take, harness/record/durations.py),
and on test counts alone (no history); each plan is then timed with what the measured run really
took, read the same way: per test, plus each file's start, import and collection (its duration
outside its tests) once per shard that runs a piece of it. Column `wall` plans and times on the
wall seconds as recorded instead (what the harness did before it recorded CPU shares: on a shared
machine, the load of each moment). The issue's target is longest/mean <= 1.15 with durations. With no earlier baseline
run, the durations plan is weighed on the measured run itself (in-sample), and says so. `least (s)`
is the shortest the longest shard could be: a test cannot be split, so no shard is shorter than
the longest test plus its file's start, nor than the work over N.

    python benchmarks/shard_balance.py --db RESULTS/harness.db [--tier p1] [--config stock]
        [--measured CONFIG] [--threshold N] [--shard I/N | --sweep N] [--config-threshold N]
        [--shards 2 3 4 6 8] [--target-minutes 30]

`--shard I/N` measures a shard run instead of a whole one: its tests are then split again into
--shards. `--sweep N` measures a whole tier run as N shards over several sittings (breadth): the
newest complete run of each shard I/N of the measured configuration, planned on the same sweep of
--config (out of sample when that is another configuration or threshold: other processes, other
load; in-sample, and said so, when it is the measured one).

It also prints the CPU seconds of the measured run and how many shards keep each under
--target-minutes (what the CI workflow's shard count follows); with --sweep, the seconds of every
test module under each of the two configurations.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.record import durations  # noqa: E402
from harness.record.database import read_only  # noqa: E402
from harness.record.durations import NO_HISTORY, History  # noqa: E402
from harness.run.collect import Collected  # noqa: E402
from harness.run.shards import Plan, assign, units  # noqa: E402
from harness.run.split import file_seconds  # noqa: E402

TARGET = 1.15


@dataclass(frozen=True)
class Balance:
    shards: int
    with_durations: float
    with_counts: float
    on_wall: float  # planned and timed on wall seconds as recorded
    longest_seconds: float
    least_seconds: float


@dataclass(frozen=True)
class Measured:
    """The measured run and the history its plan is weighed on, read as the harness reads them
    (`truth`, `before`: CPU-scaled) and as wall seconds (`truth_wall`, `before_wall`)."""

    truth: History
    before: History
    truth_wall: History
    before_wall: History

    @classmethod
    def read(cls, connection, measured: tuple[str, ...], basis: tuple[str, ...]) -> Measured:
        return cls(*(durations.read_history(connection, runs, scaled=scaled)
                     for scaled in (True, False) for runs in (measured, basis)))


def realized(plan: Plan, truth: History) -> list[float]:
    """Each shard's seconds as the measured run took them: its tests, and every file it starts."""
    loads = []
    for shard in plan.shards:
        tests = sum(_seconds(unit.name, unit.whole, truth) for unit in shard)
        loads.append(tests + sum(truth.overhead.get(file, 0.0) for file in {unit.file for unit in shard}))
    return loads


def _seconds(name: str, whole: bool, truth: History) -> float:
    if whole:
        return sum(seconds for nodeid, seconds in truth.tests.items() if nodeid.split("::", 1)[0] == name)
    return truth.tests.get(name, 0.0)


def ratio(loads: list[float]) -> float:
    mean = statistics.fmean(loads)
    return max(loads) / mean if mean else 1.0


def balances(measured: Measured, counts: list[int]) -> list[Balance]:
    """Longest/mean per shard count, planned on `before` (recorded) and on counts, timed on `truth`;
    and planned and timed on wall seconds."""
    truth, before = measured.truth, measured.before
    by_file: dict[str, list[str]] = {}
    for nodeid in truth.tests:
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    grouped = {file: [file] for file in sorted(by_file)}

    def collect(files: list[str]) -> dict[str, Collected]:
        return {file: Collected(tuple(by_file[file])) for file in files}

    largest = max(seconds + truth.overhead.get(nodeid.split("::", 1)[0], 0.0) for nodeid, seconds in truth.tests.items())
    total = sum(truth.tests.values()) + sum(truth.overhead.values())
    found = []
    for count in counts:
        timed = realized(assign(units(grouped, before, collect, count), before.overhead, count), truth)
        counted = realized(assign(units(grouped, NO_HISTORY, collect, count), {}, count), truth)
        walled = realized(assign(units(grouped, measured.before_wall, collect, count), measured.before_wall.overhead,
                                 count), measured.truth_wall)
        found.append(Balance(count, ratio(timed), ratio(counted), ratio(walled), max(timed),
                             max(largest, total / count)))
    return found


def sweep(connection, tier: str, configuration: str, threshold: int | None, count: int, db: Path) -> tuple[str, ...]:
    """The newest complete run of each shard I/`count` of one configuration: a whole tier run in
    pieces. Exits with one line naming the shards that have none."""
    found, missing = [], []
    for index in range(1, count + 1):
        row = connection.execute(
            "SELECT identity FROM runs WHERE tier = ? AND configuration = ? AND threshold IS ? AND shard = ? "
            "AND status = 'complete' ORDER BY started DESC LIMIT 1",
            (tier, configuration, threshold, f"{index}/{count}")).fetchone()
        (found if row else missing).append(row[0] if row else f"{index}/{count}")
    if missing:
        sys.exit(f"{db}: no complete {configuration} run of tier {tier} for shard(s) {', '.join(missing)}")
    return tuple(found)


def _report(measured: Measured, label: str, cpu_label: str, args: argparse.Namespace) -> None:
    truth, wall = measured.truth, measured.truth_wall
    cpu = sum(truth.tests.values()) + sum(truth.overhead.values())
    seconds = sum(wall.tests.values()) + sum(wall.overhead.values())
    print(f"measured: {cpu_label} ({len(truth.tests):,} tests, {len(truth.overhead)} files, {cpu:,.0f} s on a core "
          f"of its own, {seconds:,.0f} s of wall time in its test processes); durations from {label}")
    print(f"{'shards':>6}  {'durations':>9}  {'counts':>6}  {'wall':>6}  {'longest (s)':>11}  {'least (s)':>9}")
    for found in balances(measured, args.shards):
        mark = "ok" if found.with_durations <= TARGET else f"> {TARGET}"
        print(f"{found.shards:>6}  {found.with_durations:>9.3f}  {found.with_counts:>6.3f}  {found.on_wall:>6.3f}  "
              f"{found.longest_seconds:>11,.0f}  {found.least_seconds:>9,.0f}  {mark}")
    print(f"shards for at most {args.target_minutes:g} min each: {math.ceil(cpu / (60 * args.target_minutes))}")


def _measure_sweep(connection, args: argparse.Namespace) -> None:
    """A whole tier from its shard runs, planned on --config's sweep of the same shards."""
    measured_config = args.measured or args.config
    measured = sweep(connection, args.tier, measured_config, args.threshold, args.sweep, args.db)
    basis = sweep(connection, args.tier, args.config, args.config_threshold, args.sweep, args.db)
    same = basis == measured
    read = Measured.read(connection, measured, basis)
    _report(read, "the same runs -- in-sample" if same else f"the {args.sweep} shard runs of {args.config}",
            f"{measured_config} tier {args.tier}, the newest run of each of {args.sweep} shards", args)
    _print_per_module({measured_config: read.truth, **({} if same else {args.config: read.before})})


def _print_per_module(histories: dict[str, History]) -> None:
    """The tier's cost per module and configuration: each test process runs on one core
    (OMP_NUM_THREADS=1), so its seconds, scaled to the time it had a core, are what the module costs
    a core (runs recorded without CPU shares: wall seconds, inflated by the load)."""
    tables = {name: file_seconds(history) for name, history in histories.items()}
    files = sorted(set().union(*tables.values()))
    print(f"\n{'module':<48}" + "".join(f"{name:>14}" for name in tables))
    for file in files:
        print(f"{Path(file).stem:<48}" + "".join(f"{table.get(file, 0.0):>14,.0f}" for table in tables.values()))
    print(f"{'total (core seconds)':<48}" + "".join(f"{sum(table.values()):>14,.0f}" for table in tables.values()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--tier", default="p1")
    parser.add_argument("--config", default="stock", help="the baseline configuration (its runs weigh the shards)")
    parser.add_argument("--measured", help="configuration whose newest run is the measured one (default: --config)")
    parser.add_argument("--threshold", type=int, help="the measured configuration's JIT threshold")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--shard", help="the measured run is this shard (I/N) of its tier, not a whole run")
    shape.add_argument("--sweep", type=int, metavar="N", help="the measured run is the tier whole, as the newest "
                       "complete run of each of its N shards")
    parser.add_argument("--config-threshold", type=int, help="with --sweep: --config's JIT threshold")
    parser.add_argument("--shards", type=int, nargs="+", default=[2, 3, 4, 6, 8])
    parser.add_argument("--target-minutes", type=float, default=30.0)
    args = parser.parse_args()
    connection = read_only(args.db)
    if args.sweep:
        _measure_sweep(connection, args)
        return
    measured = connection.execute(
        "SELECT identity, torch, started FROM runs WHERE tier = ? AND configuration = ? AND threshold IS ? "
        "AND status = 'complete' AND shard IS ? ORDER BY started DESC LIMIT 1",
        (args.tier, args.measured or args.config, args.threshold, args.shard)).fetchone()
    if measured is None:
        which = f"shard {args.shard}" if args.shard else "unsharded"
        sys.exit(f"{args.db}: no complete {which} {args.measured or args.config} run of tier {args.tier}")
    identity, torch, started = measured
    earlier = tuple(row[0] for row in connection.execute(
        "SELECT identity FROM runs WHERE tier = ? AND configuration = ? AND torch IS ? AND status = 'complete' "
        "AND started < ? AND identity != ? ORDER BY started DESC LIMIT ?",
        (args.tier, args.config, torch, started, identity, durations.BASIS_RUNS)))
    _report(Measured.read(connection, (identity,), earlier or (identity,)), f"{len(earlier)} earlier {args.config} run(s)"
            + ("" if earlier else " -- none, so in-sample: weighed on the measured run itself"), identity, args)


if __name__ == "__main__":
    main()
