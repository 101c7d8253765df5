"""The JUnit reader's plain path reads what the streaming reader reads, or leaves the file to it.

A plain pytest report is read with regular expressions and bulk operations (harness/record/junit.py,
`_plain_batches`); every file it does not know to read exactly as the streaming reader would must
be left to that reader, whose results and errors are the reference.
"""

from __future__ import annotations

import pytest

from harness.compare.diff import compare
from harness.compare.sides import load_side
from harness.errors import HarnessError
from harness.record import junit
from harness.record.junit import iter_fields, read_results
from harness.record.database import opened
from harness.record.model import PlainFile

pytestmark = pytest.mark.unit

CASE = '<testcase classname="m.T" name="{name}" time="0.5"/>'
PASSES = "".join(CASE.format(name=f"t{i}") for i in range(3))
FAILURE = '<testcase classname="m.T" name="f" time="1"><failure message="boom">trace</failure></testcase>'

# name: (document, whether the plain path reads it)
SHAPES = {
    "pytest": (f'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">{PASSES}{FAILURE}'
               f'{CASE.format(name="u")}</testsuite></testsuites>', True),
    "xunit1 file and line": ('<testsuite><testcase classname="m.T" name="a" file="m.py" line="3" time="1"/>'
                             '<testcase classname="m.T" name="b" file="m.py" line="9" time="x"/></testsuite>', True),
    "suite file property": ('<testsuites><testsuite><properties><property name="file" value="pkg/mod.py"/>'
                            f'</properties>{PASSES}</testsuite></testsuites>', True),
    "cases outside a suite": (f'<testsuites>{CASE.format(name="a")}<testsuite>{PASSES}</testsuite>'
                              f'{CASE.format(name="b")}</testsuites>', True),
    "references in a name": (f'<testsuite>{CASE.format(name="t&lt;1&gt;")}{PASSES}</testsuite>', True),
    "tab in a name": ("<testsuite>" + CASE.format(name="a\tb") + PASSES + "</testsuite>", True),
    "line breaks kept": ('<testsuite>\n' + "\n".join(CASE.format(name=f"t{i}") for i in range(3))
                         + "\n" + FAILURE + "\n</testsuite>\n", True),
    "addresses in names": ('<testsuite><testcase classname="m.T" name="t[0x7f3a12345678]" time="1"/>'
                           '<testcase classname="m.T" name="t[0x7f3a99999999]" time="1"/></testsuite>', True),
    "two suites, one test": (f'<testsuites><testsuite>{PASSES}</testsuite><testsuite>{PASSES}</testsuite>'
                             '</testsuites>', False),
    "rerun in a suite": (f'<testsuite>{FAILURE}<testcase classname="m.T" name="f" time="1"/></testsuite>', False),
    "comment": (f'<testsuite><!-- {CASE.format(name="ghost")} -->{PASSES}</testsuite>', False),
    "CDATA": (f'<testsuite>{PASSES}<testcase classname="m.T" name="o"><system-out><![CDATA[{CASE.format(name="x")}]]>'
              '</system-out></testcase></testsuite>', False),
    "entity declaration": (f'<!DOCTYPE t [<!ENTITY e "x">]><testsuite>{PASSES}</testsuite>', False),
    "processing instruction": (f'<testsuite><?harness-plain 0?>{PASSES}</testsuite>', False),
    "latin-1": (f'<?xml version="1.0" encoding="iso-8859-1"?><testsuite>{PASSES}</testsuite>', False),
    "nested in another test": ('<testsuite><testcase classname="m.T" name="o" time="0.5"><failure>'
                               f'{CASE.format(name="in")}</failure></testcase>{PASSES}</testsuite>', False),
    "skips and captured output": ('<testsuite><testcase classname="m.T" name="s" time="1"><skipped type="pytest.skip" '
                                  'message="no GPU">m.py:3: no GPU</skipped></testcase><testcase classname="m.T" '
                                  'name="x" time="1"><skipped type="pytest.xfail" message="known"/><system-out>o'
                                  f'</system-out></testcase>{PASSES}<testcase classname="m.T" name="o" time="1">'
                                  '<system-err>e</system-err></testcase></testsuite>', True),
    "a skip with a reference": ('<testsuite><testcase classname="m.T" name="s" time="1"><skipped message="a &amp; b">'
                                f'x &lt; y</skipped></testcase>{PASSES}</testsuite>', True),
    "two skips in a test": ('<testsuite><testcase classname="m.T" name="s" time="1"><skipped message="1"/>'
                            f'<skipped message="2"/></testcase>{PASSES}</testsuite>', True),
    "root is a test": (CASE.format(name="alone"), False),
    "before the root": (f'{CASE.format(name="early")}<testsuite>{PASSES}</testsuite>', False),
    "after the root": (f'<testsuite>{PASSES}</testsuite>{CASE.format(name="late")}', False),
    "inside an attribute": (f'<testsuite name="{CASE.format(name="x")}">{PASSES}</testsuite>', False),
    "truncated": (f'<testsuite>{PASSES}', False),
    "blank name": (f'<testsuite>{PASSES}<testcase classname="m.T" name="\u00a0" time="1"/></testsuite>', False),
    "undefined entity": (f'<testsuite>{PASSES}<testcase classname="m.T" name="&x;"/></testsuite>', False),
}


def _read(path, monkeypatch, plain: bool):
    """What reading the file gives: its tests, or the one-line error."""
    with monkeypatch.context() as patched:
        if not plain:
            patched.setattr(junit, "PLAIN_BYTES", -1)  # every file is too big for the plain path
        try:
            return read_results(path)
        except HarnessError as error:
            return str(error)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_plain_path_reads_what_the_streaming_reader_reads(shape, tmp_path, monkeypatch):
    """Every shape reads the same with and without the plain path; the plain shapes are read on it
    (so the fast path cannot silently stop applying), the others are left to the streaming reader."""
    document, plain = SHAPES[shape]
    path = tmp_path / "report.xml"
    path.write_text(document, encoding="utf-8")
    assert _read(path, monkeypatch, plain=True) == _read(path, monkeypatch, plain=False)
    try:
        first = next(iter(iter_fields(path)), None)
    except HarnessError:
        first = None
    assert isinstance(first, PlainFile) is plain


def test_a_plain_file_keeps_its_order_and_names_a_nameless_test(tmp_path):
    """The plain path hands over a file's tests in the file's order, and a test without a name among
    plain ones is named by its place, as the streaming reader names it."""
    path = tmp_path / "report.xml"
    path.write_text(f'<testsuite>{PASSES}{FAILURE}{CASE.format(name="z")}</testsuite>', encoding="utf-8")
    assert [result.name for result in read_results(path)] == ["t0", "t1", "t2", "f", "z"]
    assert [result.outcome for result in read_results(path)] == ["passed"] * 3 + ["failed", "passed"]
    path.write_text("<testsuite>\n" + PASSES + "\n" + PASSES.replace("t0", "u0").replace("t1", "u1").replace(
        "t2", "u2") + '\n<testcase classname="m.T" time="1"/></testsuite>', encoding="utf-8")
    # a test without a name, among plain ones, is named by its place in the file (the streaming reader's count)
    assert read_results(path)[-1].name == "unnamed testcase 7 of report.xml"


def _folder(root, files: dict[str, str]):
    root.mkdir()
    for name, body in files.items():
        (root / name).write_text(f'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">{body}'
                                 "</testsuite></testsuites>", encoding="utf-8")
    return root


def _cases(names, classname="m.T") -> str:
    return "".join(f'<testcase classname="{classname}" name="{name}" time="0.1"/>' for name in names)


def _verdict(monkeypatch, baseline, candidate, *settings):
    """The comparison of two folders, with each (module, name, value) of `settings` patched in."""
    with monkeypatch.context() as patched:
        for module, name, value in settings:
            patched.setattr(module, name, value)
        return compare(load_side(baseline), load_side(candidate))


def test_a_diff_is_the_same_with_and_without_the_plain_path_and_held_passes(tmp_path, monkeypatch):
    """Two folders of plain pytest JUnit: a regression, a fix, a missing and a new test, and a test
    one side reports in two files (passed in one, failed in the other: flaky there). The verdict is
    the same read the plain way (plain passes held in memory, or as rows once past HELD) and read
    by the streaming reader alone."""
    from harness.record import stream

    tests = [f"t{i}" for i in range(10)]
    baseline = _folder(tmp_path / "baseline", {
        "a.xml": _cases(tests) + FAILURE,
        "b.xml": _cases(["u0", "u1", "u2"], "n.U") + '<testcase classname="m.T" name="t3" time="1">'
                 '<failure message="flaky">x</failure></testcase>'})
    candidate = _folder(tmp_path / "candidate", {
        "a.xml": _cases(tests[:5]) + '<testcase classname="m.T" name="t5" time="1"><failure message="new">x'
                 '</failure></testcase>' + _cases(tests[6:]) + '<testcase classname="m.T" name="f" time="1"/>',
        "b.xml": _cases(["u0", "u1", "v0"], "n.U")})

    held = _verdict(monkeypatch, baseline, candidate)
    assert [entry.test for entry in held.regressions] == ["m.T::t5"]
    assert held == _verdict(monkeypatch, baseline, candidate, (stream, "HELD", 3)) == _verdict(
        monkeypatch, baseline, candidate, (junit, "PLAIN_BYTES", -1))


def _skips(names, kind="pytest.skip", message="no GPU", classname="m.T") -> str:
    return "".join(f'<testcase classname="{classname}" name="{name}" time="0.1"><skipped type="{kind}" '
                   f'message="{message}">m.py:3: {message}</skipped></testcase>' for name in names)


def test_a_diff_of_skips_is_the_same_whether_they_are_held_aside_or_rows(tmp_path, monkeypatch):
    """Plain skips and expected failures (PyTorch CI's reports hold one in ten) are held aside like
    plain passes when both sides are streamed: every way a skip can meet a pass, a failure, another
    skip or nothing on the other side gives the verdict it gives when they are rows, or read by the
    streaming reader alone."""
    from harness.record import stream

    failed = '<testcase classname="m.T" name="{}" time="1"><failure message="boom">x</failure></testcase>'
    baseline = _folder(tmp_path / "baseline", {
        "a.xml": _skips(["same", "unskipped", "gone", "to_failure", "reworded", "twice"]) + _cases(["skipped_now"])
                 + _skips(["xfail", "xfail_passes", "xfail_skips"], "pytest.xfail", "known") + failed.format("from_failure"),
        "b.xml": _cases(["twice"])})
    candidate = _folder(tmp_path / "candidate", {
        "a.xml": _skips(["same", "from_failure", "new_skip"]) + _cases(["unskipped", "xfail_passes"])
                 + _skips(["skipped_now"], message="not on CPU") + _skips(["reworded"], message="other words")
                 + _skips(["xfail"], "pytest.xfail", "known") + _skips(["twice", "xfail_skips"]) + failed.format("to_failure")})

    held = _verdict(monkeypatch, baseline, candidate)
    assert held == _verdict(monkeypatch, baseline, candidate, (stream, "HELD", 0)) == _verdict(
        monkeypatch, baseline, candidate, (junit, "PLAIN_BYTES", -1))
    assert [(c.test, c.baseline, c.candidate, c.detail) for c in held.skip_changes] == [
        ("m.T::from_failure", "failed", "skipped", "no GPU"), ("m.T::skipped_now", "passed", "skipped", "not on CPU"),
        ("m.T::to_failure", "skipped", "failed", "boom"), ("m.T::twice", "passed", "skipped", "no GPU"),
        ("m.T::unskipped", "skipped", "passed", "no GPU"), ("m.T::xfail_skips", "xfailed", "skipped", "no GPU")]
    assert (held.missing, held.new, held.regressions) == (("m.T::gone",), ("m.T::new_skip",), ())
    assert [(row.module, row.baseline, row.candidate) for row in held.modules] == [
        ("m", {"failed": 1, "passed": 2, "skipped": 5, "xfailed": 3}, {"failed": 1, "passed": 2, "skipped": 7, "xfailed": 1})]
    with opened(tmp_path / "side.db", scratch=True) as connection:  # the skips were held, not rows
        stream.stream(connection, 0, load_side(candidate).results, aside=True)
        others = {test: result for module in stream.held(connection) for test, result in module.others.items()}
        assert [test for (test,) in connection.execute("SELECT test FROM results")] == ["m.T::to_failure"]
    assert others["m.T::reworded"] == ("skipped", "other words") and others["m.T::xfail"] == ("xfailed", "known")


@pytest.mark.parametrize("source", ["JUnit files", "results"])
def test_a_side_holds_at_most_HELD_tests_aside_and_writes_the_rest_as_rows(source, tmp_path, monkeypatch):
    """Past HELD tests kept in memory, a streamed side's plain passes are rows: the same tests and
    counts either way, and no more than HELD held."""
    from harness.record import stream
    from harness.record.database import opened
    from harness.record.junit import JUnitFiles
    from harness.record.model import TestResult

    names = [f"t{i}" for i in range(12)]
    path = tmp_path / "a.xml"
    path.write_text(f"<testsuite>{_cases(names[:6])}{FAILURE}{_cases(names[6:])}</testsuite>", encoding="utf-8")
    results = JUnitFiles.of([path]) if source == "JUnit files" else (
        [TestResult("m.T", name, "passed", "m", 0.1) for name in names[:6]]
        + [TestResult("m.T", "f", "failed", "m", 1.0, "boom")]
        + [TestResult("m.T", name, "passed", "m", 0.1) for name in names[6:]])

    def streamed(held: int):
        monkeypatch.setattr(stream, "HELD", held)
        with opened(tmp_path / f"{held}.db", scratch=True) as connection:
            written = stream.stream(connection, 0, results, aside=True)
            kept = sorted(test for module in stream.held(connection) for test in module.passes)
            rows = [test for (test,) in connection.execute("SELECT test FROM results ORDER BY seq")]
            counts = connection.execute("SELECT module, outcome, n FROM counts ORDER BY module, outcome").fetchall()
        return written.tests, kept, rows, counts

    everything, capped = streamed(1000), streamed(4)
    assert everything[1:3] == (sorted(f"m.T::{name}" for name in names), ["m.T::f"])
    assert len(capped[1]) <= 4 and sorted(capped[1] + capped[2]) == sorted(everything[1] + everything[2])
    assert (capped[0], capped[3]) == (everything[0], everything[3]) == (13, [("m", "failed", 1), ("m", "passed", 12)])
