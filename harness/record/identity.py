"""Test identity: the key under which one test is the same test in every run and configuration.

JUnit names a test by (classname, name). What must not make two runs of one test look like two
tests: a memory address printed into a parametrize id (`<object at 0x7f3a...>` differs in every
process), pytest-xdist's `@group` suffix (`--dist loadgroup`), and the same test reported twice
on one side (shards that overlap, a rerun report added to the folder, PyTorch's CI rerunning a
failed test file): the better report decides and the others become its attempts (`merge`), whatever
order the files are read in.

The record stage owns it because results are stored under this key (harness/record/stream.py):
every run in the results database, and both sides of a comparison, name a test the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from harness.protocol import OUTCOMES, Outcome
from harness.record.junit import attempt_text
from harness.record.model import StoredResult, TestResult

Reported = TestResult | StoredResult  # a report of a test: read from JUnit, or a row already stored

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_XDIST_GROUP = re.compile(r"@[\w.-]+$")


def key_of(result: TestResult) -> str:
    """The identity key of a result (see `key`)."""
    return key(result.classname, result.name)


def key(classname: str, name: str) -> str:
    """`classname::name`, with per-process noise taken out (the patterns are only searched for in
    names that can hold them: a million names are keyed per side)."""
    if "0x" in name:
        name = _ADDRESS.sub("0x?", name)
    if "@" in name:
        name = _XDIST_GROUP.sub("", name)
    if "0x" in classname:
        classname = _ADDRESS.sub("0x?", classname)
    return f"{classname}::{name}"


def keys(identities: Iterable[tuple[str, str]]) -> list[str]:
    """`key` of many (classname, name) pairs: joined in C when none holds per-process noise."""
    identities = list(identities)
    return keyed(list(map("::".join, identities)), identities)


def keyed(joined: Sequence[str], identities: Iterable[tuple[str, str]]) -> Sequence[str]:
    """The keys of tests whose `classname::name` are `joined`: those very strings, unless one of them
    may hold per-process noise (looked for once in all of them), then `key` of each."""
    text = "\n".join(joined)
    if "0x" in text or "@" in text:
        return [key(classname, name) for classname, name in identities]
    return joined


def merge(earlier: Reported, later: Reported) -> Reported:
    """One test reported twice on one side (in two suites or files): the better report decides, the
    other one and both reports' own attempts become its attempts, in one canonical order.

    Better is the lower outcome rank (harness.protocol.Outcome), then the report's content: a test
    that failed in one report and passed in another is a pass with a failed attempt, which the diff
    calls flaky on that side (PyTorch's CI reruns a failing test file and means the same), never a
    plain pass and never a failure. Which file was read first changes nothing."""
    winner, loser = sorted((earlier, later), key=_standing)
    return replace(winner, attempts=tuple(sorted((*earlier.attempts, *later.attempts, attempt_text(loser)))))


def _standing(result: Reported) -> tuple:
    """How a report ranks among reports of the same test: outcome, then everything a row keeps."""
    rank = Outcome(result.outcome).rank if result.outcome in OUTCOMES else len(OUTCOMES)
    return rank, result.message, result.nodeid, result.replay, result.duration, result.module, result.attempts
