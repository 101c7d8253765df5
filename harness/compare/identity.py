"""Test identity: the key under which one test is the same test in both configurations.

JUnit names a test by (classname, name). What must not make two runs of one test look like two
tests: a memory address printed into a parametrize id (`<object at 0x7f3a...>` differs in every
process), pytest-xdist's `@group` suffix (`--dist loadgroup`), and the same test reported twice
on one side (shards that overlap, a rerun report added to the folder): the last report decides,
earlier ones become its attempts, as pytest-rerunfailures' own reruns do.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from harness.protocol import Outcome
from harness.record.junit import attempt_text
from harness.record.model import TestResult

_ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
_XDIST_GROUP = re.compile(r"@[\w.-]+$")


def key_of(result: TestResult) -> str:
    """`classname::name`, with per-process noise taken out."""
    name = _XDIST_GROUP.sub("", _ADDRESS.sub("0x?", result.name))
    return f"{_ADDRESS.sub('0x?', result.classname)}::{name}"


def index(results: Iterable[TestResult]) -> dict[str, TestResult]:
    """Results by key, in order of first appearance; a repeated key keeps the history as attempts."""
    found: dict[str, TestResult] = {}
    for result in results:
        key = key_of(result)
        earlier = found.get(key)
        if earlier is not None:
            result = replace(result, attempts=(*earlier.attempts, attempt_text(earlier), *result.attempts))
        found[key] = result
    return found


def attempt_outcomes(result: TestResult) -> list[str]:
    """The outcomes of a test's earlier attempts, oldest first."""
    return [attempt.split(":", 1)[0].strip() for attempt in result.attempts]


def disagreements(ours: Iterable[TestResult], theirs: Iterable[TestResult]) -> list[str]:
    """Where two records of the same run of the same tests disagree: tests one has and the other
    lacks, and different outcomes. pytest's own JUnit XML writes an unexpected pass (xpassed) as a
    pass, so it counts as one here; every other outcome must be the same."""
    def outcomes(results: Iterable[TestResult]) -> dict[str, str]:
        return {key: Outcome.PASSED if result.outcome == Outcome.XPASSED else result.outcome
                for key, result in index(results).items()}

    mine, other = outcomes(ours), outcomes(theirs)
    found = [f"{key}: only in the harness's record ({mine[key]})" for key in mine.keys() - other.keys()]
    found += [f"{key}: only in pytest's own record ({other[key]})" for key in other.keys() - mine.keys()]
    found += [f"{key}: harness {mine[key]}, pytest {other[key]}" for key in mine.keys() & other.keys()
              if mine[key] != other[key]]
    return sorted(found)
