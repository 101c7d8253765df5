"""Rerun recorded tests in a fresh process, exactly as the run recorded how to, and read one outcome.

Every harness JUnit test carries `replay`: `cd DIR && env ... PYTHON -bb -X faulthandler -m pytest
-p harness.run.plugin NODEID`. Dropping the node id gives the file's prefix (the suite's
`replay_prefix`); appending several node ids reruns them in that order in one process. The
harness plugin in that process writes its event stream, which says what became of
the test of interest: a `result`, or a `start` with no result (the process died: crashed).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harness.protocol import Env, Event, Outcome
from harness.record.junit import replay_prefix as prefix_of  # noqa: F401 (the rule lives with the JUnit it reads)

NOT_RUN = "not run"  # the process never started the test: a wrong node id, a collection error, an earlier crash


def command(prefix: str, nodeids: Sequence[str]) -> str:
    return " ".join([prefix, *map(shlex.quote, nodeids)])


def outcome(prefix: str, nodeids: Sequence[str], target: str, timeout: float) -> str:
    """Run `nodeids` in order in one fresh process; the outcome of `target` among them."""
    with tempfile.TemporaryDirectory(prefix="harness-replay-") as folder:
        events = Path(folder) / "events.jsonl"
        env = {key: value for key, value in os.environ.items() if key != Env.DESELECT}
        env[Env.EVENTS] = str(events)
        process = subprocess.Popen(["/bin/sh", "-c", command(prefix, nodeids)], env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return Outcome.TIMEOUT if _target_outcome(events, target) == Outcome.CRASHED else NOT_RUN
        return _target_outcome(events, target)


def _target_outcome(events: Path, target: str) -> str:
    found = NOT_RUN
    if not events.is_file():
        return found
    for line in events.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # a line cut short by the process dying
        if event.get("nodeid") != target:
            continue
        if event.get("event") == Event.START:
            found = Outcome.CRASHED
        elif event.get("event") == Event.RESULT:
            found = str(event.get("outcome"))
    return found
