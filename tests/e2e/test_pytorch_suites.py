"""PyTorch's own suites, as a user runs them without a PyTorch checkout: the tests that ship inside
torch (harness/torch_suites/), through nox, on CPython 3.14 with torch 2.14.1 and CinderX.

A P1 selection by database entry under stock and cinderx-jit (threshold 1000) must give a valid
verdict with compiled functions in every module, and the harness's record of every test must
agree with pytest's own JUnit XML of the same modules run without the harness. A P2 selection
(distributed and RPC suites: every test starts worker processes) must prove the JIT in the
workers too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.compare.identity import disagreements
from harness.protocol import Env
from harness.compare.sides import load_side
from harness.record.model import FileRecord
from harness.record.store import RunDirectory, find_runs
from tests.e2e.test_cinderx_end_to_end import ROOT, nox, session_python

pytestmark = pytest.mark.e2e

# One entry of each P1 database: an op (all op checks), a module, an optimizer, a common_nn test,
# plus the fx pass-manager file, which has no database.
P1_ENTRIES = ("add", "nn.Linear", "SGD")
P1_FILES = ("harness/torch_suites/p1/test_fx_pass_manager.py",)


@pytest.fixture(scope="module")
def p1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    results = tmp_path_factory.mktemp("p1")
    env = {"HARNESS_RESULTS": str(results)}
    done = nox("-s", "stock-p1", "cinderx-jit-p1", "--", "--select", *P1_ENTRIES, *P1_FILES, "--jobs", "2", env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "tests: PyTorch's own suites inside the installed torch 2.14.1" in done.stdout + done.stderr
    done = nox("-s", "diff", env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return results


def test_p1_selection_gives_a_valid_verdict_with_the_jit_proven_in_every_module(p1: Path):
    report = json.loads((p1 / "reports" / "report.json").read_text())
    assert report["valid"] and report["problems"] == [], report["problems"]
    assert report["summary"]["regressions"] == 0
    modules = {row["module"]: row for row in report["modules"]}
    assert len(modules) >= 5 and all(module.startswith("harness.torch_suites.p1.") for module in modules)
    for row in modules.values():
        assert row["jit_compiled"] > 0, row
    tested = sum(sum(row["candidate"].values()) for row in modules.values())
    assert tested > 20, modules  # 26 with torch 2.14.1
    records = {record.configuration["name"]: record for _, record in find_runs(p1)}
    origin = records["stock"].test_sources["origin"]
    assert origin["kind"] == "torch" and origin["torch"] == "2.14.1" and origin["git"]
    assert records["stock"].entries == P1_ENTRIES
    # the entries narrow the files they selected; a file selected by its path runs whole
    assert set(records["stock"].narrowed) == {file.file for file in records["stock"].files} - set(P1_FILES)
    assert sum(modules["harness.torch_suites.p1.test_fx_pass_manager"]["candidate"].values()) == 4


def test_p1_records_agree_with_pytest_alone(p1: Path, tmp_path: Path):
    """Same test ids, same outcomes as `python -m pytest FILE --junitxml` without the harness."""
    run = next(path for path, record in find_runs(p1) if record.configuration["name"] == "stock")
    record = RunDirectory(run).read_record()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    env.pop("CI", None)

    def pytest_alone(file: FileRecord) -> subprocess.CompletedProcess[str]:
        narrowed = {Env.ENTRIES: ",".join(P1_ENTRIES)} if file.file in record.narrowed else {}
        return subprocess.run([str(session_python("stock-p1")), "-bb", "-m", "pytest", file.file, "-q",
                               "-p", "no:cacheprovider", f"--junitxml={tmp_path / f'{file.module}.xml'}"],
                              cwd=ROOT, env={**env, **narrowed}, capture_output=True, text=True)

    with ThreadPoolExecutor(2) as pool:  # a process per file as before, two at a time (one thread each)
        for done in pool.map(pytest_alone, record.files):
            assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    ours = load_side(run).results
    assert disagreements(ours, load_side(tmp_path).results) == []
    assert sum(1 for _ in ours) > 20


# One test of each kind of P2 suite: an RPC test (4 spawned workers on TensorPipe) and a
# DistributedTest test (3 spawned workers on gloo). Each one's work happens in its workers.
P2_TESTS = {"harness/torch_suites/p2/test_rpc_1.py::TensorPipeRpcTest::test_self_py_udf_remote": 4,
            "harness/torch_suites/p2/test_distributed_gloo_1.py::TestDistBackendWithSpawn::test_all_reduce_sum": 3}


def test_p2_selection_proves_the_jit_in_every_spawned_worker(tmp_path: Path):
    env = {"HARNESS_RESULTS": str(tmp_path)}
    done = nox("-s", "stock-p2", "cinderx-jit-p2", "--", "--select", *P2_TESTS, "--jobs", "1", env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = nox("-s", "diff", env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "reports" / "report.json").read_text())
    assert report["valid"] and report["problems"] == [], report["problems"]
    runs = {record.configuration["name"]: path for path, record in find_runs(tmp_path)}
    for name in ("stock", "cinderx-jit"):
        outcomes = {f"{test.classname}::{test.name}": test.outcome for test in load_side(runs[name]).results}
        assert sorted(outcomes.values()) == ["passed", "passed"], (name, outcomes)
    for file in RunDirectory(runs["cinderx-jit"]).read_record().files:
        workers = file.descendants
        spawned = next(count for test, count in P2_TESTS.items() if test.startswith(file.file + "::"))
        assert workers["started"] >= spawned and workers["reported"] >= spawned, (file.file, workers)
        assert workers["as_requested"] == workers["reported"] and workers["compiled"] > 0, (file.file, workers)
        assert not workers["without_jit"] and not workers["unreported"], (file.file, workers)


CHECKOUT = ROOT / "tests" / "fixtures" / "checkout"  # PyTorch's options in PyTorch's option groups
CHECKOUT_FILES = ("test_checkout_options.py", "test_checkout_regression.py")
CHECKOUT_REGRESSION = "test_checkout_regression.py::TestCheckoutRegression::test_scale_must_stay_interpreted"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkout-style folder (`--tests-dir`, script mode, a conftest defining PyTorch's options) under
    stock and cinderx-jit through nox, with CI set as on a CI machine."""
    results = tmp_path_factory.mktemp("checkout")
    done = nox("-s", "stock-p1", "cinderx-jit-p1", "--", "--tests-dir", str(CHECKOUT), "--select", *CHECKOUT_FILES,
               env={"HARNESS_RESULTS": str(results), "CI": "true"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return results


def test_a_checkout_with_pytorchs_option_groups_runs_every_test_under_both_configurations(checkout: Path):
    records = {record.configuration["name"]: record for _, record in find_runs(checkout)}
    counts = {name: {file.file: file.counts for file in record.files} for name, record in records.items()}
    assert counts == {
        "stock": {"test_checkout_options.py": {"passed": 2}, "test_checkout_regression.py": {"passed": 3}},
        "cinderx-jit": {"test_checkout_options.py": {"passed": 2},
                        "test_checkout_regression.py": {"passed": 2, "failed": 1}}}, counts
    # the op the regression file runs at import would keep an OpenMP pool alive; the tier keeps it away
    assert all(file.restart == "warm" for record in records.values() for file in record.files)
    assert all(file.jit["compiled"] > 0 for file in records["cinderx-jit"].files)


def test_confirmation_and_culprit_on_a_checkout_rerun_in_forks_of_collected_processes(checkout: Path):
    done = nox("-s", "diff", "--", "--confirm", "2", "--culprit", env={"HARNESS_RESULTS": str(checkout)})
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert "confirmation: 4 reruns in forks of collected processes, 0 in fresh processes" in output, output[-3000:]
    assert re.search(r"found: \d+ probes, \d+ reruns \(\d+ reruns in forks of collected processes, 0 in fresh", output), \
        output[-3000:]
    report = json.loads((checkout / "reports" / "report.json").read_text())
    [regression] = report["regressions"]
    assert regression["nodeid"] == CHECKOUT_REGRESSION and regression["confirmed"] is True
    assert [f["name"] for f in regression["culprit"]["functions"]] == ["test_checkout_regression:scale"]
