"""Hostile and broken JUnit input ends in exit status 3 with one line naming the file, never a traceback."""

from pathlib import Path

import pytest

from harness.cli import main
from harness.record.junit import MAX_TOKEN, read_results

pytestmark = pytest.mark.unit

LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<testsuite name="s"><testcase classname="m" name="&lol9;"/></testsuite>
"""


def write_billion_character_attribute(path: Path) -> None:
    chunk = b"a" * (16 << 20)
    with open(path, "wb") as handle:
        handle.write(b'<testsuite name="s"><testcase classname="m" name="')
        for _ in range(10**9 // len(chunk)):
            handle.write(chunk)
        handle.write(b'"/></testsuite>')


CASES = {  # how to write it, and what the one line says
    "truncated": (lambda path: path.write_text('<testsuite name="s"><testcase classname="m" name="t">'), "no element found"),
    "empty": (lambda path: path.write_bytes(b""), "no element found"),
    "not JUnit": (lambda path: path.write_text("<html><body><p>a web page</p></body></html>"), "root element is <html>"),
    "not XML": (lambda path: path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary"), "not well-formed"),
    "billion laughs": (lambda path: path.write_text(LAUGHS), "EntitiesForbidden"),
    "billion-character attribute": (write_billion_character_attribute, f"a tag longer than {MAX_TOKEN >> 20} MiB"),
}


@pytest.mark.parametrize("kind", CASES)
def test_hostile_input_is_exit_3_naming_the_file(kind, tmp_path, capsys):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    (good / "report.xml").write_text('<testsuite name="s"><testcase classname="m" name="t"/></testsuite>')
    hostile = bad / "hostile.xml"
    write, says = CASES[kind]
    write(hostile)
    assert main(["diff", str(good), str(bad)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(hostile) in err and "Traceback" not in err
    assert err.startswith("harness: error:") and says in err


def test_long_captured_output_is_not_mistaken_for_a_hostile_tag(tmp_path):
    path = tmp_path / "verbose.xml"
    with open(path, "wb") as handle:
        handle.write(b'<testsuite name="s"><testcase classname="m.TestX" name="t"><system-out>')
        handle.write(b"a log line\n" * (2 * MAX_TOKEN // 11))
        handle.write(b"</system-out></testcase></testsuite>")
    [result] = read_results(path)
    assert (result.module, result.outcome) == ("m", "passed")


def test_every_unreadable_file_of_a_side_is_named_in_its_one_line(tmp_path, capsys):
    good, bad = tmp_path / "good", tmp_path / "bad"
    for side in (good, bad):
        side.mkdir()
        (side / "b_report.xml").write_text('<testsuite name="s"><testcase classname="m" name="t"/></testsuite>')
    truncated, not_xml = bad / "a_truncated.xml", bad / "c_not_xml.xml"
    CASES["truncated"][0](truncated)
    CASES["not XML"][0](not_xml)
    assert main(["diff", str(good), str(bad)]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"harness: error: {truncated}: not readable as JUnit XML: ") and "no element found" in err
    assert err.rstrip().endswith(f"(also not readable: {not_xml})")
