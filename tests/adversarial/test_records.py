"""Corrupt and hostile records and reports: one of the wrong shape is one line naming the file and
the field or line, exit 3; never a traceback, and never a verdict (0, 1 or 2); a tampered record
cannot make a resume run anything outside its tests directory.

Class "corrupt records and diff inputs" of docs/robustness.md (hostile XML, billion laughs and the
like, are in tests/unit/test_verdicts_inputs.py)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

RECORD = {
    "configuration": {"name": "stock", "jit": "absent"}, "tier": "p0", "threshold": None,
    "interpreter": {"path": "/usr/bin/python3", "version": "3.14.0"}, "versions": {"torch": "2.14.1", "python": "3.14.0"},
    "fingerprint": {"hash": "0"}, "tests_dir": "/tests", "test_sources": {"hash": "0"},
    "started": "2026-11-23T00:00:00+00:00", "finished": "2026-11-23T00:01:00+00:00", "status": "complete",
    "files": [{"file": "test_a.py", "module": "test_a", "exit_status": 0, "signal": None, "duration": 1.5,
               "counts": {"passed": 1}, "jit": None}],
    "targets": ["test_a.py"],
}
JUNIT = ('<testsuites><testsuite name="test_a"><testcase classname="test_a" name="test_one">'
         '<properties><property name="outcome" value="passed"/></properties></testcase></testsuite></testsuites>')


def run_directory(folder: Path, record: object) -> Path:
    (folder / "junit").mkdir(parents=True)
    (folder / "junit" / "test_a.xml").write_text(JUNIT)
    (folder / "run.json").write_text(record if isinstance(record, str) else json.dumps(record))
    return folder


def changed(path: str, value: object) -> dict:
    """RECORD with the field at `path` (dotted, list indexes as numbers) set to `value`."""
    record = copy.deepcopy(RECORD)
    *parents, last = [int(part) if part.isdigit() else part for part in path.split(".")]
    target = record
    for part in parents:
        target = target[part]
    target[last] = value
    return record


CORRUPT = {  # id -> (run.json content, the field or reason the line names)
    "a list": ([], "top level: expected a JSON object, not list"),
    "a string": ('"run"', "top level: expected a JSON object"),
    "truncated": (json.dumps(RECORD)[:200], "line 1 column"),
    "nested past the parser's limit": ("[" * 100_000, "maximum recursion depth"),
    "tier is a number": (changed("tier", 5), "tier: expected str, not int 5"),
    "threshold is text": (changed("threshold", "high"), "threshold: expected int or null, not str 'high'"),
    "files is an object": (changed("files", {}), "files: expected a list, not dict"),
    "a count is text": (changed("files.0.counts.passed", "one"), "files[0].counts.passed: expected int, not str 'one'"),
    "a file without its module": ({**RECORD, "files": [{"file": "test_a.py"}]}, "files[0].module: missing"),
    "compiled count is text": (changed("files.0.jit", {"compiled": "many"}), "files[0].jit.compiled: expected int"),
    "shard is not I/N": (changed("shard", "1of2"), "shard: must be I/N with 1 <= I <= N, not '1of2'"),
    "shard past its count": (changed("shard", "3/2"), "shard: must be I/N with 1 <= I <= N, not '3/2'"),
    "configuration without a name": (changed("configuration", {"jit": "on"}), "configuration.name: expected str"),
    "a boolean for a count": (changed("files.0.counts.passed", True), "expected int, not bool True"),
}


@pytest.mark.parametrize("case", CORRUPT)
def test_corrupt_run_record_is_one_line_naming_file_and_field(case, tmp_path, refused):
    content, says = CORRUPT[case]
    good = run_directory(tmp_path / "good", RECORD)
    bad = run_directory(tmp_path / "bad", content)
    message = refused("diff", good, bad)
    assert message.startswith(f"harness: error: {bad / 'run.json'}: not a readable run record: ") and says in message
    assert refused("diff", bad, good) == message  # whichever side it is on


def test_a_well_formed_record_still_compares(tmp_path, capsys):
    from harness.cli import main

    assert main(["diff", str(run_directory(tmp_path / "a", RECORD)), str(run_directory(tmp_path / "b", RECORD))]) == 0


@pytest.mark.parametrize("case", ["resume", "diff-latest"])
def test_corrupt_record_is_refused_by_every_command_that_reads_it(case, tmp_path, refused):
    bad = run_directory(tmp_path / "results" / "stock-p0-20261123T000000000000", [])
    args = ["run", "--resume", bad] if case == "resume" else ["diff-latest", "--results", tmp_path / "results"]
    assert "not a readable run record: top level: expected a JSON object" in refused(*args)


@pytest.mark.parametrize("attributes", ['classname="m"', 'classname="m" name=""', 'classname="m" name="  "'])
def test_a_test_case_without_a_name_is_named_by_its_place_and_the_rest_compared(attributes, tmp_path, capsys):
    """One nameless test no longer blocks the diff of every other test (issue 39): it is named by its
    file and place, a note gives its line, and the named tests are compared as usual."""
    from harness.cli import main

    for side in ("base", "cand"):
        (tmp_path / side).mkdir()
    (tmp_path / "base" / "r.xml").write_text('<testsuite name="s"><testcase classname="m" name="t"/></testsuite>')
    (tmp_path / "cand" / "r.xml").write_text(f'<testsuite name="s">\n<testcase classname="m" name="t">'
                                             f'<failure message="boom"/></testcase>\n<testcase {attributes}/>\n</testsuite>')
    assert main(["diff", str(tmp_path / "base"), str(tmp_path / "cand"), "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [r["test"] for r in report["regressions"]] == ["m::t"]
    assert report["summary"]["new"] == 1
    assert any(f"{tmp_path / 'cand' / 'r.xml'}:3: 1 <testcase> without a name" in note and
               "unnamed testcase 2 of r.xml" in note for note in report["notes"])


@pytest.mark.parametrize("field, value, says", [
    ("targets", ["../../../etc/passwd_test.py"], "targets: ../../../etc/passwd_test.py is outside the tests directory"),
    ("targets", ["/tmp/test_x.py"], "targets: /tmp/test_x.py is outside the tests directory"),
    ("python", "", "interpreter (none recorded) cannot be started"),
    ("python", "/no/such/python", "interpreter /no/such/python cannot be started"),
])
def test_a_tampered_record_cannot_make_resume_run_anything_else(field, value, says, tmp_path, refused):
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_a.py").write_text("def test_one():\n    open('ran', 'w')\n")
    record = {**RECORD, "status": "interrupted", "files": [], "tests_dir": str(tests), "python": sys.executable,
              field: value}
    run = run_directory(tmp_path / "results" / "stock-p0-20261123T000000000000", record)
    assert says in refused("run", "--resume", run)
    assert not (tests / "ran").exists()
