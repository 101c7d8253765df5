"""The event stream as the runner reads it: written by processes it does not trust.

Class "hostile test processes" of docs/robustness.md, at the level of the reader; the same cases
through real test processes are in test_hostile_tests.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.run.events import MAX_LINE_BYTES, EventStream, parse_line, summarize

pytestmark = pytest.mark.unit

START = {"event": "start", "nodeid": "t.py::a"}
RESULT = {"event": "result", "nodeid": "t.py::a", "outcome": "passed", "duration": 0.1, "message": "", "text": "",
          "attempts": []}


def line(event: dict) -> str:
    return json.dumps(event) + "\n"


@pytest.fixture
def stream(tmp_path: Path) -> EventStream:
    return EventStream(tmp_path / "events.jsonl")


@pytest.mark.parametrize("junk", [
    "not json", "[1, 2]", '"a string"', "null", "{}", '{"event": "no_such_kind"}', '{"event": 5}',
    '{"event": "start", "nodeid": 5}', '{"event": "start"}',
    '{"event": "result", "nodeid": "t.py::a", "outcome": "exploded", "duration": 0, "message": "", "text": "", "attempts": []}',
    '{"event": "result", "nodeid": "t.py::a", "outcome": "passed", "duration": "slow", "message": "", "text": "", "attempts": []}',
    '{"event": "result", "nodeid": "t.py::a", "outcome": "passed", "duration": 0, "message": "", "text": "", "attempts": [1]}',
    '{"event": "jit_count", "compiled": "many"}', '{"event": "jit_count", "compiled": true}',
    '{"event": "session_finish", "jit": {"compiled": "x"}}', '{"event": "worker_exit", "pid": 1, "status": null}',
    "[" * 100_000,
])
def test_a_line_that_is_no_event_is_a_stream_error_and_the_events_around_it_stay(junk, stream):
    stream.path.write_text(line(START) + junk + "\n" + line(RESULT))
    assert stream.read_new() == [START, RESULT]
    assert stream.error_count == 1 and stream.errors[0].startswith("line 2: ")


def test_an_event_glued_to_junk_is_recovered(stream):
    stream.path.write_text(line(START) + "stray output without a newline" + line(RESULT))
    assert stream.read_new() == [START, RESULT]
    assert stream.errors == ["line 2: 'stray output without a newline'"]


def test_a_half_written_line_does_not_swallow_the_runners_event(stream):
    stream.path.write_text(line(START) + '{"event": "res')
    assert stream.read_new() == [START]
    stream.append(RESULT)  # ends the half line first
    assert stream.events == [START, RESULT] and stream.error_count == 1
    assert stream.path.read_text().endswith('{"event": "res\n' + line(RESULT))


def test_seal_ends_a_half_line_once_and_leaves_a_whole_stream_alone(stream):
    stream.path.write_text(line(START))
    stream.seal()
    assert stream.path.read_text() == line(START)
    with open(stream.path, "a") as handle:
        handle.write("half")
    stream.seal()
    stream.seal()
    assert stream.path.read_text() == line(START) + "half\n"


def test_a_line_longer_than_any_event_is_taken_as_junk_without_waiting_for_its_end(stream):
    stream.path.write_text(line(START) + "x" * (MAX_LINE_BYTES + 1))
    assert stream.read_new() == [START]
    assert stream.read_new() == [] and stream.error_count == 1


def test_stream_errors_are_counted_and_the_first_kept(stream):
    stream.path.write_text("junk\n" * 50)
    stream.read_new()
    assert stream.error_count == 50 and len(stream.errors) == 20


def test_parse_line_takes_the_plugins_own_lines():
    assert parse_line(json.dumps(RESULT)) == (RESULT, "")
    assert parse_line("") == (None, "")


def finish(tests: object) -> dict:
    return {"event": "session_finish", "exitstatus": 0, "jit": {}, "tests": tests}


def test_the_cpu_share_comes_from_the_sessions_that_finished_and_ignores_what_is_no_pair_of_seconds():
    """A worker killed mid-file reports nothing; a hostile or older process may report junk."""
    crashed_then_resumed = [{"event": "session_start"}, START, {"event": "session_start"},
                            finish({"cpu": 1.0, "wall": 4.0}), {"event": "session_start"}, finish({"cpu": 3.0, "wall": 4.0})]
    assert summarize("t", "t.py", crashed_then_resumed).cpu_share == 0.5
    for junk in (None, [1, 2], {"cpu": "1", "wall": 2}, {"cpu": True, "wall": 2}, {"cpu": -1, "wall": 2},
                 {"cpu": 1}, {"cpu": 0, "wall": 0}):
        assert summarize("t", "t.py", [{"event": "session_start"}, finish(junk)]).cpu_share is None, junk
