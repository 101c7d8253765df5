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
