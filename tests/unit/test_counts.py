"""The count table: our bundled suites' tests beside PyTorch's, per PyTorch file and class; and the
shard-balance benchmark's core (the longest shard over the mean, timed on what a run took)."""

import importlib.util
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from harness.record.durations import History
from harness.run.collect import Collected
from harness.torch_suites.shared import counts

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.unit
def test_the_issues_figures_are_the_data_and_every_class_of_them_has_a_file():
    data = counts.load()
    assert data.torch == "2.14.1"
    assert sum(sum(classes.values()) for classes in data.pytorch.values()) == 48_141  # "about 48,100"
    assert sum(data.pytorch["test_ops.py"].values()) == 34_784
    assert all(data.ours[name] == file for file, classes in data.pytorch.items() for name in classes)


@pytest.mark.unit
@pytest.mark.parametrize(("nodeid", "expected"), [
    ("p1/test_ops_out.py::TestCommonCPU::test_out_add_cpu_float32", "TestCommon"),
    ("test_ops.py::TestCommonCUDA::test_out_add_cuda_float32", None),
    ("test_ops.py::TestCommonMeta::test_x", None),
    ("test_optim.py::TestLRScheduler::test_step", "TestLRScheduler"),
    ("test_x.py::test_module_level", None),
])
def test_a_tests_class_is_pytorchs_without_the_cpu_suffix(nodeid, expected):
    assert counts.cpu_class(nodeid) == expected


@pytest.mark.unit
def test_rows_set_ours_beside_pytorchs_and_list_our_other_classes_after():
    pytorch = {"test_ops.py": {"TestCommon": 100, "TestTags": 10}, "test_modules.py": {"TestModule": 50}}
    ours = {"ours": Counter({"TestCommon": 30, "TestModule": 5, "TestNN": 7, "Mystery": 1}),
            "breadth": Counter({"TestCommon": 90, "TestFwdGradients": 3})}
    found = counts.rows(pytorch, ours, {"TestNN": "test_nn.py", "TestFwdGradients": "test_ops_fwd_gradients.py"})
    assert [(r.file, r.test_class, r.pytorch, r.ours) for r in found] == [
        ("test_ops.py", "TestCommon", 100, (30, 90)), ("test_ops.py", "TestTags", 10, (0, 0)),
        ("test_modules.py", "TestModule", 50, (5, 0)), ("?", "Mystery", None, (1, 0)),
        ("test_nn.py", "TestNN", None, (7, 0)), ("test_ops_fwd_gradients.py", "TestFwdGradients", None, (0, 3))]


@pytest.mark.unit
def test_a_bundled_module_that_fails_to_import_or_collects_nothing_stops_the_count():
    found = {"breadth/test_fine.py": Collected(("breadth/test_fine.py::TestX::test_y",)),
             "breadth/test_broken.py": Collected((), "pytest exit status 2: ImportError: cannot import name 'x'"),
             "breadth/test_empty.py": Collected(())}
    assert counts.unusable(found) == ["breadth/test_broken.py: pytest exit status 2: ImportError: cannot import name 'x'",
                                      "breadth/test_empty.py: no test collected"]


@pytest.mark.unit
@pytest.mark.parametrize(("nodeid", "expected"), [
    ("harness/torch_suites/p1/test_ops_out.py::TestCommonCPU::test_out_add_cpu_float32", "ours"),
    ("harness/torch_suites/p3/test_compile_hops.py::TestX::test_y", "ours"),
    ("harness/torch_suites/breadth/test_ops_gradients.py::TestBwdGradientsCPU::test_fn_grad_add_cpu_complex128", "breadth"),
])
def test_a_bundled_test_counts_in_its_tiers_column(nodeid, expected):
    assert counts.column_of(nodeid) == expected


@pytest.mark.integration
def test_the_script_counts_a_checkouts_files_and_our_bundled_suites(tmp_path):
    """A checkout of two files (a CPU and a CUDA class of one name) against our real bundled suites."""
    (tmp_path / "test_ops.py").write_text(
        "class TestCommonCPU:\n" + "".join(f"    def test_{i}(self): pass\n" for i in range(3))
        + "class TestCommonCUDA:\n    def test_0(self): pass\n")
    (tmp_path / "test_modules.py").write_text("class TestModuleCPU:\n    def test_0(self): pass\n")
    data = tmp_path / "counts.yaml"
    data.write_text("torch: '0'\npytorch:\n  test_ops.py: {TestCommon: 1}\n  test_modules.py: {TestModule: 1}\n"
                    "ours: {TestCommon: test_ops.py, TestModule: test_modules.py}\n")
    done = subprocess.run([sys.executable, "-m", "harness.torch_suites.shared.counts", "--tests-dir", str(tmp_path),
                           "--data", str(data)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = {line.split("│")[2].strip(): line for line in done.stdout.splitlines() if line.count("│") == 8}
    assert [cell.strip() for cell in lines["TestCommon"].split("│")[3:5]][0] == "3"  # the CUDA class left out
    assert int(lines["TestCommon"].split("│")[4].strip().replace(",", "")) > 1000  # ours, collected
    assert int(lines["TestCommon"].split("│")[6].strip().replace(",", "")) > 1000  # breadth's, collected
    assert "total of PyTorch's files above" in done.stdout and "│       4 │" in done.stdout


@pytest.fixture
def benchmark(monkeypatch):
    spec = importlib.util.spec_from_file_location("shard_balance", ROOT / "benchmarks" / "shard_balance.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.unit
def test_shards_weighed_on_durations_beat_test_counts_on_uneven_tests(benchmark):
    """One file of 40 tests, every fourth 20 times slower, and two small files: counts deal the
    tests round, so one shard gets every slow one; durations spread them."""
    tests = {f"big.py::T::t{i:02}": (20.0 if i % 4 == 0 else 1.0) for i in range(40)}
    tests.update({"a.py::T::t": 5.0, "b.py::T::t": 5.0})
    truth = History(tests, {"big.py": 2.0, "a.py": 2.0, "b.py": 2.0}, ("run",))
    [found] = benchmark.balances(benchmark.Measured(truth, truth, truth, truth), [4])
    assert found.with_durations <= 1.15 < found.with_counts
    assert found.longest_seconds < (sum(tests.values()) + 6.0) / 4 * 1.15


@pytest.mark.unit
def test_wall_seconds_from_a_loaded_sitting_steer_shards_wrong_and_cpu_seconds_do_not(benchmark):
    """The history's sitting ran a.py's one long test while the machine was three times as loaded:
    its wall seconds plan it as half of all the work; read on a core of its own it is a third."""
    work = {"a.py::T::t": 10.0, **{f"b.py::T::t{i:02}": 1.0 for i in range(20)}}
    overhead = {"a.py": 0.0, "b.py": 0.0}
    loaded = History({**work, "a.py::T::t": 30.0}, overhead, ("sitting-1",))
    truth = History(work, overhead, ("sitting-2",))
    [found] = benchmark.balances(benchmark.Measured(truth, truth, truth, loaded), [2])
    assert found.with_durations <= 1.15 < found.on_wall


@pytest.mark.unit
def test_a_sweep_is_the_newest_complete_run_of_each_shard_and_a_missing_shard_is_named(benchmark, tmp_path):
    """`--sweep N` measures a tier run in N shard runs: the newest complete run of each shard, and
    one line naming every shard without one (never a balance figure over part of the tier)."""
    from harness.record.database import connect

    connection = connect(tmp_path / "harness.db")
    rows = [("old-1", "1/3", "complete", "2026-11-01"), ("new-1", "1/3", "complete", "2026-11-02"),
            ("cut-1", "1/3", "interrupted", "2026-11-03"), ("only-3", "3/3", "complete", "2026-11-02")]
    with connection:
        for identity, shard, status, started in rows:
            connection.execute("INSERT INTO runs (identity, directory, stamp, configuration, tier, shard, jit, started, "
                               "status, tests, record) VALUES (?, '', '', 'stock', 'breadth', ?, 'absent', ?, ?, 0, "
                               "'{}')", (identity, shard, started, status))
    with pytest.raises(SystemExit, match=r"harness.db: no complete stock run of tier breadth for shard\(s\) 2/3$"):
        benchmark.sweep(connection, "breadth", "stock", None, 3, tmp_path / "harness.db")
    with connection:
        connection.execute("INSERT INTO runs (identity, directory, stamp, configuration, tier, shard, jit, started, "
                           "status, tests, record) VALUES ('two', '', '', 'stock', 'breadth', '2/3', 'absent', "
                           "'2026-11-02', 'complete', 0, '{}')")
    assert benchmark.sweep(connection, "breadth", "stock", None, 3, tmp_path / "db") == ("new-1", "two", "only-3")
