"""Known regressions: listed apart, not counted in the exit status, and reported once fixed."""

import json

import pytest

from harness.cli import main
from tests.conftest import markdown_report
from tests.unit.test_verdicts_identity import make_run

pytestmark = pytest.mark.unit
PASSING = {"test_ops": {"test_add": "passed", "test_mul": "passed", "test_div": "passed"}}


def known_file(tmp_path, entries, configuration="cinderx-jit"):
    path = tmp_path / "known.yaml"
    path.write_text(f"known_regressions:\n  {configuration}:\n" + entries)
    return path


KNOWN_ADD = ('    - test: "test_ops.TestX::test_add"\n      reason: the JIT miscompiles add\n'
             '      link: https://example.org/bug/1\n')


def runs(tmp_path, candidate, threshold=1000):
    stock = make_run(tmp_path / "r", "stock", None, PASSING)
    return stock, make_run(tmp_path / "r", "cinderx-jit", threshold, {"test_ops": candidate})


def diff(*args, capsys):
    status = main(["diff", *map(str, args), "--format", "json"])
    return status, json.loads(capsys.readouterr().out)


def test_a_known_regression_is_listed_apart_and_exits_zero(tmp_path, capsys):
    stock, jit = runs(tmp_path, {"test_add": "failed", "test_mul": "passed", "test_div": "passed"})
    status, report = diff(stock, jit, "--known-regressions", known_file(tmp_path, KNOWN_ADD), capsys=capsys)
    assert status == 0 and report["summary"]["regressions"] == 0 and report["summary"]["known_regressions"] == 1
    [known] = report["known_regressions"]
    assert known["test"] == "test_ops.TestX::test_add" and known["candidate"] == "failed"
    assert (known["known"]["reason"], known["known"]["link"]) == ("the JIT miscompiles add", "https://example.org/bug/1")
    assert known["known"]["entry"] == f"{tmp_path / 'known.yaml'}:3" and known["replay"] is not None
    assert report["modules"][0]["regressions"] == 0 and report["modules"][0]["known_regressions"] == 1
    status, markdown = markdown_report(["diff", str(stock), str(jit), "--known-regressions", str(tmp_path / "known.yaml")],
                                       tmp_path / "reports")
    assert status == 0
    assert "Regressions: **0** (+1 known)" in markdown and "Known regressions: 1, from " in markdown
    assert "- 1 × the JIT miscompiles add (https://example.org/bug/1) · `" in markdown


def test_a_new_regression_beside_a_known_one_still_exits_one(tmp_path, capsys):
    stock, jit = runs(tmp_path, {"test_add": "failed", "test_mul": "crashed", "test_div": "passed"})
    status, report = diff(stock, jit, "--known-regressions", known_file(tmp_path, KNOWN_ADD), capsys=capsys)
    assert status == 1
    assert [r["test"] for r in report["regressions"]] == ["test_ops.TestX::test_mul"]
    assert [r["test"] for r in report["known_regressions"]] == ["test_ops.TestX::test_add"]


def test_a_known_regression_that_passes_is_reported_as_fixed(tmp_path, capsys):
    stock, jit = runs(tmp_path, {"test_add": "passed", "test_mul": "passed", "test_div": "skipped"})
    skipped = '    - test: "test_ops.TestX::test_div"\n      reason: skipped is not fixed\n'
    status, report = diff(stock, jit, "--known-regressions", known_file(tmp_path, KNOWN_ADD + skipped), capsys=capsys)
    assert status == 0 and report["summary"]["known_fixed"] == 1
    assert report["known_fixed"] == [{"test": "test_ops.TestX::test_add", "module": "test_ops",
                                      "reason": "the JIT miscompiles add", "link": "https://example.org/bug/1",
                                      "known_as": "test_ops.TestX::test_add", "entry": f"{tmp_path / 'known.yaml'}:3"}]
    _, markdown = markdown_report(["diff", str(stock), str(jit), "--known-regressions", str(tmp_path / "known.yaml")],
                                  tmp_path / "reports")
    assert "known, now fixed: 1 (remove their entries)" in markdown


def test_patterns_and_thresholds_choose_what_is_known(tmp_path, capsys):
    entries = ('    - pattern: "test_ops.TestX::test_*d*"\n      reason: seed 002 crash at threshold 1\n'
               '      thresholds: [1]\n')
    stock, at_1 = runs(tmp_path, {"test_add": "crashed", "test_mul": "passed", "test_div": "failed"}, threshold=1)
    status, report = diff(stock, at_1, "--known-regressions", known_file(tmp_path, entries), capsys=capsys)
    assert status == 0 and sorted(r["test"] for r in report["known_regressions"]) == [
        "test_ops.TestX::test_add", "test_ops.TestX::test_div"]
    _, at_1000 = runs(tmp_path / "other", {"test_add": "crashed", "test_mul": "passed", "test_div": "passed"})
    status, report = diff(stock, at_1000, "--known-regressions", tmp_path / "known.yaml", capsys=capsys)
    assert status == 1 and report["known_regressions"] == []


def test_an_entry_with_a_message_knows_that_failure_only_and_never_reports_fixes(tmp_path, capsys):
    """A failure signature over a wide pattern (P3 at threshold 1: the dynamo bypass's
    FallbackToEager): a failure with that message is known, a crash of a test the same pattern
    covers is new, and the pattern's passing tests are not "known, now fixed"."""
    entries = ('    - pattern: "test_ops.TestX::*"\n      reason: the bypass, by its message\n'
               '      message: "Assertion*: x"\n')
    stock, jit = runs(tmp_path, {"test_add": "failed", "test_mul": "crashed", "test_div": "passed"})
    status, report = diff(stock, jit, "--known-regressions", known_file(tmp_path, entries), capsys=capsys)
    assert status == 1 and [r["test"] for r in report["regressions"]] == ["test_ops.TestX::test_mul"]
    assert [r["test"] for r in report["known_regressions"]] == ["test_ops.TestX::test_add"]
    _, passing = runs(tmp_path / "other", {"test_add": "passed", "test_mul": "passed", "test_div": "passed"})
    status, report = diff(stock, passing, "--known-regressions", tmp_path / "known.yaml", capsys=capsys)
    assert status == 0 and report["known_fixed"] == []


def test_the_environment_names_the_file_too(tmp_path, capsys, monkeypatch):
    stock, jit = runs(tmp_path, {"test_add": "failed", "test_mul": "passed", "test_div": "passed"})
    monkeypatch.setenv("HARNESS_KNOWN_REGRESSIONS", str(known_file(tmp_path, KNOWN_ADD)))
    assert diff(stock, jit, capsys=capsys)[0] == 0
    monkeypatch.delenv("HARNESS_KNOWN_REGRESSIONS")
    assert diff(stock, jit, capsys=capsys)[0] == 1


@pytest.mark.parametrize("entries, message", [
    ('    - reason: no test\n', r"known.yaml:3: known regression of 'cinderx-jit': give exactly one of 'test'"),
    ('    - test: a::b\n', r"known.yaml:3: known regression of 'cinderx-jit': missing key 'reason'"),
    ('    - test: a::b\n      reason: r\n      bug: 1\n', r"known.yaml:5: known regression of 'cinderx-jit': unknown key 'bug'"),
    ('    - test: a::b\n      reason: r\n      thresholds: one\n', r"known.yaml:5: .*'thresholds' must be a list of whole"),
    ('    test: a::b\n', r"known.yaml:3: known regressions of 'cinderx-jit': expected a list of entries"),
])
def test_bad_entries_are_one_line_naming_file_and_line(tmp_path, capsys, entries, message):
    stock, jit = runs(tmp_path, {"test_add": "passed", "test_mul": "passed", "test_div": "passed"})
    assert main(["diff", str(stock), str(jit), "--known-regressions", str(known_file(tmp_path, entries))]) == 3
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("harness: error: ") and __import__("re").search(message, error[0])


def test_an_unknown_configuration_is_named(tmp_path, capsys):
    stock, jit = runs(tmp_path, {"test_add": "passed", "test_mul": "passed", "test_div": "passed"})
    path = known_file(tmp_path, KNOWN_ADD, configuration="cinderx-jti")
    assert main(["diff", str(stock), str(jit), "--known-regressions", str(path)]) == 3
    assert "known.yaml:2: known regressions of 'cinderx-jti': no such configuration" in capsys.readouterr().err


def test_the_shipped_file_names_real_configurations_and_reasons():
    from harness.compare import known
    from harness.configure.configurations import load_catalog

    shipped = known.load(None, load_catalog().configurations)
    assert shipped.sources == (known.SHIPPED,)
    entries = shipped.entries("cinderx-jit", 1000)
    assert entries and all(entry.known.reason for entry in entries)
    assert entries[0].matches("harness.interop.test_matrix::test_cell[hot-function-fullgraph]")
    assert not any(e.matches("harness.interop.test_matrix::test_cell[fresh-function-fullgraph]") for e in entries)


def test_a_pattern_that_no_test_of_one_shard_regressed_is_not_fixed(tmp_path, capsys):
    """Shard 2 of 6 of P3 listed 109 passing hot-state tests as "known, now fixed (remove their
    entries)": the entry's failing tests were in other shards. A pattern is judged on a whole run; a
    test id, on any run that holds it."""
    entries = '    - pattern: "test_ops.TestX::test_*d*"\n      reason: fails for some entries\n' + KNOWN_ADD
    outcomes = {"test_ops": {"test_add": "passed", "test_mul": "passed", "test_div": "passed"}}
    stock = make_run(tmp_path / "r", "stock", None, outcomes, shard="2/6")
    jit = make_run(tmp_path / "r", "cinderx-jit", 1000, outcomes, shard="2/6")
    status, report = diff(stock, jit, "--known-regressions", known_file(tmp_path, entries), capsys=capsys)
    assert status == 0 and [k["known_as"] for k in report["known_fixed"]] == ["test_ops.TestX::test_add"]
    stock, jit = runs(tmp_path / "whole", outcomes["test_ops"])
    status, report = diff(stock, jit, "--known-regressions", tmp_path / "known.yaml", capsys=capsys)
    assert sorted(k["known_as"] for k in report["known_fixed"]) == [
        "test_ops.TestX::test_*d*", "test_ops.TestX::test_*d*", "test_ops.TestX::test_add"]
