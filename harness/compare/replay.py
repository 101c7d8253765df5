"""Rerun recorded tests exactly as the run recorded how to, and read one outcome.

Every harness JUnit test carries `replay`: `cd DIR && env ... PYTHON -bb -X faulthandler -m pytest
-p harness.run.plugin NODEID`. Dropping the node id gives the file's prefix (the suite's
`replay_prefix`); appending several node ids reruns them in that order in one process. The
harness plugin in that process writes its event stream, which says what became of the test of
interest: a `result`, or a `start` with no result (the process died: crashed).

Confirmation and bisection rerun the same files many times. A `Rerunner` therefore keeps, per
replay prefix and file, one process that has imported torch and collected the file (a rerun host,
see harness/run/forkserver.py `serve_reruns`), and runs each rerun in a fork of it: the JIT is
engaged in the fork, after collection, as in a fresh process. Where that host cannot fork safely
(threads alive after collection, JIT at start-up), or when asked (`restart="fresh"`), each rerun
gets a fresh process instead.

A culprit search also gives each rerun CinderX settings (environment variables CinderX reads when
it is imported: a JIT list, a debug log): a fresh process starts with them, and a fork puts them
into its environment before it imports CinderX (`Env.JIT_SETTINGS`), which its host has not.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.protocol import Env, Event, Outcome
from harness.run.events import EventStream

NOT_RUN = "not run"  # the process never started the test: a wrong node id, a collection error, an earlier crash
POLL_SECONDS = 0.05
RERUN_TIMEOUT = 900  # default seconds for one rerun: a slow PyTorch test file's test, alone
HOST_START_SECONDS = 600  # a rerun host imports torch and collects a whole file before it can serve


def command(prefix: str, nodeids: Sequence[str]) -> str:
    return " ".join([prefix, *map(shlex.quote, nodeids)])


def outcome(prefix: str, nodeids: Sequence[str], target: str, timeout: float,
            env: Mapping[str, str] | None = None) -> str:
    """Run `nodeids` in order in one fresh process; the outcome of `target` among them."""
    return outcome_of(command(prefix, nodeids), target, timeout, env)


def outcome_of(shell_command: str, target: str, timeout: float, env: Mapping[str, str] | None = None) -> str:
    """Run a replay command (or one that wraps it) in a fresh process, with `env` added; the
    outcome of `target` in it."""
    with tempfile.TemporaryDirectory(prefix="harness-replay-") as folder:
        events = Path(folder) / "events.jsonl"
        process = _start(shell_command, {**(env or {}), Env.EVENTS: str(events)})
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return Outcome.TIMEOUT if target_outcome(EventStream(events).read_new(), target) == Outcome.CRASHED \
                else NOT_RUN
        return target_outcome(EventStream(events).read_new(), target)


def target_outcome(events: Sequence[dict[str, Any]], target: str) -> str:
    """What became of `target` in these events: its result, crashed if it started and never ended."""
    found = NOT_RUN
    for event in events:
        if event.get("nodeid") != target:
            continue
        if event.get("event") == Event.START:
            found = Outcome.CRASHED
        elif event.get("event") == Event.RESULT:
            found = str(event.get("outcome"))
    return found


@dataclass
class _Host:
    """A rerun host: one collected process of one file; each rerun is a fork of it."""

    process: subprocess.Popen[bytes]
    control: int  # write end of the host's command pipe
    select: Path  # the node ids the next worker runs
    events: EventStream
    settings: Path  # the CinderX settings of the next worker (JSON), for a settable Rerunner

    def stop(self) -> None:
        try:
            os.close(self.control)
        except OSError:
            pass
        _kill_group(self.process)


@dataclass
class Rerunner:
    """Reruns of recorded tests for one confirmation: warm forks of one host per (prefix, file)."""

    timeout: float
    restart: str = "warm"  # warm: forks of a collected host where it is safe; fresh: a new process each time
    settable: bool = False  # each rerun may carry CinderX settings (its hosts keep CinderX unimported)
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="harness-reruns-")))
    _hosts: dict[tuple[str, str], _Host | None] = field(default_factory=dict)
    warm_reruns: int = 0
    fresh_reruns: int = 0
    cold: dict[str, str] = field(default_factory=dict)  # file -> why its reruns could not be forks

    def outcome(self, prefix: str, nodeids: Sequence[str], target: str,
                settings: Mapping[str, str] | None = None) -> str:
        """Run `nodeids` in order, alone, with CinderX `settings` (a settable Rerunner only); the
        outcome of `target` among them."""
        if settings and not self.settable:
            raise ValueError("CinderX settings need a settable Rerunner")
        key = (prefix, target.split("::", 1)[0])
        self.prepare([prefix], target)
        host = self._hosts.get(key)
        if host is None:
            self.fresh_reruns += 1
            if self.restart != "warm":
                self.cold.setdefault(key[1], "fresh processes were asked for")
            return outcome(prefix, nodeids, target, self.timeout, settings)
        self.warm_reruns += 1
        if self.settable:
            host.settings.write_text(json.dumps(dict(settings or {})), encoding="utf-8")
        found = self._in_fork(host, nodeids, target)
        if host.process.poll() is not None:  # the host itself died: later reruns start afresh
            self._hosts[key] = None
            self.cold[key[1]] = f"its rerun host died (exit status {host.process.returncode}) during a rerun"
        return found

    def prepare(self, prefixes: Sequence[str], target: str) -> None:
        """Start the rerun hosts of `target`'s file under each prefix at once, so that their imports and
        collections overlap (a confirmation needs both configurations' hosts of a file)."""
        if self.restart != "warm":
            return
        file = target.split("::", 1)[0]
        wanted = [(prefix, file) for prefix in dict.fromkeys(prefixes) if (prefix, file) not in self._hosts]
        launched = [(key, self._launch(*key, len(self._hosts) + number)) for number, key in enumerate(wanted)]
        for key, host in launched:
            self._hosts[key] = self._ready(host, key[1])

    def summary(self) -> str:
        """Where the reruns ran, and for each file whose reruns were fresh processes, why."""
        return where_reruns_ran([self])

    def close(self) -> None:
        for host in self._hosts.values():
            if host is not None:
                host.stop()
        self._hosts.clear()
        for path in self.folder.glob("*"):
            path.unlink()
        self.folder.rmdir()

    def __enter__(self) -> Rerunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _launch(self, prefix: str, file: str, number: int) -> _Host:
        """A rerun host started: it imports torch and collects `file`, then waits for its commands."""
        select, events = self.folder / f"{number}.select", self.folder / f"{number}.jsonl"
        settings = self.folder / f"{number}.settings"
        select.write_text("")
        read, write = os.pipe()
        env = {Env.EVENTS: str(events), Env.SELECT: str(select), Env.CONTROL_FD: str(read),
               **({Env.JIT_SETTINGS: str(settings)} if self.settable else {})}
        try:
            process = _start(command(prefix, [file]), env, pass_fds=(read,))
        finally:
            os.close(read)
        return _Host(process, write, select, EventStream(events), settings)

    def _ready(self, host: _Host, file: str) -> _Host | None:
        """The host once collected and ready to fork, or None when it cannot be one (then: fresh reruns)."""
        process = host.process
        deadline = time.monotonic() + HOST_START_SECONDS
        why = f"its rerun host did not collect the file within {HOST_START_SECONDS} s"
        while time.monotonic() < deadline:
            host.events.read_new()
            restart = next((e["mode"] for e in host.events.events if e.get("event") == Event.RESTART), None)
            if restart == "warm":
                return host
            if restart is not None:
                why = f"its rerun host could not fork ({restart.removeprefix('fresh: ')})"
                break
            if process.poll() is not None:
                why = f"its rerun host ended before collection finished (exit status {process.returncode})"
                break
            time.sleep(POLL_SECONDS)
        host.stop()
        self.cold[file] = why
        return None

    def _in_fork(self, host: _Host, nodeids: Sequence[str], target: str) -> str:
        host.select.write_text("".join(f"{nodeid}\n" for nodeid in nodeids))
        os.write(host.control, b"run\n")
        seen: list[dict[str, Any]] = []
        worker: int | None = None
        deadline = time.monotonic() + self.timeout
        for event in _follow(host, deadline):
            seen.append(event)
            if event.get("event") == Event.WORKER_START:
                worker = event.get("pid")
            elif event.get("event") == Event.WORKER_EXIT:
                return target_outcome(seen, target)
        if worker is not None:  # past the time limit: end the worker; its host serves the next rerun
            _signal(worker, signal.SIGKILL)
            list(_follow(host, time.monotonic() + self.timeout, until=Event.WORKER_EXIT))
        return Outcome.TIMEOUT if target_outcome(seen, target) == Outcome.CRASHED else NOT_RUN


def where_reruns_ran(rerunners: Sequence[Rerunner]) -> str:
    """'N reruns in forks of collected processes, M in fresh processes', and why for each cold file."""
    warm = sum(rerunner.warm_reruns for rerunner in rerunners)
    fresh = sum(rerunner.fresh_reruns for rerunner in rerunners)
    cold = {file: why for rerunner in rerunners for file, why in rerunner.cold.items()}
    reasons = "; ".join(f"{file}: {why}" for file, why in sorted(cold.items()))
    return f"{warm} reruns in forks of collected processes, {fresh} in fresh processes" + \
        (f" ({reasons})" if fresh and reasons else "")


def _follow(host: _Host, deadline: float, until: str | None = None) -> Iterator[dict[str, Any]]:
    """Events of the host as they come, until `until` is seen, the host dies, or the deadline."""
    while time.monotonic() < deadline:
        fresh = host.events.read_new()
        yield from fresh
        if until is not None and any(event.get("event") == until for event in fresh):
            return
        if host.process.poll() is not None and not fresh:
            return
        time.sleep(POLL_SECONDS)


def _start(shell_command: str, extra_env: dict[str, str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    env = {key: value for key, value in os.environ.items()
           if key not in (Env.DESELECT, Env.SELECT, Env.CONTROL_FD, Env.JIT_SETTINGS)}
    return subprocess.Popen(["/bin/sh", "-c", shell_command], env={**env, **extra_env}, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            pass_fds=pass_fds)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
