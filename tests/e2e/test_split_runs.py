"""A real torch file split across a run's own forked workers, under stock and cinderx-jit: the same
tests, outcomes and verdict as the same selection unsplit (docs/scaling.md).

A selection of breadth's test_ops_tags.py (inside the torch wheel), node ids, so `--jobs 2` splits
the one file on test counts without any recorded history; two of its tests fail under both
configurations (sparse ops whose tags PyTorch's test disagrees with on this build)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.record.junit import read_results
from harness.record.store import RunDirectory, find_runs
from tests.e2e.test_cinderx_end_to_end import harness, nox, session_python

pytestmark = pytest.mark.e2e

FILE = "harness/torch_suites/breadth/test_ops_tags.py"
OPS = ("H", "T", "__getitem__", "__radd__", "__rdiv__", "__rmatmul__", "__rmod__", "__rmul__", "__rpow__",
       "__rsub__", "_batch_norm_with_update", "_chunk_cat", "_native_batch_norm_legit", "_refs_T",
       "_refs__conversions_bfloat16", "_refs__conversions_bool", "_refs__conversions_double", "_refs_abs",
       "_refs_acos", "_refs_acosh", "_refs_add", "_refs_addcdiv", "_refs_addcmul", "_refs_addr", "_refs_all",
       "_refs_allclose", "sparse_mm_reduce", "sparse_sampled_addmm")
NODES = tuple(f"{FILE}::TestTagsCPU::test_tags_{op}_cpu_float32" for op in OPS)
MODULE = "harness.torch_suites.breadth.test_ops_tags"
CONFIGURATIONS = ("stock", "cinderx-jit")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The selection under both configurations, whole (`--jobs 1`) and split (`--jobs 2`)."""
    found = {}
    for name, jobs in (("whole", "1"), ("split", "2")):
        results = found[name] = tmp_path_factory.mktemp(name)
        done = nox("-s", "stock-breadth", "cinderx-jit-breadth", "--", "--select", *NODES, "--jobs", jobs,
                   env={"HARNESS_RESULTS": str(results)})
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return found


def run_of(results: Path, configuration: str) -> RunDirectory:
    [run] = [RunDirectory(path) for path, record in find_runs(results) if record.configuration["name"] == configuration]
    return run


def outcomes(run: RunDirectory) -> list[tuple[str, str]]:
    return [(r.nodeid, r.outcome) for r in read_results(run.junit(MODULE))]


def diff(baseline: RunDirectory, candidate: RunDirectory, out: Path) -> dict:
    done = harness(session_python("stock-breadth"), "diff", baseline.root, candidate.root, "--format", "json",
                   "--out", out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads((out / "report.json").read_text())


def test_a_split_file_gives_the_same_tests_outcomes_and_verdict_as_unsplit(folders: dict[str, Path], tmp_path: Path):
    for configuration in CONFIGURATIONS:
        whole, split = run_of(folders["whole"], configuration), run_of(folders["split"], configuration)
        assert outcomes(split) == outcomes(whole)
        assert [nodeid for nodeid, _ in outcomes(split)] == list(NODES)  # the selection's order
        assert {outcome for _, outcome in outcomes(split)} == {"passed", "failed"}
        [record] = split.read_record().files
        assert record.split == "2 pieces, forked after one collection" and record.processes == 2
        [plain] = whole.read_record().files
        assert plain.split is None
        same = diff(whole, split, tmp_path / f"{configuration}-whole-vs-split")
        assert same["valid"] and same["summary"]["regressions"] == 0 and same["summary"]["fixes"] == 0
    verdicts = [diff(run_of(folders[name], "stock"), run_of(folders[name], "cinderx-jit"), tmp_path / name)
                for name in ("whole", "split")]
    assert all(verdict["valid"] and verdict["problems"] == [] for verdict in verdicts)
    assert verdicts[0]["summary"] == verdicts[1]["summary"]
    assert [row["candidate"] for row in verdicts[0]["modules"]] == [row["candidate"] for row in verdicts[1]["modules"]]


def test_every_worker_of_a_split_jit_file_proves_its_jit(folders: dict[str, Path]):
    """The glass-prison proof per worker: each switched the JIT on after the fork, with nothing
    compiled before it, and compiled functions of its own; the file's count is theirs summed, as CinderX counts in each
    process (the same rule as a file resumed in several processes)."""
    [record] = run_of(folders["split"], "cinderx-jit").read_record().files
    assert len(record.jit_processes) == 2
    for process in record.jit_processes:
        assert process["applied"]["enabled"] and process["applied"]["compiled_before"] == 0
        assert process["finished"]["compiled"] > 0
    assert record.compiled == sum(process["finished"]["compiled"] for process in record.jit_processes) > 0
