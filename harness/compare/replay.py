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

Reruns that do not depend on each other (`outcomes`) run `jobs` at a time, each in its own host:
a file gets a second host of a configuration only when a rerun is waiting for it and every host it
has is busy, and a free lane first takes a rerun whose host is idle, so hosts are started (each
collects the file again) only where they save waiting.

A culprit search also gives each rerun CinderX settings (environment variables CinderX reads when
it is imported: a JIT list, a debug log): a fresh process starts with them, and a fork puts them
into its environment before it imports CinderX (`Env.JIT_SETTINGS`), which its host has not.
"""

from __future__ import annotations

import json
import os
import shlex
import itertools
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.protocol import Env, Event, Outcome, why_not_warm
from harness.run.events import EventStream

NOT_RUN = "not run"  # the process never started the test: a wrong node id, a collection error, an earlier crash
POLL_SECONDS = 0.05
RERUN_TIMEOUT = 900  # default seconds for one rerun: a slow PyTorch test file's test, alone
HOST_START_SECONDS = 600  # a rerun host imports torch and collects a whole file before it can serve


def command(prefix: str, nodeids: Sequence[str]) -> str:
    return " ".join([prefix, *map(shlex.quote, nodeids)])


def outcome_of(shell_command: str, target: str, timeout: float, env: Mapping[str, str] | None = None) -> str:
    """Run a replay command (or one that wraps it) in a fresh process, with `env` added; the
    outcome of `target` in it."""
    return outcomes_of(shell_command, [target], timeout, env)[target]


def outcomes_of(shell_command: str, targets: Sequence[str], timeout: float,
                env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Run a replay command in a fresh process, with `env` added; the outcome of each of `targets`."""
    with tempfile.TemporaryDirectory(prefix="harness-replay-") as folder:
        events = Path(folder) / "events.jsonl"
        process = _start(shell_command, {**(env or {}), Env.EVENTS: str(events)})
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            return _timed_out(EventStream(events).read_new(), targets)
        seen = EventStream(events).read_new()
        return {target: target_outcome(seen, target) for target in targets}


def _timed_out(events: Sequence[dict[str, Any]], targets: Sequence[str]) -> dict[str, str]:
    """Outcomes of a rerun killed at its time limit: the test it was in timed out, later ones never ran."""
    found = {target: target_outcome(events, target) for target in targets}
    return {target: Outcome.TIMEOUT if outcome == Outcome.CRASHED else outcome for target, outcome in found.items()}


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
    busy: bool = True  # claimed by a rerun (a host is claimed while it starts)

    def stop(self) -> None:
        try:
            os.close(self.control)
        except OSError:
            pass
        _kill_group(self.process)


@dataclass(frozen=True)
class Request:
    """One rerun: `nodeids` (tests of one file) in order in one process, with CinderX `settings`
    (environment variables CinderX reads at import; a settable Rerunner only)."""

    prefix: str
    nodeids: tuple[str, ...]
    settings: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> tuple[str, str]:
        """Which hosts can serve it: one configuration's (replay prefix's) collected processes of one file."""
        return self.prefix, self.nodeids[-1].split("::", 1)[0]


@dataclass
class Rerunner:
    """Reruns of recorded tests: warm forks of collected hosts per (prefix, file), `jobs` at a time
    over every caller's threads, so at most `jobs` hosts per (prefix, file)."""

    timeout: float
    restart: str = "warm"  # warm: forks of a collected host where it is safe; fresh: a new process each time
    settable: bool = False  # each rerun may carry CinderX settings (its hosts keep CinderX unimported)
    jobs: int = 1
    folder: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="harness-reruns-")))
    warm_reruns: int = 0
    fresh_reruns: int = 0
    cold: dict[str, str] = field(default_factory=dict)  # file -> why its reruns could not be forks
    _hosts: dict[tuple[str, str], list[_Host]] = field(default_factory=dict)  # every live host of a key
    _starting: Counter[tuple[str, str]] = field(default_factory=Counter)  # hosts of a key still collecting
    _fresh: set[tuple[str, str]] = field(default_factory=set)  # keys whose reruns are fresh processes (`cold` says why)
    _waiting: Counter[tuple[str, str]] = field(default_factory=Counter)  # reruns of a key not yet picked, every caller's
    _rerun_seconds: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # warm reruns, per key
    _start_seconds: list[float] = field(default_factory=list)  # hosts' imports and collections
    _numbers: Iterator[int] = field(default_factory=itertools.count)
    _lock: threading.Condition = field(default_factory=threading.Condition)
    _closed: bool = False
    _slots: threading.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self._slots = threading.Semaphore(self.jobs)

    def outcome(self, prefix: str, nodeids: Sequence[str], target: str,
                settings: Mapping[str, str] | None = None) -> str:
        """Run `nodeids` in order, alone, with CinderX `settings`; the outcome of `target` among them."""
        [found] = self.outcomes([Request(prefix, tuple(nodeids), dict(settings or {}))])
        return found.get(target, NOT_RUN)

    def outcomes(self, requests: Sequence[Request]) -> list[dict[str, str]]:
        """Each request's outcome of each of its node ids (requests in order), `jobs` at a time. A free
        lane takes, in this order: a waiting rerun that needs no host (fresh), one of a file and
        configuration that has no host yet (started now, so that it collects while the other lanes
        work), one whose host is idle, one whose key a further host pays for (`_worth_another`);
        else it waits for a host."""
        if any(request.settings for request in requests) and not self.settable:
            raise ValueError("CinderX settings need a settable Rerunner")
        found: list[dict[str, str]] = [{} for _ in requests]
        waiting = list(range(len(requests)))
        failures: list[BaseException] = []
        with self._lock:
            self._waiting.update(request.key for request in requests)

        def lane() -> None:
            try:
                while True:
                    with self._slots:
                        with self._lock:
                            picked = None
                            while picked is None:
                                if not waiting or failures or self._closed:
                                    return
                                picked = self._pick(requests, waiting)
                                if picked is None:
                                    self._lock.wait()
                            index, host, launch = picked
                            waiting.remove(index)
                            self._waiting[requests[index].key] -= 1
                        request = requests[index]
                        if launch:
                            host = self._start_host(request.key)
                        found[index] = self._run(request, host)
            except BaseException as error:  # noqa: BLE001 - raised again by the caller's thread
                failures.append(error)

        # Daemon threads: an interrupted confirmation closes the hosts and exits without waiting for them.
        lanes = [threading.Thread(target=lane, name=f"rerun-{n}", daemon=True)
                 for n in range(min(self.jobs, len(requests)))]
        for thread in lanes:
            thread.start()
        for thread in lanes:
            thread.join()
        with self._lock:  # reruns left unpicked (a failure, an interruption) wait no more
            self._waiting.subtract(requests[index].key for index in waiting)
        if failures:
            raise failures[0]
        return found

    def _pick(self, requests: Sequence[Request], waiting: list[int]) -> tuple[int, _Host | None, bool] | None:
        """(Under the lock.) The next rerun for a free lane: its index, the idle host it takes (claimed
        now), and whether a host must be started for it (reserved now); None: wait for a host."""
        def count(key: tuple[str, str]) -> int:
            return len(self._hosts.get(key, [])) + self._starting[key]

        keys = [(index, requests[index].key) for index in waiting]
        for index, key in keys:
            if self.restart != "warm" or key in self._fresh:
                return index, None, False
        for index, key in keys:
            if not count(key):
                self._starting[key] += 1
                return index, None, True
        for index, key in keys:
            idle = next((host for host in self._hosts.get(key, []) if not host.busy), None)
            if idle is not None:
                idle.busy = True
                return index, idle, False
        for index, key in keys:
            if count(key) < self.jobs and self._worth_another(key):
                self._starting[key] += 1
                return index, None, True
        return None

    def _worth_another(self, key: tuple[str, str]) -> bool:
        """Whether the reruns waiting for `key` (every caller's) would take longer, one after another,
        than starting one more host for them (both as measured so far; unmeasured: yes)."""
        reruns, starts = self._rerun_seconds.get(key), self._start_seconds
        if not reruns or not starts:
            return True
        return self._waiting[key] * statistics.mean(reruns) > statistics.mean(starts)

    def _start_host(self, key: tuple[str, str]) -> _Host | None:
        """Start a host reserved for `key` (in `_starting`), claimed by the caller; None: the key's
        reruns are fresh."""
        began = time.monotonic()
        host = self._ready(self._launch(*key, next(self._numbers)), key[1])
        with self._lock:
            self._starting[key] -= 1
            if host is not None and self._closed:  # closed (interrupted) while it collected
                host.stop()
                host = None
            if host is None:
                self._fresh.add(key)
            else:
                self._hosts.setdefault(key, []).append(host)
                self._start_seconds.append(time.monotonic() - began)
            self._lock.notify_all()
        return host

    def summary(self) -> str:
        """'N reruns in forks of collected processes, M in fresh processes', and why for each cold file."""
        reasons = "; ".join(f"{file}: {why}" for file, why in sorted(self.cold.items()))
        return f"{self.warm_reruns} reruns in forks of collected processes, {self.fresh_reruns} in fresh processes" + \
            (f" ({reasons})" if self.fresh_reruns and reasons else "")

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for hosts in self._hosts.values():
                for host in hosts:
                    host.stop()
            self._hosts.clear()
        for path in self.folder.glob("*"):
            path.unlink()
        self.folder.rmdir()

    def __enter__(self) -> Rerunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, request: Request, host: _Host | None) -> dict[str, str]:
        if host is None:
            with self._lock:
                if self._closed:  # interrupted: no new process
                    return dict.fromkeys(request.nodeids, NOT_RUN)
                self.fresh_reruns += 1
                if self.restart != "warm":
                    self.cold.setdefault(request.key[1], "fresh processes were asked for")
            return outcomes_of(command(request.prefix, request.nodeids), request.nodeids, self.timeout,
                               request.settings)
        with self._lock:
            self.warm_reruns += 1
        began = time.monotonic()
        try:
            if self.settable:
                host.settings.write_text(json.dumps(dict(request.settings)), encoding="utf-8")
            return self._in_fork(host, request.nodeids)
        finally:
            self._release(request.key, host, time.monotonic() - began)

    def _release(self, key: tuple[str, str], host: _Host, seconds: float) -> None:
        """The host back to idle, or, if it died during the rerun, gone: later reruns start afresh."""
        with self._lock:
            self._rerun_seconds.setdefault(key, []).append(seconds)
            host.busy = False
            if host.process.poll() is not None:
                self._hosts[key].remove(host)
                self._fresh.add(key)
                self.cold[key[1]] = f"its rerun host died (exit status {host.process.returncode}) during a rerun"
            self._lock.notify_all()

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
            if restart is not None:
                cannot = why_not_warm(restart)
                if cannot is None:
                    return host
                why = f"its rerun host could not fork ({cannot})"
                break
            if process.poll() is not None:
                why = f"its rerun host ended before collection finished (exit status {process.returncode})"
                break
            time.sleep(POLL_SECONDS)
        host.stop()
        self.cold[file] = why
        return None

    def _in_fork(self, host: _Host, nodeids: Sequence[str]) -> dict[str, str]:
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
                return {nodeid: target_outcome(seen, nodeid) for nodeid in nodeids}
        if worker is not None:  # past the time limit: end the worker; its host serves the next rerun
            _signal(worker, signal.SIGKILL)
            list(_follow(host, time.monotonic() + self.timeout, until=Event.WORKER_EXIT))
        return _timed_out(seen, nodeids)


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
