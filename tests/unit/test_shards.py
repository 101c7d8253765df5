"""`--shard I/N` at test granularity: weights from the results database, the greedy plan, pinned sweeps."""

import json

import pytest

from harness.compare.sides import Side
from harness.compare.validity import problems
from harness.errors import HarnessError
from harness.record import durations
from harness.record.database import connect
from harness.record.durations import NO_HISTORY, History, Sweep
from harness.record.model import RunRecord, Shard
from harness.run.collect import Collected
from harness.run.shards import Unit, assign, choose, history_for, parse_shard, shard_targets, units

pytestmark = pytest.mark.unit

BIG = "test_big.py"
SMALL = ("test_a.py", "test_b.py")


def collector(tests_per_file, asked=None):
    def collect(files):
        if asked is not None:
            asked.extend(files)
        return {file: Collected(tuple(f"{file}::T::test_{i}" for i in range(tests_per_file[file]))) for file in files}
    return collect


def grouped(*files):
    return {file: [file] for file in files}


def test_longest_processing_time_is_balanced_and_deterministic():
    items = [Unit(name, name, weight) for name, weight in {"a": 10.0, "b": 9.0, "c": 5.0, "d": 4.0, "e": 1.0}.items()]
    plan = assign(items, {}, 2)
    assert [[u.name for u in shard] for shard in plan.shards] == [["a", "d", "e"], ["b", "c"]]
    assert assign(list(reversed(items)), {}, 2) == plan  # input order does not matter
    assert plan.loads == (15.0, 14.0) and plan.balance == pytest.approx(15 / 14.5)


def test_a_split_files_overhead_is_paid_in_every_shard_that_runs_a_piece():
    pieces = [Unit(f"{BIG}::t{i}", BIG, 1.0) for i in range(4)]
    plan = assign(pieces, {BIG: 10.0}, 2)
    assert plan.loads == (12.0, 12.0)  # two collections of 10 s, and 2 tests each: shorter than 14 s in one
    assert assign(pieces, {BIG: 10.0}, 2) == plan


def test_without_history_every_file_is_collected_and_split_on_test_counts():
    asked = []
    found = units(grouped(BIG, *SMALL), NO_HISTORY, collector({BIG: 10, SMALL[0]: 1, SMALL[1]: 1}, asked), 2)
    assert sorted(asked) == sorted([BIG, *SMALL])
    assert [u.name for u in found if u.whole] == list(SMALL)  # 1 test each: below half a fair shard of 6
    assert sum(not u.whole for u in found) == 10 and all(u.weight == 1.0 for u in found)


def test_with_history_only_heavy_files_are_collected():
    history = History({**{f"{BIG}::T::test_{i}": 5.0 for i in range(6)}, f"{SMALL[0]}::T::test_0": 2.0,
                       "test_c.py::T::test_0": 2.0}, {BIG: 8.0, SMALL[0]: 8.0, "test_c.py": 8.0}, ("run-1",))
    asked = []
    found = units(grouped(BIG, *SMALL, "test_c.py"), history, collector({BIG: 7, SMALL[1]: 1}, asked), 2)
    assert asked == [SMALL[1], BIG]  # test_b.py has no history: collected, it weighs 1 median test + a median start
    assert next(u for u in found if u.name == SMALL[1]).weight == 8.0 + 5.0
    split = [u for u in found if not u.whole]
    assert len(split) == 7 and split[-1].weight == 5.0  # the new test weighs the median of its file's


def test_a_big_file_never_recorded_weighs_its_tests_not_a_typical_file():
    """Seen on a checkout: test_reductions.py (4,651 tests) added to a history of five small files was
    planned as one typical small file, and its shard took four times the other's."""
    history = History({f"{name}::T::test_0": 2.0 for name in SMALL}, {name: 8.0 for name in SMALL}, ("run-1",))
    found = units(grouped(*SMALL, BIG), history, collector({BIG: 100}), 2)
    plan = assign(found, {BIG: 8.0}, 2)
    assert sum(u.weight for u in found if u.file == BIG) >= 100 * 2.0
    assert plan.balance < 1.15, plan.loads


def test_shards_cover_every_test_once_and_a_file_held_whole_runs_whole():
    targets = grouped(BIG, *SMALL)
    collect = collector({BIG: 9, SMALL[0]: 1, SMALL[1]: 1})
    plan = assign(units(targets, NO_HISTORY, collect, 3), {}, 3)
    chosen = [shard_targets(plan, index, targets) for index in (1, 2, 3)]
    everything = [t for shard in chosen for t in shard]
    assert len(everything) == len(set(everything)) == 11
    assert set(SMALL) <= set(everything)


def test_a_shard_with_nothing_to_run_is_one_line():
    sweep = Sweep("p1", "2.14.1", "x", Shard(3, 3), "stock", None)
    with pytest.raises(HarnessError, match="holds no tests"):
        choose({"test_one.py": ["test_one.py::t"]}, sweep, NO_HISTORY, collector({}))


def test_one_shard_is_the_whole_run_without_collecting():
    asked = []
    chosen = choose(grouped(BIG, *SMALL), Sweep("p1", "2.14.1", "x", Shard(1, 1), "stock", None), NO_HISTORY,
                    collector({}, asked))
    assert chosen.targets == (BIG, *SMALL) and asked == []


def test_a_shard_number_out_of_range_is_one_line():
    with pytest.raises(HarnessError, match="--shard must be I/N with 1 <= I <= N, not '3/2'"):
        parse_shard("3/2")


# --- the history in the results database --------------------------------------------------------------

def add_run(connection, identity, configuration, torch, *, threshold=None, shard=None, sharding=None, tests=(),
            cpu_share=None):
    record = json.dumps({**({"sharding": sharding} if sharding else {}),
                         **({"files": [{"file": "test_a.py", "cpu_share": cpu_share}]} if cpu_share is not None else {})})
    run = connection.execute(
        "INSERT INTO runs (identity, directory, stamp, configuration, tier, threshold, shard, jit, torch, started, "
        "status, tests, record) VALUES (?, '', '', ?, 'p1', ?, ?, 'absent', ?, ?, 'complete', ?, ?)",
        (identity, configuration, threshold, shard, torch, f"2026-01-01T00:00:{identity[-2:]}", len(tests),
         record)).lastrowid
    for seq, (nodeid, seconds) in enumerate(tests):
        connection.execute("INSERT INTO results (run, test, module, seq, outcome, duration, nodeid) "
                           "VALUES (?, ?, 'test_a', ?, 'passed', ?, ?)", (run, nodeid, seq, seconds, nodeid))
    connection.execute("INSERT INTO files (run, file, module, duration, processes) VALUES (?, 'test_a.py', 'test_a', "
                       "?, 1)", (run, 3.0 + sum(seconds for _, seconds in tests)))


@pytest.fixture
def database(tmp_path, monkeypatch):
    monkeypatch.delenv("HARNESS_DB", raising=False)
    connection = connect(tmp_path / "harness.db")
    yield tmp_path, connection
    connection.close()


def sweep(index, configuration="stock", threshold=None, torch="2.14.1"):
    return Sweep("p1", torch, "sel", Shard(index, 2), configuration, threshold)


def test_only_the_baselines_durations_with_this_torch_count_and_the_others_are_said_once(database):
    root, connection = database
    add_run(connection, "run-01", "stock", "2.14.1", tests=[("test_a.py::t1", 2.0), ("test_a.py::t2", 4.0)])
    add_run(connection, "run-02", "stock", "2.14.1", tests=[("test_a.py::t1", 4.0)])
    add_run(connection, "run-03", "stock", "2.13.0", tests=[("test_a.py::t1", 99.0)])
    add_run(connection, "run-04", "cinderx-jit", "2.14.1", threshold=1000, tests=[("test_a.py::t1", 50.0)])
    history, notes = history_for(root, sweep(1), "stock", None)
    assert history.tests == {"test_a.py::t1": 3.0, "test_a.py::t2": 4.0}  # medians over stock, torch 2.14.1
    assert history.overhead == {"test_a.py": 3.0}
    assert notes == ["shards: recorded durations of 1 of cinderx-jit with torch 2.14.1, 1 of stock with torch 2.13.0 "
                     "ignored: shards follow the durations of stock, the baseline configuration, with torch 2.14.1, "
                     "so that every configuration gets the same shards"]


def test_durations_are_read_as_the_seconds_a_core_of_its_own_would_take(database):
    """Two sittings of the same tests, the second on a machine so loaded that its tests had a core a
    quarter of their wall time: read as the same work. A share above 1 (threads) is not inflated."""
    root, connection = database
    add_run(connection, "run-01", "stock", "2.14.1", tests=[("test_a.py::t1", 2.0), ("test_a.py::t2", 4.0)],
            cpu_share=1.0)
    add_run(connection, "run-02", "stock", "2.14.1", tests=[("test_a.py::t1", 8.0), ("test_a.py::t2", 16.0)],
            cpu_share=0.25)
    add_run(connection, "run-03", "stock", "2.14.1", tests=[("test_a.py::t1", 2.0)], cpu_share=1.7)
    loaded = durations.read_history(connection, ("run-02",))
    assert loaded.tests == {"test_a.py::t1": 2.0, "test_a.py::t2": 4.0}
    assert loaded.overhead == {"test_a.py": 0.75}  # 3 s of wall time outside the tests, a quarter with a core
    assert durations.read_history(connection, ("run-02",), scaled=False).tests == {"test_a.py::t1": 8.0,
                                                                                  "test_a.py::t2": 16.0}
    assert durations.read_history(connection, ("run-03",)).tests == {"test_a.py::t1": 2.0}
    assert history_for(root, sweep(1), "stock", None)[0].tests == {"test_a.py::t1": 2.0, "test_a.py::t2": 4.0}


def test_a_record_without_cpu_shares_is_read_as_its_wall_time(database):
    """Runs recorded before the test processes measured CPU time, or a record edited by hand."""
    root, connection = database
    add_run(connection, "run-01", "stock", "2.14.1", tests=[("test_a.py::t1", 8.0)])
    add_run(connection, "run-02", "stock", "2.14.1", tests=[("test_a.py::t1", 6.0)], cpu_share="half")
    assert durations.read_history(connection, ("run-01",)).tests == {"test_a.py::t1": 8.0}
    assert durations.read_history(connection, ("run-02",)).tests == {"test_a.py::t1": 6.0}


def test_a_sweep_keeps_its_basis_until_a_series_repeats_a_shard(database):
    root, connection = database
    add_run(connection, "run-01", "stock", "2.14.1", tests=[("test_a.py::t1", 2.0)])
    first = {"selection": "sel", "weights": "durations", "basis": ["run-01"]}
    add_run(connection, "run-02", "stock", "2.14.1", shard="1/2", sharding=first, tests=[("test_a.py::t1", 9.0)])
    # later shards of this sweep, in any configuration, weigh on run-01 alone, not on the shard just ended
    assert history_for(root, sweep(1, "cinderx-jit", 1000), "stock", None)[0].basis == ("run-01",)
    assert history_for(root, sweep(2), "stock", None)[0].basis == ("run-01",)
    # stock runs shard 1/2 again: a new sweep, on every complete stock run
    assert history_for(root, sweep(1), "stock", None)[0].basis == ("run-02", "run-01")


def test_shards_of_different_tests_make_the_comparison_invalid():
    def side(targets):
        record = RunRecord.from_json({
            "configuration": {"name": "stock"}, "tier": "p1", "threshold": None, "interpreter": {},
            "versions": {"torch": "2.14.1", "python": "3.14"}, "fingerprint": {}, "tests_dir": "/t",
            "test_sources": {"hash": "h"}, "started": "2026", "status": "complete", "shard": "1/2",
            "targets": targets})
        return Side(None, [], record, ())
    assert not [p for p in problems(side(["a.py::t1"]), side(["a.py::t1"])) if "shard" in p]
    assert ["shard 1/2 holds different tests in baseline and candidate (2 targets differ): split both on the same "
            "weights (the same results database, or --durations RUN_DIR)"] == \
        [p for p in problems(side(["a.py::t1"]), side(["a.py::t2"])) if "shard" in p]
