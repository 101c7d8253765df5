"""One run on N workers (harness/run/split.py): heavy files split across workers, their pieces forked
from one collection, and the plan's makespan against the lower bound."""

import pytest

from harness.record.durations import History
from harness.run.collect import Collected
from harness.run.shards import Unit, assign
from harness.run.split import file_plan, lower_bound, plan_run, timed

pytestmark = pytest.mark.unit

BIG = "test_big.py"
START = 10.0


def history(big_tests=16, small=("test_a.py", "test_b.py")):
    """One file of `big_tests` 1-second tests, and small files of one 2-second test each; every
    file starts in 10 s."""
    tests = {f"{BIG}::T::test_{i}": 1.0 for i in range(big_tests)}
    tests.update({f"{file}::T::test_0": 2.0 for file in small})
    return History(tests, {file: START for file in (BIG, *small)}, ())


def grouped_and_collector(found: History):
    by_file: dict[str, list[str]] = {}
    for nodeid in found.tests:
        by_file.setdefault(nodeid.split("::", 1)[0], []).append(nodeid)
    return ({file: [file] for file in by_file},
            lambda files: {file: Collected(tuple(by_file[file])) for file in files})


def test_a_heavy_file_goes_to_several_workers_and_its_start_is_paid_once_when_forked():
    found = history()
    grouped, collect = grouped_and_collector(found)
    forked = timed(plan_run(grouped, found, collect, 4, fork_seconds=0.5), found, 4)
    fresh = timed(plan_run(grouped, found, collect, 4, forked=False), found, 4)
    whole = timed(file_plan(grouped, found, 4), found, 4)
    holders = [worker for worker in forked.plan.shards if any(unit.file == BIG and not unit.whole for unit in worker)]
    assert len(holders) >= 3  # the 16 tests are spread, not run by one worker
    assert whole.makespan == START + 16  # whole files: never shorter than the longest file
    # The total is 3 starts and 20 s of tests (50 s, 12.5 s a worker); forked, the big file's start is
    # paid once and each further worker pays 0.5 s, so the plan stays near the bound; started anew in
    # every worker, each piece pays 10 s more.
    assert forked.bound == 12.5
    assert forked.makespan < 1.3 * forked.bound < fresh.makespan < whole.makespan


def test_the_first_worker_of_a_split_file_pays_its_start_and_the_others_the_fork():
    pieces = [Unit(f"{BIG}::t{i}", BIG, 1.0) for i in range(4)]
    plan = assign(pieces, {BIG: 0.5}, 2, first={BIG: START})
    # the collector (10 s) and the fork (waits for the collection, forks in 0.5 s) run two tests each
    assert plan.loads == (START + 2.0, START + 0.5 + 2.0)
    assert [len(worker) for worker in plan.shards] == [2, 2]
    assert assign(pieces, {BIG: START}, 2).loads == (12.0, 12.0)  # shards: each starts the file itself


def test_a_forked_piece_cannot_start_before_its_file_is_collected():
    pieces = [Unit(f"{BIG}::t{i}", BIG, 4.0) for i in range(2)]
    plan = assign(pieces, {BIG: 0.5}, 2, first={BIG: START})
    assert plan.loads == (START + 4.0, START + 0.5 + 4.0)  # the fork waits for the collection, then forks


def test_the_lower_bound_is_the_work_over_the_workers_or_the_longest_test_after_its_files_start():
    found = History({f"{BIG}::slow": 30.0, f"{BIG}::quick": 1.0}, {BIG: START}, ())
    assert lower_bound(found, 1) == 41.0
    assert lower_bound(found, 8) == START + 30.0


def test_without_history_a_run_is_planned_on_test_counts():
    found = history()
    grouped, collect = grouped_and_collector(found)
    counted = History({}, {}, ())
    plan = plan_run(grouped, counted, collect, 4)
    loads = sorted(len(worker) for worker in plan.shards)
    assert sum(loads) == 18 and loads[-1] - loads[0] <= 1


def test_the_recorded_tier_costs_are_kept_whole_when_spread_over_tests(monkeypatch):
    """benchmarks/scaling.py's default input: each module's per-test durations and start add up to
    the seconds recorded for it, and the longest named tests keep theirs."""
    import importlib.util
    import sys
    from pathlib import Path

    import yaml

    from harness.run.split import file_seconds

    benchmarks = Path(__file__).resolve().parents[2] / "benchmarks"
    spec = importlib.util.spec_from_file_location("benchmark_scaling", benchmarks / "scaling.py")
    scaling = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, scaling)
    spec.loader.exec_module(scaling)
    costs = yaml.safe_load(scaling.MODEL.read_text())
    sources = {source.label.split(" (")[0]: source.history for source in scaling.modelled(scaling.MODEL)}
    assert set(sources) == {"breadth, stock", "breadth, cinderx-jit", "p3, stock", "p3, cinderx-jit"}
    for label, history in sources.items():
        tier, configuration = label.split(", ")
        modules = costs[tier]["modules"]
        assert file_seconds(history) == pytest.approx({f"{m}.py": c[configuration] for m, c in modules.items()})
        assert len(history.tests) == sum(c["tests"] for c in modules.values())
    longest = max(sources["breadth, stock"].tests.values())
    assert longest == 600.0
