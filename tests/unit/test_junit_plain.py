"""The JUnit reader's plain path reads what the streaming reader reads, or leaves the file to it.

A plain pytest report is read with regular expressions and bulk operations (harness/record/junit.py,
`_plain_batches`); every file it does not know to read exactly as the streaming reader would must
be left to that reader, whose results and errors are the reference.
"""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.record import junit
from harness.record.junit import iter_fields, read_results
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
    "nested in another test": ('<testsuite><testcase classname="m.T" name="o"><failure>'
                               f'{CASE.format(name="in")}</failure></testcase>{PASSES}</testsuite>', False),
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


def test_a_plain_file_keeps_its_order_and_its_error_lines(tmp_path):
    """The plain path hands over a file's tests in the file's order, and a malformed test among
    plain ones is reported at its own line, as the streaming reader reports it."""
    path = tmp_path / "report.xml"
    path.write_text(f'<testsuite>{PASSES}{FAILURE}{CASE.format(name="z")}</testsuite>', encoding="utf-8")
    assert [result.name for result in read_results(path)] == ["t0", "t1", "t2", "f", "z"]
    assert [result.outcome for result in read_results(path)] == ["passed"] * 3 + ["failed", "passed"]
    path.write_text("<testsuite>\n" + PASSES + "\n" + PASSES.replace("t0", "u0").replace("t1", "u1").replace(
        "t2", "u2") + '\n<testcase classname="m.T" time="1"/></testsuite>', encoding="utf-8")
    with pytest.raises(HarnessError, match=r"report\.xml:4: <testcase> without a name"):
        read_results(path)
