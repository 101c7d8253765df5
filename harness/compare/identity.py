"""One side's results by test identity (harness/record/identity.py), and what their attempts say.

`index` is the in-memory form of what the results table does while a side streams into it
(harness/record/stream.py): one result per key, a repeated key keeping its history as attempts.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.record.identity import key_of, merge
from harness.record.model import StoredResult, TestResult


def index(results: Iterable[TestResult]) -> dict[str, TestResult]:
    """Results by key, in order of first appearance; a repeated key keeps the history as attempts."""
    found: dict[str, TestResult] = {}
    for result in results:
        key = key_of(result)
        earlier = found.get(key)
        found[key] = result if earlier is None else merge(earlier, result)
    return found


def attempt_outcomes(result: TestResult | StoredResult) -> list[str]:
    """The outcomes of a test's earlier attempts, oldest first."""
    return [attempt.split(":", 1)[0].strip() for attempt in result.attempts]
