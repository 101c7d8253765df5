"""Probes: one failing test rerun K times with one JIT list (and, in the second stage, one HIR pass
switched off), in parallel up to --jobs, each rerun's JIT read back from CinderX's debug log.

Reruns go through `Rerunner`s (harness/compare/replay.py), one per job: each keeps a collected,
JIT-off process of the test's file and runs every rerun in a fork of it, which puts the probe's
CinderX settings into its environment before it imports CinderX, exactly as a process started with
them would have them (the plugin's `Env.JIT_SETTINGS`). Where a fork cannot take them (CinderX
imported during collection, threads alive), the rerun is a fresh process started with them.

A rerun whose log shows the settings did not take effect (no log: CinderX never read them; a
function compiled that the list does not name) is not a verdict: `ProbeError`.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from harness.compare import replay
from harness.compare.culprit import cinderx
from harness.compare.culprit.search import FlakyProbe, JitList, Verdict
from harness.compare.replay import Rerunner
from harness.protocol import BAD_OUTCOMES, Outcome, tallied


class ProbeError(Exception):
    """A rerun that is no verdict: the test did not run, or CinderX did not take the settings."""


@dataclass(frozen=True)
class Target:
    """One failing test to explain, and how it reruns in its configuration."""

    test: str  # the test's key in the comparison (classname::name)
    nodeid: str
    prefix: str  # its replay command in the candidate configuration, without node ids
    outcome: str  # what became of it in the candidate run
    text: str  # its recorded failure text (a crash: faulthandler's dump)
    run: Path  # the candidate run directory that holds its file
    polluters: tuple[str, ...] = ()  # tests that must run in front of it for it to fail

    @property
    def nodeids(self) -> tuple[str, ...]:
        return (*self.polluters, self.nodeid)


@dataclass(frozen=True)
class Rerun:
    outcome: str
    log: cinderx.Log


@dataclass(frozen=True)
class Probe:
    """K reruns with one JIT list (None: no list) and at most one pass switched off."""

    jit_list: JitList | None
    without_pass: str | None
    reruns: tuple[Rerun, ...]

    @property
    def verdict(self) -> Verdict:
        bad = [rerun.outcome in BAD_OUTCOMES for rerun in self.reruns]
        if all(bad):
            return Verdict.FAILS
        if all(rerun.outcome == Outcome.PASSED for rerun in self.reruns):
            return Verdict.PASSES
        return Verdict.FLAKY

    @property
    def seen(self) -> str:
        """`failed 1 of 2 reruns, passed 1`: what the reruns did, in words."""
        return ", ".join(f"{outcome} {n} of {len(self.reruns)} reruns"
                         for outcome, n in tallied(rerun.outcome for rerun in self.reruns))


@dataclass(frozen=True)
class Budget:
    """How a search probes: K reruns per probe, so many at once, each within a time limit."""

    count: int = 2
    jobs: int = 1
    timeout: float = 900.0
    restart: str = "warm"
    attempts: int = 10  # reruns to catch again a crash in CinderX's compile thread that does not happen every time


class Prober:
    """Runs probes of one target; counts probes and reruns; keeps each list's probe for reuse."""

    def __init__(self, target: Target, budget: Budget) -> None:
        self.target = target
        self.budget = budget
        self.folder = Path(tempfile.mkdtemp(prefix="harness-culprit-"))
        self.probes = 0
        self.reruns = 0
        self.inliner_only = False  # reruns log only CinderX's inliner (a compile-thread crash the debug log hides)
        self._known: dict[tuple[JitList | None, str | None, bool], Probe] = {}
        self._numbers = itertools.count()
        self._lock = threading.Lock()
        self._rerunner = Rerunner(budget.timeout, budget.restart, settable=True, jobs=budget.jobs)
        self._pool = ThreadPoolExecutor(max_workers=budget.jobs, thread_name_prefix="probe")

    def __enter__(self) -> Prober:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        # Interrupted: stop the hosts at once, so reruns in flight end instead of being waited for.
        self._pool.shutdown(wait=kind is None, cancel_futures=True)
        self._rerunner.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def where_reruns_ran(self) -> str:
        """How many reruns ran in forks of a collected process, how many fresh, and why fresh."""
        return self._rerunner.summary()

    def probe(self, jit_list: JitList | None, without_pass: str | None = None) -> Probe:
        return self.probe_all([(jit_list, without_pass)])[0]

    def probe_all(self, wanted: Sequence[tuple[JitList | None, str | None]]) -> list[Probe]:
        """Probe each (JIT list, pass switched off), all at the same time as far as --jobs allows."""
        keys = [(jit_list, without_pass, self.inliner_only) for jit_list, without_pass in wanted]
        pending = {key: self._submit(*key[:2]) for key in dict.fromkeys(keys) if key not in self._known}
        for key, reruns in pending.items():
            self._known[key] = Probe(key[0], key[1], tuple(future.result() for future in reruns))
        return [self._known[key] for key in keys]

    def catch_crash(self, attempts: int) -> list[Rerun]:
        """Rerun under the JIT as recorded (no list), --jobs at a time, until a rerun dies with a
        compile in flight or `attempts` reruns are done; the reruns made."""
        made: list[Rerun] = []
        self.probes += 1
        while len(made) < attempts:
            batch = [self._pool.submit(self._rerun, None, None, None, self.folder / f"{next(self._numbers)}.log")
                     for _ in range(min(self.budget.jobs, attempts - len(made)))]
            made += [future.result() for future in batch]
            if any(rerun.outcome == Outcome.CRASHED and rerun.log.compiling for rerun in made):
                break
        return made

    def probe_commands(self, commands: Sequence[tuple[str, JitList]]) -> list[Probe]:
        """Run each command (one that sets its own JIT list, `jit_list`) K times, each in a fresh
        process, all at the same time as far as --jobs allows: what a user's reproducer does."""
        self.probes += len(commands)
        futures = [[self._pool.submit(self._fresh, command, jit_list, self.folder / f"{next(self._numbers)}.log")
                    for _ in range(self.budget.count)] for command, jit_list in commands]
        return [Probe(jit_list, None, tuple(future.result() for future in reruns))
                for (_, jit_list), reruns in zip(commands, futures)]

    def first_failing(self, lists: Sequence[JitList]) -> int | None:
        """For the search: the first list whose probe fails; later lists run alongside only when
        --jobs has room for all of them at once (a later verdict counts only if earlier ones passed)."""
        at_once = self.budget.jobs >= self.budget.count * len(lists)
        if at_once:
            self.probe_all([(jit_list, None) for jit_list in lists])
        for index, jit_list in enumerate(lists):
            probe = self.probe(jit_list)
            if probe.verdict is Verdict.FAILS:
                return index
            if probe.verdict is Verdict.FLAKY:
                raise FlakyProbe(jit_list, probe.seen)
        return None

    def _submit(self, jit_list: JitList | None, without_pass: str | None) -> list[Future[Rerun]]:
        number = next(self._numbers)
        self.probes += 1
        list_file = None
        if jit_list is not None:
            list_file = self.folder / f"{number}.jitlist"
            cinderx.write_jit_list(list_file, jit_list)
        return [self._pool.submit(self._rerun, jit_list, list_file, without_pass, self.folder / f"{number}-{k}.log")
                for k in range(self.budget.count)]

    def _rerun(self, jit_list: JitList | None, list_file: Path | None, without_pass: str | None, log: Path) -> Rerun:
        outcome = self._rerunner.outcome(self.target.prefix, self.target.nodeids, self.target.nodeid,
                                         cinderx.settings(log, list_file, without_pass, self.inliner_only))
        return self._read(outcome, log, jit_list)

    def _fresh(self, command: str, jit_list: JitList, log: Path) -> Rerun:
        outcome = replay.outcome_of(command, self.target.nodeid, self.budget.timeout,
                                    cinderx.settings(log, inliner_only=self.inliner_only))
        return self._read(outcome, log, jit_list)

    def _read(self, outcome: str, log: Path, jit_list: JitList | None) -> Rerun:
        with self._lock:
            self.reruns += 1
        found = cinderx.read_log(log)
        for path in cinderx.logs(log):
            path.unlink()
        shutil.rmtree(cinderx.compiled_folder(log), ignore_errors=True)
        check(outcome, found, jit_list)
        return Rerun(outcome, found)


def check(outcome: str, log: cinderx.Log, jit_list: JitList | None) -> None:
    """Raise ProbeError unless the rerun ran the test with CinderX's settings in effect."""
    if outcome == replay.NOT_RUN:
        raise ProbeError("a rerun ran no test (wrong node id, collection error, or the JIT list failed to parse)")
    if not log.written:
        raise ProbeError("CinderX wrote no debug log in a rerun: its settings did not reach it")
    outside = log.outside(jit_list) if jit_list is not None else ()
    if outside:
        raise ProbeError(f"CinderX compiled {len(outside)} function(s) the JIT list does not name "
                         f"({', '.join(outside[:3])}): the list did not apply")
