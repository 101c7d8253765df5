"""Files split across the run's own forked workers (docs/scaling.md): one collection, K workers at
once, the file's record exactly as unsplit, a crash or hang resumed within its piece."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from harness.record.durations import History
from harness.record.junit import read_results
from harness.record.model import RunRecord
from harness.record.store import RunDirectory
from harness.run.forkserver import contiguous_pieces
from harness.run.split import split_files
from tests.conftest import FIXTURES, run_fixtures

SPLIT = FIXTURES / "split"
FILE = "test_pieces.py"
NODEIDS = [f"{FILE}::test_piece[{i}]" for i in range(12)]
# A history in which test_pieces.py outweighs the other file many times: the plan splits it in 2.
HEAVY = History({**{nodeid: 1.0 for nodeid in NODEIDS}, "test_light.py::test_light": 0.5}, {}, ("made up",))


def events(run, module="test_pieces"):
    return [json.loads(line) for line in run.events(module).read_text().splitlines()]


def workers(run):
    """The pieces of the workers that started, the first two (forked together, in either order) sorted."""
    pieces = [e.get("piece") for e in events(run) if e["event"] == "worker_start"]
    return sorted(pieces[:2]) + pieces[2:]


def outcomes(run):
    return [(r.nodeid, r.outcome) for r in read_results(run.junit("test_pieces"))]


def run_split(tmp_path, **options):
    return run_fixtures(tmp_path / "results", (FILE,), tests_dir=SPLIT, jobs=2, history=HEAVY, **options)


@pytest.mark.unit
def test_pieces_are_consecutive_runs_of_equal_weight_and_never_empty():
    tests = [f"t{i}" for i in range(10)]
    assert contiguous_pieces(tests, {}, 2) == [tests[:5], tests[5:]]
    heavy_first = {"t0": 9.0, **{f"t{i}": 1.0 for i in range(1, 10)}}
    assert contiguous_pieces(tests, heavy_first, 2) == [["t0"], tests[1:]]
    assert contiguous_pieces(tests[:2], {}, 4) == [["t0"], ["t1"]]
    last_heavy = {**{f"t{i}": 1.0 for i in range(9)}, "t9": 100.0}
    assert [len(piece) for piece in contiguous_pieces(tests, last_heavy, 3)] == [8, 1, 1]
    assert contiguous_pieces(tests, {"t0": 1.0, "t1": 1.0}, 2) == [tests[:5], tests[5:]]  # unknown: the median


@pytest.mark.unit
def test_the_plan_splits_only_a_file_heavier_than_its_share():
    grouped = {FILE: [FILE], "test_light.py": ["test_light.py"]}
    split = split_files(grouped, HEAVY, 2)
    assert set(split) == {FILE} and split[FILE].pieces == 2 and split[FILE].weights[NODEIDS[0]] == 1.0
    assert split_files(grouped, HEAVY, 1) == {}
    even = History({NODEIDS[0]: 1.0, "test_light.py::test_light": 1.0}, {}, ())
    assert split_files(grouped, even, 2) == {}


@pytest.mark.integration
def test_a_split_file_runs_in_two_forked_pieces_and_records_as_unsplit(tmp_path):
    unsplit = run_fixtures(tmp_path / "unsplit", (FILE,), tests_dir=SPLIT, jobs=2)
    run = run_split(tmp_path)
    assert outcomes(run) == outcomes(unsplit) == [(nodeid, "passed") for nodeid in NODEIDS]
    seen = events(run)
    assert [e["event"] for e in seen].count("session_start") == 1 and [e["event"] for e in seen].count("collected") == 1
    workers = {e["piece"]: e["pid"] for e in seen if e["event"] == "worker_start"}
    assert sorted(workers) == [0, 1] and len(set(workers.values())) == 2
    ran = {e["nodeid"]: e["piece"] for e in seen if e["event"] == "result"}
    assert ran == {nodeid: 0 if i < 6 else 1 for i, nodeid in enumerate(NODEIDS)}
    starts = {e["piece"]: e["time"] for e in seen if e["event"] == "start"}
    ends = {e["piece"]: e["time"] for e in seen if e["event"] == "result"}
    assert starts[1] < ends[0]  # side by side, not one after the other
    [record] = run.read_record().files
    assert record.split == "2 pieces, forked after one collection" and record.counts == {"passed": 12}
    assert record.processes == 2 and record.culprit is None and record.exit_status == 0
    [plain] = unsplit.read_record().files
    assert plain.split is None


@pytest.mark.integration
def test_a_crash_in_one_piece_resumes_that_piece_and_the_other_carries_on(tmp_path):
    run = run_split(tmp_path, env={"SPLIT_FAULT": "abort:8"})
    assert outcomes(run) == [(nodeid, "crashed" if i == 8 else "passed") for i, nodeid in enumerate(NODEIDS)]
    seen = events(run)
    assert workers(run) == [0, 1, 1]
    [exit_event] = [e for e in seen if e["event"] == "worker_exit"]
    assert exit_event["piece"] == 1 and exit_event["status"] == -6
    [record] = run.read_record().files
    assert record.processes == 3 and record.signal == "SIGABRT"
    assert record.culprit == f"{NODEIDS[8]}: process died with SIGABRT"
    assert record.split == "2 pieces, forked after one collection"


@pytest.mark.integration
def test_a_hang_in_one_piece_times_out_alone_and_its_piece_resumes(tmp_path):
    run = run_split(tmp_path, env={"SPLIT_FAULT": "hang:2"}, test_timeout=3)
    assert outcomes(run) == [(nodeid, "timeout" if i == 2 else "passed") for i, nodeid in enumerate(NODEIDS)]
    assert workers(run) == [0, 1, 0]
    [record] = run.read_record().files
    assert record.culprit.startswith(f"{NODEIDS[2]}: test exceeded the tier's per-test limit (3 s)")


@pytest.mark.integration
def test_a_split_file_over_its_limit_stops_every_piece_and_keeps_what_finished(tmp_path):
    """Piece 0 hangs in test 2 until the file's limit; piece 1 has finished by then: its results,
    and piece 0's first two, are kept; the hung test is the file's timeout; nothing runs after."""
    run = run_split(tmp_path, env={"SPLIT_FAULT": "hang:2"}, timeout=20)
    expected = [(nodeid, "passed") for nodeid in NODEIDS[:2]] + [(NODEIDS[2], "timeout")] + [
        (nodeid, "passed") for nodeid in NODEIDS[6:]]
    assert outcomes(run) == expected
    [record] = run.read_record().files
    assert record.culprit.startswith(f"{NODEIDS[2]}: file exceeded the tier's limit (20 s)")
    assert workers(run) == [0, 1]


@pytest.mark.integration
def test_where_forking_is_unsafe_the_file_runs_unsplit_and_says_why(tmp_path):
    run = run_split(tmp_path, restart="fresh")
    assert outcomes(run) == [(nodeid, "passed") for nodeid in NODEIDS]
    [record] = run.read_record().files
    assert record.split == "unsplit: the tier asks for fresh processes" and record.processes == 1


@pytest.mark.integration
def test_a_split_file_that_cannot_fork_gives_back_the_slots_of_the_pieces_it_does_not_run(tmp_path):
    """The plan gives test_pieces.py both `--jobs` slots; its process cannot fork, so it runs as one,
    and the other file starts in the second slot at once instead of waiting for it to end."""
    run = run_fixtures(tmp_path / "results", (FILE, "test_light.py"), tests_dir=SPLIT, jobs=2, history=HEAVY,
                       restart="fresh")
    pieces, light = events(run), events(run, "test_light")
    assert [e["pieces"] for e in pieces if e["event"] == "restart"] == [1]
    light_began = next(e["time"] for e in light if e["event"] == "session_start")
    pieces_ended = next(e["time"] for e in pieces if e["event"] == "session_finish")
    assert light_began < pieces_ended, "test_light.py waited for the unsplit file's second slot"


def harness(*args: object, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.integration
def test_an_interrupt_inside_a_split_file_keeps_every_finished_test_and_resume_completes_it(tmp_path):
    """SIGTERM while piece 0 hangs and piece 1 has finished: the run stops resumable with all 9
    finished results kept; `--resume` runs the 3 left (split again) and nothing twice."""
    results = tmp_path / "results"
    env = {**os.environ, "SPLIT_FAULT": ""}
    common = ("--config", "stock", "--tier", "p0", "--tests-dir", SPLIT, "--select", FILE, "--results", results)
    assert harness("run", *common, env=env).returncode == 0  # unsplit: the durations the split is planned on
    [earlier] = list(results.glob("stock-p0-*"))
    runner = subprocess.Popen([sys.executable, "-m", "harness", "run", *map(str, common), "--jobs", "2",
                               "--durations", str(earlier)], env={**env, "SPLIT_FAULT": "hang:3"},
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        stream = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            runs = [run for run in results.glob("stock-p0-*") if run != earlier]
            stream = runs[0] / "events" / "test_pieces.jsonl" if runs else None
            seen = [json.loads(line) for line in stream.read_text().splitlines()] if stream and stream.exists() else []
            if (any(e["event"] == "session_finish" and e.get("piece") == 1 for e in seen)
                    and any(e["event"] == "start" and e["nodeid"] == NODEIDS[3] for e in seen)):
                break
            assert runner.poll() is None, runner.communicate()
            time.sleep(0.1)
        runner.send_signal(signal.SIGTERM)
        out, err = runner.communicate(timeout=60)
    finally:
        runner.kill()
    assert runner.returncode != 0 and "continue with: python -m harness run --resume" in out + err
    run = stream.parents[1]
    record = RunRecord.from_json(json.loads((run / "run.json").read_text()))
    assert record.status == "interrupted" and record.files == ()
    events = [json.loads(line) for line in stream.read_text().splitlines()]
    finished = [e["nodeid"] for e in events if e["event"] == "result"]
    # The pieces are consecutive tests of about equal recorded time: piece 1 starts where its first test
    # does (the earlier run's durations, measured on a loaded machine, need not cut the file in half).
    boundary = next(i for i, nodeid in enumerate(NODEIDS)
                    if any(e["event"] == "start" and e["nodeid"] == nodeid and e.get("piece") == 1 for e in events))
    assert 3 < boundary and sorted(finished) == sorted(NODEIDS[:3] + NODEIDS[boundary:])  # the hung test stopped

    resumed = harness("run", "--resume", run, "--jobs", "2", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert [(r.nodeid, r.outcome) for r in read_results(run / "junit" / "test_pieces.xml")] == [
        (nodeid, "passed") for nodeid in NODEIDS]
    seen = [json.loads(line) for line in stream.read_text().splitlines()]
    starts = [e["nodeid"] for e in seen if e["event"] == "start"]
    assert all(starts.count(nodeid) == 1 for nodeid in NODEIDS if nodeid != NODEIDS[3])
    pieces = [e.get("piece") for e in seen if e["event"] == "worker_start"]
    assert sorted(pieces[:2]) == sorted(pieces[2:]) == [0, 1]  # the rest split again
    [file] = RunRecord.from_json(json.loads((run / "run.json").read_text())).files
    assert file.split == "2 pieces, forked after one collection" and file.counts == {"passed": 12}


@pytest.mark.integration
def test_the_scaling_benchmark_times_a_real_split_run_against_its_plan(tmp_path):
    """`benchmarks/scaling.py --runs UNSPLIT --measured SPLIT`: the same selection and `--jobs 2`,
    whole, then split on the whole run's durations; planned and measured makespans beside the bound."""
    env = {**os.environ, "SPLIT_FAULT": ""}
    common = ("--config", "stock", "--tier", "p0", "--tests-dir", SPLIT, "--select", FILE, "--jobs", "2")
    assert harness("run", *common, "--results", tmp_path / "whole", env=env).returncode == 0
    [whole] = list((tmp_path / "whole").glob("stock-p0-*"))
    assert harness("run", *common, "--durations", whole, "--results", tmp_path / "split", env=env).returncode == 0
    [split] = list((tmp_path / "split").glob("stock-p0-*"))
    [record] = RunDirectory(whole).read_record().files
    assert record.split is None  # no history in a new results folder, a whole file: nothing is split
    done = subprocess.run([sys.executable, str(FIXTURES.parents[1] / "benchmarks" / "scaling.py"), "--runs", str(whole),
                           "--measured", str(split)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = {line[:26].strip(): line[26:].split() for line in done.stdout.splitlines() if line.startswith("  ")}
    assert "split files: test_pieces.py (2 pieces, forked after one collection)" in done.stdout
    assert "measured: N = 2" in done.stdout
    bound = float(lines["bound"][0])
    assert float(lines["split, planned"][0]) < float(lines["whole files, planned"][0])
    for row in ("whole files, measured", "split, measured"):
        seconds, ratio, wall = map(float, lines[row])
        assert seconds > 0 and wall >= seconds and ratio == pytest.approx(seconds / bound, rel=0.05)
